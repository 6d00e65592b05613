import NMEA
import Testing

@testable import SerialGPS

extension DriverInstant {
  fileprivate static func ms(_ value: Int) -> DriverInstant { .origin + .milliseconds(value) }
}

/// A receiver for the scheduler to drive, on a virtual time line in milliseconds: on 100 ms
/// after it is asked to power on, then one fix a second whose error starts at 25 m and
/// shrinks by 0.6 a second to 2.5 m (as the simulator's MediaTek does); 30 s on after the
/// first fix collects the ephemeris, and a start once it is older than `ephemerisValidity`
/// (or before any was collected, when it had none to begin with) takes `warmFirstFix` to its
/// first fix.
private struct Bench {
  var scheduler = RequestScheduler(configuration: .init())
  var now = DriverInstant.origin
  /// Every action, with the time it was decided.
  var log: [(DriverInstant, RequestScheduler.Action)] = []
  var timers: [RequestScheduler.TimerID: DriverInstant] = [:]
  var powerWanted = false
  var poweredAt: DriverInstant?
  var onSince: DriverInstant?
  var offSince: DriverInstant? = .origin
  var firstFixDelay: Duration = .milliseconds(1000)
  /// How long a collected ephemeris serves a hot start (`nil`: for ever); past it a start
  /// takes `warmFirstFix`.
  var ephemerisValidity: Duration?
  var warmFirstFix: Duration = .seconds(30)
  /// When its ephemeris was collected (`nil`: before the bench began, of unknown age; then
  /// usable for ever, unless `ephemerisAtStart` is false).
  var collectedAt: DriverInstant?
  var ephemerisAtStart = true
  var firstFixAt: DriverInstant?
  var nextFix: DriverInstant?
  var fixIndex = 0
  var onTime: Duration = .zero
  var wakes = 0
  /// Another consumer keeps the receiver on (a plain subscription).
  var externallyOn = false

  init() {}
  init(configuration: RequestScheduler.Configuration) {
    scheduler = RequestScheduler(configuration: configuration)
  }

  mutating func send(_ event: RequestScheduler.Event) {
    let actions = scheduler.handle(event, now: now)
    for action in actions {
      log.append((now, action))
      switch action {
      case .powerOn:
        powerWanted = true
      case .powerOff:
        powerWanted = false
      case .armTimer(let id, let deadline):
        timers[id] = deadline
      case .cancelTimer(let id):
        timers[id] = nil
      case .deliver, .finish:
        break
      }
    }
    updatePower()
  }

  mutating func updatePower() {
    let wanted = powerWanted || externallyOn
    if wanted, onSince == nil, poweredAt == nil {
      poweredAt = now + .milliseconds(100)
      wakes += 1
    } else if !wanted, let since = onSince {
      onTime += now - since
      onSince = nil
      nextFix = nil
      offSince = now
      send(.receiverPowered(false))
    } else if !wanted {
      poweredAt = nil
    }
  }

  static func error(_ index: Int) -> Double {
    var error = 25.0
    for _ in 0..<index { error *= 0.6 }
    return max(2.5, error)
  }

  static func fix(error: Double) -> Fix {
    var fix = Fix()
    fix.mode = .threeD
    fix.position = Position(
      latitude: Coordinate(decimalDegrees: 48.1), longitude: Coordinate(decimalDegrees: 11.5))
    fix.horizontalAccuracy = error
    return fix
  }

  mutating func run(until end: DriverInstant) {
    while true {
      let candidates = [poweredAt, nextFix].compactMap { $0 } + Array(timers.values)
      guard let next = candidates.min(), next <= end else { break }
      now = next
      if poweredAt == next {
        poweredAt = nil
        onSince = now
        var delay = firstFixDelay
        if let ephemerisValidity, let collectedAt, now - collectedAt > ephemerisValidity {
          delay = warmFirstFix
        }
        if !ephemerisAtStart, collectedAt == nil { delay = warmFirstFix }
        firstFixAt = nil
        nextFix = now + delay
        fixIndex = 0
        send(.receiverPowered(true))
      } else if nextFix == next {
        nextFix = now + .seconds(1)
        let update = FixUpdate(
          fix: Self.fix(error: Self.error(fixIndex)), age: .zero, isReplay: false, arrival: now)
        fixIndex += 1
        firstFixAt = firstFixAt ?? now
        if let firstFixAt, now - firstFixAt >= .seconds(30) { collectedAt = now }
        send(.fix(update))
      } else if let (id, _) = timers.first(where: { $0.value == next }) {
        timers[id] = nil
        send(.timerFired(id))
      }
    }
    now = end
    if let since = onSince {
      onTime += end - since
      onSince = end
    }
  }

