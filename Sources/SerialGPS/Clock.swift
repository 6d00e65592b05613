import POSIX

/// A moment on a ``DriverClock``: how long after the clock's origin it is.
///
/// A deadline or a time stamp is a `DriverInstant`; a length of time (a linger, an age) is a
/// `Duration`. Subtracting two instants gives a duration; adding a duration to an instant
/// gives an instant; adding two instants does not compile. Instants of different clocks have
/// different origins and do not mix; every ``SystemClock`` of a process shares one origin, so
/// an instant read from one compares with an instant read from any other.
public struct DriverInstant: InstantProtocol, CustomStringConvertible {
  public typealias Duration = Swift.Duration

  /// The time since the clock's origin.
  public var sinceOrigin: Duration

  /// The moment `sinceOrigin` after the clock's origin.
  public init(sinceOrigin: Duration) { self.sinceOrigin = sinceOrigin }

  /// The clock's origin: where a ``ManualClock`` starts unless told otherwise.
  public static var origin: DriverInstant { DriverInstant(sinceOrigin: .zero) }

  public func advanced(by duration: Duration) -> DriverInstant {
    DriverInstant(sinceOrigin: sinceOrigin + duration)
  }

  public func duration(to other: DriverInstant) -> Duration {
    other.sinceOrigin - sinceOrigin
  }

  public static func < (lhs: DriverInstant, rhs: DriverInstant) -> Bool {
    lhs.sinceOrigin < rhs.sinceOrigin
  }

  public static func + (lhs: DriverInstant, rhs: Duration) -> DriverInstant {
    lhs.advanced(by: rhs)
  }

  public static func - (lhs: DriverInstant, rhs: Duration) -> DriverInstant {
    lhs.advanced(by: .zero - rhs)
  }

  public static func - (lhs: DriverInstant, rhs: DriverInstant) -> Duration {
    rhs.duration(to: lhs)
  }

  public static func += (lhs: inout DriverInstant, rhs: Duration) { lhs = lhs + rhs }
  public static func -= (lhs: inout DriverInstant, rhs: Duration) { lhs = lhs - rhs }

  public var description: String { "origin + \(sinceOrigin)" }
}

/// The time source of a receiver: linger, hold, replay expiry and reconnection backoff are
/// measured with it, so tests can drive them with a ``ManualClock`` in milliseconds.
///
/// A standard library `Clock` whose instants are ``DriverInstant``s, so that the driver can
/// keep any of them (``SystemClock``, ``ManualClock``, an app's own) without being generic
/// over it.
///
/// **Suspend.** A driver clock counts the time the system spends suspended, and so does a
/// sleep on it: a linger, hold or replay expiry is a length of real time, and a fix taken
/// before a suspend must look as old as it is after the resume, not as old as the time the
/// system was awake (docs/receiver.md, *Time and suspend*).
public protocol DriverClock: Clock where Instant == DriverInstant, Duration == Swift.Duration {}

extension DriverClock {
  /// Suspends until `now >= deadline`. Throws `CancellationError` when the task is cancelled.
  public func sleep(until deadline: DriverInstant) async throws {
    try await sleep(until: deadline, tolerance: nil)
  }
}

/// The system's clock that keeps counting while the system is suspended (`ContinuousClock`,
/// `CLOCK_BOOTTIME` on Linux), as a receiver's idle time and a fix's age do. Sleepers wait on
/// the ``DriverExecutor``'s timer, which runs on the same clock, not on libdispatch's, so an
/// armed linger costs one wake-up when it expires and nothing more, and one whose deadline
/// passed during a suspend expires at the resume.
///
/// Every instance reads the same time: the origin is the process's (its first use of a
/// `SystemClock`), so a fix's ``FixUpdate/arrival`` compares with `SystemClock().now` made
/// anywhere else in the program.
public struct SystemClock: DriverClock {
  /// The one origin of the process: a global is initialised once, on first use, atomically.
  private static let origin = ContinuousClock.now

