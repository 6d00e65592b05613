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
  /// The epoch's time is not after the last trusted one: a repeated or reordered epoch, or
  /// the first epochs after the receiver's time stepped back, until the step has settled.
  case notNewer
  /// The epoch's offset to the system clock differs by more than
  /// ``TimeTrustRules/maximumJump`` from the last trusted epoch's: one epoch read late, or the
  /// first epochs after the receiver's time stepped forward, until the step has settled.
  case jumped
  /// The receiver's time stepped away from the system clock, which agreed with it until then
  /// (``TimeStep/refused(by:lateness:)``): not served while it stays away.
  case awayFromSystemClock
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
    case .awayFromSystemClock: return "away from the system clock"
    case .settling: return "settling"
    }
  }
}

/// A step between the receiver's time and the system clock, as ``TimeTrust`` saw and decided
/// it (docs/time.md, "When the time steps"). Each is worth a line in the log when it happens.
///
/// `by` is how far the receiver's time moved against the system clock (negative: back), and
/// `lateness` the new `arrival − receiverTime` (about the receiver's delay when both are right).
public enum TimeStep: Sendable, Hashable, CustomStringConvertible {
  /// The system clock was stepped (seen against `CLOCK_MONOTONIC`) while the receiver's time
  /// ran on: trust is kept, and the samples follow the receiver.
  case systemClock(by: Duration)
  /// The receiver's time stepped and the new time is served after settling: it agrees with
  /// the system clock (a receiver that was wrong and is right now), or the system clock
  /// agreed with neither the old time nor the new one and cannot break the tie.
  case followed(by: Duration, lateness: Duration, agreesWithSystemClock: Bool)
  /// The receiver's time stepped away from the system clock, which agreed with it until then
  /// (a receiver that was right and is wrong now: a week-rollover defect): not served until
  /// it agrees with the system clock again.
  case refused(by: Duration, lateness: Duration)
  /// After a refused step the receiver agrees with the system clock again: served again.
  case returned(lateness: Duration)

  public var description: String {
    switch self {
    case .systemClock(let step):
      return
        "the system clock was stepped by \(Self.seconds(step)); the receiver's time ran on: "
        + "trust kept"
    case .followed(let step, let lateness, true):
      return
        "the receiver's time stepped by \(Self.seconds(step)) and now agrees with the system "
        + "clock (\(Self.seconds(lateness)) late): serving the new time"
    case .followed(let step, let lateness, false):
      return
        "the receiver's time stepped by \(Self.seconds(step)); the system clock agrees with "
        + "neither the old time nor the new one (\(Self.seconds(lateness)) apart): following "
        + "the receiver"
    case .refused(let step, let lateness):
      return
        "WARNING: the receiver's time stepped by \(Self.seconds(step)), away from the system "
        + "clock (now \(Self.seconds(lateness)) apart), which agreed with it until then: NOT "
        + "serving it (a receiver defect, such as a GPS week rollover?). Time is served again "
        + "once the receiver agrees with the system clock; if the receiver is right, set the "
        + "system clock to its time or restart to accept it"
    case .returned(let lateness):
      return
        "the receiver's time agrees with the system clock again (\(Self.seconds(lateness)) "
        + "late): serving it again"
    }
  }

  /// `+3600.000 s`, to the millisecond.
  static func seconds(_ duration: Duration) -> String {
    let milliseconds = duration.wholeNanoseconds / 1_000_000
    let magnitude = milliseconds.magnitude
    let fraction = String(magnitude % 1000)
    return (milliseconds < 0 ? "-" : "+") + String(magnitude / 1000) + "."
      + String(repeating: "0", count: 3 - fraction.count) + fraction + " s"
  }
}

