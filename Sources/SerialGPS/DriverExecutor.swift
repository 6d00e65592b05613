import Glibc
import POSIX

/// The thread on which SerialGPS runs its own tasks and timers.
///
/// Swift's default executor on Linux is libdispatch's thread pool, which, once started, wakes
/// the process every second for as long as it lives. A driver for embedded boards should cost
/// nothing while nobody listens, so the receiver's controller, its timers and the tasks behind
/// callback subscriptions run here instead: one thread that sleeps until there is work, in a
/// condition wait while no timer is armed, else in `poll` on an eventfd (new work) and a
/// timerfd (the earliest deadline).
///
/// Timers run on `CLOCK_BOOTTIME`, the clock of `ContinuousClock` and ``SystemClock``: time
/// spent suspended counts, so a linger or hold whose deadline passed during a suspend ends at
/// the resume, as the clock that stamps fixes says it should (docs/receiver.md, *Time and
/// suspend*).
///
/// Programs that want the same for their own code can run their top level on it with
/// ``runBlocking(_:)``, or start tasks on it with ``task(priority:_:)``.
/// Jobs must not block for long: blocking I/O belongs on threads of its own.
///
/// `@unchecked Sendable`: its queue is behind its lock and its thread owns the rest; a
/// `TaskExecutor` class the compiler cannot check.
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
  private var sleep = Sleep.awake

  /// Where the thread sleeps, so that new work knows how to wake it.
  private enum Sleep {
    case awake
    /// No timer armed: in `lock.wait()`, woken by `lock.signal()` (the cheapest wake-up,
    /// and the one on the streaming path, where no timer is armed).
    case onCondition
    /// A timer armed: in `poll` on ``wake`` and ``timer``; woken through ``wake``.
    case inPoll
  }

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

  /// Wakes the thread if it sleeps: signals the condition at once, or returns true when the
  /// caller must signal ``wake`` (once per sleep, after releasing the lock). Called with `lock`
  /// held.
  private func wakeIfSleeping() -> Bool {
    switch sleep {
    case .awake:
      return false
    case .onCondition:
      lock.signal()
      return false
    case .inPoll:
      sleep = .awake
      return true
    }
  }

  private enum Step {
    case run([UnownedJob])
    case poll(until: ContinuousClock.Instant)
  }

  private func run() {
    let executor = asUnownedTaskExecutor()
    var due: [Timer] = []
    // The deadline `timer` was last armed for; owned by this thread.
    var armed: ContinuousClock.Instant?
    var descriptors = [wake.pollDescriptor, timer.pollDescriptor]
    while true {
      let step = lock.withLock { () -> Step in
        while true {
          if !timers.isEmpty {
            let now = ContinuousClock.now
            due = timers.filter { $0.deadline <= now }
            if !due.isEmpty { timers.removeAll { $0.deadline <= now } }
          }
          if jobHead < jobs.count || !due.isEmpty {
            let batch = Array(jobs[jobHead...])
            jobs.removeAll(keepingCapacity: true)
            jobHead = 0
            return .run(batch)
          }
          guard let next = timers.min(by: { $0.deadline < $1.deadline }) else {
            // No timer: a timer left armed for a cancelled one may expire meanwhile; nobody
            // polls it then, and the next arming clears it.
            sleep = .onCondition
            lock.wait()
            sleep = .awake
            continue
          }
          sleep = .inPoll
          return .poll(until: next.deadline)
        }
      }

      switch step {
      case .run(let pending):
        // Timer actions resume continuations, which enqueue jobs: run them outside the lock.
        due.sort { $0.deadline < $1.deadline }
        for timer in due { timer.action() }
        due.removeAll(keepingCapacity: true)
        for job in pending { job.runSynchronously(on: executor) }
      case .poll(let deadline):
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
          armed = nil  // expired: a one-shot timer must be armed again, even for the same time
        }
        lock.withLock { sleep = .awake }
      }
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

  // MARK: - Starting tasks on it

  /// Starts `operation` as a new top-level task on the driver thread: the one way the package
  /// starts a task. A plain `Task {}` (or `Task.detached`) runs on libdispatch's pool, which
  /// once started wakes the process every second; a task started here, and the child tasks it
  /// makes (task groups, `async let`), prefer the driver thread. Code isolated to an actor
  /// still runs on that actor's executor.
  @discardableResult
  public static func task<Success: Sendable>(
    priority: TaskPriority? = nil, _ operation: sending @escaping () async -> Success
  ) -> Task<Success, Never> {
    Task(executorPreference: shared, priority: priority, operation: operation)
  }

  /// Starts a throwing `operation` as a new top-level task on the driver thread, as the
  /// non-throwing `task(priority:_:)` does.
  @discardableResult
  public static func task<Success: Sendable>(
    priority: TaskPriority? = nil, _ operation: sending @escaping () async throws -> Success
  ) -> Task<Success, any Error> {
    Task(executorPreference: shared, priority: priority, operation: operation)
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
    task {
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
