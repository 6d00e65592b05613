import Chipsets
import Foundation
import NMEA
import Replay
import SerialGPS
import Simulator
import Testing

/// The simulator's FORCE_ON as the declared wake line (docs/simulator.md, "Pins").
final class ModelWakeLine: WakeLine, @unchecked Sendable {  // `levels` under `lock`
  let replay: ReplayConnector
  /// Releasing (driving low) fails: the line cannot let the chip into backup.
  let failsLow: Bool
  private let lock = NSLock()
  private var levels: [Bool] = []

  init(_ replay: ReplayConnector, failsLow: Bool = false) {
    self.replay = replay
    self.failsLow = failsLow
  }

  var driven: [Bool] { lock.withLock { levels } }

  func drive(high: Bool) throws {
    lock.withLock { levels.append(high) }
    if failsLow && !high { throw WakeLineError(line: "test", reason: "broken on purpose") }
    replay.drivePin(.forceOn, high: high)
  }

  var description: String { "the model's FORCE_ON" }
}

/// The sleep chosen from the expected one, through the real gated receiver, on the simulated
/// MediaTek and a virtual clock: a 10-minute request sleeps in backup only with a declared
/// wake line, and is woken from it by the line.
@Suite struct SleepDepthThroughTheDriverTests {
  func bench(wakeLine: ((ReplayConnector) -> ModelWakeLine)?) throws
    -> (ManualClock, ReplayConnector, GPSReceiver, ModelWakeLine?)
  {
    let clock = ManualClock()
    let physics = PhysicsConfiguration(
      figures: .mediatekMT3339, initialKnowledge: .ephemeris(age: .zero))
    let replay = ReplayConnector(
      recording: try loadFixture("mtk-cold-start"),
      configuration: .init(
        profile: .mediatek, loops: true, initialPowerState: .standby,
        wakeDelay: .milliseconds(100), physics: physics),
      clock: clock)
    var options = receiverOptions(linger: .seconds(5), chipset: .family(.mediatek))
    options.awakeMarkers = nil
    let line = wakeLine?(replay)
    options.wakePin = line
    let receiver = GPSReceiver(connector: replay, options: options, clock: clock)
    return (clock, replay, receiver, line)
  }

  static func isBackup(_ command: ReceiverCommand?) -> Bool {
    if case .mtkOther(225, let fields) = command { return fields == ["4"] }
    return false
  }

  static func isStandby(_ command: ReceiverCommand?) -> Bool {
    if case .mtkStandby = command { return true }
    return false
  }

  @Test("10-minute request with FORCE_ON declared: backup between the fixes, woken by the pin")
  func backupWithThePin() async throws {
    let (clock, replay, receiver, line) = try bench { ModelWakeLine($0) }
    let log = EventLog(try receiver.subscribe(LocationRequest(interval: .seconds(600))))
    defer { log.stop() }
    #expect(
      await advance(clock, by: .milliseconds(500), upTo: .seconds(1400), reading: replay) {
        log.updates.count >= 3
      })
    let commands = replay.receivedCommands
    #expect(commands.contains { Self.isBackup($0) }, "\(commands)")
    #expect(!commands.contains { Self.isStandby($0) }, "\(commands)")
    let energy = try #require(replay.energy)
    #expect(energy.time(in: .backup) > .seconds(900), "\(energy)")
    #expect(energy.time(in: .standby) < .seconds(5), "\(energy)")
    // Released before each backup, driven at each wake.
    let levels = try #require(line).driven
    #expect(levels.filter { !$0 }.count >= 2 && levels.filter { $0 }.count >= 3, "\(levels)")
    #expect(replay.starts.allSatisfy { $0.kind == .hot }, "\(replay.starts)")
    #expect(await shutDown(receiver, advancing: clock, reading: replay))
    // The shutdown's sleep is of unknown length: standby, which any byte ends.
    #expect(Self.isStandby(replay.receivedCommands.last), "\(replay.receivedCommands.suffix(3))")
  }

  @Test("the same request without a declared pin: standby, never backup")
  func standbyWithoutThePin() async throws {
    let (clock, replay, receiver, _) = try bench(wakeLine: nil)
    let log = EventLog(try receiver.subscribe(LocationRequest(interval: .seconds(600))))
    defer { log.stop() }
    #expect(
      await advance(clock, by: .milliseconds(500), upTo: .seconds(800), reading: replay) {
        log.updates.count >= 2
      })
    let commands = replay.receivedCommands
    #expect(!commands.contains { Self.isBackup($0) }, "\(commands)")
    #expect(commands.contains { Self.isStandby($0) })
    let energy = try #require(replay.energy)
    #expect(energy.time(in: .backup) == .zero)
    #expect(await shutDown(receiver, advancing: clock, reading: replay))
  }

  @Test("a line that cannot be released: not backup, the standby instead")
  func failingLineFallsBackToStandby() async throws {
    let (clock, replay, receiver, _) = try bench { ModelWakeLine($0, failsLow: true) }
    let log = EventLog(try receiver.subscribe(LocationRequest(interval: .seconds(600))))
    defer { log.stop() }
    #expect(
      await advance(clock, by: .milliseconds(500), upTo: .seconds(800), reading: replay) {
        log.updates.count >= 2
      })
    #expect(!replay.receivedCommands.contains { Self.isBackup($0) })
    #expect(replay.receivedCommands.contains { Self.isStandby($0) })
    #expect(await shutDown(receiver, advancing: clock, reading: replay))
  }
}

