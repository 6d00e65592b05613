import Glibc
import POSIX

/// Buffered output to a file descriptor, safe to use from any thread.
///
/// The C `stdout` and `stderr` globals are not concurrency-safe in Swift 6; this writes with
/// `write(2)` instead, buffering standard output so that decoding a long recording does not
/// cost a system call per line.
///
/// The first failed write is reported once to ``onFailure(_:)``'s handler (EPIPE when the
/// reader of a pipe went away and SIGPIPE is ignored); what could not be written is dropped,
/// since there is nothing sensible left to do with it.
///
/// `@unchecked Sendable`: its buffer and failure are behind `lock`, a ``Lock`` the compiler cannot
/// see guards them.
final class Output: @unchecked Sendable {
  static let standard = Output(descriptor: .standardOutput, buffered: true)
  static let error = Output(descriptor: .standardError, buffered: false)

  private let descriptor: FileDescriptor
  private let buffered: Bool
  private let lock = Lock()
  // Guarded by `lock`.
  private var buffer: [UInt8] = []
  private var failure: Errno?
  private var failureHandler: (@Sendable (Errno) -> Void)?

  private init(descriptor: FileDescriptor, buffered: Bool) {
    self.descriptor = descriptor
    self.buffered = buffered
    buffer.reserveCapacity(1 << 16)
  }

  /// Calls `handler` (once, on the writing thread) when a write fails, or now if one has.
  func onFailure(_ handler: @escaping @Sendable (Errno) -> Void) {
    let failed = lock.withLock { () -> Errno? in
      failureHandler = handler
      return failure
    }
    if let failed { handler(failed) }
  }

  /// Writes `text` followed by a newline.
  func line(_ text: String) {
    write(text + "\n")
  }

  func write(_ text: String) {
    write(bytes: text.utf8)
  }

  /// Writes bytes as they are (JSON from `JSONWriter`, for one).
  func write<Bytes: Sequence>(bytes: Bytes) where Bytes.Element == UInt8 {
    let pending = lock.withLock { () -> [UInt8] in
      buffer.append(contentsOf: bytes)
      return !buffered || buffer.count >= 1 << 15 ? takeBuffer() : []
    }
    writeAll(pending)
  }

  /// Writes out whatever is buffered.
  func flush() {
    writeAll(lock.withLock { takeBuffer() })
  }

  private func takeBuffer() -> [UInt8] {
    let pending = buffer
    buffer.removeAll(keepingCapacity: true)
    return pending
  }

  private func writeAll(_ bytes: [UInt8]) {
    guard !bytes.isEmpty else { return }
    do {
      try descriptor.writeAll(bytes)
    } catch {
      let handler = lock.withLock { () -> (@Sendable (Errno) -> Void)? in
        guard failure == nil else { return nil }
        failure = error
        return failureHandler
      }
      handler?(error)
    }
  }
}

/// Flushes standard output and ends the process.
func exitProcess(_ code: Int32) -> Never {
  Output.standard.flush()
  exit(code)
}
