// The UBX navigation solution: position, velocity, their accuracies, DOPs, the receiver's
// fix status and the end of an epoch. Layouts: UBX-13003221 (M8) and UBX-18010854 (F9),
// section "UBX-NAV"; NAV-SOL from GPS.G6-SW-10018 (u-blox 6), gone from u-blox 9.

/// A decoded UBX message type: a ``BinaryMessageDescriptor`` (class, ID, role, merge;
/// UBXDescriptors.swift) read from its payload by one validating initializer.
protocol UBXDecodable: BinaryMessageDescriptor {
  /// Reads the message from its payload, refusing a length that cannot be the message's.
  init(validating payload: UnsafeRawBufferPointer) throws(UBXRejection)
}

/// A UBX message of a navigation epoch, keyed by the epoch's GPS time of week.
protocol UBXEpochMessage: UBXDecodable {
  /// GPS time of week of the epoch, milliseconds (`iTOW`).
  var iTOW: UInt32 { get }
}

extension UBXEpochMessage {
  /// The epoch's GPS time of week, milliseconds: a binary message's time.
  var timeOfWeek: UInt32? { iTOW }
}

extension UBXDecodable {
  /// The message read from its payload; `nil` when its length cannot be the message's.
  init?(payload: UnsafeRawBufferPointer) {
    guard let message = try? Self(validating: payload) else { return nil }
    self = message
  }

  /// Its key in the receiver's cycle: binary messages have no talker and no variant.
  var cycleKey: CycleKey {
    CycleKey(SentenceAddress(binaryClass: Self.messageClass, id: Self.messageID))
  }

  /// A binary message carries a GPS time of week, not a UTC time of day.
  var time: UTCTime? { nil }
}

/// `fixType` of NAV-PVT, NAV-SOL and NAV-STATUS.
public enum UBXFixType: UInt8, Sendable, Hashable {
  case noFix = 0
  case deadReckoningOnly = 1
  case twoD = 2
  case threeD = 3
  case gnssAndDeadReckoning = 4
  /// Time only: a timing receiver on a surveyed-in or fixed position.
  case timeOnly = 5

  /// The fix mode gpsd gives this type (ubx_msg_nav_pvt): time only is a (surveyed) 3D
  /// position, dead reckoning alone a 2D one.
  public var mode: FixMode {
    switch self {
    case .noFix: return .noFix
    case .deadReckoningOnly, .twoD: return .twoD
    case .threeD, .gnssAndDeadReckoning, .timeOnly: return .threeD
    }
  }
}

/// The carrier-phase (RTK) solution of NAV-PVT's `carrSoln` and NAV-STATUS's.
public enum UBXCarrierSolution: UInt8, Sendable, Hashable {
  case none = 0
  /// Float ambiguities.
  case float = 1
  /// Fixed ambiguities.
  case fixed = 2
}

// B5 62 01 07 5C 00
// 10 E6 B9 09 E3 07 04 16 15 13 14 37 1A 00 00 00 F1 0C FE FF 03 01 EB 10
// 5A 41 A0 65 0A A5 A7 E4 32 72 00 00 33 6B 00 00 91 38 00 00 62 32 00 00
// FB 00 00 00 D9 FF FF FF E8 FF FF FF FE 00 00 00 01 74 4C 01 87 03 00 00
// 2D 28 5E 00 7D 00 00 00 DC CA 49 32 00 00 00 00 00 00 00 00
// 70 87
// (ublox-zed-f9p-hp.log: iTOW 163178000 ms, 2019-04-22 21:19:20 UTC, fix type 3, 16 satellites,
// -45.8775286° 170.5001306°, hMSL 27.443 m)

/// `UBX-NAV-PVT` (01 07): the whole navigation solution of one epoch, u-blox 7 and later
/// (84 bytes before u-blox 8, 92 since).
public struct UBXNavPVT: UBXEpochMessage, Sendable, Hashable {
  public static let messageClass: UInt8 = 0x01
  public static let messageID: UInt8 = 0x07
  static var role: CycleRole { .position }

