import NMEA
import Testing

/// Feeds sentence bodies (`GPGGA,…`, framed with checksum) one at a time and records after
/// which sentence (its index) each epoch was emitted; `flush` marks the end of input.
func feed(_ bodies: [String], flush: Bool = true) -> [(index: Int, epoch: Epoch)] {
  var decoder = NMEADecoder()
  var out: [(index: Int, epoch: Epoch)] = []
  for (index, body) in bodies.enumerated() {
    decoder.decode(wire(body)) { if case .epoch(let epoch) = $0 { out.append((index, epoch)) } }
  }
  if flush {
    decoder.finish { if case .epoch(let epoch) = $0 { out.append((bodies.count, epoch)) } }
  }
  return out
}

/// A u-blox M8-like cycle at `second` seconds past 12:00:00 (multi-GNSS, NMEA 4.10).
func ubloxCycle(_ second: Int, date: String = "230394", latitudeMinutes: Int = 7038) -> [String] {
  let time = String(format2(12)) + format2(second / 60) + format2(second % 60) + ".00"
  let latitude =
    "48" + format2(latitudeMinutes / 1000) + "." + String(format3(latitudeMinutes % 1000))
  return [
    "GNRMC,\(time),A,\(latitude),N,01131.000,E,1.944,84.4,\(date),,,A",
    "GNVTG,84.4,T,,M,1.944,N,3.600,K,A",
    "GNGGA,\(time),\(latitude),N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,",
    "GNGSA,A,3,10,16,21,26,,,,,,,,,1.6,0.9,1.3,1",
    "GNGSA,A,3,70,80,,,,,,,,,,,1.6,0.9,1.3,2",
    "GPGSV,2,1,05,10,55,120,44,16,40,080,41,21,33,300,38,26,20,200,35,1",
    "GPGSV,2,2,05,31,05,010,,1",
    "GLGSV,1,1,03,70,50,100,40,80,30,250,36,81,10,150,,1",
    "GNGLL,\(latitude),N,01131.000,E,\(time),A,A",
    "GNZDA,\(time),23,03,1994,00,00",
  ]
}

func format2(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }
func format3(_ value: Int) -> String {
  value < 10 ? "00\(value)" : value < 100 ? "0\(value)" : "\(value)"
}

extension Epoch {
  var timeText: String { fix.time.map { "\($0)" } ?? "nil" }
}

@Suite("Fix builder")
struct FixBuilderTests {
  // MARK: Epochs

  @Test("one fix per epoch, in order, with the epoch's time")
  func oneFixPerEpoch() {
    let bodies = (0..<5).flatMap { ubloxCycle($0) }
    let emitted = feed(bodies)
    #expect(emitted.map(\.epoch.timeText) == (0..<5).map { "12:00:0\($0).000" })
  }

