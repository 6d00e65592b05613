import Chipsets
import NMEA
import POSIX

/// The controller's command loop: runs each step of a wake-up or a standby through the one
/// command runner (``CommandExchange``) over a connection, and reports the steps that fail.
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

  /// Runs each step through the one command runner (``CommandExchange``): write, wait for
  /// the acknowledgement when it has one, retry a bounded number of times, then settle. A
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
  func send(
    _ steps: [CommandStep], to connection: any ReceiverConnection, family: ChipsetFamily,
    abandonOnShutdown: Bool = false
  ) async {
    for step in steps {
      guard let ran = await run(step, on: connection, abandonOnShutdown: abandonOnShutdown)
      else { return }
      if step.timed != nil {
        if !ran.outcome.succeeded { counters.withLock { $0.aidingNotTaken += 1 } }
      } else if let failure = Self.failure(of: ran, step: step, family: family) {
        counters.withLock { $0.commandsFailed += 1 }
        hub.publish(status: .commandFailed(reason: failure))
      }
      if step.settle > .zero {
        try? await clock.sleep(until: clock.now + step.settle)
      }
    }
  }

  /// How one step's exchange ended.
  struct Ran {
    var outcome: CommandOutcome
    var exchange: CommandExchange<DriverInstant>
    /// Whether the receiver sent anything during the last wait.
    var heard: Bool
  }

  /// Runs one step's exchange (without its settle time) and returns how it ended; `nil` when
  /// it was abandoned for a shutdown or the write failed (the reader then reports the loss).
  func run(
    _ step: CommandStep, on connection: any ReceiverConnection, abandonOnShutdown: Bool
  ) async -> Ran? {
    var heard = false
    var exchange = CommandExchange<DriverInstant>(
      step: step, attempts: attempts, timeout: timeout,
      retry: abandonOnShutdown ? .always : .whileReceiverTalks)
    var action = exchange.start(utc: utc())
    while true {
      switch action {
      case .write(let bytes):
        if abandonOnShutdown && shutdownRequested.withLock({ $0 }) { return nil }
        if step.acknowledgement != .none { acknowledgements.expect(step) }
        do {
          try connection.write(bytes)
          counters.withLock { $0.commandsSent += 1 }
        } catch {
          // The connection is failing: the reader reports the loss as `disconnected`; the
          // remaining steps would fail alike.
          return nil
        }
        action = exchange.written(now: clock.now)
      case .wait(let deadline):
        let result = await acknowledgements.wait(
          until: deadline, clock: clock, abandonable: abandonOnShutdown)
        switch result {
        case .answer(let answer):
          // A stray answer (another command's) leaves the deadline as it was.
          action =
            exchange.answered(answer, now: clock.now, utc: utc()) ?? .wait(until: deadline)
        case .timedOut(let heardSince):
          if abandonOnShutdown && shutdownRequested.withLock({ $0 }) { return nil }
          heard = heardSince
          action = exchange.timedOut(heard: heardSince, now: clock.now, utc: utc())
        }
      case .finished(let outcome):
        return Ran(outcome: outcome, exchange: exchange, heard: heard)
      }
    }
  }

  /// What subscribers are told of a step that did not succeed; `nil` when it did.
  static func failure(of ran: Ran, step: CommandStep, family: ChipsetFamily) -> FailureReason? {
    let exchange = ran.exchange
    switch ran.outcome {
    case .sent, .acknowledged:
      return nil
    case .rejected(let answer, let attempt, _):
      let why = answer.failureReason ?? "\(answer)"
      return FailureReason(
        .rejected, "\(step.summary): \(why) (\(attempt) of \(exchange.attempts) attempts)")
    case .unanswered(let written, let quiet):
      let why = "no acknowledgement within \(exchange.timeout)"
      if quiet {
        return FailureReason(
          .noAnswer,
          "\(step.summary): \(why); not retried, the receiver fell silent "
            + "(\(written) of \(exchange.attempts) attempts)")
      }
      guard ran.heard, written >= exchange.attempts, family.hasCommands else {
        let silence =
          ran.heard
          ? "" : "; the receiver sent nothing (asleep, unpowered, or at another baud rate?)"
        return FailureReason(
          .noAnswer,
          "\(step.summary): \(why) (\(written) of \(exchange.attempts) attempts)\(silence)")
      }
      // It kept sending and ignored every attempt: it does not speak this command language.
      return FailureReason(
        .wrongChipset,
        "\(step.summary): \(why), \(written) attempts, while the receiver kept sending: it is "
          + "most likely not a \(family.displayName) receiver. Name its chipset (chipset: "
          + ".family(…), --chipset ublox|mtk|sirf|nmea), or leave it to be identified "
          + "(chipset: .automatic or .probe)")
    }
  }
}
