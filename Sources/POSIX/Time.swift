import Glibc

// Durations and deadlines as the kernel takes them.
//
// The one rounding rule: a length of time given to the kernel is rounded UP to the unit the
// call counts in (nanoseconds for a `timespec`, milliseconds for `poll`), so that a wait never
// ends before its deadline and a caller waiting for a deadline never spins on a wait of zero.
// Negative lengths count as zero; lengths the unit cannot hold are clamped to the largest it
// can. ``Duration/timespec`` and ``Duration/pollMilliseconds`` both come from
// ``Duration/roundedUp(unitsPerSecond:)``; nothing else converts.

extension Duration {
  /// Whole seconds and the rest in units of `1 / unitsPerSecond` s, rounded up; never negative.
  /// `unitsPerSecond` must divide 10^18 (a unit is a whole number of attoseconds).
  @inlinable
  package func roundedUp(unitsPerSecond: Int64) -> (seconds: Int64, units: Int64) {
    let (seconds, attoseconds) = components
    guard seconds >= 0, !(seconds == 0 && attoseconds <= 0) else { return (0, 0) }
    let attosecondsPerUnit = 1_000_000_000_000_000_000 / unitsPerSecond
    let units = (attoseconds + attosecondsPerUnit - 1) / attosecondsPerUnit
    // The rest may round up to a whole second.
    if units == unitsPerSecond {
      return seconds == .max ? (.max, unitsPerSecond - 1) : (seconds + 1, 0)
    }
    return (seconds, units)
  }

  /// This length as a `timespec`, rounded up to the nanosecond.
  @inlinable
  package var timespec: Glibc.timespec {
    let (seconds, nanoseconds) = roundedUp(unitsPerSecond: 1_000_000_000)
    return Glibc.timespec(tv_sec: Int(seconds), tv_nsec: Int(nanoseconds))
  }

  /// This length as `poll`'s timeout, rounded up to the millisecond and clamped to `CInt.max`
  /// (about 24 days; a longer wait wakes once early and waits again).
  @inlinable
  package var pollMilliseconds: CInt {
    let (seconds, milliseconds) = roundedUp(unitsPerSecond: 1000)
    guard seconds <= Int64(CInt.max) / 1000 else { return .max }
    return CInt(clamping: seconds * 1000 + milliseconds)
  }
}

/// A moment on `CLOCK_MONOTONIC`: the clock `poll`, `nanosleep` and ``Lock``'s timed wait
/// measure against, which a change of the wall clock does not move.
///
/// Not `ContinuousClock.Instant`: on Linux that is `CLOCK_BOOTTIME`, which goes on counting
/// while the system is suspended and which a condition variable cannot wait on. A deadline
/// taken on another clock becomes one of these by the time left until it
/// (``init(_:)``), measured once.
package struct MonotonicInstant: Comparable, Hashable, Sendable, CustomStringConvertible {
  /// Time since the clock's origin (an unspecified moment before the process started).
  package let sinceOrigin: Duration

  @inlinable
  package init(sinceOrigin: Duration) { self.sinceOrigin = sinceOrigin }

  /// Now.
  @inlinable
  package static var now: MonotonicInstant {
    var now = Glibc.timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return MonotonicInstant(sinceOrigin: Duration(now))
  }

  /// The moment as far from now as `deadline` is from `ContinuousClock.now`.
  @inlinable
  package init(_ deadline: ContinuousClock.Instant) {
    let left = ContinuousClock.now.duration(to: deadline)
    self = .now + left
  }

  /// The moment as an absolute `timespec` on `CLOCK_MONOTONIC` (rounded up, as every
  /// conversion here is), for `pthread_cond_timedwait`.
  @inlinable
  package var timespec: Glibc.timespec { sinceOrigin.timespec }

  /// The time from now until this moment; negative once it has passed.
  @inlinable
  package var timeLeft: Duration { MonotonicInstant.now.duration(to: self) }

  @inlinable
  package func duration(to other: MonotonicInstant) -> Duration {
    other.sinceOrigin - sinceOrigin
  }

  @inlinable
  package static func + (instant: MonotonicInstant, duration: Duration) -> MonotonicInstant {
    MonotonicInstant(sinceOrigin: instant.sinceOrigin + duration)
  }

  @inlinable
  package static func < (a: MonotonicInstant, b: MonotonicInstant) -> Bool {
    a.sinceOrigin < b.sinceOrigin
  }

  package var description: String { "monotonic \(sinceOrigin)" }
}

/// Sleeps the calling thread for `duration` (rounded up to the nanosecond), going back to sleep
/// for the rest when a signal interrupts it. For threads of their own and benchmarks; never on
/// the cooperative pool or the driver's executor.
package func sleepThread(for duration: Duration) {
  let deadline = MonotonicInstant.now + duration
  while true {
    let left = deadline.timeLeft
    guard left > .zero else { return }
    var request = left.timespec
    // Interrupted or not, the loop measures what is left against the deadline.
    _ = nanosleep(&request, nil)
  }
}
