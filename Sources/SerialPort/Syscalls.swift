import CSerialShims
import Glibc

// The one place that turns C return conventions into Swift errors, as swift-system does:
// every wrapper returns the value or throws the errno it left, and retries EINTR where
// retrying is correct. `close` is the exception: on Linux the descriptor is gone even when
// close reports EINTR, so retrying could close a descriptor another thread just opened.

/// Runs `body` until it does not fail with EINTR.
@inline(__always)
func retryingOnInterrupt<T: FixedWidthInteger>(_ body: () -> T) throws(Errno) -> T {
  while true {
    let result = body()
    if result != -1 { return result }
    let error = Errno.current
    if error != .interrupted { throw error }
  }
}

/// Runs `body` once; -1 becomes the errno it left.
@inline(__always)
func valueOrErrno<T: FixedWidthInteger>(_ result: T) throws(Errno) -> T {
  if result == -1 { throw Errno.current }
  return result
}

/// An open file descriptor. Not a resource owner: whoever opened it decides when to close it.
struct FileDescriptor: Hashable, Sendable {
  let rawValue: CInt

  static func open(_ path: String, _ flags: CInt) throws(Errno) -> FileDescriptor {
    let fd = try retryingOnInterrupt { Glibc.open(path, flags) }
    return FileDescriptor(rawValue: fd)
  }

  /// Closes once. EINTR still means closed on Linux; any error is reported, never retried.
  func close() throws(Errno) {
    _ = try valueOrErrno(Glibc.close(rawValue))
  }

  /// One `read`; EAGAIN is thrown like any other errno for the caller to handle.
  func read(into buffer: UnsafeMutableRawBufferPointer) throws(Errno) -> Int {
    try retryingOnInterrupt { Glibc.read(rawValue, buffer.baseAddress, buffer.count) }
  }

  /// One `write`; may write fewer bytes than asked.
  func write(_ buffer: UnsafeRawBufferPointer) throws(Errno) -> Int {
    try retryingOnInterrupt { Glibc.write(rawValue, buffer.baseAddress, buffer.count) }
  }

  func attributes() throws(Errno) -> termios {
    var attributes = termios()
    _ = try retryingOnInterrupt { tcgetattr(rawValue, &attributes) }
    return attributes
  }

  func setAttributes(_ attributes: termios) throws(Errno) {
    var attributes = attributes
    _ = try retryingOnInterrupt { tcsetattr(rawValue, TCSANOW, &attributes) }
  }

  func drain() throws(Errno) {
    _ = try retryingOnInterrupt { tcdrain(rawValue) }
  }

  func flush(_ queue: CInt) throws(Errno) {
    _ = try retryingOnInterrupt { tcflush(rawValue, queue) }
  }
}

/// `poll` over a few descriptors, retrying EINTR with the time left until `deadline`.
/// Returns false when the deadline passed with nothing ready. A nil deadline waits forever:
/// the thread sleeps in the kernel with no timer armed.
func poll(
  _ fds: UnsafeMutableBufferPointer<pollfd>, until deadline: ContinuousClock.Instant?
) throws(Errno) -> Bool {
  while true {
    let timeout = pollTimeout(until: deadline)
    let ready = Glibc.poll(fds.baseAddress, nfds_t(fds.count), timeout)
    if ready > 0 { return true }
    if ready == 0 {
      // poll may return a hair early by its own clock; only give up once ours agrees.
      if let deadline, ContinuousClock.now >= deadline { return false }
      continue
    }
    let error = Errno.current
    if error != .interrupted { throw error }
  }
}

/// Milliseconds for poll: -1 for no deadline, rounded up so that poll never returns just
/// before the deadline and makes the caller spin.
func pollTimeout(until deadline: ContinuousClock.Instant?) -> CInt {
  guard let deadline else { return -1 }
  let left = ContinuousClock.now.duration(to: deadline)
  if left <= .zero { return 0 }
  let (seconds, attoseconds) = left.components
  let milliseconds = seconds * 1000 + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000
  return CInt(clamping: milliseconds)
}
