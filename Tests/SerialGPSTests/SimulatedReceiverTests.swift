import Chipsets
import Foundation
import NMEA
import Replay
import SerialPort
import Simulator
import Testing

@testable import SerialGPS

/// The gated receiver against the receiver simulator, through a real pty and `SerialPort`:
/// what the driver writes and when, as the chip on the other side sees it. Real time
/// throughout (the bytes move in real time); every wait is a generous bound, never a
/// measurement.
@Suite(.serialized) struct SimulatedReceiverTests {
  static let fixtures: String = {
    var url = URL(fileURLWithPath: #filePath)
    for _ in 0..<3 { url.deleteLastPathComponent() }
    return url.appendingPathComponent("fixtures").path
  }()

  struct Case: Sendable, CustomTestStringConvertible {
    let fixture: String
    let profile: ReceiverProfile
    let family: ChipsetFamily
    let baud: BaudRate
    /// The state the chipset's power-off steps leave the simulated chip in.
    let offState: SimulatedPowerState
    var testDescription: String { "\(family.cliName) against \(profile)" }
  }

  static let cases = [
    // /tmp/…/gps0 is no ttyACM: a UART, so u-blox uses backup and the 0xFF wake.
    Case(
      fixture: "ublox-m8-drive", profile: .ublox(.m8), family: .ublox, baud: .b115200,
      offState: .backup),
    Case(
      fixture: "mtk-cold-start", profile: .mediatek, family: .mediatek, baud: .b9600,
      offState: .standby),
    Case(
      fixture: "midnight-rollover", profile: .generic, family: .nmea, baud: .b9600,
      offState: .running),
  ]

  func makeSimulator(
    _ fixture: String, profile: ReceiverProfile, responses: ResponseMode = .normal
  ) throws -> ReceiverSimulator {
    try ReceiverSimulator(
      recording: Recording.loadCached(path: Self.fixtures + "/\(fixture).nmea"),
      configuration: .init(
        profile: profile, pace: .recorded(speed: 10), wakeDelay: .milliseconds(10),
        responses: responses))
  }

  func makeReceiver(
    _ simulator: ReceiverSimulator, family: ChipsetFamily, baud: BaudRate,
    acknowledgementTimeout: Duration = .seconds(5)
  ) -> GPSReceiver {
    var options = GPSReceiver.Options()
    options.linger = .zero
    options.chipset = .family(family)
    options.acknowledgementTimeout = acknowledgementTimeout
    options.commandAttempts = 3
    // The plain wake-up steps, byte for byte: aiding at a wake is WakeAidingTests'.
    options.aiding = false
    options.reconnectDelay = .milliseconds(100)
    options.maximumReconnectDelay = .milliseconds(400)
    return GPSReceiver(
      connector: SerialConnector(path: simulator.devicePath, baud: .fixed(baud)),
      options: options)
  }

  /// Whether the driver has let go of the device: the simulator's tty opens exclusively
  /// again (an open port holds TIOCEXCL, which `SerialPort.open` refuses even as root).
  func deviceIsFree(_ simulator: ReceiverSimulator) -> Bool {
    guard let port = try? SerialPort.open(path: simulator.devicePath, baudRate: .b9600) else {
      return false
    }
    port.close()
    return true
  }

  /// Nothing is written before the first subscriber; the chipset's power-on steps go out,
  /// byte for byte, when it arrives; its power-off steps when the last one leaves (linger
  /// zero), and nothing after. A second subscriber wakes the receiver again.
  @Test(arguments: cases)
  func commandSequenceFollowsTheSubscribers(_ c: Case) async throws {
    let simulator = try makeSimulator(c.fixture, profile: c.profile)
    defer { simulator.stop() }
    let receiver = makeReceiver(simulator, family: c.family, baud: c.baud)
    let set = c.family.commandSet(interface: .uart)

    try await Task.sleep(for: .milliseconds(500))
    #expect(simulator.received.isEmpty)
    #expect(receiver.statistics.powerOns == 0)

    let log = EventLog(receiver.subscribe())
    #expect(await eventually(timeout: .seconds(20)) { log.fixes.count >= 3 })
    let on = set.powerOnSteps.map(\.bytes)
    #expect(await simulator.waitUntil { $0.received.count >= on.count })
    #expect(simulator.received.map(\.bytes) == on)
    #expect(!log.statuses.contains { if case .commandFailed = $0 { true } else { false } })

    log.stop()
    let off = set.powerOffSteps.map(\.bytes)
    #expect(await eventually(timeout: .seconds(20)) { receiver.statistics.powerOffs == 1 })
    #expect(await simulator.waitUntil { $0.received.count >= on.count + off.count })
    #expect(simulator.received.map(\.bytes) == on + off)
    #expect(simulator.powerState == c.offState)
    #expect(await eventually { deviceIsFree(simulator) })
    try await Task.sleep(for: .milliseconds(500))
    #expect(simulator.received.count == on.count + off.count)  // nothing while nobody listens

    // Again: the chip is woken from where the power-off left it.
    let again = EventLog(receiver.subscribe())
    #expect(await eventually(timeout: .seconds(20)) { again.fixes.contains { !$0.isReplay } })
    #expect(simulator.powerState == .running)
    #expect(await simulator.waitUntil { $0.received.count >= 2 * on.count + off.count })
    // A retry here means an acknowledgement was lost; the driver's framer counts say whether
    // NMEAFramer dropped it (docs/simulator.md, "Found while building it").
    #expect(
      simulator.received.map(\.bytes) == on + off + on,
      "the driver's framer: \(receiver.statistics.decoder.framer)")
    #expect(receiver.statistics.commandsFailed == 0)
    again.stop()
    await receiver.shutdown()
    #expect(await simulator.waitUntil { $0.received.count >= 2 * (on.count + off.count) })
    #expect(simulator.received.map(\.bytes) == on + off + on + off)
    #expect(deviceIsFree(simulator))
  }

