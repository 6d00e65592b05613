import NMEA

// gpsd's JSON reports (https://gpsd.io/gpsd_json.html), written with a ``JSONWriter``.
//
// Field names, units and decimals are gpsd's, as in its regression outputs: degrees with 9
// decimals, altitudes with 4, speeds and error estimates in metres (per second) with 3, DOPs
// with 2, satellite angles and signal strength with 1. A field the receiver did not report
// is left out, never written as `null` or `0`; estimates that gpsd invents (`ept`, `eps`,
// `epc`, error estimates computed from DOPs, magnetic variation from a world model) are not
// invented here. Error estimates are the receiver's own, unscaled (gpsd scales Garmin's
// `$PGRME` by 2.45 / 1.18).

extension JSONWriter {
  /// Writes one report object, `{"class":"NAME", …}`, with `members` writing the rest.
  ///
  /// The building block for every report class, including the server's VERSION, DEVICES,
  /// DEVICE, WATCH and ERROR; inside an array (DEVICES) it writes an element. End a
  /// top-level report with ``newline(crlf:)``.
  public mutating func report(_ className: StaticString, _ members: (inout JSONWriter) -> Void) {
    beginObject()
    key("class")
    string(literal: className)
    members(&self)
    endObject()
  }

  /// A `TPV` report (time, position, velocity) of one epoch's fix.
  ///
  /// - Parameters:
  ///   - device: the receiver's path, when reporting for a device.
  ///   - leapSeconds: GPS−UTC leap seconds, when known (u-blox `$PUBX,04`).
  public mutating func tpv(_ fix: Fix, device: String? = nil, leapSeconds: Int? = nil) {
    report("TPV") { json in
      json.member("device", device)
      if let status = GPSDStatus.code(for: fix), status >= GPSDStatus.differential {
        json.member("status", status)
      }
      json.member("mode", Int(fix.mode.rawValue))
      json.member("time", fix.timestamp)
      json.member("leapseconds", leapSeconds ?? fix.leapSeconds)
      // Like gpsd, nothing about the position without a fix.
      if fix.mode >= .twoD { json.positionMembers(of: fix) }
      // The antenna and jamming matter most when there is no fix: said whatever the mode.
      json.member("ant", GPSDAntenna.statusCode(fix.antennaStatus))
      json.member("antPwr", GPSDAntenna.powerCode(fix.antennaPower))
      json.member("jam", fix.jammingIndicator)
    }
  }

  /// TPV's members about the position, velocity and their errors, in gpsd's order.
  mutating func positionMembers(of fix: Fix) {
    if let position = fix.position {
      key("lat")
      coordinate(position.latitude)
      key("lon")
      coordinate(position.longitude)
    }
    member("altHAE", fix.altitudeHAE, decimals: 4)
    member("altMSL", fix.altitudeMSL, decimals: 4)
    // Deprecated in gpsd but still sent: MSL when known, else HAE.
    member("alt", fix.altitudeMSL ?? fix.altitudeHAE, decimals: 4)
    member("epx", fix.longitudeError, decimals: 3)
    member("epy", fix.latitudeError, decimals: 3)
    member("epv", fix.verticalAccuracy, decimals: 3)
    member("track", fix.course, decimals: 4)
    member("magvar", fix.magneticVariation, decimals: 1)
    member("speed", fix.speed, decimals: 3)
    if fix.mode == .threeD { member("climb", fix.climb, decimals: 3) }
    member("epd", fix.courseAccuracy, decimals: 4)
    member("eps", fix.speedAccuracy, decimals: 2)
    if let ecef = fix.ecefPosition {
      member("ecefx", ecef.x, decimals: 4)
      member("ecefy", ecef.y, decimals: 4)
      member("ecefz", ecef.z, decimals: 4)
    }
    if let velocity = fix.ecefVelocity {
      member("ecefvx", velocity.x, decimals: 2)
      member("ecefvy", velocity.y, decimals: 2)
      member("ecefvz", velocity.z, decimals: 2)
    }
    member("ecefpAcc", fix.ecefPositionAccuracy, decimals: 4)
    member("ecefvAcc", fix.ecefVelocityAccuracy, decimals: 4)
    if let velocity = fix.velocityNED {
      member("velN", velocity.x, decimals: 3)
      member("velE", velocity.y, decimals: 3)
      member("velD", velocity.z, decimals: 3)
    }
    member("datum", fix.datum)
    if fix.mode == .threeD { member("geoidSep", fix.geoidSeparation, decimals: 3) }
    member("eph", fix.horizontalAccuracy, decimals: 3)
    member("sep", fix.sphericalAccuracy, decimals: 3)
    // gpsd sends both or neither.
    if let age = fix.differentialAge, age.isFinite, let station = fix.differentialStation {
      member("dgpsAge", age, decimals: 1)
      member("dgpsSta", station)
    }
  }

