import Chipsets
import Foundation
import NMEA
import Replay
import SerialGPS
import Simulator
import Testing

/// The gated receiver on the two families added as a driver file and a registry line each,
/// against their simulator models, through the real controller on a virtual clock: wake,
/// stream, sleep, wake again, and a sleep the receiver does not confirm.
@Suite struct FamilyGatingTests {
  func bench(
    _ profile: ReceiverProfile, figures: ReceiverFigures, responses: ResponseMode = .normal,
    initialPowerState: SimulatedPowerState = .running, wakeLine: Bool = false,
    aiding: Bool = false
  ) throws -> (ManualClock, ReplayConnector, GPSReceiver, ModelWakeLine?) {
    let clock = ManualClock()
    let physics = PhysicsConfiguration(figures: figures, initialKnowledge: .ephemeris(age: .zero))
    let replay = ReplayConnector(
      recording: try loadFixture("midnight-rollover"),
      configuration: .init(
        profile: profile, loops: true, initialPowerState: initialPowerState,
        wakeDelay: .milliseconds(100), responses: responses, physics: physics),
      clock: clock)
    var options = receiverOptions(linger: .seconds(5), chipset: .family(profile.family))
    options.awakeMarkers = nil
    // The plain wake-up steps, byte for byte (a first start of unknown backup is aided: the
    // Airoha's $PAIR590 is then answered like any command, as the backup test's first wake shows).
    options.aiding = aiding
    let line = wakeLine ? ModelWakeLine(replay) : nil
    options.wakePin = line
    let receiver = GPSReceiver(connector: replay, options: options, clock: clock)
    return (clock, replay, receiver, line)
  }

  static func address(_ command: ReceiverCommand) -> String? {
    if case .nmeaOther(let address, _) = command { return address }
    return nil
  }

  /// Subscribes until `fixes` fixes came, then leaves and lets the linger and the power-off
  /// run until `asleep` holds.
  func subscribeAndLeave(
    _ clock: ManualClock, _ replay: ReplayConnector, _ receiver: GPSReceiver, fixes: Int,
    until asleep: () -> Bool
  ) async -> Bool {
    let log = EventLog(receiver.subscribe())
    let fixed = await advance(clock, upTo: .seconds(120), reading: replay) {
      log.fixes.count >= fixes
    }
    log.stop()
    let slept = await advance(clock, upTo: .seconds(60), reading: replay, until: asleep)
    return fixed && slept
  }

  // MARK: Airoha

