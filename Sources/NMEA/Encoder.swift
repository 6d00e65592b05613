// NMEA sentences made from a fix, for a receiver whose epochs come without NMEA (one a user
// configured for UBX output only): GGA, RMC, GSA and GSV, as gpsd's pseudonmea.c makes them
// for a binary receiver's NMEA watchers (docs/ubx.md, "Pseudo-NMEA").

/// Writes NMEA 0183 sentences (`$GP…*hh` CR LF) from a ``Fix`` and a ``SatelliteView`` into
/// the caller's buffer: nothing is allocated once the buffer's capacity holds the sentences
/// (``maximumLength`` each; a GSV group is at most nine).
public enum NMEAEncoder {
  /// The longest sentence the encoder writes, `$` through LF: NMEA 0183's 82.
  public static let maximumLength = 82
  /// The most satellites GSV lists: nine sentences of four, as a one-digit sentence count
  /// allows (a parser refuses a tenth).
  public static let maximumSatellitesInView = 36

  /// `$GPGGA` of a fix with a position (none without: gpsd writes none either): time,
  /// position to 1e-5 minutes, GGA quality (1 when the receiver gave none), satellites used,
  /// HDOP, altitude above sea level and geoid separation.
  public static func appendGGA(_ fix: Fix, to out: inout [UInt8]) {
    guard fix.mode >= .twoD, let position = fix.position else { return }
    let start = begin("GPGGA", &out)
    appendTime(fix.time, &out)
    appendPosition(position, &out)
    out.append(ASCII.comma)
    DecimalFormatting.appendDigits(UInt64(clamping: fix.quality?.rawValue ?? 1), to: &out)
    out.append(ASCII.comma)
    if let used = fix.satellitesUsed {
      DecimalFormatting.appendPadded(min(max(used, 0), 99), width: 2, to: &out)
    }
    appendField(fix.hdop, decimals: 2, &out)
    appendField(fix.altitudeMSL, decimals: 2, &out)
    out.append(contentsOf: [ASCII.comma, UInt8(ascii: "M")])
    appendField(fix.geoidSeparation, decimals: 3, &out)
    out.append(contentsOf: [ASCII.comma, UInt8(ascii: "M"), ASCII.comma, ASCII.comma])
    NMEAChecksum.appendTrailer(to: &out, sentenceStart: start)
  }

  /// `$GPRMC`: time, status (`A` with a fix, else `V`), position, speed in knots, course,
  /// date, magnetic variation, and NMEA 2.3's mode indicator.
  public static func appendRMC(_ fix: Fix, to out: inout [UInt8]) {
    let start = begin("GPRMC", &out)
    appendTime(fix.time, &out)
    out.append(ASCII.comma)
    out.append(UInt8(ascii: fix.mode >= .twoD ? "A" : "V"))
    if let position = fix.position {
      appendPosition(position, &out)
    } else {
      out.append(contentsOf: [ASCII.comma, ASCII.comma, ASCII.comma, ASCII.comma])
    }
    appendField(fix.speed.map { $0 / FixBuilder.metresPerSecondPerKnot }, decimals: 4, &out)
    appendField(fix.course, decimals: 3, &out)
    out.append(ASCII.comma)
    if let date = fix.date {
      DecimalFormatting.appendPadded(Int(date.day), width: 2, to: &out)
      DecimalFormatting.appendPadded(Int(date.month), width: 2, to: &out)
      DecimalFormatting.appendPadded(date.year % 100, width: 2, to: &out)
    }
    appendField(fix.magneticVariation.map { $0.magnitude }, decimals: 1, &out)
    out.append(ASCII.comma)
    if let variation = fix.magneticVariation { out.append(UInt8(ascii: variation < 0 ? "W" : "E")) }
    out.append(ASCII.comma)
    out.append(modeIndicator(fix))
    NMEAChecksum.appendTrailer(to: &out, sentenceStart: start)
  }

