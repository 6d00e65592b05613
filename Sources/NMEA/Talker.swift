/// A satellite system.
public enum Constellation: UInt8, Sendable, Hashable, CaseIterable, CustomStringConvertible {
  // Raw values are gpsd's (and u-blox's) gnssId, so they can be printed as they are.
  case gps = 0
  case sbas = 1
  case galileo = 2
  case beidou = 3
  case imes = 4
  case qzss = 5
  case glonass = 6
  case navic = 7

  /// The NMEA 4.10 GSA/GSV system ID (`1` GPS … `6` NavIC), or `nil` for SBAS and IMES.
  public var nmeaSystemID: UInt8? {
    switch self {
    case .gps: return 1
    case .glonass: return 2
    case .galileo: return 3
    case .beidou: return 4
    case .qzss: return 5
    case .navic: return 6
    case .sbas, .imes: return nil
    }
  }

  /// The constellation of an NMEA 4.10 system ID.
  public init?(nmeaSystemID: Int) {
    switch nmeaSystemID {
    case 1: self = .gps
    case 2: self = .glonass
    case 3: self = .galileo
    case 4: self = .beidou
    case 5: self = .qzss
    case 6: self = .navic
    default: return nil
    }
  }

  public var description: String {
    switch self {
    case .gps: return "GPS"
    case .sbas: return "SBAS"
    case .galileo: return "Galileo"
    case .beidou: return "BeiDou"
    case .imes: return "IMES"
    case .qzss: return "QZSS"
    case .glonass: return "GLONASS"
    case .navic: return "NavIC"
    }
  }
}

/// The two-letter talker ID of a sentence (`GP`, `GN` …). Unknown talkers are kept as they
/// are.
public struct Talker: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
  /// The two ASCII letters, first in the high byte.
  public let rawValue: UInt16

  public init(rawValue: UInt16) { self.rawValue = rawValue }

  public init(_ first: UInt8, _ second: UInt8) {
    rawValue = UInt16(first) << 8 | UInt16(second)
  }

  /// GPS.
  public static let gp = Talker(0x47, 0x50)
  /// GLONASS.
  public static let gl = Talker(0x47, 0x4C)
  /// Galileo.
  public static let ga = Talker(0x47, 0x41)
  /// BeiDou (NMEA 4.11).
  public static let gb = Talker(0x47, 0x42)
  /// BeiDou (older receivers).
  public static let bd = Talker(0x42, 0x44)
  /// QZSS.
  public static let gq = Talker(0x47, 0x51)
  /// QZSS as some receivers write it.
  public static let qz = Talker(0x51, 0x5A)
  /// NavIC (IRNSS).
  public static let gi = Talker(0x47, 0x49)
  /// Combined (multi-constellation) solution.
  public static let gn = Talker(0x47, 0x4E)
  /// Quectel's `$PQGSV` and `$PQGSA`: BeiDou or QZSS, as their system ID says.
  public static let pq = Talker(0x50, 0x51)
  /// A proprietary sentence (`$P…`) has no talker; it reads as `P`.
  public static let proprietary = Talker(0x50, 0x20)

  /// The constellation the talker stands for; `nil` for `GN`, proprietary and unknown talkers.
  public var constellation: Constellation? {
    switch self {
    case .gp: return .gps
    case .gl: return .glonass
    case .ga: return .galileo
    case .gb, .bd: return .beidou
    case .gq, .qz: return .qzss
    case .gi: return .navic
    default: return nil
    }
  }

  public var description: String {
    if self == .proprietary { return "P" }
    return String(decoding: [UInt8(rawValue >> 8), UInt8(rawValue & 0xFF)], as: UTF8.self)
  }
}
