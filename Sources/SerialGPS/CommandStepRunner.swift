import Chipsets
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

  /// Runs each step through the one command runner (``CommandExchange``): write, wait for
  /// the acknowledgement when it has one, retry a bounded number of times, then settle. A
  /// command that fails is reported and the next one is still sent: the receiver may well be
  /// streaming anyway.
  ///
  /// Wake-up steps are abandoned once a shutdown is asked for: the standby follows at once.
  /// Standby steps are never cut short, and never retried into a receiver that has gone quiet
  /// (a byte would wake it again).
  func send(
    _ steps: [CommandStep], to connection: any ReceiverConnection, abandonOnShutdown: Bool = false
  ) async {
    for step in steps {
      var exchange = CommandExchange(
        step: step, attempts: attempts, timeout: timeout,
        retry: abandonOnShutdown ? .always : .whileReceiverTalks)
      var action = exchange.start()
      var outcome: CommandExchange.Outcome?
      while outcome == nil {
        switch action {
        case .write(let bytes):
          if abandonOnShutdown && shutdownRequested.withLock({ $0 }) { return }
          if step.acknowledgement != .none { acknowledgements.expect(step) }
          do {
            try connection.write(bytes)
            counters.withLock { $0.commandsSent += 1 }
          } catch {
            // The connection is failing: the reader reports the loss as `disconnected`; the
            // remaining steps would fail alike.
            return
          }
          action = exchange.written(now: clock.now)
        case .wait(let deadline):
          let result = await acknowledgements.wait(
            until: deadline, clock: clock, abandonable: abandonOnShutdown)
          switch result {
          case .answer(let answer):
            // A stray answer (another command's) leaves the deadline as it was.
            action = exchange.answered(answer, now: clock.now) ?? .wait(until: deadline)
          case .timedOut(let heard):
            if abandonOnShutdown && shutdownRequested.withLock({ $0 }) { return }
            action = exchange.timedOut(heard: heard, now: clock.now)
          }
        case .finished(let finished):
          outcome = finished
        }
      }
      if let failure = outcome.flatMap({ Self.failure(of: $0, step: step, exchange: exchange) }) {
        counters.withLock { $0.commandsFailed += 1 }
        hub.publish(status: .commandFailed(reason: failure))
      }
      if step.settle > .zero {
        try? await clock.sleep(until: clock.now + step.settle)
      }
    }
  }

  /// What subscribers are told of a step that did not succeed; `nil` when it did.
  static func failure(
    of outcome: CommandExchange.Outcome, step: CommandStep, exchange: CommandExchange
  ) -> String? {
    switch outcome {
    case .sent, .acknowledged:
      return nil
    case .rejected(let answer, let attempt, _):
      let why = answer.failureReason ?? "\(answer)"
      return "\(step.summary): \(why) (\(attempt) of \(exchange.attempts) attempts)"
    case .unanswered(let written, let quiet):
      let why = "no acknowledgement within \(exchange.timeout)"
      if quiet {
        return "\(step.summary): \(why); not retried, the receiver fell silent "
          + "(\(written) of \(exchange.attempts) attempts)"
      }
      return "\(step.summary): \(why) (\(written) of \(exchange.attempts) attempts)"
    }
  }
}
