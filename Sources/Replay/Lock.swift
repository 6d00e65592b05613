import Glibc

/// A pthread mutex with a condition variable whose timed waits use the monotonic clock.
///
/// `Synchronization.Mutex` draws false ThreadSanitizer reports on Linux, hence this. Never
/// held across a blocking system call, while resuming a continuation or while calling out.
final class ConditionLock: @unchecked Sendable {
  private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
  private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)

  init() {
    pthread_mutex_init(mutex, nil)
    var attributes = pthread_condattr_t()
    pthread_condattr_init(&attributes)
    // Timed waits measure against CLOCK_MONOTONIC: a wall-clock step must not stretch a
    // receiver's epoch.
    pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
    pthread_cond_init(condition, &attributes)
    pthread_condattr_destroy(&attributes)
  }

  deinit {
    pthread_cond_destroy(condition)
    pthread_mutex_destroy(mutex)
    condition.deallocate()
    mutex.deallocate()
  }

  func withLock<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T {
    pthread_mutex_lock(mutex)
    defer { pthread_mutex_unlock(mutex) }
    return try body()
  }

  /// Waits for ``broadcast()`` or until `timeout` has passed (nil: no limit); only inside
  /// ``withLock(_:)``. May return early (spurious wake-ups): callers re-check their condition.
  func wait(timeout: Duration?) {
    guard let timeout else {
      pthread_cond_wait(condition, mutex)
      return
    }
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    let (seconds, attoseconds) = max(timeout, .zero).components
    var deadline = timespec(
      tv_sec: now.tv_sec + Int(seconds),
      tv_nsec: now.tv_nsec + Int(attoseconds / 1_000_000_000))
    if deadline.tv_nsec >= 1_000_000_000 {
      deadline.tv_sec += 1
      deadline.tv_nsec -= 1_000_000_000
    }
    pthread_cond_timedwait(condition, mutex, &deadline)
  }

  /// Wakes every waiter; only inside ``withLock(_:)``.
  func broadcast() { pthread_cond_broadcast(condition) }
}

/// A value behind a lock.
final class Protected<Value>: @unchecked Sendable {
  private let lock = ConditionLock()
  private var value: Value

  init(_ value: Value) { self.value = value }

  func withLock<T>(_ body: (inout Value) -> T) -> T {
    lock.withLock { body(&value) }
  }
}

/// A joinable thread of the simulator's own. The Replay module is test and tool support: it
/// may own threads, which keep blocking pty calls off Swift concurrency's cooperative pool.
final class SimulatorThread: @unchecked Sendable {
  private var handle = pthread_t()
  private let started: Bool
  private let joined = Protected(false)

  private final class Box {
    let body: () -> Void
    init(_ body: @escaping () -> Void) { self.body = body }
  }

  /// Starts `body` on a new thread; runs it on no thread at all if one cannot be created
  /// (the simulator then simply does not stream or answer, which tests report).
  init(_ body: @escaping @Sendable () -> Void) {
    let box = Unmanaged.passRetained(Box(body))
    var handle = pthread_t()
    let result = pthread_create(
      &handle, nil,
      { argument in
        let box = Unmanaged<Box>.fromOpaque(argument!).takeRetainedValue()
        box.body()
        return nil
      }, box.toOpaque())
    if result != 0 { box.release() }
    self.handle = handle
    started = result == 0
  }

  /// Waits for the thread to end. Idempotent; never call it from the thread itself.
  func join() {
    let first = joined.withLock { done -> Bool in
      defer { done = true }
      return !done
    }
    guard first, started else { return }
    pthread_join(handle, nil)
  }
}
