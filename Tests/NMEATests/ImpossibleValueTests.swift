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
    #expect(statistics.parseErrors == 2)
  }

  @Test("a negative speed and a track of 720° are refused with their RMC, not passed through")
  func speedAndTrack() throws {
    let (epochs, statistics) = Self.decode(
      Self.cycle(0) + Self.cycle(1, speed: "-5.0") + Self.cycle(2, course: "720.0"))
    #expect(epochs.count == 3)
    #expect(epochs[0].fix.speed != nil && epochs[0].fix.course == 247.1)
    for epoch in epochs.dropFirst() {
      #expect(epoch.fix.speed == nil, "\(epoch.timeText)")
      #expect(epoch.fix.course == nil, "\(epoch.timeText)")
    }
    #expect(statistics.impossibleValues.speed == 1)
    #expect(statistics.impossibleValues.course == 1)
    #expect(statistics.impossibleValues.total == 2 && statistics.parseErrors == 2)
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

  @Test("each refusal is a parse error event with its reason, counted by reason")
  func countedByReason() throws {
    let bodies = [
      "GPRMC,120000,A,3238.9148,N,10822.4466,W,005.3,247.1,290299,009.3,E",
      "GPGGA,250000,3238.9148,N,10822.4466,W,1,08,1.1,1577.4,M,-24.6,M,,",
      "GPGGA,120000,9138.9148,N,10822.4466,W,1,08,1.1,1577.4,M,-24.6,M,,",
      "GPGGA,120000,3238.9148,N,18822.4466,W,1,08,1.1,1577.4,M,-24.6,M,,",
      "GPGGA,120000,3268.9148,N,10822.4466,W,1,08,1.1,1577.4,M,-24.6,M,,",
      "GPRMC,120000,A,3238.9148,N,10822.4466,W,005.3,247.1,181022,200.0,E",
      "GPGSA,A,3,02,05,11,12,18,20,25,29,,,,,-1.4,1.1,0.9",
      "GPVTG,247.1,T,,M,-5.3,N,9.8,K,A",
      "GPGSV,3,0,11,02,60,319,36,05,77,132,38,11,29,052,29,12,46,186,46",
    ]
    var decoder = NMEADecoder()
    var reasons: [ImpossibleValue] = []
    for body in bodies {
      decoder.decode(wire(body)) { event in
        guard case .parseError(_, let error) = event else { return }
        guard case .impossibleValue(let reason, _) = error else {
          Issue.record("\(body): \(error)")
          return
        }
        reasons.append(reason)
      }
    }
    #expect(
      reasons == [
        .date, .timeOfDay, .latitude, .longitude, .arcMinutes, .magneticVariation, .accuracy,
        .speed, .messageNumber,
      ])
    let counted = decoder.statistics.impossibleValues
    for reason in ImpossibleValue.allCases where reason != .course {
      #expect(counted[reason] == 1, "\(reason)")
    }
    #expect(counted.course == 0)
    #expect(counted.total == bodies.count)
    #expect(counted.counts.map(\.reason) == ImpossibleValue.allCases.filter { $0 != .course })
    #expect(decoder.statistics.parseErrors == bodies.count)
    #expect(decoder.statistics.framer.sentences == bodies.count)
  }
}
