import NMEA

// The TPV and SKY reports written by this module (Reports.swift), read back into the values
// they were written from: for consumers that receive the reports over the network (the fleet
// topics of the MQTT bridge) and want the same `Fix` and `SatelliteView` a local receiver
// gives. Reading then writing again gives the same bytes (tests check it on every fixture),
// with one loss: an ellipsoidal altitude without a mean-sea-level one (`altHAE` alone, which
// only `$PUBX,00` gives) cannot be carried by a public `Fix` and is left out.

/// A TPV or SKY report read back from gpsd JSON.
public enum GPSDReport: Sendable, Hashable {
  /// A `TPV` report: the fix, and the device it names (if any).
  case tpv(Fix, device: String?)
  /// A `SKY` report: the satellites, its date and time, and `uSat` (which a report without a
  /// satellite list carries alone).
  case sky(SatelliteView, time: UTCTimestamp?, satellitesUsed: Int?, device: String?)

  /// Reads one report object (a line without its newline). `nil` for anything that is not a
  /// well-formed TPV or SKY report: other classes, invalid JSON, values of the wrong type or
  /// out of range, text after the object.
  public init?(json bytes: [UInt8]) {
    guard case .value(let value, let end) = JSONReader.read(bytes),
      bytes[end...].allSatisfy({ $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }),
      case .string(let className)? = value.member("class")
    else { return nil }
    switch className {
    case "TPV":
      guard let fix = Self.fix(fromTPV: value) else { return nil }
      self = .tpv(fix, device: value.member("device")?.text)
    case "SKY":
      guard let sky = Self.sky(value) else { return nil }
      self = .sky(
        sky.view, time: sky.time, satellitesUsed: sky.used, device: value.member("device")?.text)
    default:
      return nil
    }
  }

  static func fix(fromTPV report: JSONValue) -> Fix? {
    var fix = Fix()
    guard let modeNumber = report.member("mode")?.integer,
      let mode = FixMode(rawValue: UInt8(clamping: modeNumber))
    else { return nil }
    fix.mode = mode
    if let text = report.member("time") {
      guard let timestamp = text.timestamp else { return nil }
      fix.date = timestamp.date
      fix.time = timestamp.time
    }
    if let status = report.member("status") {
      guard let code = status.integer else { return nil }
      fix.quality = GPSDStatus.quality(for: code)
    }
    if let latitude = report.member("lat"), let longitude = report.member("lon") {
      guard let lat = latitude.coordinate(limit: 90), let lon = longitude.coordinate(limit: 180)
      else { return nil }
      fix.position = Position(latitude: lat, longitude: lon)
    }
    let altitudeHAE = report.member("altHAE")?.number
    fix.altitudeMSL = report.member("altMSL")?.number
    // The writer computes altHAE from MSL and the geoid separation: this gives it back exactly.
    if let altitudeHAE, let altitudeMSL = fix.altitudeMSL {
      fix.geoidSeparation = altitudeHAE - altitudeMSL
    } else {
      fix.geoidSeparation = report.member("geoidSep")?.number
    }
    fix.longitudeError = report.member("epx")?.number
    fix.latitudeError = report.member("epy")?.number
    fix.verticalAccuracy = report.member("epv")?.number
    fix.course = report.member("track")?.number
    fix.magneticVariation = report.member("magvar")?.number
    fix.speed = report.member("speed")?.number
    fix.climb = report.member("climb")?.number
    fix.horizontalAccuracy = report.member("eph")?.number
    fix.sphericalAccuracy = report.member("sep")?.number
    fix.datum = report.member("datum")?.text
    if let age = report.member("dgpsAge")?.number, let station = report.member("dgpsSta")?.integer {
      fix.differentialAge = age
      fix.differentialStation = station
    }
    fix.leapSeconds = report.member("leapseconds")?.integer
    fix.courseAccuracy = report.member("epd")?.number
    fix.speedAccuracy = report.member("eps")?.number
    fix.ecefPosition = vector(report, "ecefx", "ecefy", "ecefz")
    fix.ecefVelocity = vector(report, "ecefvx", "ecefvy", "ecefvz")
    fix.ecefPositionAccuracy = report.member("ecefpAcc")?.number
    fix.ecefVelocityAccuracy = report.member("ecefvAcc")?.number
    fix.velocityNED = vector(report, "velN", "velE", "velD")
    fix.antennaStatus = report.member("ant")?.integer.flatMap(GPSDAntenna.status(code:))
    fix.antennaPower = report.member("antPwr")?.integer.flatMap(GPSDAntenna.power(code:))
    fix.jammingIndicator = report.member("jam")?.integer
    return fix
  }

