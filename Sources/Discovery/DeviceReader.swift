import CUdev
import Glibc

/// Turns a libudev device into a `SerialDevice`. Called on the discovery thread only: the
/// pointers it touches belong to that thread's udev context.
///
/// Everything comes from sysfs attributes of the USB parents (readable without udevd), except
/// `DEVLINKS` and the `SERIALGPS_*` properties, which only exist where udevd ran the rules.
enum DeviceReader {
  /// The subsystems listed: serial ports and the kernel's GNSS devices.
  static let subsystems = ["tty", "gnss"]

  /// The serial port or GNSS device behind `device`, or `nil` when it is neither: another
  /// subsystem, no device node, a virtual terminal (no parent device) or a serial-core
  /// placeholder with no UART behind it.
  static func serialDevice(_ device: OpaquePointer) -> SerialDevice? {
    guard let subsystemName = string(udev_device_get_subsystem(device)),
      let subsystem = DeviceSubsystem(rawValue: subsystemName),
      let node = string(udev_device_get_devnode(device)),
      let sysPath = string(udev_device_get_syspath(device)),
      let parent = udev_device_get_parent(device)
    else { return nil }
    // A gnss device's `type` is its protocol (drivers/gnss/core.c); a tty's is the UART's.
    let gnssProtocol = subsystem == .gnss ? attribute(device, "type") : nil
    // serial8250 registers ttyS0…ttyS31 whether or not a UART is there; `type` 0 is
    // PORT_UNKNOWN (nothing found at that address).
    if subsystem == .tty, attribute(device, "type") == "0" { return nil }

    let interface = udev_device_get_parent_with_subsystem_devtype(device, "usb", "usb_interface")
    let usbDevice = udev_device_get_parent_with_subsystem_devtype(device, "usb", "usb_device")
    let usbSerialPort = udev_device_get_parent_with_subsystem_devtype(device, "usb-serial", nil)

    var usb: USBDeviceInfo?
    var computedByID: String?
    if let usbDevice,
      let vendorText = attribute(usbDevice, "idVendor"),
      let productText = attribute(usbDevice, "idProduct"),
      let vendor = UInt16(vendorText, radix: 16),
      let product = UInt16(productText, radix: 16)
    {
      let interfaceText = interface.flatMap { attribute($0, "bInterfaceNumber") }
      let manufacturer = attribute(usbDevice, "manufacturer")
      let productName = attribute(usbDevice, "product")
      let serial = attribute(usbDevice, "serial")
      usb = USBDeviceInfo(
        id: USBID(vendor: vendor, product: product),
        serialNumber: trimmed(serial),
        manufacturer: trimmed(manufacturer),
        product: trimmed(productName),
        interfaceNumber: interfaceText.flatMap { UInt8($0, radix: 16) })
      // udev names by-id links for ttys only (60-serial.rules).
      if subsystem == .tty {
        computedByID = UdevSerialName.byIDPath(
          UdevSerialName.RawAttributes(
            kernelName: string(udev_device_get_sysname(device)) ?? "",
            vendorID: vendorText, productID: productText,
            manufacturer: rawAttribute(usbDevice, "manufacturer"),
            product: rawAttribute(usbDevice, "product"),
            serial: rawAttribute(usbDevice, "serial"),
            interfaceNumber: interfaceText,
            portNumber: usbSerialPort.flatMap { attribute($0, "port_number") }))
      }
    }

    let links = devlinks(device)
    let udevByID = links.first { $0.hasPrefix("/dev/serial/by-id/") }
    let byPath = links.first { $0.hasPrefix("/dev/serial/by-path/") }
    let ownLink = links.first { $0.hasPrefix("/dev/serialgps/") }
    let stablePath = subsystem == .gnss ? ownLink : udevByID ?? computedByID ?? byPath

    let driver =
      interface.flatMap { string(udev_device_get_driver($0)) }
      ?? usbSerialPort.flatMap { string(udev_device_get_driver($0)) }
      ?? firstDriver(from: parent)

    let classification = ReceiverCatalogue.classify(
      usb: usb?.id,
      chipsetProperty: property(device, "SERIALGPS_CHIPSET"),
      ignoreProperty: property(device, "SERIALGPS_IGNORE"), gnssType: gnssProtocol)

    return SerialDevice(
      path: node, sysPath: sysPath, stablePath: stablePath,
      stablePathFromUdev: stablePath != nil && links.contains(stablePath!),
      links: links, usb: usb, driver: driver, classification: classification,
      subsystem: subsystem, gnssProtocol: gnssProtocol)
  }

