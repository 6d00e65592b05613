import Foundation
import Testing

@testable import GPSDProtocol
@testable import NMEA

@Suite("gpsd reports")
struct ReportTests {
  /// 44°04.14063' N, 121°18.85478' W, as the neo-m8n log has it.
  static let position = Position(
    latitude: Coordinate(degrees: 44, scaledMinutes: 414_063, fractionDigits: 5, isNegative: false),
    longitude: Coordinate(
      degrees: 121, scaledMinutes: 1_885_478, fractionDigits: 5, isNegative: true))

  static func threeDFix() -> Fix {
    var fix = Fix()
    fix.time = UTCTime(hour: 17, minute: 19, second: 26, nanoseconds: 120_000_000)
    fix.date = UTCDate(year: 2015, month: 3, day: 18)
    fix.mode = .threeD
    fix.quality = .differential
    fix.position = position
    fix.altitudeMSL = 1147.2
    fix.geoidSeparation = -21.3
    fix.speed = 0.117 * 1852 / 3600
    fix.course = 37.5
    fix.climb = -0.2
    fix.magneticVariation = -1.0
    fix.latitudeError = 1.5
    fix.longitudeError = 2.25
    fix.horizontalAccuracy = (1.5 * 1.5 + 2.25 * 2.25).squareRoot()
    fix.verticalAccuracy = 3.0
    fix.differentialAge = 6.05
    fix.differentialStation = 133
    return fix
  }

  func tpv(_ fix: Fix, device: String? = nil, leapSeconds: Int? = nil) -> String {
    var writer = JSONWriter()
    writer.tpv(fix, device: device, leapSeconds: leapSeconds)
    return writer.text
  }