  static func vector(_ report: JSONValue, _ x: String, _ y: String, _ z: String) -> ECEFVector? {
    guard let x = report.member(x)?.number, let y = report.member(y)?.number,
      let z = report.member(z)?.number
    else { return nil }
    return ECEFVector(x: x, y: y, z: z)
  }

  static func sky(_ report: JSONValue) -> (view: SatelliteView, time: UTCTimestamp?, used: Int?)? {
    var time: UTCTimestamp?
    if let text = report.member("time") {
      guard let timestamp = text.timestamp else { return nil }
      time = timestamp
    }
    var satellites: [Satellite] = []
    if let list = report.member("satellites") {
      guard case .array(let elements) = list, elements.count <= 1024 else { return nil }
      satellites.reserveCapacity(elements.count)
      for element in elements {
        guard let satellite = Self.satellite(element) else { return nil }
        satellites.append(satellite)
      }
    }
    let view = SatelliteView(
      time: time?.time, satellites: satellites, hdop: report.member("hdop")?.number,
      vdop: report.member("vdop")?.number, pdop: report.member("pdop")?.number,
      gdop: report.member("gdop")?.number, tdop: report.member("tdop")?.number,
      edop: report.member("xdop")?.number, ndop: report.member("ydop")?.number)
    return (view, time, report.member("uSat")?.integer)
  }

  static func satellite(_ element: JSONValue) -> Satellite? {
    guard let prn = element.member("PRN")?.integer else { return nil }
    var constellation: Constellation?
    var signalID: Int?
    if let gnss = element.member("gnssid")?.integer {
      guard let known = Constellation(rawValue: UInt8(clamping: gnss)) else { return nil }
      constellation = known
      if let sigid = element.member("sigid")?.integer {
        signalID = GPSDSignal.nmeaSignalID(ubloxSignalID: sigid, constellation: known)
      }
    }
    return Satellite(
      constellation: constellation, prn: prn, svid: element.member("svid")?.integer ?? prn,
      signalID: signalID, elevation: element.member("el")?.wholeNumber,
      azimuth: element.member("az")?.wholeNumber, snr: element.member("ss")?.wholeNumber,
      used: element.member("used")?.boolean ?? false,
      pseudorangeResidual: element.member("prRes")?.number,
      quality: element.member("qual")?.integer, health: element.member("health")?.integer)
  }
}

extension GPSDStatus {
  /// The GGA quality that ``code(for:)`` turns into `status`; `nil` for codes it never
  /// writes.
  public static func quality(for status: Int) -> FixQuality? {
    switch status {
    case unknown: return FixQuality(rawValue: 0)
    case gps: return FixQuality(rawValue: 1)
    case differential: return FixQuality(rawValue: 2)
    case ppsFix: return FixQuality(rawValue: 3)
    case rtkFixed: return FixQuality(rawValue: 4)
    case rtkFloat: return FixQuality(rawValue: 5)
    case deadReckoning: return FixQuality(rawValue: 6)
    case timeOnly: return FixQuality(rawValue: 7)
    case simulated: return FixQuality(rawValue: 8)
    default: return nil
    }
  }
}

