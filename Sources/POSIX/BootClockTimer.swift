import CPOSIX
import Glibc

/// A one-shot timer on `CLOCK_BOOTTIME` (a timerfd), the clock `ContinuousClock` reads on
/// Linux: it counts the time the system spends suspended, so a deadline that passes during a
/// suspend expires at the resume rather than as much later as the suspend lasted (which a
/// `poll` timeout or ``Lock``'s timed wait, both on `CLOCK_MONOTONIC`, would do).
///
/// Polled next to an ``EventSignal``, it lets a thread sleep until the earlier of new work
/// and a deadline with no periodic wake-up (`DriverExecutor`).
package struct BootClockTimer: Sendable {
  package let descriptor: FileDescriptor

  /// A new disarmed timer, non-blocking and close-on-exec.
  package static func make() throws(Errno) -> BootClockTimer {
    BootClockTimer(descriptor: FileDescriptor(rawValue: try valueOrErrno(cposix_boottime_timer())))
  }

  /// Arms the timer to expire at `deadline` (at once when it has passed); `nil` disarms it.
  /// Cannot fail short of a closed descriptor.
  package func arm(at deadline: ContinuousClock.Instant?) {
    guard let deadline else {
      _ = cposix_arm_timer(descriptor.rawValue, 0, 0, 0)
      return
    }
    // The same clock: the time left, measured once, added to CLOCK_BOOTTIME's now read just
    // after it, so the timer never expires before `deadline` as ContinuousClock tells it.
    let left = ContinuousClock.now.duration(to: deadline)
    var now = Glibc.timespec()
    clock_gettime(CLOCK_BOOTTIME, &now)
    let absolute = (Duration(now) + max(left, .zero)).timespec
    _ = cposix_arm_timer(descriptor.rawValue, 1, Int64(absolute.tv_sec), absolute.tv_nsec)
  }

  /// Clears an expiry; true when the timer had expired since the last call.
  @discardableResult
  package func consume() -> Bool { descriptor.consumeCounter() }

  /// A `pollfd` that is ready once the timer has expired.
  package var pollDescriptor: pollfd { descriptor.pollForInput }

  package func close() { try? descriptor.close() }
}
