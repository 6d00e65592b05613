import Glibc
import Threading

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
    let deadline: timespec
    let action: @Sendable () -> Void
  }

  private let mutex: UnsafeMutablePointer<pthread_mutex_t>
  private let condition: UnsafeMutablePointer<pthread_cond_t>
  private var jobs: [UnownedJob] = []
  private var jobHead = 0
  private var timers: [Timer] = []
  private var nextTimerID: UInt64 = 0

  private init() {
    mutex = .allocate(capacity: 1)
    mutex.initialize(to: pthread_mutex_t())
    pthread_mutex_init(mutex, nil)
    condition = .allocate(capacity: 1)
    condition.initialize(to: pthread_cond_t())
    var attributes = pthread_condattr_t()
    pthread_condattr_init(&attributes)
    // Deadlines are on the monotonic clock, like ContinuousClock, not the wall clock.
    pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
    pthread_cond_init(condition, &attributes)
    pthread_condattr_destroy(&attributes)
    jobs.reserveCapacity(64)
    var thread = pthread_t()
    let created = pthread_create(
      &thread, nil,
      { argument in
        Unmanaged<DriverExecutor>.fromOpaque(argument!).takeUnretainedValue().run()
        return nil
      }, Unmanaged.passRetained(self).toOpaque())
    precondition(created == 0, "serialgps: cannot start the driver thread (error \(created))")
    pthread_detach(thread)
  }

  public func enqueue(_ job: consuming ExecutorJob) {
    let job = UnownedJob(job)
    pthread_mutex_lock(mutex)
    jobs.append(job)
    pthread_cond_signal(condition)
    pthread_mutex_unlock(mutex)
  }

  private func run() {
    let executor = asUnownedTaskExecutor()
    var due: [Timer] = []
    while true {
      pthread_mutex_lock(mutex)
      while jobHead == jobs.count {
        if let next = timers.min(by: { Self.earlier($0.deadline, $1.deadline) }) {
          if Self.earlier(Self.monotonicNow(), next.deadline) {
            var deadline = next.deadline
            pthread_cond_timedwait(condition, mutex, &deadline)
          }
          let now = Self.monotonicNow()
          due = timers.filter { !Self.earlier(now, $0.deadline) }
          if !due.isEmpty {
            timers.removeAll { !Self.earlier(now, $0.deadline) }
            break
          }
        } else {
          pthread_cond_wait(condition, mutex)
        }
      }
      let batch: ArraySlice<UnownedJob> = jobs[jobHead...]
      let pending = Array(batch)
      jobs.removeAll(keepingCapacity: true)
      jobHead = 0
      pthread_mutex_unlock(mutex)

      // Timer actions resume continuations, which enqueue jobs: run them outside the lock.
      due.sort { Self.earlier($0.deadline, $1.deadline) }
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
    let offset = deadline - ContinuousClock.now
    var when = Self.monotonicNow()
    let (seconds, attoseconds) = offset.components
    let nanoseconds = Int(attoseconds / 1_000_000_000)
    when.tv_sec += Int(seconds)
    when.tv_nsec += nanoseconds
    while when.tv_nsec >= 1_000_000_000 {
      when.tv_nsec -= 1_000_000_000
      when.tv_sec += 1
    }
    while when.tv_nsec < 0 {
      when.tv_nsec += 1_000_000_000
      when.tv_sec -= 1
    }
    pthread_mutex_lock(mutex)
    nextTimerID += 1
    let id = nextTimerID
    timers.append(Timer(id: id, deadline: when, action: action))
    pthread_cond_signal(condition)
    pthread_mutex_unlock(mutex)
    return id
  }

  /// Cancels a timer; returns false when it already fired (or never existed).
  @discardableResult
  func cancelTimer(_ id: UInt64) -> Bool {
    pthread_mutex_lock(mutex)
    defer { pthread_mutex_unlock(mutex) }
    guard let index = timers.firstIndex(where: { $0.id == id }) else { return false }
    timers.remove(at: index)
    return true
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
    var semaphore = sem_t()
    sem_init(&semaphore, 0, 0)
    defer { sem_destroy(&semaphore) }
    withUnsafeMutablePointer(to: &semaphore) { pointer in
      nonisolated(unsafe) let signal = pointer
      Task(executorPreference: shared) {
        let value = await body()
        outcome.withLock { $0 = value }
        sem_post(signal)
      }
      while sem_wait(pointer) != 0 && errno == EINTR {}
    }
    return outcome.withLock { $0! }
  }

  // MARK: - Monotonic time

  static func monotonicNow() -> timespec {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return now
  }

  static func earlier(_ a: timespec, _ b: timespec) -> Bool {
    a.tv_sec < b.tv_sec || (a.tv_sec == b.tv_sec && a.tv_nsec < b.tv_nsec)
  }
}