  public init() { _ = Self.origin }

  public var now: DriverInstant { DriverInstant(sinceOrigin: ContinuousClock.now - Self.origin) }

  public var minimumResolution: Duration { ContinuousClock().minimumResolution }

  /// Suspends until `now >= deadline`, counting time suspended. `tolerance` is not used: the
  /// driver's timer wakes at the deadline.
  public func sleep(until deadline: DriverInstant, tolerance: Duration? = nil) async throws {
    try await DriverExecutor.shared.sleep(until: Self.origin + deadline.sinceOrigin)
  }
}

/// A clock that moves only when told to: for tests of time-dependent behaviour.
///
/// ```swift
/// let clock = ManualClock()
/// let receiver = GPSReceiver(…, clock: clock)
/// clock.advance(by: .seconds(5))   // the linger expires now
/// ```
///
/// A jump (one ``advance(by:)`` over a long time) is how a test shows a system suspend: the
/// time counts, and every sleeper whose deadline it passed wakes.
public final class ManualClock: DriverClock, Sendable {
  private struct Sleeper {
    let id: UInt64
    let deadline: DriverInstant
    let continuation: CheckedContinuation<Void, any Error>
  }

  private struct State {
    var now: DriverInstant = .origin
    var sleepers: [Sleeper] = []
    var nextID: UInt64 = 0
    var cancelled: Set<UInt64> = []
  }

  private let state = Locked(State())

  /// A clock that reads `now` until advanced.
  public init(now: DriverInstant = .origin) {
    state.withLock { $0.now = now }
  }

  public var now: DriverInstant { state.withLock { $0.now } }

  public var minimumResolution: Duration { .nanoseconds(1) }

  /// Number of tasks currently sleeping on this clock (lets tests wait until a timer is armed).
  public var sleeperCount: Int { state.withLock { $0.sleepers.count } }

  /// The earliest deadline anyone sleeps until, if any.
  public var nextDeadline: DriverInstant? {
    state.withLock { $0.sleepers.map(\.deadline).min() }
  }

  public func sleep(until deadline: DriverInstant, tolerance: Duration? = nil) async throws {
    let id = state.withLock { state -> UInt64 in
      state.nextID += 1
      return state.nextID
    }
    try await withTaskCancellationHandler {
      try await withCheckedThrowingContinuation {
        (continuation: CheckedContinuation<Void, any Error>) in
        let resumeNow: Result<Void, any Error>? = state.withLock { state in
          if state.cancelled.remove(id) != nil { return .failure(CancellationError()) }
          if deadline <= state.now { return .success(()) }
          state.sleepers.append(Sleeper(id: id, deadline: deadline, continuation: continuation))
          return nil
        }
        if let resumeNow { continuation.resume(with: resumeNow) }
      }
    } onCancel: {
      let sleeper: Sleeper? = state.withLock { state in
        if let index = state.sleepers.firstIndex(where: { $0.id == id }) {
          return state.sleepers.remove(at: index)
        }
        state.cancelled.insert(id)  // cancelled before it started sleeping
        return nil
      }
      sleeper?.continuation.resume(throwing: CancellationError())
    }
    state.withLock { _ = $0.cancelled.remove(id) }
  }

  /// Moves time forward and wakes every sleeper whose deadline has come, in deadline order.
  public func advance(by duration: Duration) {
    advance(to: now + duration)
  }

  /// Moves time to `instant` (never backwards) and wakes the sleepers that are due.
  public func advance(to instant: DriverInstant) {
    let due: [Sleeper] = state.withLock { state in
      if instant > state.now { state.now = instant }
      let now = state.now
      let due = state.sleepers.filter { $0.deadline <= now }.sorted { $0.deadline < $1.deadline }
      state.sleepers.removeAll { $0.deadline <= now }
      return due
    }
    for sleeper in due { sleeper.continuation.resume() }
  }
}
