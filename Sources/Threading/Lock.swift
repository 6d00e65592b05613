import Glibc

/// A pthread mutex with a condition variable whose timed waits use the monotonic clock.
///
/// Every module of the package that needs a lock uses this one. `Synchronization.Mutex` draws
/// false ThreadSanitizer reports on Linux; a pthread mutex is understood by it. Never hold it
/// while awaiting, resuming a continuation, calling out to user code or making a system call
/// that can block.
package final class Lock: @unchecked Sendable {
  @usableFromInline let mutex: UnsafeMutablePointer<pthread_mutex_t>
  private let condition: UnsafeMutablePointer<pthread_cond_t>

  package init() {
    mutex = .allocate(capacity: 1)
    mutex.initialize(to: pthread_mutex_t())
    pthread_mutex_init(mutex, nil)
    condition = .allocate(capacity: 1)
    condition.initialize(to: pthread_cond_t())
    var attributes = pthread_condattr_t()
    pthread_condattr_init(&attributes)
    // Timed waits measure against CLOCK_MONOTONIC: a wall-clock step must not stretch them.
    pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
    pthread_cond_init(condition, &attributes)
    pthread_condattr_destroy(&attributes)
  }

  deinit {
    pthread_cond_destroy(condition)
    pthread_mutex_destroy(mutex)
    condition.deinitialize(count: 1)
    condition.deallocate()
    mutex.deinitialize(count: 1)
    mutex.deallocate()
  }

  @inlinable
  package func withLock<Result, Failure: Error>(_ body: () throws(Failure) -> Result)
    throws(Failure) -> Result
  {
    pthread_mutex_lock(mutex)
    defer { pthread_mutex_unlock(mutex) }
    return try body()
  }

  /// Waits for ``broadcast()``; only inside ``withLock(_:)``. May return early (spurious
  /// wake-ups): callers re-check their condition.
  package func wait() { pthread_cond_wait(condition, mutex) }

  /// Waits for ``broadcast()`` or until `timeout` has passed (`nil`: no limit); only inside
  /// ``withLock(_:)``. May return early: callers re-check their condition.
  package func wait(timeout: Duration?) {
    guard let timeout else { return wait() }
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
  package func broadcast() { pthread_cond_broadcast(condition) }
}

/// A value behind a ``Lock``.
package final class Locked<Value>: @unchecked Sendable {
  @usableFromInline let lock = Lock()
  @usableFromInline var value: Value

  package init(_ value: Value) { self.value = value }

  @inlinable
  package func withLock<Result, Failure: Error>(
    _ body: (inout Value) throws(Failure) -> Result
  ) throws(Failure) -> Result {
    try lock.withLock { () throws(Failure) -> Result in try body(&value) }
  }
}
