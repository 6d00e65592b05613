import NMEA
import Testing

@testable import Chipsets

@Suite("UBX framing")
struct UBXFramingTests {
  @Test("checksum matches an independent Fletcher on many payloads")
  func checksumMatchesReference() throws {
    var generator = SplitMix64(seed: 0x5EED)
    for length in [0, 1, 2, 7, 64, 255, 256, 1000] {
      let payload = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
      let messageClass = UInt8.random(in: 0...255, using: &generator)
      let id = UInt8.random(in: 0...255, using: &generator)
      let frame = try UBX.frame(UBXMessageID(messageClass, id), payload: payload)
      #expect(frame == referenceUBX(messageClass, id, payload), "payload length \(length)")
    }
  }

  @Test("frames the framer accepts, with class, ID and payload intact")
  func framerAcceptsFrames() throws {
    let payload: [UInt8] = [0xB5, 0x62, 0x24, 0x0D, 0x0A, 0x00, 0xFF]  // sync and NMEA bytes inside
    let frame = try UBX.frame(UBXMessageID(0x0A, 0x04), payload: payload)
    var framer = NMEAFramer()
    var seen: [(UBXMessageID, [UInt8])] = []
    framer.feed(frame) { found in
      if case .ubx(let view) = found { seen.append((UBXMessageID(view), Array(view.payload))) }
    }
    #expect(seen.count == 1)
    #expect(seen.first?.0 == .monVer)
    #expect(seen.first?.1 == payload)
  }

