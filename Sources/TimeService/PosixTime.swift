import NMEA

/// A point in POSIX time to the nanosecond: seconds since 1970-01-01 00:00 UTC with leap
/// seconds not counted, as a `timespec` holds it.
///
/// The time service compares two clocks with it: the system's (`CLOCK_REALTIME`, when a byte
/// or a pulse arrived) and the receiver's (the UTC time an epoch names). Which clock a value
/// comes from is said by the name of the property that holds it.
public struct PosixTime: Sendable, Hashable, Comparable, CustomStringConvertible {
  /// Whole seconds since the Unix epoch (negative before 1970).
  public var seconds: Int64
  /// 0 ..< 1 000 000 000.
  public var nanoseconds: Int32

  /// The time `seconds` and `nanoseconds` after the epoch; nanoseconds outside 0 ..< 10⁹ carry
  /// into the seconds.
  public init(seconds: Int64, nanoseconds: Int64 = 0) {
    let (carry, remainder) = nanoseconds.quotientAndRemainder(dividingBy: 1_000_000_000)
    if remainder < 0 {
      self.seconds = seconds + carry - 1
      self.nanoseconds = Int32(remainder + 1_000_000_000)
    } else {
      self.seconds = seconds + carry
      self.nanoseconds = Int32(remainder)
    }
  }

  /// The POSIX time of a receiver's UTC date and time; `nil` in a leap second (`23:59:60`),
  /// which POSIX time cannot name.
  public init?(_ timestamp: UTCTimestamp) {
    guard timestamp.time.second < 60 else { return nil }
    self.init(
      seconds: timestamp.secondsSinceUnixEpoch, nanoseconds: Int64(timestamp.time.nanoseconds))
  }

  /// Nanoseconds since the epoch. Exact for ±292 years around 1970.
  public var nanosecondsSinceEpoch: Int64 {
    seconds * 1_000_000_000 + Int64(nanoseconds)
  }

  /// Seconds since the epoch as a `Double` (about 0.2 µs resolution today).
  public var secondsSinceEpoch: Double { Double(seconds) + Double(nanoseconds) / 1e9 }

  /// The whole second this time falls in.
  public var wholeSecond: PosixTime { PosixTime(seconds: seconds) }

  /// The time truncated to the microsecond, as a `timeval` holds it.
  public var truncatedToMicroseconds: PosixTime {
    PosixTime(seconds: seconds, nanoseconds: Int64(nanoseconds / 1000 * 1000))
  }

  public static func < (lhs: PosixTime, rhs: PosixTime) -> Bool {
    (lhs.seconds, lhs.nanoseconds) < (rhs.seconds, rhs.nanoseconds)
  }

  /// `lhs − rhs`, exactly.
  public static func - (lhs: PosixTime, rhs: PosixTime) -> Duration {
    .seconds(lhs.seconds - rhs.seconds) + .nanoseconds(Int64(lhs.nanoseconds - rhs.nanoseconds))
  }

  /// The time `duration` later, to the nanosecond (finer parts of `duration` are truncated
  /// towards zero).
  public static func + (lhs: PosixTime, rhs: Duration) -> PosixTime {
    PosixTime(seconds: lhs.seconds, nanoseconds: Int64(lhs.nanoseconds) + rhs.wholeNanoseconds)
  }

  /// The time `duration` earlier.
  public static func - (lhs: PosixTime, rhs: Duration) -> PosixTime {
    PosixTime(seconds: lhs.seconds, nanoseconds: Int64(lhs.nanoseconds) - rhs.wholeNanoseconds)
  }

  /// `seconds.nanoseconds` with all nine digits, as ntpshmmon and chronyc print times.
  public var description: String {
    let digits = String(nanoseconds)
    return String(seconds) + "." + String(repeating: "0", count: 9 - digits.count) + digits
  }
}

extension Duration {
  /// The duration in nanoseconds, truncated towards zero (saturating beyond ±292 years).
  package var wholeNanoseconds: Int64 {
    let (seconds, attoseconds) = components
    let (scaled, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
    if overflow { return seconds < 0 ? .min : .max }
    return scaled.addingReportingOverflow(attoseconds / 1_000_000_000).partialValue
  }

  /// The duration in seconds as a `Double`.
  package var inSeconds: Double {
    let (seconds, attoseconds) = components
    return Double(seconds) + Double(attoseconds) / 1e18
  }
}