  /// `$GPGSA`: automatic selection, the fix's dimension, the first twelve satellites the
  /// view marks used, and the view's PDOP, HDOP and VDOP (the fix's where the view has none).
  public static func appendGSA(_ fix: Fix, satellites view: SatelliteView?, to out: inout [UInt8]) {
    let start = begin("GPGSA", &out)
    out.append(contentsOf: [ASCII.comma, UInt8(ascii: "A"), ASCII.comma])
    out.append(UInt8(ascii: "0") + fix.mode.rawValue)
    var slots = 0
    for satellite in view?.satellites ?? [] where satellite.used && slots < 12 {
      out.append(ASCII.comma)
      DecimalFormatting.appendDigits(UInt64(clamping: satellite.prn), to: &out)
      slots += 1
    }
    for _ in slots..<12 { out.append(ASCII.comma) }
    let withFix = fix.mode >= .twoD
    appendField(withFix ? view?.pdop ?? fix.pdop : nil, decimals: 1, &out)
    appendField(withFix ? view?.hdop ?? fix.hdop : nil, decimals: 1, &out)
    appendField(withFix ? view?.vdop ?? fix.vdop : nil, decimals: 1, &out)
    NMEAChecksum.appendTrailer(to: &out, sentenceStart: start)
  }

  /// `$GPGSV`, four satellites a sentence: those of the view with an elevation, an azimuth
  /// and a signal strength (as gpsd lists them), at most ``maximumSatellitesInView``.
  /// Nothing for a view without such satellites.
  public static func appendGSV(_ view: SatelliteView, to out: inout [UInt8]) {
    var listed = 0
    for satellite in view.satellites where listable(satellite) { listed += 1 }
    listed = min(listed, maximumSatellitesInView)
    guard listed > 0 else { return }
    let sentences = (listed + 3) / 4
    var index = 0
    var start = 0
    for satellite in view.satellites where listable(satellite) {
      guard index < listed else { break }
      if index % 4 == 0 {
        start = begin("GPGSV", &out)
        out.append(ASCII.comma)
        DecimalFormatting.appendDigits(UInt64(sentences), to: &out)
        out.append(ASCII.comma)
        DecimalFormatting.appendDigits(UInt64(index / 4 + 1), to: &out)
        out.append(ASCII.comma)
        DecimalFormatting.appendPadded(listed, width: 2, to: &out)
      }
      out.append(ASCII.comma)
      DecimalFormatting.appendPadded(satellite.prn, width: 2, to: &out)
      out.append(ASCII.comma)
      appendSigned(satellite.elevation!, width: 2, &out)
      out.append(ASCII.comma)
      DecimalFormatting.appendPadded(satellite.azimuth!, width: 3, to: &out)
      out.append(ASCII.comma)
      DecimalFormatting.appendPadded(min(satellite.snr!, 99), width: 2, to: &out)
      index += 1
      if index % 4 == 0 || index == listed {
        NMEAChecksum.appendTrailer(to: &out, sentenceStart: start)
      }
    }
  }

  static func listable(_ satellite: Satellite) -> Bool {
    guard satellite.prn >= 1, let elevation = satellite.elevation,
      let azimuth = satellite.azimuth, let snr = satellite.snr
    else { return false }
    return (-90...90).contains(elevation) && (0...359).contains(azimuth) && snr >= 0
  }

  /// NMEA 2.3's mode indicator of a fix: `N` without one, else from its quality.
  static func modeIndicator(_ fix: Fix) -> UInt8 {
    guard fix.mode >= .twoD else { return UInt8(ascii: "N") }
    switch fix.quality {
    case .differential?, .rtkFixed?, .rtkFloat?: return UInt8(ascii: "D")
    case .deadReckoning?: return UInt8(ascii: "E")
    default: return UInt8(ascii: "A")
    }
  }

  // MARK: - Fields

