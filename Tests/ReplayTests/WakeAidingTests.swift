import Chipsets
import Foundation
import NMEA
import POSIX
import Replay
import SerialGPS
import Simulator
import Testing

/// Aiding at a wake through the gated receiver (``GPSReceiver``, its controller and command
/// runner) on the simulated u-blox M9: the time from the injected wall clock and the last
/// position reach the chip before its acquisition, on the wakes that need them only.
@Suite struct WakeAidingTests {
  /// The wall clock the receiver is given: UTC `origin` at the manual clock's origin, moving
  /// with it, as the simulator's UTC does.
  struct FollowingWallClock: WallClock {
    let clock: ManualClock
    let origin: Duration
    func now() -> Duration { origin + clock.now.sinceOrigin }
  }

  /// 2026-12-04 06:00:00 UTC.
  static let origin = Duration.seconds(1_796_364_000)

  /// A simulated M9 on USB, its GNSS stopped (as the driver leaves a u-blox on USB), and a
  /// receiver over it that commands it as an M9 (or, with `chipset`, as told), with a linger of
  /// zero and the wall clock following the simulator's UTC.
  static func bench(
    backupPower: Bool, knowledge: PhysicsConfiguration.InitialKnowledge,
    chipset: ChipsetChoice? = nil, initialPowerState: SimulatedPowerState = .gnssStopped,
    announcesChipset: Bool = true, memory: PositionMemory? = nil,
    figures: ReceiverFigures = .ubloxM9,
    notices: (@Sendable (String, ReceiverNotice) -> Void)? = nil
  ) throws -> (ManualClock, ReplayConnector, GPSReceiver) {
    let clock = ManualClock()
    let physics = PhysicsConfiguration(
      figures: figures, backupPower: backupPower, initialKnowledge: knowledge,
      utcAtStart: UTCTimestamp(secondsSinceUnixEpoch: origin.components.seconds))
    let replay = ReplayConnector(
      recording: try loadFixture("ublox-m8-drive"),
      configuration: .init(
        profile: .ublox(.m9), loops: true, initialPowerState: initialPowerState,
        wakeDelay: .milliseconds(100), announcesChipset: announcesChipset,
        deviceName: "/dev/ttyACM-aiding", physics: physics),
      clock: clock)
    var options = receiverOptions(
      linger: .zero,
      chipset: chipset
        ?? .custom(UbloxCommandSet(UbloxOptions(generation: .m9AndLater, port: .usb))))
    options.awakeMarkers = nil
    options.positionMemory = memory
    options.notices = notices
    options.wallClock = FollowingWallClock(clock: clock, origin: origin)
    return (clock, replay, GPSReceiver(connector: replay, options: options, clock: clock))
  }

  /// Subscribes, advances until a fix with a position arrives, and unsubscribes; true once
  /// the receiver is back in `asleep`.
  static func wake(
    _ receiver: GPSReceiver, _ replay: ReplayConnector, _ clock: ManualClock,
    asleep: SimulatedPowerState? = .gnssStopped
  ) async -> Bool {
    let log = EventLog(receiver.subscribe())
    let fixed = await advance(clock, by: .milliseconds(200), upTo: .seconds(60), reading: replay) {
      log.updates.contains { $0.fix.position != nil }
    }
    log.stop()
    guard fixed else { return false }
    guard let asleep else { return true }
    return await advance(clock, by: .milliseconds(100), upTo: .seconds(5), reading: replay) {
      replay.powerState == asleep
    }
  }

  /// The wall clock's UTC at the simulator's `at`.
  static func wallUTC(at moment: Duration) -> Double {
    Double((origin + moment).components.seconds)
      + Double((origin + moment).components.attoseconds) / 1e18
  }

