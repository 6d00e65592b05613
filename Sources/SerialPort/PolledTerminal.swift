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
