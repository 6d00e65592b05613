import NMEA
import Testing

// UBX messages merged into fixes through their descriptors: an epoch keyed by iTOW and
// closed by NAV-EOE, the leap seconds that turn iTOW into UTC, and one fix from NMEA and UBX
// of the same epoch with each field from its best source.

/// Little-endian bytes of `value`.
func littleEndian(_ value: UInt32) -> [UInt8] {
  (0..<4).map { UInt8(truncatingIfNeeded: value >> (8 * UInt32($0))) }
}

enum UBXEpochSamples {
  /// The NAV-PVT sample's epoch: iTOW 163178000 ms, 2019-04-22 21:19:20 UTC (−127 759 ns).
  static let iTOW: UInt32 = 163_178_000
  static let endOfEpoch = ubxFrame(class: 0x01, id: 0x61, payload: littleEndian(iTOW))
  /// GGA of the same second with five decimals of minutes: 6.7e-8° from NAV-PVT's latitude,
  /// and a decimetre altitude.
  static let gga = wire("GNGGA,211920.00,4552.65172,S,17030.00784,E,1,12,0.77,27.4,M,2.0,M,,")
  /// NAV-POSLLH of `timeOfWeek` at 10° N, 20° E.
  static func posLLH(timeOfWeek: UInt32) -> [UInt8] {
    ubxFrame(
      class: 0x01, id: 0x02,
      payload: littleEndian(timeOfWeek) + littleEndian(200_000_000) + littleEndian(100_000_000)
        + littleEndian(50_000) + littleEndian(30_000) + littleEndian(2_000) + littleEndian(3_000))
  }
  /// NAV-TIMEGPS of `timeOfWeek`, week 2050, leap seconds valid.
  static func timeGPS(timeOfWeek: UInt32, leapSeconds: UInt8) -> [UInt8] {
    ubxFrame(
      class: 0x01, id: 0x20,
      payload: littleEndian(timeOfWeek) + littleEndian(0) + [0x02, 0x08, leapSeconds, 0x07]
        + littleEndian(20))
  }
}

@Suite("UBX messages in fixes")
struct UBXFixTests {
  @Test("NAV-PVT makes the fix, NAV-EOE closes its epoch at once")
  func pvtClosedByEndOfEpoch() throws {
    var decoder = NMEADecoder()
    var emitted: [Epoch] = []
    decoder.decode(UBXSamples.navPVT + UBXEpochSamples.endOfEpoch) {
      if case .epoch(let epoch) = $0 { emitted.append(epoch) }
    }
    // Emitted at NAV-EOE, without waiting for the next epoch or a flush.
    #expect(emitted.count == 1)
    let fix = try #require(emitted.first?.fix)
    #expect(fix.time == UTCTime(hour: 21, minute: 19, second: 20))
    #expect(fix.date == UTCDate(year: 2019, month: 4, day: 22))
    #expect(fix.mode == .threeD)
    #expect(fix.latitude.map { abs($0 + 45.8775286) < 1e-12 } == true)
    #expect(fix.longitude.map { abs($0 - 170.5001306) < 1e-12 } == true)
    #expect(fix.altitudeMSL == 27.443)
    #expect(fix.leapSeconds == 18)
    #expect(fix.satellitesUsed == 16)
    #expect(fix.horizontalAccuracy != nil && fix.verticalAccuracy != nil)
    #expect(decoder.builder.leapSeconds == 18)
    #expect(decoder.builder.statistics.epochs == 1)
  }

  @Test("NMEA and UBX of one epoch give one fix, the binary solution first whatever the order")
  func mixedEpochOneFix() throws {
    for bytes in [
      UBXEpochSamples.gga + UBXSamples.navPVT + UBXEpochSamples.endOfEpoch,
      UBXSamples.navPVT + UBXEpochSamples.gga + UBXEpochSamples.endOfEpoch,
    ] {
      let found = epochs(bytes)
      #expect(found.count == 1)
      let fix = try #require(found.first?.fix)
      #expect(fix.time == UTCTime(hour: 21, minute: 19, second: 20))
      // 1e-7° and millimetres over GGA's five decimals of minutes and decimetres.
      #expect(fix.latitude.map { abs($0 + 45.8775286) < 1e-12 } == true)
      #expect(fix.altitudeMSL == 27.443)
      #expect(fix.satellitesUsed != nil)
    }
  }

  @Test("a time of week is untimed until the leap seconds are known, then UTC")
  func leapSecondsFromTimeGPS() throws {
    let first: UInt32 = 163_178_000
    let bytes =
      UBXEpochSamples.posLLH(timeOfWeek: first)
      + UBXEpochSamples.timeGPS(timeOfWeek: first, leapSeconds: 18)
      + UBXEpochSamples.posLLH(timeOfWeek: first + 1000)
      + UBXEpochSamples.posLLH(timeOfWeek: first + 2000)
    let found = epochs(bytes)
    #expect(found.count == 3)
    let times = found.map { $0.fix.time }
    // The first epoch takes its time from NAV-TIMEGPS, which joined it after the leap seconds
    // were stated; the others are timed by their own iTOW.
    #expect(
      times == [
        UTCTime(hour: 21, minute: 19, second: 20), UTCTime(hour: 21, minute: 19, second: 21),
        UTCTime(hour: 21, minute: 19, second: 22),
      ])
    #expect(found[0].fix.date == UTCDate(year: 2019, month: 4, day: 22))
    #expect(found.allSatisfy { $0.fix.latitude == 10 && $0.fix.longitude == 20 })
    #expect(found.allSatisfy { $0.fix.mode == .threeD })
  }

  @Test("a time of week converts across midnight and the week")
  func timeOfWeekConversion() {
    // Sunday 00:00:10 GPS with 18 leap seconds is Saturday 23:59:52 UTC.
    let bytes =
      UBXEpochSamples.timeGPS(timeOfWeek: 10_000, leapSeconds: 18)
      + UBXEpochSamples.posLLH(timeOfWeek: 10_000)
      + UBXEpochSamples.posLLH(timeOfWeek: 11_000)
    let found = epochs(bytes)
    #expect(found.first?.fix.time == UTCTime(hour: 23, minute: 59, second: 52))
    // Week 2050 began on 2019-04-21; its first seconds are still 2019-04-20 in UTC.
    #expect(found.first?.fix.date == UTCDate(year: 2019, month: 4, day: 20))
  }
}
