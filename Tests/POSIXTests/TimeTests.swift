import Glibc
import POSIX
import Testing

@Suite("Durations for the kernel: one rule, rounded up")
struct TimeTests {
  @Test(
    "poll milliseconds round up, never below the duration",
    arguments: [
      (Duration.zero, CInt(0)),
      (.nanoseconds(1), 1),
      (.milliseconds(1), 1),
      (.nanoseconds(1_000_001), 2),
      (.milliseconds(999) + .nanoseconds(1), 1000),
      (.seconds(1), 1000),
      (.seconds(1) + .nanoseconds(1), 1001),
      (.seconds(-1), 0),
      (.nanoseconds(-1), 0),
      (.seconds(Int64(CInt.max)), CInt.max),
      (.seconds(Int64.max), CInt.max),
    ])
  func pollMilliseconds(_ duration: Duration, _ expected: CInt) {
    #expect(duration.pollMilliseconds == expected)
  }

  @Test("a timespec rounds up to the nanosecond; whole seconds carry")
  func timespec() {
    func parts(_ duration: Duration) -> [Int] {
      let value = duration.timespec
      return [value.tv_sec, value.tv_nsec]
    }
    #expect(parts(.zero) == [0, 0])
    #expect(parts(.nanoseconds(1)) == [0, 1])
    #expect(parts(.seconds(2) + .nanoseconds(500)) == [2, 500])
    // One attosecond past a whole nanosecond is the next nanosecond.
    #expect(
      parts(.nanoseconds(5) + Duration(secondsComponent: 0, attosecondsComponent: 1)) == [0, 6])
    // 0.999999999000000001 s: the nanoseconds round up to a whole second.
    let almost = Duration(secondsComponent: 0, attosecondsComponent: 999_999_999_000_000_001)
    #expect(parts(almost) == [1, 0])
    #expect(parts(.seconds(-3)) == [0, 0])
    #expect(Duration(Duration.seconds(7).timespec) == .seconds(7))
  }

  @Test("a monotonic instant: now moves forward; a ContinuousClock deadline keeps its distance")
  func monotonicInstant() {
    let before = MonotonicInstant.now
    let later = before + .seconds(10)
    #expect(before.duration(to: later) == .seconds(10))
    #expect(later > before)
    #expect(later.timeLeft > .seconds(9))
    #expect(later.timeLeft <= .seconds(10))
    let converted = MonotonicInstant(ContinuousClock.now + .seconds(5))
    #expect(converted.timeLeft > .seconds(4))
    #expect(converted.timeLeft <= .seconds(5))
    #expect(MonotonicInstant(ContinuousClock.now - .seconds(1)).timeLeft < .zero)
  }

  @Test("sleepThread sleeps at least as long as asked")
  func sleepThreadWaits() {
    let start = MonotonicInstant.now
    sleepThread(for: .milliseconds(20))
    #expect(start.duration(to: .now) >= .milliseconds(20))
  }

  @Test(
    "a boot-clock timer: expires at its ContinuousClock deadline, not before; disarmed, never"
  )
  func bootClockTimer() throws {
    let timer = try BootClockTimer.make()
    defer { timer.close() }
    var descriptors = [timer.pollDescriptor]
    // Disarmed: nothing within 30 ms.
    #expect(try poll(&descriptors, until: .now + .milliseconds(30)) == false)
    let deadline = ContinuousClock.now + .milliseconds(40)
    timer.arm(at: deadline)
    #expect(try poll(&descriptors, until: .now + .seconds(5)))
    #expect(ContinuousClock.now >= deadline)
    #expect(timer.consume())
    #expect(timer.consume() == false)  // one shot
    // A deadline already passed expires at once; disarming before it is read leaves it read.
    timer.arm(at: ContinuousClock.now - .seconds(1))
    #expect(try poll(&descriptors, until: .now + .seconds(5)))
    #expect(timer.consume())
    timer.arm(at: ContinuousClock.now + .milliseconds(20))
    timer.arm(at: nil)
    #expect(try poll(&descriptors, until: .now + .milliseconds(60)) == false)
  }
}
