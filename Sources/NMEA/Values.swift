/// A latitude or longitude exactly as the receiver wrote it.
///
/// NMEA writes angles as whole degrees followed by decimal minutes (`4404.14063` is 44° and
/// 4.14063′). The value keeps the minutes as an integer scaled by `10^fractionDigits`, so
/// 7–8 decimal minutes from RTK receivers lose nothing; conversion to `Double` happens only
/// when asked, in one correctly rounded division.
public struct Coordinate: Sendable, CustomStringConvertible {
  /// Whole degrees, 0...180.
  public var degrees: UInt16
  /// Minutes, scaled by `10^fractionDigits` (so `4.14063` minutes is `414063` with 5 digits).
  public var scaledMinutes: UInt64
  /// Number of decimal digits of the minutes.
  public var fractionDigits: UInt8
  /// True south of the equator or west of Greenwich.
  public var isNegative: Bool

  @inlinable
  public init(degrees: UInt16, scaledMinutes: UInt64, fractionDigits: UInt8, isNegative: Bool) {
    self.degrees = degrees
    self.scaledMinutes = scaledMinutes
    self.fractionDigits = fractionDigits
    self.isNegative = isNegative
  }

  /// The angle in signed decimal degrees (negative south and west).
  @inlinable
  public var decimalDegrees: Double {
    // One division of two exactly representable integers is correctly rounded.
    let scale = Powers.ten(Int(fractionDigits))
    let numerator = UInt64(degrees) &* 60 &* scale &+ scaledMinutes
    let value = Double(numerator) / Double(60 &* scale)
    return isNegative ? -value : value
  }

  /// The minutes as a `Double` (for display).
  public var minutes: Double {
    Double(scaledMinutes) / Double(Powers.ten(Int(fractionDigits)))
  }

  /// The angle as NMEA wrote it, with its sign: `-121°18.85478'`.
  public var description: String {
    var text = isNegative ? "-" : ""
    text += String(degrees) + "°"
    text += Powers.decimalString(scaledMinutes, fractionDigits: Int(fractionDigits)) + "'"
    return text
  }
}

extension Coordinate: Equatable, Hashable {
  /// Equal when the angles are equal, whatever the number of digits written.
  public static func == (lhs: Coordinate, rhs: Coordinate) -> Bool {
    let digits = max(lhs.fractionDigits, rhs.fractionDigits)
    return lhs.signedScaled(to: digits) == rhs.signedScaled(to: digits)
  }

  public func hash(into hasher: inout Hasher) {
    // Hash the value with trailing zeros removed so that equal angles hash alike.
    var minutes = scaledMinutes
    var digits = fractionDigits
    while digits > 0 && minutes % 10 == 0 {
      minutes /= 10
      digits -= 1
    }
    hasher.combine(isNegative && (degrees != 0 || minutes != 0))
    hasher.combine(degrees)
    hasher.combine(minutes)
    hasher.combine(digits)
  }

  func signedScaled(to digits: UInt8) -> Int64 {
    let scale = Powers.ten(Int(digits - fractionDigits))
    let total = Int64(degrees) * 60 * Int64(Powers.ten(Int(digits))) + Int64(scaledMinutes * scale)
    return isNegative ? -total : total
  }
}

/// A position as latitude and longitude.
public struct Position: Sendable, Hashable {
  public var latitude: Coordinate
  public var longitude: Coordinate

  @inlinable
  public init(latitude: Coordinate, longitude: Coordinate) {
    self.latitude = latitude
    self.longitude = longitude
  }
}

/// A UTC time of day, with the fractional seconds the receiver sent.
public struct UTCTime: Sendable, Hashable, Comparable, CustomStringConvertible {
  public var hour: UInt8
  public var minute: UInt8
  /// 0...60 (60 only in a leap second).
  public var second: UInt8
  /// Fractional second in nanoseconds (up to nine digits are kept exactly).
  public var nanoseconds: UInt32

