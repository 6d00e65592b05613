import Testing

@testable import GPSDProtocol
@testable import NMEA

// What u-blox binary messages add to TPV and SKY, under gpsd 3.27's names, in its order and
// with its decimals: each expectation is a line of gpsd's own output in corpus/gpsd-ubx,
// without the members gpsd invents (`ept`, `epc`, `magtrack`) or that come from
// messages SerialGPS does not decode (`errEll*`, `clockbias`).

@Suite("gpsd reports of u-blox binary fixes")
struct UBXReportTests {
  func tpv(_ fix: Fix) -> String {
    var writer = JSONWriter()
    writer.tpv(fix)
    return writer.text
  }

  /// The first epoch of ublox-zed-f9p-hp.log as gpsd reports it.
  static func zedF9PFix() -> Fix {
    var fix = Fix()
    fix.date = UTCDate(year: 2019, month: 4, day: 22)
    fix.time = UTCTime(hour: 21, minute: 19, second: 21)
    fix.mode = .threeD
    fix.leapSeconds = 18
    fix.position = Position(
      latitude: Coordinate(scaledDegrees: -45_877_525_179, digits: 9),
      longitude: Coordinate(scaledDegrees: 170_500_132_760, digits: 9))
    fix.altitudeMSL = 27.548
    fix.geoidSeparation = 29.338 - 27.548
    fix.verticalAccuracy = 12.851
    fix.course = 217.8765
    fix.magneticVariation = 25.7
    fix.speed = 0.307
    fix.climb = 0.104
    fix.speedAccuracy = 18.0
    fix.ecefPosition = ECEFVector(x: -4_387_121.2267, y: 734_141.8624, z: -4_555_801.6948)
    fix.ecefVelocity = ECEFVector(x: -0.24, y: -0.03, z: 0.19)
    fix.ecefPositionAccuracy = 19.2708
    fix.ecefVelocityAccuracy = 1.05
    fix.horizontalAccuracy = 14.36
    fix.sphericalAccuracy = 23.75
    return fix
  }

