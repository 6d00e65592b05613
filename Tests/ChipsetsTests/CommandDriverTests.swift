import NMEA
import Testing

@testable import Chipsets

/// The one command driver over a scripted port: what it writes, when it waits, and what it
/// does with each answer, on a clock that moves only as the script says.
@Suite struct CommandDriverTests {
  /// A port whose answers are scripted, one per wait, and that logs what the driver does.
  struct ScriptedPort: CommandPort {
    enum Event: Equatable {
      case write([UInt8])
      case wait(until: TestInstant)
      case settle(Duration)
      case startListening
    }

    var now = TestInstant.zero
    /// UTC at `now`: the driver must ask for it at every write.
    var utc: UTCTimestamp? {
      UTCTimestamp(
        secondsSinceUnixEpoch: 1_780_000_000 + Int64(now.sinceStart.components.seconds))
    }
    /// The answers, in order; a wait with none left times out at its deadline.
    var script: [(after: Duration, CommandWait)]
    var abandonAfterWrites: Int? = nil
    var log: [Event] = []
    var writes = 0

    var isAbandoned: Bool { abandonAfterWrites.map { writes >= $0 } ?? false }

    mutating func write(_ bytes: [UInt8], of step: CommandStep) {
      writes += 1
      log.append(.write(bytes))
    }

    mutating func answer(to step: CommandStep, until deadline: TestInstant) -> CommandWait {
      log.append(.wait(until: deadline))
      guard !script.isEmpty else {
        now = deadline
        return .timedOut(heard: true)
      }
      let (after, wait) = script.removeFirst()
      now = now.advanced(by: after)
      return wait
    }

    mutating func settle(for duration: Duration) {
      log.append(.settle(duration))
      now = now.advanced(by: duration)
    }

    mutating func startListening() { log.append(.startListening) }
  }

  let standby = MediaTekCommandSet.standby
  let ack161 = ReceiverAcknowledgement.mtk(command: 161, result: .succeeded)
  let nak161 = ReceiverAcknowledgement.mtk(command: 161, result: .failed)
  let ack314 = ReceiverAcknowledgement.mtk(command: 314, result: .succeeded)

