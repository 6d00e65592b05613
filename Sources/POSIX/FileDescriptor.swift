import CPOSIX
import Glibc

// The one place that turns C return conventions into Swift errors, as swift-system does:
// every wrapper returns the value or throws the errno it left, and retries EINTR where
// retrying is correct. `close` is the exception: on Linux the descriptor is gone even when
// close reports EINTR, so retrying could close a descriptor another thread just opened.

/// Runs `body` until it does not fail with EINTR; -1 becomes the errno it left. The package's
/// only EINTR loop: every interruptible call goes through it.
@inlinable
package func retryingOnInterrupt<T: FixedWidthInteger>(_ body: () -> T) throws(Errno) -> T {
  while true {
    let result = body()
    if result != -1 { return result }
    let error = Errno.current
    if error != .interrupted { throw error }
  }
}

/// Runs nothing: -1 becomes the errno it left, anything else is returned.
@inlinable
package func valueOrErrno<T: FixedWidthInteger>(_ result: T) throws(Errno) -> T {
  if result == -1 { throw Errno.current }
  return result
}

/// An open file descriptor. Not a resource owner: whoever opened it decides when to close it.
package struct FileDescriptor: Hashable, Sendable {
  package let rawValue: CInt

  package init(rawValue: CInt) { self.rawValue = rawValue }

  package static let standardInput = FileDescriptor(rawValue: 0)
  package static let standardOutput = FileDescriptor(rawValue: 1)
  package static let standardError = FileDescriptor(rawValue: 2)

  /// `open(2)`; `permissions` matter only with `O_CREAT`. Add `O_CLOEXEC` to `flags` unless
  /// the descriptor is meant for a child process.
  package static func open(
    _ path: String, _ flags: CInt, permissions: mode_t = 0o644
  ) throws(Errno) -> FileDescriptor {
    let fd = try retryingOnInterrupt { Glibc.open(path, flags, permissions) }
    return FileDescriptor(rawValue: fd)
  }

  /// A pipe, both ends close-on-exec.
  package static func pipe() throws(Errno) -> (readEnd: FileDescriptor, writeEnd: FileDescriptor) {
    var ends: (CInt, CInt) = (-1, -1)
    _ = try withUnsafeMutableBytes(of: &ends) { raw throws(Errno) in
      try valueOrErrno(cposix_pipe(raw.baseAddress!.assumingMemoryBound(to: CInt.self)))
    }
    return (FileDescriptor(rawValue: ends.0), FileDescriptor(rawValue: ends.1))
  }

  /// Closes once. EINTR still means closed on Linux; any error is reported, never retried.
  package func close() throws(Errno) {
    _ = try valueOrErrno(Glibc.close(rawValue))
  }

  /// One `read`; EAGAIN is thrown like any other errno for the caller to handle. 0 means end
  /// of file.
  package func read(into buffer: UnsafeMutableRawBufferPointer) throws(Errno) -> Int {
    try retryingOnInterrupt { Glibc.read(rawValue, buffer.baseAddress, buffer.count) }
  }

  /// One `write`; may write fewer bytes than asked.
  package func write(_ buffer: UnsafeRawBufferPointer) throws(Errno) -> Int {
    try retryingOnInterrupt { Glibc.write(rawValue, buffer.baseAddress, buffer.count) }
  }

  /// Writes every byte (blocking descriptors: a file, a pipe, a terminal). On failure nothing
  /// says how much was written; the caller reports the errno.
  package func writeAll(_ bytes: UnsafeRawBufferPointer) throws(Errno) {
    var offset = 0
    while offset < bytes.count {
      offset += try write(UnsafeRawBufferPointer(rebasing: bytes[offset...]))
    }
  }

  /// Writes every byte of `bytes`.
  package func writeAll(_ bytes: some Sequence<UInt8>) throws(Errno) {
    let array = Array(bytes)
    try array.withUnsafeBytes { raw in Result { () throws(Errno) in try writeAll(raw) } }.get()
  }

  /// Reads the 64-bit counter that an eventfd or a timerfd holds, which clears it; true when
  /// it was not zero (signalled, expired). False when there was nothing to read.
  package func consumeCounter() -> Bool {
    var count: UInt64 = 0
    let read = try? withUnsafeMutableBytes(of: &count) { raw throws(Errno) in
      try self.read(into: raw)
    }
    return read == MemoryLayout<UInt64>.size && count > 0
  }

  /// A `pollfd` that is ready once this descriptor has something to read.
  package var pollForInput: pollfd {
    pollfd(fd: rawValue, events: Int16(POLLIN), revents: 0)
  }

  /// Everything left to read, until end of file (a file, a pipe, a /proc file whose size
  /// says 0).
  package func readToEnd() throws(Errno) -> [UInt8] {
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 1 << 16)
    while true {
      let count = try chunk.withUnsafeMutableBytes { raw in
        Result { () throws(Errno) in try read(into: raw) }
      }.get()
      if count == 0 { return bytes }
      bytes += chunk[..<count]
    }
  }

  /// A second descriptor for the same open file (close-on-exec), which its taker closes:
  /// the file stays open until both are closed.
  package func duplicate() throws(Errno) -> FileDescriptor {
    FileDescriptor(rawValue: try retryingOnInterrupt { fcntl(rawValue, F_DUPFD_CLOEXEC, 0) })
  }

  /// `fsync(2)`: what was written is on the disk.
  package func sync() throws(Errno) {
    _ = try retryingOnInterrupt { fsync(rawValue) }
  }

  /// The next connection waiting on a listening socket, non-blocking and close-on-exec
  /// (`accept4`). EAGAIN (none waiting) is thrown like any other errno.
  package func acceptConnection() throws(Errno) -> FileDescriptor {
    FileDescriptor(rawValue: try retryingOnInterrupt { cposix_accept(rawValue) })
  }
}

extension FileDescriptor {
  /// Opens `path`, runs `body` with the descriptor and closes it, whatever `body` does.
  package static func withOpened<Result>(
    _ path: String, _ flags: CInt, _ body: (FileDescriptor) throws(Errno) -> Result
  ) throws(Errno) -> Result {
    let descriptor = try open(path, flags)
    defer { try? descriptor.close() }
    return try body(descriptor)
  }

  /// The whole file at `path` (read-only, close-on-exec).
  package static func contents(of path: String) throws(Errno) -> [UInt8] {
    try withOpened(path, O_RDONLY | O_CLOEXEC) { descriptor throws(Errno) in
      try descriptor.readToEnd()
    }
  }
}

/// `path` with every symbolic link resolved (`/dev/serial/by-id/…` → `/dev/ttyACM0`), or `nil`
/// when it does not exist.
package func resolvedPath(_ path: String) -> String? {
  guard let resolved = realpath(path, nil) else { return nil }
  defer { free(resolved) }
  return String(cString: resolved)
}
