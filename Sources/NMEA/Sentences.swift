/// GGA fix quality (field 6).
public struct FixQuality: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
  public let rawValue: Int
  public init(rawValue: Int) { self.rawValue = rawValue }

  public static let invalid = FixQuality(rawValue: 0)
  public static let gps = FixQuality(rawValue: 1)
  public static let differential = FixQuality(rawValue: 2)
  public static let pps = FixQuality(rawValue: 3)
  public static let rtkFixed = FixQuality(rawValue: 4)
  public static let rtkFloat = FixQuality(rawValue: 5)
  public static let deadReckoning = FixQuality(rawValue: 6)
  public static let manual = FixQuality(rawValue: 7)
  public static let simulated = FixQuality(rawValue: 8)

  public var description: String {
    switch rawValue {
    case 0: return "invalid"
    case 1: return "GPS"
    case 2: return "DGPS"
    case 3: return "PPS"
    case 4: return "RTK fixed"
    case 5: return "RTK float"
    case 6: return "dead reckoning"
    case 7: return "manual"
    case 8: return "simulated"
    default: return "quality \(rawValue)"
    }
  }
}

/// The NMEA 2.3+ mode indicator (RMC, GLL, VTG, one per system in GNS).
public struct ModeIndicator: RawRepresentable, Sendable, Hashable {
  /// The ASCII letter.
  public let rawValue: UInt8
  public init(rawValue: UInt8) { self.rawValue = rawValue }

  public static let autonomous = ModeIndicator(rawValue: 0x41)  // A
  public static let differential = ModeIndicator(rawValue: 0x44)  // D
  public static let estimated = ModeIndicator(rawValue: 0x45)  // E: dead reckoning
  public static let rtkFloat = ModeIndicator(rawValue: 0x46)  // F
  public static let manual = ModeIndicator(rawValue: 0x4D)  // M
  public static let notValid = ModeIndicator(rawValue: 0x4E)  // N
  public static let precise = ModeIndicator(rawValue: 0x50)  // P
  public static let rtkFixed = ModeIndicator(rawValue: 0x52)  // R
  public static let simulator = ModeIndicator(rawValue: 0x53)  // S

  /// Whether the mode stands for a position fix.
  public var isValid: Bool { self != .notValid && self != .manual && self != .simulator }
}

/// GSA fix type: no fix, 2D or 3D.
public enum FixMode: UInt8, Sendable, Hashable, Comparable, CustomStringConvertible {
  case noFix = 1
  case twoD = 2
  case threeD = 3

  public static func < (lhs: FixMode, rhs: FixMode) -> Bool { lhs.rawValue < rhs.rawValue }

  public var description: String {
    switch self {
    case .noFix: return "no fix"
    case .twoD: return "2D"
    case .threeD: return "3D"
    }
  }
}

/// A sentence the parser has no type for: its address and raw fields.
public struct UnknownSentence: Sendable, Hashable {
  /// Talker ID for standard sentences; ``Talker/proprietary`` for `$P…`.
  public var talker: Talker
  /// The address after `$` (`GPXTE`, `PGRMZ`, `AIVDM` …).
  public var address: String
  public var fields: [String]

  public init(talker: Talker, address: String, fields: [String]) {
    self.talker = talker
    self.address = address
    self.fields = fields
  }
}

/// A parsed NMEA sentence.
public enum Sentence: Sendable, Hashable {
  case gga(GGA)
  case rmc(RMC)
  case gsa(GSA)
  case gsv(GSV)
  case gll(GLL)
  case vtg(VTG)
  case zda(ZDA)
  case gst(GST)
  case gns(GNS)
  case gbs(GBS)
  case grs(GRS)
  case dtm(DTM)
  case txt(TXT)
  case pubxPosition(PUBXPosition)
  case pubxSatellites(PUBXSatellites)
  case pubxTime(PUBXTime)
  case mtkAcknowledgement(MTKAcknowledgement)
  case mtkSystemMessage(MTKSystemMessage)
  case garminErrorEstimates(GarminErrorEstimates)
  case garminAltitude(GarminAltitude)
  case garminDatum(GarminDatum)
  case unknown(UnknownSentence)

  /// The UTC time of day the sentence carries, if it carries one: its descriptor's
  /// (``SentenceDescriptor/time``). No `default`, so that a new case must say.
  public var time: UTCTime? {
    switch self {
    case .gga(let s): return s.time
    case .rmc(let s): return s.time
    case .gsa(let s): return s.time
    case .gsv(let s): return s.time
    case .gll(let s): return s.time
    case .vtg(let s): return s.time
    case .zda(let s): return s.time
    case .gst(let s): return s.time
    case .gns(let s): return s.time
    case .gbs(let s): return s.time
    case .grs(let s): return s.time
    case .dtm(let s): return s.time
    case .txt(let s): return s.time
    case .pubxPosition(let s): return s.time
    case .pubxSatellites(let s): return s.time
    case .pubxTime(let s): return s.time
    case .mtkAcknowledgement(let s): return s.time
    case .mtkSystemMessage(let s): return s.time
    case .garminErrorEstimates(let s): return s.time
    case .garminAltitude(let s): return s.time
    case .garminDatum(let s): return s.time
    case .unknown: return nil
    }
  }
}
