import Glibc

/// A pthread mutex with a condition variable. `Synchronization.Mutex` draws false
/// ThreadSanitizer reports on Linux, hence this. Never held across a system call that can
/// block, nor while calling out to user code.
final class Lock: @unchecked Sendable {
  private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
  private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)

  init() {
    pthread_mutex_init(mutex, nil)
    pthread_cond_init(condition, nil)
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

  /// Waits for ``broadcast()``; only inside ``withLock(_:)``.
  func wait() { pthread_cond_wait(condition, mutex) }

  /// Wakes every waiter; only inside ``withLock(_:)``.
  func broadcast() { pthread_cond_broadcast(condition) }
}

/// A value behind a ``Lock``.
final class Locked<Value>: @unchecked Sendable {
  private let lock = Lock()
  private var value: Value

  init(_ value: Value) { self.value = value }

  func withLock<T, E: Error>(_ body: (inout Value) throws(E) -> T) throws(E) -> T {
    try lock.withLock { () throws(E) -> T in try body(&value) }
  }
}