  /// A `SKY` report of one epoch's satellites.
  ///
  /// - Parameters:
  ///   - time: the epoch's date and time (`SatelliteView` knows only the time of day).
  ///   - satellitesUsed: satellites used, for a view that lists none (GSA without GSV); with
  ///     satellites listed, `uSat` counts those marked used.
  public mutating func sky(
    _ view: SatelliteView, time: UTCTimestamp? = nil, satellitesUsed: Int? = nil,
    device: String? = nil
  ) {
    report("SKY") { json in
      json.member("device", device)
      json.member("time", time)
      json.member("gdop", view.gdop, decimals: 2)
      json.member("hdop", view.hdop, decimals: 2)
      json.member("pdop", view.pdop, decimals: 2)
      json.member("tdop", view.tdop, decimals: 2)
      json.member("xdop", view.edop, decimals: 2)
      json.member("ydop", view.ndop, decimals: 2)
      json.member("vdop", view.vdop, decimals: 2)
      guard !view.satellites.isEmpty else {
        json.member("uSat", satellitesUsed)
        return
      }
      json.member("nSat", view.satellites.count)
      json.member("uSat", view.usedCount)
      json.key("satellites")
      json.beginArray()
      for satellite in view.satellites { json.satellite(satellite) }
      json.endArray()
    }
  }

  /// One element of SKY's `satellites`.
  mutating func satellite(_ satellite: Satellite) {
    beginObject()
    member("PRN", satellite.prn)
    if let constellation = satellite.constellation {
      member("gnssid", Int(constellation.rawValue))
      member("svid", satellite.svid)
      if let signal = satellite.signalID {
        member(
          "sigid", GPSDSignal.ubloxSignalID(nmeaSignalID: signal, constellation: constellation))
      }
    }
    // gpsd's own sanity limits.
    if let azimuth = satellite.azimuth, (0...359).contains(azimuth) {
      member("az", Double(azimuth), decimals: 1)
    }
    if let elevation = satellite.elevation, (-90...90).contains(elevation) {
      member("el", Double(elevation), decimals: 1)
    }
    member("prRes", satellite.pseudorangeResidual, decimals: 1)
    member("qual", satellite.quality)
    if let snr = satellite.snr { member("ss", Double(snr), decimals: 1) }
    member("used", satellite.used)
    member("health", satellite.health)
    endObject()
  }

  /// A `VERSION` report, the first line a gpsd client receives.
  public mutating func version(
    release: String, revision: String, protocolMajor: Int, protocolMinor: Int
  ) {
    report("VERSION") { json in
      json.member("release", release)
      json.member("rev", revision)
      json.member("proto_major", protocolMajor)
      json.member("proto_minor", protocolMinor)
    }
  }

  /// An `ERROR` report.
  public mutating func error(_ message: String) {
    report("ERROR") { json in json.member("message", message) }
  }

  /// A latitude or longitude in degrees with gpsd's nine decimals, computed from the exact
  /// integer minutes the receiver sent rather than from a rounded `Double`.
  public mutating func coordinate(_ angle: Coordinate) {
    guard angle.fractionDigits <= 12 else {
      number(angle.decimalDegrees, decimals: 9)
      return
    }
    value(writing: { GPSDCoordinate.appendDecimalDegrees(angle, decimals: 9, to: &$0) })
  }
}

/// gpsd's `status` codes (the quality of a fix), from the GGA quality or the mode indicator.
public enum GPSDStatus {
  public static let unknown = 0
  public static let gps = 1
  public static let differential = 2
  public static let rtkFixed = 3
  public static let rtkFloat = 4
  public static let deadReckoning = 5
  public static let gnssDeadReckoning = 6
  public static let timeOnly = 7
  public static let simulated = 8
  public static let ppsFix = 9

  /// The status of `fix`, or `nil` when the receiver said nothing about it. gpsd itself
  /// sends `status` only from ``differential`` up.
  public static func code(for fix: Fix) -> Int? {
    if let quality = fix.quality {
      switch quality.rawValue {
      case 0: return unknown
      case 1: return gps
      case 2: return differential
      case 3: return ppsFix
      case 4: return rtkFixed
      case 5: return rtkFloat
      case 6: return deadReckoning
      case 7: return timeOnly
      case 8: return simulated
      default: break
      }
    }
    switch fix.modeIndicator {
    case .autonomous?, .precise?: return gps
    case .differential?: return differential
    case .estimated?: return deadReckoning
    case .rtkFloat?: return rtkFloat
    case .rtkFixed?: return rtkFixed
    case .manual?: return timeOnly
    case .simulator?: return simulated
    default: return nil
    }
  }
}