  /// GPS time of week of the epoch, milliseconds (`iTOW`).
  public var iTOW: UInt32
  /// The UTC date and time, when the receiver says both are valid (`validDate`,
  /// `validTime`), as gpsd takes them; a date or time outside the calendar is left out.
  public var timestamp: UTCTimestamp?
  /// Whether the receiver says the time is fully resolved (no seconds' ambiguity).
  public var timeFullyResolved: Bool
  /// Time accuracy, seconds (`tAcc`).
  public var timeAccuracy: Double?
  public var fixType: UBXFixType?
  /// `gnssFixOK`: the fix is within the limits the receiver was configured with.
  public var gnssFixOK: Bool
  /// `diffSoln`: differential corrections were applied.
  public var differential: Bool
  public var carrierSolution: UBXCarrierSolution?
  /// Satellites used (`numSV`).
  public var satellitesUsed: Int
  /// 1e-7° exactly; `nil` beyond ±90°/±180° or when the receiver flags it invalid
  /// (`invalidLlh`, u-blox 9).
  public var position: Position?
  /// Metres above the ellipsoid (`height`) and above mean sea level (`hMSL`); `nil` with an
  /// invalid position.
  public var altitudeHAE: Double?
  public var altitudeMSL: Double?
  /// Horizontal and vertical accuracy, metres (`hAcc`, `vAcc`).
  public var horizontalAccuracy: Double?
  public var verticalAccuracy: Double?
  /// Velocity north, east, down, m/s.
  public var velocityNorth: Double
  public var velocityEast: Double
  public var velocityDown: Double
  /// Ground speed, m/s (`gSpeed`); `nil` when negative.
  public var groundSpeed: Double?
  /// Heading of motion, degrees (`headMot`), 0 ..< 360; `nil` outside that.
  public var headingOfMotion: Double?
  /// Speed accuracy, m/s (`sAcc`), and heading accuracy, degrees (`headAcc`).
  public var speedAccuracy: Double?
  public var headingAccuracy: Double?
  /// Position DOP (`pDOP`).
  public var pdop: Double
  /// Heading of the vehicle, degrees, when `headVehValid` (92-byte form only).
  public var headingOfVehicle: Double?
  /// Magnetic declination and its accuracy, degrees, east positive, when `validMag`
  /// (92-byte form only).
  public var magneticDeclination: Double?
  public var magneticDeclinationAccuracy: Double?
  /// Fields left out as impossible.
  var dropped: UInt8 = 0

  public init(validating payload: UnsafeRawBufferPointer) throws(UBXRejection) {
    let p = UBXBytes(payload)
    try p.require(84)
    iTOW = p.u4(0)
    let valid = p.u1(11)
    if valid & 0x03 == 0x03 {
      timestamp = UTCTimestamp(
        ubloxYear: p.u2(4), month: p.u1(6), day: p.u1(7), hour: p.u1(8), minute: p.u1(9),
        second: p.u1(10), nanoseconds: p.i4(16))
      if timestamp == nil { dropped += 1 }
    }
    timeFullyResolved = valid & 0x04 != 0
    timeAccuracy = p.u4(12) == .max ? nil : Double(p.u4(12)) * 1e-9
    fixType = UBXFixType(rawValue: p.u1(20))
    if fixType == nil { dropped += 1 }
    let flags = p.u1(21)
    gnssFixOK = flags & 0x01 != 0
    differential = flags & 0x02 != 0
    carrierSolution = UBXCarrierSolution(rawValue: flags >> 6)
    if carrierSolution == nil { dropped += 1 }
    satellitesUsed = Int(p.u1(23))
    // flags3 bit 0, invalidLlh (u-blox 9): longitude, latitude and heights are invalid.
    let invalidLLH = p.count >= 92 && p.u1(78) & 0x01 != 0
    if !invalidLLH {
      position = Position(ubloxLatitude: Int64(p.i4(28)), longitude: Int64(p.i4(24)), digits: 7)
      if position == nil { dropped += 1 }
      altitudeHAE = Double(p.i4(32)) / 1000
      altitudeMSL = Double(p.i4(36)) / 1000
    }
    horizontalAccuracy = UBXUnits.metres(millimetres: p.u4(40))
    verticalAccuracy = UBXUnits.metres(millimetres: p.u4(44))
    velocityNorth = Double(p.i4(48)) / 1000
    velocityEast = Double(p.i4(52)) / 1000
    velocityDown = Double(p.i4(56)) / 1000
    let speed = p.i4(60)
    if speed >= 0 { groundSpeed = Double(speed) / 1000 } else { dropped += 1 }
    let heading = p.i4(64)
    if (0..<36_000_000).contains(heading) {
      headingOfMotion = Double(heading) * 1e-5
    } else {
      dropped += 1
    }
    speedAccuracy = UBXUnits.metres(millimetres: p.u4(68))
    headingAccuracy = p.u4(72) == .max ? nil : Double(p.u4(72)) * 1e-5
    pdop = Double(p.u2(76)) / 100
    guard p.count >= 92 else { return }
    if flags & 0x20 != 0 { headingOfVehicle = Double(p.i4(84)) * 1e-5 }
    if valid & 0x08 != 0 {
      magneticDeclination = Double(p.i2(88)) / 100
      magneticDeclinationAccuracy = Double(p.u2(90)) / 100
    }
  }
}

