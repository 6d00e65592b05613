import CSerialShims
import Glibc

/// An eventfd used as a wake-up: polled next to a tty, it lets another thread end a `poll`
/// that has no timeout, so a blocked reader costs no periodic wake-ups yet can still be stopped.
struct EventSignal: Sendable {
  let descriptor: FileDescriptor

  static func make() throws(Errno) -> EventSignal {
    let fd = cserial_eventfd()
    if fd < 0 { throw Errno.current }
    return EventSignal(descriptor: FileDescriptor(rawValue: fd))
  }

  /// Makes the eventfd readable until it is consumed. Cannot fail short of a closed descriptor
  /// (the counter would need 2^64 - 1 signals to overflow).
  func signal() { _ = cserial_eventfd_signal(descriptor.rawValue) }

  /// Clears it; true when it had been signalled.
  func consume() -> Bool { cserial_eventfd_consume(descriptor.rawValue) == 1 }

  func close() { try? descriptor.close() }
}
