import Glibc
import NMEA
import SerialGPS

/// Device facts the CLI needs without a connector.
enum SerialGPSPaths {
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
