import NMEA
import Testing

// The TPV seen once after a wake-up: mode 3 and a position, but no time and no altitude.
//
// The driver opens the port afresh on each wake-up, with a new decoder that knows no date yet
// (and, handed over from the last connection, which sentence ends the receiver's cycle). The
// port opened in the middle of a cycle: the first bytes were the tail of a GGA (no start
// character: garbage to the framer), and the cycle's RMC had gone before. What was left of the
// cycle, GSA (3D), GSV and GLL, made an epoch of its own, closed at once by the learned end
// (GLL, a position sentence): the GLL's time and position, the GSA's 3D, no altitude (that was
// in the lost GGA) and no date (that would have been in the lost RMC). A TPV without a date has
// no `time`. It happened only when the port opened between a cycle's RMC and its GLL.

@Suite("After a wake-up")
struct WakeUpTests {
  /// A u-blox M8 cycle at 07:15:`second`: RMC, VTG, GGA, GSA, GSV, GLL.
  static func cycle(_ second: Int) -> [String] {
    let time = "0715" + format2(second) + ".00"
    return [
      "GNRMC,\(time),A,4717.2553,N,00833.9152,E,0.012,,301126,,,A",
      "GNVTG,,T,,M,0.012,N,0.022,K,A",
      "GNGGA,\(time),4717.2553,N,00833.9152,E,1,12,0.71,491.3,M,47.3,M,,",
      "GNGSA,A,3,02,05,12,15,18,24,25,29,,,,,1.25,0.71,1.03,1",
      "GPGSV,2,1,08,02,40,083,46,05,17,308,41,12,07,344,39,15,22,228,45,1",
      "GPGSV,2,2,08,18,57,090,48,24,65,193,47,25,31,259,44,29,12,041,40,1",
      "GNGLL,4717.2553,N,00833.9152,E,\(time),A,A",
    ]
  }

  /// What the previous connection learned: the cycle ends with GLL.
  static func knowledge() -> CycleKnowledge? {
    var decoder = NMEADecoder()
    for second in 0..<3 { for body in cycle(second) { decoder.decode(wire(body)) { _ in } } }
    return decoder.cycleKnowledge
  }

  /// The bytes after the port opened during the GGA of 07:15:40, then two whole cycles.
  static func wakeUp() -> [UInt8] {
    let first = cycle(40)
    let gga = wire(first[2])
    var bytes = Array(gga.suffix(from: 30))  // the GGA's tail: no start character
    for body in first[3...] { bytes += wire(body) }
    for body in cycle(41) + cycle(42) { bytes += wire(body) }
    return bytes
  }

  static func decode(_ bytes: [UInt8], knowledge: CycleKnowledge?) -> [Epoch] {
    var decoder = NMEADecoder()
    decoder.cycleKnowledge = knowledge
    var epochs: [Epoch] = []
    decoder.decode(bytes) { if case .epoch(let epoch) = $0 { epochs.append(epoch) } }
    decoder.finish { if case .epoch(let epoch) = $0 { epochs.append(epoch) } }
    return epochs
  }

  @Test(
    "the tail of a cycle whose RMC was lost is no fix without a date: it takes the next epoch's",
    arguments: [true, false])
  func tailOfACycle(knowledgeCarried: Bool) throws {
    let knowledge = knowledgeCarried ? Self.knowledge() : nil
    if knowledgeCarried { #expect(knowledge?.isLearned == true) }
    let epochs = Self.decode(Self.wakeUp(), knowledge: knowledge)
    #expect(epochs.map { $0.fix.time?.second } == [40, 41, 42])
    for epoch in epochs where epoch.fix.mode != .noFix {
      // Every fix can be placed in time: date and time of day.
      #expect(epoch.fix.timestamp != nil, "\(epoch.timeText): \(epoch.fix.mode) without a date")
    }
    let first = try #require(epochs.first?.fix)
    #expect(first.date == UTCDate(year: 2026, month: 11, day: 30))
    // What the tail held: GLL's position, GSA's 3D; no altitude was received, none is made up.
    #expect(first.mode == .threeD && first.position != nil && first.altitudeMSL == nil)
    #expect(epochs.dropFirst().allSatisfy { $0.fix.altitudeMSL == 491.3 })
  }
}
