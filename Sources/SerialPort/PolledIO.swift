import Glibc
import POSIX

/// What a read that did not fail came back with.
public enum ReadResult: Hashable, Sendable {
  /// This many bytes (at least one) were stored at the start of the buffer.
  case received(Int)
  /// The timeout or deadline passed with nothing to read.
  case timedOut
  /// ``SerialPort/interrupt()`` (or ``PseudoTerminal/interrupt()``) was called, while this
  /// read waited or before it started.
  case interrupted
}

/// A failure of ``PolledIO``, turned into a ``SerialPortError`` by its owner, which knows the
/// device name and the operation.
enum IOFailure: Error {
  case closed
  case disconnected(SerialPortError.DisconnectCause)
  case errno(Errno)
  case writeTimedOut(written: Int)
}

/// Reads and writes a non-blocking descriptor through `poll`, with the wake-up signals polled
/// alongside it: the interrupt (consumed by reads) and the close signal (never consumed).
struct PolledIO: Sendable {
  let descriptor: FileDescriptor
  let interruptSignal: EventSignal
  let closeSignal: EventSignal

  /// Waits until data, a hang-up, an interrupt, close or the deadline, then reads once.
  /// A nil deadline waits forever with no timer armed.
  func read(
    into buffer: UnsafeMutableRawBufferPointer, deadline: ContinuousClock.Instant?
  ) throws(IOFailure) -> ReadResult {
    precondition(buffer.count > 0, "read needs room for at least one byte")
    let deadline = deadline.map(MonotonicInstant.init)
    var fds = (
      pollfd(fd: descriptor.rawValue, events: Int16(POLLIN), revents: 0),
      pollfd(fd: interruptSignal.descriptor.rawValue, events: Int16(POLLIN), revents: 0),
      pollfd(fd: closeSignal.descriptor.rawValue, events: Int16(POLLIN), revents: 0)
    )
    while true {
      if try !Self.poll(&fds, until: deadline) { return .timedOut }
      if fds.2.revents != 0 { throw .closed }
      // An interrupt wins over pending data, which stays queued for the next read. Another
      // reader may have consumed it first (against the contract, but harmless): look again.
      if fds.1.revents != 0, interruptSignal.consume() { return .interrupted }
      let events = Int32(fds.0.revents)
      if events & Int32(POLLNVAL) != 0 { throw .closed }
      guard events & Int32(POLLIN | POLLHUP | POLLERR) != 0 else { continue }
      // Read even on POLLHUP or POLLERR: bytes that arrived before the hang-up are delivered
      // first. The tty is in VMIN 1 mode, so 0 from read means end of file, never "no data".
      let count: Int
      do {
        count = try descriptor.read(into: buffer)
      } catch .wouldBlock {
        if events & Int32(POLLHUP) != 0 { throw .disconnected(.hangUp) }
        if events & Int32(POLLERR) != 0 { throw .disconnected(.pollError) }
        continue  // woken for nothing: someone else took the bytes, or a spurious wake-up
      } catch {
        if error.meansDeviceGone { throw .disconnected(.errno(error)) }
        throw .errno(error)
      }
      if count == 0 { throw .disconnected(.hangUp) }
      return .received(count)
    }
  }

  /// Writes every byte, waiting in `poll` for POLLOUT whenever the driver's buffer is full.
  func writeAll(
    _ bytes: UnsafeRawBufferPointer, deadline: ContinuousClock.Instant?
  ) throws(IOFailure) {
    let deadline = deadline.map(MonotonicInstant.init)
    var written = 0
    while written < bytes.count {
      do {
        written += try descriptor.write(UnsafeRawBufferPointer(rebasing: bytes[written...]))
        continue
      } catch .wouldBlock {
        // Fall through to wait for room.
      } catch {
        if error.meansDeviceGone { throw .disconnected(.errno(error)) }
        throw .errno(error)
      }
      var fds = (
        pollfd(fd: descriptor.rawValue, events: Int16(POLLOUT), revents: 0),
        pollfd(fd: closeSignal.descriptor.rawValue, events: Int16(POLLIN), revents: 0)
      )
      if try !Self.poll(&fds, until: deadline) { throw .writeTimedOut(written: written) }
      if fds.1.revents != 0 { throw .closed }
      let events = Int32(fds.0.revents)
      if events & Int32(POLLNVAL) != 0 { throw .closed }
      if events & Int32(POLLOUT) == 0 {
        if events & Int32(POLLHUP) != 0 { throw .disconnected(.hangUp) }
        if events & Int32(POLLERR) != 0 { throw .disconnected(.pollError) }
      }
    }
  }

  /// Polls a tuple of `pollfd`s (no allocation per call) until one is ready or `deadline`.
  private static func poll<Descriptors>(
    _ fds: inout Descriptors, until deadline: MonotonicInstant?
  ) throws(IOFailure) -> Bool {
    do {
      return try withUnsafeMutableBytes(of: &fds) { raw throws(Errno) in
        try POSIX.poll(raw.bindMemory(to: pollfd.self), until: deadline)
      }
    } catch {
      throw .errno(error)
    }
  }
}

/// An end of a tty read and written through `poll`: a receiver's port (``SerialPort``) or the
/// receiver's side of a pseudo-terminal (``PseudoTerminal``).
///
/// Each end reads until a deadline and writes a buffer in its own way (a port drains what it
/// wrote); the forms that take a timeout or any sequence of bytes are the same for both and
/// are written once, here.
public protocol PolledTerminal: AnyObject, Sendable {
  /// Waits for data until `deadline` (nil: forever) and reads what has arrived, up to
  /// `buffer.count` bytes.
  func read(
    into buffer: UnsafeMutableRawBufferPointer, deadline: ContinuousClock.Instant?
  ) throws(SerialPortError) -> ReadResult

  /// Writes every byte, waiting in `poll` for room at most `timeout` (nil: forever).
  func write(_ bytes: UnsafeRawBufferPointer, timeout: Duration?) throws(SerialPortError)
}

extension PolledTerminal {
  /// Waits at most `timeout` (nil: forever) for data; see ``read(into:deadline:)``.
  public func read(
    into buffer: UnsafeMutableRawBufferPointer, timeout: Duration? = nil
  ) throws(SerialPortError) -> ReadResult {
    try read(into: buffer, deadline: timeout.map { ContinuousClock.now.advanced(by: $0) })
  }

  /// Writes every byte of `bytes`; see ``write(_:timeout:)``.
  public func write<Bytes: Sequence<UInt8>>(_ bytes: Bytes, timeout: Duration? = nil)
    throws(SerialPortError)
  {
    try withBuffer(bytes) { buffer throws(SerialPortError) in try write(buffer, timeout: timeout) }
  }

  /// `bytes` as one buffer for `write`: in place when they are contiguous.
  private func withBuffer<Bytes: Sequence<UInt8>>(
    _ bytes: Bytes, _ write: (UnsafeRawBufferPointer) throws(SerialPortError) -> Void
  ) throws(SerialPortError) {
    let written = bytes.withContiguousStorageIfAvailable { buffer in
      Result { () throws(SerialPortError) in try write(UnsafeRawBufferPointer(buffer)) }
    }
    if let written { return try written.get() }
    try withBuffer(Array(bytes), write)  // an array is contiguous
  }
}
