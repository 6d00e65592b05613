import Foundation
import NMEA
import Testing
import TimeService

/// The MediaTek cold start in fixtures/: time from the receiver's clock before the fix (with a
/// date from 22:10:23, status V), then a 2D fix from 22:10:38.
@Suite("Time from a recorded cold start")
struct FixtureTests {
  struct Judged {
    var time: EpochTime
    var verdict: TimeVerdict
  }

  /// Decodes the fixture with `NMEADecoder`, and judges every epoch as if its first byte had
  /// arrived 150 ms after the second it names.
  func judge(rules: TimeTrustRules) throws -> (epochs: [Judged], trust: TimeTrust) {
    let text = try String(
      contentsOfFile: fixturesDirectory + "/mtk-cold-start.nmea", encoding: .utf8)
    let body = text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline)
      .filter { !$0.hasPrefix("#") }.joined(separator: "\n")
    var decoder = NMEADecoder()
    var collector = EpochTimeCollector()
    var trust = TimeTrust(rules: rules)
    var judged: [Judged] = []
    func handle(_ event: DecoderEvent) {
      guard let time = collector.observe(event) else { return }
      let arrival = time.timestamp.flatMap(PosixTime.init).map {
        ArrivalTime(time: $0 + .milliseconds(150))
      }
      judged.append(Judged(time: time, verdict: trust.judge(time, arrival: arrival)))
    }
    decoder.decode(Array(body.utf8), handle)
    decoder.finish(handle)
    return (judged, trust)
  }

  /// The fixture's RMC status per time of day, read from the file itself.
  func rmcStatus() throws -> [String: Character] {
    let text = try String(
      contentsOfFile: fixturesDirectory + "/mtk-cold-start.nmea", encoding: .utf8)
    var status: [String: Character] = [:]
    for line in text.split(whereSeparator: \.isNewline) where line.hasPrefix("$GPRMC,") {
      let fields = line.split(separator: ",", omittingEmptySubsequences: false)
      guard !fields[1].isEmpty else { continue }
      status[String(fields[1].prefix(6))] = fields[2].first
    }
    return status
  }

  @Test func noSampleFromTheReceiversClockBeforeItsFix() throws {
    let truth =
      try JSONSerialization.jsonObject(
        with: Data(
          contentsOf: URL(fileURLWithPath: fixturesDirectory + "/mtk-cold-start.truth.json")))
      as! [String: Any]
    let byMode = truth["epochs_by_mode"] as! [String: Int]
    let fixes = byMode["2d"]! + byMode["3d"]!
    let (epochs, trust) = try judge(
      rules: TimeTrustRules(earliestDate: UTCDate(year: 2026, month: 2, day: 1)))
    #expect(epochs.count == truth["epochs"] as! Int)

    let status = try rmcStatus()
    var samples: [TimeSample] = []
    for epoch in epochs {
      guard case .sample(let sample) = epoch.verdict else { continue }
      let key = epoch.time.time.map {
        String(format: "%02d%02d%02d", Int($0.hour), Int($0.minute), Int($0.second))
      }
      #expect(
        key.flatMap { status[$0] } == "A", "a sample from an epoch without a fix: \(epoch.time)")
      samples.append(sample)
    }
    // The epochs with the receiver's own date and time but status V exist, and gave nothing.
    let clockOnly = epochs.filter { $0.time.date != nil && $0.time.fix == .invalid }
    #expect(clockOnly.count == 15)
    #expect(clockOnly.allSatisfy { $0.verdict == .rejected(.noFix) })
    // Every fix gave a sample but the first two, which prove the time runs steadily.
    #expect(samples.count == fixes - 2)
    #expect(trust.rejections[.settling] == 2)
    let first = try #require(samples.first)
    let expectedFirst = UTCTimestamp(
      date: UTCDate(year: 2026, month: 2, day: 3), time: UTCTime(hour: 22, minute: 10, second: 40))
    #expect(first.receiverTime == PosixTime(expectedFirst))
    #expect(samples.allSatisfy { $0.lateness == .milliseconds(150) })
    #expect(
      trust.rejections[.noFix, default: 0] + trust.rejections[.noTime, default: 0]
        == byMode["no_fix"])
  }

  @Test func aRecordingOlderThanTheReleaseGivesNothing() throws {
    let (epochs, trust) = try judge(rules: TimeTrustRules())
    #expect(!epochs.contains { if case .sample = $0.verdict { true } else { false } })
    #expect(trust.samples == 0)
    #expect(trust.rejections[.beforeReleaseDate] == 67)
  }
}