  @inlinable
  public init(hour: UInt8, minute: UInt8, second: UInt8, nanoseconds: UInt32 = 0) {
    self.hour = hour
    self.minute = minute
    self.second = second
    self.nanoseconds = nanoseconds
  }

  /// Nanoseconds since midnight.
  @inlinable
  public var nanosecondsOfDay: Int64 {
    (Int64(hour) * 3600 + Int64(minute) * 60 + Int64(second)) * 1_000_000_000
      + Int64(nanoseconds)
  }

  @inlinable
  public static func < (lhs: UTCTime, rhs: UTCTime) -> Bool {
    lhs.nanosecondsOfDay < rhs.nanosecondsOfDay
  }

  /// `hh:mm:ss.sss`.
  public var description: String {
    Powers.twoDigits(hour) + ":" + Powers.twoDigits(minute) + ":" + Powers.twoDigits(second) + "."
      + Powers.zeroPadded(Int(nanoseconds / 1_000_000), width: 3)
  }
}

/// A calendar date in UTC.
public struct UTCDate: Sendable, Hashable, Comparable, CustomStringConvertible {
  /// Full year, for example 2026.
  public var year: Int
  /// 1...12
  public var month: UInt8
  /// 1...31
  public var day: UInt8

  @inlinable
  public init(year: Int, month: UInt8, day: UInt8) {
    self.year = year
    self.month = month
    self.day = day
  }

  /// Whether `day` is a day of `month` (1...12) in `year`, leap years counted
  /// (proleptic Gregorian).
  @inline(__always)
  static func isValid(year: Int, month: Int, day: Int) -> Bool {
    guard month >= 1, month <= 12, day >= 1 else { return false }
    // 31 except April, June, September and November (30) and February.
    if month == 2 {
      let isLeap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
      return day <= (isLeap ? 29 : 28)
    }
    return day <= (month == 4 || month == 6 || month == 9 || month == 11 ? 30 : 31)
  }

  /// Days since 1970-01-01 (proleptic Gregorian; Howard Hinnant's `days_from_civil`).
  public var daysSinceUnixEpoch: Int {
    let y = month <= 2 ? year - 1 : year
    let era = (y >= 0 ? y : y - 399) / 400
    let yoe = y - era * 400
    let m = Int(month)
    let doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + Int(day) - 1
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
    return era * 146_097 + doe - 719_468
  }

  /// The date `daysSinceUnixEpoch` days after 1970-01-01.
  public init(daysSinceUnixEpoch days: Int) {
    let z = days + 719_468
    let era = (z >= 0 ? z : z - 146_096) / 146_097
    let doe = z - era * 146_097
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
    let mp = (5 * doy + 2) / 153
    let d = doy - (153 * mp + 2) / 5 + 1
    let m = mp < 10 ? mp + 3 : mp - 9
    self.init(year: yoe + era * 400 + (m <= 2 ? 1 : 0), month: UInt8(m), day: UInt8(d))
  }

  /// The next calendar day.
  public var next: UTCDate { UTCDate(daysSinceUnixEpoch: daysSinceUnixEpoch + 1) }

  /// The calendar day before.
  public var previous: UTCDate { UTCDate(daysSinceUnixEpoch: daysSinceUnixEpoch - 1) }

  public static func < (lhs: UTCDate, rhs: UTCDate) -> Bool {
    (lhs.year, lhs.month, lhs.day) < (rhs.year, rhs.month, rhs.day)
  }

  /// `yyyy-mm-dd`.
  public var description: String {
    Powers.zeroPadded(year, width: 4) + "-" + Powers.twoDigits(month) + "-" + Powers.twoDigits(day)
  }
}

/// A point in UTC: date and time of day.
public struct UTCTimestamp: Sendable, Hashable, Comparable, CustomStringConvertible {
  public var date: UTCDate
  public var time: UTCTime

  @inlinable
  public init(date: UTCDate, time: UTCTime) {
    self.date = date
    self.time = time
  }