  @Test("published frames: u-center output and library vectors")
  func publishedFrames() throws {
    // UBX-CFG-RATE 1000 ms, GPS time: u-center hex dump in the ESP-IDF MJD NEO-M8N
    // component README ("ucenter TimeSource=1-GPS Time MeasurementPeriod=1000ms").
    #expect(
      try UBX.frame(UBXMessageID(0x06, 0x08), payload: [0xE8, 0x03, 0x01, 0x00, 0x01, 0x00])
        == hexBytes("B5 62 06 08 06 00 E8 03 01 00 01 00 01 39"))
    // UBX-CFG-MSG, 8-byte per-port form, GLL: meshtastic/firmware issue #3096, command 6
    // of the stream sent to a NEO-6.
    #expect(
      try UBX.frame(.cfgMsg, payload: hexBytes("F0 01 01 00 01 01 01 01"))
        == hexBytes("B5 62 06 01 08 00 F0 01 01 00 01 01 01 01 05 3A"))
    // UBX-CFG-RXM power save mode: u-blox 7 notes in AndrewBiz/geogadget-nano328
    // (extras/ubloxM7-stats.md).
    #expect(
      try UBX.frame(UBXMessageID(0x06, 0x11), payload: [0x08, 0x01])
        == hexBytes("B5 62 06 11 02 00 08 01 22 92"))
    // UBX-MON-VER poll: meshtastic/firmware issue #3096, command 2.
    #expect(UbloxCommandSet.versionQuery.bytes == hexBytes("B5 62 0A 04 00 00 0E 34"))
  }

  @Test("a payload over 65535 bytes is refused with a clear error")
  func payloadTooLong() {
    #expect(throws: ChipsetCommandError.payloadTooLong(65536)) {
      try UBX.frame(.cfgValset, payload: [UInt8](repeating: 0, count: 65536))
    }
    #expect("\(ChipsetCommandError.payloadTooLong(65536))".contains("65535"))
  }

  @Test("ACK frames for simulators match the published ACK-ACK for CFG-MSG")
  func acknowledgementFrames() {
    // "B5 62 05 01 02 00 06 01 0F 38" follows every CFG-MSG in a u-center session log
    // published on blog.csdn.net (JohnnyTim, article 124670594).
    #expect(
      UBX.acknowledgement(for: .cfgMsg, accepted: true) == hexBytes("B5 62 05 01 02 00 06 01 0F 38")
    )
    #expect(
      UBX.acknowledgement(for: .cfgMsg, accepted: false) == referenceUBX(0x05, 0x00, [0x06, 0x01]))
  }

  @Test("MON-VER: fields, extensions and protocol version")
  func monVer() throws {
    // The M9N answer quoted in a test of a NEO-M9N on a Raspberry Pi 5 (public code search):
    // ROM CORE 4.04, hardware 00190000, FWVER=SPG 4.04, PROTVER=32.01.
    let frame = UBX.monVer(
      software: "ROM CORE 4.04 (d964f4)", hardware: "00190000",
      extensions: ["FWVER=SPG 4.04", "PROTVER=32.01", "GPS;GLO;GAL;BDS", "SBAS;QZSS"])
    #expect(frame.count == 8 + 40 + 4 * 30)
    var versions: [UBXVersion] = []
    var framer = NMEAFramer()
    framer.feed(frame) { found in
      if case .ubx(let view) = found, let version = UBXVersion(view) { versions.append(version) }
    }
    let version = try #require(versions.first)
    #expect(version.software == "ROM CORE 4.04 (d964f4)")
    #expect(version.hardware == "00190000")
    #expect(version.extensionValue("FWVER") == "SPG 4.04")
    #expect(version.protocolVersion == UbloxProtocolVersion(major: 32, minor: 1))
    #expect(UbloxGeneration(protocolVersion: version.protocolVersion!) == .m9AndLater)
  }

  @Test("MON-VER with a payload of the wrong length is not read")
  func monVerWrongLength() {
    let frame = referenceUBX(0x0A, 0x04, [UInt8](repeating: 0x41, count: 45))
    var count = 0
    var framer = NMEAFramer()
    framer.feed(frame) { found in
      if case .ubx(let view) = found, UBXVersion(view) != nil { count += 1 }
    }
    #expect(count == 0)
  }

  @Test(
    "protocol version and hardware decide the generation",
    arguments: [
      ("PROTVER=15.00", UbloxGeneration.m8AndOlder), ("PROTVER 18.00", .m8AndOlder),
      ("PROTVER=23.01", .m8AndOlder), ("PROTVER=27.11", .m9AndLater),
      ("PROTVER=34.10", .m9AndLater),
    ])
  func generationFromProtocol(banner: String, expected: UbloxGeneration) throws {
    let version = try #require(UbloxProtocolVersion(banner: banner))
    #expect(UbloxGeneration(protocolVersion: version) == expected)
  }

  @Test("hardware versions map to series")
  func hardwareSeries() {
    #expect(UbloxGeneration.series(hardwareVersion: "00040005") == 5)
    #expect(UbloxGeneration.series(hardwareVersion: "00080000") == 8)
    #expect(UbloxGeneration.series(hardwareVersion: "00190000") == 9)
    #expect(UbloxGeneration.series(hardwareVersion: "000A0000") == 10)
    #expect(UbloxGeneration.series(hardwareVersion: "0008000") == nil)
    #expect(UbloxGeneration(hardwareVersion: "00080000") == .m8AndOlder)
    #expect(UbloxGeneration(hardwareVersion: "000A0000") == .m9AndLater)
  }

  @Test("message names")
  func names() {
    #expect(UBXMessageID(name: "CFG-RST") == .cfgRst)
    #expect(UBXMessageID(name: "ubx-mon-ver") == .monVer)
    #expect(UBXMessageID(name: "CFG-NOPE") == nil)
    #expect("\(UBXMessageID.cfgValset)" == "UBX-CFG-VALSET")
    #expect("\(UBXMessageID(0x01, 0x35))" == "UBX 01 35")
  }
}

/// A small seeded generator, so the random payloads are the same on every run.
struct SplitMix64: RandomNumberGenerator {
  var state: UInt64
  init(seed: UInt64) { state = seed }
  mutating func next() -> UInt64 {
    state &+= 0x9E37_79B9_7F4A_7C15
    var z = state
    z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
    z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
    return z ^ (z >> 31)
  }
}