  /// Unplugged while streaming: subscribers hear of it, the driver retries, and when the
  /// receiver is back under the same path it is powered on again and fixes resume.
  @Test func unplugAndReturnDuringStreaming() async throws {
    let simulator = try makeSimulator("mtk-cold-start", profile: .mediatek)
    defer { simulator.stop() }
    let receiver = makeReceiver(simulator, family: .mediatek, baud: .b9600)
    let log = EventLog(receiver.subscribe())
    #expect(await eventually(timeout: .seconds(20)) { log.fixes.count >= 2 })
    // Unplugged once powered on: the selection has been acknowledged.
    #expect(await simulator.waitUntil { $0.counters.acknowledgements == 1 })

    simulator.hangUp()
    #expect(
      await eventually(timeout: .seconds(20)) {
        log.statuses.contains { if case .disconnected = $0 { true } else { false } }
      })
    try await Task.sleep(for: .milliseconds(600))  // a few failed reopens while unplugged
    #expect(!log.statuses.contains(.reconnected))
    let fixesBefore = log.fixes.count
    try simulator.replug()
    #expect(await eventually(timeout: .seconds(20)) { log.statuses.contains(.reconnected) })
    #expect(await eventually(timeout: .seconds(20)) { log.fixes.count >= fixesBefore + 2 })
    // Powered on again after the return (the stream may come before the selection: the chip
    // runs as soon as it is plugged in).
    #expect(
      await simulator.waitUntil {
        $0.receivedCommands.filter { if case .mtkSetNMEAOutput = $0 { true } else { false } }
          .count == 2
      })
    #expect(receiver.statistics.connectionsLost == 1)
    log.stop()
    await receiver.shutdown()
    #expect(await simulator.waitForPowerState(.standby))
  }

  /// A receiver that never answers: each acknowledged command is tried a bounded number of
  /// times, subscribers hear that it failed, fixes still arrive, and the last subscription
  /// still ends with the port closed.
  @Test func aReceiverThatNeverAnswers() async throws {
    let simulator = try makeSimulator(
      "mtk-cold-start", profile: .mediatek, responses: .unresponsive)
    defer { simulator.stop() }
    let receiver = makeReceiver(
      simulator, family: .mediatek, baud: .b9600, acknowledgementTimeout: .milliseconds(300))
    let log = EventLog(receiver.subscribe())
    #expect(
      await eventually(timeout: .seconds(20)) {
        log.statuses.contains { if case .commandFailed = $0 { true } else { false } }
      })
    let reason = log.statuses.compactMap {
      if case .commandFailed(let reason) = $0 { reason } else { nil }
    }.first
    // It kept streaming and ignored every attempt: the chipset is named as the likely cause.
    #expect(reason?.kind == .wrongChipset, "\(reason?.message ?? "none")")
    #expect(reason?.message.contains("$PMTK314") == true)
    #expect(reason?.message.contains("no acknowledgement") == true)
    #expect(reason?.message.contains("3 attempts") == true)
    #expect(reason?.message.contains("not a MediaTek/Quectel receiver") == true)
    // An app developer reads the option to set, a person at a terminal serialgps's.
    #expect(reason?.message.contains("chipset: .family(…)") == true)
    #expect(reason?.message.contains("--chipset") == false)
    #expect(
      reason?.message(in: .commandLine).contains("--chipset ublox|mtk|sirf|casic|airoha|nmea")
        == true)
    #expect(reason?.message(in: .commandLine).contains("chipset: .") == false)
    #expect(await eventually(timeout: .seconds(20)) { log.fixes.count >= 2 })

    log.stop()
    #expect(await eventually(timeout: .seconds(20)) { receiver.statistics.powerOffs == 1 })
    #expect(await eventually { deviceIsFree(simulator) })
    let commands = simulator.receivedCommands
    #expect(commands.filter { if case .mtkSetNMEAOutput = $0 { true } else { false } }.count == 3)
    #expect(commands.filter { $0 == .mtkStandby(mode: 0) }.count == 3)
    #expect(receiver.statistics.commandsFailed == 2)
    #expect(simulator.powerState == .running)  // it never heard the standby
    // With nobody subscribed any more, the app still hears that it was left powered.
    #expect(receiver.statistics.standbysFailed == 1)
    guard case .standbyFailed(let awake) = receiver.lastNotice else {
      Issue.record("no notice: \(String(describing: receiver.lastNotice))")
      return
    }
    #expect(awake.kind == .wrongChipset, "\(awake)")
    await receiver.shutdown()
  }

  /// A rejected command is reported with the chip's reason after its retries.
  @Test(arguments: [
    (
      "ublox-m8-drive", ReceiverProfile.ublox(.m8), ChipsetFamily.ublox, BaudRate.b115200,
      "UBX-ACK-NAK"
    ),
    ("mtk-cold-start", .mediatek, .mediatek, .b9600, "could not carry it out"),
  ])
  func aRejectedCommandFails(
    fixture: String, profile: ReceiverProfile, family: ChipsetFamily, baud: BaudRate,
    reason expected: String
  ) async throws {
    let simulator = try makeSimulator(fixture, profile: profile, responses: .rejecting)
    defer { simulator.stop() }
    let receiver = makeReceiver(simulator, family: family, baud: baud)
    let log = EventLog(receiver.subscribe())
    #expect(
      await eventually(timeout: .seconds(20)) {
        log.statuses.contains { if case .commandFailed = $0 { true } else { false } }
      })
    let reason = log.statuses.compactMap {
      if case .commandFailed(let reason) = $0 { reason } else { nil }
    }.first
    #expect(reason?.kind == .rejected)
    #expect(reason?.message.contains(expected) == true, "\(reason?.message ?? "none")")
    #expect(reason?.message.contains("3 of 3") == true)
    // Every attempt reached the chip and was rejected.
    #expect(await simulator.waitUntil { $0.counters.rejections >= 3 })
    #expect(await eventually(timeout: .seconds(20)) { log.fixes.count >= 1 })
    log.stop()
    await receiver.shutdown()
    #expect(deviceIsFree(simulator))
  }
}
