import Glibc

/// A pthread mutex with a condition variable whose timed waits use the monotonic clock.
///
/// Every module of the package that needs a lock uses this one. `Synchronization.Mutex` draws
/// false ThreadSanitizer reports on Linux; a pthread mutex is understood by it. Never hold it
/// while awaiting, resuming a continuation, calling out to user code or making a system call
/// that can block.
///
/// A pthread call that fails here (a mutex unlocked by a thread that does not hold it, a
/// corrupted condition) is a bug in the caller, not a condition to handle: it stops the
/// process with the error rather than going on unsynchronised.
///
/// `@unchecked Sendable`: a pthread mutex and condition, whose own calls are the synchronisation;
/// the compiler cannot see that.
package final class Lock: @unchecked Sendable {
  @usableFromInline let mutex: UnsafeMutablePointer<pthread_mutex_t>
  private let condition: UnsafeMutablePointer<pthread_cond_t>

  package init() {
    mutex = .allocate(capacity: 1)
    mutex.initialize(to: pthread_mutex_t())
    Self.check(pthread_mutex_init(mutex, nil), "pthread_mutex_init")
    condition = .allocate(capacity: 1)
    condition.initialize(to: pthread_cond_t())
    var attributes = pthread_condattr_t()
    Self.check(pthread_condattr_init(&attributes), "pthread_condattr_init")
    // Timed waits measure against CLOCK_MONOTONIC (MonotonicInstant): a wall-clock step must
    // not stretch them.
    Self.check(pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC), "pthread_condattr_setclock")
    Self.check(pthread_cond_init(condition, &attributes), "pthread_cond_init")
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

  /// Runs `body` with the mutex held.
  @inlinable
  package func withLock<Result, Failure: Error>(_ body: () throws(Failure) -> Result)
    throws(Failure) -> Result
  {
    Self.check(pthread_mutex_lock(mutex), "pthread_mutex_lock")
    defer { Self.check(pthread_mutex_unlock(mutex), "pthread_mutex_unlock") }
    return try body()
  }

  /// Waits for ``signal()`` or ``broadcast()``; only inside ``withLock(_:)``. May return early
  /// (spurious wake-ups): callers re-check their condition.
  package func wait() {
    Self.check(pthread_cond_wait(condition, mutex), "pthread_cond_wait")
  }

  /// Waits for ``signal()`` or ``broadcast()`` or until `deadline` (`nil`: no limit); only
  /// inside ``withLock(_:)``. May return early: callers re-check their condition. Returns
  /// false once the deadline has passed, true otherwise. A deadline already past returns at
  /// once.
  @discardableResult
  package func wait(until deadline: MonotonicInstant?) -> Bool {
    guard let deadline else {
      wait()
      return true
    }
    var when = deadline.timespec
    let result = pthread_cond_timedwait(condition, mutex, &when)
    if result == ETIMEDOUT { return false }
    Self.check(result, "pthread_cond_timedwait")
    return true
  }

  /// Waits as ``wait(until:)`` does, for at most `timeout` from now (`nil`: no limit).
  @discardableResult
  package func wait(timeout: Duration?) -> Bool {
    wait(until: timeout.map { MonotonicInstant.now + $0 })
  }

  /// Wakes one waiter; only inside ``withLock(_:)``.
  package func signal() {
    Self.check(pthread_cond_signal(condition), "pthread_cond_signal")
  }

  /// Wakes every waiter; only inside ``withLock(_:)``.
  package func broadcast() {
    Self.check(pthread_cond_broadcast(condition), "pthread_cond_broadcast")
  }

  @inlinable
  static func check(_ result: CInt, _ call: StaticString) {
    if result != 0 { failed(result, call) }
  }

  @usableFromInline
  static func failed(_ result: CInt, _ call: StaticString) -> Never {
    fatalError("\(call) failed: \(Errno(rawValue: result))")
  }
}

/// A value behind a ``Lock``.
///
/// `@unchecked Sendable`: the value is reached only inside `withLock`, under `lock`, which the
/// compiler cannot check.
package final class Locked<Value>: @unchecked Sendable {
  @usableFromInline let lock = Lock()
  @usableFromInline var value: Value

  package init(_ value: Value) { self.value = value }

  /// Runs `body` with the value, the lock held.
  @inlinable
  package func withLock<Result, Failure: Error>(
    _ body: (inout Value) throws(Failure) -> Result
  ) throws(Failure) -> Result {
    try lock.withLock { () throws(Failure) -> Result in try body(&value) }
  }
}