/// The rules for trusting an epoch's time.
public struct TimeTrustRules: Sendable, Hashable {
  /// Dates before this are refused (default: ``ReleaseDate/date``).
  public var earliestDate: UTCDate
  /// Consecutive trusted, mutually consistent epochs needed before the first sample (the
  /// last of them gives it), and before a step of the receiver's time is decided.
  /// gpsd waits for several fixes too (`NTP_MIN_FIXES`).
  public var settlingEpochs: Int
  /// How far an epoch's offset to the system clock may move from the previous trusted
  /// epoch's and still be on the same timeline; beyond it the receiver's time stepped.
  public var maximumJump: Duration
  /// How close an epoch's `arrival − receiverTime` must be to zero for the receiver to agree
  /// with the system clock: the receiver's delay (well under a second) plus the system
  /// clock's error. The system clock breaks the tie when the receiver's time steps.
  public var systemClockAgreement: Duration
  /// How fast the receiver's time and the system clock may drift apart (a free-running
  /// crystal: tens of parts per million) before a change is a step: over a gap in trust (the
  /// fix lost for an hour) ``maximumJump`` grows by this fraction of the gap.
  public var maximumDrift: Double

  public init(
    earliestDate: UTCDate = ReleaseDate.date, settlingEpochs: Int = 3,
    maximumJump: Duration = .milliseconds(500), systemClockAgreement: Duration = .seconds(1),
    maximumDrift: Double = 100e-6
  ) {
    self.earliestDate = earliestDate
    self.settlingEpochs = max(1, settlingEpochs)
    self.maximumJump = maximumJump
    self.systemClockAgreement = systemClockAgreement
    self.maximumDrift = max(0, maximumDrift)
  }
}

/// Decides, epoch by epoch, whether the receiver's time can be given to the system clock.
///
/// A pure state machine: the reader hands it each epoch's ``EpochTime`` and the arrival of its
/// first byte, and it answers with a ``TimeSample`` or the reason there is none. Only a valid
/// fix with a full date from this epoch's RMC or ZDA counts, never a date before the release
/// date, never a leap second; after trust begins (or begins again after a lost fix) the first
/// few epochs only prove that the time runs steadily.
///
/// When the receiver's time steps against the system clock (one epoch an hour earlier than
/// the last), the epochs of the new time settle as a first trust does, and then the system
/// clock breaks the tie (``TimeStep``): a receiver that comes to agree with it is followed, one
/// that leaves it is not; when the system clock agrees with neither, the receiver is
/// followed. A step of the system clock itself is told apart by its offset to
/// `CLOCK_MONOTONIC` (`systemClockOffset`), and keeps trust.
public struct TimeTrust: Sendable {
  /// The rules it applies.
  public let rules: TimeTrustRules

  /// The last trusted sample: the timeline trust follows. Kept while the fix is lost, so that
  /// a step across the loss is seen; moved with every step of the system clock; forgotten by
  /// ``reset()``.
  private var reference: TimeSample?
  /// Whether epochs on the reference's timeline are served now.
  private var trusted = false
  /// The latest consecutive epochs consistent with each other and not served yet: trust
  /// settling, or the receiver's new time after a step.
  private var run: (last: TimeSample, count: Int)?
  /// The last step was refused: the receiver's time is away from the system clock.
  private var away = false
  /// `CLOCK_REALTIME − CLOCK_MONOTONIC` at the last epoch: its changes are the system clock's
  /// steps.
  private var systemClockOffset: Duration?

  /// Epochs refused, by reason.
  public private(set) var rejections: [TimeRejection: Int] = [:]
  /// Samples given.
  public private(set) var samples = 0
  /// What the last epoch judged showed of a step, for the log; `nil` for most epochs.
  public private(set) var lastStep: TimeStep?

  public init(rules: TimeTrustRules = TimeTrustRules()) {
    self.rules = rules
  }

  /// Whether trust is established: the last epoch on the trusted timeline gave a sample, and
  /// neither a lost fix nor a refused step has ended it since.
  public var isTrusted: Bool { trusted }

  /// Judges one epoch. `arrival` is when its first byte arrived (`nil` if the reader could
  /// not tell); `systemClockOffset` is `CLOCK_REALTIME − CLOCK_MONOTONIC` now, whose changes
  /// are the system clock's steps (`nil`: unknown, and a step of the system clock then looks
  /// like one of the receiver's).
  public mutating func judge(
    _ epoch: EpochTime, arrival: ArrivalTime?, systemClockOffset: Duration? = nil
  ) -> TimeVerdict {
    lastStep = nil
    noteSystemClock(systemClockOffset)
    let verdict = verdict(epoch, arrival: arrival)
    switch verdict {
    case .sample: samples += 1
    case .rejected(let reason): rejections[reason, default: 0] += 1
    }
    return verdict
  }