// B5 62 01 02 1C 00
// 18 DE 2D 0E A5 EF FC D6 05 AA AE 1A 74 35 00 00 94 A8 00 00 8B 50 00 00
// F4 38 00 00
// 19 42
// (u-blox-m8t-time.log: iTOW 237887000 ms, 44.7654405° -68.8066651°, hMSL 43.156 m, hAcc 20.619 m)

/// `UBX-NAV-POSLLH` (01 02): geodetic position, u-blox 5 and later. It says nothing of the
/// fix's validity (NAV-STATUS, NAV-SOL or NAV-PVT do): a receiver without a fix sends zeros
/// or its last position with a large accuracy.
public struct UBXNavPosLLH: UBXEpochMessage, Sendable, Hashable {
  public static let messageClass: UInt8 = 0x01
  public static let messageID: UInt8 = 0x02
  static var role: CycleRole { .position }

  public var iTOW: UInt32
  /// 1e-7° exactly; `nil` beyond ±90°/±180°.
  public var position: Position?
  public var altitudeHAE: Double
  public var altitudeMSL: Double
  public var horizontalAccuracy: Double?
  public var verticalAccuracy: Double?
  var dropped: UInt8 = 0

  public init(validating payload: UnsafeRawBufferPointer) throws(UBXRejection) {
    let p = UBXBytes(payload)
    try p.require(28)
    iTOW = p.u4(0)
    position = Position(ubloxLatitude: Int64(p.i4(8)), longitude: Int64(p.i4(4)), digits: 7)
    if position == nil { dropped += 1 }
    altitudeHAE = Double(p.i4(12)) / 1000
    altitudeMSL = Double(p.i4(16)) / 1000
    horizontalAccuracy = UBXUnits.metres(millimetres: p.u4(20))
    verticalAccuracy = UBXUnits.metres(millimetres: p.u4(24))
  }
}

// B5 62 01 14 24 00
// 00 00 00 00 10 E6 B9 09 5A 41 A0 65 0A A5 A7 E4 32 72 00 00 33 6B 00 00
// F2 0E FC 00 A6 35 02 00 D6 F7 01 00
// B4 45
// (ublox-zed-f9p-hp.log: the epoch of the NAV-PVT sample, to 1e-9° and 0.1 mm)

/// `UBX-NAV-HPPOSLLH` (01 14): the geodetic position to 1e-9° and 0.1 mm, high-precision
/// firmware (u-blox 8 HPG, 9 and later), version 0.
public struct UBXNavHPPosLLH: UBXEpochMessage, Sendable, Hashable {
  public static let messageClass: UInt8 = 0x01
  public static let messageID: UInt8 = 0x14
  static var role: CycleRole { .position }

  public var iTOW: UInt32
  /// 1e-9° exactly; `nil` beyond ±90°/±180°, with a high-precision part outside ±99, or
  /// flagged invalid (`invalidLlh`).
  public var position: Position?
  /// Metres, to 0.1 mm; `nil` with a high-precision part outside ±9 or an invalid position.
  public var altitudeHAE: Double?
  public var altitudeMSL: Double?
  /// Metres, from 0.1 mm.
  public var horizontalAccuracy: Double?
  public var verticalAccuracy: Double?
  var dropped: UInt8 = 0