/// A u-blox backup counts only when the receiver falls silent after `UBX-RXM-PMREQ`, through
/// the real gated receiver on the simulated M8 on a UART and a virtual clock: one that ignores
/// the request (as over USB) is taken as awake and gets the GNSS stop.
@Suite struct UbloxBackupConfirmationTests {
  func bench(responses: ResponseMode) throws -> (ManualClock, ReplayConnector, GPSReceiver) {
    let clock = ManualClock()
    let physics = PhysicsConfiguration(
      figures: .ubloxM8, initialKnowledge: .ephemeris(age: .zero))
    let replay = ReplayConnector(
      recording: try loadFixture("ublox-m8-drive"),
      configuration: .init(
        profile: .ublox(.m8), loops: true, initialPowerState: .backup,
        wakeDelay: .milliseconds(100), responses: responses, physics: physics),
      clock: clock)
    var options = receiverOptions(
      linger: .seconds(5), chipset: .custom(UbloxCommandSet(UbloxOptions(port: .uart1))))
    options.awakeMarkers = nil
    return (clock, replay, GPSReceiver(connector: replay, options: options, clock: clock))
  }

  static func isBackupRequest(_ command: ReceiverCommand?) -> Bool {
    if case .ubxPowerRequest(_, let flags, _) = command { return flags & 0x02 != 0 }
    return false
  }

  static func isGNSSStop(_ command: ReceiverCommand?) -> Bool {
    if case .ubxReset(_, 0x08) = command { return true }
    return false
  }

  /// Subscribes for a fix every 10 minutes and advances until `fixes` have come; the
  /// subscription's log is the caller's to stop.
  func everyTenMinutes(_ responses: ResponseMode, fixes: Int, upTo limit: Duration) async throws
    -> (ManualClock, ReplayConnector, GPSReceiver, EventLog)
  {
    let (clock, replay, receiver) = try bench(responses: responses)
    let log = EventLog(try receiver.subscribe(LocationRequest(interval: .seconds(600))))
    #expect(
      await advance(clock, by: .milliseconds(500), upTo: limit, reading: replay) {
        log.updates.count >= fixes
      })
    return (clock, replay, receiver, log)
  }

  @Test("a receiver that falls silent after PMREQ is in backup: no GNSS stop")
  func honouredBackupIsKept() async throws {
    let (clock, replay, receiver, log) = try await everyTenMinutes(
      .normal, fixes: 3, upTo: .seconds(1400))
    defer { log.stop() }
    let commands = replay.receivedCommands
    // One request per sleep (silence confirmed at the first attempt): never two in a row.
    #expect(commands.filter { Self.isBackupRequest($0) }.count >= 2, "\(commands)")
    #expect(
      !zip(commands, commands.dropFirst()).contains {
        Self.isBackupRequest($0) && Self.isBackupRequest($1)
      }, "\(commands)")
    #expect(!commands.contains { Self.isGNSSStop($0) }, "\(commands)")
    let energy = try #require(replay.energy)
    #expect(energy.time(in: .backup) > .seconds(1000), "\(energy)")
    #expect(energy.time(in: .gnssStopped) == .zero, "\(energy)")
    #expect(receiver.statistics.sleepsNotEntered == 0)
    #expect(receiver.statistics.standbysFailed == 0)
    #expect(receiver.lastNotice == nil)
    #expect(receiver.statistics.commandsFailed == 0)
    #expect(await shutDown(receiver, advancing: clock, reading: replay))
    #expect(replay.powerState == .backup)
  }

  @Test("a receiver that keeps talking after PMREQ is awake: asked three times, then GNSS stop")
  func ignoredBackupFallsBackToGNSSStop() async throws {
    let (clock, replay, receiver, log) = try await everyTenMinutes(
      .ignoringBackupRequest, fixes: 2, upTo: .seconds(800))
    defer { log.stop() }
    let commands = replay.receivedCommands
    let first = try #require(commands.firstIndex { Self.isBackupRequest($0) }, "\(commands)")
    // Three attempts, each heard in its window, then the quick-wake standby.
    #expect(
      commands[first...].prefix(4).map { Self.isBackupRequest($0) }
        == [true, true, true, false], "\(commands)")
    #expect(Self.isGNSSStop(commands[first...].dropFirst(3).first ?? nil), "\(commands)")
    let energy = try #require(replay.energy)
    #expect(energy.time(in: .backup) == .zero, "\(energy)")
    #expect(energy.time(in: .gnssStopped) > .seconds(500), "\(energy)")
    // Each sleep not entered is counted, and reported as a failed command (its wording:
    // SilenceConfirmationTests).
    let statistics = receiver.statistics
    #expect(statistics.sleepsNotEntered >= 1)
    #expect(statistics.commandsFailed == statistics.sleepsNotEntered, "\(statistics)")
    // Nothing confirms the GNSS stop that followed: each is told to the app with nobody
    // subscribed, as a standby that may have failed.
    #expect(statistics.standbysFailed == statistics.sleepsNotEntered, "\(statistics)")
    guard case .standbyFailed(let reason) = receiver.lastNotice else {
      Issue.record("no notice: \(String(describing: receiver.lastNotice))")
      return
    }
    #expect(reason.kind == .rejected, "\(reason)")
    // The next wake is a wake all the same (the burst, then the selection): the fix came.
    #expect(replay.starts.allSatisfy { $0.kind == .hot }, "\(replay.starts)")
    #expect(await shutDown(receiver, advancing: clock, reading: replay))
    #expect(replay.powerState == .gnssStopped)
  }
}
