import POSIX

/// Keeps descriptors open while operations on other threads use them, and lets any thread
/// close them.
///
/// Closing a descriptor that another thread is polling or reading is a classic bug: the number
/// can be reused by an unrelated `open` before the other thread's call runs, which then reads
/// someone else's file. So every operation enters the guard, closing first stops new
/// operations, wakes the ones in flight through ``closeSignal`` (polled by every blocking
/// wait, never consumed), waits for them to leave, and only then releases the descriptors.
final class DescriptorGuard: @unchecked Sendable {
  private enum Phase { case open, closing, closed }

  private let lock = Lock()
  private var phase = Phase.open
  private var operationsInFlight = 0
  /// Readable once closing has begun; every blocking poll includes it.
  let closeSignal: EventSignal

  init(closeSignal: EventSignal) { self.closeSignal = closeSignal }

  /// Registers an operation; false when closing has begun (the descriptors may be gone).
  func enter() -> Bool {
    lock.withLock {
      guard phase == .open else { return false }
      operationsInFlight += 1
      return true
    }
  }

  func leave() {
    lock.withLock {
      operationsInFlight -= 1
      if operationsInFlight == 0 && phase == .closing { lock.broadcast() }
    }
  }

  var isOpen: Bool { lock.withLock { phase == .open } }

  /// Closes exactly once, whichever threads call it and however often. The first caller wakes
  /// the operations in flight, waits until they have left and runs `release`; later callers
  /// return once that is done. Must not be called from inside an operation.
  func close(release: () -> Void) {
    let isFirst = lock.withLock {
      guard phase == .open else { return false }
      phase = .closing
      return true
    }
    guard isFirst else {
      lock.withLock {
        while phase != .closed { lock.wait() }
      }
      return
    }
    closeSignal.signal()
    lock.withLock {
      while operationsInFlight > 0 { lock.wait() }
    }
    // No operation runs and none can start: the descriptors are ours alone.
    release()
    closeSignal.close()
    lock.withLock {
      phase = .closed
      lock.broadcast()
    }
  }
}
