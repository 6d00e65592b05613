import NMEA
import Testing

// Garmin's proprietary sentences that gpsd reads and a Garmin user would miss: `$PGRME`
// (error estimates), `$PGRMZ` (altitude in feet), `$PGRMM` (map datum). The cycles are the
// Garmin 15x's and 17N's of gpsd's corpus.

@Suite("Garmin sentences")
struct GarminTests {
  @Test("PGRME, PGRMZ and PGRMM parse to their own types")
  func parsing() throws {
    #expect(
      try parse("$PGRME,7.6,M,41.9,M,42.6,M")
        == .garminErrorEstimates(
          GarminErrorEstimates(horizontal: 7.6, vertical: 41.9, spherical: 42.6)))
    #expect(try parse("$PGRME,,,,,,") == .garminErrorEstimates(GarminErrorEstimates()))
    #expect(
      try parse("$PGRMZ,1577,f,3")
        == .garminAltitude(GarminAltitude(altitudeFeet: 1577, fixMode: .threeD)))
    #expect(
      try parse("$PGRMZ,-20,f,2")
        == .garminAltitude(GarminAltitude(altitudeFeet: -20, fixMode: .twoD)))
    #expect(try parse("$PGRMM,WGS 84") == .garminDatum(GarminDatum(datum: "WGS 84")))
    #expect(try parse("$PGRMM,") == .garminDatum(GarminDatum(datum: nil)))
    guard case .garminAltitude(let altitude) = try parse("$PGRMZ,1000,f,3") else {
      Issue.record()
      return
    }
    #expect(altitude.altitudeMetres == 304.8)
  }

  @Test(
    "a wrong unit is a bad field",
    arguments: [
      ("$PGRME,7.6,F,41.9,M,42.6,M", NMEAParseError.badField(index: 2)),
      ("$PGRME,7.6,M,41.9,M,42.6,K", .badField(index: 6)),
      ("$PGRMZ,1577,M,3", .badField(index: 2)),
      ("$PGRMZ,15x77,f,3", .badField(index: 1)),
    ])
  func malformed(text: String, error: NMEAParseError) {
    #expect(throws: error) { try parse(text) }
  }

  @Test("a negative error estimate is dropped alone")
  func negativeError() throws {
    guard case .garminErrorEstimates(let garmin) = try parse("$PGRME,7.6,M,-41.9,M,42.6,M")
    else { Issue.record(); return }
    #expect(garmin == GarminErrorEstimates(horizontal: 7.6, vertical: nil, spherical: 42.6))
    #expect(impossibleValues("$PGRME,7.6,M,-41.9,M,42.6,M").accuracy == 1)
  }

  /// The Garmin 15x's cycle: RMC, GGA, GSA, three GSV, PGRME, PGRMV.
  static func garmin15x(_ second: Int, altitude: String = "1577.4") -> [String] {
    let time = "1132" + format2(second)
    return [
      "GPRMC,\(time),A,3238.9148,N,10822.4466,W,005.3,247.1,181022,009.3,E",
      "GPGGA,\(time),3238.9148,N,10822.4466,W,2,08,1.1,\(altitude),M,-24.6,M,,",
      "GPGSA,A,3,02,05,11,12,18,20,25,29,,,,,1.4,1.1,0.9",
      "GPGSV,3,1,11,02,60,319,36,05,77,132,38,11,29,052,29,12,46,186,46",
      "GPGSV,3,2,11,18,19,264,16,20,48,049,35,25,58,245,39,29,45,323,38",
      "GPGSV,3,3,11,06,01,064,00,13,09,132,00,15,10,164,00",
      "PGRME,7.\(second),M,41.\(second),M,42.\(second),M",
      "PGRMV,-2.5,-1.1,0.3",
    ]
  }

  @Test(
    "PGRME's estimates are the fix's horizontal, vertical and spherical accuracy, in their epoch")
  func errorEstimates() {
    let emitted = feed((0..<6).flatMap { Self.garmin15x($0) })
    #expect(emitted.count == 6)
    for (second, (_, epoch)) in emitted.enumerated() {
      #expect(epoch.fix.time?.second == UInt8(second))
      #expect(epoch.fix.horizontalAccuracy == Double("7.\(second)"), "\(epoch.timeText)")
      #expect(epoch.fix.verticalAccuracy == Double("41.\(second)"), "\(epoch.timeText)")
      #expect(epoch.fix.sphericalAccuracy == Double("42.\(second)"), "\(epoch.timeText)")
    }
    // PGRME ends the cycle (it comes last but for the unknown PGRMV): learned, and the epoch
    // is out as soon as it arrives.
    #expect(emitted.last?.index == 6 * 8 - 2)
  }

  @Test("PGRMZ gives the altitude when the epoch has no GGA altitude, and its dimension")
  func altitudeInFeet() throws {
    // An RMC-only receiver with PGRMZ.
    let withoutGGA = try #require(
      feed([
        "GPRMC,113258,A,3238.9148,N,10822.4466,W,005.3,247.1,181022,009.3,E",
        "PGRMZ,5175,f,3",
      ]).first?.epoch.fix)
    #expect(withoutGGA.altitudeMSL == 5175 * 0.3048)
    #expect(withoutGGA.mode == .threeD)

    // GGA's own altitude wins, whatever the order.
    let head = Array(Self.garmin15x(0).prefix(2))
    for bodies in [head + ["PGRMZ,9999,f,3"], ["PGRMZ,9999,f,3"] + head] {
      let fix = try #require(feed(bodies).first?.epoch.fix)
      #expect(fix.altitudeMSL == 1577.4, "\(bodies)")
    }

    // Dimension 2: the altitude is the user's, held; the fix is 2D.
    let held = try #require(
      feed([
        "GPRMC,113258,A,3238.9148,N,10822.4466,W,005.3,247.1,181022,009.3,E",
        "PGRMZ,5175,f,2",
      ]).first?.epoch.fix)
    #expect(held.mode == .twoD && held.altitudeMSL == 5175 * 0.3048)

    // Dimension 1: no fix, no altitude.
    let none = try #require(
      feed([
        "GPRMC,113258,A,3238.9148,N,10822.4466,W,005.3,247.1,181022,009.3,E",
        "PGRMZ,5175,f,1",
      ]).first?.epoch.fix)
    #expect(none.altitudeMSL == nil && none.mode == .twoD)

    // Without a valid position, no fix: the altitude is not reported either.
    let invalid = try #require(
      feed([
        "GPRMC,113258,V,,,,,,,181022,,", "PGRMZ,5175,f,3",
      ]).first?.epoch.fix)
    #expect(invalid.mode == .noFix && invalid.altitudeMSL == nil)
  }

  @Test("the datum of PGRMM (and of DTM, named as gpsd names it) is kept in later fixes")
  func datum() {
    // The 17N sends PGRMM after the end of its cycle: it names the datum from then on.
    let cycle17N: (Int) -> [String] = { second in
      let time = "0938" + format2(second)
      return [
        "GPRMC,\(time),A,5213.1439,N,02100.6511,E,000.0,226.0,160305,004.2,E,D",
        "GPGGA,\(time),5213.1439,N,02100.6511,E,2,10,0.9,137.2,M,36.2,M,,",
        "GPGSA,A,3,03,06,15,16,18,19,21,22,,27,29,,1.6,0.9,1.3",
        "PGRME,1.7,M,2.4,M,3.0,M",
        "GPGLL,5213.1439,N,02100.6511,E,\(time),A,D",
        "GPVTG,226,T,222,M,000.0,N,0000.0,K,D",
        "PGRMM,WGS 84",
      ]
    }
    // The first cycle without it: no datum is named until one is.
    let emitted = feed(Array(cycle17N(0).dropLast()) + (1..<4).flatMap(cycle17N))
    #expect(emitted.count == 4)
    #expect(emitted[0].epoch.fix.datum == nil)
    #expect(emitted.dropFirst().allSatisfy { $0.epoch.fix.datum == "WGS 84" })

    // A DTM after each cycle's RMC, as the Saab R4 sends it.
    let codes = ["W84,C", "S85,,,,,,,W84", "999,,,,,,,W84", "NAD83,,,,,,,W84"]
    let dtm = feed(
      codes.enumerated().flatMap { second, code in
        var cycle = Self.garmin15x(second)
        cycle.insert("GPDTM,\(code)", at: 1)
        return cycle
      })
    #expect(dtm.map(\.epoch.fix.datum) == ["WGS84", "SGS85", "User Defined", "NAD83"])

    // Kept in 40 bytes, as gpsd keeps it; fixes with the same datum are equal.
    var fix = Fix()
    fix.datum = String(repeating: "D", count: 50)
    #expect(fix.datum == String(repeating: "D", count: 40))
    var other = Fix()
    other.datum = String(repeating: "D", count: 40)
    #expect(fix == other && fix.hashValue == other.hashValue)
    other.datum = "WGS 84"
    #expect(fix != other)
  }
}
