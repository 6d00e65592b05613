import Testing

@testable import NMEA

// u-blox messages read as gpsd reads them: NAV-PVT's mode from its fix type alone (the
// `gnssFixOK` flag kept on the fix), HNR-PVT, the leap second 23:59:60, and gpsd's geoid model
// for the height above sea level where the receiver gives only the ellipsoid's.

/// NAV-PVT epochs made from the sample NAV-PVT (ublox-zed-f9p-hp.log) with another time and
/// flags.
enum PVTGenerator {
  /// The sample's payload with `iTOW`, the UTC date and time (nano 0, `validDate`,
  /// `validTime`, `fullyResolved`) and `flags` (bit 0 `gnssFixOK`) replaced.
  static func frame(
    iTOW: UInt32, year: UInt16, month: UInt8, day: UInt8, hour: UInt8, minute: UInt8,
    second: UInt8, flags: UInt8 = 0x01
  ) -> [UInt8] {
    var bytes = payload(of: UBXSamples.navPVT)
    bytes.replaceSubrange(0..<4, with: littleEndian(iTOW))
    bytes[4] = UInt8(year & 0xFF)
    bytes[5] = UInt8(year >> 8)
    bytes[6] = month
    bytes[7] = day
    bytes[8] = hour
    bytes[9] = minute
    bytes[10] = second
    bytes[11] = 0x07
    bytes.replaceSubrange(16..<20, with: littleEndian(0))
    bytes[21] = flags
    return ubxFrame(class: 0x01, id: 0x07, payload: bytes)
  }
}

@Suite("UBX read as gpsd reads it")
struct UBXGpsdReadingTests {
  @Test("NAV-PVT with gnssFixOK clear: the fix type's mode, the position and hAcc, the flag kept")
  func fixOutsideLimits() throws {
    // The sample's epoch (fix type 3, 21:19:20) and the next, both with the flag clear.
    let bytes =
      PVTGenerator.frame(
        iTOW: 163_178_000, year: 2019, month: 4, day: 22, hour: 21, minute: 19, second: 20,
        flags: 0x00)
      + PVTGenerator.frame(
        iTOW: 163_179_000, year: 2019, month: 4, day: 22, hour: 21, minute: 19, second: 21,
        flags: 0x00)
      + PVTGenerator.frame(
        iTOW: 163_180_000, year: 2019, month: 4, day: 22, hour: 21, minute: 19, second: 22)
    let found = epochs(bytes)
    #expect(found.count == 3)
    for epoch in found.prefix(2) {
      #expect(epoch.fix.mode == .threeD)
      #expect(epoch.fix.latitude.map { abs($0 + 45.8775286) < 1e-12 } == true)
      #expect(epoch.fix.altitudeMSL == 27.443)
      #expect(epoch.fix.horizontalAccuracy == 14.481)
      #expect(epoch.fix.gnssFixOK == false)
    }
    #expect(found.last?.fix.gnssFixOK == true)
    #expect(found.last?.fix.mode == .threeD)
    // No flag from NMEA.
    #expect(epochs(UBXEpochSamples.gga).first?.fix.gnssFixOK == nil)
  }

