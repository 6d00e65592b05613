import POSIX

/// The time source of a receiver: linger, hold, replay expiry and reconnection backoff are
/// measured with it, so tests can drive them with a ``ManualClock`` in milliseconds.
///
/// Times are durations since an arbitrary, fixed origin.
public protocol DriverClock: Sendable {
  /// Monotonic time since the clock's origin.
  var now: Duration { get }
  /// Suspends until `now >= deadline`. Throws `CancellationError` when the task is cancelled.
  func sleep(until deadline: Duration) async throws
}

/// The system's monotonic clock (`ContinuousClock`), which keeps counting while the system
/// sleeps, as a receiver's idle time does. Sleepers wait on the ``DriverExecutor``'s timer,
/// not on libdispatch's, so an armed linger costs one wake-up when it expires and nothing
/// more.
public struct SystemClock: DriverClock {
  private let origin: ContinuousClock.Instant

  public init() { origin = ContinuousClock.now }

  public var now: Duration { ContinuousClock.now - origin }

  public func sleep(until deadline: Duration) async throws {
    try await DriverExecutor.shared.sleep(until: origin + deadline)
  }
}

/// A clock that moves only when told to: for tests of time-dependent behaviour.
///
/// ```swift
/// let clock = ManualClock()
/// let receiver = GPSReceiver(…, clock: clock)
/// clock.advance(by: .seconds(5))   // the linger expires now
/// ```
public final class ManualClock: DriverClock, @unchecked Sendable {
  private struct Sleeper {
    let id: UInt64
    let deadline: Duration
    let continuation: CheckedContinuation<Void, any Error>
  }

  private struct State {
    var now: Duration = .zero
    var sleepers: [Sleeper] = []
    var nextID: UInt64 = 0
    var cancelled: Set<UInt64> = []
  }

  private let state = Locked(State())

  public init(now: Duration = .zero) {
    state.withLock { $0.now = now }
  }

  public var now: Duration { state.withLock { $0.now } }

  /// Number of tasks currently sleeping on this clock (lets tests wait until a timer is armed).
  public var sleeperCount: Int { state.withLock { $0.sleepers.count } }

  /// The earliest deadline anyone sleeps until, if any.
  public var nextDeadline: Duration? { state.withLock { $0.sleepers.map(\.deadline).min() } }

  public func sleep(until deadline: Duration) async throws {
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
  public func advance(to instant: Duration) {
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
