import Glibc
import POSIX

/// Which receiver a caller wants: the first one found, or one the user named.
///
/// Naming a device (by serial number or path) is the user's consent to write to it, even
/// when it is only a generic USB-serial bridge; `.first` grants that only to known receivers.
public enum ReceiverSelector: Sendable, Hashable, CustomStringConvertible {
  /// The best receiver present: a known one (catalogue or `SERIALGPS_CHIPSET` rule) before a
  /// possible one (generic bridge), then in natural order of the device node.
  case first
  /// The device whose USB serial number is this (as reported by the device, or as udev
  /// sanitises it into `ID_SERIAL_SHORT`).
  case serialNumber(String)
  /// The device with this node or link: `/dev/ttyACM0`, `/dev/serial/by-id/…`,
  /// `/dev/serial/by-path/…`, `/dev/serialgps/…` or any other symlink to the node.
  case path(String)

  /// Reads a command-line argument: nothing or `auto` is `.first`; anything with a `/` a
  /// path; a bare `ttyXXX` the node `/dev/ttyXXX`; anything else a serial number.
  public init(argument: String?) {
    guard let argument, !argument.isEmpty, argument != "auto" else {
      self = .first
      return
    }
    if argument.contains("/") {
      self = .path(argument)
    } else if argument.hasPrefix("tty") {
      self = .path("/dev/" + argument)
    } else {
      self = .serialNumber(argument)
    }
  }

  /// True when the user named a device, which allows writing to it even when it is only a
  /// possible receiver.
  public var namesDevice: Bool {
    if case .first = self { return false }
    return true
  }

  /// Whether `device` is one this selector asks for.
  ///
  /// `.first` takes known and possible receivers, never other serial ports; a named device
  /// matches whatever its classification, except one a `SERIALGPS_IGNORE` rule excluded
  /// from automatic use (naming it by path or serial number still works).
  public func matches(_ device: SerialDevice) -> Bool {
    switch self {
    case .first:
      return device.isReceiverCandidate
    case .serialNumber(let wanted):
      guard let serial = device.usb?.serialNumber else { return false }
      return serial == wanted || UdevSerialName.shortSerial(serial) == wanted
    case .path(let wanted):
      if wanted == device.path || wanted == device.stablePath || device.links.contains(wanted) {
        return true
      }
      // A link of the user's own making that udev does not know about.
      return resolvedPath(wanted) == device.path
    }
  }

  /// The devices this selector accepts, best first (see `.first`).
  public func candidates(in devices: [SerialDevice]) -> [SerialDevice] {
    devices.filter(matches).sorted(by: ReceiverSelector.better)
  }

  /// Whether the driver may send commands to `device`, chosen by this selector, before it has
  /// heard NMEA from it.
  public func mayWrite(to device: SerialDevice) -> Bool {
    device.classification.mayWriteUnprompted || namesDevice
  }

  /// The most stable way to find `device` again after it is unplugged: its serial number when
  /// it has one, else its stable (by-id) path, else its node.
  public static func identity(of device: SerialDevice) -> ReceiverSelector {
    if let serial = device.usb?.serialNumber, !serial.isEmpty { return .serialNumber(serial) }
    if let stable = device.stablePath { return .path(stable) }
    return .path(device.path)
  }

  /// Known receivers first, then possible ones, then other ports; then natural order.
  static func better(_ lhs: SerialDevice, _ rhs: SerialDevice) -> Bool {
    let left = rank(lhs.classification.kind)
    let right = rank(rhs.classification.kind)
    if left != right { return left < right }
    return NaturalOrder.less(lhs.path, rhs.path)
  }

  private static func rank(_ kind: ReceiverKind) -> Int {
    switch kind {
    case .known: return 0
    case .possible: return 1
    case .other: return 2
    }
  }

  public var description: String {
    switch self {
    case .first: return "the first receiver found"
    case .serialNumber(let serial): return "the receiver with serial number \(serial)"
    case .path(let path): return path
    }
  }
}
