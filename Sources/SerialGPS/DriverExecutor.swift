import Glibc
import POSIX

/// The thread on which SerialGPS runs its own tasks and timers.
///
/// Swift's default executor on Linux is libdispatch's thread pool, which, once started, wakes
/// the process every second for as long as it lives. A driver for embedded boards should cost
/// nothing while nobody listens, so the receiver's controller, its timers and the tasks behind
/// callback subscriptions run here instead: one thread that sleeps in
/// `pthread_cond_wait` (or a timed wait until the next deadline, only while a timer is armed)
/// and wakes only when there is work.
///
/// Programs that want the same for their own code can run their top level on it with
/// ``runBlocking(_:)``, or start tasks with `Task(executorPreference: DriverExecutor.shared)`.
/// Jobs must not block for long: blocking I/O belongs on threads of its own.
public final class DriverExecutor: TaskExecutor, @unchecked Sendable {
  /// The executor SerialGPS uses.
  public static let shared = DriverExecutor()

  private struct Timer {
    let id: UInt64
    let deadline: MonotonicInstant
    let action: @Sendable () -> Void
  }

  private let lock = Lock()
  // Guarded by `lock`.
  private var jobs: [UnownedJob] = []
  private var jobHead = 0
  private var timers: [Timer] = []
  private var nextTimerID: UInt64 = 0
  private var thread: OwnThread?

  private init() {
    jobs.reserveCapacity(64)
    let thread = OwnThread.start(name: "serialgps-exec") { [self] in run() }
    if let failure = thread.startFailure {
      fatalError("serialgps: cannot start the driver thread: \(failure)")
    }
    lock.withLock { self.thread = thread }
  }

  public func enqueue(_ job: consuming ExecutorJob) {
    let job = UnownedJob(job)
    lock.withLock {
      jobs.append(job)
      lock.signal()
    }
  }

  private func run() {
    let executor = asUnownedTaskExecutor()
    var due: [Timer] = []
    while true {
      let pending = lock.withLock { () -> [UnownedJob] in
        while jobHead == jobs.count {
          if let next = timers.min(by: { $0.deadline < $1.deadline }) {
            lock.wait(until: next.deadline)
            let now = MonotonicInstant.now
            due = timers.filter { $0.deadline <= now }
            if !due.isEmpty {
              timers.removeAll { $0.deadline <= now }
              break
            }
          } else {
            lock.wait()
          }
        }
        let batch = Array(jobs[jobHead...])
        jobs.removeAll(keepingCapacity: true)
        jobHead = 0
        return batch
      }

      // Timer actions resume continuations, which enqueue jobs: run them outside the lock.
      due.sort { $0.deadline < $1.deadline }
      for timer in due { timer.action() }
      due.removeAll(keepingCapacity: true)
      for job in pending { job.runSynchronously(on: executor) }
    }
  }

  // MARK: - Timers

  /// Calls `action` on the driver thread at `deadline` (monotonic clock). Returns a token for
  /// ``cancelTimer(_:)``.
  func schedule(at deadline: ContinuousClock.Instant, _ action: @escaping @Sendable () -> Void)
    -> UInt64
  {
    // Fixed on the monotonic clock now, as far ahead as `deadline` is.
    let when = MonotonicInstant(deadline)
    return lock.withLock {
      nextTimerID += 1
      timers.append(Timer(id: nextTimerID, deadline: when, action: action))
      lock.signal()
      return nextTimerID
    }
  }

  /// Cancels a timer; returns false when it already fired (or never existed).
  @discardableResult
  func cancelTimer(_ id: UInt64) -> Bool {
    lock.withLock {
      guard let index = timers.firstIndex(where: { $0.id == id }) else { return false }
      timers.remove(at: index)
      return true
    }
  }

  /// Suspends the calling task until `deadline`, on this executor's timer.
  func sleep(until deadline: ContinuousClock.Instant) async throws {
    let state = Locked<
      (timer: UInt64?, continuation: CheckedContinuation<Void, any Error>?, cancelled: Bool)
    >(
      (nil, nil, false))
    try await withTaskCancellationHandler {
      try await withCheckedThrowingContinuation {
        (continuation: CheckedContinuation<Void, any Error>) in
        let cancelled = state.withLock { state -> Bool in
          if state.cancelled { return true }
          state.continuation = continuation
          return false
        }
        if cancelled {
          continuation.resume(throwing: CancellationError())
          return
        }
        let id = schedule(at: deadline) {
          let waiting = state.withLock { state -> CheckedContinuation<Void, any Error>? in
            defer { state.continuation = nil }
            return state.continuation
          }
          waiting?.resume()
        }
        state.withLock { $0.timer = id }
      }
    } onCancel: {
      let (timer, waiting) = state.withLock {
        state -> (UInt64?, CheckedContinuation<Void, any Error>?) in
        state.cancelled = true
        defer { state.continuation = nil }
        return (state.timer, state.continuation)
      }
      if let timer { cancelTimer(timer) }
      waiting?.resume(throwing: CancellationError())
    }
  }

  // MARK: - Running a program on it

  /// Runs `body` as a task on the driver thread and blocks the calling thread (a program's
  /// main thread) until it returns. A program whose async code all runs this way never starts
  /// libdispatch's thread pool, and so never wakes while idle.
  public static func runBlocking<Result: Sendable>(
    _ body: @escaping @Sendable () async -> Result
  ) -> Result {
    let outcome = Locked<Result?>(nil)
    // Set `outcome` first, then signal under `finished`: checked under `finished`, the wait
    // cannot miss it.
    let finished = Lock()
    Task(executorPreference: shared) {
      let value = await body()
      outcome.withLock { $0 = value }
      finished.withLock { finished.signal() }
    }
    return finished.withLock {
      while true {
        if let value = outcome.withLock({ $0 }) { return value }
        finished.wait()
      }
    }
  }
}
