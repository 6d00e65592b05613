import NMEA

/// The one command runner: write → acknowledgement → retry, for one ``CommandStep``, as a
/// state machine with no I/O and no clock.
///
/// The gated receiver (`SerialGPS`) and `serialgps send` both drive it: they do what its
/// actions say (write the bytes, wait until a deadline) and tell it what happened (written,
/// an acknowledgement arrived, the wait ended with or without bytes heard). Each call that
/// may answer with a write takes UTC as it is then (`utc`), from which a step that carries
/// the time (``CommandStep/timed``) makes its bytes: every attempt says the time it is
/// written at. Times are instants of the caller's clock (`Instant`: the driver's `DriverInstant`, `serialgps send`'s
/// `ContinuousClock.Instant`); the timeout and lateness are `Duration`s. The settle time after the step is the caller's, as it
/// follows every outcome alike.
///
/// Two rules that a plain "retry until answered" loop gets wrong:
///
/// - **An acknowledgement answers the oldest attempt not yet answered.** A receiver answers
///   in order, and `$PMTK001` carries no sequence number: an answer that arrives after the
///   timeout, when the retry is already out, is the first attempt's, late, not a prompt
///   answer to the retry. The outcome says so (``Outcome/acknowledged(_:attempt:written:late:)``),
///   so the caller can warn that the timeout is too short.
/// - **A standby is not retried into a receiver that has gone quiet.** Once a standby took,
///   the receiver stops talking; if its acknowledgement is merely late, a second standby
///   would wake it again (on a MediaTek any byte on RX does). With
///   ``RetryRule/whileReceiverTalks``, an attempt is repeated only when the receiver was heard
///   since it was written; otherwise the exchange waits one more timeout for a late answer,
///   writing nothing.
public struct CommandExchange<Instant: InstantProtocol>: Sendable
where Instant.Duration == Duration {
  public typealias RetryRule = CommandRetryRule
  public typealias Outcome = CommandOutcome

  /// What the caller does next.
  public enum Action: Sendable, Hashable {
    /// Write these bytes, then call ``written(now:)`` (or give up if the write fails).
    case write([UInt8])
    /// Wait for an acknowledgement until this time: call ``answered(_:now:)`` when one
    /// arrives, ``timedOut(heard:now:)`` when the deadline passes.
    case wait(until: Instant)
    /// Let what the receiver sends until `from` pass unexamined, then listen until `until`
    /// (a step that expects ``AcknowledgementExpectation/silence(graceMilliseconds:quietMilliseconds:)``):
    /// call ``listened(heard:now:utc:)`` with whether anything arrived in between.
    case listen(from: Instant, until: Instant)
    /// The step is over.
    case finished(CommandOutcome)
  }

  public let step: CommandStep
  public let attempts: Int
  public let timeout: Duration
  public let retry: RetryRule
  /// Whether a rejected attempt is tried again (the gated receiver does: a chip still
  /// booting may refuse; `serialgps send` reports the refusal at once).
  public let retriesRejected: Bool
  /// When each attempt was written.
  public private(set) var writes: [Instant] = []
  private var answered = 0
  private var waitingForLateAnswer = false

  /// An exchange for `step`: at most `attempts` writes (at least one), each answered within
  /// `timeout`.
  public init(
    step: CommandStep, attempts: Int, timeout: Duration, retry: RetryRule = .always,
    retriesRejected: Bool = true
  ) {
    self.step = step
    self.attempts = max(1, attempts)
    self.timeout = timeout
    self.retry = retry
    self.retriesRejected = retriesRejected
  }

  /// The first action: write the command (made at `utc`, for a step that carries the time).
  public func start(utc: UTCTimestamp? = nil) -> Action { .write(step.bytes(at: utc)) }

  /// The command was written at `now`.
  public mutating func written(now: Instant) -> Action {
    writes.append(now)
    switch step.acknowledgement {
    case .none:
      return .finished(.sent)
    case .silence(let grace, let quiet):
      let from = now.advanced(by: .milliseconds(grace))
      return .listen(from: from, until: from.advanced(by: .milliseconds(quiet)))
    case .ubx, .reply, .mga, .identification:
      return .wait(until: now.advanced(by: timeout))
    }
  }

  /// The listening window after an attempt of a step that expects silence ended at `now`
  /// (UTC then: `utc`); `heard`: whether the receiver sent anything in it. Silent, the
  /// command took. Heard, it did not: the attempt is repeated while attempts are left (the
  /// frame may have been damaged on the line; and the receiver is talking, so a byte cannot
  /// wake what is not asleep).
  public mutating func listened(heard: Bool, now: Instant, utc: UTCTimestamp? = nil) -> Action {
    if !heard { return .finished(.silent(written: writes.count)) }
    if writes.count < attempts { return .write(step.bytes(at: utc)) }
    return .finished(.keptTalking(written: writes.count))
  }

  /// An acknowledgement arrived at `now` (UTC then: `utc`). Unrelated ones (another
  /// command's) change nothing and return `nil`: keep waiting until the same deadline.
  public mutating func answered(
    _ acknowledgement: ReceiverAcknowledgement, now: Instant, utc: UTCTimestamp? = nil
  ) -> Action? {
    guard step.isAcknowledged(by: acknowledgement) != nil, answered < writes.count else {
      return nil
    }
    answered += 1
    let attempt = answered
    if !acknowledgement.isPositive {
      if retriesRejected && writes.count < attempts {
        // Another attempt is out already (this answer was late): wait for its answer.
        return answered < writes.count ? nil : .write(step.bytes(at: utc))
      }
      return .finished(.rejected(acknowledgement, attempt: attempt, written: writes.count))
    }
    let overdue = writes[attempt - 1].advanced(by: timeout).duration(to: now)
    return .finished(
      .acknowledged(
        acknowledgement, attempt: attempt, written: writes.count,
        late: overdue > .zero ? overdue : nil))
  }

  /// The wait ended at `now` (UTC then: `utc`) with no acknowledgement; `heard`: whether the
  /// receiver sent anything since the last attempt was written.
  public mutating func timedOut(heard: Bool, now: Instant, utc: UTCTimestamp? = nil) -> Action {
    if waitingForLateAnswer {
      return .finished(.unanswered(written: writes.count, quiet: !heard))
    }
    if retry == .whileReceiverTalks && !heard {
      // Probably asleep already: listen once more for a late answer, write nothing.
      waitingForLateAnswer = true
      return .wait(until: now.advanced(by: timeout))
    }
    if writes.count < attempts { return .write(step.bytes(at: utc)) }
    return .finished(.unanswered(written: writes.count, quiet: false))
  }
}

