import Glibc
import POSIX

/// The thread on which SerialGPS runs its own tasks and timers.
///
/// Swift's default executor on Linux is libdispatch's thread pool, which, once started, wakes
/// the process every second for as long as it lives. A driver for embedded boards should cost
/// nothing while nobody listens, so the receiver's controller, its timers and the tasks behind
/// callback subscriptions run here instead: one thread that sleeps in `poll` on an eventfd
/// (new work) and, only while a timer is armed, a timerfd, and wakes only when there is work.
///
/// Timers run on `CLOCK_BOOTTIME`, the clock of `ContinuousClock` and ``SystemClock``: time
/// spent suspended counts, so a linger or hold whose deadline passed during a suspend ends at
/// the resume, as the clock that stamps fixes says it should (docs/receiver.md, *Time and
/// suspend*).
///
/// Programs that want the same for their own code can run their top level on it with
/// ``runBlocking(_:)``, or start tasks with `Task(executorPreference: DriverExecutor.shared)`.
/// Jobs must not block for long: blocking I/O belongs on threads of its own.
public final class DriverExecutor: TaskExecutor, @unchecked Sendable {
  /// The executor SerialGPS uses.
  public static let shared = DriverExecutor()

  private struct Timer {
    let id: UInt64
    let deadline: ContinuousClock.Instant
    let action: @Sendable () -> Void
  }

  private let lock = Lock()
  // Guarded by `lock`.
  private var jobs: [UnownedJob] = []
  private var jobHead = 0
  private var timers: [Timer] = []
  private var nextTimerID: UInt64 = 0
  private var thread: OwnThread?
  /// The thread is in (or about to enter) `poll` and nobody has woken it yet.
  private var sleeping = false

  /// Ends the thread's `poll` when work arrives or an earlier timer is scheduled.
  private let wake: EventSignal
  /// Expires at the earliest timer's deadline, on `CLOCK_BOOTTIME`.
  private let timer: BootClockTimer

  private init() {
    do {
      wake = try EventSignal.make()
      timer = try BootClockTimer.make()
    } catch {
      fatalError("serialgps: cannot make the driver thread's eventfd or timerfd: \(error)")
    }
    jobs.reserveCapacity(64)
    let thread = OwnThread.start(name: "serialgps-exec") { [self] in run() }
    if let failure = thread.startFailure {
      fatalError("serialgps: cannot start the driver thread: \(failure)")
    }
    lock.withLock { self.thread = thread }
  }

  public func enqueue(_ job: consuming ExecutorJob) {
    let job = UnownedJob(job)
    let wakeUp = lock.withLock {
      jobs.append(job)
      return wakeIfSleeping()
    }
    if wakeUp { wake.signal() }
  }

  /// Whether the caller must signal ``wake`` (once per sleep). Called with `lock` held.
  private func wakeIfSleeping() -> Bool {
    guard sleeping else { return false }
    sleeping = false
    return true
  }

  private func run() {
    let executor = asUnownedTaskExecutor()
    var due: [Timer] = []
    // The deadline `timer` is armed for, owned by this thread.
    var armed: ContinuousClock.Instant?
    var descriptors = [wake.pollDescriptor, timer.pollDescriptor]
    while true {
      let (pending, sleepUntil) = lock.withLock {
        () -> ([UnownedJob], ContinuousClock.Instant??) in
        if !timers.isEmpty {
          let now = ContinuousClock.now
          due = timers.filter { $0.deadline <= now }
          if !due.isEmpty { timers.removeAll { $0.deadline <= now } }
        }
        if jobHead == jobs.count {
          guard due.isEmpty else { return ([], nil) }
          // Nothing to do: sleep until work or the earliest deadline.
          sleeping = true
          return ([], .some(timers.min(by: { $0.deadline < $1.deadline })?.deadline))
        }
        let batch = Array(jobs[jobHead...])
        jobs.removeAll(keepingCapacity: true)
        jobHead = 0
        return (batch, nil)
      }

      // Timer actions resume continuations, which enqueue jobs: run them outside the lock.
      due.sort { $0.deadline < $1.deadline }
      for timer in due { timer.action() }
      due.removeAll(keepingCapacity: true)
      for job in pending { job.runSynchronously(on: executor) }

      guard case .some(let deadline) = sleepUntil else { continue }
      if deadline != armed {
        timer.arm(at: deadline)
        armed = deadline
      }
      descriptors[0].revents = 0
      descriptors[1].revents = 0
      _ = try? poll(&descriptors, until: nil)
      if descriptors[0].revents != 0 { wake.consume() }
      if descriptors[1].revents != 0 {
        timer.consume()
        armed = nil  // expired: a one-shot timer is disarmed now
      }
      lock.withLock { sleeping = false }
    }
  }

  // MARK: - Timers

  /// Calls `action` on the driver thread at `deadline`, on `ContinuousClock` (`CLOCK_BOOTTIME`:
  /// time suspended counts). Returns a token for ``cancelTimer(_:)``.
  func schedule(at deadline: ContinuousClock.Instant, _ action: @escaping @Sendable () -> Void)
    -> UInt64
  {
    let (id, wakeUp) = lock.withLock {
      nextTimerID += 1
      timers.append(Timer(id: nextTimerID, deadline: deadline, action: action))
      // A sleeping thread re-arms its timer for the earliest deadline.
      return (nextTimerID, wakeIfSleeping())
    }
    if wakeUp { wake.signal() }
    return id
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