  @Test("a receiver that lost its backup is told the time and its last fix before it acquires")
  func lostBackupIsAided() async throws {
    let (clock, replay, receiver) = try Self.bench(backupPower: false, knowledge: .nothing)
    // First start: nothing known of the backup, so the time goes (no position yet).
    #expect(await Self.wake(receiver, replay, clock))
    let first = replay.aidingReceived
    #expect(first.count == 1, "\(first)")
    // Its start was cold (24 s), so the backup is taken as lost for the next wake.
    #expect(replay.starts.first?.kind == .cold)
    let last = try #require(receiver.latestFix?.fix.position)
    clock.advance(by: .seconds(60))
    #expect(await Self.wake(receiver, replay, clock))
    let aiding = Array(replay.aidingReceived.dropFirst(first.count))
    #expect(aiding.count == 2, "\(aiding)")
    #expect(aiding.allSatisfy { $0.usable && $0.phase == .beforeAcquisition }, "\(aiding)")
    guard case .time(let given, _) = aiding.first?.content else {
      Issue.record("time first: \(aiding)")
      return
    }
    let wall = Self.wallUTC(at: try #require(aiding.first).at)
    #expect(abs(given.unixTime - wall) < 1, "told \(given), the wall clock said \(wall)")
    guard case .position(let latitude, let longitude, _, let accuracy) = aiding.last?.content
    else {
      Issue.record("then the position: \(aiding)")
      return
    }
    #expect(abs(latitude - last.latitude.decimalDegrees) < 1e-6)
    #expect(abs(longitude - last.longitude.decimalDegrees) < 1e-6)
    // Widened by its age (a minute and a little at 50 m/s).
    #expect((accuracy ?? 0) > 3000, "\(String(describing: accuracy))")
    #expect(receiver.statistics.aidedWakes == 2)
    #expect(receiver.statistics.commandsFailed == 0)
    #expect(await shutDown(receiver, advancing: clock, reading: replay))
  }

  @Test("a hot start (backup kept, a short sleep) is not aided; the first start is")
  func hotStartIsNotAided() async throws {
    let (clock, replay, receiver) = try Self.bench(
      backupPower: true, knowledge: .ephemeris(age: .zero))
    #expect(await Self.wake(receiver, replay, clock))
    let first = replay.aidingReceived.count
    // Nothing known of the backup at the first start: aided.
    #expect(first == 1)
    #expect(replay.starts.first?.kind == .hot)
    clock.advance(by: .seconds(60))
    #expect(await Self.wake(receiver, replay, clock))
    #expect(replay.aidingReceived.count == first, "\(replay.aidingReceived)")
    #expect(replay.starts.count == 2 && replay.starts.last?.kind == .hot)
    #expect(receiver.statistics.aidedWakes == 1)
    #expect(await shutDown(receiver, advancing: clock, reading: replay))
  }

  @Test("a warm start that told the time at once kept its backup: the next wake is not aided")
  func timeBeforeTheFixShowsTheBackupKept() async throws {
    // A receiver whose ephemeris goes stale after 2 minutes (the test's figure, not a data
    // sheet's): a wake 5 minutes later is a warm start, slow to its fix, with its clock
    // running, so its first epochs carry the time.
    var figures = ReceiverFigures.ubloxM9
    figures.ephemerisValidity = .seconds(120)
    let (clock, replay, receiver) = try Self.bench(
      backupPower: true, knowledge: .ephemeris(age: .zero), figures: figures)
    #expect(await Self.wake(receiver, replay, clock))
    #expect(replay.aidingReceived.count == 1)  // the first start
    clock.advance(by: .seconds(300))
    #expect(await Self.wake(receiver, replay, clock))
    #expect(replay.starts.count == 2 && replay.starts.last?.kind == .warm, "\(replay.starts)")
    let warm = try #require(replay.starts.last?.timeToFirstFix)
    // Slower than a hot start (10 s): by its first fix alone it would be judged lost.
    #expect(warm > .seconds(10), "\(replay.starts)")
    clock.advance(by: .seconds(60))
    #expect(await Self.wake(receiver, replay, clock))
    // Judged by its time, not by its slow fix: kept, so the third wake is not aided.
    #expect(replay.aidingReceived.count == 1, "\(replay.aidingReceived)")
    #expect(receiver.statistics.aidedWakes == 1)
    #expect(await shutDown(receiver, advancing: clock, reading: replay))
  }

  @Test(
    "aiding only to a receiver whose family is known: named by its USB IDs, or never",
    arguments: [true, false])
  func unknownFamilyIsNotAided(namedByUSB: Bool) async throws {
    let (clock, replay, receiver) = try Self.bench(
      backupPower: false, knowledge: .nothing, chipset: .automatic, initialPowerState: .running,
      announcesChipset: namedByUSB)
    #expect(await Self.wake(receiver, replay, clock, asleep: nil))
    #expect(
      await advance(clock, by: .milliseconds(100), upTo: .seconds(5), reading: replay) {
        receiver.statistics.powerOffs == 1
      })
    clock.advance(by: .seconds(60))
    #expect(await Self.wake(receiver, replay, clock, asleep: nil))
    if namedByUSB {
      // A first start of a u-blox: told the time; and again at the second wake, as its first
      // start was cold.
      #expect(receiver.commandFamily == .ublox)
      #expect(receiver.statistics.aidedWakes == 2)
      #expect(replay.aidingReceived.count == 3, "\(replay.aidingReceived)")
    } else {
      // Nothing names it (its NMEA alone does not): no power commands, no aiding, at either
      // wake, although its first start was cold.
      #expect(receiver.commandFamily == .nmea)
      #expect(replay.starts.first?.kind == .cold)
      #expect(replay.aidingReceived.isEmpty, "\(replay.aidingReceived)")
      #expect(receiver.statistics.aidedWakes == 0)
    }
    #expect(await shutDown(receiver, advancing: clock, reading: replay))
  }

