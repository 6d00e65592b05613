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
  package func consume() -> Bool { descriptor.consumeCounter() }

  /// A `pollfd` that is ready once the signal is.
  package var pollDescriptor: pollfd { descriptor.pollForInput }

  package func close() { try? descriptor.close() }
}
