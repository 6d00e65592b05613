import Glibc
import POSIX

// What SerialPort adds to the shared system layer: the termios calls on a descriptor, and what
// an errno means for a serial device. `Errno` itself lives in POSIX and is re-exported, since
// `SerialPortError` carries it: `import SerialPort` is all an app needs to match on it.
@_exported import struct POSIX.Errno

extension FileDescriptor {
  func attributes() throws(Errno) -> termios {
    var attributes = termios()
    _ = try retryingOnInterrupt { tcgetattr(rawValue, &attributes) }
    return attributes
  }

  func setAttributes(_ attributes: termios) throws(Errno) {
    var attributes = attributes
    _ = try retryingOnInterrupt { tcsetattr(rawValue, TCSANOW, &attributes) }
  }

  func drain() throws(Errno) {
    _ = try retryingOnInterrupt { tcdrain(rawValue) }
  }

  func flush(_ queue: CInt) throws(Errno) {
    _ = try retryingOnInterrupt { tcflush(rawValue, queue) }
  }
}

extension Errno {
  /// Whether this errno means the device itself went away (unplugged, driver unbound or the
  /// other end of a pty closed) rather than that the call was wrong.
  var meansDeviceGone: Bool {
    self == .ioError || self == .noSuchDeviceOrAddress || self == .noSuchDevice
  }
}
