/// The `/dev/serial/by-id/…` name udev gives a USB serial port, computed from sysfs attributes
/// so that discovery can name a port stably where no udevd runs (containers, minimal embedded
/// images) and so that a by-id path can be matched before the link exists.
///
/// This follows systemd's `60-serial.rules` and the `usb_id` builtin
/// (`src/udev/udev-builtin-usb_id.c`, with `udev_replace_whitespace` and `udev_replace_chars`
/// from `src/shared/udev-util.c`):
///
///     serial/by-id/usb-<ID_SERIAL>-if<bInterfaceNumber>[-port<port_number>]
///     ID_SERIAL = <vendor>_<model>[_<serial>]
///
/// where vendor and model are the `manufacturer` and `product` strings (else the hex IDs),
/// each with whitespace runs collapsed to `_`, trimmed, cut to 63 bytes and every byte outside
/// `[0-9A-Za-z#+-.:=@_]`, `\x` escapes and valid UTF-8 replaced by `_`. The serial is dropped
/// when it holds a control character, a byte above 0x7f or a comma. `-port<n>` is added for
/// ports of a usb-serial driver (the `port_number` attribute), and the link is only made for
/// `ttyUSB*` and `ttyACM*`.
public enum UdevSerialName {
  /// The inputs, as read from sysfs. `vendorID` and `productID` are the attribute texts
  /// (`"1546"`), used when the string descriptors are missing.
  public struct Attributes: Sendable, Hashable {
    public var kernelName: String
    public var vendorID: String
    public var productID: String
    public var manufacturer: String?
    public var product: String?
    public var serial: String?
    public var interfaceNumber: String?
    public var portNumber: String?

    public init(
      kernelName: String, vendorID: String, productID: String, manufacturer: String?,
      product: String?, serial: String?, interfaceNumber: String?, portNumber: String?
    ) {
      self.kernelName = kernelName
      self.vendorID = vendorID
      self.productID = productID
      self.manufacturer = manufacturer
      self.product = product
      self.serial = serial
      self.interfaceNumber = interfaceNumber
      self.portNumber = portNumber
    }
  }

  /// The string descriptors as the bytes sysfs holds: they need not be valid UTF-8, and udev
  /// replaces invalid bytes, which a Swift `String` would already have turned into U+FFFD.
  struct RawAttributes {
    var kernelName: String
    var vendorID: String
    var productID: String
    var manufacturer: [UInt8]?
    var product: [UInt8]?
    var serial: [UInt8]?
    var interfaceNumber: String?
    var portNumber: String?
  }

  /// udev's `ID_SERIAL` for the device.
  public static func idSerial(_ attributes: Attributes) -> String {
    idSerial(raw(attributes))
  }

  /// udev's `ID_SERIAL_SHORT`: the sanitised serial number, or `nil` when udev would drop it.
  public static func shortSerial(_ serial: String?) -> String? {
    shortSerial(bytes: serial.map { Array($0.utf8) })
  }

  /// The by-id link path, or `nil` when udev would make none for this port.
  public static func byIDPath(_ attributes: Attributes) -> String? {
    byIDPath(raw(attributes))
  }

  static func idSerial(_ attributes: RawAttributes) -> String {
    let vendor = encode(attributes.manufacturer ?? Array(attributes.vendorID.utf8), limit: 63)
    let model = encode(attributes.product ?? Array(attributes.productID.utf8), limit: 63)
    var result = vendor + "_" + model
    if let serial = shortSerial(bytes: attributes.serial) {
      result += "_" + serial
    }
    return result
  }

  static func shortSerial(bytes serial: [UInt8]?) -> String? {
    guard let serial else { return nil }
    // Windows' rule, which udev follows: such serial numbers are not unique identifiers.
    for byte in serial where byte < 0x20 || byte > 0x7f || byte == UInt8(ascii: ",") {
      return nil
    }
    let encoded = encode(serial, limit: 511)
    return encoded.isEmpty ? nil : encoded
  }

  static func byIDPath(_ attributes: RawAttributes) -> String? {
    guard
      attributes.kernelName.hasPrefix("ttyUSB") || attributes.kernelName.hasPrefix("ttyACM"),
      let interface = attributes.interfaceNumber, !interface.isEmpty
    else { return nil }
    var path = "/dev/serial/by-id/usb-" + idSerial(attributes) + "-if" + interface
    if let port = attributes.portNumber, !port.isEmpty {
      path += "-port" + port
    }
    return path
  }

