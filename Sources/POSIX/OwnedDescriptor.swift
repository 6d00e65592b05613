import Glibc

/// An open file descriptor with exactly one owner, which closes it exactly once: by
/// ``close()``, which consumes the owner, or else when the owner goes away (its scope ends, or
/// the object holding it is deinitialised, including an object whose initialiser threw after
/// storing it).
///
/// A descriptor number is reused by the next `open`, `socket` or `pipe` on any thread, so a
/// second close of the same number closes someone else's file: a tty, a socket, libudev's
/// monitor (whose own close then fails with EBADF and aborts the process). Being
/// noncopyable, an owner cannot be closed twice, nor kept by two holders that each close it:
/// the compiler refuses both. Where ``FileDescriptor`` is a number to use, this is the one to
/// close.
package struct OwnedDescriptor: ~Copyable {
  /// The descriptor, for calls that use it; never close it through this.
  package let descriptor: FileDescriptor

  /// Takes ownership of `descriptor`, an open descriptor nobody else closes.
  package init(_ descriptor: FileDescriptor) {
    precondition(descriptor.rawValue >= 0, "not a descriptor: \(descriptor.rawValue)")
    self.descriptor = descriptor
  }

  /// The descriptor's number, for C calls.
  package var rawValue: CInt { descriptor.rawValue }

  /// Closes it now, once; errors other than EBADF are reported (EINTR still means closed on
  /// Linux) and never retried.
  package consuming func close() throws(Errno) {
    let descriptor = descriptor
    discard self
    try Self.close(descriptor)
  }

  deinit {
    try? Self.close(descriptor)
  }

  /// EBADF from closing a descriptor this owner held open means someone else closed the
  /// number: a double close elsewhere, which may already have closed another thread's file.
  /// Debug builds stop there, at the victim, with the number.
  private static func close(_ descriptor: FileDescriptor) throws(Errno) {
    do {
      try descriptor.close()
    } catch {
      assert(
        error != .badFileDescriptor,
        "descriptor \(descriptor.rawValue) was closed by someone other than its owner")
      throw error
    }
  }
}
