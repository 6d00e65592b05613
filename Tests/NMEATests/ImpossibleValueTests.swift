import NMEA
import Testing

// Absurd values with valid checksums, through the whole decoder: the cases found by trying
// `serialgps decode --json` as a hostile user would (the server uses the same path). The
// parser's own cases, reason by reason, are in ParserTests.

@Suite("Impossible values")
struct ImpossibleValueTests {
  /// A GGA and RMC cycle at 12:00:`second` with the RMC's speed, course and date given.
  static func cycle(
    _ second: Int, speed: String = "005.3", course: String = "247.1", date: String = "181022"
  ) -> [String] {
    let time = "1200" + format2(second)
    return [
      "GPRMC,\(time),A,3238.9148,N,10822.4466,W,\(speed),\(course),\(date),009.3,E",
      "GPGGA,\(time),3238.9148,N,10822.4466,W,1,08,1.1,1577.4,M,-24.6,M,,",
    ]
  }

  static func decode(_ bodies: [String]) -> (epochs: [Epoch], statistics: DecoderStatistics) {
    var decoder = NMEADecoder()
    var epochs: [Epoch] = []
    for body in bodies {
      decoder.decode(wire(body)) { if case .epoch(let epoch) = $0 { epochs.append(epoch) } }
    }
    decoder.finish { if case .epoch(let epoch) = $0 { epochs.append(epoch) } }
    return (epochs, decoder.statistics)
  }

  @Test("31 and 30 February never become a fix's date; the GGA of the epoch still counts")
  func februaryThirtyFirst() throws {
    let (epochs, statistics) = Self.decode(
      Self.cycle(0) + Self.cycle(1, date: "310299") + Self.cycle(2, date: "300299"))
    #expect(epochs.count == 3)
    for epoch in epochs {
      let date = try #require(epoch.fix.date, "\(epoch.timeText)")
      // The date of the last possible RMC is carried; February 1999 is never seen.
      #expect(date == UTCDate(year: 2022, month: 10, day: 18), "\(epoch.timeText)")
      #expect(epoch.fix.mode == .threeD && epoch.fix.altitudeMSL == 1577.4)
    }
    #expect(statistics.impossibleValues.date == 2)
    #expect(statistics.parseErrors == 0)
  }

  @Test("a negative speed and a track of 720° are dropped alone; the RMC's other fields stand")
  func speedAndTrack() throws {
    let (epochs, statistics) = Self.decode(
      Self.cycle(0) + Self.cycle(1, speed: "-5.0") + Self.cycle(2, course: "720.0"))
    #expect(epochs.count == 3)
    #expect(epochs[0].fix.speed != nil && epochs[0].fix.course == 247.1)
    #expect(epochs[1].fix.speed == nil && epochs[1].fix.course == 247.1)
    #expect(epochs[2].fix.course == nil && epochs[2].fix.speed == epochs[0].fix.speed)
    for epoch in epochs {
      #expect(epoch.fix.magneticVariation == 9.3, "\(epoch.timeText)")
      #expect(epoch.fix.date == UTCDate(year: 2022, month: 10, day: 18), "\(epoch.timeText)")
    }
    #expect(statistics.impossibleValues.speed == 1)
    #expect(statistics.impossibleValues.course == 1)
    #expect(statistics.impossibleValues.total == 2 && statistics.parseErrors == 0)
  }

  @Test("an unknown magnetic variation (999.9,E) keeps every RMC's date, time and position")
  func unknownMagneticVariation() throws {
    // Survey and RTK receivers write 999.9 for a variation they do not know; refusing the
    // RMC for it left every fix of a recording without a date.
    var bodies: [String] = []
    for second in 0..<40 {
      let time = "1200" + format2(second)
      bodies += [
        "GPRMC,\(time),A,3238.9148,N,10822.4466,W,005.3,247.1,181022,999.9,E,A",
        "GPGGA,\(time),3238.9148,N,10822.4466,W,1,08,1.1,1577.4,M,-24.6,M,,",
      ]
    }
    let (epochs, statistics) = Self.decode(bodies)
    #expect(epochs.count == 40)
    for epoch in epochs {
      #expect(epoch.fix.date == UTCDate(year: 2022, month: 10, day: 18), "\(epoch.timeText)")
      #expect(epoch.fix.time != nil && epoch.fix.mode == .threeD, "\(epoch.timeText)")
      #expect(epoch.fix.speed != nil && epoch.fix.course == 247.1, "\(epoch.timeText)")
      #expect(epoch.fix.magneticVariation == nil, "\(epoch.timeText)")
    }
    #expect(statistics.impossibleValues.magneticVariation == 40)
    #expect(statistics.parseErrors == 0)
  }

