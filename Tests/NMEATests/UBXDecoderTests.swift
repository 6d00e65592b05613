import NMEA
import Testing

// The UBX decoders field by field on frames from gpsd's u-blox logs (the samples above each
// decoder), frames whose length field lies, and fields no receiver can mean.

/// A frame's bytes from its hex (spaces allowed).
func hexBytes(_ text: String) -> [UInt8] {
  let digits = Array(text.filter { !$0.isWhitespace })
  return stride(from: 0, to: digits.count, by: 2).map {
    UInt8(String(digits[$0...$0 + 1]), radix: 16)!
  }
}

/// Decodes `bytes` and returns the decoder's events, copied out as far as the tests need.
struct DecodedUBX {
  var messages: [String] = []
  var rejections: [UBXRejection] = []
  var sentences = 0
  var statistics = DecoderStatistics()
}

/// Runs `body` on every UBX message decoded from `bytes`, in order.
func decodeUBX(_ bytes: [UInt8], _ body: (UBXMessage) -> Void = { _ in }) -> DecodedUBX {
  var result = DecodedUBX()
  var decoder = NMEADecoder()
  decoder.decode(bytes) { event in
    switch event {
    case .ubxMessage(let message):
      result.messages.append(String(describing: message).prefix { $0 != "(" }.description)
      body(message)
    case .ubxRejected(_, let reason): result.rejections.append(reason)
    case .sentence: result.sentences += 1
    default: break
    }
  }
  result.statistics = decoder.statistics
  return result
}

/// The payload of a frame (without sync, header and checksum).
func payload(of frame: [UInt8]) -> [UInt8] { Array(frame[6..<(frame.count - 2)]) }

enum UBXSamples {
  // The frames above the decoders in Sources/NMEA/UBX*.swift.
  static let navPVT = hexBytes(
    """
    B5 62 01 07 5C 00 10 E6 B9 09 E3 07 04 16 15 13 14 37 1A 00 00 00 F1 0C FE FF 03 01 EB 10
    5A 41 A0 65 0A A5 A7 E4 32 72 00 00 33 6B 00 00 91 38 00 00 62 32 00 00 FB 00 00 00 D9 FF
    FF FF E8 FF FF FF FE 00 00 00 01 74 4C 01 87 03 00 00 2D 28 5E 00 7D 00 00 00 DC CA 49 32
    00 00 00 00 00 00 00 00 70 87
    """)
  static let navHPPosLLH = hexBytes(
    """
    B5 62 01 14 24 00 00 00 00 00 10 E6 B9 09 5A 41 A0 65 0A A5 A7 E4 32 72 00 00 33 6B 00 00
    F2 0E FC 00 A6 35 02 00 D6 F7 01 00 B4 45
    """)
  static let navPosLLH = hexBytes(
    "B5 62 01 02 1C 00 18 DE 2D 0E A5 EF FC D6 05 AA AE 1A 74 35 00 00 94 A8 00 00 8B 50 00 00 F4 38 00 00 19 42"
  )
  static let navStatus = hexBytes(
    "B5 62 01 03 10 00 18 DE 2D 0E 05 DD 00 08 FC 3A 00 00 CE E2 01 00 16 74")
  static let timTP = hexBytes(
    "B5 62 0D 01 10 00 B0 9B 2D 0E 00 00 00 00 15 EF FF FF 62 08 0B 0F 2A 63")
  static let navTimeGPS = hexBytes(
    "B5 62 01 20 10 00 10 E6 B9 09 F3 0C FE FF 02 08 12 07 1A 00 00 00 22 AB")
  static let monRF = hexBytes(
    """
    B5 62 0A 38 1C 00 00 01 00 00 00 00 02 01 00 00 00 00 00 00 00 00 63 00 99 09 17 0D A9 06
    A7 00 00 00 E1 5E
    """)
}

