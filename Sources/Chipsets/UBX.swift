import NMEA

/// A UBX message class and ID, such as `UBX-CFG-RST` (`06 04`).
public struct UBXMessageID: Sendable, Hashable, CustomStringConvertible {
  public let messageClass: UInt8
  public let messageID: UInt8

  public init(_ messageClass: UInt8, _ messageID: UInt8) {
    self.messageClass = messageClass
    self.messageID = messageID
  }

  public init(_ frame: UBXFrameView) {
    self.init(frame.messageClass, frame.messageID)
  }

  // u-blox 8 / u-blox M8 Receiver Description incl. Protocol Specification (UBX-13003221),
  // "UBX messages overview": class and ID of each message; the same in the u-blox 9
  // interface descriptions (UBX-18010854).
  public static let ackNak = UBXMessageID(0x05, 0x00)
  public static let ackAck = UBXMessageID(0x05, 0x01)
  public static let cfgMsg = UBXMessageID(0x06, 0x01)
  public static let cfgRst = UBXMessageID(0x06, 0x04)
  public static let cfgCfg = UBXMessageID(0x06, 0x09)
  public static let cfgValset = UBXMessageID(0x06, 0x8A)
  public static let cfgValget = UBXMessageID(0x06, 0x8B)
  public static let rxmPmreq = UBXMessageID(0x02, 0x41)
  /// `UBX-MGA-INI` (time, position …, told apart by the payload's first byte).
  public static let mgaIni = UBXMessageID(0x13, 0x40)
  /// `UBX-MGA-ACK-DATA0`: the answer to an MGA message when the receiver's `ackAiding` is on.
  public static let mgaAck = UBXMessageID(0x13, 0x60)
  public static let monVer = UBXMessageID(0x0A, 0x04)
  public static let monRxr = UBXMessageID(0x0A, 0x21)
  public static let navPvt = UBXOutputMessage.navPVT.id

  static let named: [(String, UBXMessageID)] = [
    ("ACK-NAK", .ackNak), ("ACK-ACK", .ackAck), ("CFG-MSG", .cfgMsg), ("CFG-RST", .cfgRst),
    ("CFG-CFG", .cfgCfg), ("CFG-VALSET", .cfgValset), ("CFG-VALGET", .cfgValget),
    ("RXM-PMREQ", .rxmPmreq), ("MGA-INI", .mgaIni), ("MGA-ACK", .mgaAck), ("MON-VER", .monVer),
    ("MON-RXR", .monRxr),
    ("NAV-PVT", .navPvt),
  ]

  /// Looks up a message by its name, with or without the `UBX-` prefix (`CFG-RST`,
  /// `ubx-mon-ver`); only the messages this module uses are known.
  public init?(name: String) {
    var key = name.uppercased()
    if key.hasPrefix("UBX-") { key.removeFirst(4) }
    guard let match = Self.named.first(where: { $0.0 == key }) else { return nil }
    self = match.1
  }

  /// `UBX-CFG-RST` for the messages this module knows, `UBX 06 04` otherwise.
  public var description: String {
    if let match = Self.named.first(where: { $0.1 == self }) { return "UBX-" + match.0 }
    return "UBX \(hex(messageClass)) \(hex(messageID))"
  }
}

func hex(_ byte: UInt8) -> String {
  let digits: [Character] = Array("0123456789ABCDEF")
  return String([digits[Int(byte >> 4)], digits[Int(byte & 0x0F)]])
}

/// UBX framing: `B5 62`, class, ID, little-endian payload length, payload, and the 8-bit
/// Fletcher checksum over class through payload.
public enum UBX {
  /// The two sync characters that start every frame.
  public static let sync: (UInt8, UInt8) = (0xB5, 0x62)
  /// The longest payload the 16-bit length field can describe.
  public static let maximumPayloadLength = 0xFFFF

  /// The 8-bit Fletcher checksum (`CK_A`, `CK_B`) of `bytes`, which are the frame from the
  /// class byte through the end of the payload (u-blox M8 Receiver Description,
  /// UBX-13003221, "UBX checksum").
  public static func checksum<Bytes: Sequence>(_ bytes: Bytes) -> (a: UInt8, b: UInt8)
  where Bytes.Element == UInt8 {
    var a: UInt8 = 0
    var b: UInt8 = 0
    for byte in bytes {
      a = a &+ byte
      b = b &+ a
    }
    return (a, b)
  }

  /// A complete frame for `message` carrying `payload`.
  ///
  /// Throws ``ChipsetCommandError/payloadTooLong(_:)`` for a payload over 65535 bytes.
  public static func frame(_ message: UBXMessageID, payload: [UInt8] = [])
    throws(ChipsetCommandError) -> [UInt8]
  {
    guard payload.count <= maximumPayloadLength else {
      throw .payloadTooLong(payload.count)
    }
    return unchecked(message, payload: payload)
  }

  /// A frame whose payload is known to be short (the module's own commands).
  static func unchecked(_ message: UBXMessageID, payload: [UInt8]) -> [UInt8] {
    var out: [UInt8] = [sync.0, sync.1, message.messageClass, message.messageID]
    out.reserveCapacity(payload.count + 8)
    out.append(UInt8(payload.count & 0xFF))
    out.append(UInt8(payload.count >> 8))
    out.append(contentsOf: payload)
    let sum = checksum(out[2...])
    out.append(sum.a)
    out.append(sum.b)
    return out
  }

