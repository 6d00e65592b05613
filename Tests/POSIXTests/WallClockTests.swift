import Glibc
import POSIX
import Testing

@Suite("The wall clock: the system's, and a fixed one for tests")
struct WallClockTests {
  @Test("the system's wall clock agrees with time(2) to within a second")
  func system() {
    // Read between two readings of time(2), whole seconds each: the clock may be stepped
    // meanwhile, but not in a test run that asserts nothing about order.
    let before = Int64(time(nil))
    let now = SystemWallClock().now().secondsAndNanoseconds
    let after = Int64(time(nil))
    #expect(now.seconds >= before - 1 && now.seconds <= after + 1)
    #expect((0..<1_000_000_000).contains(now.nanoseconds))
  }

  @Test("a fixed clock reads exactly what it was set to and advanced by")
  func fixed() {
    let clock = FixedWallClock(unixSeconds: 1_764_000_000, nanoseconds: 123_456_789)
    #expect(clock.now() == .seconds(1_764_000_000) + .nanoseconds(123_456_789))
    #expect(clock.now() == clock.now(), "it does not move by itself")
    clock.advance(by: .milliseconds(1500))
    #expect(clock.now().secondsAndNanoseconds == (1_764_000_001, 623_456_789))
    clock.advance(by: .seconds(-2))
    #expect(clock.now().secondsAndNanoseconds == (1_763_999_999, 623_456_789))
    clock.set(to: .seconds(42))
    #expect(clock.now() == .seconds(42))
  }

  @Test(
    "seconds and nanoseconds as a timespec holds them: seconds rounded down, rest in 0 ..< 10⁹",
    arguments: [
      (Duration.zero, Int64(0), Int64(0)),
      (.nanoseconds(1), 0, 1),
      (.seconds(1_764_000_000) + .nanoseconds(999_999_999), 1_764_000_000, 999_999_999),
      (.nanoseconds(-1), -1, 999_999_999),
      (.seconds(-1), -1, 0),
      (.milliseconds(-1500), -2, 500_000_000),
      // Finer than a nanosecond: dropped, downwards.
      (Duration(secondsComponent: 3, attosecondsComponent: 1), 3, 0),
      (.zero - Duration(secondsComponent: 0, attosecondsComponent: 1), -1, 999_999_999),
    ])
  func components(_ time: Duration, _ seconds: Int64, _ nanoseconds: Int64) {
    #expect(time.secondsAndNanoseconds == (seconds, nanoseconds))
  }

  @Test("a fixed clock shared between threads reads every advance")
  func shared() async {
    let clock = FixedWallClock(.zero)
    await withTaskGroup(of: Void.self) { group in
      for _ in 0..<8 {
        group.addTask { for _ in 0..<1000 { clock.advance(by: .nanoseconds(1)) } }
      }
    }
    #expect(clock.now() == .nanoseconds(8000))
  }
}
