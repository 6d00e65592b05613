// UBX monitoring: the RF front ends (jamming, antenna), the hardware status of u-blox 8 and
// older, and the receiver's version. Layouts: UBX-13003221 (M8) and UBX-18010854 (F9),
// section "UBX-MON".

/// How much a receiver thinks it is being jammed (MON-RF and MON-HW `jammingState`; needs
/// the receiver's interference monitor).
public enum UBXJammingState: UInt8, Sendable, Hashable {
  case unknown = 0
  case ok = 1
  case warning = 2
  case critical = 3
}

/// The state of the active antenna's supervisor (MON-RF and MON-HW `antStatus`).
public enum AntennaStatus: UInt8, Sendable, Hashable, CustomStringConvertible {
  case initializing = 0
  case unknown = 1
  case ok = 2
  case short = 3
  case open = 4

  public var description: String {
    switch self {
    case .initializing: return "initializing"
    case .unknown: return "unknown"
    case .ok: return "ok"
    case .short: return "short circuit"
    case .open: return "open circuit"
    }
  }
}

/// Whether the receiver powers the active antenna (MON-RF and MON-HW `antPower`).
public enum AntennaPower: UInt8, Sendable, Hashable, CustomStringConvertible {
  case off = 0
  case on = 1
  case unknown = 2

  public var description: String {
    switch self {
    case .off: return "off"
    case .on: return "on"
    case .unknown: return "unknown"
    }
  }
}

// B5 62 0A 38 1C 00
// 00 01 00 00 00 00 02 01 00 00 00 00 00 00 00 00 63 00 99 09 17 0D A9 06
// A7 00 00 00
// E1 5E
// (ublox-neo-f9v.log: one block, antenna OK and powered, jamming indicator 23)

/// `UBX-MON-RF` (0A 38), version 0: one block per RF front end (L1, L2/L5) with its jamming
/// state and indicator, antenna state and power, noise and AGC.
public struct UBXMonRF: UBXDecodable {
  public static let messageClass: UInt8 = 0x0A
  public static let messageID: UInt8 = 0x38
  /// Kept in every later fix until the next report, as a setting is.
  static var role: CycleRole { .setting }

  public let blocks: UBXBlocks<RFBlock>

  public init(validating payload: UnsafeRawBufferPointer) throws(UBXRejection) {
    let p = UBXBytes(payload)
    try p.require(4)
    guard p.u1(0) == 0 else { throw .unknownVersion }
    let count = Int(p.u1(1))
    blocks = try UBXBlocks(payload, header: 4, count: count)
  }

  /// One RF front end's block.
  public struct RFBlock: UBXBlock {
    public static let size = 24
    let p: UBXBytes
    public init(block bytes: UnsafeRawBufferPointer) { p = UBXBytes(bytes) }
    /// 0 for L1, 1 for L2 or L5.
    public var blockID: UInt8 { p.u1(0) }
    public var jamming: UBXJammingState { UBXJammingState(rawValue: p.u1(1) & 0x03)! }
    /// `nil` for a value the interface description does not list.
    public var antennaStatus: AntennaStatus? { AntennaStatus(rawValue: p.u1(2)) }
    public var antennaPower: AntennaPower? { AntennaPower(rawValue: p.u1(3)) }
    /// Noise level of the front end (`noisePerMS`).
    public var noisePerMillisecond: Int { Int(p.u2(12)) }
    /// AGC monitor, 0…8191 (`agcCnt`).
    public var agcCount: Int { Int(p.u2(14)) }
    /// Continuous-wave jamming indicator, 0 (none) … 255 (strong) (`jamInd`).
    public var jammingIndicator: Int { Int(p.u1(16)) }
  }

}

// B5 62 0A 09 3C 00
// 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 52 00 18 10 02 01 05 00
// 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 0C 00 00
// 00 00 00 00 00 00 00 00 00 00 00 00
// DD C0
// (built from the M8 layout, as none of the corpus logs sends MON-HW: noise 82, AGC 4120,
// antenna OK and powered, jamming state OK, indicator 12)

/// `UBX-MON-HW` (0A 09): hardware status of u-blox 8 and older (deprecated by MON-RF from
/// protocol 27): jamming, antenna, noise and AGC of the one front end.
public struct UBXMonHW: UBXDecodable, Sendable, Hashable {
  public static let messageClass: UInt8 = 0x0A
  public static let messageID: UInt8 = 0x09
  /// Kept in every later fix until the next report, as a setting is.
  static var role: CycleRole { .setting }

