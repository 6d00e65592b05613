import NMEA
import POSIX
import SerialGPS
import Testing

@testable import Fleet

@Suite("RemoteReceiver: a kept fix's age, against the wall clock it is given")
struct RemoteReceiverAgeTests {
  /// The wall-clock time of `fix`'s timestamp.
  func time(of fix: Fix) -> Duration {
    let timestamp = fix.timestamp!
    return .seconds(timestamp.secondsSinceUnixEpoch) + .nanoseconds(timestamp.time.nanoseconds)
  }

  @Test("the age is the clock's time less the fix's, to the nanosecond")
  func exact() {
    var fix = testFix(second: 5)
    fix.time?.nanoseconds = 250_000_000
    let clock = FixedWallClock(time(of: fix) + .milliseconds(3500) + .nanoseconds(7))
    #expect(RemoteReceiverCore.age(of: fix, on: clock) == .milliseconds(3500) + .nanoseconds(7))
    clock.advance(by: .seconds(60))
    #expect(RemoteReceiverCore.age(of: fix, on: clock) == .seconds(63.5) + .nanoseconds(7))
  }

  @Test("zero when the clocks disagree (a fix from the future, or over a day old) or undated")
  func untellable() {
    let fix = testFix(second: 5)
    let clock = FixedWallClock(time(of: fix))
    #expect(RemoteReceiverCore.age(of: fix, on: clock) == .zero, "the same instant")
    clock.advance(by: .seconds(-1))
    #expect(RemoteReceiverCore.age(of: fix, on: clock) == .zero, "ahead of this machine")
    clock.set(to: time(of: fix) + .seconds(86_400))
    #expect(RemoteReceiverCore.age(of: fix, on: clock) == .zero, "a day old")
    clock.advance(by: .nanoseconds(-1))
    #expect(RemoteReceiverCore.age(of: fix, on: clock) == .seconds(86_400) - .nanoseconds(1))
    var undated = fix
    undated.date = nil
    #expect(RemoteReceiverCore.age(of: undated, on: clock) == .zero)
  }
}