extension GPSDSignal {
  /// The NMEA signal ID that ``ubloxSignalID(nmeaSignalID:constellation:)`` turns into
  /// `sigid` (the first, where two share one), or `nil`.
  public static func nmeaSignalID(ubloxSignalID: Int, constellation: Constellation) -> Int? {
    (0...15).first {
      Self.ubloxSignalID(nmeaSignalID: $0, constellation: constellation) == ubloxSignalID
    }
  }
}

extension JSONValue {
  var text: String? {
    if case .string(let text) = self { return text }
    return nil
  }

  var number: Double? {
    if case .number(let value) = self, value.isFinite { return value }
    return nil
  }

  var boolean: Bool? {
    if case .bool(let value) = self { return value }
    return nil
  }

  /// A whole number in a range every field here fits.
  var integer: Int? {
    guard let value = number, value == value.rounded(), abs(value) <= 1e15 else { return nil }
    return Int(value)
  }

  /// A number written with one decimal (`"az":119.0`) as the whole number it came from.
  var wholeNumber: Int? {
    guard let value = number, abs(value) <= 1e9 else { return nil }
    return Int(value.rounded())
  }

  /// Decimal degrees written with nine decimals, as the exact angle they stand for: whole
  /// degrees and the fraction's nine digits as minutes scaled by 10^9 (×60).
  func coordinate(limit: Double) -> Coordinate? {
    guard let value = number, abs(value) <= limit else { return nil }
    let magnitude = abs(value)
    var degrees = magnitude.rounded(.down)
    // At most 1.8e11 < 2^53: the nearest double to nine decimals comes back as its digits.
    var billionths = ((magnitude - degrees) * 1e9).rounded()
    if billionths >= 1e9 {
      degrees += 1
      billionths -= 1e9
    }
    return Coordinate(
      degrees: UInt16(degrees), scaledMinutes: UInt64(billionths) * 60, fractionDigits: 9,
      isNegative: value < 0)
  }

  /// gpsd's `"2026-03-17T23:40:00.000Z"` (any number of fractional digits, up to nine kept).
  var timestamp: UTCTimestamp? {
    guard let text else { return nil }
    let bytes = Array(text.utf8)
    guard bytes.count >= 20, bytes.last == UInt8(ascii: "Z"), bytes[4] == UInt8(ascii: "-"),
      bytes[7] == UInt8(ascii: "-"), bytes[10] == UInt8(ascii: "T"),
      bytes[13] == UInt8(ascii: ":"), bytes[16] == UInt8(ascii: ":")
    else { return nil }
    func digits(_ range: Range<Int>) -> Int? {
      var value = 0
      for index in range {
        let digit = Int(bytes[index]) - 48
        guard (0...9).contains(digit) else { return nil }
        value = value * 10 + digit
      }
      return value
    }
    guard let year = digits(0..<4), let month = digits(5..<7), let day = digits(8..<10),
      let hour = digits(11..<13), let minute = digits(14..<16), let second = digits(17..<19),
      (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second <= 60
    else { return nil }
    var nanoseconds = 0
    let fraction = 19..<(bytes.count - 1)
    if !fraction.isEmpty {
      guard bytes[19] == UInt8(ascii: "."), fraction.count >= 2,
        let value = digits(20..<min(bytes.count - 1, 29))
      else { return nil }
      nanoseconds = value
      for _ in 0..<(9 - (min(bytes.count - 1, 29) - 20)) { nanoseconds *= 10 }
      guard
        bytes[min(bytes.count - 1, 29)..<(bytes.count - 1)].allSatisfy({ (48...57).contains($0) })
      else { return nil }
    }
    return UTCTimestamp(
      date: UTCDate(year: year, month: UInt8(month), day: UInt8(day)),
      time: UTCTime(
        hour: UInt8(hour), minute: UInt8(minute), second: UInt8(second),
        nanoseconds: UInt32(nanoseconds)))
  }
}