  @Test("receivers' sentinels with valid checksums never become values in the fix")
  func sentinelsInTheFix() throws {
    let (epochs, _) = Self.decode([
      "GPRMC,120000,A,3238.9148,N,10822.4466,W,999.99,247.1,181022,009.3,E,A",
      "GPGGA,120000,3238.9148,N,10822.4466,W,1,08,99.99,-9999.9,M,-24.6,M,,",
      "GPRMC,120001,A,3238.9148,N,10822.4466,W,005.3,247.1,181022,009.3,E,A",
      "GPGGA,120001,3238.9148,N,10822.4466,W,9,08,1.1,1577.4,M,-24.6,M,,",
    ])
    #expect(epochs.count == 2)
    let first = try #require(epochs.first?.fix)
    #expect(first.speed == nil, "999.99 knots is not 514 m/s")
    #expect(first.altitudeMSL == nil, "-9999.9 m is no altitude")
    #expect(first.hdop == nil, "HDOP 99.99 is unknown")
    #expect(first.mode == .twoD, "no altitude: a 2D fix")
    #expect(first.course == 247.1 && first.position != nil)
    let second = try #require(epochs.last?.fix)
    #expect(second.quality == .gps, "quality 9 dropped: RMC's mode indicator stands for it")
    #expect(second.altitudeMSL == nil, "a GGA without a fix quality gives no position part")
  }

  @Test("an RMC of status V beside a GGA of quality 1 is no fix, in either order")
  func voidStatusBesideValidQuality() throws {
    let gga = "GPGGA,120000,3238.9148,N,10822.4466,W,1,08,1.1,1577.4,M,-24.6,M,,"
    let rmc = "GPRMC,120000,V,3238.9148,N,10822.4466,W,005.3,247.1,181022,009.3,E,N"
    for bodies in [[gga, rmc], [rmc, gga]] {
      let (epochs, _) = Self.decode(bodies)
      let fix = try #require(epochs.first?.fix)
      #expect(epochs.count == 1)
      #expect(fix.mode == .noFix && fix.position == nil, "\(bodies)")
      #expect(fix.date == UTCDate(year: 2022, month: 10, day: 18), "the date still counts")
    }
  }

  @Test("message 99 of 9 makes no satellite view")
  func gsvMessageNumber() {
    let (epochs, statistics) = Self.decode(
      Self.cycle(0) + ["GPGSV,9,99,36,01,40,083,46,02,17,308,41,12,07,344,39,14,22,228,45"]
        + Self.cycle(1))
    #expect(epochs.count == 2)
    #expect(epochs.allSatisfy { $0.satellites == nil })
    #expect(statistics.impossibleValues.messageNumber == 1)
  }

  @Test("each impossible value is counted by reason; only a time or message number refuses")
  func countedByReason() throws {
    let bodies: [(String, ImpossibleValue)] = [
      ("GPRMC,120000,A,3238.9148,N,10822.4466,W,005.3,247.1,290299,009.3,E", .date),
      ("GPGGA,250000,3238.9148,N,10822.4466,W,1,08,1.1,1577.4,M,-24.6,M,,", .timeOfDay),
      ("GPGGA,120000,9138.9148,N,10822.4466,W,1,08,1.1,1577.4,M,-24.6,M,,", .latitude),
      ("GPGGA,120000,3238.9148,N,18822.4466,W,1,08,1.1,1577.4,M,-24.6,M,,", .longitude),
      ("GPGGA,120000,3268.9148,N,10822.4466,W,1,08,1.1,1577.4,M,-24.6,M,,", .arcMinutes),
      ("GPRMC,120000,A,3238.9148,N,10822.4466,W,005.3,247.1,181022,200.0,E", .magneticVariation),
      ("GPRMC,120000,A,3238.9148,N,10822.4466,W,005.3,400.0,181022,009.3,E", .course),
      ("GPGSA,A,3,02,05,11,12,18,20,25,29,,,,,-1.4,1.1,0.9", .accuracy),
      ("GPVTG,247.1,T,,M,-5.3,N,9.8,K,A", .speed),
      ("GPGSV,3,0,11,02,60,319,36,05,77,132,38,11,29,052,29,12,46,186,46", .messageNumber),
      ("GPGGA,120000,3238.9148,N,10822.4466,W,1,08,1.1,-9999.9,M,-24.6,M,,", .altitude),
      ("GPGGA,120000,3238.9148,N,10822.4466,W,1,08,1.1,1577.4,M,-999.9,M,,", .geoidSeparation),
      ("GPGGA,120000,3238.9148,N,10822.4466,W,9,08,1.1,1577.4,M,-24.6,M,,", .fixQuality),
      ("GPGSA,A,7,02,05,11,12,18,20,25,29,,,,,1.4,1.1,0.9", .fixMode),
      ("GPGGA,120000,3238.9148,N,10822.4466,W,1,4294967304,1.1,1577.4,M,-24.6,M,,", .integerRange),
    ]
    #expect(Set(bodies.map(\.1)) == Set(ImpossibleValue.allCases), "one sentence per reason")
    var decoder = NMEADecoder()
    var refused: [ImpossibleValue] = []
    for (body, _) in bodies {
      decoder.decode(wire(body)) { event in
        guard case .parseError(_, let error) = event else { return }
        guard case .impossibleValue(let reason, _) = error else {
          Issue.record("\(body): \(error)")
          return
        }
        refused.append(reason)
      }
    }
    #expect(refused == [.timeOfDay, .messageNumber])
    let counted = decoder.statistics.impossibleValues
    for reason in ImpossibleValue.allCases { #expect(counted[reason] == 1, "\(reason)") }
    #expect(counted.total == bodies.count)
    #expect(counted.counts.map(\.reason) == ImpossibleValue.allCases)
    #expect(decoder.statistics.parseErrors == 2)
    #expect(decoder.statistics.framer.sentences == bodies.count)
  }
}