/// When an unanswered attempt is repeated.
public enum CommandRetryRule: Sendable, Hashable {
  /// Always, up to the attempts allowed (a wake-up: bytes only help a sleeping chip).
  case always
  /// Only while the receiver is heard after the attempt (a standby).
  case whileReceiverTalks
}

/// How the step ended.
public enum CommandOutcome: Sendable, Hashable {
  /// Written; the command has no acknowledgement.
  case sent
  /// Accepted. `attempt` is the attempt it answered, `written` how many were written in
  /// all, `late` by how much the answer missed that attempt's timeout (`nil`: in time).
  case acknowledged(ReceiverAcknowledgement, attempt: Int, written: Int, late: Duration?)
  /// Refused by the receiver (a NAK, a `$PMTK001` flag other than 3).
  case rejected(ReceiverAcknowledgement, attempt: Int, written: Int)
  /// No answer. `quiet`: not retried (or not again) because the receiver fell silent after
  /// the attempt, as it does when a standby took and only its answer was lost.
  case unanswered(written: Int, quiet: Bool)
  /// The receiver fell silent after the last of `written` attempts, as the step expected
  /// (``AcknowledgementExpectation/silence(graceMilliseconds:quietMilliseconds:)``): the
  /// command took.
  case silent(written: Int)
  /// The receiver went on sending after each of the `written` attempts of a step that
  /// expected silence: the command did not take, and the receiver is awake.
  case keptTalking(written: Int)

  /// Whether the step did what it was meant to (sent, acknowledged, or fell silent).
  public var succeeded: Bool {
    switch self {
    case .sent, .acknowledged, .silent: return true
    case .rejected, .unanswered, .keptTalking: return false
    }
  }
}