  @Test("coordinate: the position when the epoch has one, nil for an epoch without")
  func coordinate() throws {
    let positioned = try #require(feed(ubloxCycle(1)).first?.epoch.fix)
    let position = try #require(positioned.coordinate)
    #expect(abs(position.latitude - (48 + 7.038 / 60)) < 1e-9)
    #expect(abs(position.longitude - (11 + 31.0 / 60)) < 1e-9)
    // A receiver without a fix yet: time, no position.
    let searching = try #require(
      feed(["GPRMC,120001.00,V,,,,,,,230394,,,N", "GPGGA,120001.00,,,,,0,00,99.99,,,,,,"])
        .first?.epoch.fix)
    #expect(searching.time != nil)
    #expect(searching.coordinate == nil)
  }

  @Test("before the cycle end is learned, an epoch closes when the time changes")
  func closesOnTimeChange() {
    let first = ubloxCycle(0)
    let emitted = feed(first + ubloxCycle(1), flush: false)
    #expect(emitted.count == 1)
    #expect(emitted.first?.index == first.count)  // on the next cycle's RMC
  }

  @Test("once learned, the epoch is emitted on the cycle's last sentence, without waiting")
  func closesAtLearnedCycleEnd() {
    let cycle = ubloxCycle(0).count
    let bodies = (0..<6).flatMap { ubloxCycle($0) }
    let emitted = feed(bodies, flush: false)
    // Two cycles to learn (each closed by the next one's first sentence), then each epoch is
    // emitted on its own ZDA.
    #expect(emitted.count == 6)
    #expect(emitted[0].index == cycle && emitted[1].index == 2 * cycle)
    for n in 2..<6 { #expect(emitted[n].index == (n + 1) * cycle - 1, "cycle \(n)") }

    var builder = FixBuilder()
    var count = 0
    for body in bodies {
      let bytes = wire(body)
      var framer = NMEAFramer()
      framer.feed(bytes) { frame in
        guard case .sentence(let raw) = frame, let sentence = try? Sentence(parsing: raw) else {
          return
        }
        builder.add(sentence) { _ in count += 1 }
      }
    }
    #expect(builder.hasLearnedCycleEnd)
    #expect(builder.statistics.epochsClosedAtCycleEnd == 4)
    #expect(builder.statistics.epochs == count)
  }

  @Test("a cycle of more than sixteen kinds of sentence is learned and closed at its end")
  func manyKindsPerCycle() {
    // Twenty different cycle keys per epoch (GSV parts and GSA systems of several talkers),
    // more than the builder keeps inline; the last one (a GST) must still be learned as the
    // cycle's end, which needs its count of one per cycle.
    func cycle(_ second: Int) -> [String] {
      var bodies = Array(ubloxCycle(second).dropLast())  // without the ZDA
      for talker in ["GB", "GQ", "GI"] {
        bodies.append("\(talker)GSV,2,1,05,10,55,120,44,16,40,080,41,21,33,300,38,26,20,200,35,1")
        bodies.append("\(talker)GSV,2,2,05,31,05,010,,1")
      }
      for system in 3...6 { bodies.append("GNGSA,A,3,10,16,,,,,,,,,,,1.6,0.9,1.3,\(system)") }
      bodies.append("GNGST,12\(format2(second / 60))\(format2(second % 60)).00,1,2,1,0,1.0,1.0,2.0")
      return bodies
    }
    let length = cycle(0).count
    #expect(length == 20)  // twenty sentences, each its own key
    let emitted = feed((0..<5).flatMap(cycle), flush: false)
    #expect(emitted.count == 5)
    for n in 2..<5 { #expect(emitted[n].index == (n + 1) * length - 1, "cycle \(n)") }
  }

  @Test("a learned cycle end that proves wrong is forgotten, without a second fix for the time")
  func wrongCycleEndForgotten() {
    // Three cycles ending with GLL, then the receiver adds a ZDA after the GLL.
    var bodies = (0..<3).flatMap { Array(ubloxCycle($0).dropLast()) }
    for second in 3..<8 { bodies += ubloxCycle(second) }
    let emitted = feed(bodies)
    let times = emitted.map(\.epoch.timeText)
    #expect(times == (0..<8).map { "12:00:0\($0).000" })
    var decoder = NMEADecoder()
    for body in bodies { decoder.decode(wire(body)) { _ in } }
    #expect(decoder.statistics.builder.cycleEndsForgotten == 1)
    #expect(decoder.statistics.builder.lateSentences == 1)
    #expect(decoder.builder.hasLearnedCycleEnd)  // learned again: the ZDA
  }

  @Test("GGA every third second after an RMC every second: no GGA is lost to a cycle end guessed")
  func irregularCycles() {
    var bodies: [String] = []
    for second in 0..<12 {
      let time = "1200" + format2(second)
      bodies.append("GPRMC,\(time),A,4807.038,N,01131.000,E,022.4,084.4,230394,003.1,W,A")
      if second % 3 == 0 {
        bodies.append("GPGGA,\(time),4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,")
      }
    }
    var decoder = NMEADecoder()
    var epochs: [Epoch] = []
    for body in bodies {
      decoder.decode(wire(body)) { if case .epoch(let epoch) = $0 { epochs.append(epoch) } }
    }
    decoder.finish { if case .epoch(let epoch) = $0 { epochs.append(epoch) } }
    #expect(epochs.map { $0.fix.time?.second } == (0..<12).map { UInt8($0) })
    // Every GGA's altitude reaches its epoch.
    #expect(epochs.map { $0.fix.altitudeMSL != nil } == (0..<12).map { $0 % 3 == 0 })
    #expect(decoder.statistics.builder.lateSentences == 0)
    // RMC is followed by GGA in some epochs: it is never taken for the end of the cycle.
    #expect(!decoder.builder.hasLearnedCycleEnd)
  }

  @Test("a sentence for an epoch already emitted never makes a second fix for that time")
  func lateSentence() {
    var bodies = ubloxCycle(0) + ubloxCycle(1)
    bodies.append("GPGGA,120000.00,4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,")
    bodies += ubloxCycle(2)
    let times = feed(bodies).map(\.epoch.timeText)
    #expect(times == ["12:00:00.000", "12:00:01.000", "12:00:02.000"])
  }

  @Test(
    "property: sentences deleted at random still give one fix per epoch, never two for a time",
    arguments: [(1, 0.1), (2, 0.2), (3, 0.35), (4, 0.5)])
  func randomDeletions(seed: UInt64, probability: Double) {
    var generator = SeededGenerator(seed: seed)
    var bodies: [String] = []
    var required: [String] = []  // cycles with a position sentence left: must have an epoch
    var possible: Set<String> = []  // cycles with only their ZDA left may have one
    var positions: [String: Int] = [:]
    var firstDated: UTCTime?
    for second in 0..<600 {
      let latitude = 7000 + second % 500
      var positionLeft = false
      var zdaLeft = false
      var dated = false
      for body in ubloxCycle(second, latitudeMinutes: latitude)
      where Double.random(in: 0..<1, using: &generator) >= probability {
        bodies.append(body)
        if body.hasPrefix("GNRMC") || body.hasPrefix("GNGGA") || body.hasPrefix("GNGLL") {
          positionLeft = true
        }
        if body.hasPrefix("GNZDA") { zdaLeft = true }
        if body.hasPrefix("GNRMC") || body.hasPrefix("GNZDA") { dated = true }
      }
      let time = UTCTime(hour: 12, minute: UInt8(second / 60), second: UInt8(second % 60))
      if positionLeft { required.append(time.description) }
      if positionLeft || zdaLeft { possible.insert(time.description) }
      if firstDated == nil, dated { firstDated = time }
      positions[time.description] = latitude
    }
    let emitted = feed(bodies).map(\.epoch)
    let times = emitted.map(\.timeText)
    // Every cycle with a position sentence left is one epoch; nothing else but cycles with
    // their ZDA left; in order, never twice.
    #expect(times.filter { required.contains($0) } == required)
    #expect(times.allSatisfy { possible.contains($0) })
    #expect(times == times.sorted() && Set(times).count == times.count)
    for epoch in emitted {
      guard let position = epoch.fix.position, let time = epoch.fix.time else { continue }
      // The position is the cycle's own, never a neighbour's.
      #expect(position.latitude.scaledMinutes % 1000 == UInt64(positions[time.description]! % 1000))
      if let firstDated, time >= firstDated {
        #expect(epoch.fix.date == UTCDate(year: 1994, month: 3, day: 23))
      }
    }
  }

  @Test("a cycle whose position sentences were all lost does not close at the learned end alone")
  func lostPositionSentences() {
    // The cycle ends with a GSV (no time); the third cycle loses its GGA and RMC.
    func cycle(_ second: Int, positions: Bool = true) -> [String] {
      let time = "1200\(format2(second))"
      let position = [
        "GPGGA,\(time),4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,",
        "GPRMC,\(time),A,4807.038,N,01131.000,E,0,0,230394,,,A",
      ]
      return (positions ? position : []) + [
        "GPGSA,A,3,10,16,21,26,,,,,,,,,1.6,0.9,1.3", "GPGSV,1,1,02,10,55,120,44,16,40,080,41",
      ]
    }
    let bodies = cycle(0) + cycle(1) + cycle(2) + cycle(3, positions: false) + cycle(4) + cycle(5)
    let emitted = feed(bodies).map(\.epoch)
    #expect(
      emitted.map(\.timeText) == [
        "12:00:00.000", "12:00:01.000", "12:00:02.000", "12:00:04.000", "12:00:05.000",
      ])
  }

  @Test("cycles without any time (no fix yet) are one epoch each")
  func untimedCycles() {
    let cycle = [
      "GPGGA,,,,,,0,,,,,,,,", "GPGSA,A,1,,,,,,,,,,,,,,,", "GPRMC,,V,,,,,,,,,,N",
      "GPVTG,,T,,M,,N,,K,N",
    ]
    let emitted = feed(Array(repeating: cycle, count: 4).flatMap { $0 })
    #expect(emitted.count == 4)
    #expect(emitted.allSatisfy { $0.epoch.fix.time == nil && $0.epoch.fix.mode == .noFix })
    #expect(emitted.allSatisfy { $0.epoch.fix.position == nil })
  }

  @Test("the first timed cycle after untimed ones is an epoch of its own (MediaTek cold start)")
  func firstTimedCycleAfterUntimed() {
    let untimed = [
      "GPRMC,,V,,,,,0.00,0.00,,,,N", "GPGGA,,,,,,0,0,,,M,,M,,", "GPGSA,A,1,,,,,,,,,,,,,,,",
    ]
    let timed = [
      "GPRMC,221011.000,V,,,,,0.00,0.00,,,,N", "GPGGA,221011.000,,,,,0,0,,,M,,M,,",
      "GPGSA,A,1,,,,,,,,,,,,,,,",
    ]
    let emitted = feed(untimed + untimed + timed)
    #expect(emitted.map(\.epoch.fix.time?.description) == [nil, nil, "22:10:11.000"])
    // The untimed cycle is emitted when the timed one begins, not merged into it.
    #expect(emitted.map(\.index) == [3, 6, 9])
  }

  @Test("a ZDA running ahead of the fixes (AC12) does not make epochs of its own")
  func strayZDA() {
    var bodies: [String] = []
    for second in 21..<26 {
      bodies.append("GPGGA,1932\(second).00,2037.72792,N,08704.08478,W,1,04,1.7,-30.40,M,-13.9,M,,")
      bodies.append("GPRMC,1932\(second).00,A,2037.7279,N,08704.0848,W,00.1,201.8,231207,01,W,A")
      bodies.append("GPZDA,1932\(second + 2).00,23,12,2007,00,00")
    }
    let emitted = feed(bodies).map(\.epoch)
    #expect(emitted.map(\.timeText) == (21..<26).map { "19:32:\($0).000" })
    #expect(emitted.allSatisfy { $0.fix.mode == .threeD })
    #expect(emitted.allSatisfy { $0.fix.date == UTCDate(year: 2007, month: 12, day: 23) })
  }

  // MARK: Dates

  @Test("the date from RMC or ZDA is carried to epochs with time-only sentences")
  func dateCarried() {
    let emitted = feed([
      "GPZDA,120000.00,04,07,2002,00,00",
      "GPGGA,120000.00,4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,",
      "GPGGA,120001.00,4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,",
      "GPRMC,120002.00,A,4807.038,N,01131.000,E,0,0,050702,,,A",
      "GPGGA,120003.00,4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,",
    ]).map(\.epoch.fix)
    #expect(
      emitted.map(\.date) == [
        UTCDate(year: 2002, month: 7, day: 4), UTCDate(year: 2002, month: 7, day: 4),
        UTCDate(year: 2002, month: 7, day: 5), UTCDate(year: 2002, month: 7, day: 5),
      ])
    #expect(emitted[1].timestamp?.iso8601() == "2002-07-04T12:00:01.000Z")
  }

  @Test("no date before any RMC or ZDA")
  func noDateYet() {
    let fix = feed(["GPGGA,120000.00,4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,"])[0].epoch
      .fix
    #expect(fix.date == nil && fix.timestamp == nil && fix.time != nil)
  }

  @Test("midnight: 23:59:59 → 00:00:00 before the RMC with the new date arrives")
  func midnightRollover() {
    let emitted = feed([
      "GPRMC,235959.00,A,4807.038,N,01131.000,E,0,0,311219,,,A",
      "GPGGA,235959.00,4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,",
      "GPGGA,000000.00,4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,",  // RMC lost
      "GPGGA,000001.00,4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,",
      "GPRMC,000001.00,A,4807.038,N,01131.000,E,0,0,010120,,,A",
      "GPGGA,000002.00,4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,",
    ]).map(\.epoch.fix)
    #expect(
      emitted.map { $0.timestamp?.description } == [
        "2019-12-31T23:59:59.000Z", "2020-01-01T00:00:00.000Z", "2020-01-01T00:00:01.000Z",
        "2020-01-01T00:00:02.000Z",
      ])
  }

  @Test("an old receiver's date is kept as it is: no 1024-week shift")
  func noWeekShift() {
    let fix = feed(["GNRMC,171926.00,A,3150.06082,S,11553.04604,E,0.029,,180315,,,A"])[0].epoch.fix
    #expect(fix.date == UTCDate(year: 2015, month: 3, day: 18))
  }

  // MARK: What a fix holds

  @Test("speed in m/s from knots, or from km/h when knots are missing; course")
  func speed() throws {
    let fromRMC = feed(["GPRMC,120000,A,4807.038,N,01131.000,E,10.0,84.4,230394,,,A"])[0].epoch.fix
    #expect(try #require(fromRMC.speed) == 10.0 * 1852.0 / 3600.0)
    #expect(fromRMC.course == 84.4)
    let fromVTG = feed([
      "GPGGA,120000,4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,",
      "GPVTG,90.0,T,,M,,N,36.0,K,A",
    ])[0].epoch.fix
    #expect(fromVTG.speed == 10.0 && fromVTG.course == 90.0)
    let invalid = feed([
      "GPGGA,120000,4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,",
      "GPVTG,90.0,T,,M,5.0,N,9.3,K,N",
    ])[0].epoch.fix
    #expect(invalid.speed == nil)
  }

  @Test("climb derived from successive 3D altitudes; reset by a fix without altitude")
  func climb() throws {
    let gga = { (time: String, altitude: String) in
      "GPGGA,\(time),4807.038,N,01131.000,E,1,08,0.9,\(altitude),M,46.9,M,,"
    }
    let fixes = feed([
      gga("120000.0", "100.0"), gga("120000.5", "101.0"), gga("120002.5", "99.0"),
      "GPRMC,120003.5,A,4807.038,N,01131.000,E,0,0,230394,,,A", gga("120004.5", "98.0"),
      gga("120005.5", "97.5"),
    ]).map(\.epoch.fix)
    #expect(fixes[0].climb == nil)
    #expect(abs(try #require(fixes[1].climb) - 2.0) < 1e-9)
    #expect(abs(try #require(fixes[2].climb) + 1.0) < 1e-9)
    // The RMC alone keeps the 3D of the fix before it, but has no altitude to climb from.
    #expect(fixes[3].mode == .threeD && fixes[3].altitudeMSL == nil && fixes[3].climb == nil)
    #expect(fixes[4].climb == nil)  // the fix without altitude between broke the sequence
    #expect(abs(try #require(fixes[5].climb) + 0.5) < 1e-9)
  }

  @Test("climb across midnight, without a date")
  func climbAcrossMidnight() throws {
    let fixes = feed([
      "GPGGA,235959.5,4807.038,N,01131.000,E,1,08,0.9,100.0,M,46.9,M,,",
      "GPGGA,000000.5,4807.038,N,01131.000,E,1,08,0.9,103.0,M,46.9,M,,",
    ]).map(\.epoch.fix)
    #expect(abs(try #require(fixes[1].climb) - 3.0) < 1e-9)
  }

  @Test("GST gives horizontal and vertical accuracy in metres")
  func accuracy() throws {
    let fix = feed([
      "GNGGA,120000,4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,",
      "GNGST,120000,1.8,,,,3.0,4.0,2.2",
    ])[0].epoch.fix
    #expect(fix.latitudeError == 3.0 && fix.longitudeError == 4.0)
    #expect(try #require(fix.horizontalAccuracy) == 5.0)
    #expect(fix.verticalAccuracy == 2.2)
  }

  @Test(
    "altitude above the ellipsoid is MSL plus the geoid separation (gpsd's model without one), or PUBX's own"
  )
  func altitudes() throws {
    let fix = feed(["GPGGA,120000,4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,"])[0].epoch.fix
    #expect(fix.altitudeMSL == 545.4 && fix.geoidSeparation == 46.9)
    #expect(try #require(fix.altitudeHAE) == 545.4 + 46.9)
    let noSeparation = feed(["GPGGA,120000,4807.038,N,01131.000,E,1,08,0.9,545.4,M,,M,,"])[0].epoch
      .fix
    // gpsd 3.22's wgs84_separation at 48.1173° N 11.516667° E: 44.762679880666667 m.
    let modelled = try #require(noSeparation.geoidSeparation)
    #expect(abs(modelled - 44.762679880666667) < 1e-9)
    #expect(noSeparation.altitudeHAE == 545.4 + modelled)
    let pubx = feed([
      "PUBX,00,120000.00,4807.038000,N,01131.000000,E,592.3,G3,2.1,2.0,0.007,77.52,-0.5,,0.92,1.19,0.77,9,0,0"
    ])[0].epoch.fix
    #expect(
      pubx.altitudeHAE == 592.3 && pubx.horizontalAccuracy == 2.1 && pubx.verticalAccuracy == 2.0)
    // Above sea level from the same model: PUBX,00 gives the ellipsoid's height alone.
    #expect(pubx.geoidSeparation.map { abs($0 - 44.762679880666667) < 1e-9 } == true)
    #expect(pubx.altitudeMSL.map { abs($0 - (592.3 - 44.762679880666667)) < 1e-9 } == true)
    #expect(pubx.mode == .threeD && pubx.climb == 0.5 && pubx.satellitesUsed == 9)
  }

  @Test("quality from GGA; without GGA, from the mode indicator")
  func quality() {
    let gga = feed(["GPGGA,120000,4807.038,N,01131.000,E,5,08,0.9,545.4,M,46.9,M,,"])[0].epoch.fix
    #expect(gga.quality == .rtkFloat)
    let rmc = feed(["GPRMC,120000,A,4807.038,N,01131.000,E,0,0,230394,,,D"])[0].epoch.fix
    #expect(rmc.quality == .differential && rmc.modeIndicator == .differential)
    let estimated = feed(["GPRMC,120000,A,4807.038,N,01131.000,E,0,0,230394,,,E"])[0].epoch.fix
    #expect(estimated.quality == .deadReckoning && estimated.mode == .twoD)
  }

  @Test("DOPs of 99 and more mean unknown")
  func invalidDOPs() {
    let fix = feed([
      "GPGGA,120000,4807.038,N,01131.000,E,1,03,99.0,545.4,M,46.9,M,,",
      "GPGSA,A,2,10,17,12,,,,,,,,,,99.0,99.0,99.0",
    ])[0].epoch
    #expect(fix.fix.hdop == nil && fix.fix.pdop == nil && fix.fix.vdop == nil)
    #expect(fix.satellites?.hdop == nil)
  }

  // MARK: Mode and validity

  static let modeCases: [([String], FixMode)] = [
    // gpsd's rule: a GSA raises the mode, never lowers it; the receiver's 2D stays visible.
    (
      [
        "GPGGA,120000,4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,",
        "GPGSA,A,2,1,2,3,4,5,6,7,8,,,,,1.4,1.1,0.8",
      ], .threeD
    ),
    (
      [
        "GPGGA,120000,4807.038,N,01131.000,E,1,03,0.9,,M,,M,,",
        "GPGSA,A,3,1,2,3,,,,,,,,,,1.4,1.1,0.8",
      ], .threeD
    ),
    (
      [
        "GPGGA,120000,4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,",
        "GPGSA,A,3,1,2,3,4,5,6,7,8,,,,,1.4,1.1,0.8",
      ], .threeD
    ),
    // Per-system GSAs: the best.
    (
      [
        "GNGGA,120000,4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,",
        "GNGSA,A,3,1,2,3,,,,,,,,,,1.4,1.1,0.8,1", "GNGSA,A,1,,,,,,,,,,,,,1.4,1.1,0.8,3",
      ], .threeD
    ),
    // No GSA: altitude and four satellites or more is 3D; three is 2D; fewer, or an empty
    // count, no fix (gpsd's GGA rule, whatever the quality says).
    (["GPGGA,120000,4807.038,N,01131.000,E,1,04,0.9,545.4,M,46.9,M,,"], .threeD),
    (["GPGGA,120000,4807.038,N,01131.000,E,1,03,0.9,545.4,M,46.9,M,,"], .twoD),
    (["GPGGA,120000,4807.038,N,01131.000,E,1,08,0.9,,M,,M,,"], .twoD),
    (["GPGGA,120000,4807.038,N,01131.000,E,1,00,3.3,10.8,M,-33.3,M,,"], .noFix),
    (["GPGGA,120000,4807.038,N,01131.000,E,1,02,3.3,10.8,M,-33.3,M,,"], .noFix),
    (["GPGGA,120000,4807.038,N,01131.000,E,1,,3.3,10.8,M,-33.3,M,,"], .noFix),
    // RMC after GGA: promoted to 3D by the altitude GGA gave; after a GSA of four or more
    // satellites used, 3D too.
    (
      [
        "GPGGA,120000,4807.038,N,01131.000,E,1,03,0.9,545.4,M,46.9,M,,",
        "GPRMC,120000,A,4807.038,N,01131.000,E,0,0,230394,,,A",
      ], .threeD
    ),
    (
      [
        "GPGSA,A,2,1,2,3,4,,,,,,,,,1.4,1.1,0.8",
        "GPRMC,120000,A,4807.038,N,01131.000,E,0,0,230394,,,A",
      ], .threeD
    ),
    (
      [
        "GPGSA,A,2,1,2,3,,,,,,,,,,1.4,1.1,0.8",
        "GPRMC,120000,A,4807.038,N,01131.000,E,0,0,230394,,,A",
      ], .twoD
    ),
    (["GPRMC,120000,A,4807.038,N,01131.000,E,0,0,230394,,,A"], .twoD),
    (["GPGLL,4807.038,N,01131.000,E,120000,A,A"], .twoD),
    // No valid position, no fix, whatever GSA says.
    (["GPGGA,120000,4807.038,N,01131.000,E,0,08,0.9,545.4,M,46.9,M,,"], .noFix),
    (["GPRMC,120000,V,4807.038,N,01131.000,E,0,0,230394,,,N"], .noFix),
    (["GPRMC,120000,A,4807.038,N,01131.000,E,0,0,230394,,,N"], .noFix),
    (["GPGLL,4807.038,N,01131.000,E,120000,V,N"], .noFix),
    (["GNGNS,120000,4807.038,N,01131.000,E,NN,08,0.9,545.4,46.9,,,V"], .noFix),
    (["GPGGA,120000,,,,,0,,,,,,,,", "GPGSA,A,3,1,2,3,4,,,,,,,,,1.4,1.1,0.8"], .noFix),
    (["GPGSA,A,3,1,2,3,4,,,,,,,,,1.4,1.1,0.8", "GPZDA,120000,23,03,1994,,"], .noFix),
    // GNS: gpsd's GNS handler has no three-satellite test.
    (["GNGNS,120000,4807.038,N,01131.000,E,AN,02,0.9,545.4,46.9,,,S"], .twoD),
    // GNS: a fix if any system has one.
    (["GNGNS,120000,4807.038,N,01131.000,E,NA,08,0.9,545.4,46.9,,,S"], .threeD),
    // GSA says no fix but GGA has a valid position: the position sentences decide.
    (
      [
        "GPGGA,120000,4807.038,N,01131.000,E,1,05,0.9,545.4,M,46.9,M,,", "GPGSA,A,1,,,,,,,,,,,,,,,",
      ], .threeD
    ),
  ]

  @Test(
    "mode: gpsd's rules for GGA, RMC, GLL, GNS and GSA, in the order the sentences come",
    arguments: modeCases)
  func mode(bodies: [String], mode: FixMode) throws {
    let epoch = try #require(feed(bodies).first?.epoch)
    #expect(epoch.fix.mode == mode)
    if mode == .noFix {
      #expect(
        epoch.fix.position == nil && epoch.fix.altitudeMSL == nil && epoch.fix.altitudeHAE == nil)
    } else {
      #expect(epoch.fix.position != nil)
    }
  }

  // MARK: Dimension of epochs that state none

  /// RMC at 12:00:`second`, valid unless `valid` is false.
  static func rmc(_ second: Int, valid: Bool = true) -> String {
    let time = "1200" + format2(second)
    return valid
      ? "GPRMC,\(time),A,4807.038,N,01131.000,E,022.4,084.4,230394,003.1,W,A"
      : "GPRMC,\(time),V,,,,,,,230394,,,N"
  }

  static func gga(_ second: Int, satellites: String = "08") -> String {
    "GPGGA,1200\(format2(second)),4807.038,N,01131.000,E,1,\(satellites),0.9,545.4,M,46.9,M,,"
  }

  @Test("GGA every third second, RMC every second: the fix stays 3D, it does not flicker")
  func dimensionKeptBetweenGGAs() {
    var bodies: [String] = []
    for second in 0..<9 {
      bodies.append(Self.rmc(second))
      if second % 3 == 0 { bodies.append(Self.gga(second)) }
    }
    let emitted = feed(bodies)
    #expect(emitted.map(\.epoch.fix.mode) == Array(repeating: .threeD, count: 9))
    // Only the epochs with a GGA have an altitude: nothing is invented.
    #expect(emitted.map { $0.epoch.fix.altitudeMSL != nil } == (0..<9).map { $0 % 3 == 0 })
  }

  @Test("a 3D fix stays 3D past a GSA of 2D and a GGA of three satellites, as gpsd keeps it")
  func threeDKept() {
    let bodies = [
      Self.rmc(0), Self.gga(0), Self.rmc(1),
      Self.rmc(2), "GPGSA,A,2,04,05,09,,,,,,,,,,2.5,1.3,2.1", Self.rmc(3),
      Self.rmc(4), Self.gga(4, satellites: "03"), Self.rmc(5),
    ]
    let emitted = feed(bodies)
    #expect(emitted.map(\.epoch.fix.mode) == Array(repeating: .threeD, count: 6))
    // The receiver's own fix type stays visible beside gpsd's reading.
    #expect(emitted.map(\.epoch.fix.receiverFixMode) == [nil, nil, .twoD, nil, nil, nil])
  }

  @Test("after no fix, GGA of three satellites is 2D, and the RMC after it 3D (GGA's altitude)")
  func twoDAfterNoFix() {
    let bodies = [
      Self.rmc(0, valid: false), Self.gga(1, satellites: "03"),
      "GPGSA,A,2,04,05,09,,,,,,,,,,2.5,1.3,2.1",
      Self.gga(2, satellites: "03"), Self.rmc(2),
    ]
    #expect(feed(bodies).map(\.epoch.fix.mode) == [.noFix, .twoD, .threeD])
  }

  @Test("a lost fix or an epoch without time ends the dimension kept; a gap does not")
  func dimensionKeptWhileTheFixLasts() {
    let lost = feed([Self.rmc(0), Self.gga(0), Self.rmc(1, valid: false), Self.rmc(2)])
    #expect(lost.map(\.epoch.fix.mode) == [.threeD, .noFix, .twoD])
    // gpsd keeps a 3D across any gap while no epoch says otherwise.
    let gap = feed([Self.rmc(0), Self.gga(0), Self.rmc(10), Self.rmc(21)])
    #expect(gap.map(\.epoch.fix.mode) == [.threeD, .threeD, .threeD])
    // An RMC with an empty time between: nothing says the fix lasted.
    let untimed = feed([
      Self.rmc(0), Self.gga(0), "GPRMC,,A,4807.038,N,01131.000,E,022.4,084.4,230394,003.1,W,A",
      Self.rmc(1),
    ])
    #expect(untimed.map(\.epoch.fix.mode) == [.threeD, .noFix, .twoD])
    #expect(untimed.map { $0.epoch.fix.time == nil } == [false, true, false])
  }

  @Test("across midnight the dimension is kept as within a day")
  func dimensionKeptAcrossMidnight() {
    let emitted = feed([
      "GPRMC,235959,A,4807.038,N,01131.000,E,022.4,084.4,230394,003.1,W,A",
      "GPGGA,235959,4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,",
      "GPRMC,000000,A,4807.038,N,01131.000,E,022.4,084.4,240394,003.1,W,A",
    ])
    #expect(emitted.map(\.epoch.fix.mode) == [.threeD, .threeD])
  }

  @Test(
    "an invalid RMC beside a valid GGA makes the epoch no fix: the receiver does not stand by it")
  func mixedValidity() throws {
    let fix = try #require(
      feed([
        "GPGGA,120000,4807.038,N,01131.000,E,1,05,0.9,545.4,M,46.9,M,,",
        "GPRMC,120000,V,4807.040,N,01131.000,E,0,0,230394,,,N",
      ]).first?.epoch.fix)
    #expect(fix.mode == .noFix)
    #expect(fix.position == nil)
    #expect(fix.date == UTCDate(year: 1994, month: 3, day: 23))
  }

  @Test("GGA's position wins over RMC's, RMC's over GLL's, whatever the order")
  func positionPrecedence() throws {
    let fix = try #require(
      feed([
        "GPGLL,4807.0,N,01131.0,E,120000,A,A",
        "GPRMC,120000,A,4807.03,N,01131.00,E,0,0,230394,,,A",
        "GPGGA,120000,4807.038,N,01131.000,E,1,05,0.9,545.4,M,46.9,M,,",
        "GPRMC,120000,A,4807.03,N,01131.00,E,0,0,230394,,,A",
      ]).first?.epoch.fix)
    #expect(
      fix.position?.latitude
        == Coordinate(degrees: 48, scaledMinutes: 7038, fractionDigits: 3, isNegative: false))
  }

  // MARK: Satellites

  @Test("the satellite view: constellation, PRN, svid, signal, elevation, azimuth, SNR, used")
  func satelliteView() throws {
    let view = try #require(feed(ubloxCycle(0)).first?.epoch.satellites)
    #expect(view.satellites.count == 8)
    #expect(view.hdop == 0.9 && view.pdop == 1.6 && view.vdop == 1.3)
    let gps10 = try #require(view.satellites.first { $0.constellation == .gps && $0.svid == 10 })
    #expect(
      gps10
        == Satellite(
          constellation: .gps, prn: 10, svid: 10, signalID: 1, elevation: 55, azimuth: 120, snr: 44,
          used: true))
    let gps31 = try #require(view.satellites.first { $0.svid == 31 })
    #expect(gps31.snr == nil && !gps31.used)
    let glonass = view.satellites.filter { $0.constellation == .glonass }
    #expect(glonass.map(\.prn) == [70, 80, 81] && glonass.map(\.svid) == [6, 16, 17])
    #expect(glonass.map(\.used) == [true, true, false])
    #expect(view.usedCount == 6)
    #expect(view.time == UTCTime(hour: 12, minute: 0, second: 0))
  }

  @Test("used flags follow each GSA's own system: the same number in two systems is two satellites")
  func usedPerSystem() throws {
    let view = try #require(
      feed([
        "GNGGA,120000,4807.038,N,01131.000,E,1,05,0.9,545.4,M,46.9,M,,",
        "GNGSA,A,3,05,,,,,,,,,,,,1.4,1.1,0.8,3",  // Galileo E05 used
        "GPGSV,1,1,01,05,40,083,46,1",  // GPS 5: not used
        "GAGSV,1,1,01,05,20,183,36,7",  // Galileo 5: used
        "GBGSV,1,1,01,05,10,283,26,1",  // BeiDou 5: not used
      ]).first?.epoch.satellites)
    let byConstellation = Dictionary(
      uniqueKeysWithValues: view.satellites.map { ($0.constellation!, $0) })
    #expect(byConstellation[.gps]?.used == false)
    #expect(byConstellation[.galileo]?.used == true && byConstellation[.galileo]?.prn == 305)
    #expect(byConstellation[.beidou]?.used == false && byConstellation[.beidou]?.prn == 405)
  }

  @Test("used flags for numbers past the usual ranges, and for satellites of no system")
  func usedOddNumbers() throws {
    let view = try #require(
      feed([
        "GPRMC,120000,A,4807.038,N,01131.000,E,0,0,230394,,,A",
        "GPGSA,A,3,05,300,250,,,,,,,,,,1.4,1.1,0.8",  // GPS 5, 300 and 250 used
        "GPGSV,1,1,04,05,40,083,46,300,20,183,36,250,10,283,26,07,10,100,20",
        "XXGSV,1,1,01,250,10,283,26",  // no system: not GPS 250
      ]).first?.epoch.satellites)
    #expect(view.satellites.map(\.prn) == [5, 300, 250, 7, 250])
    #expect(view.satellites.map(\.constellation) == [.gps, .gps, .gps, .gps, nil])
    #expect(view.satellites.map(\.used) == [true, true, true, false, false])
    #expect(view.usedCount == 3)
  }

  @Test("one satellite on two signals is two entries; a repeated GSV part replaces itself")
  func signals() throws {
    let view = try #require(
      feed([
        "GPGGA,120000,4807.038,N,01131.000,E,1,05,0.9,545.4,M,46.9,M,,",
        "GPGSV,1,1,01,10,55,120,44,1",
        "GPGSV,1,1,01,10,55,120,30,6",
        "GPGSV,1,1,01,10,55,120,45,1",
      ]).first?.epoch.satellites)
    #expect(view.satellites.map(\.signalID) == [1, 6])
    #expect(view.satellites.map(\.snr) == [45, 30])
  }

  static let numberingCases: [(String, Constellation, Int, Int)] = [
    ("GPGSV,1,1,01,07,40,083,46", .gps, 7, 7),
    ("GPGSV,1,1,01,46,40,083,46", .sbas, 46, 133),  // NMEA 33–64: svid 120–151
    ("GPGSV,1,1,01,133,40,083,46", .sbas, 133, 133),
    ("GPGSV,1,1,01,70,40,083,46", .glonass, 70, 6),  // single-talker receivers
    ("GLGSV,1,1,01,70,40,083,46", .glonass, 70, 6),
    ("GLGSV,1,1,01,06,40,083,46", .glonass, 70, 6),
    ("GAGSV,1,1,01,12,40,083,46", .galileo, 312, 12),
    ("GAGSV,1,1,01,312,40,083,46", .galileo, 312, 12),
    ("GAGSV,1,1,01,103,40,083,46", .galileo, 303, 3),  // Quectel LC79D
    ("GBGSV,1,1,01,08,40,083,46", .beidou, 408, 8),
    ("BDGSV,1,1,01,208,40,083,46", .beidou, 408, 8),
    ("GQGSV,1,1,01,02,40,083,46", .qzss, 194, 2),
    ("QZGSV,1,1,01,193,40,083,46", .qzss, 193, 1),
    ("GPGSV,1,1,01,195,40,083,46", .qzss, 195, 3),
    ("GIGSV,1,1,01,05,40,083,46", .navic, 805, 5),
    ("PQGSV,1,1,01,05,40,083,46,0,4", .beidou, 405, 5),
    ("PQGSV,1,1,01,02,40,083,46,0,5", .qzss, 194, 2),
  ]

  @Test(
    "satellite numbering: every talker and numbering scheme to gpsd's PRN and the svid",
    arguments: numberingCases)
  func numbering(body: String, constellation: Constellation, prn: Int, svid: Int) throws {
    let view = try #require(
      feed(["GPGGA,120000,4807.038,N,01131.000,E,1,05,0.9,545.4,M,46.9,M,,", body]).first?.epoch
        .satellites)
    let satellite = try #require(view.satellites.first)
    #expect(
      satellite.constellation == constellation && satellite.prn == prn && satellite.svid == svid)
  }

  @Test("the satellite buffer is reused: an epoch kept by the caller is not changed later")
  func satellitesKept() throws {
    let emitted = feed(ubloxCycle(0) + ubloxCycle(1) + ubloxCycle(2)).map(\.epoch)
    #expect(emitted.count == 3)
    for epoch in emitted {
      #expect(epoch.satellites?.satellites.count == 8)
      #expect(epoch.satellites?.time == epoch.fix.time)
    }
  }
}

