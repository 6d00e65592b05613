import Glibc

/// Buffered output to a file descriptor, safe to use from any thread.
///
/// The C `stdout` and `stderr` globals are not concurrency-safe in Swift 6; this writes with
/// `write(2)` instead, buffering standard output so that decoding a long recording does not
/// cost a system call per line.
final class Output: @unchecked Sendable {
  static let standard = Output(descriptor: 1, buffered: true)
  static let error = Output(descriptor: 2, buffered: false)

  private let descriptor: Int32
  private let buffered: Bool
  private var buffer: [UInt8] = []
  private var mutex = pthread_mutex_t()

  private init(descriptor: Int32, buffered: Bool) {
    self.descriptor = descriptor
    self.buffered = buffered
    pthread_mutex_init(&mutex, nil)
    buffer.reserveCapacity(1 << 16)
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
    pthread_mutex_lock(&mutex)
    buffer.append(contentsOf: bytes)
    let pending = !buffered || buffer.count >= 1 << 15 ? takeBuffer() : []
    pthread_mutex_unlock(&mutex)
    writeAll(pending)
  }

  /// Writes out whatever is buffered.
  func flush() {
    pthread_mutex_lock(&mutex)
    let pending = takeBuffer()
    pthread_mutex_unlock(&mutex)
    writeAll(pending)
  }

  private func takeBuffer() -> [UInt8] {
    let pending = buffer
    buffer.removeAll(keepingCapacity: true)
    return pending
  }

  private func writeAll(_ bytes: [UInt8]) {
    guard !bytes.isEmpty else { return }
    bytes.withUnsafeBytes { raw in
      var offset = 0
      while offset < raw.count {
        let written = Glibc.write(descriptor, raw.baseAddress! + offset, raw.count - offset)
        if written < 0 {
          if errno == EINTR { continue }
          return  // a closed pipe: nothing sensible left to do with the output
        }
        offset += written
      }
    }
  }
}

/// Flushes standard output and ends the process.
func exitProcess(_ code: Int32) -> Never {
  Output.standard.flush()
  exit(code)
}