/// gpsd's codes for the active antenna (TPV `ant`, `antPwr`; gpsd 3.26 and later).
public enum GPSDAntenna {
  /// `ant`: 2 open, 3 short circuit (gpsd's ANT_OPEN, ANT_SHORT). Nothing for an antenna that
  /// is OK or whose state is unknown: gpsd 3.27 prints no `ant` for a u-blox whose MON-RF says
  /// OK (ublox-neo-f9v.log), only the states a user must act on.
  public static func statusCode(_ status: AntennaStatus?) -> Int? {
    switch status {
    case .open?: return 2
    case .short?: return 3
    default: return nil
    }
  }

  /// `antPwr`: 1 off, 2 on (gpsd prints 2 for MON-RF's "on"); nothing when unknown.
  public static func powerCode(_ power: AntennaPower?) -> Int? {
    switch power {
    case .off?: return 1
    case .on?: return 2
    default: return nil
    }
  }

  static func status(code: Int) -> AntennaStatus? {
    switch code {
    case 2: return .open
    case 3: return .short
    default: return nil
    }
  }

  static func power(code: Int) -> AntennaPower? {
    switch code {
    case 1: return .off
    case 2: return .on
    default: return nil
    }
  }
}

/// Signal numbering: NMEA 4.11 signal IDs to the u-blox `sigId` that gpsd reports.
public enum GPSDSignal {
  /// The u-blox signal ID of an NMEA signal ID, or `nil` for a signal u-blox does not number.
  /// Where u-blox tells two components apart (Galileo E1 C and B, E5b I and Q …), the first
  /// is taken, as NMEA does not say which.
  public static func ubloxSignalID(nmeaSignalID signal: Int, constellation: Constellation) -> Int? {
    switch (constellation, signal) {
    case (.gps, 1): return 0  // L1 C/A
    case (.gps, 5): return 4  // L2 CM
    case (.gps, 6): return 3  // L2 CL
    case (.gps, 7): return 6  // L5 I
    case (.gps, 8): return 7  // L5 Q
    case (.sbas, 1): return 0  // L1 C/A
    case (.galileo, 1): return 3  // E5 aI
    case (.galileo, 2): return 5  // E5 bI
    case (.galileo, 7): return 0  // E1 C
    case (.beidou, 1): return 0  // B1I D1
    case (.beidou, 3): return 5  // B1C
    case (.beidou, 5): return 7  // B2a
    case (.beidou, 11): return 2  // B2I D1
    case (.qzss, 1): return 0  // L1 C/A
    case (.qzss, 4): return 1  // L1S
    case (.qzss, 5): return 4  // L2 CM
    case (.qzss, 6): return 5  // L2 CL
    case (.qzss, 7): return 8  // L5 I
    case (.qzss, 8): return 9  // L5 Q
    case (.glonass, 1): return 0  // L1 OF
    case (.glonass, 3): return 2  // L2 OF
    case (.navic, 1): return 0  // L5 A
    default: return nil
    }
  }
}

/// Exact decimal degrees from NMEA's degrees and scaled minutes.
enum GPSDCoordinate {
  /// Appends `angle` in signed decimal degrees with `decimals` (0...12) digits, rounded half
  /// to even on the exact value. `angle.fractionDigits` must be at most 12 (the parser keeps
  /// at most 12), so that every product fits 128 bits.
  static func appendDecimalDegrees(_ angle: Coordinate, decimals: Int, to out: inout [UInt8]) {
    // degrees + scaledMinutes / (60 · 10^f), as an integer number of 10^-decimals degrees:
    // (degrees · 60 · 10^f + scaledMinutes) · 10^decimals / (60 · 10^f), all in 128 bits.
    var scale: UInt128 = 1
    for _ in 0..<Int(angle.fractionDigits) { scale *= 10 }
    var target: UInt128 = 1
    for _ in 0..<decimals { target *= 10 }
    let denominator = 60 * scale
    let numerator = (UInt128(angle.degrees) * denominator + UInt128(angle.scaledMinutes)) * target
    var quotient = numerator / denominator
    let remainder = numerator % denominator
    if remainder * 2 > denominator || (remainder * 2 == denominator && quotient % 2 == 1) {
      quotient += 1
    }
    if angle.isNegative && quotient != 0 { out.append(UInt8(ascii: "-")) }
    let whole = quotient / target
    let fraction = quotient % target
    DecimalFormatting.appendDigits(UInt64(whole), to: &out)
    if decimals > 0 {
      out.append(UInt8(ascii: "."))
      DecimalFormatting.appendPadded(Int(fraction), width: decimals, to: &out)
    }
  }
}
