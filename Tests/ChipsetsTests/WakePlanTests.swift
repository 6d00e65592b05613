import Chipsets
import NMEA
import Testing

@Suite struct WakePlanTests {
  static let now = UTCTimestamp(
    date: UTCDate(year: 2026, month: 12, day: 3),
    time: UTCTime(hour: 13, minute: 40, second: 0, nanoseconds: 0))

  /// A fix `age` seconds before `now`, with a horizontal accuracy of 5 m.
  static func fix(ageSeconds: Int, heightAboveEllipsoid: Bool = true) -> Fix {
    var fix = Fix()
    fix.date = now.date
    fix.time = UTCTime(hour: 13, minute: 40 - UInt8(ageSeconds / 60), second: 0, nanoseconds: 0)
    fix.mode = .threeD
    fix.position = Position(
      latitude: Coordinate(
        degrees: 47, scaledMinutes: 17_113, fractionDigits: 3, isNegative: false),
      longitude: Coordinate(degrees: 8, scaledMinutes: 33_915, fractionDigits: 3, isNegative: false)
    )
    fix.altitudeMSL = 546.6
    if heightAboveEllipsoid { fix.geoidSeparation = 48.0 }
    fix.horizontalAccuracy = 5
    return fix
  }

  static func context(
    family: ChipsetFamily? = .ublox, slept: Duration? = nil, keptBackup: Bool? = nil,
    fix: Fix? = WakePlanTests.fix(ageSeconds: 120), now: UTCTimestamp? = WakePlanTests.now
  ) -> WakeContext {
    WakeContext(
      now: now, timeAccuracy: .milliseconds(100), family: family,
      lastPosition: fix.flatMap(KnownPosition.init), slept: slept, keptBackup: keptBackup)
  }

  @Test func aHotStartIsNotAided() {
    #expect(WakePlan.aiding(for: Self.context(slept: .seconds(600))) == nil)
    #expect(WakePlan.aiding(for: Self.context(slept: .seconds(600), keptBackup: true)) == nil)
    // Backup kept and first start: the receiver has what it needs.
    #expect(WakePlan.aiding(for: Self.context(keptBackup: true)) == nil)
  }

  @Test func warmAndColdStartsAreAided() throws {
    for context in [
      Self.context(slept: .seconds(5 * 3600)),  // past the ephemeris
      Self.context(slept: .seconds(60), keptBackup: false),  // unplugged
      Self.context(),  // first start, backup unknown
    ] {
      let data = try #require(WakePlan.aiding(for: context), "\(context)")
      #expect(data.time == Self.now)
      #expect(data.timeAccuracy == .milliseconds(100))
      let position = try #require(data.position)
      #expect(abs(position.latitude - (47 + 17.113 / 60)) < 1e-9)
      #expect(abs(position.longitude - (8 + 33.915 / 60)) < 1e-9)
      #expect(abs(position.altitude - 594.6) < 1e-9, "MSL plus the geoid's height")
      // 5 m, widened by 120 s at 50 m/s.
      #expect(position.accuracy == 5 + 6_000)
    }
  }

  @Test func anAltitudeAboveTheGeoidOnlyWidensTheAccuracy() throws {
    let data = try #require(
      WakePlan.aiding(for: Self.context(fix: Self.fix(ageSeconds: 0, heightAboveEllipsoid: false))))
    #expect(data.position?.altitude == 546.6)
    #expect(data.position?.accuracy == Double(5 + 110))
  }

  @Test func nothingForAnUnknownOrNonAidedFamilyOrAnUnsetClock() {
    #expect(WakePlan.aiding(for: Self.context(family: nil)) == nil)
    #expect(WakePlan.aiding(for: Self.context(family: .sirf)) == nil)
    #expect(WakePlan.aiding(for: Self.context(family: .nmea)) == nil)
    let boot = UTCTimestamp(
      date: UTCDate(year: 1970, month: 1, day: 1),
      time: UTCTime(hour: 0, minute: 0, second: 30, nanoseconds: 0))
    #expect(WakePlan.aiding(for: Self.context(now: boot)) == nil)
    #expect(WakePlan.aiding(for: Self.context(now: nil)) == nil)
  }

  @Test func aPositionFromTheFutureOrWithoutAccuracyIsLeftOut() throws {
    var later = Self.fix(ageSeconds: 0)
    later.time = UTCTime(hour: 13, minute: 41, second: 0, nanoseconds: 0)
    #expect(try #require(WakePlan.aiding(for: Self.context(fix: later))).position == nil)
    var vague = Self.fix(ageSeconds: 60)
    vague.horizontalAccuracy = nil
    #expect(try #require(WakePlan.aiding(for: Self.context(fix: vague))).position == nil)
  }

  @Test func anOldPositionReachesUbloxButNotMediaTek() throws {
    // 10 minutes at 50 m/s: 30 km, MediaTek's limit for a useful position.
    let data = try #require(
      WakePlan.aiding(for: Self.context(family: .mediatek, fix: Self.fix(ageSeconds: 600))))
    #expect(Aiding.mediatek(data).count == 1)
    #expect(Aiding.ublox(data).count == 2)
  }
}
