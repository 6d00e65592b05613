import NMEA

/// How a ``CommandPort``'s wait for an acknowledgement ended.
public enum CommandWait: Sendable, Hashable {
  /// The acknowledgement of the step awaited (or another answer: the exchange tells).
  case answer(ReceiverAcknowledgement)
  /// The deadline passed; `heard`: whether the receiver sent anything since the attempt was
  /// written (a receiver that fell silent after a standby is asleep, and is not written to).
  case timedOut(heard: Bool)
}

/// The line a ``CommandDriver`` drives: a write, a wait for the answer, a settle time, and
/// the time. The gated receiver's controller, `serialgps send` and `serialgps record` each
/// implement it over how they read their port (a reader thread's mailbox, a read loop that
/// also identifies, a read loop that also records); the driver holds what they share.
public protocol CommandPort {
  /// The instants of the clock the timeouts are measured on.
  associatedtype Instant: InstantProtocol where Instant.Duration == Duration

  /// Now, on that clock.
  var now: Instant { get }
  /// UTC now, for a step whose bytes carry the time (``CommandStep/timed``); `nil` when it is
  /// not known (the step's planned bytes are written).
  var utc: UTCTimestamp? { get }
  /// Whether the steps are to be given up before the next write, or after a wait (a wake-up
  /// that a shutdown overtook).
  var isAbandoned: Bool { get }

  /// Writes one attempt of `step`. The port starts listening for `step`'s answer before the
  /// bytes go out, so that a fast answer is not missed.
  mutating func write(_ bytes: [UInt8], of step: CommandStep) async throws
  /// Waits for the answer to `step` until `deadline`.
  mutating func answer(to step: CommandStep, until deadline: Instant) async throws -> CommandWait
  /// Keeps reading for `duration` after a step: its settle time (answers are not awaited).
  mutating func settle(for duration: Duration) async throws
  /// Forgets whether the receiver was heard: the next wait's `heard` tells only of what
  /// arrives from now on (the listening window of a step that expects silence).
  mutating func startListening()
}

/// The one command driver: runs ``CommandStep``s over a ``CommandPort``, each through its
/// ``CommandExchange`` (write, acknowledgement, bounded retries), then its settle time.
///
/// The exchange is the state machine; the driver does what its actions say, hands it UTC as
/// it is at every write (so a retry carries the current time), keeps whether the receiver was
/// heard, and stops where the port says the steps are abandoned. A step that fails does not
/// stop the next: the receiver may well be streaming anyway, and a standby's later steps are
/// still worth sending.
public struct CommandDriver: Sendable {
  /// Writes per step, at most (at least one).
  public let attempts: Int
  /// How long each attempt waits for its answer.
  public let timeout: Duration
  /// Whether a rejected attempt is tried again (``CommandExchange/retriesRejected``).
  public let retriesRejected: Bool

  public init(attempts: Int, timeout: Duration, retriesRejected: Bool = true) {
    self.attempts = max(1, attempts)
    self.timeout = timeout
    self.retriesRejected = retriesRejected
  }

  /// How one step ended.
  public struct Ran: Sendable, Hashable {
    public let step: CommandStep
    public let outcome: CommandOutcome
    /// The attempts allowed and the timeout of each, as the step ran.
    public let attempts: Int
    public let timeout: Duration
    /// Whether the receiver sent anything during the last wait.
    public let heard: Bool
  }

  /// Runs `step`'s exchange, without its settle time; `nil` when the port abandoned it.
  /// Throws what the port throws (a failed write or read): the steps cannot go on.
  public func run<Port: CommandPort>(
    _ step: CommandStep, retry: CommandRetryRule, on port: inout Port
  ) async throws -> Ran? {
    var heard = false
    var exchange = CommandExchange<Port.Instant>(
      step: step, attempts: attempts, timeout: timeout, retry: retry,
      retriesRejected: retriesRejected)
    var action = exchange.start(utc: port.utc)
    while true {
      switch action {
      case .write(let bytes):
        if port.isAbandoned { return nil }
        try await port.write(bytes, of: step)
        action = exchange.written(now: port.now)
      case .wait(let deadline):
        switch try await port.answer(to: step, until: deadline) {
        case .answer(let answer):
          // A stray answer (another command's) leaves the deadline as it was.
          action =
            exchange.answered(answer, now: port.now, utc: port.utc) ?? .wait(until: deadline)
        case .timedOut(let heardSince):
          if port.isAbandoned { return nil }
          heard = heardSince
          action = exchange.timedOut(heard: heardSince, now: port.now, utc: port.utc)
        }
      case .listen(let from, let until):
        // What arrives before `from` (the epoch already under way) is read and let pass.
        let grace = port.now.duration(to: from)
        if grace > .zero { try await port.settle(for: grace) }
        port.startListening()
        let heardInWindow: Bool
        switch try await port.answer(to: step, until: until) {
        case .answer: heardInWindow = true
        case .timedOut(let heardSince): heardInWindow = heardSince
        }
        if port.isAbandoned { return nil }
        heard = heardInWindow
        action = exchange.listened(heard: heardInWindow, now: port.now, utc: port.utc)
      case .finished(let outcome):
        return Ran(
          step: step, outcome: outcome, attempts: exchange.attempts, timeout: exchange.timeout,
          heard: heard)
      }
    }
  }

  /// Runs each step in order, each followed by its settle time, and tells `ended` how each
  /// ended. Returns false when the port abandoned the steps (`ended` is not called for the
  /// step abandoned, nor for the rest).
  @discardableResult
  public func run<Port: CommandPort>(
    _ steps: [CommandStep], retry: CommandRetryRule, on port: inout Port,
    ended: (Ran) -> Void = { _ in }
  ) async throws -> Bool {
    for step in steps {
      guard let ran = try await run(step, retry: retry, on: &port) else { return false }
      ended(ran)
      if step.settle > .zero { try await port.settle(for: step.settle) }
    }
    return true
  }
}
