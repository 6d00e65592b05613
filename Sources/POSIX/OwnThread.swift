import CPOSIX
import Glibc

/// A named thread of its own for blocking work (a receiver's reads, the server's `poll` loop,
/// udev, autobaud listening, the signal pipe, the driver's executor), so that it never occupies
/// one of the few threads of Swift's cooperative pool while it waits. The package's only
/// `pthread_create`.
///
/// Its end can be awaited (``join()``) or waited for (``joinBlocking()``, after which the
/// thread is gone from `/proc/self/task`). A thread nobody joins is detached when its
/// `OwnThread` goes away, so it never lingers as a zombie.
///
/// `@unchecked Sendable`: its state is behind `lock`, a pthread mutex the compiler cannot see
/// guards it.
package final class OwnThread: @unchecked Sendable {
  private enum Reaping { case notYet, inProgress, done }

  /// The name given to ``start(name:_:)``, as `ps -L` shows it (at most 15 bytes).
  package let name: String
  /// Why the thread could not be created (`nil` once it runs): then nothing runs and the
  /// thread counts as finished, so that nobody waits for it forever.
  package private(set) var startFailure: Errno?

  private let lock = Lock()
  // Guarded by `lock`.
  /// Dropped once it has run, so that what it captured (often the owner of this thread) is
  /// not kept alive by it. Not `@Sendable`: it was `sending`, handed over whole, and only the
  /// new thread calls it.
  private var body: (() -> Void)?
  private var handle: pthread_t?
  private var bodyReturned = false
  private var reaping = Reaping.notYet
  private var waiters: [CheckedContinuation<Void, Never>] = []

  private init(name: String, body: sending @escaping () -> Void) {
    // pthread_setname_np refuses longer names; the kernel keeps 15 bytes and a NUL.
    self.name = String(decoding: name.utf8.prefix(15), as: UTF8.self)
    self.body = body
  }

  /// Starts `body` on a new thread called `name`. `body` may capture what is not `Sendable`
  /// as long as nothing else keeps it (`sending`): a state the new thread alone owns from then
  /// on, such as the server's event loop.
  package static func start(name: String, _ body: sending @escaping () -> Void) -> OwnThread {
    let thread = OwnThread(name: name, body: body)
    let unmanaged = Unmanaged.passRetained(thread)
    // Held while creating, so that the new thread (which takes the lock when it ends) cannot
    // look at `handle` before it is stored.
    thread.lock.withLock {
      var handle = pthread_t()
      let result = pthread_create(
        &handle, nil,
        { argument in
          let thread = Unmanaged<OwnThread>.fromOpaque(argument!).takeRetainedValue()
          thread.run()
          return nil
        }, unmanaged.toOpaque())
      if result == 0 {
        thread.handle = handle
        // Named from here, so that the name shows as soon as `start` returns.
        _ = thread.name.withCString { cposix_name_thread(handle, $0) }
      } else {
        unmanaged.release()
        thread.startFailure = Errno(rawValue: result)
        thread.body = nil
        thread.bodyReturned = true
        thread.reaping = .done
      }
    }
    return thread
  }

  private func run() {
    let body = lock.withLock { () -> (() -> Void)? in
      defer { self.body = nil }
      return self.body
    }
    body?()
    let waiting = lock.withLock { () -> [CheckedContinuation<Void, Never>] in
      bodyReturned = true
      lock.broadcast()
      defer { waiters.removeAll() }
      return waiters
    }
    for waiter in waiting { waiter.resume() }
  }

  deinit {
    // Nobody joined it: let the system reclaim it when it ends (or now, if it has).
    if reaping == .notYet, let handle { pthread_detach(handle) }
  }

  /// Whether the calling thread is this one.
  package var isCurrent: Bool {
    lock.withLock { handle.map { pthread_equal($0, pthread_self()) != 0 } ?? false }
  }

  /// Waits until the thread's body has returned (at once if it never started). The thread
  /// itself may still be finishing its exit.
  package func join() async {
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
      let finished = lock.withLock { () -> Bool in
        if bodyReturned { return true }
        waiters.append(continuation)
        return false
      }
      if finished { continuation.resume() }
    }
  }

  /// Blocks the calling thread until this thread has exited (`pthread_join`). Idempotent and
  /// safe from several threads; called on the thread itself it returns at once (a thread
  /// cannot wait for its own end). Not for the cooperative pool or the driver's executor.
  package func joinBlocking() {
    let toJoin = lock.withLock { () -> pthread_t? in
      guard let handle, pthread_equal(handle, pthread_self()) == 0 else { return nil }
      while reaping == .inProgress { lock.wait() }
      guard reaping == .notYet else { return nil }
      reaping = .inProgress
      return handle
    }
    guard let toJoin else { return }
    let result = pthread_join(toJoin, nil)
    precondition(result == 0, "pthread_join failed: \(Errno(rawValue: result))")
    lock.withLock {
      reaping = .done
      lock.broadcast()
    }
  }

  /// Makes the calling thread wakeable by ``wakeUntilReturned(every:)``: installs the wake
  /// signal's handler (once per process; a handler that does nothing, without `SA_RESTART`)
  /// and unblocks the signal for this thread. Call it at the start of a thread that will
  /// block in a call with neither a timeout nor a descriptor to poll (`TIOCMIWAIT`); such a
  /// call then returns EINTR when woken, which the thread's code must treat as "look at your
  /// stop flag", not retry blindly.
  package static func acceptWakes() {
    _ = wakeHandlerInstalled
    _ = cposix_unblock_signal_in_thread(cposix_wake_signal())
  }

  private static let wakeHandlerInstalled: Bool = {
    cposix_install_wake_handler(cposix_wake_signal()) == 0
  }()

  /// Wakes this thread out of its blocking call with the wake signal (see ``acceptWakes()``),
  /// again every `interval` until its body has returned, and returns then. Repeating closes
  /// the race of a signal that lands just before the thread enters its call. The caller must
  /// have told the thread to stop first. Called on the thread itself it returns at once.
  package func wakeUntilReturned(every interval: Duration = .milliseconds(5)) {
    guard !isCurrent else { return }
    while true {
      let target = lock.withLock { bodyReturned ? nil : handle }
      guard let target else { return }
      _ = cposix_signal_thread(target, cposix_wake_signal())
      let returned = lock.withLock { () -> Bool in
        if !bodyReturned { lock.wait(timeout: interval) }
        return bodyReturned
      }
      if returned { return }
    }
  }

  /// The kernel's id of the calling thread (as `/proc/self/task/ID` names it).
  package static var currentKernelID: CInt { cposix_current_thread_id() }
}

/// Runs a blocking call (autobaud listening, a long drain, a command-line session) on a
/// thread of its own and awaits its result. Should no thread be available, it runs here
/// rather than not at all.
package func onOwnThread<Value: Sendable>(
  name: String = "serialgps-work", _ body: @escaping @Sendable () -> Value
) async -> Value {
  let result = Locked<Value?>(nil)
  let thread = OwnThread.start(name: name) { result.withLock { $0 = body() } }
  await thread.join()
  if let value = result.withLock({ $0 }) { return value }
  return body()
}
