import NMEA

/// The day this version of SerialGPS was released: no receiver's date before it is believed.
///
/// The one place the date lives. The release process sets it to the day of the release when
/// it tags a version (and a test fails when it is still in the future of the system clock, so
/// that a wrong edit is caught). A receiver whose date lies before it is wrong: its clock was
/// never set, or its firmware mistakes the GPS week number (every 1024 weeks, 19.6 years, the
/// 10-bit week counter wraps; receivers then report dates 1024 weeks in the past). SerialGPS
/// does not guess the 1024 weeks back: such time is refused, and counted.
public enum ReleaseDate {
  /// 2026-12-01.
  public static let date = UTCDate(year: 2026, month: 12, day: 1)
}
