import Foundation
import NMEA
import Testing
import TimeService

@Suite("What an epoch says about time, and whether it is trusted")
struct TrustTests {
  /// Decodes `epochs` (sentence bodies, one epoch per inner list) and returns what the
  /// collector says of each epoch, in order. With `separately`, every epoch goes through a
  /// decoder of its own, so that no cycle learned from one shapes the next.
  func epochTimes(_ epochs: [[String]], separately: Bool = true) -> [EpochTime] {
    var decoder = NMEADecoder()
    var collector = EpochTimeCollector()
    var times: [EpochTime] = []
    let handle = { (event: DecoderEvent) in
      if let time = collector.observe(event) { times.append(time) }
    }
    for epoch in epochs {
      for body in epoch { decoder.decode(wire(body), handle) }
      if separately {
        decoder.finish(handle)
        decoder = NMEADecoder()
      }
    }
    decoder.finish(handle)
    return times
  }

  /// A receiver that ends every cycle with ZDA: the decoder closes epoch N when epoch N + 1
  /// begins, after the sentence that begins it was reported; the date still lands in its own
  /// epoch.
  @Test func aDateFromTheCyclesLastSentence() {
    let times = epochTimes(
      (1...5).map { second in
        [
          "GPGGA,12000\(second).00,3352.1290,S,15112.5576,E,1,08,0.9,40.0,M,20.0,M,,",
          "GPZDA,12000\(second).00,02,12,2026,00,00",
        ]
      }, separately: false)
    #expect(times.count == 5)
    #expect(times.allSatisfy { $0.date == Self.date && $0.dateSource == .zda && $0.fix == .valid })
    #expect(times.map { $0.time?.second } == [1, 2, 3, 4, 5])
  }

  static let date = UTCDate(year: 2026, month: 12, day: 2)