@Suite("UBX decoders")
struct UBXDecoderTests {
  @Test("NAV-PVT: every field of the sample frame")
  func navPVT() throws {
    var found: UBXNavPVT?
    let result = decodeUBX(UBXSamples.navPVT) { if case .navPVT(let m) = $0 { found = m } }
    let pvt = try #require(found)
    #expect(result.statistics.ubx.decoded == 1)
    #expect(pvt.iTOW == 163_178_000)
    // 21:19:20 with nano −127 759 ns: 21:19:19.999872241.
    #expect(
      pvt.timestamp
        == UTCTimestamp(
          date: UTCDate(year: 2019, month: 4, day: 22),
          time: UTCTime(hour: 21, minute: 19, second: 19, nanoseconds: 999_872_241)))
    #expect(pvt.fixType == .threeD && pvt.gnssFixOK && !pvt.differential)
    #expect(pvt.carrierSolution == UBXCarrierSolution.none)
    #expect(pvt.satellitesUsed == 16)
    let position = try #require(pvt.position)
    #expect(position.latitude.decimalDegrees == -45.8775286)
    #expect(position.longitude.decimalDegrees == 170.5001306)
    #expect(pvt.altitudeHAE == 29.234 && pvt.altitudeMSL == 27.443)
    #expect(pvt.horizontalAccuracy == 14.481 && pvt.verticalAccuracy == 12.898)
    #expect(pvt.velocityNorth == 0.251 && pvt.velocityEast == -0.039 && pvt.velocityDown == -0.024)
    #expect(pvt.groundSpeed == 0.254 && pvt.speedAccuracy == 0.903)
    #expect(abs(pvt.headingOfMotion! - 217.87649) < 1e-9)
    #expect(abs(pvt.headingAccuracy! - 61.70669) < 1e-9)
    #expect(pvt.pdop == 1.25)
    #expect(pvt.magneticDeclination == nil)  // validMag not set
  }

  @Test("1e-7° and 1e-9° positions are exact: the minutes keep every digit")
  func exactPositions() throws {
    var hp: UBXNavHPPosLLH?
    _ = decodeUBX(UBXSamples.navHPPosLLH) { if case .navHPPosLLH(let m) = $0 { hp = m } }
    let position = try #require(hp?.position)
    // lat −458 775 286 · 100 + 14, lon 1 705 001 306 · 100 − 14, in 1e-9°.
    #expect(
      position.latitude
        == Coordinate(
          degrees: 45, scaledMinutes: 877_528_586 * 6, fractionDigits: 8, isNegative: true))
    #expect(position.longitude.degrees == 170)
    #expect(position.longitude.scaledMinutes == 500_130_586 * 6)
    #expect(hp?.altitudeHAE == 29.2336 && hp?.altitudeMSL == 27.443)
    #expect(hp?.horizontalAccuracy == 14.4806)
  }

  @Test("NAV-POSLLH, NAV-STATUS, NAV-TIMEGPS, TIM-TP, MON-RF: the samples")
  func others() {
    var seen = 0
    let all =
      UBXSamples.navPosLLH + UBXSamples.navStatus + UBXSamples.navTimeGPS + UBXSamples.timTP
      + UBXSamples.monRF
    let result = decodeUBX(all) { message in
      switch message {
      case .navPosLLH(let m):
        #expect(m.iTOW == 237_887_000)
        #expect(m.position?.latitude.decimalDegrees == 44.7654405)
        #expect(m.position?.longitude.decimalDegrees == -68.8066651)
        #expect(m.altitudeHAE == 13.684 && m.altitudeMSL == 43.156)
        #expect(m.horizontalAccuracy == 20.619 && m.verticalAccuracy == 14.58)
        seen += 1
      case .navStatus(let m):
        #expect(m.fixType == .timeOnly && m.gnssFixOK && m.timeToFirstFix == 15.1)
        #expect(m.millisecondsSinceStartup == 123_598)
        seen += 1
      case .navTimeGPS(let m):
        #expect(m.week == 2050 && m.leapSeconds == 18 && m.fractionalTimeOfWeek == -127_757)
        seen += 1
      case .timTP(let m):
        #expect(m.week == 2146 && m.pulseTimeOfWeek == 237_870_000 && m.timeBase == .utc)
        #expect(abs(m.quantisationError! - -4.331e-9) < 1e-18)
        seen += 1
      case .monRF(let m):
        #expect(m.blocks.count == 1)
        #expect(m.blocks[0].antennaStatus == .ok && m.blocks[0].antennaPower == .on)
        #expect(m.blocks[0].jammingIndicator == 23 && m.blocks[0].jamming == .unknown)
        seen += 1
      default:
        Issue.record("unexpected \(message)")
      }
    }
    #expect(seen == 5 && result.rejections.isEmpty)
  }

  // gpsd keeps the azimuth u-blox writes (0) beside an unknown elevation; so does the decoder.
  @Test("NAV-SAT: satellites read in place; an elevation of −91° (unknown orbit) is left out")
  func navSat() throws {
    var header = [UInt8](repeating: 0, count: 8)
    header[4] = 1  // version
    header[5] = 2  // two satellites
    let first: [UInt8] = [0, 4, 40, UInt8(bitPattern: -91), 0, 0, 0, 0, 0x1F, 0x08, 0, 0]
    let second: [UInt8] = [6, 8, 45, 37, 0x0E, 0x01, 0xF4, 0xFF, 0x1F, 0x19, 0, 0]
    let frame = ubxFrame(class: 0x01, id: 0x35, payload: header + first + second)
    var satellites: [Satellite] = []
    let result = decodeUBX(frame) { message in
      guard case .navSat(let sat) = message else { return }
      satellites = sat.satellites.compactMap(\.satellite)
    }
    #expect(result.rejections.isEmpty)
    #expect(
      satellites == [
        Satellite(
          constellation: .gps, prn: 4, svid: 4, azimuth: 0, snr: 40, used: true,
          pseudorangeResidual: 0, quality: 7, health: 1),
        Satellite(
          constellation: .glonass, prn: 72, svid: 8, elevation: 37, azimuth: 270, snr: 45,
          used: true, pseudorangeResidual: -1.2, quality: 7, health: 1),
      ])
  }

  @Test("a payload shorter than the message's fixed part is refused and the stream goes on")
  func shortPayloads() {
    let messages: [(UInt8, UInt8, Int)] = [
      (0x01, 0x07, 84), (0x01, 0x02, 28), (0x01, 0x14, 36), (0x01, 0x01, 20), (0x01, 0x11, 20),
      (0x01, 0x12, 36), (0x01, 0x06, 52), (0x01, 0x04, 18), (0x01, 0x03, 16), (0x01, 0x61, 4),
      (0x01, 0x21, 20), (0x01, 0x20, 16), (0x01, 0x35, 8), (0x01, 0x30, 8), (0x01, 0x43, 8),
      (0x0D, 0x01, 16), (0x0A, 0x38, 4), (0x0A, 0x09, 60), (0x0A, 0x04, 40),
    ]
    for (messageClass, id, fixed) in messages {
      for length in [0, fixed / 2, fixed - 1] {
        let frame = ubxFrame(
          class: messageClass, id: id, payload: [UInt8](repeating: 0x01, count: length))
        let result = decodeUBX(frame + wire("GPGGA,,,,,,0,00,99.99,,,,,,"))
        #expect(result.rejections == [.shortPayload], "\(messageClass)/\(id) \(length) bytes")
        #expect(result.statistics.ubx.shortPayload == 1 && result.messages.isEmpty)
        #expect(result.sentences == 1)
      }
    }
  }

  @Test("a block count that needs more bytes than the payload has is refused, not read past")
  func lyingBlockCounts() {
    // NAV-SAT (12-byte blocks), NAV-SVINFO (12), NAV-SIG (16), MON-RF (24): the count says
    // one block more than the payload holds.
    let cases: [(UInt8, UInt8, header: [UInt8], block: Int)] = [
      (0x01, 0x35, [0, 0, 0, 0, 1, 3, 0, 0], 12), (0x01, 0x30, [0, 0, 0, 0, 3, 0, 0, 0], 12),
      (0x01, 0x43, [0, 0, 0, 0, 0, 3, 0, 0], 16), (0x0A, 0x38, [0, 3, 0, 0], 24),
    ]
    for (messageClass, id, header, block) in cases {
      let frame = ubxFrame(
        class: messageClass, id: id,
        payload: header + [UInt8](repeating: 0x07, count: 2 * block + block - 1))
      let result = decodeUBX(frame + UBXSamples.navStatus)
      #expect(result.rejections == [.blockCountMismatch], "\(messageClass)/\(id)")
      #expect(result.messages == ["navStatus"])
      #expect(result.statistics.ubx.blockCountMismatch == 1)
    }
    // MON-VER: 40 bytes and then not a whole number of 30-byte extensions.
    let monVer = ubxFrame(class: 0x0A, id: 0x04, payload: [UInt8](repeating: 0x41, count: 55))
    #expect(decodeUBX(monVer).rejections == [.blockCountMismatch])
  }

  @Test("an unknown message version is refused")
  func unknownVersion() {
    var sat = payload(of: ubxFrame(class: 0x01, id: 0x35, payload: [0, 0, 0, 0, 2, 0, 0, 0]))
    sat[4] = 2
    #expect(
      decodeUBX(ubxFrame(class: 0x01, id: 0x35, payload: sat)).rejections == [.unknownVersion])
    var hp = payload(of: UBXSamples.navHPPosLLH)
    hp[0] = 1
    #expect(decodeUBX(ubxFrame(class: 0x01, id: 0x14, payload: hp)).rejections == [.unknownVersion])
  }

  /// The sample NAV-PVT with its payload changed by `change`.
  func pvt(_ change: (inout [UInt8]) -> Void) -> (UBXNavPVT?, DecoderStatistics) {
    var bytes = payload(of: UBXSamples.navPVT)
    change(&bytes)
    var found: UBXNavPVT?
    let result = decodeUBX(ubxFrame(class: 0x01, id: 0x07, payload: bytes)) {
      if case .navPVT(let m) = $0 { found = m }
    }
    return (found, result.statistics)
  }

  func put(_ value: Int32, at offset: Int, in bytes: inout [UInt8]) {
    for index in 0..<4 { bytes[offset + index] = UInt8(truncatingIfNeeded: value >> (8 * index)) }
  }

  @Test("an impossible field is left out and the rest of the message stands")
  func impossibleFields() throws {
    // Latitude 90.0000001°: no position, the altitude and time remain.
    let (beyond, statistics) = pvt { put(900_000_001, at: 28, in: &$0) }
    #expect(beyond?.position == nil && beyond?.altitudeMSL == 27.443 && beyond?.timestamp != nil)
    #expect(statistics.ubx.droppedFields == 1 && statistics.ubx.decoded == 1)
    // Longitude −180.0000001°.
    #expect(pvt { put(-1_800_000_001, at: 24, in: &$0) }.0?.position == nil)
    // Exactly ±90° and ±180° are positions.
    #expect(pvt { put(-900_000_000, at: 28, in: &$0) }.0?.position?.latitude.degrees == 90)
    // Month 13, 30 February: no timestamp, the position stands.
    let (month, _) = pvt { $0[6] = 13 }
    #expect(month?.timestamp == nil && month?.position != nil)
    #expect(
      pvt {
        $0[6] = 2; $0[7] = 30
      }.0?.timestamp == nil)
    // validDate without validTime: gpsd takes the time only when both are valid.
    #expect(pvt { $0[11] = 0x01 }.0?.timestamp == nil)
    // invalidLlh (u-blox 9, flags3 bit 0): no position and no heights, the velocity stands.
    let (invalid, _) = pvt { $0[78] = 0x01 }
    #expect(invalid?.position == nil && invalid?.altitudeHAE == nil && invalid?.groundSpeed != nil)
    // A negative ground speed, a heading of 360°, an unknown fix type.
    #expect(pvt { put(-5, at: 60, in: &$0) }.0?.groundSpeed == nil)
    #expect(pvt { put(36_000_000, at: 64, in: &$0) }.0?.headingOfMotion == nil)
    #expect(pvt { $0[20] = 6 }.0?.fixType == nil)
    // The high-precision part of NAV-HPPOSLLH beyond ±99.
    var hp = payload(of: UBXSamples.navHPPosLLH)
    hp[25] = 100
    var found: UBXNavHPPosLLH?
    _ = decodeUBX(ubxFrame(class: 0x01, id: 0x14, payload: hp)) {
      if case .navHPPosLLH(let m) = $0 { found = m }
    }
    #expect(found != nil && found?.position == nil && found?.altitudeMSL == 27.443)
  }

  @Test("nanoseconds carry into the second before, across midnight and the year")
  func negativeNanoseconds() {
    let (carried, _) = pvt { bytes in
      bytes[4] = 0xE4  // 2020
      bytes[5] = 0x07
      bytes[6] = 1
      bytes[7] = 1
      bytes[8] = 0
      bytes[9] = 0
      bytes[10] = 0
      put(-1000, at: 16, in: &bytes)
    }
    #expect(
      carried?.timestamp
        == UTCTimestamp(
          date: UTCDate(year: 2019, month: 12, day: 31),
          time: UTCTime(hour: 23, minute: 59, second: 59, nanoseconds: 999_999_000)))
  }

  @Test("frames of messages the decoder does not know pass as frames, counted")
  func notDecoded() {
    let ack = ubxFrame(class: 0x05, id: 0x01, payload: [0x06, 0x01])
    let result = decodeUBX(ack)
    #expect(result.messages.isEmpty && result.rejections.isEmpty)
    #expect(result.statistics.ubx.notDecoded == 1 && result.statistics.framer.ubxFrames == 1)
  }

  @Test("MON-VER fields read in place, as text on request")
  func monVer() throws {
    let payload =
      Array("ROM CORE 3.01 (107888)".utf8) + [UInt8](repeating: 0, count: 8)
      + Array("00080000".utf8) + [0, 0] + Array("PROTVER=18.00".utf8)
      + [UInt8](repeating: 0, count: 17) + Array("MOD=NEO-M8N".utf8)
      + [UInt8](repeating: 0, count: 19)
    var texts: [String] = []
    let result = decodeUBX(ubxFrame(class: 0x0A, id: 0x04, payload: payload)) { message in
      guard case .monVer(let version) = message else { return }
      texts =
        [UBXMonVer.text(version.software), UBXMonVer.text(version.hardware)]
        + version.extensions.map(UBXMonVer.text)
    }
    #expect(result.rejections.isEmpty)
    #expect(texts == ["ROM CORE 3.01 (107888)", "00080000", "PROTVER=18.00", "MOD=NEO-M8N"])
  }
}
