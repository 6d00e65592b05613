import Glibc

/// A detached thread of its own for blocking work (a receiver's reads, the server's `poll`
/// loop, autobaud listening), so that it never occupies one of the few threads of Swift's
/// cooperative pool while it waits. Its end can be awaited.
package final class OwnThread: @unchecked Sendable {
  private let body: @Sendable () -> Void
  private let state = Locked<(done: Bool, waiters: [CheckedContinuation<Void, Never>])>(
    (false, []))

  private init(body: @escaping @Sendable () -> Void) {
    self.body = body
  }

  /// Starts `body` on a new thread. When no thread can be created, nothing runs and the
  /// thread counts as finished, so that nobody waits for it forever.
  package static func start(_ body: @escaping @Sendable () -> Void) -> OwnThread {
    let thread = OwnThread(body: body)
    let unmanaged = Unmanaged.passRetained(thread)
    var handle = pthread_t()
    let result = pthread_create(
      &handle, nil,
      { argument in
        let thread = Unmanaged<OwnThread>.fromOpaque(argument!).takeRetainedValue()
        thread.body()
        thread.markDone()
        return nil
      }, unmanaged.toOpaque())
    if result != 0 {
      unmanaged.release()
      thread.markDone()
    } else {
      pthread_detach(handle)
    }
    return thread
  }

  private func markDone() {
    let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
      state.done = true
      defer { state.waiters.removeAll() }
      return state.waiters
    }
    for waiter in waiters { waiter.resume() }
  }

  /// Waits until the thread's body has returned (at once if it never started).
  package func join() async {
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

/// Runs a blocking call (autobaud listening, a long drain, a command-line session) on a
/// thread of its own and awaits its result. Should no thread be available, it runs here
/// rather than not at all.
package func onOwnThread<Value: Sendable>(
  _ body: @escaping @Sendable () -> Value
) async -> Value {
  let result = Locked<Value?>(nil)
  let thread = OwnThread.start { result.withLock { $0 = body() } }
  await thread.join()
  if let value = result.withLock({ $0 }) { return value }
  return body()
}
