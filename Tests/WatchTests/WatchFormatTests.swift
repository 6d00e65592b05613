import Foundation
import GPSDProtocol
import NMEA
import SerialGPS
import SerialPort
import Testing

@testable import serialgps

/// 47°22.61420' N, 8°32.50210' E, 408.3 m, 10 knots east: the fix of `epoch(_:)`.
func zurichFix(mode: FixMode = .threeD) -> Fix {
  var fix = Fix()
  fix.date = UTCDate(year: 2026, month: 3, day: 30)
  fix.time = UTCTime(hour: 12, minute: 0, second: 7, nanoseconds: 250_000_000)
  fix.mode = mode
  fix.position = Position(
    latitude: Coordinate(
      degrees: 47, scaledMinutes: 2_261_420, fractionDigits: 5, isNegative: false),
    longitude: Coordinate(
      degrees: 8, scaledMinutes: 3_250_210, fractionDigits: 5, isNegative: false))
  fix.altitudeMSL = 408.3
  fix.geoidSeparation = 47.4
  fix.speed = 5.144444
  fix.course = 90
  fix.climb = -0.25
  fix.satellitesUsed = 8
  fix.horizontalAccuracy = 2
  fix.verticalAccuracy = 2.5
  return fix
}

@Suite("serialgps watch: arguments")
struct WatchArgumentTests {
  func options(_ arguments: [String]) throws -> Watch.Options {
    guard case .options(let options) = Watch.parse(arguments) else {
      throw ParseFailure(result: "\(Watch.parse(arguments))")
    }
    return options
  }

  struct ParseFailure: Error {
    let result: String
  }

  func complaint(_ arguments: [String]) -> String? {
    if case .invalid(let message) = Watch.parse(arguments) { return message }
    return nil
  }

  @Test("defaults: automatic chipset and baud, no count, text, no linger")
  func defaults() throws {
    let parsed = try options(["/dev/ttyACM0"])
    #expect(parsed.device == "/dev/ttyACM0")
    guard case .automatic = parsed.receiver.chipset else {
      Issue.record("chipset \(parsed.receiver.chipset)")
      return
    }
    guard case .automatic = parsed.receiver.baudSetting else {
      Issue.record("baud \(parsed.receiver.baudSetting)")
      return
    }
    #expect(parsed.count == nil)
    #expect(!parsed.json)
    #expect(parsed.receiver.linger == .zero)
  }

  @Test("every option, in any order")
  func everyOption() throws {
    let parsed = try options([
      "--json", "--chipset", "mtk", "/dev/ttyUSB0", "--baud", "115200", "--count", "3",
      "--linger", "1.5",
    ])
    #expect(parsed.device == "/dev/ttyUSB0")
    guard case .family(.mediatek) = parsed.receiver.chipset else {
      Issue.record("chipset \(parsed.receiver.chipset)")
      return
    }
    #expect(parsed.receiver.baudSetting == .fixed(.b115200))
    #expect(parsed.count == 3)
    #expect(parsed.json)
    #expect(parsed.receiver.linger == .milliseconds(1500))
    #expect(try options(["x", "--baud", "auto"]).receiver.baudSetting == .automatic())
  }

  @Test("no device: parsed, for discovery to choose")
  func noDevice() throws {
    let parsed = try options(["--count", "3"])
    #expect(parsed.device == nil)
    #expect(parsed.count == 3)
  }

  @Test("wrong values are refused with what is accepted")
  func wrongValues() {
    #expect(complaint(["d", "--chipset", "garmin"])?.contains("ublox") == true)
    #expect(complaint(["d", "--baud", "12345"])?.contains("9600") == true)
    #expect(complaint(["d", "--baud", "fast"]) != nil)
    #expect(complaint(["d", "--count", "0"]) != nil)
    #expect(complaint(["d", "--count", "-2"]) != nil)
    #expect(complaint(["d", "--linger", "-1"]) != nil)
    #expect(complaint(["d", "--linger", "nan"]) != nil)
    #expect(complaint(["d", "--count"]) == "--count needs a number above 0")
    #expect(complaint(["d", "--verbose"])?.contains("--verbose") == true)
    #expect(complaint(["a", "b"])?.contains("one device") == true)
    guard case .help = Watch.parse(["d", "--help"]) else {
      Issue.record("--help not taken for help")
      return
    }
  }

