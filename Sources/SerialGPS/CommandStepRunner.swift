import Chipsets
import NMEA
import POSIX

/// The controller's use of the one command driver (``CommandDriver``): runs each step of a
/// wake-up or a standby over a connection, and reports the steps that fail.
///
/// Threading: used by the controller task alone (``ReceiverController``), one sequence of
/// steps at a time; it waits for acknowledgements in the ``AcknowledgementMailbox`` that the
/// reader thread fills. The counters, the hub and the shutdown flag it touches are safe from
/// any thread.
struct CommandStepRunner: Sendable {
  let acknowledgements: AcknowledgementMailbox
  let clock: any DriverClock
  let attempts: Int
  let timeout: Duration
  let counters: Locked<ReceiverStatistics>
  let hub: SubscriptionHub
  let shutdownRequested: Locked<Bool>
  /// UTC as it is now, read at every write: a step that carries the time (aiding) makes its
  /// bytes from it, so a retry says the time of its own writing.
  let utc: @Sendable () -> UTCTimestamp?

  /// Runs each step through the one command driver (``CommandDriver``): write, wait for the
  /// acknowledgement when it has one, retry a bounded number of times, then settle. A
  /// command that fails is reported and the next one is still sent: the receiver may well be
  /// streaming anyway. `family`: the chipset the steps were chosen for, which a failure
  /// names when the receiver ignored them while it kept talking.
  ///
  /// An aiding step (one that carries the time) that the receiver refuses or leaves
  /// unanswered is information, not a failure: a chip that already has its time may say so
  /// (`$PMTK001,740,2`), a u-blox one by an MGA-ACK infoCode. It is counted
  /// (``ReceiverStatistics/aidingNotTaken``) and the wake goes on.
  ///
  /// Wake-up steps are abandoned once a shutdown is asked for: the standby follows at once.
  /// Standby steps are never cut short, and never retried into a receiver that has gone quiet
  /// (a byte would wake it again).
  ///
  /// - Returns: the first failure of a step that is not aiding, if any.
  @discardableResult
  func send(
    _ steps: [CommandStep], to connection: any ReceiverConnection, family: ChipsetFamily,
    abandonOnShutdown: Bool = false
  ) async -> FailureReason? {
    var port = port(connection, abandonOnShutdown: abandonOnShutdown)
    var first: FailureReason?
    // A failed write ends the steps: the reader reports the loss as `disconnected`, and the
    // remaining steps would fail alike.
    _ = try? await driver.run(
      steps, retry: abandonOnShutdown ? .always : .whileReceiverTalks, on: &port
    ) { ran in
      if ran.step.timed != nil {
        if !ran.outcome.succeeded { counters.withLock { $0.aidingNotTaken += 1 } }
      } else if let failure = Self.failure(of: ran, family: family) {
        counters.withLock { $0.commandsFailed += 1 }
        hub.publish(status: .commandFailed(reason: failure))
        if first == nil { first = failure }
      }
    }
    return first
  }

  /// Runs one step's exchange (without its settle time) and returns how it ended; `nil` when
  /// it was abandoned for a shutdown or the write failed (the reader then reports the loss).
  func run(
    _ step: CommandStep, on connection: any ReceiverConnection, abandonOnShutdown: Bool
  ) async -> CommandDriver.Ran? {
    var port = port(connection, abandonOnShutdown: abandonOnShutdown)
    return try? await driver.run(
      step, retry: abandonOnShutdown ? .always : .whileReceiverTalks, on: &port)
  }

  private var driver: CommandDriver { CommandDriver(attempts: attempts, timeout: timeout) }

  private func port(_ connection: any ReceiverConnection, abandonOnShutdown: Bool)
    -> ConnectionCommandPort
  {
    ConnectionCommandPort(
      connection: connection, acknowledgements: acknowledgements, clock: clock,
      counters: counters, shutdownRequested: shutdownRequested,
      abandonOnShutdown: abandonOnShutdown, readUTC: utc)
  }

