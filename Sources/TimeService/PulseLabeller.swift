import Chipsets
import NMEA

/// One pulse of a PPS line, as a source timestamped it.
public struct Pulse: Sendable, Hashable {
  /// The system time (`CLOCK_REALTIME`) of the pulse's edge.
  public var time: PosixTime
  /// The source's count of pulses (the kernel's assert sequence), for gaps and repeats.
  public var sequence: UInt64

  public init(time: PosixTime, sequence: UInt64) {
    self.time = time
    self.sequence = sequence
  }
}

/// A pulse labelled with the UTC second whose start it marks.
public struct PPSSample: Sendable, Hashable {
  /// The UTC second (whole) the pulse marks.
  public var second: PosixTime
  /// The system time of the pulse, as the source timestamped it.
  public var pulse: PosixTime
  /// The source's sequence number.
  public var sequence: UInt64
  /// The receiver's quantisation error of this edge (u-blox `UBX-TIM-TP` `qErr`), when it
  /// announced one: the true second began `quantisationError` after the edge.
  public var quantisationError: Duration?

  public init(
    second: PosixTime, pulse: PosixTime, sequence: UInt64, quantisationError: Duration? = nil
  ) {
    self.second = second
    self.pulse = pulse
    self.sequence = sequence
    self.quantisationError = quantisationError
  }

  /// The system time at which the second began: the edge corrected by its quantisation
  /// error. What chrony and ntpd are given.
  public var edge: PosixTime { pulse + (quantisationError ?? .zero) }

  /// `second − edge`: how far the system clock is behind true time.
  public var offset: Duration { second - edge }
}

/// A receiver's word on its next pulse (u-blox `UBX-TIM-TP`): the quantisation error of that
/// edge, when the message arrived, and the UTC second the pulse marks when the receiver says
/// it in UTC.
///
/// A receiver makes its pulse on the edges of its own oscillator, so the edge lands up to a
/// period of that clock (about 20 ns on a u-blox 8) before or after the true second; TIM-TP
/// says by how much, before the pulse (u-blox M8 and F9 interface descriptions, "Time
/// pulse"). The sign: the true second is the edge plus `qErr` (A. Wallin, "uBlox F9T qErr
/// correction", 2019: a counter started by a reference second and stopped by the u-blox edge
/// reads smooth once `qErr` is added).
public struct PulseQuantisation: Sendable, Hashable {
  /// `qErr`.
  public var error: Duration
  /// The system time the message arrived: it describes the first pulse within a second after.
  public var announced: PosixTime
  /// The UTC second of the pulse, when the message's time base is UTC; `nil` for a GNSS time
  /// base (matched by arrival alone).
  public var second: PosixTime?

  public init(error: Duration, announced: PosixTime, second: PosixTime? = nil) {
    self.error = error
    self.announced = announced
    self.second = second
  }

  /// 1980-01-06T00:00:00Z, where GPS weeks start, in POSIX seconds.
  static let gpsEpoch: Int64 = 315_964_800

  /// What `message` says of the next pulse, arrived at `announced`; `nil` when it gives no
  /// quantisation error (`qErrInvalid`).
  public init?(_ message: UBXTimTP, announced: PosixTime) {
    guard let error = message.quantisationError else { return nil }
    let picoseconds = Int64((error * 1e12).rounded())
    self.error = Duration(
      secondsComponent: 0, attosecondsComponent: picoseconds * 1_000_000)
    self.announced = announced
    // In the UTC time base the week and time of week count UTC seconds from the GPS epoch;
    // in a GNSS base they count that system's time, which needs leap seconds not given here.
    if message.timeBase == .utc, message.pulseTimeOfWeek % 1000 == 0 {
      second = PosixTime(
        seconds: Self.gpsEpoch + Int64(message.week) * 604_800
          + Int64(message.pulseTimeOfWeek / 1000))
    } else {
      second = nil
    }
  }
}

/// Why a pulse was not used.
public enum PulseDrop: Sendable, Hashable, CaseIterable, CustomStringConvertible {
  /// No trusted serial time to name the pulse's second: before the first trusted epoch, or
  /// since the fix was lost.
  case noTrustedTime
  /// The last trusted epoch is too far from the pulse (more than a second) to say which
  /// second the pulse starts: epochs were lost.
  case staleSerialTime
  /// The serial time, corrected by the configured offset, disagrees with the pulse's second
  /// by more than ``PulseLabeller/maximumDisagreement``: the offset is wrong, or the pulse or
  /// the receiver is (see docs/time.md).
  case serialDisagrees
  /// A pulse for a second already labelled (a glitch on the line, or two edges per second).
  case duplicate

  public var description: String {
    switch self {
    case .noTrustedTime: return "no trusted time"
    case .staleSerialTime: return "serial time stale"
    case .serialDisagrees: return "serial time disagrees"
    case .duplicate: return "duplicate second"
    }
  }
}

/// What ``PulseLabeller`` made of one pulse.
public enum PulseDecision: Sendable, Hashable {
  case labelled(PPSSample)
  case dropped(PulseDrop)
}

