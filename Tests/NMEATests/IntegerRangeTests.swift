import NMEA
import Testing

// Integer fields beyond what a 32-bit `Int` holds, with valid checksums, through the whole
// decoder. On a 32-bit board such a field wrapped (a GGA satellite count of 4294967304 read
// as 8) or trapped (an elevation of -2147483648 negated); each must be dropped alone and
// counted on every build, the rest of its sentence standing.

@Suite("Integer ranges")
struct IntegerRangeTests {
  /// The sentence `body` (without `$` and checksum) decoded with a valid checksum: the
  /// sentence the decoder handed on and what it counted.
  static func decodeOne(_ body: String) throws -> (Sentence, ImpossibleValueStatistics) {
    var decoder = NMEADecoder()
    var sentences: [Sentence] = []
    var errors: [NMEAParseError] = []
    decoder.decode(wire(body)) { event in
      switch event {
      case .sentence(let sentence): sentences.append(sentence)
      case .parseError(_, let error): errors.append(error)
      default: break
      }
    }
    #expect(errors.isEmpty, "\(body): \(errors)")
    #expect(sentences.count == 1, "\(body)")
    return (try #require(sentences.first), decoder.statistics.impossibleValues)
  }

  static let ggaHead = "GPGGA,120000,3238.9148,N,10822.4466,W,1,"
  static let ggaTail = ",1.1,1577.4,M,-24.6,M,,"

  @Test("a GGA satellite count of 4294967304 is dropped and counted, never read as 8")
  func ggaSatelliteCount() throws {
    let (sentence, counted) = try Self.decodeOne(Self.ggaHead + "4294967304" + Self.ggaTail)
    guard case .gga(let gga) = sentence else { Issue.record("not GGA: \(sentence)"); return }
    #expect(gga.satellitesUsed == nil)
    #expect(counted.integerRange == 1 && counted.total == 1)
    #expect(gga.time == UTCTime(hour: 12, minute: 0, second: 0))
    #expect(gga.position != nil && gga.quality == .gps)
    #expect(gga.hdop == 1.1 && gga.altitudeMSL == 1577.4 && gga.geoidSeparation == -24.6)
  }

  @Test(
    "the largest integer every build holds is read; one more is dropped",
    arguments: [
      ("2147483647", 2_147_483_647), ("2147483648", nil), ("000000000000000008", 8),
      ("999999999999999999", nil), ("18446744073709551624", nil),
      ("0000000000000000000000000012", 12),
    ])
  func limits(field: String, expected: Int?) throws {
    let (sentence, counted) = try Self.decodeOne(Self.ggaHead + field + Self.ggaTail)
    guard case .gga(let gga) = sentence else { Issue.record("not GGA: \(sentence)"); return }
    #expect(gga.satellitesUsed == expected, "\(field)")
    #expect(counted.integerRange == (expected == nil ? 1 : 0), "\(field)")
    #expect(gga.hdop == 1.1, "the fields after it stand")
  }

  @Test("a GSV elevation of -2147483648 is dropped; the satellite, its azimuth and SNR stay")
  func gsvElevation() throws {
    let (sentence, counted) = try Self.decodeOne(
      "GPGSV,1,1,02,05,-2147483648,100,40,07,-2147483647,200,30")
    guard case .gsv(let gsv) = sentence else { Issue.record("not GSV: \(sentence)"); return }
    #expect(
      Array(gsv) == [
        SatelliteInView(id: 5, elevation: nil, azimuth: 100, snr: 40),
        SatelliteInView(id: 7, elevation: -2_147_483_647, azimuth: 200, snr: 30),
      ])
    #expect(counted.integerRange == 1 && counted.total == 1)
    #expect(gsv.satellitesInView == 2)
  }

  @Test("a ZDA time zone of -2147483648 is dropped; the time, date and zone minutes stay")
  func zdaTimeZone() throws {
    let (sentence, counted) = try Self.decodeOne("GPZDA,120000.00,18,10,2022,-2147483648,30")
    guard case .zda(let zda) = sentence else { Issue.record("not ZDA: \(sentence)"); return }
    #expect(zda.localZoneHours == nil && zda.localZoneMinutes == 30)
    #expect(zda.time == UTCTime(hour: 12, minute: 0, second: 0))
    #expect(zda.date == UTCDate(year: 2022, month: 10, day: 18))
    #expect(counted.integerRange == 1 && counted.total == 1)
  }

  @Test("a PUBX,04 leap-second count past 32 bits is dropped, not wrapped to 18")
  func pubxLeapSeconds() throws {
    let (sentence, counted) = try Self.decodeOne(
      "PUBX,04,073731.00,091202,113851.00,1196,4294967314,1930035,-2660.664,43")
    guard case .pubxTime(let pubx) = sentence else { Issue.record("not PUBX: \(sentence)"); return }
    #expect(pubx.leapSeconds == nil && pubx.week == 1196 && pubx.clockBias == 1_930_035)
    #expect(counted.integerRange == 1)
  }
}