  /// Every device of subsystem `tty` that is a serial port and every `gnss` device, in natural
  /// order of the node.
  static func enumerate(_ udev: OpaquePointer) -> [SerialDevice]? {
    guard let enumerator = udev_enumerate_new(udev) else { return nil }
    defer { udev_enumerate_unref(enumerator) }
    // Several subsystem matches select devices of any of them.
    for subsystem in subsystems { udev_enumerate_add_match_subsystem(enumerator, subsystem) }
    guard udev_enumerate_scan_devices(enumerator) >= 0 else { return nil }
    var result: [SerialDevice] = []
    var entry = udev_enumerate_get_list_entry(enumerator)
    while let current = entry {
      if let path = udev_list_entry_get_name(current),
        let device = udev_device_new_from_syspath(udev, path)
      {
        if let serial = serialDevice(device) { result.append(serial) }
        udev_device_unref(device)
      }
      entry = udev_list_entry_get_next(current)
    }
    return result.sorted { NaturalOrder.less($0.path, $1.path) }
  }

  static func attribute(_ device: OpaquePointer, _ name: String) -> String? {
    string(udev_device_get_sysattr_value(device, name))
  }

  /// An attribute's bytes, not repaired into valid UTF-8.
  static func rawAttribute(_ device: OpaquePointer, _ name: String) -> [UInt8]? {
    guard let pointer = udev_device_get_sysattr_value(device, name) else { return nil }
    return Array(UnsafeBufferPointer(start: pointer, count: strlen(pointer))).map {
      UInt8(bitPattern: $0)
    }
  }

  static func property(_ device: OpaquePointer, _ name: String) -> String? {
    string(udev_device_get_property_value(device, name))
  }

  /// The symlinks udev made for the node: the device database's list, or the `DEVLINKS`
  /// property where only that is known (a monitor event, umockdev).
  static func devlinks(_ device: OpaquePointer) -> [String] {
    var links: [String] = []
    var entry = udev_device_get_devlinks_list_entry(device)
    while let current = entry {
      if let name = string(udev_list_entry_get_name(current)) { links.append(name) }
      entry = udev_list_entry_get_next(current)
    }
    if links.isEmpty, let property = property(device, "DEVLINKS") {
      links = property.split(separator: " ").map(String.init)
    }
    return links.sorted()
  }

  private static func firstDriver(from device: OpaquePointer) -> String? {
    var current: OpaquePointer? = device
    while let node = current {
      if let driver = string(udev_device_get_driver(node)) { return driver }
      current = udev_device_get_parent(node)
    }
    return nil
  }

  static func string(_ pointer: UnsafePointer<CChar>?) -> String? {
    guard let pointer else { return nil }
    return String(cString: pointer)
  }

  private static func trimmed(_ text: String?) -> String? {
    guard let text else { return nil }
    let bytes = Array(text.utf8)
    var start = 0
    var end = bytes.count
    while start < end, isBlank(bytes[start]) { start += 1 }
    while end > start, isBlank(bytes[end - 1]) { end -= 1 }
    return start == end ? nil : String(decoding: bytes[start..<end], as: UTF8.self)
  }

  private static func isBlank(_ byte: UInt8) -> Bool {
    byte == 0x20 || (0x09...0x0D).contains(byte)
  }
}

/// Orders `/dev/ttyACM2` before `/dev/ttyACM10`: digit runs compare as numbers.
enum NaturalOrder {
  static func less(_ lhs: String, _ rhs: String) -> Bool {
    let left = Array(lhs.utf8)
    let right = Array(rhs.utf8)
    var i = 0
    var j = 0
    while i < left.count, j < right.count {
      if isDigit(left[i]), isDigit(right[j]) {
        let startI = i
        let startJ = j
        while i < left.count, isDigit(left[i]) { i += 1 }
        while j < right.count, isDigit(right[j]) { j += 1 }
        let a = number(left[startI..<i])
        let b = number(right[startJ..<j])
        if a != b { return a < b }
      } else {
        if left[i] != right[j] { return left[i] < right[j] }
        i += 1
        j += 1
      }
    }
    return left.count - i < right.count - j
  }

  private static func isDigit(_ byte: UInt8) -> Bool { (0x30...0x39).contains(byte) }

  private static func number(_ digits: ArraySlice<UInt8>) -> UInt64 {
    var value: UInt64 = 0
    for digit in digits { value = value &* 10 &+ UInt64(digit - 0x30) }
    return value
  }
}