  private static func raw(_ attributes: Attributes) -> RawAttributes {
    RawAttributes(
      kernelName: attributes.kernelName, vendorID: attributes.vendorID,
      productID: attributes.productID, manufacturer: attributes.manufacturer.map { Array($0.utf8) },
      product: attributes.product.map { Array($0.utf8) },
      serial: attributes.serial.map { Array($0.utf8) },
      interfaceNumber: attributes.interfaceNumber, portNumber: attributes.portNumber)
  }

  /// `udev_replace_whitespace(text, buffer, limit)` followed by `udev_replace_chars(buffer,
  /// NULL)`. The result is valid UTF-8: invalid bytes are among those replaced.
  static func encode(_ bytes: [UInt8], limit: Int) -> String {
    replaceChars(replaceWhitespace(bytes, limit: limit))
  }

  /// Drops leading and trailing whitespace and turns each inner run into one `_`, reading and
  /// writing at most `limit` bytes.
  static func replaceWhitespace(_ input: [UInt8], limit: Int) -> [UInt8] {
    var output: [UInt8] = []
    var index = 0
    while index < input.count, isLeadingWhitespace(input[index]) { index += 1 }
    var pendingSpace = false
    while output.count < limit, index < limit, index < input.count {
      let byte = input[index]
      index += 1
      if isSpace(byte) {
        pendingSpace = true
        continue
      }
      if pendingSpace {
        if output.count + 1 >= limit { break }
        output.append(UInt8(ascii: "_"))
        pendingSpace = false
      }
      output.append(byte)
    }
    return output
  }

  /// Keeps `[0-9A-Za-z#+-.:=@_]`, `\x` escapes and valid multi-byte UTF-8; every other byte
  /// becomes `_`.
  static func replaceChars(_ input: [UInt8]) -> String {
    var output = input
    var index = 0
    while index < output.count {
      let byte = output[index]
      if isAllowed(byte) {
        index += 1
        continue
      }
      if byte == UInt8(ascii: "\\"), index + 1 < output.count,
        output[index + 1] == UInt8(ascii: "x")
      {
        index += 2
        continue
      }
      let length = validUTF8Length(output, at: index)
      if length > 1 {
        index += length
        continue
      }
      output[index] = UInt8(ascii: "_")
      index += 1
    }
    return String(decoding: output, as: UTF8.self)
  }

  private static func isAllowed(_ byte: UInt8) -> Bool {
    switch byte {
    case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
      UInt8(ascii: "a")...UInt8(ascii: "z"):
      return true
    case UInt8(ascii: "#"), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."),
      UInt8(ascii: ":"), UInt8(ascii: "="), UInt8(ascii: "@"), UInt8(ascii: "_"):
      return true
    default:
      return false
    }
  }

  /// systemd's `WHITESPACE` (" \t\n\r"), used for the leading strip.
  private static func isLeadingWhitespace(_ byte: UInt8) -> Bool {
    byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D
  }

  /// C `isspace` in the C locale.
  private static func isSpace(_ byte: UInt8) -> Bool {
    byte == 0x20 || (0x09...0x0D).contains(byte)
  }

  /// The length of the valid UTF-8 sequence starting at `index`, or 0 when it is not one
  /// (overlong forms, surrogates and values above U+10FFFF are invalid, as in systemd's
  /// `utf8_encoded_valid_unichar`).
  private static func validUTF8Length(_ bytes: [UInt8], at index: Int) -> Int {
    let lead = bytes[index]
    let length: Int
    var value: UInt32
    switch lead {
    case 0x00...0x7F: return 1
    case 0xC0...0xDF:
      length = 2
      value = UInt32(lead & 0x1F)
    case 0xE0...0xEF:
      length = 3
      value = UInt32(lead & 0x0F)
    case 0xF0...0xF7:
      length = 4
      value = UInt32(lead & 0x07)
    default: return 0
    }
    guard index + length <= bytes.count else { return 0 }
    for offset in 1..<length {
      let byte = bytes[index + offset]
      guard byte & 0xC0 == 0x80 else { return 0 }
      value = value << 6 | UInt32(byte & 0x3F)
    }
    let minimum: UInt32 = length == 2 ? 0x80 : length == 3 ? 0x800 : 0x10000
    guard value >= minimum, value <= 0x10FFFF, !(0xD800...0xDFFF).contains(value) else {
      return 0
    }
    return length
  }
}