  /// The `UBX-ACK-ACK` (or `UBX-ACK-NAK`) frame a receiver sends for `message`; for
  /// simulators and tests.
  public static func acknowledgement(for message: UBXMessageID, accepted: Bool) -> [UInt8] {
    unchecked(
      accepted ? .ackAck : .ackNak, payload: [message.messageClass, message.messageID])
  }

  /// A `UBX-MON-VER` answer: software version (30 bytes), hardware version (10 bytes) and
  /// extension strings (30 bytes each), NUL-padded; for simulators and tests. Longer strings
  /// are cut to their field.
  public static func monVer(software: String, hardware: String, extensions: [String] = [])
    -> [UInt8]
  {
    var payload =
      field(software, UBXMonVer.softwareLength) + field(hardware, UBXMonVer.hardwareLength)
    for ext in extensions { payload += field(ext, UBXMonVer.extensionLength) }
    return unchecked(.monVer, payload: payload)
  }

  static func field(_ text: String, _ size: Int) -> [UInt8] {
    var bytes = Array(text.utf8.prefix(size - 1))
    bytes += [UInt8](repeating: 0, count: size - bytes.count)
    return bytes
  }

  /// `value`'s bytes, least significant first, as every UBX field is sent.
  static func littleEndian<T: FixedWidthInteger>(_ value: T) -> [UInt8] {
    (0..<T.bitWidth / 8).map { UInt8(truncatingIfNeeded: value >> ($0 * 8)) }
  }
}

/// The contents of a `UBX-MON-VER` frame: what a u-blox receiver says about itself.
///
/// Layout (u-blox M8 Receiver Description, UBX-13003221, UBX-MON-VER): `swVersion`
/// CH[30], `hwVersion` CH[10], then any number of CH[30] `extension` strings such as
/// `PROTVER=18.00`, `FWVER=SPG 3.01`, `MOD=NEO-M8N`.
public struct UBXVersion: Sendable, Hashable {
  public var software: String
  public var hardware: String
  public var extensions: [String]

  /// Reads a `UBX-MON-VER` frame (with the decoder's ``UBXMonVer``); `nil` for another
  /// message or a payload that is not 40 + 30n bytes long.
  public init?(_ frame: UBXFrameView) {
    guard UBXMessageID(frame) == .monVer,
      let version = try? UBXMonVer(validating: UnsafeRawBufferPointer(frame.payload))
    else { return nil }
    self.init(version)
  }

  /// The version a decoded `UBX-MON-VER` names, copied out of its payload.
  public init(_ version: UBXMonVer) {
    software = UBXMonVer.text(version.software)
    hardware = UBXMonVer.text(version.hardware)
    extensions = version.extensions.map(UBXMonVer.text).filter { !$0.isEmpty }
  }

  public init(software: String, hardware: String, extensions: [String]) {
    self.software = software
    self.hardware = hardware
    self.extensions = extensions
  }

  /// The value of an `KEY=value` extension (`PROTVER`, `FWVER`, `MOD`).
  public func extensionValue(_ key: String) -> String? {
    let prefix = key + "="
    return extensions.first { $0.hasPrefix(prefix) }.map { String($0.dropFirst(prefix.count)) }
  }

  /// The UBX protocol version from `PROTVER=` (or the older `PROTVER ` spelling).
  public var protocolVersion: UbloxProtocolVersion? {
    for ext in extensions {
      if let version = UbloxProtocolVersion(banner: ext) { return version }
    }
    return nil
  }
}

/// A UBX protocol version such as `18.00` (u-blox M8 SPG 3.01) or `27.11` (ZED-F9P HPG 1.11).
public struct UbloxProtocolVersion: Sendable, Hashable, Comparable, CustomStringConvertible {
  public var major: Int
  public var minor: Int

  public init(major: Int, minor: Int) {
    self.major = major
    self.minor = minor
  }

  /// Parses `18.00`.
  public init?(_ text: String) {
    let parts = text.trimmingSpaces().split(separator: ".", maxSplits: 1)
    guard let first = parts.first, let major = Int(first), major >= 0 else { return nil }
    self.major = major
    self.minor = parts.count > 1 ? Int(parts[1].prefix(2)) ?? 0 : 0
  }

  /// Finds `PROTVER=18.00` or `PROTVER 15.00` (the `$GxTXT` banner spelling) in `text`.
  public init?(banner text: String) {
    guard let range = text.firstRange(ofSubstring: "PROTVER") else { return nil }
    var rest = text[range.upperBound...].drop { $0 == "=" || $0 == " " }
    rest = rest.prefix { $0.isNumber || $0 == "." }
    self.init(String(rest))
  }

  public static func < (lhs: Self, rhs: Self) -> Bool {
    (lhs.major, lhs.minor) < (rhs.major, rhs.minor)
  }

  public var description: String {
    "\(major)." + (minor < 10 ? "0\(minor)" : "\(minor)")
  }
}

extension StringProtocol {
  func trimmingSpaces() -> String {
    let scalars = unicodeScalars.drop { $0 == " " }.reversed().drop { $0 == " " }.reversed()
    return String(String.UnicodeScalarView(scalars))
  }
}