  @Test("the same mistake gets the same message as in the other commands")
  func sharedMessages() {
    for mistake in [
      ["--baud", "12345"], ["--chipset", "garmin"], ["--linger", "-1"], ["--bogus"],
    ] {
      guard case .invalid(let served) = ServeOptions.parse(mistake) else {
        Issue.record("serve accepted \(mistake)")
        continue
      }
      // watch takes one name more than serve: it may probe the one device it is given.
      let expected =
        mistake.first == "--chipset"
        ? served.replacingOccurrences(of: " or auto", with: ", auto or probe") : served
      #expect(complaint(["d"] + mistake) == expected, "\(mistake)")
    }
    #expect(
      complaint(["d", "--chipset", "garmin"])
        == "unknown chipset 'garmin'; use nmea|ublox|mtk|sirf|casic|airoha, auto or probe")
    guard case .options(let options) = Watch.parse(["d", "--chipset", "probe"]),
      case .probe = options.receiver.chipset
    else {
      Issue.record("--chipset probe not taken")
      return
    }
  }

  @Test("--ubx: the UBX messages a u-blox receiver adds to its NMEA, none by default")
  func ubx() throws {
    #expect(try options(["d"]).receiver.ubx == .none)
    #expect(Watch.receiverOptions(try options(["d"])).ubxMessages == .none)
    #expect(try options(["d", "--ubx", "navigation"]).receiver.ubx == .navigation)
    #expect(try options(["d", "--ubx", "legacy"]).receiver.ubx == .legacyNavigation)
    #expect(try options(["d", "--ubx", "navigation", "--ubx", "off"]).receiver.ubx == .none)
    let driven = Watch.receiverOptions(try options(["d", "--ubx", "navigation"]))
    #expect(driven.ubxMessages == .navigation)
    #expect(
      complaint(["d", "--ubx", "pvt"])
        == "unknown --ubx 'pvt'; use navigation|legacy|off (navigation for u-blox 8 and later, "
        + "legacy for u-blox 6 and older)")
    #expect(complaint(["d", "--ubx"]) == "--ubx needs navigation|legacy|off")
  }
}

