import Chipsets
import Foundation
import NMEA
import Replay
import SerialPort
import Simulator
import Testing

@testable import SerialGPS

/// `GPSReceiver.Options.ubxMessages` (the CLI's `--ubx`) against the receiver simulator: the
/// commands that reach a u-blox receiver at power-on, as it decodes them. u-blox 8: one
/// `UBX-CFG-MSG` per message of the selection, after the NMEA selection and before GNSS
/// start; u-blox 9 (identified by the probe): one `UBX-CFG-VALSET` of their `CFG-MSGOUT-UBX_*`
/// keys in RAM; by default none. Real time over ptys; every wait is a generous bound.
@Suite(.serialized) struct UBXOutputOptionTests {
  static let recording: String = {
    var url = URL(fileURLWithPath: #filePath)
    for _ in 0..<3 { url.deleteLastPathComponent() }
    return url.appendingPathComponent("fixtures/midnight-rollover.nmea").path
  }()

  /// The commands `profile` received from a receiver driven with `ubx` until two fixes came.
  func commands(
    _ profile: ReceiverProfile, chipset: ChipsetChoice, ubx: UBXMessageSelection?
  ) async throws -> [ReceivedInput] {
    let simulator = try ReceiverSimulator(
      recording: Recording.loadCached(path: Self.recording),
      configuration: .init(
        profile: profile, pace: .recorded(speed: 4), initialPowerState: .running,
        wakeDelay: .milliseconds(10)))
    defer { simulator.stop() }
    var options = GPSReceiver.Options()
    options.linger = .zero
    options.chipset = chipset
    if let ubx { options.ubxMessages = ubx }
    options.acknowledgementTimeout = .seconds(2)
    options.awakeMarkers = nil
    let receiver = GPSReceiver(
      connector: SerialConnector(path: simulator.devicePath, baud: .fixed(.b9600)),
      options: options)
    let log = EventLog(receiver.subscribe())
    // Two fixes, and the power-on sequence's last command (GNSS start) received.
    #expect(
      await eventually(timeout: .seconds(30)) {
        log.fixes.count >= 2 && simulator.received.contains { Self.isGNSSStart($0) }
      })
    log.stop()
    await receiver.shutdown()
    return simulator.received.filter { $0.command != nil }
  }

  static func isGNSSStart(_ input: ReceivedInput) -> Bool {
    if case .ubxReset(_, resetMode: 0x09)? = input.command { true } else { false }
  }

  /// The UBX messages of class NAV (0x01) a command switches on.
  static func navigationRates(_ input: ReceivedInput) -> UBXMessageID? {
    if case .ubxSetMessageRate(let id, rates: [1])? = input.command, id.messageClass == 0x01 {
      return id
    }
    return nil
  }

  @Test("u-blox 8: CFG-MSG per navigation message, acknowledged, between NMEA and GNSS start")
  func ublox8() async throws {
    let received = try await commands(.ublox(.m8), chipset: .family(.ublox), ubx: .navigation)
    let switched = received.filter { Self.navigationRates($0) != nil }
    #expect(!switched.isEmpty, "\(received)")
    #expect(
      switched.compactMap(Self.navigationRates)
        == UBXMessageSelection.navigation.messages.map(\.id))
    #expect(switched.allSatisfy { $0.outcome == .acknowledged }, "\(switched)")
    // Exactly the bytes of the interface description's CFG-MSG (class, ID, rate 1).
    #expect(
      switched.first?.bytes == [0xB5, 0x62, 0x06, 0x01, 0x03, 0x00, 0x01, 0x07, 0x01, 0x13, 0x51])
    let first = try #require(received.firstIndex { Self.navigationRates($0) != nil })
    let start = try #require(received.firstIndex(where: Self.isGNSSStart))
    let nmea = try #require(
      received.lastIndex {
        guard case .ubxSetMessageRate(let id, _)? = $0.command else { return false }
        return id.messageClass == 0xF0
      })
    #expect(nmea < first && first < start)
  }

  @Test("u-blox 9, identified by the probe: one CFG-VALSET of CFG-MSGOUT-UBX keys in RAM")
  func ublox9() async throws {
    let received = try await commands(.ublox(.m9), chipset: .probe, ubx: .navigation)
    let keys = UBXMessageSelection.navigation.messages.map {
      UbloxCommandSet.messageOutputKey($0, port: .uart1)!
    }
    let valsets = received.filter {
      if case .ubxSetConfiguration(let layers, let values)? = $0.command {
        layers == 0x01 && values.map(\.key) == keys && values.allSatisfy { $0.value == 1 }
      } else {
        false
      }
    }
    #expect(valsets.count == 1, "\(received)")
    #expect(valsets.first?.outcome == .acknowledged)
    #expect(!received.contains { Self.navigationRates($0) != nil })
  }

  @Test("by default and with off, no UBX message is switched on")
  func offByDefault() async throws {
    for ubx in [nil, UBXMessageSelection(cliName: "off")!] as [UBXMessageSelection?] {
      let received = try await commands(.ublox(.m8), chipset: .family(.ublox), ubx: ubx)
      #expect(!received.contains { Self.navigationRates($0) != nil }, "\(received)")
      #expect(!received.isEmpty, "the u-blox power-on commands were sent")
    }
  }
}
