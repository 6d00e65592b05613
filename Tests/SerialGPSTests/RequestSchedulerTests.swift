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
    // one. It sleeps at once, waking at 59.0 s: the learned 3.1 s to 10 m and the 1-s margin
    // before the 63.1-s due time.
    let first = bench.actions(from: .origin, to: .ms(58_999))
    #expect(first.count == 4, "\(log.prefix(8))")
    #expect(first[0].0 == .zero && first[0].1 == .powerOn)
    #expect(first[1].0 == .milliseconds(3100) && first[1].1 == .deliver(1, fix(at: 3100, error: 9)))
    #expect(first[2].0 == .milliseconds(3100) && first[2].1 == .powerOff(linger: false))
    #expect(
      first[3].0 == .milliseconds(3100) && first[3].1 == .armTimer(1, deadline: .ms(59_000)))
    #expect(bench.scheduler.starts.allSatisfy { $0 == .hot })
    // Every later minute exactly alike: wake at 59.0 + 60k, the 9-m fix at 62.1 + 60k (a
    // second before its due time, 63.1 + 60k), sleep at once, the next wake armed.
    for cycle in 0..<58 {
      let wake = 59_000 + 60_000 * cycle
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
    // Sixty fixes in the hour (the sixty-first is due at 3603.1 s, its wake at 3599.0 s).
    #expect(bench.deliveries.count == 60)
    #expect(bench.wakes == 61)
    // On 100 ms after each ask: 60 wakes of 3.0 s, and 0.9 s of the last.
    #expect(bench.onTime == .milliseconds(60 * 3000 + 900))
    #expect(bench.scheduler.unexpectedEvents == 0)
  }

  @Test("past the ephemeris refresh age one wake is extended to 30 s of tracking")
  func ephemerisRefresh() {
    var configuration = RequestScheduler.Configuration()
    configuration.ephemerisRefresh = .seconds(600)
    var bench = Bench(configuration: configuration)
    bench.send(.add(1, LocationRequest(interval: .seconds(60), accuracy: 10), cached: nil))
    bench.run(until: .ms(1_800_000))
    // The first start is hot (1 s), so its ephemeris counts as collected then (0 s): the
    // first collection is on the wake whose fixes pass 600 s (599.0 s: on until 30 s after
    // its first fix at 600.1 s), the next on the one that passes 1230.1 s.
    let offs = bench.log.filter { $0.1 == .powerOff(linger: false) }.map { $0.0 }
    let long = zip(bench.log.filter { $0.1 == .powerOn }.map { $0.0 }, offs).filter {
      $1 - $0 > .seconds(10)
    }
    #expect(long.map { $0.0 } == [.ms(599_000), .ms(1_259_000)], "\(long)")
    #expect(long.map { $0.1 } == [.ms(630_100), .ms(1_290_100)])
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
    // 92.1-s due time) waits for its due fix; from it the hot start is learned (3.1 s to 9 m).
    let actions = bench.actions(from: .origin, to: .ms(160_000)).map { "\($0.0) \($0.1)" }
    let expected: [(Int, RequestScheduler.Action)] = [
      (0, .powerOn),
      (32_100, .deliver(1, fix(at: 32_100, error: 9))),
      (60_100, .powerOff(linger: false)), (60_100, .armTimer(1, deadline: .ms(81_100))),
      (81_100, .powerOn),
      (91_200, .deliver(1, fix(at: 91_200, error: 2.5))),
      (91_200, .powerOff(linger: false)), (91_200, .armTimer(2, deadline: .ms(148_000))),
      (148_000, .powerOn),
      (151_100, .deliver(1, fix(at: 151_100, error: 9))),
      (151_100, .powerOff(linger: false)), (151_100, .armTimer(3, deadline: .ms(208_000))),
    ]
    #expect(actions == expected.map { "\(Duration.milliseconds($0.0)) \($0.1)" })
    #expect(bench.scheduler.starts == [.warm, .hot, .hot])
    #expect(bench.scheduler.learnedValidity == nil)
  }

  @Test("an unknown ephemeris found expired teaches no validity; a collected one's expiry does")
  func expiredEphemeris() {
    var bench = Bench()
    // The receiver collected its ephemeris as the bench began; it serves 600 s.
    bench.collectedAt = .origin
    bench.ephemerisValidity = .seconds(600)
    bench.send(.add(1, LocationRequest(interval: .seconds(60), accuracy: 10), cached: nil))
    bench.run(until: .ms(700_000))
    // The first start is hot (1.1 s), so nothing is collected: the ephemeris expires at
    // 600 s and the wake at 659.0 s is warm (a 30-s start, over 3 × the hot start's 1.1 s +
    // 5 s). That wake collects at once (on to 719.1 s), but the age of the ephemeris it
    // found expired was never known: no validity is learned from it.
    #expect(bench.scheduler.starts.firstIndex(of: .warm) == 11, "\(bench.scheduler.starts)")
    #expect(bench.scheduler.learnedValidity == nil)
    bench.run(until: .ms(1_800_000))
    // The one collected at 719.1 s expires at 1319.1 s: the wake at 1347.0 s is warm, and
    // teaches that an ephemeris serves less than 627.9 s; the scheduler collects again
    // before three quarters of that, so no other start in the half hour is warm.
    let starts = bench.scheduler.starts
    #expect(starts.indices.filter { starts[$0] == .warm } == [11, 22], "\(starts)")
    #expect(bench.scheduler.learnedValidity == .milliseconds(627_900))
    let ons = bench.log.filter { $0.1 == .powerOn }.map { $0.0 }
    let offs = bench.log.filter { $0.1 == .powerOff(linger: false) }.map { $0.0 }
    #expect(ons[11] == .ms(659_000) && offs[11] == .ms(719_100), "\(ons) \(offs)")
    #expect(ons[22] == .ms(1_347_000) && offs[22] == .ms(1_407_100), "\(ons) \(offs)")
    // Each warm start's fix is late (691.1 s for 663.1 s, 1379.1 s for 1351.1 s); every
    // other one is a minute after the one before.
    let times = bench.deliveries.map { $0.0 }
    let late: Set<DriverInstant> = [.ms(691_100), .ms(1_379_100)]
    #expect(late.isSubset(of: Set(times)), "\(times)")
    for (earlier, later) in zip(times, times.dropFirst()).dropFirst()
    where !late.contains(earlier) && !late.contains(later) {
      #expect(later - earlier == .seconds(60), "\(times)")
    }
  }

  @Test("a wake whose start was faster than learned waits for its fix rather than cycling")
  func earlyWakeWaits() {
    var scheduler = RequestScheduler(configuration: .init())
    let request = LocationRequest(interval: .seconds(20))
    #expect(scheduler.handle(.add(1, request, cached: nil), now: .ms(0)) == [.powerOn])
    _ = scheduler.handle(.receiverPowered(true), now: .ms(0))
    // A slow hot start (3 s to the first fix): delivered, then off until 4 s before the
    // next is due (23 s).
    #expect(
      scheduler.handle(.fix(fix(at: 3000, error: 3)), now: .ms(3000)) == [
        .deliver(1, fix(at: 3000, error: 3)), .powerOff(linger: false),
        .armTimer(1, deadline: .ms(19_000)),
      ])
    _ = scheduler.handle(.receiverPowered(false), now: .ms(3000))
    #expect(scheduler.handle(.timerFired(1), now: .ms(19_000)) == [.powerOn])
    _ = scheduler.handle(.receiverPowered(true), now: .ms(19_000))
    // This start takes 1 s: a wake now would be due at 21 s, a second away. It stays on.
    #expect(scheduler.handle(.fix(fix(at: 20_000, error: 3)), now: .ms(20_000)) == [])
    #expect(scheduler.handle(.fix(fix(at: 21_000, error: 3)), now: .ms(21_000)) == [])
    #expect(
      scheduler.handle(.fix(fix(at: 22_000, error: 3)), now: .ms(22_000)) == [
        .deliver(1, fix(at: 22_000, error: 3)), .powerOff(linger: false),
        .armTimer(2, deadline: .ms(41_000)),
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
    // 123.1 s). Request 2's wake at 99.0 s (due 103.1 s) serves request 1 again, 21 s early,
    // and so on: one wake a minute for both, none of request 1's own.
    #expect(bench.wakes == 61, "\(bench.wakes)")
    let perRequest = Dictionary(grouping: bench.deliveries, by: { $0.1 }).mapValues {
      $0.map(\.0)
    }
    #expect(perRequest[2]?.prefix(3) == [.ms(43_100), .ms(102_100), .ms(162_100)])
    #expect(perRequest[1]?.prefix(3) == [.ms(3100), .ms(43_100), .ms(102_100)])
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
    // 3.1 s, then each a minute later (62.1 s … 602.1 s: within the margin of its due time).
    #expect(bench.deliveries.filter { $0.1 == 2 }.count == 11)
    // The continuous request leaves: power off with the linger; request 2's wake is armed.
    let before = bench.log.count
    bench.send(.remove(1))
    #expect(
      bench.log.dropFirst(before).map(\.1) == [
        .powerOff(linger: true), .armTimer(1, deadline: .ms(659_000)),
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
    // On at 100.1 s, fixes from 101.1 s: one every 10 s.
    // A fix within the 1-s margin of the due time counts as on time.
    #expect(
      bench.deliveries.map { $0.0 } == [
        .ms(101_100), .ms(110_100), .ms(120_100), .ms(130_100),
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