  /// The timestamp `seconds` and `nanoseconds` after the Unix epoch (POSIX time: no leap
  /// seconds; before 1970 for a negative `seconds`); nanoseconds beyond a second are capped.
  public init(secondsSinceUnixEpoch seconds: Int64, nanoseconds: UInt32 = 0) {
    let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
    let secondOfDay = seconds - days * 86_400
    self.init(
      date: UTCDate(daysSinceUnixEpoch: Int(days)),
      time: UTCTime(
        hour: UInt8(secondOfDay / 3600), minute: UInt8(secondOfDay / 60 % 60),
        second: UInt8(secondOfDay % 60), nanoseconds: min(nanoseconds, 999_999_999)))
  }

  /// Whole seconds since the Unix epoch (leap seconds not counted, as in POSIX time).
  public var secondsSinceUnixEpoch: Int64 {
    Int64(date.daysSinceUnixEpoch) * 86_400 + Int64(time.hour) * 3600 + Int64(time.minute) * 60
      + Int64(time.second)
  }

  /// Seconds since the Unix epoch including the fraction.
  public var unixTime: Double {
    Double(secondsSinceUnixEpoch) + Double(time.nanoseconds) / 1e9
  }

  public static func < (lhs: UTCTimestamp, rhs: UTCTimestamp) -> Bool {
    (lhs.date, lhs.time) < (rhs.date, rhs.time)
  }

  /// ISO 8601 with milliseconds, as gpsd prints it: `2026-11-30T06:25:11.000Z`.
  public var description: String { iso8601(fractionDigits: 3) }

  /// ISO 8601 in UTC with the given number of fractional-second digits (0...9).
  public func iso8601(fractionDigits: Int = 3) -> String {
    var text = date.description + "T" + Powers.twoDigits(time.hour) + ":"
    text += Powers.twoDigits(time.minute) + ":" + Powers.twoDigits(time.second)
    if fractionDigits > 0 {
      let digits = min(fractionDigits, 9)
      let value = Int(time.nanoseconds) / Int(Powers.ten(9 - digits))
      text += "." + Powers.zeroPadded(value, width: digits)
    }
    return text + "Z"
  }
}

/// Small integer and formatting helpers that need no Foundation.
@usableFromInline
enum Powers {
  // Literals, so that the tables are laid out by the compiler, not built on first use.
  @usableFromInline static let table: [UInt64] = [
    1, 10, 100, 1_000, 10_000, 100_000, 1_000_000, 10_000_000, 100_000_000, 1_000_000_000,
    10_000_000_000, 100_000_000_000, 1_000_000_000_000, 10_000_000_000_000,
    100_000_000_000_000, 1_000_000_000_000_000, 10_000_000_000_000_000,
    100_000_000_000_000_000, 1_000_000_000_000_000_000, 10_000_000_000_000_000_000,
  ]
  /// The same powers as `Double`s (all exact: 10^22 is the last power of ten a `Double`
  /// holds exactly).
  static let doubleTable: [Double] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
    1e16, 1e17, 1e18, 1e19,
  ]

  /// 10^exponent for exponent 0...19.
  @inlinable
  static func ten(_ exponent: Int) -> UInt64 { table[exponent] }

  /// 10^exponent as a `Double`, for exponent 0...19.
  @inline(__always)
  static func tenAsDouble(_ exponent: Int) -> Double { doubleTable[exponent] }

  static func twoDigits(_ value: UInt8) -> String { zeroPadded(Int(value), width: 2) }

  static func zeroPadded(_ value: Int, width: Int) -> String {
    let digits = String(value)
    return digits.count >= width
      ? digits : String(repeating: "0", count: width - digits.count) + digits
  }

  /// `scaled / 10^fractionDigits` written out exactly.
  static func decimalString(_ scaled: UInt64, fractionDigits: Int) -> String {
    guard fractionDigits > 0 else { return String(scaled) }
    let scale = ten(fractionDigits)
    return String(scaled / scale) + "." + zeroPadded(Int(scaled % scale), width: fractionDigits)
  }
}