@Suite struct CycleKnowledgeCarryTests {
  static func cycle(_ second: Int) -> [UInt8] {
    let time = "1200" + (second < 10 ? "0" : "") + String(second) + ".00"
    return NMEAChecksum.frame("GPRMC,\(time),A,4656.789,N,00726.123,E,1.5,90.0,301126,,,A")
      + NMEAChecksum.frame("GPGGA,\(time),4656.789,N,00726.123,E,1,08,0.9,540.2,M,48.0,M,,")
  }

  @Test func knowledgeHandedToANewDecoderEmitsItsFirstEpochAtOnce() {
    var learned = NMEADecoder()
    for second in 1...3 { learned.decode(Self.cycle(second)) { _ in } }
    #expect(learned.cycleKnowledge?.isLearned == true)

    var fresh = NMEADecoder()
    var epochs = 0
    fresh.decode(Self.cycle(10)) { if case .epoch = $0 { epochs += 1 } }
    #expect(epochs == 0, "without knowledge the epoch waits for the next one")

    var carried = NMEADecoder()
    carried.cycleKnowledge = learned.cycleKnowledge
    epochs = 0
    carried.decode(Self.cycle(10)) { if case .epoch = $0 { epochs += 1 } }
    #expect(epochs == 1)
  }

  @Test func aCandidateCarriedOverIsConfirmedByTheNextConnection() {
    // One time change: a candidate only. Sessions this short (a first fix, then off) must
    // still add up to knowledge.
    var first = NMEADecoder()
    first.decode(Self.cycle(1) + Self.cycle(2)) { _ in }
    #expect(first.cycleKnowledge != nil)
    #expect(first.cycleKnowledge?.isLearned == false)
    var second = NMEADecoder()
    second.cycleKnowledge = first.cycleKnowledge
    second.decode(Self.cycle(20) + Self.cycle(21)) { _ in }
    #expect(second.cycleKnowledge?.isLearned == true)
  }
}