  var deliveries: [(DriverInstant, RequestScheduler.RequestID, FixUpdate)] {
    log.compactMap { time, action in
      if case .deliver(let id, let update) = action { return (time, id, update) }
      return nil
    }
  }

  /// The actions from `start` to `end` (inclusive), times from `start`.
  func actions(from start: DriverInstant, to end: DriverInstant) -> [(
    Duration, RequestScheduler.Action
  )] {
    log.filter { $0.0 >= start && $0.0 <= end }.map { ($0.0 - start, $0.1) }
  }
}

private func fix(at ms: Int, error: Double) -> FixUpdate {
  FixUpdate(
    fix: Bench.fix(error: error), age: .zero, isReplay: false, arrival: .origin + .milliseconds(ms))
}

@Suite struct RequestSchedulerTests {
  @Test("an hour of a 60-s request of 10 m: one 3.1-s wake a minute, the first hot one included")
  func hourOfSixtySecondRequest() {
    var bench = Bench()
    let request = LocationRequest(interval: .seconds(60), accuracy: 10)
    bench.send(.add(1, request, cached: nil))
    bench.run(until: .ms(3_600_000))
    let log = bench.log.map { "\($0.0 - .origin) \($0.1)" }
    // The first wake: on 100 ms after the ask, first fix at 1.1 s (25 m), 15 m, then 9 m at
    // 3.1 s: delivered. Nothing is known of this receiver, but a first fix 1 s after the
    // wake is a hot start: its ephemeris is usable, so the wake is not extended to collect
    // one. It sleeps at once, waking at 59.75 s: the learned 3.1 s to 10 m and the 0.25-s
    // margin before the 63.1-s due time.
    let first = bench.actions(from: .origin, to: .ms(58_999))
    #expect(first.count == 4, "\(log.prefix(8))")
    #expect(first[0].0 == .zero && first[0].1 == .powerOn)
    #expect(first[1].0 == .milliseconds(3100) && first[1].1 == .deliver(1, fix(at: 3100, error: 9)))
    #expect(first[2].0 == .milliseconds(3100) && first[2].1 == .powerOff(linger: false))
    #expect(
      first[3].0 == .milliseconds(3100) && first[3].1 == .armTimer(1, deadline: .ms(59_750)))
    #expect(bench.scheduler.starts.allSatisfy { $0 == .hot })
    // Every later minute exactly alike: wake at 59.75 + 60k, the 9-m fix at 62.85 + 60k (a
    // quarter second before its due time, 63.1 + 60k), sleep at once, the next wake armed.
    for cycle in 0..<58 {
      let wake = 59_750 + 60_000 * cycle
      let actions = bench.actions(from: .ms(wake), to: .ms(wake + 59_999))
      let expected: [(Duration, RequestScheduler.Action)] = [
        (.zero, .powerOn),
        (.milliseconds(3100), .deliver(1, fix(at: wake + 3100, error: 9))),
        (.milliseconds(3100), .powerOff(linger: false)),
        (
          .milliseconds(3100),
          .armTimer(RequestScheduler.TimerID(cycle + 2), deadline: .ms(wake + 60_000))
        ),
      ]
      #expect(actions.count == expected.count, "cycle \(cycle): \(actions)")
      for (got, want) in zip(actions, expected) {
        #expect(got.0 == want.0 && got.1 == want.1, "cycle \(cycle)")
      }
    }
    // Sixty fixes in the hour (the sixty-first is due at 3603.1 s, its wake at 3599.75 s).
    #expect(bench.deliveries.count == 60)
    #expect(bench.wakes == 61)
    // On 100 ms after each ask: 60 wakes of 3.0 s, and 0.15 s of the last.
    #expect(bench.onTime == .milliseconds(60 * 3000 + 150))
    #expect(bench.scheduler.unexpectedEvents == 0)
  }

  @Test("beside another consumer's power, the fix after it leaves answers at its due time")
  func afterContinuousPower() {
    var bench = Bench()
    // A subscriber keeps the receiver on for the first minute (as a 1 Hz gpsd client does);
    // a 60-s request of 10 m beside it.
    bench.externallyOn = true
    bench.send(.add(1, LocationRequest(interval: .seconds(60), accuracy: 10), cached: nil))
    bench.run(until: .ms(60_000))
    bench.externallyOn = false
    bench.updatePower()
    bench.run(until: .ms(190_000))
    // The request's own power: from its ask to its first fix (3.1 s), then again 5 s before
    // its wake (59.75 s) would be due, so that the receiver is not cycled. The fix a second
    // before the 63.1-s due time (62.1 s) is passed over for the one at it, after the
    // subscriber left: the receiver sleeps at once, and the next wake is 3.35 s before the
    // next due time, its fix a quarter second early.
    let actions = bench.actions(from: .origin, to: .ms(190_000)).map { "\($0.0) \($0.1)" }
    let expected: [(Int, RequestScheduler.Action)] = [
      (0, .powerOn),
      (3100, .deliver(1, fix(at: 3100, error: 9))),
      (3100, .powerOff(linger: false)), (3100, .armTimer(1, deadline: .ms(59_750))),
      (55_100, .powerOn), (55_100, .cancelTimer(1)),
      (63_100, .deliver(1, fix(at: 63_100, error: 2.5))),
      (63_100, .powerOff(linger: false)), (63_100, .armTimer(2, deadline: .ms(119_750))),
      (119_750, .powerOn),
      (122_850, .deliver(1, fix(at: 122_850, error: 9))),
      (122_850, .powerOff(linger: false)), (122_850, .armTimer(3, deadline: .ms(179_750))),
      (179_750, .powerOn),
      (182_850, .deliver(1, fix(at: 182_850, error: 9))),
      (182_850, .powerOff(linger: false)), (182_850, .armTimer(4, deadline: .ms(239_750))),
    ]
    #expect(actions == expected.map { "\(Duration.milliseconds($0.0)) \($0.1)" })
  }

  @Test("a fix more than half a second early is passed over for the next epoch")
  func earlyFixPassedOver() {
    var bench = Bench()
    // The first start is slow (1.7 s to the first fix): 3.8 s to 9 m, learned. The next is
    // faster (1.0 s), so its 9-m fix comes 0.95 s before the due time: passed over for the
    // next epoch's (5.4 m, 0.05 s after it). That wake teaches 3.1 s, and the next fix comes
    // a quarter second early.
    bench.firstFixDelay = .milliseconds(1700)
    bench.send(.add(1, LocationRequest(interval: .seconds(60), accuracy: 10), cached: nil))
    bench.run(until: .ms(10_000))
    bench.firstFixDelay = .milliseconds(1000)
    bench.run(until: .ms(130_000))
    let actions = bench.actions(from: .origin, to: .ms(130_000)).map { "\($0.0) \($0.1)" }
    let expected: [(Int, RequestScheduler.Action)] = [
      (0, .powerOn),
      (3800, .deliver(1, fix(at: 3800, error: 9))),
      (3800, .powerOff(linger: false)), (3800, .armTimer(1, deadline: .ms(59_750))),
      (59_750, .powerOn),
      (63_850, .deliver(1, fix(at: 63_850, error: Bench.error(3)))),
      (63_850, .powerOff(linger: false)), (63_850, .armTimer(2, deadline: .ms(120_500))),
      (120_500, .powerOn),
      (123_600, .deliver(1, fix(at: 123_600, error: 9))),
      (123_600, .powerOff(linger: false)), (123_600, .armTimer(3, deadline: .ms(180_500))),
    ]
    #expect(actions == expected.map { "\(Duration.milliseconds($0.0)) \($0.1)" })
  }

  @Test("past the ephemeris refresh age one wake is extended to 30 s of tracking")
  func ephemerisRefresh() {
    var configuration = RequestScheduler.Configuration()
    configuration.ephemerisRefresh = .seconds(600)
    var bench = Bench(configuration: configuration)
    bench.send(.add(1, LocationRequest(interval: .seconds(60), accuracy: 10), cached: nil))
    bench.run(until: .ms(1_800_000))
    // The first start is hot (1 s), so its ephemeris counts as collected then (0 s): the
    // first collection is on the last wake before 600 s (599.75 s: on until 30 s after its
    // first fix at 600.85 s), the next on the last one before 1230.85 s (1199.75 s).
    let offs = bench.log.filter { $0.1 == .powerOff(linger: false) }.map { $0.0 }
    let long = zip(bench.log.filter { $0.1 == .powerOn }.map { $0.0 }, offs).filter {
      $1 - $0 > .seconds(10)
    }
    #expect(long.map { $0.0 } == [.ms(599_750), .ms(1_199_750)], "\(long)")
    #expect(long.map { $0.1 } == [.ms(630_850), .ms(1_230_850)])
    #expect(bench.deliveries.count == 30)
  }

  @Test("a receiver without ephemeris: its slow first start is warm and collects at once")
  func warmFirstStart() {
    var bench = Bench()
    bench.ephemerisAtStart = false
    bench.ephemerisValidity = .seconds(600)
    bench.send(.add(1, LocationRequest(interval: .seconds(60), accuracy: 10), cached: nil))
    bench.run(until: .ms(160_000))
    // First fix 30 s after the wake (over the assumed 10-s hot start): warm. The 9-m fix
    // (32.1 s) is delivered; the wake stays on to 30 s after the first fix (60.1 s). The next
    // wake (a hot start expected, none seen yet: the assumed 10 s and the margin before the
    // 92.1-s due time) waits for the first fix from half a second before it (91.95 s); from
    // it the hot start is learned (3.1 s to 9 m).
    let actions = bench.actions(from: .origin, to: .ms(160_000)).map { "\($0.0) \($0.1)" }
    let expected: [(Int, RequestScheduler.Action)] = [
      (0, .powerOn),
      (32_100, .deliver(1, fix(at: 32_100, error: 9))),
      (60_100, .powerOff(linger: false)), (60_100, .armTimer(1, deadline: .ms(81_850))),
      (81_850, .powerOn),
      (91_950, .deliver(1, fix(at: 91_950, error: 2.5))),
      (91_950, .powerOff(linger: false)), (91_950, .armTimer(2, deadline: .ms(148_750))),
      (148_750, .powerOn),
      (151_850, .deliver(1, fix(at: 151_850, error: 9))),
      (151_850, .powerOff(linger: false)), (151_850, .armTimer(3, deadline: .ms(208_750))),
    ]
    #expect(actions == expected.map { "\(Duration.milliseconds($0.0)) \($0.1)" })
    #expect(bench.scheduler.starts == [.warm, .hot, .hot])
    #expect(bench.scheduler.learnedValidity == nil)
  }

  @Test("an unknown ephemeris found expired teaches a lower bound; collections come before it")
  func expiredEphemeris() {
    var bench = Bench()
    // The receiver collected its ephemeris as the bench began; it serves 600 s.
    bench.collectedAt = .origin
    bench.ephemerisValidity = .seconds(600)
    bench.send(.add(1, LocationRequest(interval: .seconds(60), accuracy: 10), cached: nil))
    bench.run(until: .ms(700_000))
    // The first start is hot (1.1 s), so nothing is collected: the ephemeris expires at
    // 600 s and the wake at 659.75 s is warm (a 30-s start, over 3 × the hot start's 1.1 s +
    // 5 s). That wake collects at once (on to 719.85 s). The age of the ephemeris it found
    // expired was never known, so no validity is learned from it; but it served at the hot
    // start of 599.75 s, so one serves longer than 599.75 s.
    #expect(bench.scheduler.starts.firstIndex(of: .warm) == 11, "\(bench.scheduler.starts)")
    #expect(bench.scheduler.learnedValidity == nil)
    #expect(bench.scheduler.validityAtLeast == .milliseconds(599_750))
    #expect(bench.scheduler.refreshAge == .milliseconds(599_750))
    bench.run(until: .ms(1_800_000))
    // The next collection is on the last wake before the one collected at 719.85 s is
    // 599.75 s old: the wake of 1288.5 s (the next, 1348.5 s, would find it 628.65 s old), on
    // until 1319.6 s. No other start in the half hour is warm.
    let starts = bench.scheduler.starts
    #expect(starts.indices.filter { starts[$0] == .warm } == [11], "\(starts)")
    #expect(bench.scheduler.learnedValidity == nil)
    let ons = bench.log.filter { $0.1 == .powerOn }.map { $0.0 }
    let offs = bench.log.filter { $0.1 == .powerOff(linger: false) }.map { $0.0 }
    #expect(ons[11] == .ms(659_750) && offs[11] == .ms(719_850), "\(ons) \(offs)")
    #expect(ons[21] == .ms(1_288_500) && offs[21] == .ms(1_319_600), "\(ons) \(offs)")
    let long = zip(ons, offs).filter { $1 - $0 > .seconds(10) }.map(\.0)
    #expect(long == [.ms(659_750), .ms(1_288_500)], "\(long)")
    // The warm start's fix is late (691.85 s for 663.1 s); every other one is a minute after
    // the one before, a quarter second before its due time.
    let times = bench.deliveries.map { $0.0 }
    #expect(times.contains(.ms(691_850)), "\(times)")
    for (earlier, later) in zip(times, times.dropFirst()).dropFirst()
    where earlier != .ms(691_850) && later != .ms(691_850) {
      #expect(later - earlier == .seconds(60), "\(times)")
    }
  }

  @Test("past a lower bound of the validity shorter than four collections, the refresh age stays")
  func shortValidityBoundIgnored() {
    var configuration = RequestScheduler.Configuration()
    configuration.ephemerisRefresh = .seconds(3600)
    var bench = Bench(configuration: configuration)
    // The ephemeris found at the start expires 100 s in: the first start and the next are
    // hot, the one after (at 119.75 s) warm. It served at least 59.75 s, which says more of
    // its unknown age than of how long one serves: collections stay an hour apart.
    bench.collectedAt = .origin
    bench.ephemerisValidity = .seconds(100)
    bench.send(.add(1, LocationRequest(interval: .seconds(60), accuracy: 10), cached: nil))
    bench.run(until: .ms(300_000))
    #expect(bench.scheduler.starts.prefix(3) == [.hot, .hot, .warm], "\(bench.scheduler.starts)")
    #expect(bench.scheduler.validityAtLeast == .milliseconds(59_750))
    #expect(bench.scheduler.refreshAge == .seconds(3600))
  }

  @Test("a wake whose start was faster than learned waits for its fix rather than cycling")
  func earlyWakeWaits() {
    var scheduler = RequestScheduler(configuration: .init())
    let request = LocationRequest(interval: .seconds(20))
    #expect(scheduler.handle(.add(1, request, cached: nil), now: .ms(0)) == [.powerOn])
    _ = scheduler.handle(.receiverPowered(true), now: .ms(0))
    // A slow hot start (3 s to the first fix): delivered, then off until 3.25 s before the
    // next is due (23 s).
    #expect(
      scheduler.handle(.fix(fix(at: 3000, error: 3)), now: .ms(3000)) == [
        .deliver(1, fix(at: 3000, error: 3)), .powerOff(linger: false),
        .armTimer(1, deadline: .ms(19_750)),
      ])
    _ = scheduler.handle(.receiverPowered(false), now: .ms(3000))
    #expect(scheduler.handle(.timerFired(1), now: .ms(19_750)) == [.powerOn])
    _ = scheduler.handle(.receiverPowered(true), now: .ms(19_750))
    // This start takes 1 s: a wake now would be due 1.25 s before the 23-s due time, under
    // 5 s away. It stays on, passing over the fixes more than half a second early.
    #expect(scheduler.handle(.fix(fix(at: 20_750, error: 3)), now: .ms(20_750)) == [])
    #expect(scheduler.handle(.fix(fix(at: 21_750, error: 3)), now: .ms(21_750)) == [])
    #expect(
      scheduler.handle(.fix(fix(at: 22_750, error: 3)), now: .ms(22_750)) == [
        .deliver(1, fix(at: 22_750, error: 3)), .powerOff(linger: false),
        .armTimer(2, deadline: .ms(41_750)),
      ])
  }

  @Test("two requests of different phases merge onto one wake")
  func phasesMerge() {
    var bench = Bench()
    bench.send(.add(1, LocationRequest(interval: .seconds(60), accuracy: 10), cached: nil))
    bench.run(until: .ms(40_000))
    bench.send(.add(2, LocationRequest(interval: .seconds(60), accuracy: 10), cached: nil))
    bench.run(until: .ms(3_600_000))
    // Request 2 wakes the receiver at 40 s; its first fix (43.1 s) serves request 1 too
    // (due at 63.1 s: 20 s early, within half its interval), which keeps its phase (due
    // 123.1 s). Request 2's wake at 99.75 s (due 103.1 s) serves request 1 again, 20.25 s
    // early, and so on: one wake a minute for both, none of request 1's own.
    #expect(bench.wakes == 61, "\(bench.wakes)")
    let perRequest = Dictionary(grouping: bench.deliveries, by: { $0.1 }).mapValues {
      $0.map(\.0)
    }
    #expect(perRequest[2]?.prefix(3) == [.ms(43_100), .ms(102_850), .ms(162_850)])
    #expect(perRequest[1]?.prefix(3) == [.ms(3100), .ms(43_100), .ms(102_850)])
    // The phases kept: each request's fixes a minute apart after the merge.
    for times in perRequest.values {
      for (earlier, later) in zip(times, times.dropFirst()).dropFirst(2) {
        #expect(later - earlier == .seconds(60))
      }
    }
    #expect(bench.deliveries.allSatisfy { $0.2.fix.horizontalAccuracy! <= 10 })
  }

  @Test("a continuous request powers continuously; when it leaves, the linger applies")
  func continuousRequest() {
    var bench = Bench()
    bench.send(.add(1, LocationRequest(), cached: nil))
    bench.send(.add(2, LocationRequest(interval: .seconds(60), accuracy: 10), cached: nil))
    bench.run(until: .ms(630_000))
    #expect(bench.wakes == 1)
    #expect(bench.deliveries.filter { $0.1 == 1 }.count == 629)  // every fix from 1.1 s
    // 3.1 s, then each a minute later (63.1 s … 603.1 s: the fix a second before each due
    // time is passed over for the one at it).
    let scheduled = bench.deliveries.filter { $0.1 == 2 }.map(\.0)
    #expect(scheduled == (0...10).map { DriverInstant.ms(3100 + 60_000 * $0) }, "\(scheduled)")
    // The continuous request leaves: power off with the linger; request 2's wake is armed.
    let before = bench.log.count
    bench.send(.remove(1))
    #expect(
      bench.log.dropFirst(before).map(\.1) == [
        .powerOff(linger: true), .armTimer(1, deadline: .ms(659_750)),
      ])
  }

  @Test("passive requests never power; they receive what others cause")
  func passive() {
    var bench = Bench()
    bench.send(.add(1, LocationRequest(interval: .seconds(10), passive: true), cached: nil))
    bench.run(until: .ms(100_000))
    #expect(bench.log.isEmpty)
    #expect(bench.wakes == 0)
    bench.externallyOn = true
    bench.updatePower()
    bench.run(until: .ms(140_000))
    // On at 100.1 s, fixes from 101.1 s: one every 10 s, each at its due time (the fix a
    // second before it is too early).
    #expect(
      bench.deliveries.map { $0.0 } == [
        .ms(101_100), .ms(111_100), .ms(121_100), .ms(131_100),
      ])
    #expect(!bench.log.contains { $0.1 == .powerOn })
  }

  @Test("one-shot: the cache answers when young and good enough, else a wake until the fix")
  func oneShot() {
    var scheduler = RequestScheduler(configuration: .init())
    let young = fix(at: 0, error: 5)
    let request = LocationRequest(
      accuracy: 10, maxAge: .seconds(30), maxUpdates: 1, duration: .seconds(60))
    let replayed = FixUpdate(fix: young.fix, age: .seconds(20), isReplay: true, arrival: .origin)
    #expect(
      scheduler.handle(.add(1, request, cached: young), now: .ms(20_000)) == [
        .armTimer(1, deadline: .ms(80_000)), .deliver(1, replayed), .cancelTimer(1),
        .finish(1, best: nil),
      ])
    // Too old: a wake, the 25-m and 15-m fixes do not do, the 9-m one does.
    #expect(
      scheduler.handle(.add(2, request, cached: young), now: .ms(40_000)) == [
        .armTimer(2, deadline: .ms(100_000)), .powerOn,
      ])
    #expect(scheduler.handle(.receiverPowered(true), now: .ms(40_100)) == [])
    #expect(scheduler.handle(.fix(fix(at: 41_100, error: 25)), now: .ms(41_100)) == [])
    #expect(scheduler.handle(.fix(fix(at: 42_100, error: 15)), now: .ms(42_100)) == [])
    #expect(
      scheduler.handle(.fix(fix(at: 43_100, error: 9)), now: .ms(43_100)) == [
        .deliver(2, fix(at: 43_100, error: 9)), .cancelTimer(2), .finish(2, best: nil),
        .powerOff(linger: false),
      ])
    // Its owner lets go after it ended: expected, nothing happens.
    #expect(scheduler.handle(.remove(2), now: .ms(43_200)) == [])
    #expect(scheduler.unexpectedEvents == 0)
  }

  @Test("one-shot timing out ends with the best fix seen")
  func oneShotTimeout() {
    var scheduler = RequestScheduler(configuration: .init())
    let request = LocationRequest(accuracy: 1, maxUpdates: 1, duration: .seconds(5))
    #expect(
      scheduler.handle(.add(1, request, cached: nil), now: .ms(0)) == [
        .armTimer(1, deadline: .ms(5000)), .powerOn,
      ])
    _ = scheduler.handle(.receiverPowered(true), now: .ms(100))
    _ = scheduler.handle(.fix(fix(at: 1100, error: 25)), now: .ms(1100))
    _ = scheduler.handle(.fix(fix(at: 2100, error: 15)), now: .ms(2100))
    _ = scheduler.handle(.fix(fix(at: 3100, error: 19)), now: .ms(3100))
    #expect(
      scheduler.handle(.timerFired(1), now: .ms(5000)) == [
        .finish(1, best: fix(at: 2100, error: 15)), .powerOff(linger: false),
      ])
  }

  @Test("a fix that lost its estimate does not meet an accuracy when the fix before had one")
  func lostEstimateIsNotAnyAccuracy() {
    var scheduler = RequestScheduler(configuration: .init())
    let request = LocationRequest(accuracy: 10, maxUpdates: 1, duration: .seconds(20))
    _ = scheduler.handle(.add(1, request, cached: nil), now: .ms(0))
    _ = scheduler.handle(.receiverPowered(true), now: .ms(100))
    // 25 m, then an epoch whose estimate was lost (its GST outside the epoch): not 10 m.
    #expect(scheduler.handle(.fix(fix(at: 1100, error: 25)), now: .ms(1100)) == [])
    var lost = fix(at: 2100, error: 0)
    lost.fix.horizontalAccuracy = nil
    #expect(scheduler.handle(.fix(lost), now: .ms(2100)) == [])
    // A request made now is not answered with it from the cache either.
    let recent = LocationRequest(accuracy: 10, maxAge: .seconds(30), maxUpdates: 1)
    #expect(scheduler.handle(.add(2, recent, cached: lost), now: .ms(2200)) == [])
    // The next epoch has its estimate again, within 10 m: delivered to both.
    let good = fix(at: 3100, error: 8)
    #expect(
      scheduler.handle(.fix(good), now: .ms(3100)) == [
        .deliver(1, good), .cancelTimer(1), .finish(1, best: nil),
        .deliver(2, good), .finish(2, best: nil), .powerOff(linger: false),
      ])
  }

  @Test("learned timings count a fix without an estimate only from a receiver that gives none")
  func timingsAndLostEstimates() {
    typealias Sample = RequestScheduler.Sample
    let lost = RequestScheduler.Timings(samples: [
      Sample(elapsed: .seconds(1), error: 25), Sample(elapsed: .seconds(2), error: nil),
      Sample(elapsed: .seconds(3), error: 8),
    ])
    #expect(lost.time(toReach: 10) == .seconds(3))
    #expect(lost.time(toReach: nil) == .seconds(1))
    let none = RequestScheduler.Timings(samples: [
      Sample(elapsed: .seconds(1), error: nil), Sample(elapsed: .seconds(2), error: nil),
    ])
    #expect(none.time(toReach: 10) == .seconds(1))
  }

  @Test("a receiver that gives no estimate is served from its second fix on")
  func receiverWithoutEstimates() {
    var scheduler = RequestScheduler(configuration: .init())
    // Its last fix had an estimate (another receiver, before it was swapped for this one).
    _ = scheduler.handle(.add(1, LocationRequest(maxUpdates: 1), cached: nil), now: .ms(0))
    _ = scheduler.handle(.receiverPowered(true), now: .ms(100))
    _ = scheduler.handle(.fix(fix(at: 1100, error: 5)), now: .ms(1100))
    let request = LocationRequest(accuracy: 10, maxUpdates: 1, duration: .seconds(20))
    _ = scheduler.handle(.add(2, request, cached: nil), now: .ms(1200))
    var bare = fix(at: 2100, error: 0)
    bare.fix.horizontalAccuracy = nil
    #expect(scheduler.handle(.fix(bare), now: .ms(2100)) == [])
    var next = fix(at: 3100, error: 0)
    next.fix.horizontalAccuracy = nil
    #expect(
      scheduler.handle(.fix(next), now: .ms(3100)) == [
        .deliver(2, next), .cancelTimer(1), .finish(2, best: nil), .powerOff(linger: false),
      ])
  }

  @Test("maxUpdates and minDistance; requests that cannot be met are refused")
  func limitsAndRefusals() {
    var scheduler = RequestScheduler(configuration: .init())
    scheduler.assertsOnUnexpectedEvents = false
    #expect(
      scheduler.handle(.add(1, LocationRequest(interval: .zero), cached: nil), now: .ms(0)) == [
        .finish(1, best: nil)
      ])
    #expect(
      scheduler.handle(.add(2, LocationRequest(accuracy: -1), cached: nil), now: .ms(0)) == [
        .finish(2, best: nil)
      ])
    #expect(scheduler.refusedRequests == 2)
    #expect(
      scheduler.handle(
        .add(3, LocationRequest(maxUpdates: 2, minDistance: 100), cached: nil), now: .ms(0))
        == [.powerOn])
    #expect(scheduler.handle(.add(3, LocationRequest(), cached: nil), now: .ms(0)) == [])
    #expect(scheduler.unexpectedEvents == 1)
    let here = fix(at: 1000, error: 5)
    var near = fix(at: 2000, error: 5)
    near.fix.position?.latitude = Coordinate(decimalDegrees: 48.1005)  // about 56 m
    var far = fix(at: 3000, error: 5)
    far.fix.position?.latitude = Coordinate(decimalDegrees: 48.102)  // about 222 m
    #expect(scheduler.handle(.fix(here), now: .ms(1000)) == [.deliver(3, here)])
    #expect(scheduler.handle(.fix(near), now: .ms(2000)) == [])
    #expect(
      scheduler.handle(.fix(far), now: .ms(3000)) == [
        .deliver(3, far), .finish(3, best: nil), .powerOff(linger: false),
      ])
  }
}

extension Coordinate {
  fileprivate init(decimalDegrees value: Double) {
    let whole = abs(value).rounded(.towardZero)
    let minutes = (abs(value) - whole) * 60
    self.init(
      degrees: UInt16(whole), scaledMinutes: UInt64((minutes * 1_000_000).rounded()),
      fractionDigits: 6, isNegative: value < 0)
  }
}