  @Test("Airoha: wake with $PAIR002 and the selection, GNSS off at the end, woken again")
  func airohaWakeStreamSleepWakeAgain() async throws {
    let (clock, replay, receiver, _) = try bench(.airoha, figures: .airohaLC76G)
    let set = AirohaCommandSet()
    let on = set.powerOnSteps.map(\.bytes)
    let off = set.powerOffSteps.map(\.bytes)
    #expect(
      await subscribeAndLeave(clock, replay, receiver, fixes: 3) {
        // The chip stops at $PAIR003; the power-off is over (and counted) once the port closed.
        replay.powerState == .gnssStopped && receiver.statistics.powerOffs == 1
      })
    #expect(replay.received.map(\.bytes) == on + off)
    #expect(replay.received.allSatisfy { $0.outcome == .acknowledged })
    #expect(receiver.statistics.powerOffs == 1)
    // A while with the GNSS off, then again: $PAIR002 brings it back, for a hot start.
    #expect(await advance(clock, upTo: .seconds(30), reading: replay) { false } == false)
    #expect(
      await subscribeAndLeave(clock, replay, receiver, fixes: 2) {
        replay.received.count == 2 * (on.count + off.count) && replay.powerState == .gnssStopped
      })
    #expect(replay.received.map(\.bytes) == on + off + on + off)
    #expect(receiver.statistics.commandsFailed == 0)
    #expect(replay.starts.allSatisfy { $0.kind == .hot }, "\(replay.starts)")
    let energy = try #require(replay.energy)
    #expect(energy.time(in: .gnssStopped) > .seconds(5), "\(energy)")
    #expect(await shutDown(receiver, advancing: clock, reading: replay))
  }

  @Test("Airoha, 10-minute request with the wake line: $PAIR650 backup, woken by the line")
  func airohaBackupWithTheLine() async throws {
    let (clock, replay, receiver, line) = try bench(
      .airoha, figures: .airohaLC76G, wakeLine: true, aiding: true)
    let log = EventLog(try receiver.subscribe(LocationRequest(interval: .seconds(600))))
    defer { log.stop() }
    #expect(
      await advance(clock, by: .milliseconds(500), upTo: .seconds(1400), reading: replay) {
        log.updates.count >= 3
      })
    let addresses = replay.receivedCommands.compactMap(Self.address)
    #expect(addresses.filter { $0 == "PAIR650" }.count >= 2, "\(addresses)")
    // The first start, its backup unknown, was told the time, which the chip answered.
    #expect(addresses.prefix(2) == ["PAIR002", "PAIR590"], "\(addresses)")
    #expect(replay.received.filter { $0.outcome == .rejected }.isEmpty)
    #expect(!addresses.contains("PAIR003"), "\(addresses)")
    let energy = try #require(replay.energy)
    #expect(energy.time(in: .backup) > .seconds(900), "\(energy)")
    // Released before each backup, driven at each wake.
    let levels = try #require(line).driven
    #expect(levels.filter { !$0 }.count >= 2 && levels.filter { $0 }.count >= 3, "\(levels)")
    #expect(replay.starts.allSatisfy { $0.kind == .hot }, "\(replay.starts)")
    #expect(receiver.statistics.sleepsNotEntered == 0)
    #expect(await shutDown(receiver, advancing: clock, reading: replay))
    // The shutdown's sleep is of unknown length: GNSS off, which $PAIR002 ends.
    #expect(Self.address(try #require(replay.receivedCommands.last)) == "PAIR003")
  }

  @Test("Airoha: a $PAIR650 nobody answers is not a sleep: counted, GNSS off instead")
  func airohaUnconfirmedBackup() async throws {
    let (clock, replay, receiver, line) = try bench(
      .airoha, figures: .airohaLC76G, responses: .ignoringBackupRequest, wakeLine: true)
    let log = EventLog(try receiver.subscribe(LocationRequest(interval: .seconds(600))))
    defer { log.stop() }
    #expect(
      await advance(clock, by: .milliseconds(500), upTo: .seconds(800), reading: replay) {
        log.updates.count >= 2
      })
    let addresses = replay.receivedCommands.compactMap(Self.address)
    let first = try #require(addresses.firstIndex(of: "PAIR650"), "\(addresses)")
    // Unanswered, written again while the receiver is heard (how many times depends on
    // whether an epoch came within each wait), at most as often as the options allow, then
    // GNSS off, which is answered.
    let attempts = receiverOptions().commandAttempts
    let backups = addresses[first...].prefix { $0 == "PAIR650" }.count
    #expect((1...attempts).contains(backups), "\(addresses)")
    #expect(addresses.dropFirst(first + backups).first == "PAIR003", "\(addresses)")
    let energy = try #require(replay.energy)
    #expect(energy.time(in: .backup) == .zero, "\(energy)")
    #expect(energy.time(in: .gnssStopped) > .seconds(500), "\(energy)")
    #expect(receiver.statistics.sleepsNotEntered >= 1)
    // The line went high again after the backup was not entered.
    let levels = try #require(line).driven
    let low = try #require(levels.firstIndex(of: false), "\(levels)")
    #expect(levels[(low + 1)...].first == true, "\(levels)")
    #expect(await shutDown(receiver, advancing: clock, reading: replay))
    #expect(replay.powerState == .gnssStopped)
  }

  // MARK: CASIC

  @Test("CASIC without a wake line: $PCAS03 at each wake, the port closed while it runs")
  func casicWithoutALine() async throws {
    let (clock, replay, receiver, _) = try bench(.casic, figures: .casicL76K)
    let on = CASICCommandSet().powerOnSteps.map(\.bytes)
    #expect(
      await subscribeAndLeave(clock, replay, receiver, fixes: 3) {
        receiver.statistics.powerOffs == 1
      })
    #expect(replay.received.map(\.bytes) == on)
    #expect(replay.received.allSatisfy { $0.outcome == .carriedOut })
    // Nothing puts an L76K to sleep over its UART: it keeps running, and the app is told.
    #expect(replay.powerState == .running)
    #expect(receiver.lastNotice == .keepsRunning(family: .casic, cause: .noWakeLine))
    #expect(
      await subscribeAndLeave(clock, replay, receiver, fixes: 2) {
        receiver.statistics.powerOffs == 2
      })
    #expect(replay.received.map(\.bytes) == on + on)
    #expect(receiver.statistics.commandsFailed == 0)
    let energy = try #require(replay.energy)
    #expect(energy.time(in: .standby) == .zero, "\(energy)")
    #expect(await shutDown(receiver, advancing: clock, reading: replay))
  }

  @Test("CASIC with a wake line on its standby input: standby between uses, woken by the line")
  func casicStandbyByTheLine() async throws {
    let (clock, replay, receiver, line) = try bench(.casic, figures: .casicL76K, wakeLine: true)
    let on = CASICCommandSet().powerOnSteps.map(\.bytes)
    #expect(
      await subscribeAndLeave(clock, replay, receiver, fixes: 3) {
        replay.powerState == .standby && receiver.statistics.powerOffs == 1
      })
    // Nothing written for the standby: the line alone.
    #expect(replay.received.map(\.bytes) == on)
    #expect(try #require(line).driven == [true, false])
    #expect(receiver.statistics.sleepsNotEntered == 0)
    #expect(receiver.lastNotice == nil)
    // A while asleep, then again: the line wakes it, the fix is a hot start's.
    #expect(await advance(clock, upTo: .seconds(30), reading: replay) { false } == false)
    #expect(
      await subscribeAndLeave(clock, replay, receiver, fixes: 2) {
        replay.powerState == .standby && receiver.statistics.powerOffs == 2
      })
    #expect(try #require(line).driven == [true, false, true, false])
    #expect(replay.received.map(\.bytes) == on + on)
    #expect(replay.starts.allSatisfy { $0.kind == .hot }, "\(replay.starts)")
    let energy = try #require(replay.energy)
    #expect(energy.time(in: .standby) > .seconds(30), "\(energy)")
    #expect(await shutDown(receiver, advancing: clock, reading: replay))
    #expect(replay.powerState == .standby)
  }

  @Test("CASIC: a receiver still talking after the line went low is awake, and said so")
  func casicUnconfirmedStandby() async throws {
    // Deaf to the pin (the line not wired to its standby input): it streams on.
    let (clock, replay, receiver, line) = try bench(
      .casic, figures: .casicL76K, responses: .unresponsive, wakeLine: true)
    #expect(
      await subscribeAndLeave(clock, replay, receiver, fixes: 2) {
        receiver.statistics.powerOffs == 1
      })
    #expect(replay.powerState == .running)
    #expect(receiver.statistics.sleepsNotEntered == 1)
    // Nothing else could put it to sleep: told to the app as a standby that failed.
    #expect(receiver.statistics.standbysFailed == 1)
    guard case .standbyFailed(let reason) = receiver.lastNotice else {
      Issue.record("no notice: \(String(describing: receiver.lastNotice))")
      return
    }
    // The advice names the likely cause: the line not wired to the standby input.
    #expect(reason.message.contains("standby input"), "\(reason)")
    // The line was driven high again, so that the receiver is not left half asleep.
    #expect(try #require(line).driven.last == true)
    #expect(await shutDown(receiver, advancing: clock, reading: replay))
  }
}