  @Test func aRetryCarriesTheTimeItIsWrittenAt() async throws {
    let time = try #require(
      TimedCommand(family: .mediatek, content: .time(accuracy: .seconds(1))).step(
        at: UTCTimestamp(secondsSinceUnixEpoch: 1_780_000_000), acknowledged: true))
    var port = ScriptedPort(script: [])
    let ack740 = ReceiverAcknowledgement.mtk(command: 740, result: .succeeded)
    // The first attempt goes unanswered (heard: the chip is awake); the second is answered.
    port.script = [(.seconds(1), .timedOut(heard: true)), (.milliseconds(30), .answer(ack740))]
    let driver = CommandDriver(attempts: 3, timeout: .seconds(1))
    let ran = try #require(try await driver.run(time, retry: .always, on: &port))
    // A receiver answers in order: the answer is the first attempt's, late.
    #expect(
      ran.outcome == .acknowledged(ack740, attempt: 1, written: 2, late: .milliseconds(30)))
    let written = port.log.compactMap { event -> String? in
      guard case .write(let bytes) = event else { return nil }
      return String(decoding: bytes, as: UTF8.self)
    }
    #expect(written.count == 2)
    // $PMTK740,YYYY,MM,DD,hh,mm,ss: the retry, a second later, says so.
    let first = try #require(written.first?.split(separator: ",").dropFirst(6).first)
    let second = try #require(written.last?.split(separator: ",").dropFirst(6).first)
    #expect(Int(first.prefix(2)).map { $0 + 1 } == Int(second.prefix(2)), "\(written)")
  }

  @Test func stepsRunInOrderEachWithItsSettleAndAFailureDoesNotStopTheNext() async throws {
    let wake = CommandStep(bytes: [0x0D, 0x0A], summary: "wake", settleMilliseconds: 200)
    var port = ScriptedPort(script: [(.milliseconds(10), .answer(nak161))])
    var ended: [CommandOutcome] = []
    let driver = CommandDriver(attempts: 1, timeout: .seconds(1), retriesRejected: false)
    let finished = try await driver.run([wake, standby, wake], retry: .always, on: &port) {
      ended.append($0.outcome)
    }
    #expect(finished)
    #expect(ended == [.sent, .rejected(nak161, attempt: 1, written: 1), .sent])
    #expect(
      port.log == [
        .write([0x0D, 0x0A]), .settle(.milliseconds(200)),
        .write(standby.bytes), .wait(until: .milliseconds(1200)),
        .write([0x0D, 0x0A]), .settle(.milliseconds(200)),
      ])
  }

  @Test func aStandbyIsNotRetriedIntoAQuietReceiver() async throws {
    var port = ScriptedPort(script: [
      (.seconds(1), .timedOut(heard: false)), (.seconds(1), .timedOut(heard: false)),
    ])
    let driver = CommandDriver(attempts: 3, timeout: .seconds(1))
    let ran = try #require(try await driver.run(standby, retry: .whileReceiverTalks, on: &port))
    #expect(ran.outcome == .unanswered(written: 1, quiet: true))
    #expect(!ran.heard)
    #expect(
      port.log == [.write(standby.bytes), .wait(until: .seconds(1)), .wait(until: .seconds(2))])
  }

  @Test func aBackupIsListenedForAfterItsGraceAndAskedAgainWhileTheReceiverTalks() async throws {
    let backup = UbloxCommandSet().backupRequest
    // Heard in the first window; silent in the second.
    var port = ScriptedPort(script: [
      (.milliseconds(1500), .timedOut(heard: true)), (.milliseconds(1500), .timedOut(heard: false)),
    ])
    let driver = CommandDriver(attempts: 3, timeout: .seconds(1))
    let ran = try #require(try await driver.run(backup, retry: .whileReceiverTalks, on: &port))
    #expect(ran.outcome == .silent(written: 2))
    #expect(!ran.heard)
    #expect(
      port.log == [
        .write(backup.bytes), .settle(.milliseconds(500)), .startListening,
        .wait(until: .seconds(2)),
        .write(backup.bytes), .settle(.milliseconds(500)), .startListening,
        .wait(until: .seconds(4)),
      ])
  }

  @Test func aBackupIgnoredEveryTimeEndsKeptTalking() async throws {
    let backup = UbloxCommandSet(UbloxOptions(generation: .m9AndLater)).backupRequest
    var port = ScriptedPort(script: [])  // every wait: heard, at its deadline
    let driver = CommandDriver(attempts: 3, timeout: .seconds(1))
    let ran = try #require(try await driver.run(backup, retry: .whileReceiverTalks, on: &port))
    #expect(ran.outcome == .keptTalking(written: 3))
    #expect(ran.heard)
    #expect(port.writes == 3)
  }

  @Test func anAbandonedWakeWritesNothingMore() async throws {
    var port = ScriptedPort(script: [(.seconds(1), .timedOut(heard: true))])
    port.abandonAfterWrites = 1
    let driver = CommandDriver(attempts: 3, timeout: .seconds(1))
    let finished = try await driver.run([standby, standby], retry: .always, on: &port)
    #expect(!finished)
    #expect(port.log == [.write(standby.bytes), .wait(until: .seconds(1))])
  }

  @Test func aStrayAnswerKeepsTheDeadline() async throws {
    var port = ScriptedPort(script: [
      (.milliseconds(100), .answer(ack314)), (.milliseconds(100), .answer(ack161)),
    ])
    let driver = CommandDriver(attempts: 3, timeout: .seconds(1))
    let ran = try #require(try await driver.run(standby, retry: .always, on: &port))
    #expect(ran.outcome == .acknowledged(ack161, attempt: 1, written: 1, late: nil))
    #expect(
      port.log == [
        .write(standby.bytes), .wait(until: .seconds(1)), .wait(until: .seconds(1)),
      ])
  }
}
