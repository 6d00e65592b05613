import Glibc
import NMEA
import SerialGPS

/// Device facts the CLI needs without a connector.
enum SerialGPSPaths {
  /// Whether `path` (links resolved) is a receiver's own USB port (`ttyACM`), whose baud rate
  /// does not matter.
  static func isUSBReceiverPort(_ path: String) -> Bool {
    var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
    let resolved = realpath(path, &buffer).map { String(cString: $0) } ?? path
    return resolved.contains(substring: "ttyACM")
  }

  /// Where `watch` and `serve` note the receivers they woke (docs/receiver.md, "Left awake"):
  /// `$SERIALGPS_RUNTIME_DIR` when set (tests), else `/run/serialgps` or
  /// `$XDG_RUNTIME_DIR/serialgps`.
  static var awakeMarkers: AwakeMarkers? {
    if let directory = getenv("SERIALGPS_RUNTIME_DIR").map({ String(cString: $0) }),
      !directory.isEmpty
    {
      return AwakeMarkers(directory: directory)
    }
    return AwakeMarkers.standard()
  }
}