  @Test("a leap second on u-blox: 23:59:60 is labelled so and 00:00:00 follows it")
  func leapSecond() throws {
    // 2016-12-31 23:59:60 UTC: GPS − UTC went from 17 to 18 s; the GPS week began at UTC
    // 23:59:43 that Saturday, so 23:59:58 UTC is iTOW 15 000 ms.
    let seconds: [(UInt32, UInt8, UInt8, UInt8, UInt8)] = [
      (15_000, 31, 23, 59, 58), (16_000, 31, 23, 59, 59), (17_000, 31, 23, 59, 60),
      (18_000, 1, 0, 0, 0), (19_000, 1, 0, 0, 1), (20_000, 1, 0, 0, 2),
    ]
    let expectedTimes = [
      UTCTime(hour: 23, minute: 59, second: 58), UTCTime(hour: 23, minute: 59, second: 59),
      UTCTime(hour: 23, minute: 59, second: 60), UTCTime(hour: 0, minute: 0, second: 0),
      UTCTime(hour: 0, minute: 0, second: 1), UTCTime(hour: 0, minute: 0, second: 2),
    ]
    let lastDay = UTCDate(year: 2016, month: 12, day: 31)
    let newYear = UTCDate(year: 2017, month: 1, day: 1)
    // NAV-PVT alone, and with NAV-DOP before it and NAV-EOE after it in each epoch.
    for withNeighbours in [false, true] {
      var bytes: [UInt8] = []
      for (iTOW, day, hour, minute, second) in seconds {
        let year: UInt16 = day == 31 ? 2016 : 2017
        if withNeighbours {
          bytes += ubxFrame(
            class: 0x01, id: 0x04, payload: littleEndian(iTOW) + [UInt8](repeating: 0x64, count: 14)
          )
        }
        bytes += PVTGenerator.frame(
          iTOW: iTOW, year: year, month: day == 31 ? 12 : 1, day: day, hour: hour, minute: minute,
          second: second)
        if withNeighbours { bytes += ubxFrame(class: 0x01, id: 0x61, payload: littleEndian(iTOW)) }
      }
      let found = epochs(bytes)
      #expect(found.map { $0.fix.time } == expectedTimes, "neighbours: \(withNeighbours)")
      #expect(
        found.map { $0.fix.date } == [lastDay, lastDay, lastDay, newYear, newYear, newYear])
      #expect(found.map { $0.fix.leapSeconds } == [17, 17, 17, 18, 18, 18])
      #expect(found.allSatisfy { $0.fix.mode == .threeD })
    }
  }

  /// The first HNR-PVT of ublox-neo-m8l.log (iTOW 228730100 ms).
  static let hnrPVT = hexBytes(
    """
    B5 62 28 00 48 00 F4 24 A2 0D E8 07 01 1E 0F 1F 34 37 03 E1 F5 05 04 1D FC 2A 90 DB 8C 05
    C5 47 0D 1D B5 BF 04 00 BA 05 04 00 40 03 00 00 6F 04 00 00 5C DB 7E 01 5C DB 7E 01 EB 13
    00 00 15 2C 00 00 1B 01 00 00 FE 65 07 00 2A 32 45 0D 05 32
    """)

  @Test("UBX-HNR-PVT decoded field by field")
  func hnrPVTFields() throws {
    var found: UBXHNRPVT?
    let result = decodeUBX(Self.hnrPVT) { if case .hnrPVT(let m) = $0 { found = m } }
    let pvt = try #require(found)
    #expect(result.statistics.ubx.decoded == 1 && result.statistics.ubx.droppedFields == 0)
    #expect(pvt.iTOW == 228_730_100)
    #expect(pvt.timestamp?.description.hasPrefix("2024-01-30T15:31:52.100") == true)
    #expect(pvt.fixType == .gnssAndDeadReckoning && pvt.gnssFixOK && !pvt.differential)
    #expect(pvt.position.map { abs($0.latitude.decimalDegrees - 48.7409605) < 1e-12 } == true)
    #expect(pvt.position.map { abs($0.longitude.decimalDegrees - 9.3117328) < 1e-12 } == true)
    #expect(pvt.altitudeHAE == 311.221 && pvt.altitudeMSL == 263.61)
    #expect(pvt.groundSpeed == 0.832)
    #expect(pvt.headingOfMotion.map { abs($0 - 250.90908) < 1e-9 } == true)
    #expect(pvt.headingOfVehicle.map { abs($0 - 250.90908) < 1e-9 } == true)
    #expect(pvt.horizontalAccuracy == 5.099 && pvt.verticalAccuracy == 11.285)
    #expect(pvt.speedAccuracy == 0.283)
    #expect(pvt.headingAccuracy.map { abs($0 - 4.84862) < 1e-9 } == true)
    // Shorter than 72 bytes: refused.
    let short = ubxFrame(class: 0x28, id: 0x00, payload: Array(payload(of: Self.hnrPVT)[..<71]))
    #expect(decodeUBX(short).rejections == [.shortPayload])
  }

  @Test("HNR-PVT alone makes fixes at its own rate, as gpsd's TPVs of ublox-neo-m8l.log")
  func hnrPVTFixes() throws {
    var next = payload(of: Self.hnrPVT)
    next.replaceSubrange(0..<4, with: littleEndian(228_730_200))
    next.replaceSubrange(12..<16, with: littleEndian(200_000_005))
    let found = epochs(Self.hnrPVT + ubxFrame(class: 0x28, id: 0x00, payload: next))
    #expect(found.count == 2)
    let fix = try #require(found.first?.fix)
    #expect(fix.time == UTCTime(hour: 15, minute: 31, second: 52, nanoseconds: 100_000_000))
    #expect(
      found.last?.fix.time == UTCTime(hour: 15, minute: 31, second: 52, nanoseconds: 200_000_000))
    #expect(fix.date == UTCDate(year: 2024, month: 1, day: 30))
    #expect(fix.mode == .threeD && fix.leapSeconds == 18)
    // gpsd: "lat":48.740960500,"lon":9.311732800,"altHAE":311.2210,"altMSL":263.6100,
    // "epv":11.285,"track":250.9091,"speed":0.832,"epd":4.8486,"eps":0.28,"eph":5.099
    #expect(fix.latitude.map { abs($0 - 48.7409605) < 1e-12 } == true)
    #expect(fix.altitudeMSL == 263.61 && fix.altitudeHAE == 311.221)
    #expect(fix.speed == 0.832 && fix.course.map { abs($0 - 250.90908) < 1e-9 } == true)
    #expect(fix.horizontalAccuracy == 5.099 && fix.verticalAccuracy == 11.285)
    #expect(fix.speedAccuracy == 0.283)
  }

  /// The sample HNR-PVT at `iTOW` and the UTC time of day of it (2024-01-30).
  static func hnr(iTOW: UInt32, second: UInt8, milliseconds: Int32) -> [UInt8] {
    var bytes = payload(of: hnrPVT)
    bytes.replaceSubrange(0..<4, with: littleEndian(iTOW))
    bytes[10] = second
    bytes.replaceSubrange(12..<16, with: littleEndian(UInt32(bitPattern: milliseconds * 1_000_000)))
    return ubxFrame(class: 0x28, id: 0x00, payload: bytes)
  }

  @Test("HNR-PVT beside the navigation epoch: neither makes the other late")
  func hnrBesideNavigation() throws {
    func pvt(_ iTOW: UInt32, _ second: UInt8) -> [UInt8] {
      PVTGenerator.frame(
        iTOW: iTOW, year: 2024, month: 1, day: 30, hour: 15, minute: 31, second: second)
    }
    func end(_ iTOW: UInt32) -> [UInt8] {
      ubxFrame(class: 0x01, id: 0x61, payload: littleEndian(iTOW))
    }
    let dop = ubxFrame(
      class: 0x01, id: 0x04,
      payload: littleEndian(228_731_000) + [UInt8](repeating: 0x01, count: 14))
    // As the NEO-M8L writes them: the HNR-PVT of 15:31:53.000 before that second's navigation
    // epoch, and the one of 53.500 between its NAV-PVT and NAV-EOE.
    let bytes =
      pvt(228_730_000, 52) + end(228_730_000)
      + Self.hnr(iTOW: 228_730_500, second: 52, milliseconds: 500)
      + Self.hnr(iTOW: 228_731_000, second: 53, milliseconds: 0)
      + pvt(228_731_000, 53) + Self.hnr(iTOW: 228_731_500, second: 53, milliseconds: 500) + dop
      + end(228_731_000)
    var decoder = NMEADecoder()
    var found: [Epoch] = []
    decoder.decode(bytes) { if case .epoch(let epoch) = $0 { found.append(epoch) } }
    decoder.finish { if case .epoch(let epoch) = $0 { found.append(epoch) } }
    #expect(
      found.map { $0.fix.time } == [
        UTCTime(hour: 15, minute: 31, second: 52),
        UTCTime(hour: 15, minute: 31, second: 52, nanoseconds: 500_000_000),
        UTCTime(hour: 15, minute: 31, second: 53),
        UTCTime(hour: 15, minute: 31, second: 53, nanoseconds: 500_000_000),
      ])
    // 15:31:53 is the navigation epoch's: NAV-PVT's position (the sample's, −45.88°) and
    // NAV-DOP's view, nothing dropped as late.
    let navigation = try #require(found.count == 4 ? found[2] : nil)
    #expect(navigation.fix.latitude.map { abs($0 + 45.8775286) < 1e-12 } == true)
    #expect(navigation.satellites != nil)
    #expect(found[3].fix.latitude.map { abs($0 - 48.7409605) < 1e-12 } == true)
    #expect(decoder.statistics.builder.lateSentences == 0)
    #expect(decoder.statistics.builder.highRateSolutionsLeftToNavigation == 1)
  }

  /// gpsd 3.22's `wgs84_separation` (gpsd/geoid.c compiled on its own) at the corners, the
  /// poles, grid nodes, the corpus receivers' positions and random points: metres.
  static let gpsdSeparations: [(Double, Double, Double)] = [
    (90.000000000, 180.000000000, 14.9),
    (-90.000000000, -180.000000000, -30.149999999999999),
    (90.000000000, -180.000000000, 14.9),
    (-90.000000000, 180.000000000, -30.149999999999999),
    (0.000000000, 0.000000000, 17.23),
    (44.765440500, -68.806665100, -25.788524729375396),
    (44.068809596, -121.314309171, -22.154866000254788),
    (51.591017200, -0.024636400, 45.535637550450176),
    (48.740960500, 9.311732800, 46.090661165873279),
    (-45.877528600, 170.500130600, 5.1239005938762068),
    (89.990000000, 179.990000000, 14.888437759999993),
    (-89.990000000, -179.990000000, -30.161061600000004),
    (85.000000000, 175.000000000, 8.5600000000000005),
    (12.500000000, -7.500000000, 29.835000000000001),
    (-31.710102330, -125.694297387, -11.375062983762845),
    (27.168205147, -153.922936800, -7.824404347844343),
    (6.458760775, -48.351989911, -36.091116880102327),
    (-79.560193541, 2.676863948, -2.5975131670066305),
    (-83.250781480, -23.887553882, -14.040684774763562),
    (-77.426023757, -147.343315196, -54.278439983013783),
    (-13.586545954, 117.666764882, 12.821874888574929),
    (-67.715646993, -99.633972741, -24.69150569591126),
    (22.937980033, 161.175219285, 13.155612886985709),
    (13.878530751, -37.195029126, -10.612078374350652),
    (85.725919007, -163.230234978, 10.77411637080532),
    (64.524322629, -75.740656921, -26.695119133674392),
    (-64.034084996, -137.594794292, -39.039609446500265),
    (-34.473271662, 113.805489283, -35.111312641948516),
    (-57.469251614, 29.376058918, 31.638930184103526),
    (25.004424407, -45.936884619, -11.438208325402361),
  ]

  @Test("the geoid model is gpsd's to the last bit, and nothing outside the globe")
  func geoidModel() {
    #expect(GeoidModel.separationCentimetres.count == 37 * 73)
    for (latitude, longitude, separation) in Self.gpsdSeparations {
      #expect(
        GeoidModel.separation(latitude: latitude, longitude: longitude) == separation,
        "at \(latitude), \(longitude)")
    }
    #expect(GeoidModel.separation(latitude: 90.000001, longitude: 0) == nil)
    #expect(GeoidModel.separation(latitude: 0, longitude: -180.1) == nil)
    #expect(GeoidModel.separation(latitude: .nan, longitude: 0) == nil)
  }

  @Test("a height above the ellipsoid alone gets gpsd's geoid; the receiver's own stays")
  func geoidOnlyWhereNoneGiven() throws {
    // GGA without a separation: the model's, and the ellipsoidal height from it.
    let gga = wire("GPGGA,120000.00,4844.45763,N,00918.70397,E,1,08,1.0,263.610,M,,M,,")
    let fix = try #require(epochs(gga).first?.fix)
    let separation = try #require(fix.geoidSeparation)
    #expect(abs(separation - 46.0906) < 1e-4)
    #expect(fix.altitudeMSL == 263.61 && fix.altitudeHAE == 263.61 + separation)
    // With the receiver's separation, never the model.
    let own = wire("GPGGA,120000.00,4844.45763,N,00918.70397,E,1,08,1.0,263.610,M,47.6,M,,")
    #expect(epochs(own).first?.fix.geoidSeparation == 47.6)
  }
}