  @Test("a TPV with everything known: gpsd's names, order, units and decimals")
  func fullTPV() throws {
    let text = tpv(Self.threeDFix(), device: "/dev/ttyACM0", leapSeconds: 18)
    #expect(
      text == "{\"class\":\"TPV\",\"device\":\"/dev/ttyACM0\",\"status\":2,\"mode\":3,"
        + "\"time\":\"2015-03-18T17:19:26.120Z\",\"leapseconds\":18,"
        + "\"lat\":44.069010500,\"lon\":-121.314246333,"
        + "\"altHAE\":1125.9000,\"altMSL\":1147.2000,\"alt\":1147.2000,"
        + "\"epx\":2.250,\"epy\":1.500,\"epv\":3.000,\"track\":37.5000,\"magvar\":-1.0,"
        + "\"speed\":0.060,\"climb\":-0.200,\"geoidSep\":-21.300,\"eph\":2.704,"
        + "\"dgpsAge\":6.0,\"dgpsSta\":133}")
    let object = try #require(parseJSON(text) as? [String: Any])
    #expect(object["speed"] as? Double == 0.06, "knots are converted to metres per second")
  }

  @Test("Garmin's spherical error is sep, after eph; the datum follows the climb, as in gpsd")
  func sepAndDatum() {
    var fix = Self.threeDFix()
    fix.sphericalAccuracy = 42.6
    fix.datum = "WGS 84"
    let text = tpv(fix)
    #expect(text.contains("\"climb\":-0.200,\"datum\":\"WGS 84\",\"geoidSep\":-21.300,"))
    #expect(text.contains("\"eph\":2.704,\"sep\":42.600,"))
    fix.mode = .noFix
    #expect(!tpv(fix).contains("sep") && !tpv(fix).contains("datum"))
  }

  @Test("an empty fix says only that there is no fix")
  func emptyTPV() {
    #expect(tpv(Fix()) == "{\"class\":\"TPV\",\"mode\":1}")
  }

  @Test("without a fix, nothing about a position is sent, even if the fix holds one")
  func noFixHidesPosition() {
    var fix = Self.threeDFix()
    fix.mode = .noFix
    fix.quality = .invalid
    let text = tpv(fix)
    #expect(text == "{\"class\":\"TPV\",\"mode\":1,\"time\":\"2015-03-18T17:19:26.120Z\"}")
  }

  @Test("2D fixes carry no climb or geoid separation, as in gpsd")
  func twoD() {
    var fix = Self.threeDFix()
    fix.mode = .twoD
    let text = tpv(fix)
    #expect(!text.contains("climb") && !text.contains("geoidSep"))
    #expect(text.contains("\"lat\":44.069010500"))
  }

  @Test("a time without a date is left out; DGPS age without station too")
  func partialValues() {
    var fix = Self.threeDFix()
    fix.date = nil
    fix.differentialStation = nil
    let text = tpv(fix)
    #expect(!text.contains("\"time\""))
    #expect(!text.contains("dgps"))
  }

  @Test("status follows the GGA quality, else the mode indicator; GPS and unknown are not sent")
  func status() {
    func status(quality: FixQuality?, mode: ModeIndicator?) -> Int? {
      var fix = Fix()
      fix.quality = quality
      fix.modeIndicator = mode
      return GPSDStatus.code(for: fix)
    }
    #expect(status(quality: .gps, mode: nil) == GPSDStatus.gps)
    #expect(status(quality: .rtkFixed, mode: nil) == GPSDStatus.rtkFixed)
    #expect(status(quality: .rtkFloat, mode: nil) == GPSDStatus.rtkFloat)
    #expect(status(quality: .deadReckoning, mode: nil) == GPSDStatus.deadReckoning)
    #expect(status(quality: .pps, mode: nil) == GPSDStatus.ppsFix)
    #expect(status(quality: nil, mode: .differential) == GPSDStatus.differential)
    #expect(status(quality: nil, mode: .estimated) == GPSDStatus.deadReckoning)
    #expect(status(quality: nil, mode: nil) == nil)
    var fix = Self.threeDFix()
    fix.quality = .gps
    #expect(!tpv(fix).contains("status"))
    fix.quality = .rtkFixed
    #expect(tpv(fix).contains("\"status\":3,"))
  }

  @Test("latitude and longitude come from the exact minutes, correctly rounded")
  func exactCoordinates() {
    // 8 decimal minutes: 12°34.56789013' S = -12.5761315021666…°, rounded at the ninth decimal.
    let rtk = Coordinate(
      degrees: 12, scaledMinutes: 3_456_789_013, fractionDigits: 8, isNegative: true)
    #expect(DecimalText.degrees(rtk, decimals: 9) == "-12.576131502")
    // 0°00.00003' south: -0.0000005 degrees, rounds to even (zero), printed without a sign.
    let tiny = Coordinate(degrees: 0, scaledMinutes: 3, fractionDigits: 5, isNegative: true)
    #expect(DecimalText.degrees(tiny, decimals: 6) == "0.000000")
    #expect(DecimalText.degrees(tiny, decimals: 7) == "-0.0000005")
    let pole = Coordinate(degrees: 90, scaledMinutes: 0, fractionDigits: 4, isNegative: false)
    #expect(DecimalText.degrees(pole, decimals: 9) == "90.000000000")
  }

  static func view() -> SatelliteView {
    // Built directly (the memberwise initialisers are internal to NMEA): the encoder is what
    // is tested here, not the fix builder.
    let satellites = [
      Satellite(
        constellation: .gps, prn: 7, svid: 7, signalID: 1, elevation: 45, azimuth: 120, snr: 38,
        used: true),
      Satellite(
        constellation: .galileo, prn: 312, svid: 12, signalID: 2, elevation: 61, azimuth: 237,
        snr: nil, used: false),
      Satellite(
        constellation: .glonass, prn: 66, svid: 2, signalID: 3, elevation: 91, azimuth: 360,
        snr: 20, used: true),
      Satellite(
        constellation: nil, prn: 250, svid: 250, signalID: nil, elevation: nil, azimuth: nil,
        snr: nil, used: false),
    ]
    return SatelliteView(
      time: UTCTime(hour: 1, minute: 2, second: 3), satellites: satellites, hdop: 0.91,
      vdop: 1.27, pdop: 1.564)
  }

  @Test("a SKY with satellites: PRN, gnssid, svid, u-blox sigid, az, el, ss, used")
  func sky() throws {
    var writer = JSONWriter()
    let time = UTCTimestamp(
      date: UTCDate(year: 2026, month: 11, day: 30), time: UTCTime(hour: 1, minute: 2, second: 3))
    writer.sky(Self.view(), time: time, device: "/dev/ttyUSB0")
    #expect(
      writer.text == "{\"class\":\"SKY\",\"device\":\"/dev/ttyUSB0\","
        + "\"time\":\"2026-11-30T01:02:03.000Z\",\"hdop\":0.91,\"pdop\":1.56,\"vdop\":1.27,"
        + "\"nSat\":4,\"uSat\":2,\"satellites\":["
        + "{\"PRN\":7,\"gnssid\":0,\"svid\":7,\"sigid\":0,\"az\":120.0,\"el\":45.0,\"ss\":38.0,"
        + "\"used\":true},"
        + "{\"PRN\":312,\"gnssid\":2,\"svid\":12,\"sigid\":5,\"az\":237.0,\"el\":61.0,"
        + "\"used\":false},"
        // Out-of-range angles are dropped as gpsd drops them.
        + "{\"PRN\":66,\"gnssid\":6,\"svid\":2,\"sigid\":2,\"ss\":20.0,\"used\":true},"
        + "{\"PRN\":250,\"used\":false}]}")
    let object = try #require(parseJSON(writer.text) as? [String: Any])
    #expect((object["satellites"] as? [Any])?.count == 4)
  }

  @Test("a SKY without satellites in view (GSA only) gives uSat from the fix, no nSat")
  func skyWithoutSatellites() {
    var writer = JSONWriter()
    let view = SatelliteView(time: nil, satellites: [], hdop: 1.2, vdop: nil, pdop: nil)
    writer.sky(view, satellitesUsed: 9)
    #expect(writer.text == "{\"class\":\"SKY\",\"hdop\":1.20,\"uSat\":9}")
  }

  @Test("NMEA signal IDs map to u-blox signal IDs per system")
  func signals() {
    #expect(GPSDSignal.ubloxSignalID(nmeaSignalID: 6, constellation: .gps) == 3)  // L2 CL
    #expect(GPSDSignal.ubloxSignalID(nmeaSignalID: 8, constellation: .gps) == 7)  // L5 Q
    #expect(GPSDSignal.ubloxSignalID(nmeaSignalID: 1, constellation: .galileo) == 3)  // E5a
    #expect(GPSDSignal.ubloxSignalID(nmeaSignalID: 7, constellation: .galileo) == 0)  // E1
    #expect(GPSDSignal.ubloxSignalID(nmeaSignalID: 3, constellation: .glonass) == 2)  // L2 OF
    #expect(GPSDSignal.ubloxSignalID(nmeaSignalID: 11, constellation: .beidou) == 2)  // B2I
    #expect(GPSDSignal.ubloxSignalID(nmeaSignalID: 4, constellation: .beidou) == nil)
  }

  @Test("the report writer serves the server's other classes, nested ones included")
  func otherClasses() throws {
    var writer = JSONWriter()
    writer.version(release: "3.25", revision: "serialgps 0.1", protocolMajor: 3, protocolMinor: 15)
    writer.newline(crlf: true)
    writer.report("DEVICES") { json in
      json.key("devices")
      json.beginArray()
      for path in ["/dev/ttyACM0", "/dev/ttyUSB0"] {
        json.report("DEVICE") { device in
          device.member("path", path)
          device.member("driver", "NMEA0183")
        }
      }
      json.endArray()
    }
    writer.newline(crlf: true)
    writer.error("unrecognized request '?FOO'")
    writer.newline(crlf: true)
    let lines = writer.text.split(separator: "\r\n").map(String.init)
    #expect(
      lines == [
        "{\"class\":\"VERSION\",\"release\":\"3.25\",\"rev\":\"serialgps 0.1\","
          + "\"proto_major\":3,\"proto_minor\":15}",
        "{\"class\":\"DEVICES\",\"devices\":[{\"class\":\"DEVICE\",\"path\":\"/dev/ttyACM0\","
          + "\"driver\":\"NMEA0183\"},{\"class\":\"DEVICE\",\"path\":\"/dev/ttyUSB0\","
          + "\"driver\":\"NMEA0183\"}]}",
        "{\"class\":\"ERROR\",\"message\":\"unrecognized request '?FOO'\"}",
      ])
    for line in lines { #expect(parseJSON(line) is [String: Any]) }
  }
}
