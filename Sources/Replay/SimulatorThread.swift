import Glibc
import Threading

/// A joinable thread of the simulator's own. The Replay module is test and tool support: it
/// may own threads, which keep blocking pty calls off Swift concurrency's cooperative pool.
final class SimulatorThread: @unchecked Sendable {
  private var handle = pthread_t()
  private let started: Bool
  private let joined = Locked(false)

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