  @Test("TPV: eps, ecef*, ecefpAcc, ecefvAcc and leapseconds where gpsd puts them")
  func ecefAndAccuracies() {
    // gpsd: {"class":"TPV","mode":3,"time":"2019-04-22T21:19:21.000Z","leapseconds":18,
    // "ept":0.005,"lat":-45.877525179,… "eps":18.00,"epc":25.75,"ecefx":-4387121.2267,…}
    #expect(
      tpv(Self.zedF9PFix())
        == "{\"class\":\"TPV\",\"mode\":3,\"time\":\"2019-04-22T21:19:21.000Z\",\"leapseconds\":18,"
        + "\"lat\":-45.877525179,\"lon\":170.500132760,\"altHAE\":29.3380,\"altMSL\":27.5480,"
        + "\"alt\":27.5480,\"epv\":12.851,\"track\":217.8765,\"magvar\":25.7,\"speed\":0.307,"
        + "\"climb\":0.104,\"eps\":18.00,\"ecefx\":-4387121.2267,\"ecefy\":734141.8624,"
        + "\"ecefz\":-4555801.6948,\"ecefvx\":-0.24,\"ecefvy\":-0.03,\"ecefvz\":0.19,"
        + "\"ecefpAcc\":19.2708,\"ecefvAcc\":1.0500,\"geoidSep\":1.790,\"eph\":14.360,"
        + "\"sep\":23.750}")
  }

  @Test("TPV: epd after the climb, velN/velE/velD before geoidSep, RTK status from quality")
  func courseAccuracyAndVelocity() {
    var fix = Fix()
    fix.date = UTCDate(year: 2024, month: 1, day: 30)
    fix.time = UTCTime(hour: 15, minute: 31, second: 52, nanoseconds: 100_000_000)
    fix.mode = .threeD
    fix.quality = FixQuality(rawValue: 5)  // RTK float
    fix.speed = 0.832
    fix.courseAccuracy = 4.8486
    fix.speedAccuracy = 0.28
    fix.velocityNED = ECEFVector(x: 0.002, y: 0.003, z: 0.017)
    #expect(
      tpv(fix)
        == "{\"class\":\"TPV\",\"status\":4,\"mode\":3,\"time\":\"2024-01-30T15:31:52.100Z\","
        + "\"speed\":0.832,\"epd\":4.8486,\"eps\":0.28,\"velN\":0.002,\"velE\":0.003,"
        + "\"velD\":0.017}")
    fix.quality = FixQuality(rawValue: 4)
    #expect(tpv(fix).hasPrefix("{\"class\":\"TPV\",\"status\":3,"), "RTK fixed is gpsd's 3")
  }

  @Test("TPV: antPwr and jam as gpsd prints a NEO-M9V's MON-RF; an open antenna is ant 2")
  func antennaAndJamming() {
    var fix = Fix()
    fix.antennaStatus = .ok
    fix.antennaPower = .on
    fix.jammingIndicator = 23
    // gpsd (ublox-neo-f9v.log): …,"sep":4.560,"antPwr":2,"jam":23,… and no `ant` for OK.
    #expect(tpv(fix) == "{\"class\":\"TPV\",\"mode\":1,\"antPwr\":2,\"jam\":23}")
    fix.antennaStatus = .open
    fix.antennaPower = .off
    #expect(tpv(fix) == "{\"class\":\"TPV\",\"mode\":1,\"ant\":2,\"antPwr\":1,\"jam\":23}")
    fix.antennaStatus = .short
    fix.antennaPower = .unknown
    fix.jammingIndicator = nil
    #expect(tpv(fix) == "{\"class\":\"TPV\",\"mode\":1,\"ant\":3}")
  }

  @Test("a TPV of these members reads back to the same fix")
  func readBack() throws {
    var fix = Self.zedF9PFix()
    fix.courseAccuracy = 4.8486
    fix.velocityNED = ECEFVector(x: 0.002, y: 0.003, z: 0.017)
    fix.antennaStatus = .short
    fix.antennaPower = .on
    fix.jammingIndicator = 200
    let text = tpv(fix)
    guard case .tpv(let read, _)? = GPSDReport(json: Array(text.utf8)) else {
      Issue.record("not read back: \(text)")
      return
    }
    #expect(read.leapSeconds == 18 && read.speedAccuracy == 18 && read.courseAccuracy == 4.8486)
    #expect(read.ecefPosition == fix.ecefPosition && read.ecefVelocity == fix.ecefVelocity)
    #expect(read.ecefPositionAccuracy == 19.2708 && read.ecefVelocityAccuracy == 1.05)
    #expect(read.velocityNED == fix.velocityNED)
    #expect(
      read.antennaStatus == .short && read.antennaPower == .on && read.jammingIndicator == 200)
    var again = JSONWriter()
    again.tpv(read)
    #expect(again.text == text)
  }

  @Test("SKY: gdop, tdop, xdop (east) and ydop (north) in gpsd's order")
  func dops() {
    // gpsd: {"class":"SKY","gdop":1.41,"hdop":0.77,"pdop":1.25,"tdop":0.65,"xdop":0.48,
    // "ydop":0.60,"vdop":0.99}
    let view = SatelliteView(
      satellites: [], hdop: 0.77, vdop: 0.99, pdop: 1.25, gdop: 1.41, tdop: 0.65, edop: 0.48,
      ndop: 0.60)
    var writer = JSONWriter()
    writer.sky(view)
    #expect(
      writer.text
        == "{\"class\":\"SKY\",\"gdop\":1.41,\"hdop\":0.77,\"pdop\":1.25,\"tdop\":0.65,"
        + "\"xdop\":0.48,\"ydop\":0.60,\"vdop\":0.99}")
    guard case .sky(let read, _, _, _)? = GPSDReport(json: Array(writer.text.utf8)) else {
      Issue.record("not read back")
      return
    }
    #expect(read == view)
  }

  @Test("SKY satellites from NAV-SAT: prRes, qual and health where gpsd 3.27 puts them")
  func satelliteMembers() {
    // gpsd (u-blox-m8t-time.log): {"PRN":4,"gnssid":0,"svid":4,"az":216.0,"el":48.0,
    // "prRes":-16.4,"qual":7,"ss":25.0,"used":true,"health":1}
    let view = SatelliteView(satellites: [
      Satellite(
        constellation: .gps, prn: 4, svid: 4, elevation: 48, azimuth: 216, snr: 25, used: true,
        pseudorangeResidual: -16.4, quality: 7, health: 1),
      Satellite(
        constellation: .qzss, prn: 193, svid: 1, azimuth: 0, snr: 0, used: false,
        pseudorangeResidual: 0, quality: 1, health: 2),
    ])
    var writer = JSONWriter()
    writer.sky(view)
    #expect(
      writer.text
        == "{\"class\":\"SKY\",\"nSat\":2,\"uSat\":1,\"satellites\":["
        + "{\"PRN\":4,\"gnssid\":0,\"svid\":4,\"az\":216.0,\"el\":48.0,\"prRes\":-16.4,"
        + "\"qual\":7,\"ss\":25.0,\"used\":true,\"health\":1},"
        + "{\"PRN\":193,\"gnssid\":5,\"svid\":1,\"az\":0.0,\"prRes\":0.0,\"qual\":1,"
        + "\"ss\":0.0,\"used\":false,\"health\":2}]}")
    guard case .sky(let read, _, _, _)? = GPSDReport(json: Array(writer.text.utf8)) else {
      Issue.record("not read back")
      return
    }
    #expect(read == view)
  }

  @Test("a fix without the u-blox members prints exactly as before")
  func nmeaUnchanged() {
    var fix = Fix()
    fix.mode = .twoD
    fix.speed = 1
    #expect(tpv(fix) == "{\"class\":\"TPV\",\"mode\":2,\"speed\":1.000}")
    #expect(Fix() == Fix(), "unreported members equal themselves")
  }
}
