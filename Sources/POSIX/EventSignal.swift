import CPOSIX
import Glibc

/// An eventfd used as a wake-up: polled next to a tty, a socket or a monitor, it lets another
/// thread end a `poll` that has no timeout, so a blocked thread costs no periodic wake-ups yet
/// can still be stopped or handed work.
package struct EventSignal: Sendable {
  package let descriptor: FileDescriptor

  /// A new eventfd, non-blocking and close-on-exec.
  package static func make() throws(Errno) -> EventSignal {
    EventSignal(descriptor: FileDescriptor(rawValue: try valueOrErrno(cposix_eventfd())))
  }

  /// Makes the eventfd readable until it is consumed. Cannot fail short of a closed descriptor
  /// (the counter would need 2^64 - 1 signals to overflow).
  package func signal() {
    var one: UInt64 = 1
    _ = try? withUnsafeBytes(of: &one) { raw throws(Errno) in try descriptor.write(raw) }
  }

  /// Clears it; true when it had been signalled.
  @discardableResult
  package func consume() -> Bool {
    var count: UInt64 = 0
    let read = try? withUnsafeMutableBytes(of: &count) { raw throws(Errno) in
      try descriptor.read(into: raw)
    }
    return read == MemoryLayout<UInt64>.size && count > 0
  }

  /// A `pollfd` that is ready once the signal is.
  package var pollDescriptor: pollfd {
    pollfd(fd: descriptor.rawValue, events: Int16(POLLIN), revents: 0)
  }

  package func close() { try? descriptor.close() }
}
