/// An open byte stream to a receiver: a serial port, or an in-process replay.
///
/// Threading contract: one thread reads (the receiver's reader thread), one task writes at a
/// time, `interrupt()` may be called from anywhere, and `close()` is called once, after the
/// reader has stopped.
public protocol ReceiverConnection: AnyObject, Sendable {
  /// Blocks until bytes arrive and returns how many were stored; returns 0 when woken by
  /// ``interrupt()``. Throws when the device is gone or unreadable.
  func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int
  /// Writes every byte (waiting for the line to drain).
  func write(_ bytes: [UInt8]) throws
  /// Wakes a blocked ``read(into:)``, which then returns 0.
  func interrupt()
  /// Releases the device. Called once, after reading stopped.
  func close()
}

/// Opens connections to one receiver, as many times as the power policy asks.
public protocol ReceiverConnector: Sendable {
  /// The device as users know it (`/dev/ttyACM0`, a replay's name), for messages.
  var deviceName: String { get }
  /// Opens the device. Errors should say what went wrong and what to do.
  func connect() async throws -> any ReceiverConnection
}