  @Test func theEpochsOwnSentencesDecide() {
    let times = epochTimes([
      // RMC valid with its date.
      [
        "GPRMC,120001.00,A,3352.1290,S,15112.5576,E,0.0,0.0,021226,,,A",
        "GPGGA,120001.00,3352.1290,S,15112.5576,E,1,08,0.9,40.0,M,20.0,M,,",
      ],
      // The receiver's RTC before a fix: a time and a date, status V.
      ["GPRMC,120002.00,V,,,,,,,021226,,,N", "GPGGA,120002.00,,,,,0,00,,,M,,M,,"],
      // A fix in GGA, the date from ZDA, no RMC.
      [
        "GPGGA,120003.00,3352.1290,S,15112.5576,E,2,08,0.9,40.0,M,20.0,M,,",
        "GPZDA,120003.00,02,12,2026,00,00",
      ],
      // RMC says A, GGA says no fix: the receiver contradicts itself.
      [
        "GPRMC,120004.00,A,3352.1290,S,15112.5576,E,0.0,0.0,021226,,,A",
        "GPGGA,120004.00,,,,,0,00,,,M,,M,,",
      ],
      // Status A with mode indicator N (not valid).
      ["GPRMC,120005.00,A,3352.1290,S,15112.5576,E,0.0,0.0,021226,,,N"],
      // A fix in GGA and no date at all.
      ["GPGGA,120006.00,3352.1290,S,15112.5576,E,1,08,0.9,40.0,M,20.0,M,,"],
      // Simulated (quality 8) is not a fix.
      [
        "GPGGA,120007.00,3352.1290,S,15112.5576,E,8,08,0.9,40.0,M,20.0,M,,",
        "GPZDA,120007.00,02,12,2026,00,00",
      ],
      // A ZDA stamped two seconds ahead (Magellan) gives no date to this epoch.
      [
        "GPGGA,120008.00,3352.1290,S,15112.5576,E,1,08,0.9,40.0,M,20.0,M,,",
        "GPZDA,120010.00,02,12,2026,00,00",
      ],
    ])
    #expect(times.count == 8)
    guard times.count == 8 else { return }
    #expect(
      times[0]
        == EpochTime(
          time: UTCTime(hour: 12, minute: 0, second: 1), date: Self.date, dateSource: .rmc,
          fix: .valid))
    #expect(times[1].fix == .invalid)
    #expect(times[1].date == Self.date)
    #expect(
      times[2]
        == EpochTime(
          time: UTCTime(hour: 12, minute: 0, second: 3), date: Self.date, dateSource: .zda,
          fix: .valid))
    #expect(times[3].fix == .invalid)
    #expect(times[4].fix == .invalid)
    #expect(times[5].fix == .valid)
    #expect(times[5].date == nil)
    #expect(times[6].fix == .invalid)
    #expect(times[7].fix == .valid)
    #expect(times[7].date == nil)
  }

  /// One row: an epoch's evidence, when its first byte arrived (ms after the second the
  /// epoch names; nil: unknown), the system clock's offset to the monotonic clock (ms; its
  /// changes are steps of the system clock; nil: unknown), the verdict, and the step the
  /// epoch shows (``TimeTrust/lastStep``; nil for none).
  struct Row {
    var epoch: EpochTime
    var lateMs: Int64?
    var clockMs: Int64?
    var expected: Expected
    var step: TimeStep?
    enum Expected: Equatable {
      case sample
      case rejected(TimeRejection)
    }
    init(
      _ epoch: EpochTime, late lateMs: Int64? = 120, clock clockMs: Int64? = 0,
      _ expected: Expected, step: TimeStep? = nil
    ) {
      self.epoch = epoch
      self.lateMs = lateMs
      self.clockMs = clockMs
      self.expected = expected
      self.step = step
    }
  }

  @discardableResult
  func run(_ rows: [Row], rules: TimeTrustRules = TimeTrustRules()) -> TimeTrust {
    var trust = TimeTrust(rules: rules)
    for (number, row) in rows.enumerated() {
      let arrival = row.lateMs.map { late -> ArrivalTime in
        let second = row.epoch.timestamp.flatMap(PosixTime.init) ?? posix(december2)
        return ArrivalTime(time: second + .milliseconds(late))
      }
      let verdict = trust.judge(
        row.epoch, arrival: arrival, systemClockOffset: row.clockMs.map { .milliseconds($0) })
      switch (verdict, row.expected) {
      case (.sample(let sample), .sample):
        #expect(sample.lateness == .milliseconds(row.lateMs ?? 0), "row \(number)")
        #expect(PosixTime(row.epoch.timestamp!) == sample.receiverTime, "row \(number)")
      case (.rejected(let reason), .rejected(let expected)):
        #expect(reason == expected, "row \(number)")
      default:
        Issue.record("row \(number): \(verdict), expected \(row.expected)")
      }
      #expect(trust.lastStep == row.step, "row \(number)")
    }
    return trust
  }

  @Test func settlesAfterThreeConsistentFixes() {
    let trust = run([
      Row(epochTime(0, fix: .invalid), .rejected(.noFix)),
      Row(epochTime(1), .rejected(.settling)),
      Row(epochTime(2), .rejected(.settling)),
      Row(epochTime(3), .sample),
      Row(epochTime(4, ms: 0), late: 135, .sample),
      Row(epochTime(4, ms: 200), late: 110, .sample),  // 5 Hz: fractions count
    ])
    #expect(trust.samples == 3)
    #expect(trust.rejections == [.noFix: 1, .settling: 2])
    #expect(trust.isTrusted)
  }

  @Test func losingTheFixStartsOver() {
    run([
      Row(epochTime(1), .rejected(.settling)),
      Row(epochTime(2), .rejected(.settling)),
      Row(epochTime(3), .sample),
      Row(epochTime(4, fix: .unknown), .rejected(.noFix)),
      Row(epochTime(5), .rejected(.settling)),
      Row(epochTime(6), .rejected(.settling)),
      Row(epochTime(7), .sample),
      Row(epochTime(8, date: nil), .rejected(.noDate)),
      Row(epochTime(9), .rejected(.settling)),
      Row(epochTime(10), .rejected(.settling)),
      Row(epochTime(11), .sample),
      Row(EpochTime(time: nil, fix: .valid), .rejected(.noTime)),
      Row(epochTime(13), .rejected(.settling)),
    ])
  }

  @Test func refusesDatesBeforeTheReleaseAndNeverGuessesWeeks() {
    // A receiver with the 1024-week rollover reports 2007-04-18 for 2026-12-02.
    let rolledOver = UTCDate(year: 2007, month: 4, day: 18)
    let trust = run([
      Row(epochTime(1, date: rolledOver), .rejected(.beforeReleaseDate)),
      Row(epochTime(2, date: rolledOver), .rejected(.beforeReleaseDate)),
      Row(
        epochTime(3, date: UTCDate(year: 2026, month: 11, day: 30)), .rejected(.beforeReleaseDate)),
      Row(epochTime(4, date: ReleaseDate.date), .rejected(.settling)),
    ])
    #expect(trust.rejections[.beforeReleaseDate] == 3)
  }

  @Test func jumpsRepeatsLeapSecondsAndMissingArrivals() {
    let leap = EpochTime(
      time: UTCTime(hour: 23, minute: 59, second: 60),
      date: UTCDate(year: 2026, month: 12, day: 31),
      dateSource: .rmc, fix: .valid)
    var trust = run([
      Row(epochTime(1), .rejected(.settling)),
      Row(epochTime(2), .rejected(.settling)),
      Row(epochTime(3), .sample),
      Row(epochTime(4), late: 130, .sample),
      Row(epochTime(5), late: 900, .rejected(.jumped)),  // 770 ms later than the last one
      Row(epochTime(6), late: 905, .rejected(.jumped)),  // the new time settles
      // Both times agree with the system clock (within a second): the new one is followed.
      Row(
        epochTime(7), late: 890, .sample,
        step: .followed(
          by: .milliseconds(-760), lateness: .milliseconds(890), agreesWithSystemClock: true)),
      Row(epochTime(7), late: 890, .rejected(.notNewer)),  // a repeated epoch keeps trust
      Row(epochTime(6), late: 890, .rejected(.notNewer)),
      Row(epochTime(8), late: nil, .rejected(.noArrivalTime)),
      Row(epochTime(9), late: 880, .sample),
    ])
    // A leap second cannot be named in POSIX time; trust is kept across it.
    let arrival = ArrivalTime(time: posix(december2 + 30 * 86_400, ms: 120))
    #expect(trust.judge(leap, arrival: arrival) == .rejected(.leapSecond))
    #expect(trust.isTrusted)
    trust.reset()
    #expect(!trust.isTrusted)
  }

  // When the receiver's time steps (docs/time.md, "When the time steps"). An hour is
  // 3 600 000 ms; a receiver an hour ahead of the system clock has its epochs arrive
  // −3 599 880 ms "late".

  @Test("wrong, then right: a receiver an hour ahead steps back to the system clock's time")
  func aReceiverThatBecomesRightIsFollowed() {
    let hour: Int64 = 3600
    let trust = run([
      // Trusted as it is: nothing to compare it with at first.
      Row(epochTime(hour + 1), late: -3_599_880, .rejected(.settling)),
      Row(epochTime(hour + 2), late: -3_599_880, .rejected(.settling)),
      Row(epochTime(hour + 3), late: -3_599_880, .sample),
      // It decodes the satellites' time: back an hour, now 120 ms behind the system clock.
      Row(epochTime(4), .rejected(.notNewer)),
      Row(epochTime(5), .rejected(.notNewer)),
      Row(
        epochTime(6), .sample,
        step: .followed(
          by: .seconds(-3600), lateness: .milliseconds(120), agreesWithSystemClock: true)),
      Row(epochTime(7), .sample),
    ])
    #expect(trust.isTrusted)
    #expect(trust.rejections == [.settling: 2, .notNewer: 2])
  }

  @Test("wrong, then right: twenty seconds back")
  func aSmallStepBackIsFollowedToo() {
    run([
      Row(epochTime(21), late: -19_850, .rejected(.settling)),
      Row(epochTime(22), late: -19_850, .rejected(.settling)),
      Row(epochTime(23), late: -19_850, .sample),
      Row(epochTime(4), late: 150, .rejected(.notNewer)),
      Row(epochTime(5), late: 150, .rejected(.notNewer)),
      Row(
        epochTime(6), late: 150, .sample,
        step: .followed(
          by: .seconds(-20), lateness: .milliseconds(150), agreesWithSystemClock: true)),
    ])
  }

  @Test(
    "right, then wrong: a receiver that leaves the system clock is not followed, and is served again once it returns",
    arguments: [3600, -3600] as [Int64])
  func aReceiverThatBecomesWrongIsRefused(stepSeconds: Int64) {
    let away = 120 - stepSeconds * 1000
    let into: TimeRejection = stepSeconds > 0 ? .jumped : .notNewer
    let trust = run([
      Row(epochTime(7201), .rejected(.settling)),
      Row(epochTime(7202), .rejected(.settling)),
      Row(epochTime(7203), .sample),
      Row(epochTime(7204 + stepSeconds), late: away, .rejected(into)),
      Row(epochTime(7205 + stepSeconds), late: away, .rejected(into)),
      Row(
        epochTime(7206 + stepSeconds), late: away, .rejected(.awayFromSystemClock),
        step: .refused(by: .seconds(stepSeconds), lateness: .milliseconds(away))),
      // Said once; refused for as long as it stays away.
      Row(epochTime(7207 + stepSeconds), late: away, .rejected(.awayFromSystemClock)),
      Row(epochTime(7208 + stepSeconds), late: away, .rejected(.awayFromSystemClock)),
      // Back to the system clock's time: trusted again after settling.
      Row(epochTime(7209), .rejected(.settling)),
      Row(epochTime(7210), .rejected(.settling)),
      Row(epochTime(7211), .sample, step: .returned(lateness: .milliseconds(120))),
      Row(epochTime(7212), .sample),
    ])
    #expect(trust.rejections[.awayFromSystemClock] == 3)
  }

  @Test("a step across a lost fix is judged against the time before the loss")
  func aStepAcrossALostFix() {
    run([
      Row(epochTime(1), .rejected(.settling)),
      Row(epochTime(2), .rejected(.settling)),
      Row(epochTime(3), .sample),
      Row(epochTime(4, fix: .invalid), .rejected(.noFix)),
      Row(epochTime(3605), late: -3_599_880, .rejected(.settling)),
      Row(epochTime(3606), late: -3_599_880, .rejected(.settling)),
      Row(
        epochTime(3607), late: -3_599_880, .rejected(.awayFromSystemClock),
        step: .refused(by: .seconds(3600), lateness: .milliseconds(-3_599_880))),
      Row(epochTime(8, fix: .invalid), .rejected(.noFix)),
      Row(epochTime(9), .rejected(.settling)),
      Row(epochTime(10), .rejected(.settling)),
      Row(epochTime(11), .sample, step: .returned(lateness: .milliseconds(120))),
      // Three hours without a fix: the clocks drifted 800 ms apart, within 100 ppm of it.
      Row(epochTime(10812, fix: .invalid), .rejected(.noFix)),
      Row(epochTime(10813), late: 920, .rejected(.settling)),
      Row(epochTime(10814), late: 920, .rejected(.settling)),
      Row(epochTime(10815), late: 920, .sample),
    ])
  }

  @Test("when the system clock agrees with neither time, the receiver is followed")
  func withoutAClockToBreakTheTieTheReceiverIsFollowed() {
    // A board without network whose clock is a day behind, before chrony has set it.
    let day: Int64 = -86_400_000
    run([
      Row(epochTime(1), late: day + 120, .rejected(.settling)),
      Row(epochTime(2), late: day + 120, .rejected(.settling)),
      Row(epochTime(3), late: day + 120, .sample),
      Row(epochTime(24), late: day - 19_880, .rejected(.jumped)),
      Row(epochTime(25), late: day - 19_880, .rejected(.jumped)),
      Row(
        epochTime(26), late: day - 19_880, .sample,
        step: .followed(
          by: .seconds(20), lateness: .milliseconds(day - 19_880), agreesWithSystemClock: false)),
    ])
  }

  @Test("a step of the system clock keeps trust: the monotonic clock tells it from the receiver's")
  func aSystemClockStepKeepsTrust() {
    run([
      Row(epochTime(1), .rejected(.settling)),
      Row(epochTime(2), .rejected(.settling)),
      Row(epochTime(3), .sample),
      // `date -s` an hour ahead: every epoch now arrives an hour "late".
      Row(
        epochTime(4), late: 3_600_120, clock: 3_600_000, .sample,
        step: .systemClock(by: .seconds(3600))),
      Row(epochTime(5), late: 3_600_120, clock: 3_600_000, .sample),
      // chronyd steps it back by 3599.9 s.
      Row(
        epochTime(6), late: 220, clock: 100, .sample,
        step: .systemClock(by: .milliseconds(-3_599_900))),
      // A late epoch is one epoch off the timeline; trust is kept.
      Row(epochTime(7), late: 990, clock: 100, .rejected(.jumped)),
      Row(epochTime(8), late: 230, clock: 100, .sample),
    ])
    // Without the monotonic clock the same step looks like the receiver leaving the system
    // clock, and is refused.
    run([
      Row(epochTime(1), clock: nil, .rejected(.settling)),
      Row(epochTime(2), clock: nil, .rejected(.settling)),
      Row(epochTime(3), clock: nil, .sample),
      Row(epochTime(4), late: 3_600_120, clock: nil, .rejected(.jumped)),
      Row(epochTime(5), late: 3_600_120, clock: nil, .rejected(.jumped)),
      Row(
        epochTime(6), late: 3_600_120, clock: nil, .rejected(.awayFromSystemClock),
        step: .refused(by: .seconds(-3600), lateness: .milliseconds(3_600_120))),
    ])
  }

  @Test func stepsAreSaidInWords() {
    #expect(
      TimeStep.followed(
        by: .seconds(-3600), lateness: .milliseconds(152), agreesWithSystemClock: true
      )
      .description
        == "the receiver's time stepped by -3600.000 s and now agrees with the system clock "
        + "(+0.152 s late): serving the new time")
    let refused = TimeStep.refused(by: .seconds(3600), lateness: .milliseconds(-3_599_848))
      .description
    #expect(refused.hasPrefix("WARNING: the receiver's time stepped by +3600.000 s, away from"))
    #expect(refused.contains("NOT serving it"))
    #expect(TimeStep.systemClock(by: .milliseconds(1500)).description.contains("+1.500 s"))
  }

  @Test func settlingCanBeShortened() {
    run(
      [
        Row(epochTime(1), .sample), Row(epochTime(2, fix: .invalid), .rejected(.noFix)),
        Row(epochTime(3), .sample),
      ],
      rules: TimeTrustRules(settlingEpochs: 1))
  }
}

@Suite("The release date")
struct ReleaseDateTests {
  /// The release process sets it to the day of the release: a date in the future would
  /// refuse every receiver's time until then.
  @Test func isNotInTheFuture() {
    let today = UTCDate(daysSinceUnixEpoch: Int(Date().timeIntervalSince1970 / 86_400))
    #expect(ReleaseDate.date <= today)
    #expect(ReleaseDate.date >= UTCDate(year: 2026, month: 1, day: 1))
  }
}
