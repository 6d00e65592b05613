import Glibc
import NMEA

/// Device facts the CLI needs without a connector.
enum SerialGPSPaths {
  /// Whether `path` (links resolved) is a receiver's own USB port (`ttyACM`), whose baud rate
  /// does not matter.
  static func isUSBReceiverPort(_ path: String) -> Bool {
    var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
    let resolved = realpath(path, &buffer).map { String(cString: $0) } ?? path
    return resolved.contains(substring: "ttyACM")
  }

}