  public init(validating payload: UnsafeRawBufferPointer) throws(UBXRejection) {
    let p = UBXBytes(payload)
    try p.require(36)
    guard p.u1(0) == 0 else { throw .unknownVersion }
    iTOW = p.u4(4)
    let invalid = p.u1(3) & 0x01 != 0
    let lonHp = p.i1(24)
    let latHp = p.i1(25)
    let heightHp = p.i1(26)
    let mslHp = p.i1(27)
    if !invalid {
      if (-99...99).contains(lonHp) && (-99...99).contains(latHp) {
        position = Position(
          ubloxLatitude: Int64(p.i4(12)) * 100 + Int64(latHp),
          longitude: Int64(p.i4(8)) * 100 + Int64(lonHp), digits: 9)
      }
      if position == nil { dropped += 1 }
      if (-9...9).contains(heightHp) {
        altitudeHAE = (Double(p.i4(16)) * 10 + Double(heightHp)) / 10_000
      } else {
        dropped += 1
      }
      if (-9...9).contains(mslHp) {
        altitudeMSL = (Double(p.i4(20)) * 10 + Double(mslHp)) / 10_000
      } else {
        dropped += 1
      }
    }
    horizontalAccuracy = p.u4(28) == .max ? nil : Double(p.u4(28)) / 10_000
    verticalAccuracy = p.u4(32) == .max ? nil : Double(p.u4(32)) / 10_000
  }
}

// B5 62 01 01 14 00
// 10 E6 B9 09 EA C8 D9 E5 35 36 60 04 E4 65 D8 E4 93 07 00 00
// AC 25
// (ublox-zed-f9p-hp.log: -4387120.86, 734141.97, -4555801.88 m, pAcc 19.39 m)

/// `UBX-NAV-POSECEF` (01 01): the position in earth-centred, earth-fixed coordinates.
public struct UBXNavPosECEF: UBXEpochMessage, Sendable, Hashable {
  public static let messageClass: UInt8 = 0x01
  public static let messageID: UInt8 = 0x01
  static var role: CycleRole { .untimed }

  public var iTOW: UInt32
  /// Metres (from centimetres).
  public var x: Double
  public var y: Double
  public var z: Double
  /// Position accuracy, metres (`pAcc`).
  public var accuracy: Double?

  public init(validating payload: UnsafeRawBufferPointer) throws(UBXRejection) {
    let p = UBXBytes(payload)
    try p.require(20)
    iTOW = p.u4(0)
    x = Double(p.i4(4)) / 100
    y = Double(p.i4(8)) / 100
    z = Double(p.i4(12)) / 100
    accuracy = p.u4(16) == .max ? nil : Double(p.u4(16)) / 100
  }
}

// B5 62 01 11 14 00
// 10 E6 B9 09 ED FF FF FF 07 00 00 00 10 00 00 00 5A 00 00 00
// 39 26
// (ublox-zed-f9p-hp.log: -0.19, 0.07, 0.16 m/s, sAcc 0.90 m/s)

/// `UBX-NAV-VELECEF` (01 11): the velocity in earth-centred, earth-fixed coordinates.
public struct UBXNavVelECEF: UBXEpochMessage, Sendable, Hashable {
  public static let messageClass: UInt8 = 0x01
  public static let messageID: UInt8 = 0x11
  static var role: CycleRole { .untimed }

  public var iTOW: UInt32
  /// m/s (from cm/s).
  public var x: Double
  public var y: Double
  public var z: Double
  /// Speed accuracy, m/s (`sAcc`).
  public var accuracy: Double?

  public init(validating payload: UnsafeRawBufferPointer) throws(UBXRejection) {
    let p = UBXBytes(payload)
    try p.require(20)
    iTOW = p.u4(0)
    x = Double(p.i4(4)) / 100
    y = Double(p.i4(8)) / 100
    z = Double(p.i4(12)) / 100
    accuracy = p.u4(16) == .max ? nil : Double(p.u4(16)) / 100
  }
}

// B5 62 01 12 24 00
// 18 F5 92 00 FF FF FF FF FF FF FF FF 00 00 00 00 01 00 00 00 01 00 00 00
// 00 00 00 00 0C 00 00 00 80 A8 12 01
// 17 3E
// (ublox-neo-f9v.log: standing still)

/// `UBX-NAV-VELNED` (01 12): velocity north-east-down, ground speed and heading.
public struct UBXNavVelNED: UBXEpochMessage, Sendable, Hashable {
  public static let messageClass: UInt8 = 0x01
  public static let messageID: UInt8 = 0x12
  static var role: CycleRole { .untimed }

  public var iTOW: UInt32
  /// m/s (from cm/s).
  public var velocityNorth: Double
  public var velocityEast: Double
  public var velocityDown: Double
  /// Ground speed, m/s; `nil` when beyond what a 32-bit signed field holds (not a speed).
  public var groundSpeed: Double?
  /// Heading of motion, degrees, 0 ..< 360; `nil` outside that.
  public var heading: Double?
  /// Speed accuracy, m/s, and course accuracy, degrees.
  public var speedAccuracy: Double?
  public var headingAccuracy: Double?
  var dropped: UInt8 = 0