  /// What subscribers are told of a step that did not succeed; `nil` when it did.
  static func failure(of ran: CommandDriver.Ran, family: ChipsetFamily) -> FailureReason? {
    let step = ran.step
    switch ran.outcome {
    case .sent, .acknowledged, .silent:
      return nil
    case .keptTalking(let written):
      // The receiver ignored a sleep that has no answer (a u-blox ignores UBX-RXM-PMREQ
      // while its USB port is connected): it is awake.
      return FailureReason(
        .rejected,
        "\(step.summary): the receiver kept sending after each of \(written) attempt"
          + "\(written == 1 ? "" : "s"), so it did not enter that sleep and is awake"
          + (family.driver.keptTalkingReason.map { " (\($0))" } ?? ""))
    case .rejected(let answer, let attempt, _):
      let why = answer.failureReason ?? "\(answer)"
      return FailureReason(
        .rejected, "\(step.summary): \(why) (\(attempt) of \(ran.attempts) attempts)")
    case .unanswered(let written, let quiet):
      let why = "no acknowledgement within \(ran.timeout)"
      if quiet {
        return FailureReason(
          .noAnswer,
          "\(step.summary): \(why); not retried, the receiver fell silent "
            + "(\(written) of \(ran.attempts) attempts)")
      }
      guard ran.heard, written >= ran.attempts, family.hasCommands else {
        let silence =
          ran.heard
          ? "" : "; the receiver sent nothing (asleep, unpowered, or at another baud rate?)"
        return FailureReason(
          .noAnswer,
          "\(step.summary): \(why) (\(written) of \(ran.attempts) attempts)\(silence)")
      }
      // It kept sending and ignored every attempt: it does not speak this command language.
      let said =
        "\(step.summary): \(why), \(written) attempts, while the receiver kept sending: it is "
        + "most likely not a \(family.displayName) receiver. "
      return FailureReason(
        .wrongChipset,
        said + "Name its chipset (chipset: .family(…)), or leave it to be identified "
          + "(chipset: .automatic or .probe)",
        commandLine: said
          + "Name its chipset (--chipset \(ChipsetRegistry.allNames)), or leave it to "
          + "be identified (--chipset auto or --chipset probe)")
    }
  }
}

/// The controller's side of the line for the command driver: writes go to the connection,
/// answers come from the reader thread through the ``AcknowledgementMailbox``, and settle
/// times pass on the driver's clock while the reader goes on reading.
struct ConnectionCommandPort: CommandPort {
  let connection: any ReceiverConnection
  let acknowledgements: AcknowledgementMailbox
  let clock: any DriverClock
  let counters: Locked<ReceiverStatistics>
  let shutdownRequested: Locked<Bool>
  /// Whether a shutdown gives up these steps (a wake-up's, never a standby's).
  let abandonOnShutdown: Bool
  /// UTC as it is now (the receiver's one wall clock).
  let readUTC: @Sendable () -> UTCTimestamp?

  var now: DriverInstant { clock.now }
  var utc: UTCTimestamp? { readUTC() }
  var isAbandoned: Bool { abandonOnShutdown && shutdownRequested.withLock { $0 } }

  func write(_ bytes: [UInt8], of step: CommandStep) async throws {
    // A step confirmed by silence is announced too: that forgets any answer left over from
    // an earlier step, which would otherwise end its window as if the receiver had talked.
    if step.acknowledgement != .none { acknowledgements.expect(step) }
    try connection.write(bytes)
    counters.withLock { $0.commandsSent += 1 }
  }

  func answer(to step: CommandStep, until deadline: DriverInstant) async -> CommandWait {
    let wait = await acknowledgements.wait(
      until: deadline, clock: clock, abandonable: abandonOnShutdown)
    // Bytes the reader has not got to yet were sent all the same: a late reader must not make
    // a talking receiver look silent (and a sleep look entered).
    if wait == .timedOut(heard: false), !isAbandoned, connection.hasUnreadInput() {
      return .timedOut(heard: true)
    }
    return wait
  }

  func settle(for duration: Duration) async {
    try? await clock.sleep(until: clock.now + duration)
  }

  func startListening() { acknowledgements.startListening() }
}