  public var noisePerMillisecond: Int
  public var agcCount: Int
  public var antennaStatus: AntennaStatus?
  public var antennaPower: AntennaPower?
  public var jamming: UBXJammingState
  /// 0…255.
  public var jammingIndicator: Int

  public init(validating payload: UnsafeRawBufferPointer) throws(UBXRejection) {
    let p = UBXBytes(payload)
    try p.require(60)
    noisePerMillisecond = Int(p.u2(16))
    agcCount = Int(p.u2(18))
    antennaStatus = AntennaStatus(rawValue: p.u1(20))
    antennaPower = AntennaPower(rawValue: p.u1(21))
    jamming = UBXJammingState(rawValue: (p.u1(22) >> 2) & 0x03)!
    jammingIndicator = Int(p.u1(45))
  }
}

// B5 62 0A 04 DC 00
// 32 2E 32 30 20 28 38 31 32 38 39 29 00 00 00 00 00 00 00 00 00 00 00 00
// 00 00 00 00 00 00 30 30 30 38 30 30 30 30 00 00 32 2E 30 31 20 28 37 35
// 33 33 31 29 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00
// … (150 more payload bytes)
// AE F5
// (ublox-lea-m8f.log: software and hardware versions, then the extensions)

/// `UBX-MON-VER` (0A 04): the receiver's software and hardware versions and its extension
/// strings (`PROTVER=18.00`, `FWVER=SPG 3.01`, `MOD=NEO-M8N`): `swVersion` CH[30],
/// `hwVersion` CH[10], then any number of CH[30] `extension`s, each NUL-padded. Read in
/// place; ``text(_:)`` copies a field out as text.
public struct UBXMonVer: UBXDecodable {
  public static let messageClass: UInt8 = 0x0A
  public static let messageID: UInt8 = 0x04
  static var role: CycleRole { .none }

  /// Sizes of the fields, for a writer of the message.
  public static let softwareLength = 30
  public static let hardwareLength = 10
  public static let extensionLength = 30

  /// The software version field, up to its first NUL.
  public let software: UnsafeRawBufferPointer
  public let hardware: UnsafeRawBufferPointer
  public let extensions: Extensions

  public init(validating payload: UnsafeRawBufferPointer) throws(UBXRejection) {
    let fixed = Self.softwareLength + Self.hardwareLength
    guard payload.count >= fixed else { throw .shortPayload }
    guard (payload.count - fixed) % Self.extensionLength == 0 else { throw .blockCountMismatch }
    software = Self.field(payload, 0, Self.softwareLength)
    hardware = Self.field(payload, Self.softwareLength, Self.hardwareLength)
    extensions = Extensions(
      payload: UnsafeRawBufferPointer(rebasing: payload[fixed...]),
      count: (payload.count - fixed) / Self.extensionLength)
  }

  static func field(_ payload: UnsafeRawBufferPointer, _ offset: Int, _ size: Int)
    -> UnsafeRawBufferPointer
  {
    var end = offset
    while end < offset + size && payload[end] != 0 { end += 1 }
    return UnsafeRawBufferPointer(rebasing: payload[offset..<end])
  }

  /// The extension strings, each up to its first NUL (empty ones included).
  public struct Extensions: RandomAccessCollection {
    let payload: UnsafeRawBufferPointer
    public let count: Int
    public var startIndex: Int { 0 }
    public var endIndex: Int { count }
    public subscript(index: Int) -> UnsafeRawBufferPointer {
      precondition(index >= 0 && index < count, "MON-VER extension index out of range")
      return UBXMonVer.field(payload, index * UBXMonVer.extensionLength, UBXMonVer.extensionLength)
    }
  }

  /// A field as text, printable ASCII only (anything else becomes `?`, so that a corrupted
  /// field puts no control bytes into logs), without surrounding spaces. Allocates.
  public static func text(_ field: UnsafeRawBufferPointer) -> String {
    var bytes: [UInt8] = []
    bytes.reserveCapacity(field.count)
    for byte in field { bytes.append((0x20...0x7E).contains(byte) ? byte : 0x3F) }
    var start = 0
    var end = bytes.count
    while start < end && bytes[start] == 0x20 { start += 1 }
    while end > start && bytes[end - 1] == 0x20 { end -= 1 }
    return String(decoding: bytes[start..<end], as: UTF8.self)
  }
}
