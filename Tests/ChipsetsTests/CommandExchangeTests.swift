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

/// Commands made from what the driver knows when each attempt is written: aiding.
@Suite struct TimedCommandExchangeTests {
  static let planned = UTCTimestamp(
    date: UTCDate(year: 2026, month: 12, day: 3),
    time: UTCTime(hour: 23, minute: 59, second: 59, nanoseconds: 500_000_000))
  /// `planned` plus `seconds`.
  static func later(_ seconds: Int64) -> UTCTimestamp {
    UTCTimestamp(
      secondsSinceUnixEpoch: planned.secondsSinceUnixEpoch + seconds, nanoseconds: 500_000_000)
  }

  static let ubloxTime = TimedCommand(family: .ublox, content: .time(accuracy: .seconds(1)))
    .step(at: planned, acknowledged: true)!

  @Test func aRetryCarriesTheTimeItIsWrittenAt() throws {
    let step = Self.ubloxTime
    var exchange = CommandExchange<TestInstant>(step: step, attempts: 3, timeout: .seconds(1))
    #expect(exchange.start(utc: Self.planned) == .write(step.bytes))
    _ = exchange.written(now: .zero)
    // Unanswered for a second: the retry says so, across midnight into 4 December.
    guard
      case .write(let retry) = exchange.timedOut(heard: true, now: .seconds(1), utc: Self.later(1))
    else {
      Issue.record("no retry")
      return
    }
    #expect(retry != step.bytes)
    #expect(retry == Aiding.ubloxTime(Self.later(1), accuracy: .seconds(1)))
    // TIME_UTC's day, hour, minute and second (payload offsets 7…10, after the 6-byte header).
    #expect(Array(retry[13...16]) == [4, 0, 0, 0])
    #expect(Array(step.bytes[13...16]) == [3, 23, 59, 59])
    // A rejected attempt (infoCode 5, not ready) is written again with the time then, too.
    var refusedOnce = CommandExchange<TestInstant>(step: step, attempts: 3, timeout: .seconds(1))
    _ = refusedOnce.written(now: .zero)
    let refused = ReceiverAcknowledgement.mga(
      .mgaIni, messageType: 0x10, accepted: false, infoCode: 5)
    #expect(
      refusedOnce.answered(refused, now: .milliseconds(100), utc: Self.later(2))
        == .write(Aiding.ubloxTime(Self.later(2), accuracy: .seconds(1))))
  }

  @Test func aMediaTekRetryCarriesANewTimeAndPosition() throws {
    let fixTime = Self.planned
    let known = KnownPosition(
      latitude: 47.285219, longitude: 8.565253, heightAboveEllipsoid: 600, altitudeMSL: nil,
      accuracy: 10, time: fixTime)
    let step = try #require(
      TimedCommand(family: .mediatek, content: .position(known)).step(
        at: Self.planned, acknowledged: true))
    #expect(step.acknowledgement == .mtk(command: 741))
    #expect(
      String(decoding: step.bytes, as: UTF8.self)
        == "$PMTK741,47.285219,8.565253,600,2026,12,03,23,59,59*\(checksum("PMTK741,47.285219,8.565253,600,2026,12,03,23,59,59"))\r\n"
    )
    var exchange = CommandExchange<TestInstant>(step: step, attempts: 2, timeout: .seconds(1))
    _ = exchange.written(now: .zero)
    let retry = exchange.timedOut(heard: true, now: .seconds(1), utc: Self.later(1))
    #expect(
      retry
        == .write(
          NMEAChecksum.frame("PMTK741,47.285219,8.565253,600,2026,12,04,00,00,00")))
  }

  @Test func withoutUTCTheStepWritesWhatWasPlanned() {
    let step = Self.ubloxTime
    #expect(step.bytes(at: nil) == step.bytes)
    #expect(step.bytes(at: Self.later(3)) != step.bytes)
    // A fixed command is the same whatever the time.
    #expect(MediaTekCommandSet.standby.bytes(at: Self.later(3)) == MediaTekCommandSet.standby.bytes)
  }

  @Test func mgaAckAnswersTheMGAAttemptOfItsType() {
    let step = Self.ubloxTime
    #expect(step.acknowledgement == .mga(.mgaIni, messageType: 0x10))
    var exchange = CommandExchange<TestInstant>(step: step, attempts: 3, timeout: .seconds(1))
    _ = exchange.written(now: .zero)
    // ACK-ACK is not how MGA messages are answered; a POS_LLH's MGA-ACK is another step's.
    #expect(exchange.answered(.ubx(.mgaIni, accepted: true), now: .milliseconds(10)) == nil)
    let position = ReceiverAcknowledgement.mga(
      .mgaIni, messageType: 0x01, accepted: true, infoCode: 0)
    #expect(exchange.answered(position, now: .milliseconds(20)) == nil)
    let time = ReceiverAcknowledgement.mga(.mgaIni, messageType: 0x10, accepted: true, infoCode: 0)
    #expect(
      exchange.answered(time, now: .milliseconds(30))
        == .finished(.acknowledged(time, attempt: 1, written: 1, late: nil)))
  }

  @Test func aRefusedAidingSaysWhy() {
    let step = Self.ubloxTime
    var exchange = CommandExchange<TestInstant>(
      step: step, attempts: 3, timeout: .seconds(1), retriesRejected: false)
    _ = exchange.written(now: .zero)
    let refused = ReceiverAcknowledgement.mga(
      .mgaIni, messageType: 0x10, accepted: false, infoCode: 2)
    #expect(
      exchange.answered(refused, now: .milliseconds(30))
        == .finished(.rejected(refused, attempt: 1, written: 1)))
    #expect(refused.failureReason?.contains("version is not supported") == true)
  }

  // MARK: Silence (UBX-RXM-PMREQ)

  let backup = UbloxCommandSet().backupRequest

  @Test func aBackupRequestExpectsSilenceAfterItsGrace() {
    #expect(backup.acknowledgement == .silence(graceMilliseconds: 500, quietMilliseconds: 1500))
    var exchange = CommandExchange<TestInstant>(step: backup, attempts: 3, timeout: .seconds(1))
    #expect(exchange.start() == .write(backup.bytes))
    // Not the acknowledgement timeout: the grace, then the quiet window.
    #expect(
      exchange.written(now: .milliseconds(100))
        == .listen(from: .milliseconds(600), until: .milliseconds(2100)))
    // No answer of any kind is the confirmation.
    #expect(exchange.answered(.ubx(.rxmPmreq, accepted: true), now: .milliseconds(200)) == nil)
    #expect(
      exchange.listened(heard: false, now: .milliseconds(2100)) == .finished(.silent(written: 1)))
    #expect(CommandOutcome.silent(written: 1).succeeded)
  }

  @Test func aReceiverHeardInTheWindowIsAskedAgainThenTakenAsAwake() {
    var exchange = CommandExchange<TestInstant>(step: backup, attempts: 2, timeout: .seconds(1))
    _ = exchange.written(now: .zero)
    #expect(exchange.listened(heard: true, now: .seconds(2)) == .write(backup.bytes))
    #expect(
      exchange.written(now: .seconds(2))
        == .listen(from: .milliseconds(2500), until: .seconds(4)))
    #expect(exchange.listened(heard: true, now: .seconds(4)) == .finished(.keptTalking(written: 2)))
    #expect(!CommandOutcome.keptTalking(written: 2).succeeded)
  }

  @Test func silenceAfterARetryConfirmsTheRetry() {
    var exchange = CommandExchange<TestInstant>(step: backup, attempts: 3, timeout: .seconds(1))
    _ = exchange.written(now: .zero)
    _ = exchange.listened(heard: true, now: .seconds(2))
    _ = exchange.written(now: .seconds(2))
    #expect(exchange.listened(heard: false, now: .seconds(4)) == .finished(.silent(written: 2)))
  }

  /// The NMEA checksum, computed here independently of `NMEAChecksum`.
  func checksum(_ body: String) -> String {
    let value = body.utf8.reduce(UInt8(0)) { $0 ^ $1 }
    let digits = String(value, radix: 16, uppercase: true)
    return digits.count < 2 ? "0" + digits : digits
  }
}