@Suite("serialgps watch: output")
struct WatchOutputTests {
  @Test("the line for people: every field, in a fixed order")
  func fixLine() {
    #expect(
      FixLine.describe(zurichFix())
        == "2026-03-30T12:00:07.250Z  3D  47.3769033  8.5417017  alt 408.3 m  speed 5.14 m/s"
        + "  sats 8  acc 2.0 m")
  }

  @Test("the line for people: unknowns are dashes, no position without a fix")
  func fixLineUnknowns() {
    var fix = Fix()
    fix.time = UTCTime(hour: 23, minute: 59, second: 59)
    fix.altitudeMSL = 408.3  // said without a fix: not shown
    #expect(
      FixLine.describe(fix) == "23:59:59.000Z  no fix  -  -  alt -  speed -  sats -  acc -")
    #expect(FixLine.describe(Fix()) == "-  no fix  -  -  alt -  speed -  sats -  acc -")
    var twoD = zurichFix(mode: .twoD)
    twoD.horizontalAccuracy = nil
    #expect(
      FixLine.describe(twoD)
        == "2026-03-30T12:00:07.250Z  2D  47.3769033  8.5417017  alt 408.3 m  speed 5.14 m/s"
        + "  sats 8  acc -")
  }

  @Test("the line for people: what corrections did, only when they did something")
  func fixLineCorrections() {
    let line =
      "2026-03-30T12:00:07.250Z  3D  47.3769033  8.5417017  alt 408.3 m  speed 5.14 m/s"
      + "  sats 8  acc 2.0 m"
    var fix = zurichFix()
    fix.quality = FixQuality(rawValue: 4)
    fix.differentialAge = 1.4
    fix.differentialStation = 0
    #expect(FixLine.describe(fix) == line + "  RTK fixed (corrections 1.4 s old)")
    fix.quality = FixQuality(rawValue: 5)
    fix.differentialAge = nil
    #expect(FixLine.describe(fix) == line + "  RTK float")
    fix.quality = FixQuality(rawValue: 2)
    #expect(FixLine.describe(fix) == line + "  DGPS")
    fix.quality = FixQuality(rawValue: 1)
    #expect(FixLine.describe(fix) == line)
  }

  @Test("the line for people: no minus on what rounds to zero")
  func fixLineZero() {
    var fix = zurichFix()
    fix.speed = -0.001
    fix.altitudeMSL = -0.04
    #expect(
      FixLine.describe(fix)
        == "2026-03-30T12:00:07.250Z  3D  47.3769033  8.5417017  alt 0.0 m  speed 0.00 m/s"
        + "  sats 8  acc 2.0 m")
  }

  /// The TPV line `watch --json` prints for `fix` from `device`, without its newline.
  func tpv(_ fix: Fix, device: String = "/dev/ttyACM0") -> String {
    var reports = ReportLines(device: device)
    let bytes = reports.tpv(fix)
    #expect(bytes.last == 0x0A)
    return String(decoding: bytes.dropLast(), as: UTF8.self)
  }

  @Test("TPV: the server's encoder, with the device, geoid separation and gpsd's decimals")
  func tpv3D() throws {
    let line = tpv(zurichFix())
    #expect(
      line
        == "{\"class\":\"TPV\",\"device\":\"/dev/ttyACM0\",\"mode\":3,"
        + "\"time\":\"2026-03-30T12:00:07.250Z\",\"lat\":47.376903333,\"lon\":8.541701667,"
        + "\"altHAE\":455.7000,\"altMSL\":408.3000,\"alt\":408.3000,\"epv\":2.500,"
        + "\"track\":90.0000,\"speed\":5.144,\"climb\":-0.250,\"geoidSep\":47.400,"
        + "\"eph\":2.000}")
    let object = try #require(
      try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
    #expect(object["lat"] as? Double == 47.376903333)
    #expect(object["altHAE"] as? Double == 455.7)
    // The line `serve` sends for the same fix from the same device.
    var writer = JSONWriter()
    writer.tpv(zurichFix(), device: "/dev/ttyACM0")
    #expect(line == writer.text)
  }

  @Test("TPV: what the old watch-only line left out: status, epx/epy, magvar, 2D altitudes")
  func tpvFields() throws {
    var fix = zurichFix(mode: .twoD)
    fix.quality = .differential
    fix.latitudeError = 1.5
    fix.longitudeError = 1.25
    fix.magneticVariation = -2
    fix.climb = -0.0001  // rounds to zero: no "-0.000"
    let twoD = tpv(fix)
    for present in [
      "\"status\":2", "\"epx\":1.250", "\"epy\":1.500", "\"magvar\":-2.0",
      "\"altMSL\":408.3000", "\"lat\":47.376903333",
    ] {
      #expect(twoD.contains(present), "\(present) not in \(twoD)")
    }
    #expect(!twoD.contains("climb"), "climb only in 3D, as gpsd: \(twoD)")
    var threeD = fix
    threeD.mode = .threeD
    #expect(tpv(threeD).contains("\"climb\":0.000,"))
    #expect(!tpv(threeD).contains("-0.000"))
    _ = try JSONSerialization.jsonObject(with: Data(twoD.utf8))
  }

  @Test("TPV: no position without a fix; a time of day alone is no instant")
  func tpvWithoutFix() {
    var noFix = Fix()
    noFix.date = UTCDate(year: 2026, month: 3, day: 30)
    noFix.time = UTCTime(hour: 0, minute: 0, second: 0)
    #expect(
      tpv(noFix, device: "/dev/ttyUSB0")
        == "{\"class\":\"TPV\",\"device\":\"/dev/ttyUSB0\",\"mode\":1,"
        + "\"time\":\"2026-03-30T00:00:00.000Z\"}")
    var undated = Fix()
    undated.time = UTCTime(hour: 1, minute: 2, second: 3)
    #expect(!tpv(undated).contains("time"))
  }
}