  /// Forgets the trust built up and the timeline it followed (the port was closed or the
  /// receiver replaced).
  public mutating func reset() {
    reference = nil
    trusted = false
    run = nil
    away = false
    systemClockOffset = nil
  }

  /// Moves what is remembered with a step of the system clock, so that the receiver's time
  /// is compared with the clock that does not step.
  private mutating func noteSystemClock(_ offset: Duration?) {
    guard let offset else { return }
    defer { systemClockOffset = offset }
    guard let previous = systemClockOffset, offset != previous else { return }
    let step = offset - previous
    if var moved = reference {
      moved.arrival = moved.arrival + step
      reference = moved
    }
    if var moved = run {
      moved.last.arrival = moved.last.arrival + step
      run = moved
    }
    // Below a millisecond: the two clock readings' own jitter, not a step.
    if reference != nil || run != nil, step > .milliseconds(1) || step < .milliseconds(-1) {
      lastStep = .systemClock(by: step)
    }
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
    if trusted, let reference, follows(sample, after: reference) {
      self.reference = sample
      run = nil
      return .sample(sample)
    }
    // Off the trusted timeline (one late epoch, or a step), or not trusted yet.
    let refusal: TimeRejection
    if trusted, let reference {
      refusal = sample.receiverTime > reference.receiverTime ? .jumped : .notNewer
    } else {
      refusal = away && !agreesWithSystemClock(sample) ? .awayFromSystemClock : .settling
    }
    let count = run.map { follows(sample, after: $0.last) ? $0.count + 1 : 1 } ?? 1
    run = (sample, count)
    guard count >= rules.settlingEpochs else { return .rejected(refusal) }
    return settle(sample, newlySettled: count == rules.settlingEpochs)
  }

  /// The run of consistent epochs that `sample` ends has settled: serve it, unless its time
  /// stepped away from a system clock that agreed with the trusted time.
  private mutating func settle(_ sample: TimeSample, newlySettled: Bool) -> TimeVerdict {
    if let reference, let step = step(from: reference, to: sample) {
      let agrees = agreesWithSystemClock(sample)
      if agreesWithSystemClock(reference) && !agrees {
        if newlySettled { lastStep = .refused(by: step, lateness: sample.lateness) }
        away = true
        trusted = false
        return .rejected(.awayFromSystemClock)
      }
      lastStep =
        away
        ? .returned(lateness: sample.lateness)
        : .followed(by: step, lateness: sample.lateness, agreesWithSystemClock: agrees)
    } else if away {
      lastStep = .returned(lateness: sample.lateness)
    }
    away = false
    trusted = true
    reference = sample
    run = nil
    return .sample(sample)
  }

  /// Whether `sample` continues the timeline of `previous`: newer, and its offset to the
  /// system clock within ``TimeTrustRules/maximumJump`` (plus the drift the time between
  /// them allows).
  private func follows(_ sample: TimeSample, after previous: TimeSample) -> Bool {
    sample.receiverTime > previous.receiverTime && step(from: previous, to: sample) == nil
  }

  /// How far the receiver's time moved against the system clock from `previous` to `sample`
  /// (negative: back), when that is a step; `nil` when it is within what drift and jitter
  /// allow.
  private func step(from previous: TimeSample, to sample: TimeSample) -> Duration? {
    let change = sample.lateness - previous.lateness
    let elapsed = sample.arrival - previous.arrival
    let drift = (elapsed < .zero ? .zero - elapsed : elapsed) * rules.maximumDrift
    let allowed = rules.maximumJump + drift
    return change > allowed || change < .zero - allowed ? .zero - change : nil
  }

  private func agreesWithSystemClock(_ sample: TimeSample) -> Bool {
    let lateness = sample.lateness
    return lateness < rules.systemClockAgreement && lateness > .zero - rules.systemClockAgreement
  }

  /// The fix, the date or the time is missing: trust starts over, but the timeline is kept,
  /// so that the time after the loss is compared with the time before it.
  private mutating func distrust(_ reason: TimeRejection) -> TimeVerdict {
    trusted = false
    run = nil
    return .rejected(reason)
  }
}
