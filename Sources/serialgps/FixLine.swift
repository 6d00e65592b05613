import GPSDProtocol
import NMEA

/// The one line for people that `watch`, `decode` and `demo` print for a fix (and `record`
/// shows in its progress line):
///
///     2026-03-30T12:00:07.250Z  3D  47.3769033  8.5417017  alt 408.3 m  speed 5.14 m/s  sats 8  acc 2.0 m
///
/// UTC time (the time of day alone, `12:00:07.250Z`, until the receiver has sent a date),
/// fix mode, latitude and longitude in degrees (7 decimals, about a centimetre, from the
/// receiver's exact minutes), altitude (above mean sea level, else above the ellipsoid), speed
/// over ground, satellites used and horizontal accuracy (one sigma); then, only for a fix that
/// corrections improved, `RTK fixed`, `RTK float` or `DGPS` and their age. Always the same fields
/// in the same order, two spaces apart, `-` for what the receiver did not say, so columns
/// line up and scripts can split them. Position and altitude from 2D on, as in the TPV
/// reports; numbers rounded as the reports round them (no `-0.0`).
enum FixLine {
  static func describe(_ fix: Fix) -> String {
    var parts: [String] = []
    if let timestamp = fix.timestamp {
      parts.append(timestamp.description)
    } else if let time = fix.time {
      parts.append(time.description + "Z")
    } else {
      parts.append("-")
    }
    parts.append(fix.mode.description)
    let position = fix.mode >= .twoD ? fix.position : nil
    parts.append(position.map { DecimalText.degrees($0.latitude, decimals: 7) } ?? "-")
    parts.append(position.map { DecimalText.degrees($0.longitude, decimals: 7) } ?? "-")
    let altitude = fix.mode >= .twoD ? fix.altitudeMSL ?? fix.altitudeHAE : nil
    parts.append("alt " + quantity(altitude, decimals: 1, unit: "m"))
    parts.append("speed " + quantity(fix.speed, decimals: 2, unit: "m/s"))
    parts.append("sats " + (fix.satellitesUsed.map(String.init) ?? "-"))
    parts.append("acc " + quantity(fix.horizontalAccuracy, decimals: 1, unit: "m"))
    if let corrected = corrections(fix) { parts.append(corrected) }
    return parts.joined(separator: "  ")
  }

  /// What corrections did, after the fixed fields and only when they did something (TPV's
  /// `status` 2, 3 or 4 and `dgpsAge`): `RTK fixed`, `RTK float` or `DGPS`, with the age of
  /// the corrections when the receiver gave it.
  static func corrections(_ fix: Fix) -> String? {
    guard fix.mode >= .twoD else { return nil }
    let kind: String
    switch GPSDStatus.code(for: fix) {
    case GPSDStatus.rtkFixed: kind = "RTK fixed"
    case GPSDStatus.rtkFloat: kind = "RTK float"
    case GPSDStatus.differential: kind = "DGPS"
    default: return nil
    }
    guard let age = fix.differentialAge, let text = DecimalText.fixed(age, decimals: 1) else {
      return kind
    }
    return kind + " (corrections \(text) s old)"
  }

  private static func quantity(_ value: Double?, decimals: Int, unit: String) -> String {
    guard let value, let text = DecimalText.fixed(value, decimals: decimals) else { return "-" }
    return text + " " + unit
  }
}
