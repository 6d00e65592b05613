import NMEA
import Testing

@testable import SerialGPS

/// The sleep a power-off expects, from the demand that left last (docs/chipsets.md, "Sleep
/// depth").
@Suite struct ExpectedSleepTests {
  var policy = PowerPolicy(
    configuration: .init(
      linger: .seconds(5), backoff: .init(initial: .milliseconds(500), maximum: .seconds(4))))

  @Test mutating func aScheduledWakeThatEndsExpectsTheNextOne() {
    _ = policy.handle(.scheduled(wanted: true, linger: false), now: .origin)
    _ = policy.handle(.poweredOn, now: .origin)
    #expect(
      policy.handle(.scheduled(wanted: false, linger: false), now: .origin + .seconds(5))
        == [.powerOff])
    #expect(policy.expectedSleep == .untilScheduledWake)
  }

  @Test mutating func aSubscriberOrAContinuousRequestThatLeftIsUnknown() {
    _ = policy.handle(.scheduled(wanted: true, linger: false), now: .origin)
    _ = policy.handle(.poweredOn, now: .origin)
    _ = policy.handle(.scheduled(wanted: false, linger: true), now: .origin + .seconds(1))
    #expect(policy.expectedSleep == .unknown)
    _ = policy.handle(.scheduled(wanted: true, linger: false), now: .origin + .seconds(2))
    _ = policy.handle(.scheduled(wanted: false, linger: false), now: .origin + .seconds(3))
    #expect(policy.expectedSleep == .untilScheduledWake)
    _ = policy.handle(.attach, now: .origin + .seconds(4))
    _ = policy.handle(.detach, now: .origin + .seconds(5))
    #expect(policy.expectedSleep == .unknown)
  }

  @Test mutating func aShutdownIsUnknown() {
    _ = policy.handle(.scheduled(wanted: true, linger: false), now: .origin)
    _ = policy.handle(.poweredOn, now: .origin)
    _ = policy.handle(.scheduled(wanted: false, linger: false), now: .origin + .seconds(1))
    _ = policy.handle(.poweredOff, now: .origin + .seconds(2))
    _ = policy.handle(.scheduled(wanted: true, linger: false), now: .origin + .seconds(3))
    _ = policy.handle(.poweredOn, now: .origin + .seconds(3))
    #expect(policy.handle(.shutdown, now: .origin + .seconds(4)).contains(.powerOff))
    #expect(policy.expectedSleep == .unknown)
  }

  @Test mutating func aShutdownWakesAReceiverAsleepOnTheWakeLineToLeaveItInStandby() {
    #expect(policy.handle(.shutdown, now: .origin) == [])
    var other = PowerPolicy(configuration: policy.configuration)
    other.asleepOnWakeLine = true
    #expect(other.handle(.shutdown, now: .origin) == [.putToStandby])
    #expect(other.confirm(.putToStandby, now: .origin) == [.putToStandby])
  }

  @Test func theSchedulerTellsItsNextWake() {
    var scheduler = RequestScheduler(configuration: .init())
    #expect(scheduler.nextWake == nil)
    let start = DriverInstant.origin
    _ = scheduler.handle(
      .add(1, LocationRequest(interval: .seconds(600)), cached: nil), now: start)
    // Due now: power wanted, no wake timer.
    #expect(scheduler.nextWake == nil)
    _ = scheduler.handle(.receiverPowered(true), now: start)
    // A hot first fix after 2 s of a receiver whose history is unknown: its ephemeris is
    // taken as usable (docs/requests.md), so the wake ends with the delivery.
    let actions = scheduler.handle(
      .fix(update(at: start + .seconds(2))), now: start + .seconds(2))
    #expect(actions.contains(.powerOff(linger: false)))
    // Due 600 s after the delivery at 2 s, woken the learned start (2 s) and the margin
    // before.
    #expect(
      scheduler.nextWake
        == start + .seconds(602) - .seconds(2) - RequestScheduler.Configuration().wakeMargin)
  }

  func update(at arrival: DriverInstant) -> FixUpdate {
    var fix = Fix()
    fix.mode = .threeD
    fix.position = Position(
      latitude: Coordinate(
        degrees: 47, scaledMinutes: 17_113, fractionDigits: 3, isNegative: false),
      longitude: Coordinate(degrees: 8, scaledMinutes: 33_915, fractionDigits: 3, isNegative: false)
    )
    return FixUpdate(fix: fix, age: .zero, isReplay: false, arrival: arrival)
  }
}
