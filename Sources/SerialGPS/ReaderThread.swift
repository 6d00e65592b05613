import Glibc
import Locking

/// A dedicated thread for blocking reads, so that a receiver never occupies one of the few
/// threads of Swift's cooperative pool while it waits for bytes.
final class ReaderThread: @unchecked Sendable {
  private let body: @Sendable () -> Void
  private let state = Locked<(done: Bool, waiters: [CheckedContinuation<Void, Never>])>(
    (false, []))

  private init(body: @escaping @Sendable () -> Void) {
    self.body = body
  }

  /// Starts `body` on a new thread.
  static func start(_ body: @escaping @Sendable () -> Void) -> ReaderThread {
    let thread = ReaderThread(body: body)
    let unmanaged = Unmanaged.passRetained(thread)
    var handle = pthread_t()
    let result = pthread_create(
      &handle, nil,
      { argument in
        let thread = Unmanaged<ReaderThread>.fromOpaque(argument!).takeRetainedValue()
        thread.run()
        return nil
      }, unmanaged.toOpaque())
    if result != 0 {
      // No thread: run nothing and report completion so nobody waits forever.
      unmanaged.release()
      thread.markDone()
    } else {
      pthread_detach(handle)
    }
    return thread
  }

  private func run() {
    body()
    markDone()
  }

  private func markDone() {
    let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
      state.done = true
      defer { state.waiters.removeAll() }
      return state.waiters
    }
    for waiter in waiters { waiter.resume() }
  }

  /// Waits until the thread's body has returned.
  func join() async {
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
      let finished = state.withLock { state -> Bool in
        if state.done { return true }
        state.waiters.append(continuation)
        return false
      }
      if finished { continuation.resume() }
    }
  }
}