/// Names the UTC second of each pulse from the serial time of the epoch it belongs to.
///
/// A pure state machine. It takes the trusted ``TimeSample``s of the serial time (and word
/// that trust was lost) and the ``Pulse``s of a PPS source, in any interleaving: the two come
/// from different threads, so the labels follow from the timestamps, not from the order of
/// arrival.
///
/// The rule: with ``PulseOrder/sentencesFollowPulse`` the epoch stamped S arrives a delay `d`
/// (0 < d < 1 s) after pulse S, so a pulse at system time P belongs to second
/// `S + ⌈P − A⌉`, where A is the epoch's arrival; with ``PulseOrder/sentencesPrecedePulse`` it
/// is `S + ⌊P − A⌋`. Only epochs stamped on a whole second name pulses, and only within a
/// second of the pulse. The label is then checked against the serial time as it is published
/// (the arrival corrected by the user's offset): if they differ by more than half a second the
/// pulse is dropped, because the label rests on a delay the serial time does not confirm.
public struct PulseLabeller: Sendable {
  /// The largest difference allowed between a pulse's second and the corrected serial time.
  public static let maximumDisagreement: Duration = .milliseconds(500)

  /// Whether the receiver's sentences follow or precede their pulse.
  public let order: PulseOrder
  /// The receiver's delay as configured (`--time-offset`).
  public let offset: Duration

  private var reference: TimeSample?
  private var lastLabel: PosixTime?
  private var lastLabelledPulse: PPSSample?
  private var announcement: PulseQuantisation?

  /// Pulses dropped, by reason.
  public private(set) var drops: [PulseDrop: Int] = [:]
  /// Pulses labelled.
  public private(set) var labelled = 0
  /// Labelled pulses corrected by the receiver's quantisation error.
  public private(set) var quantised = 0

  public init(order: PulseOrder, offset: Duration = .zero) {
    self.order = order
    self.offset = offset
  }

  /// Takes a trusted serial sample. Returns the receiver's delay measured against the pulse
  /// of the same second, when that pulse was labelled already.
  public mutating func serial(_ sample: TimeSample) -> Duration? {
    guard sample.receiverTime.nanoseconds == 0 else { return nil }
    if let reference, reference.receiverTime > sample.receiverTime { return nil }
    reference = sample
    guard let pulse = lastLabelledPulse, pulse.second == sample.receiverTime else { return nil }
    return sample.arrival - pulse.pulse
  }

  /// The serial time is no longer trusted (fix lost, time jumped, port closed): pulses are
  /// dropped until the next trusted sample.
  public mutating func serialTrustLost() {
    reference = nil
  }

  /// Takes the receiver's announcement of its next pulse's quantisation error; the first
  /// pulse within a second after it (and of the second it names, when it names one) is
  /// corrected by it. A newer announcement replaces one not used yet.
  public mutating func quantisation(_ announcement: PulseQuantisation) {
    self.announcement = announcement
  }

  /// Labels one pulse, or says why not. A labelled pulse whose own epoch already arrived
  /// also gives the receiver's delay (``delayOfLastLabel``).
  public mutating func pulse(_ pulse: Pulse) -> PulseDecision {
    var decision = decide(pulse)
    // Matched by timestamps: the PPS thread may hand over an earlier pulse after the reader
    // handed over the announcement of the next, and that pulse must neither use nor spend it.
    if let announcement, pulse.time > announcement.announced {
      self.announcement = nil
      if case .labelled(var sample) = decision, pulse.time - announcement.announced < .seconds(1),
        announcement.second == nil || announcement.second == sample.second
      {
        sample.quantisationError = announcement.error
        quantised += 1
        decision = .labelled(sample)
      }
    }
    switch decision {
    case .labelled(let sample):
      labelled += 1
      lastLabel = sample.second
      lastLabelledPulse = sample
    case .dropped(let reason):
      drops[reason, default: 0] += 1
    }
    return decision
  }

  /// The receiver's delay for the last labelled pulse, when the epoch of its second arrived
  /// before it (with ``PulseOrder/sentencesFollowPulse`` it usually arrives after, and
  /// ``serial(_:)`` returns it).
  public var delayOfLastLabel: Duration? {
    guard let pulse = lastLabelledPulse, let reference,
      reference.receiverTime == pulse.second
    else { return nil }
    return reference.arrival - pulse.pulse
  }

  private func decide(_ pulse: Pulse) -> PulseDecision {
    guard let reference else { return .dropped(.noTrustedTime) }
    let gap = pulse.time - reference.arrival
    guard gap > .seconds(-1), gap < .seconds(1) else { return .dropped(.staleSerialTime) }
    let step: Int64
    switch order {
    case .sentencesFollowPulse: step = gap > .zero ? 1 : 0  // ⌈gap⌉ for −1 < gap < 1
    case .sentencesPrecedePulse: step = gap >= .zero ? 0 : -1  // ⌊gap⌋ for −1 < gap < 1
    }
    let second = PosixTime(seconds: reference.receiverTime.seconds + step)
    // The serial time as published says true time at the pulse was:
    let serialSays = pulse.time + (reference.receiverTime - (reference.arrival - offset))
    let disagreement = second - serialSays
    guard disagreement <= Self.maximumDisagreement,
      disagreement >= .zero - Self.maximumDisagreement
    else { return .dropped(.serialDisagrees) }
    if let lastLabel, second <= lastLabel { return .dropped(.duplicate) }
    return .labelled(PPSSample(second: second, pulse: pulse.time, sequence: pulse.sequence))
  }
}
