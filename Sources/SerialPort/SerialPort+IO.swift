import POSIX

extension SerialPort {
  /// Waits for data and reads what has arrived, up to `buffer.count` bytes.
  ///
  /// The thread sleeps in `poll` on the tty, the interrupt signal and the close signal, so it
  /// wakes only when there is something to do: data, a hang-up, ``interrupt()``, ``close()``,
  /// or the deadline. With a nil deadline no timer is armed at all. Bytes that arrived before
  /// a hang-up are returned first; the hang-up is reported by the next read.
  ///
  /// Only one thread may read at a time (see the threading contract on ``SerialPort``).
  ///
  /// - Parameters:
  ///   - buffer: where the bytes go; must not be empty.
  ///   - deadline: when to give up with ``ReadResult/timedOut``; nil waits forever.
  /// - Throws: ``SerialPortError`` with ``SerialPortError/Reason/disconnected(_:)`` when the
  ///   device went away (POLLHUP, POLLERR, `read` returning 0, EIO, ENXIO, ENODEV),
  ///   ``SerialPortError/Reason/closed`` when the port was closed.
  public func read(
    into buffer: UnsafeMutableRawBufferPointer, deadline: ContinuousClock.Instant?
  ) throws(SerialPortError) -> ReadResult {
    try guardedRead(into: buffer, deadline: deadline)
  }

  /// Writes every byte, then waits (`tcdrain`) until the driver has sent them on the line.
  ///
  /// When the driver's buffer is full the thread sleeps in `poll` for room, woken early only by
  /// ``close()``. `tcdrain` itself cannot be woken: at 4800 baud a full 4 KiB driver buffer
  /// takes about 8.5 s to go out. On a pty it returns at once.
  ///
  /// - Parameter timeout: how long to wait for room in the driver's buffer before throwing
  ///   ``SerialPortError/Reason/writeTimedOut(after:written:of:)``; nil waits forever.
  ///   The drain is not bounded by it.
  public func write(_ bytes: UnsafeRawBufferPointer, timeout: Duration? = nil)
    throws(SerialPortError)
  {
    try guardedWrite(bytes, timeout: timeout) { () throws(SerialPortError) in
      do throws(Errno) {
        try io.descriptor.drain()
      } catch {
        throw SerialPortError(device: path, operation: .drain, errno: error)
      }
    }
  }
}