  @Test("a second receiver on the same state directory aids with the first one's position")
  func positionKeptAcrossRestarts() async throws {
    let directory = FileManager.default.temporaryDirectory
      .appendingPathComponent("serialgps-aiding-\(UUID().uuidString)").path
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let memory = PositionMemory(directory: directory)
    let position: Position
    do {
      let (clock, replay, receiver) = try Self.bench(
        backupPower: true, knowledge: .ephemeris(age: .zero), memory: memory)
      #expect(await Self.wake(receiver, replay, clock))
      position = try #require(receiver.latestFix?.fix.position)
      #expect(await shutDown(receiver, advancing: clock, reading: replay))
    }
    let files = try FileManager.default.contentsOfDirectory(atPath: directory)
    #expect(files == ["_dev_ttyACM-aiding.position"], "\(files)")
    // A new process: its receiver lost its backup, and nothing of this process saw a fix.
    let (clock, replay, receiver) = try Self.bench(
      backupPower: false, knowledge: .nothing, memory: memory)
    clock.advance(by: .seconds(120))
    let log = EventLog(receiver.subscribe())
    defer { log.stop() }
    #expect(
      await advance(clock, by: .milliseconds(200), upTo: .seconds(10), reading: replay) {
        replay.aidingReceived.count >= 2
      })
    let aiding = replay.aidingReceived
    guard case .position(let latitude, let longitude, _, _) = aiding.last?.content else {
      Issue.record("the kept position: \(aiding)")
      return
    }
    #expect(abs(latitude - position.latitude.decimalDegrees) < 1e-6)
    #expect(abs(longitude - position.longitude.decimalDegrees) < 1e-6)
    #expect(aiding.allSatisfy { $0.phase == .beforeAcquisition })
    #expect(
      await advance(clock, by: .milliseconds(200), upTo: .seconds(60), reading: replay) {
        replay.starts.last?.firstFix != nil
      })
    #expect(replay.starts.last?.kind == .aided)
    #expect(await shutDown(receiver, advancing: clock, reading: replay))
  }

  /// A position file a crash or a hand left absurd: it used to trap in the encoder at the
  /// first wake (and at every restart). Now the wake is aided with the time alone, and the
  /// file is said once, with the reason.
  @Test(
    "an absurd kept position is ignored and said once; the wake goes on",
    arguments: [
      "height nan", "height -inf", "height 1e300", "height 9.3e18", "height 1e17", "accuracy inf",
      "accuracy 1e17",
    ])
  func absurdKeptPositionIsIgnored(figure: String) async throws {
    let directory = FileManager.default.temporaryDirectory
      .appendingPathComponent("serialgps-aiding-\(UUID().uuidString)").path
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let memory = PositionMemory(directory: directory)
    let identity = "/dev/ttyACM-aiding"
    var lines = [
      "serialgps-position 1", "receiver \(identity)",
      "time \(Self.origin.components.seconds - 600).000", "latitude 47.2852167",
      "longitude 8.5652500", "height 594.6", "accuracy 5.0",
    ]
    let key = String(figure.prefix { $0 != " " })
    lines.removeAll { $0.hasPrefix(key + " ") }
    lines.append(figure)
    let text = lines.joined(separator: "\n") + "\n"
    try text.write(toFile: memory.path(for: identity), atomically: true, encoding: .utf8)
    let heard = POSIX.Locked<[ReceiverNotice]>([])
    let (clock, replay, receiver) = try Self.bench(
      backupPower: false, knowledge: .nothing, memory: memory,
      notices: { _, notice in heard.withLock { $0.append(notice) } })
    #expect(await Self.wake(receiver, replay, clock))
    let aiding = replay.aidingReceived
    #expect(aiding.count == 1, "the time alone: \(aiding)")
    guard case .time = aiding.first?.content else {
      Issue.record("the time: \(aiding)")
      return
    }
    let notices = heard.withLock { $0 }
    #expect(notices.count == 1, "\(notices)")
    guard case .keptPositionIgnored(let path, let reason) = notices.first else {
      Issue.record("said: \(notices)")
      return
    }
    #expect(path == memory.path(for: identity))
    #expect(reason.contains("out of range"), "\(reason)")
    #expect(receiver.lastNotice == notices.first)
    #expect(await shutDown(receiver, advancing: clock, reading: replay))
  }

  /// A save that fails (here the position's path is a directory) is said once with the
  /// reason, not at every power-off.
  @Test func aFailedSaveIsSaidOnce() async throws {
    let directory = FileManager.default.temporaryDirectory
      .appendingPathComponent("serialgps-aiding-\(UUID().uuidString)").path
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let memory = PositionMemory(directory: directory)
    let path = memory.path(for: "/dev/ttyACM-aiding")
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
    let heard = POSIX.Locked<[ReceiverNotice]>([])
    let (clock, replay, receiver) = try Self.bench(
      backupPower: true, knowledge: .ephemeris(age: .zero), memory: memory,
      notices: { _, notice in heard.withLock { $0.append(notice) } })
    // Two wakes and sleeps, two fixes to keep, two failed saves.
    #expect(await Self.wake(receiver, replay, clock))
    clock.advance(by: .seconds(30))
    #expect(await Self.wake(receiver, replay, clock))
    let notices = heard.withLock { $0 }
    // The first wake read the path too: a directory is no position, said once as well.
    let saves = notices.filter { if case .positionNotKept = $0 { true } else { false } }
    #expect(saves == [.positionNotKept(path: path, error: .isDirectory)], "\(notices)")
    #expect(notices.count == 2, "\(notices)")
    guard case .keptPositionIgnored(path, _) = notices.first else {
      Issue.record("the read first: \(notices)")
      return
    }
    #expect(await shutDown(receiver, advancing: clock, reading: replay))
  }

  @Test("a refused aiding message is counted and the wake goes on; a refused selection fails")
  func refusedAidingIsInformation() async throws {
    let clock = ManualClock()
    let physics = PhysicsConfiguration(
      figures: .mediatekMT3339, backupPower: true, initialKnowledge: .ephemeris(age: .zero),
      utcAtStart: UTCTimestamp(secondsSinceUnixEpoch: Self.origin.components.seconds))
    // A chip that refuses every command it would acknowledge (`$PMTK001,…,2`), as a MediaTek
    // that already has its time refuses `$PMTK740`; a byte still wakes it.
    let replay = ReplayConnector(
      recording: try loadFixture("mtk-cold-start"),
      configuration: .init(
        profile: .mediatek, loops: true, initialPowerState: .standby,
        wakeDelay: .milliseconds(100), responses: .rejecting, physics: physics),
      clock: clock)
    var options = receiverOptions(linger: .zero, chipset: .family(.mediatek))
    options.awakeMarkers = nil
    options.wallClock = FollowingWallClock(clock: clock, origin: Self.origin)
    let receiver = GPSReceiver(connector: replay, options: options, clock: clock)
    let log = EventLog(receiver.subscribe())
    defer { log.stop() }
    #expect(
      await advance(clock, by: .milliseconds(200), upTo: .seconds(20), reading: replay) {
        log.updates.contains { $0.fix.position != nil }
      })
    // The time was sent (a first start), refused, and only counted.
    #expect(
      replay.receivedCommands.contains {
        if case .mtkOther(740, _) = $0 { true } else { false }
      }, "\(replay.receivedCommands)")
    #expect(receiver.statistics.aidingNotTaken == 1)
    #expect(receiver.statistics.aidedWakes == 1)
    // The refused selection is a failed command, as before; the aiding is not.
    #expect(receiver.statistics.commandsFailed == 1)
    let failures = log.statuses.compactMap { status -> String? in
      if case .commandFailed(let reason) = status { return reason.message }
      return nil
    }
    #expect(failures.count == 1 && failures.allSatisfy { $0.contains("PMTK314") }, "\(failures)")
    #expect(await shutDown(receiver, advancing: clock, reading: replay))
  }
}
