import NMEA
import Testing

@testable import Chipsets

/// Instants written as the time since the test began (`.zero`, `.milliseconds(20)`), so that
/// each exchange below reads as a time line.
struct TestInstant: InstantProtocol {
  var sinceStart: Duration

  static let zero = TestInstant(sinceStart: .zero)
  static func milliseconds(_ value: Int) -> TestInstant {
    TestInstant(sinceStart: .milliseconds(value))
  }
  static func seconds(_ value: Int) -> TestInstant { TestInstant(sinceStart: .seconds(value)) }

  func advanced(by duration: Duration) -> TestInstant {
    TestInstant(sinceStart: sinceStart + duration)
  }
  func duration(to other: TestInstant) -> Duration { other.sinceStart - sinceStart }
  static func < (lhs: TestInstant, rhs: TestInstant) -> Bool { lhs.sinceStart < rhs.sinceStart }
}

/// The one command runner, driven by hand: exact actions for each thing that can happen.
@Suite struct CommandExchangeTests {
  let standby = MediaTekCommandSet.standby
  let ack161 = ReceiverAcknowledgement.mtk(command: 161, result: .succeeded)
  let nak161 = ReceiverAcknowledgement.mtk(command: 161, result: .failed)
  let ack314 = ReceiverAcknowledgement.mtk(command: 314, result: .succeeded)

  @Test func aPromptAnswerEndsTheStep() {
    var exchange = CommandExchange<TestInstant>(step: standby, attempts: 3, timeout: .seconds(1))
    #expect(exchange.start() == .write(standby.bytes))
    #expect(exchange.written(now: .zero) == .wait(until: .seconds(1)))
    #expect(exchange.answered(ack314, now: .milliseconds(10)) == nil)  // another command's
    #expect(
      exchange.answered(ack161, now: .milliseconds(20))
        == .finished(.acknowledged(ack161, attempt: 1, written: 1, late: nil)))
  }

  @Test func aCommandWithoutAcknowledgementIsSentOnce() {
    let step = CommandStep(bytes: [0x0D, 0x0A], summary: "wake")
    var exchange = CommandExchange<TestInstant>(step: step, attempts: 3, timeout: .seconds(1))
    #expect(exchange.start() == .write([0x0D, 0x0A]))
    #expect(exchange.written(now: .zero) == .finished(.sent))
  }

  @Test func aRejectionIsRetriedThenReported() {
    var exchange = CommandExchange<TestInstant>(step: standby, attempts: 2, timeout: .seconds(1))
    _ = exchange.written(now: .zero)
    #expect(exchange.answered(nak161, now: .milliseconds(5)) == .write(standby.bytes))
    _ = exchange.written(now: .milliseconds(5))
    #expect(
      exchange.answered(nak161, now: .milliseconds(10))
        == .finished(.rejected(nak161, attempt: 2, written: 2)))
  }

  @Test func aRejectionIsReportedAtOnceWhenAskedTo() {
    var exchange = CommandExchange<TestInstant>(
      step: standby, attempts: 3, timeout: .seconds(1), retriesRejected: false)
    _ = exchange.written(now: .zero)
    #expect(
      exchange.answered(nak161, now: .milliseconds(5))
        == .finished(.rejected(nak161, attempt: 1, written: 1)))
  }

  /// The bug: answered after 1.3 s with a 1 s timeout, the first attempt's answer was taken
  /// for a prompt answer to the retry.
  @Test func aLateAnswerIsCreditedToTheAttemptItAnswers() {
    var exchange = CommandExchange<TestInstant>(step: standby, attempts: 3, timeout: .seconds(1))
    _ = exchange.written(now: .zero)
    // The receiver kept talking: retried.
    #expect(exchange.timedOut(heard: true, now: .seconds(1)) == .write(standby.bytes))
    #expect(exchange.written(now: .seconds(1)) == .wait(until: .seconds(2)))
    #expect(
      exchange.answered(ack161, now: .milliseconds(1300))
        == .finished(
          .acknowledged(ack161, attempt: 1, written: 2, late: .milliseconds(300))))
  }

  @Test func aStandbyIsNotRetriedIntoAReceiverThatFellSilent() {
    var exchange = CommandExchange<TestInstant>(
      step: standby, attempts: 3, timeout: .seconds(1), retry: .whileReceiverTalks)
    _ = exchange.written(now: .zero)
    // Silent since the write: listen as long again, write nothing.
    #expect(exchange.timedOut(heard: false, now: .seconds(1)) == .wait(until: .seconds(2)))
    #expect(
      exchange.answered(ack161, now: .milliseconds(1300))
        == .finished(
          .acknowledged(ack161, attempt: 1, written: 1, late: .milliseconds(300))))
    #expect(exchange.writes == [.zero])
  }

  @Test func aSilentReceiverThatNeverAnswersGetsOneStandby() {
    var exchange = CommandExchange<TestInstant>(
      step: standby, attempts: 3, timeout: .seconds(1), retry: .whileReceiverTalks)
    _ = exchange.written(now: .zero)
    #expect(exchange.timedOut(heard: false, now: .seconds(1)) == .wait(until: .seconds(2)))
    #expect(
      exchange.timedOut(heard: false, now: .seconds(2))
        == .finished(.unanswered(written: 1, quiet: true)))
  }

  @Test func aStandbyIsRetriedWhileTheReceiverTalks() {
    var exchange = CommandExchange<TestInstant>(
      step: standby, attempts: 2, timeout: .seconds(1), retry: .whileReceiverTalks)
    _ = exchange.written(now: .zero)
    #expect(exchange.timedOut(heard: true, now: .seconds(1)) == .write(standby.bytes))
    _ = exchange.written(now: .seconds(1))
    #expect(
      exchange.timedOut(heard: true, now: .seconds(2))
        == .finished(.unanswered(written: 2, quiet: false)))
  }

  @Test func aWakeUpIsRetriedUpToItsAttemptsThenUnanswered() {
    var exchange = CommandExchange<TestInstant>(step: standby, attempts: 3, timeout: .seconds(1))
    var actions: [CommandExchange.Action] = [exchange.written(now: .zero)]
    actions.append(exchange.timedOut(heard: false, now: .seconds(1)))
    actions.append(exchange.written(now: .seconds(1)))
    actions.append(exchange.timedOut(heard: false, now: .seconds(2)))
    actions.append(exchange.written(now: .seconds(2)))
    actions.append(exchange.timedOut(heard: false, now: .seconds(3)))
    #expect(
      actions == [
        .wait(until: .seconds(1)), .write(standby.bytes), .wait(until: .seconds(2)),
        .write(standby.bytes), .wait(until: .seconds(3)),
        .finished(.unanswered(written: 3, quiet: false)),
      ])
    #expect(CommandOutcome.unanswered(written: 3, quiet: false).succeeded == false)
  }
}