  public init(validating payload: UnsafeRawBufferPointer) throws(UBXRejection) {
    let p = UBXBytes(payload)
    try p.require(36)
    iTOW = p.u4(0)
    velocityNorth = Double(p.i4(4)) / 100
    velocityEast = Double(p.i4(8)) / 100
    velocityDown = Double(p.i4(12)) / 100
    let speed = p.u4(20)
    if speed <= UInt32(Int32.max) { groundSpeed = Double(speed) / 100 } else { dropped += 1 }
    let course = p.i4(24)
    if (0..<36_000_000).contains(course) { heading = Double(course) * 1e-5 } else { dropped += 1 }
    speedAccuracy = p.u4(28) == .max ? nil : Double(p.u4(28)) / 100
    headingAccuracy = p.u4(32) == .max ? nil : Double(p.u4(32)) * 1e-5
  }
}

// B5 62 01 06 34 00
// A0 66 17 19 0B 11 00 00 E8 07 03 DD FE 24 C7 F1 55 36 9F E8 A9 C7 4F 1A
// A5 00 00 00 01 00 00 00 01 00 00 00 FF FF FF FF 02 00 00 00 AD 00 02 09
// 4A 64 03 00
// 2F 17
// (ublox-neo-m8t.log: week 2024, iTOW 420964000 ms, fix type 3, flags 0xdd)

/// `UBX-NAV-SOL` (01 06): the navigation solution of u-blox 6 and older (still sent by
/// u-blox 8 timing firmware): fix type, ECEF position and velocity, time as week and time of
/// week; no geodetic position.
public struct UBXNavSol: UBXEpochMessage, Sendable, Hashable {
  public static let messageClass: UInt8 = 0x01
  public static let messageID: UInt8 = 0x06
  static var role: CycleRole { .position }

  public var iTOW: UInt32
  /// Fraction of `iTOW`, nanoseconds (−500 000 … 500 000); `nil` outside that range.
  public var fractionalTimeOfWeek: Int32?
  /// GPS week, when `WKNSET`.
  public var week: Int?
  /// Whether `iTOW` is valid (`TOWSET`).
  public var timeOfWeekValid: Bool
  public var fixType: UBXFixType?
  public var gnssFixOK: Bool
  public var differential: Bool
  /// ECEF position, metres (from cm), and its accuracy (`pAcc`).
  public var ecefX: Double
  public var ecefY: Double
  public var ecefZ: Double
  public var positionAccuracy: Double?
  /// ECEF velocity, m/s (from cm/s), and its accuracy (`sAcc`).
  public var ecefVX: Double
  public var ecefVY: Double
  public var ecefVZ: Double
  public var speedAccuracy: Double?
  public var pdop: Double
  public var satellitesUsed: Int
  var dropped: UInt8 = 0

  public init(validating payload: UnsafeRawBufferPointer) throws(UBXRejection) {
    let p = UBXBytes(payload)
    try p.require(52)
    iTOW = p.u4(0)
    let fraction = p.i4(4)
    if (-500_000...500_000).contains(fraction) {
      fractionalTimeOfWeek = fraction
    } else {
      dropped += 1
    }
    let flags = p.u1(11)
    week = flags & 0x04 != 0 ? Int(p.i2(8)) : nil
    timeOfWeekValid = flags & 0x08 != 0
    fixType = UBXFixType(rawValue: p.u1(10))
    if fixType == nil { dropped += 1 }
    gnssFixOK = flags & 0x01 != 0
    differential = flags & 0x02 != 0
    ecefX = Double(p.i4(12)) / 100
    ecefY = Double(p.i4(16)) / 100
    ecefZ = Double(p.i4(20)) / 100
    positionAccuracy = p.u4(24) == .max ? nil : Double(p.u4(24)) / 100
    ecefVX = Double(p.i4(28)) / 100
    ecefVY = Double(p.i4(32)) / 100
    ecefVZ = Double(p.i4(36)) / 100
    speedAccuracy = p.u4(40) == .max ? nil : Double(p.u4(40)) / 100
    pdop = Double(p.u2(44)) / 100
    satellitesUsed = Int(p.u1(47))
  }
}

// B5 62 01 04 12 00
// 10 E6 B9 09 8D 00 7D 00 41 00 63 00 4D 00 3C 00 30 00
// 36 A1
// (ublox-zed-f9p-hp.log: gDOP 1.41, pDOP 1.25, tDOP 0.65, vDOP 0.99, hDOP 0.77, nDOP 0.60, eDOP
// 0.48)

