import NMEA

/// One trusted measurement of the system clock against the receiver's.
///
/// The receiver's UTC time of an epoch paired with the system time (`CLOCK_REALTIME`) at which
/// the epoch's first byte arrived. The receiver sends an epoch some time after the second it
/// names began (its own delay, tens to hundreds of milliseconds: see ``ReceiverDelay``), so
/// ``arrival`` is later than the true instant of ``receiverTime`` by that delay plus whatever
/// error the system clock has.
public struct TimeSample: Sendable, Hashable {
  /// The epoch's UTC time as the receiver wrote it (date from RMC or ZDA).
  public var receiverTime: PosixTime
  /// The system time at which the epoch's first byte arrived.
  public var arrival: PosixTime

  public init(receiverTime: PosixTime, arrival: PosixTime) {
    self.receiverTime = receiverTime
    self.arrival = arrival
  }

  /// `arrival − receiverTime`: the receiver's delay plus the system clock's error (positive
  /// when the system clock is right and the epoch arrives late, as it always does).
  public var lateness: Duration { arrival - receiverTime }
}

/// What ``TimeTrust`` made of one epoch.
public enum TimeVerdict: Sendable, Hashable {
  /// The epoch's time is trusted.
  case sample(TimeSample)
  /// It is not, for this reason.
  case rejected(TimeRejection)
}

/// Why an epoch gave no time sample.
public enum TimeRejection: Sendable, Hashable, CaseIterable, CustomStringConvertible {
  /// The epoch had no UTC time.
  case noTime
  /// The receiver did not say it had a fix (RMC status `V`, GGA quality 0, or neither given),
  /// or contradicted itself. Before its first fix a receiver prints the time of its own
  /// unsynchronised clock (MediaTek and u-blox do); it is never used.
  case noFix
  /// No RMC or ZDA of this epoch gave a date.
  case noDate
  /// The date lies before ``TimeTrustRules/earliestDate`` (the release date): an unset clock
  /// or a receiver that mistakes the GPS week number.
  case beforeReleaseDate
  /// A leap second (`23:59:60`), which POSIX time cannot name.
  case leapSecond
  /// The reader could not say when the epoch's first byte arrived.
  case noArrivalTime
  /// The epoch's time is not after the last trusted one (a repeated or reordered epoch).
  case notNewer
  /// The epoch's offset to the system clock differs by more than
  /// ``TimeTrustRules/maximumJump`` from the previous trusted epoch's: the receiver's time
  /// jumped (or the system clock was stepped). Trust starts over.
  case jumped
  /// A trusted epoch, but one of the first ``TimeTrustRules/settlingEpochs`` after trust began:
  /// many receivers print a wrong second right after their first fix.
  case settling

  public var description: String {
    switch self {
    case .noTime: return "no time"
    case .noFix: return "no fix"
    case .noDate: return "no date"
    case .beforeReleaseDate: return "date before the release date"
    case .leapSecond: return "leap second"
    case .noArrivalTime: return "no arrival time"
    case .notNewer: return "not newer"
    case .jumped: return "time jumped"
    case .settling: return "settling"
    }
  }
}

/// The rules for trusting an epoch's time.
public struct TimeTrustRules: Sendable, Hashable {
  /// Dates before this are refused (default: ``ReleaseDate/date``).
  public var earliestDate: UTCDate
  /// Consecutive trusted, mutually consistent epochs needed before the first sample (the
  /// last of them gives it). gpsd waits for several fixes too (`NTP_MIN_FIXES`).
  public var settlingEpochs: Int
  /// How far an epoch's offset to the system clock may move from the previous trusted
  /// epoch's.
  public var maximumJump: Duration

  public init(
    earliestDate: UTCDate = ReleaseDate.date, settlingEpochs: Int = 3,
    maximumJump: Duration = .milliseconds(500)
  ) {
    self.earliestDate = earliestDate
    self.settlingEpochs = max(1, settlingEpochs)
    self.maximumJump = maximumJump
  }
}

/// Decides, epoch by epoch, whether the receiver's time can be given to the system clock.
///
/// A pure state machine: the reader hands it each epoch's ``EpochTime`` and the arrival of its
/// first byte, and it answers with a ``TimeSample`` or the reason there is none. Only a valid
/// fix with a full date from this epoch's RMC or ZDA counts, never a date before the release
/// date, never a leap second; after trust begins (or begins again after a lost fix or a jump)
/// the first few epochs only prove that the time runs steadily.
public struct TimeTrust: Sendable {
  /// The rules it applies.
  public let rules: TimeTrustRules

  private var previous: TimeSample?
  private var consistentEpochs = 0

  /// Epochs refused, by reason.
  public private(set) var rejections: [TimeRejection: Int] = [:]
  /// Samples given.
  public private(set) var samples = 0

  public init(rules: TimeTrustRules = TimeTrustRules()) {
    self.rules = rules
  }

  /// Whether the last epoch gave a sample (trust is established).
  public var isTrusted: Bool { consistentEpochs >= rules.settlingEpochs }

  /// Judges one epoch. `arrival` is when its first byte arrived (`nil` if the reader could
  /// not tell).
  public mutating func judge(_ epoch: EpochTime, arrival: ArrivalTime?) -> TimeVerdict {
    let verdict = verdict(epoch, arrival: arrival)
    switch verdict {
    case .sample: samples += 1
    case .rejected(let reason): rejections[reason, default: 0] += 1
    }
    return verdict
  }

  /// Forgets the trust built up (the port was closed or the receiver replaced).
  public mutating func reset() {
    previous = nil
    consistentEpochs = 0
  }

  private mutating func verdict(_ epoch: EpochTime, arrival: ArrivalTime?) -> TimeVerdict {
    guard let time = epoch.time else { return distrust(.noTime) }
    guard epoch.fix == .valid else { return distrust(.noFix) }
    guard let date = epoch.date, epoch.dateSource != nil else { return distrust(.noDate) }
    guard date >= rules.earliestDate else { return distrust(.beforeReleaseDate) }
    guard let receiverTime = PosixTime(UTCTimestamp(date: date, time: time)) else {
      // POSIX time has no name for it; trust is kept, the next second continues.
      return .rejected(.leapSecond)
    }
    guard let arrival else { return .rejected(.noArrivalTime) }
    let sample = TimeSample(receiverTime: receiverTime, arrival: arrival.time)
    if let previous {
      guard receiverTime > previous.receiverTime else { return .rejected(.notNewer) }
      let change = sample.lateness - previous.lateness
      if change > rules.maximumJump || change < .zero - rules.maximumJump {
        self.previous = sample
        consistentEpochs = 1
        return .rejected(.jumped)
      }
    }
    previous = sample
    consistentEpochs = min(consistentEpochs + 1, rules.settlingEpochs)
    return consistentEpochs >= rules.settlingEpochs ? .sample(sample) : .rejected(.settling)
  }

  private mutating func distrust(_ reason: TimeRejection) -> TimeVerdict {
    previous = nil
    consistentEpochs = 0
    return .rejected(reason)
  }
}
