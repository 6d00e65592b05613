import NMEA

/// Decimal text for display, with the same exact rounding as the JSON reports.
public enum DecimalText {
  /// `value` with exactly `decimals` (0...15) digits after the point, rounded to nearest
  /// (ties to even) like `printf("%.*f")`; `nil` for NaN and the infinities.
  public static func fixed(_ value: Double, decimals: Int) -> String? {
    guard value.isFinite else { return nil }
    var bytes: [UInt8] = []
    DecimalFormatting.appendFixed(value, decimals: decimals, to: &bytes)
    return String(decoding: bytes, as: UTF8.self)
  }

  /// `angle` in signed decimal degrees with `decimals` (0...12) digits, computed from the
  /// receiver's exact minutes.
  public static func degrees(_ angle: Coordinate, decimals: Int) -> String {
    var bytes: [UInt8] = []
    if angle.fractionDigits <= 12 {
      GPSDCoordinate.appendDecimalDegrees(angle, decimals: min(max(decimals, 0), 12), to: &bytes)
    } else {
      DecimalFormatting.appendFixed(angle.decimalDegrees, decimals: decimals, to: &bytes)
    }
    return String(decoding: bytes, as: UTF8.self)
  }
}