/// `UBX-NAV-DOP` (01 04): dilutions of precision. gpsd prints `xdop` from the east and `ydop`
/// from the north DOP.
public struct UBXNavDOP: UBXEpochMessage, Sendable, Hashable {
  public static let messageClass: UInt8 = 0x01
  public static let messageID: UInt8 = 0x04
  static var role: CycleRole { .untimed }

  public var iTOW: UInt32
  public var gdop: Double
  public var pdop: Double
  public var tdop: Double
  public var vdop: Double
  public var hdop: Double
  public var ndop: Double
  public var edop: Double

  public init(validating payload: UnsafeRawBufferPointer) throws(UBXRejection) {
    let p = UBXBytes(payload)
    try p.require(18)
    iTOW = p.u4(0)
    gdop = Double(p.u2(4)) / 100
    pdop = Double(p.u2(6)) / 100
    tdop = Double(p.u2(8)) / 100
    vdop = Double(p.u2(10)) / 100
    hdop = Double(p.u2(12)) / 100
    ndop = Double(p.u2(14)) / 100
    edop = Double(p.u2(16)) / 100
  }
}

/// NAV-STATUS's spoofing detection (`spoofDetState`, protocol 18 and later).
public enum UBXSpoofingState: UInt8, Sendable, Hashable {
  case unknown = 0
  case noSpoofing = 1
  case spoofingIndicated = 2
  case multipleSpoofingIndications = 3
}

// B5 62 01 03 10 00
// 18 DE 2D 0E 05 DD 00 08 FC 3A 00 00 CE E2 01 00
// 16 74
// (u-blox-m8t-time.log: fix type 5, time to first fix 15.100 s)

/// `UBX-NAV-STATUS` (01 03): the fix type and its flags, time to first fix, time since
/// start-up, the spoofing state and the carrier solution.
public struct UBXNavStatus: UBXEpochMessage, Sendable, Hashable {
  public static let messageClass: UInt8 = 0x01
  public static let messageID: UInt8 = 0x03
  static var role: CycleRole { .untimed }

  public var iTOW: UInt32
  public var fixType: UBXFixType?
  public var gnssFixOK: Bool
  public var differential: Bool
  public var weekValid: Bool
  public var timeOfWeekValid: Bool
  /// Time to first fix, seconds (`ttff`); `nil` before the first fix (0).
  public var timeToFirstFix: Double?
  /// Milliseconds since start-up or reset (`msss`).
  public var millisecondsSinceStartup: UInt32
  public var spoofing: UBXSpoofingState
  public var carrierSolution: UBXCarrierSolution?

  public init(validating payload: UnsafeRawBufferPointer) throws(UBXRejection) {
    let p = UBXBytes(payload)
    try p.require(16)
    iTOW = p.u4(0)
    fixType = UBXFixType(rawValue: p.u1(4))
    let flags = p.u1(5)
    gnssFixOK = flags & 0x01 != 0
    differential = flags & 0x02 != 0
    weekValid = flags & 0x04 != 0
    timeOfWeekValid = flags & 0x08 != 0
    let flags2 = p.u1(7)
    spoofing = UBXSpoofingState(rawValue: (flags2 >> 3) & 0x03)!
    carrierSolution = UBXCarrierSolution(rawValue: flags2 >> 6)
    let ttff = p.u4(8)
    timeToFirstFix = ttff == 0 ? nil : Double(ttff) / 1000
    millisecondsSinceStartup = p.u4(12)
  }
}

// B5 62 01 61 04 00
// 10 E6 B9 09
// 1E 34
// (ublox-zed-f9p-hp.log: the end of the epoch of the NAV-PVT sample)

/// `UBX-NAV-EOE` (01 61): the last navigation message of an epoch (u-blox 8 protocol 18 and
/// later, when enabled).
public struct UBXNavEOE: UBXEpochMessage, Sendable, Hashable {
  public static let messageClass: UInt8 = 0x01
  public static let messageID: UInt8 = 0x61
  /// Its time only: an epoch of nothing else is no fix.
  static var role: CycleRole { .timeOnly }

  public var iTOW: UInt32

  public init(validating payload: UnsafeRawBufferPointer) throws(UBXRejection) {
    let p = UBXBytes(payload)
    try p.require(4)
    iTOW = p.u4(0)
  }
}
