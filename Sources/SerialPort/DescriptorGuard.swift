import POSIX

/// Keeps descriptors open while operations on other threads use them, and lets any thread
/// close them.
///
/// Closing a descriptor that another thread is polling or reading is a classic bug: the number
/// can be reused by an unrelated `open` before the other thread's call runs, which then reads
/// someone else's file. So every operation enters the guard, closing first stops new
/// operations, wakes the ones in flight through ``closeSignal`` (polled by every blocking
/// wait, never consumed), waits for them to leave, and only then releases the descriptors.
///
/// `@unchecked Sendable`: its phase and count are behind `lock`, a ``Lock`` the compiler cannot see
/// guards them.
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

/// A polled tty end behind a ``DescriptorGuard``: what ``SerialPort`` and ``PseudoTerminal``
/// share, so that their reads, writes and interrupts are one piece of code.
protocol GuardedTerminal: Sendable {
  var io: PolledIO { get }
  var lifetime: DescriptorGuard { get }
  /// The path its errors name.
  var errorPath: String { get }
}

extension GuardedTerminal {
  /// Runs `body` while the descriptors are guaranteed open; throws
  /// ``SerialPortError/Reason/closed`` once closing has begun.
  func withOpenDescriptors<T>(
    _ operation: SerialPortError.Operation, _ body: () throws(SerialPortError) -> T
  ) throws(SerialPortError) -> T {
    guard lifetime.enter() else {
      throw SerialPortError(device: errorPath, operation: operation, reason: .closed)
    }
    defer { lifetime.leave() }
    return try body()
  }

  func guardedRead(
    into buffer: UnsafeMutableRawBufferPointer, deadline: ContinuousClock.Instant?
  ) throws(SerialPortError) -> ReadResult {
    try withOpenDescriptors(.read) { () throws(SerialPortError) in
      do throws(IOFailure) {
        return try io.read(into: buffer, deadline: deadline)
      } catch {
        throw error.serialPortError(device: errorPath, operation: .read, timeout: nil)
      }
    }
  }

  /// Writes every byte, waiting in `poll` for room until `timeout`; then runs `then` (a drain),
  /// still inside the guard.
  func guardedWrite(
    _ bytes: UnsafeRawBufferPointer, timeout: Duration?,
    then: () throws(SerialPortError) -> Void = {}
  ) throws(SerialPortError) {
    guard !bytes.isEmpty else { return }
    let deadline = timeout.map { ContinuousClock.now.advanced(by: $0) }
    try withOpenDescriptors(.write) { () throws(SerialPortError) in
      do throws(IOFailure) {
        try io.writeAll(bytes, deadline: deadline)
      } catch {
        throw error.serialPortError(
          device: errorPath, operation: .write, timeout: timeout, total: bytes.count)
      }
      try then()
    }
  }

  func guardedInterrupt() {
    guard lifetime.enter() else { return }
    defer { lifetime.leave() }
    io.interruptSignal.signal()
  }
}
