import Chipsets
import Foundation
import NMEA
import Replay
import SerialPort
import Simulator
import Testing

@testable import SerialGPS

/// `chipset: .probe` against the receiver simulator, one profile at a time: the polls that
/// one family answers (`UBX-MON-VER`, `$PMTK605`) go out, the answer identifies the
/// receiver, and its own power-on commands follow; a receiver that answers neither is
/// treated as generic and told so. Also a chipset named wrongly: the unanswered commands
/// name it. Real time over ptys; every wait is a generous bound.
@Suite(.serialized) struct ProbeTests {
  /// Standard sentences only, so listening identifies nothing: only the probe can.
  static let neutralRecording: String = {
    var url = URL(fileURLWithPath: #filePath)
    for _ in 0..<3 { url.deleteLastPathComponent() }
    return url.appendingPathComponent("fixtures/midnight-rollover.nmea").path
  }()

  struct Case: Sendable, CustomTestStringConvertible {
    let profile: ReceiverProfile
    /// How the chip starts: asleep, it must be woken by the probe before it can answer.
    let initial: SimulatedPowerState
    let family: ChipsetFamily
    /// What the answer names (`nil`: no answer).
    let model: String?
    var testDescription: String { "\(profile), \(initial)" }
  }

  static let cases = [
    Case(profile: .ublox(.m8), initial: .running, family: .ublox, model: "NEO-M8N"),
    Case(profile: .ublox(.m9), initial: .running, family: .ublox, model: "NEO-M9N"),
    Case(profile: .ublox(.m10), initial: .backup, family: .ublox, model: "MAX-M10S"),
    Case(profile: .mediatek, initial: .running, family: .mediatek, model: "SIM-MT3339"),
    Case(profile: .mediatek, initial: .standby, family: .mediatek, model: nil),
    Case(profile: .sirf, initial: .running, family: .nmea, model: nil),
    Case(profile: .generic, initial: .running, family: .nmea, model: nil),
  ]

  func makeSimulator(_ c: Case) throws -> ReceiverSimulator {
    try ReceiverSimulator(
      recording: Recording.loadCached(path: Self.neutralRecording),
      configuration: .init(
        profile: c.profile, pace: .recorded(speed: 4), initialPowerState: c.initial,
        wakeDelay: .milliseconds(10)))
  }

  func makeReceiver(_ simulator: ReceiverSimulator, chipset: ChipsetChoice) -> GPSReceiver {
    var options = GPSReceiver.Options()
    options.linger = .zero
    options.chipset = chipset
    options.acknowledgementTimeout = .milliseconds(500)
    options.commandAttempts = 3
    options.awakeMarkers = nil
    return GPSReceiver(
      connector: SerialConnector(path: simulator.devicePath, baud: .fixed(.b9600)),
      options: options)
  }

  @Test(arguments: cases)
  func theProbeIdentifiesWhatAnswers(_ c: Case) async throws {
    let simulator = try makeSimulator(c)
    defer { simulator.stop() }
    let receiver = makeReceiver(simulator, chipset: .probe)
    let log = EventLog(receiver.subscribe())
    // The probe is the first thing written, byte for byte: the UBX poll, then $PMTK605.
    #expect(await simulator.waitUntil(timeout: .seconds(20)) { !$0.received.isEmpty })
    let first = simulator.received.filter { $0.command != nil }.prefix(2).map(\.bytes)
    let sent = simulator.received.flatMap(\.bytes)
    #expect(
      Array(sent.prefix(ChipsetProbe.step.bytes.count)) == ChipsetProbe.step.bytes
        || first == [ChipsetProbe.ubloxPoll, ChipsetProbe.mediatekPoll],
      "\(simulator.received)")
    #expect(ChipsetProbe.ubloxPoll == [0xB5, 0x62, 0x0A, 0x04, 0x00, 0x00, 0x0E, 0x34])
    #expect(ChipsetProbe.mediatekPoll == Array("$PMTK605*31\r\n".utf8))

    if c.family.hasCommands {
      #expect(await eventually(timeout: .seconds(20)) { receiver.commandFamily == c.family })
      #expect(receiver.identification?.family == c.family)
      #expect(receiver.identification?.confidence == .high)
      if let model = c.model {
        #expect(await eventually(timeout: .seconds(10)) { receiver.identification?.model == model })
      }
      // Its own power-on commands follow the answer: the sentence selection is acknowledged.
      #expect(
        await simulator.waitUntil(timeout: .seconds(20)) { sim in
          sim.received.contains { $0.outcome == .acknowledged }
        })
      #expect(await eventually(timeout: .seconds(20)) { log.fixes.count >= 1 })
      log.stop()
      await receiver.shutdown()
      #expect(
        await simulator.waitUntil(timeout: .seconds(10)) { $0.powerState != .running },
        "put to standby: \(simulator.powerState)")
      #expect(!log.statuses.contains { if case .commandsWithheld = $0 { true } else { false } })
      #expect(receiver.statistics.commandsFailed == 0)
    } else {
      // Answered neither: asked three times, then generic, and the app is told so.
      #expect(
        await eventually(timeout: .seconds(20)) {
          log.statuses.contains { if case .commandsWithheld = $0 { true } else { false } }
        })
      let withheld = log.statuses.compactMap {
        if case .commandsWithheld(let withheld) = $0 { withheld } else { nil }
      }.first
      #expect(withheld?.probed == true)
      #expect(withheld?.description.contains("answered neither UBX-MON-VER nor $PMTK605") == true)
      let probes = simulator.received.filter {
        $0.bytes == ChipsetProbe.ubloxPoll || $0.bytes == ChipsetProbe.mediatekPoll
      }
      #expect(probes.count == 6, "\(simulator.received)")
      #expect(receiver.commandFamily == .nmea)
      #expect(await eventually(timeout: .seconds(20)) { log.fixes.count >= 1 })
      log.stop()
      #expect(await eventually(timeout: .seconds(20)) { receiver.statistics.powerOffs == 1 })
      // Not asked again at the next power-on, and nothing else was ever written.
      let again = EventLog(receiver.subscribe())
      #expect(await eventually(timeout: .seconds(20)) { receiver.statistics.powerOns == 2 })
      #expect(await eventually(timeout: .seconds(20)) { again.fixes.count >= 1 })
      again.stop()
      await receiver.shutdown()
      #expect(simulator.received.allSatisfy { probes.contains($0) }, "\(simulator.received)")
      #expect(receiver.statistics.commandsFailed == 0)
    }
  }

  /// Without `.probe`, the same unidentified receiver is never written to.
  @Test func automaticNeverProbes() async throws {
    let c = Case(profile: .ublox(.m8), initial: .running, family: .ublox, model: nil)
    let simulator = try makeSimulator(c)
    defer { simulator.stop() }
    let receiver = makeReceiver(simulator, chipset: .automatic)
    let log = EventLog(receiver.subscribe())
    #expect(await eventually(timeout: .seconds(20)) { log.fixes.count >= 2 })
    log.stop()
    await receiver.shutdown()
    #expect(simulator.received.isEmpty, "\(simulator.received)")
    #expect(receiver.commandFamily == .nmea)
  }

  /// The chipset named wrongly: u-blox commands to a MediaTek that keeps streaming go
  /// unanswered every time, and the failure names the chipset as the likely cause.
  @Test func aWrongChipsetIsNamed() async throws {
    let c = Case(profile: .mediatek, initial: .running, family: .mediatek, model: nil)
    let simulator = try makeSimulator(c)
    defer { simulator.stop() }
    let receiver = makeReceiver(simulator, chipset: .family(.ublox))
    let log = EventLog(receiver.subscribe())
    #expect(
      await eventually(timeout: .seconds(30)) {
        log.statuses.contains { if case .commandFailed = $0 { true } else { false } }
      })
    let reason = try #require(
      log.statuses.compactMap { if case .commandFailed(let r) = $0 { r } else { nil } }.first)
    #expect(reason.kind == .wrongChipset, "\(reason)")
    #expect(reason.message.contains("UBX-CFG-MSG"), "\(reason)")
    #expect(reason.message.contains("3 attempts"))
    #expect(reason.message.contains("most likely not a u-blox receiver"))
    log.stop()
    await receiver.shutdown()
  }
}
