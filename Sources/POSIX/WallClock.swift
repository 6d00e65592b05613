import Glibc

/// The wall clock: the system's time of day (`CLOCK_REALTIME`), which the administrator,
/// chronyd or `date -s` may step at any moment.
///
/// Code whose output depends on "now" (the time in a report, the age of a fix kept elsewhere,
/// the start of a recording, bytes that tell a receiver the time) takes one of these, so that
/// a test can pass a ``FixedWallClock`` and expect exact values. ``SystemWallClock`` is the one
/// reader of the system's time of day. Not for lengths of time or deadlines: a step of the
/// wall clock would stretch or cut them; those are ``MonotonicInstant``s (or the driver's
/// clock).
///
/// The time is a `Duration` since the Unix epoch: exact to the nanosecond as the kernel gives
/// it, with the arithmetic ages and deadlines need, and ``Swift/Duration/secondsAndNanoseconds``
/// for callers that want a `timespec`'s two parts.
package protocol WallClock: Sendable {
  /// The time now since 1970-01-01 00:00 UTC, leap seconds not counted (POSIX time).
  func now() -> Duration
}

/// The system's wall clock, `clock_gettime(CLOCK_REALTIME)`.
package struct SystemWallClock: WallClock {
  package init() {}

  package func now() -> Duration {
    var now = Glibc.timespec()
    // Cannot fail: the clock always exists and `now` is writable. Not a blocking call, so
    // EINTR does not arise.
    clock_gettime(CLOCK_REALTIME, &now)
    return Duration(now)
  }
}

/// A wall clock that reads what it was set to, for tests: it moves only by ``set(to:)`` and
/// ``advance(by:)``, so what a caller makes of "now" can be asserted exactly.
///
/// Safe to share between threads (the time is behind a ``Locked``), as the code under test
/// may read it on a thread of its own.
package final class FixedWallClock: WallClock {
  private let time: Locked<Duration>

  /// A clock that reads `sinceEpoch` (since 1970-01-01 00:00 UTC) until set or advanced.
  package init(_ sinceEpoch: Duration) {
    time = Locked(sinceEpoch)
  }

  /// A clock that reads `seconds` and `nanoseconds` after the Unix epoch until set or
  /// advanced.
  package convenience init(unixSeconds seconds: Int64, nanoseconds: Int64 = 0) {
    self.init(.seconds(seconds) + .nanoseconds(nanoseconds))
  }

  package func now() -> Duration { time.withLock { $0 } }

  /// Makes the clock read `sinceEpoch` from now on, earlier or later: the system's clock
  /// can be stepped back too.
  package func set(to sinceEpoch: Duration) {
    time.withLock { $0 = sinceEpoch }
  }

  /// Moves the clock by `duration` (back, when negative).
  package func advance(by duration: Duration) {
    time.withLock { $0 += duration }
  }
}

extension Duration {
  /// This time since the epoch as a `timespec` holds it: whole seconds, rounded down (so a
  /// time before 1970 has negative seconds and a positive rest), and nanoseconds in
  /// 0 ..< 10⁹, finer parts dropped. Not for lengths given to the kernel, which round up
  /// (``timespec``).
  package var secondsAndNanoseconds: (seconds: Int64, nanoseconds: Int64) {
    let (seconds, attoseconds) = components
    var whole = seconds
    var nanoseconds = attoseconds / 1_000_000_000
    // Rounded down, not towards zero, whatever sign the standard library gives the parts.
    if attoseconds % 1_000_000_000 < 0 { nanoseconds -= 1 }
    if nanoseconds < 0 {
      whole -= 1
      nanoseconds += 1_000_000_000
    }
    return (whole, nanoseconds)
  }
}