  /// `$` and the address; returns where the sentence starts, for its checksum.
  @inline(__always)
  static func begin(_ address: StaticString, _ out: inout [UInt8]) -> Int {
    let start = out.count
    out.append(ASCII.dollar)
    address.withUTF8Buffer { out.append(contentsOf: $0) }
    return start
  }

  /// `,` and the value with `decimals` digits, or `,` alone for none.
  @inline(__always)
  static func appendField(_ value: Double?, decimals: Int, _ out: inout [UInt8]) {
    out.append(ASCII.comma)
    if let value, value.isFinite {
      DecimalFormatting.appendFixed(value, decimals: decimals, to: &out)
    }
  }

  static func appendSigned(_ value: Int, width: Int, _ out: inout [UInt8]) {
    if value < 0 { out.append(ASCII.minus) }
    DecimalFormatting.appendPadded(abs(value), width: width, to: &out)
  }

  /// `,hhmmss.ss`, rounded to the hundredth as gpsd writes it; `,` alone without a time.
  static func appendTime(_ time: UTCTime?, _ out: inout [UInt8]) {
    out.append(ASCII.comma)
    guard let time else { return }
    var hundredths = Int(time.nanoseconds + 5_000_000) / 10_000_000
    var second = Int(time.second)
    var minute = Int(time.minute)
    var hour = Int(time.hour)
    // The hundredths carry into the second, and on into the day (never past 23:59:59.99).
    if hundredths > 99 {
      hundredths = 0
      second += 1
      if second == 60 && time.second != 60 {
        second = 0
        minute += 1
        if minute == 60 {
          minute = 0
          hour += 1
          if hour == 24 { (hour, minute, second, hundredths) = (23, 59, 59, 99) }
        }
      }
    }
    DecimalFormatting.appendPadded(hour, width: 2, to: &out)
    DecimalFormatting.appendPadded(minute, width: 2, to: &out)
    DecimalFormatting.appendPadded(second, width: 2, to: &out)
    out.append(ASCII.dot)
    DecimalFormatting.appendPadded(hundredths, width: 2, to: &out)
  }

  /// `,ddmm.mmmmm,N,dddmm.mmmmm,E`.
  static func appendPosition(_ position: Position, _ out: inout [UInt8]) {
    appendAngle(position.latitude, degreeDigits: 2, &out)
    out.append(ASCII.comma)
    out.append(UInt8(ascii: position.latitude.isNegative ? "S" : "N"))
    appendAngle(position.longitude, degreeDigits: 3, &out)
    out.append(ASCII.comma)
    out.append(UInt8(ascii: position.longitude.isNegative ? "W" : "E"))
  }

  /// Digits of minutes written: 1e-5 minutes (1.9 cm), as u-blox writes its own NMEA.
  static let minuteDigits = 5

  /// `,` and degrees with minutes to 1e-5, rounded half up from the exact angle (the carry
  /// of 59.999995 minutes goes into the degrees).
  static func appendAngle(_ angle: Coordinate, degreeDigits: Int, _ out: inout [UInt8]) {
    out.append(ASCII.comma)
    let digits = Int(min(angle.fractionDigits, 18))
    let minutes = angle.scaledMinutes
    let scaled: UInt64
    if digits >= minuteDigits {
      let divisor = Powers.ten(digits - minuteDigits)
      scaled = (minutes + divisor / 2) / divisor
    } else {
      scaled = minutes &* Powers.ten(minuteDigits - digits)
    }
    let perDegree = 60 * Powers.ten(minuteDigits)
    let degrees = UInt64(angle.degrees) + scaled / perDegree
    let rest = scaled % perDegree
    let unit = Powers.ten(minuteDigits)
    DecimalFormatting.appendPadded(Int(degrees), width: degreeDigits, to: &out)
    DecimalFormatting.appendPadded(Int(rest / unit), width: 2, to: &out)
    out.append(ASCII.dot)
    DecimalFormatting.appendPadded(Int(rest % unit), width: minuteDigits, to: &out)
  }
}
