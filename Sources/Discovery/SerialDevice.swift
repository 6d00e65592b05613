import Chipsets

/// What discovery concluded a serial port is.
public enum ReceiverKind: String, Sendable, Hashable, CustomStringConvertible {
  /// A GPS receiver: its USB IDs are in the catalogue, or a udev rule of the user's set
  /// `SERIALGPS_CHIPSET` on it. The driver may write chipset commands to it.
  case known
  /// A generic USB-serial bridge (PL2303, CP210x, FTDI, CH340) that GPS receivers are often
  /// built on, but so are modems, 3-D printers and programming cables. Listed, and never
  /// written to unless the user names the device or valid NMEA was heard on it.
  case possible
  /// Any other serial port. Listed only on request (`serialgps list --all`).
  case other

  public var description: String { rawValue }
}

/// Where a classification came from.
public enum ClassificationSource: String, Sendable, Hashable, CustomStringConvertible {
  /// The built-in table of USB IDs (`ReceiverCatalogue`).
  case catalogue
  /// A udev property (`SERIALGPS_CHIPSET` or `SERIALGPS_IGNORE`) set by a rule.
  case udevProperty = "udev"
  /// The kernel: a device of its GNSS subsystem is a receiver, and its `type` attribute names
  /// the protocol.
  case kernel
  /// Nothing matched.
  case none

  public var description: String { rawValue }
}

/// The verdict on one serial port: receiver or not, which chipset, and why.
public struct Classification: Sendable, Hashable {
  public var kind: ReceiverKind
  /// The chipset family when known; `nil` when it has to be identified by listening.
  public var chipset: ChipsetFamily?
  /// A human description of the matched catalogue entry, for example `u-blox 7`.
  public var model: String?
  public var source: ClassificationSource

  public init(
    kind: ReceiverKind, chipset: ChipsetFamily? = nil, model: String? = nil,
    source: ClassificationSource
  ) {
    self.kind = kind
    self.chipset = chipset
    self.model = model
    self.source = source
  }

  /// True when the driver may send commands to the device without the user naming it and
  /// without first hearing NMEA on it.
  public var mayWriteUnprompted: Bool { kind == .known }
}

/// A USB vendor and product ID pair.
public struct USBID: Sendable, Hashable, Comparable, CustomStringConvertible {
  public var vendor: UInt16
  public var product: UInt16

  public init(vendor: UInt16, product: UInt16) {
    self.vendor = vendor
    self.product = product
  }

  /// `vvvv:pppp` in lower-case hex, the way `lsusb` prints it.
  public var description: String { hex4(vendor) + ":" + hex4(product) }

  public static func < (lhs: USBID, rhs: USBID) -> Bool {
    (lhs.vendor, lhs.product) < (rhs.vendor, rhs.product)
  }
}

/// What the USB parent of a serial port says about itself, read from sysfs attributes.
public struct USBDeviceInfo: Sendable, Hashable {
  public var id: USBID
  /// The `serial` string descriptor, when the device has one.
  public var serialNumber: String?
  public var manufacturer: String?
  public var product: String?
  /// `bInterfaceNumber` of the interface the serial port belongs to.
  public var interfaceNumber: UInt8?

  public init(
    id: USBID, serialNumber: String? = nil, manufacturer: String? = nil, product: String? = nil,
    interfaceNumber: UInt8? = nil
  ) {
    self.id = id
    self.serialNumber = serialNumber
    self.manufacturer = manufacturer
    self.product = product
    self.interfaceNumber = interfaceNumber
  }
}

/// The kernel subsystem a device node belongs to, which says how it is opened.
public enum DeviceSubsystem: String, Sendable, Hashable, CustomStringConvertible {
  /// A serial port (`/dev/ttyUSB0`, `/dev/ttyACM0`, `/dev/ttyS0`): termios, a baud rate.
  case tty
  /// A receiver of the kernel's GNSS subsystem (`/dev/gnss0`, drivers/gnss): no termios, no
  /// rate (the kernel driver sets the line), and the driver switches the receiver's supply on
  /// while the node is open and off when it is closed.
  case gnss

  public var description: String { rawValue }
}

/// One serial port (a `tty` device backed by hardware) or kernel GNSS device (`gnss`), with
/// everything discovery knows about it. A plain value: safe to keep, compare and send anywhere.
public struct SerialDevice: Sendable, Hashable, CustomStringConvertible {
  /// The device node, for example `/dev/ttyACM0` or `/dev/gnss0`.
  public var path: String
  /// `tty` or `gnss`.
  public var subsystem: DeviceSubsystem
  /// For a GNSS device, the protocol its kernel driver names (sysfs `type`: `NMEA`, `SiRF`,
  /// `UBX` or `MTK`); `nil` for a tty.
  public var gnssProtocol: String?
  /// The sysfs path, for example `/sys/devices/pci0000:00/…/tty/ttyACM0`. Unique while the
  /// device is plugged in; the key hotplug events use.
  public var sysPath: String
  /// A path that survives unplugging and replugging: the `/dev/serial/by-id/…` link udev made
  /// (or would make, where no udevd runs), else the `/dev/serial/by-path/…` link, else `nil`.
  /// For a GNSS device, which udev gives no such links, the `/dev/serialgps/…` link that
  /// udev-rules/60-serialgps.rules makes, else `nil`.
  public var stablePath: String?
  /// Whether udevd made `stablePath` (it is in `links`), or discovery computed the name udev
  /// would give (no udevd, or the link is not there yet).
  public var stablePathFromUdev: Bool
  /// Every symlink udev made to the node (`DEVLINKS`), including `/dev/serialgps/…`.
  public var links: [String]
  /// USB details; `nil` for ports that are not on USB.
  public var usb: USBDeviceInfo?
  /// The kernel driver of the port's parent: `cdc_acm`, `pl2303`, `cp210x`, `ftdi_sio`,
  /// `ch341`, `serial8250` …
  public var driver: String?
  public var classification: Classification

  public init(
    path: String, sysPath: String, stablePath: String?, stablePathFromUdev: Bool = false,
    links: [String] = [], usb: USBDeviceInfo?, driver: String?, classification: Classification,
    subsystem: DeviceSubsystem = .tty, gnssProtocol: String? = nil
  ) {
    self.path = path
    self.subsystem = subsystem
    self.gnssProtocol = gnssProtocol
    self.sysPath = sysPath
    self.stablePath = stablePath
    self.stablePathFromUdev = stablePathFromUdev
    self.links = links
    self.usb = usb
    self.driver = driver
    self.classification = classification
  }

  /// The USB serial number, when there is one.
  public var serialNumber: String? { usb?.serialNumber }

  /// Known or possible receiver (not merely another serial port).
  public var isReceiverCandidate: Bool { classification.kind != .other }

  public var description: String {
    var text = path
    if let usb { text += " [\(usb.id)]" }
    if let gnssProtocol { text += " gnss \(gnssProtocol)" }
    text += " \(classification.kind)"
    if let chipset = classification.chipset { text += " \(chipset.cliName)" }
    return text
  }
}

/// Four lower-case hex digits.
func hex4(_ value: UInt16) -> String {
  let digits: [Character] = Array("0123456789abcdef")
  var text = ""
  for shift in stride(from: 12, through: 0, by: -4) {
    text.append(digits[Int((value >> UInt16(shift)) & 0xF)])
  }
  return text
}
