/// CASIC binary messages (Zhongke AT6558 / AT6558R: Quectel L76K, ATGM336H) decoded straight
/// from a frame's payload.
///
/// Layouts from the CASIC Multimode Satellite Navigation Receiver Protocol Specification
/// V4.2.0.3 (2020-01-06), its binary messages (NAV-PV section 2.7.4, NAV-TIMEUTC 2.7.5,
/// NAV-GPSINFO/BDSINFO/GLNINFO 2.7.7–2.7.9; NAV-DOP, ACK-ACK, ACK-NAK); every message type has
/// the sample frame it was written against above it (corpus/gpsd-casic/quectel-l76k-binary.log).
/// Nothing is allocated: a message's fixed part is read into a value, the satellites of
/// NAV-*INFO in place through a view of the payload, valid only while the payload is.
///
/// A payload shorter than its message's fixed part, or than its own count of satellites needs,
/// is refused (``CASICRejection``) and never read past; a field that holds a value the receiver
/// cannot mean (a latitude beyond 90°, a NaN, a date the calendar has not) is left `nil` and
/// counted, the rest of the message standing. docs/casic.md lists what each field becomes.
public enum CASICMessage {
  case navPV(CASICNavPV)
  case navTimeUTC(CASICNavTimeUTC)
  case navDOP(CASICNavDOP)
  /// NAV-GPSINFO, NAV-BDSINFO or NAV-GLNINFO.
  case navSatellites(CASICNavSatellites)
  /// ACK-ACK or ACK-NAK: the receiver's answer to a command.
  case acknowledgement(CASICAcknowledgement)

  /// Decodes `frame`: `nil` for a class and ID this module does not decode (NAV-STATUS,
  /// configuration answers, raw measurements …); throws when the payload's length cannot be
  /// the message's.
  public init?(_ frame: CASICFrameView) throws(CASICRejection) {
    let payload = UnsafeRawBufferPointer(frame.payload)
    switch (frame.messageClass, frame.messageID) {
    case (0x01, 0x03): self = .navPV(try CASICNavPV(validating: payload))
    case (0x01, 0x10): self = .navTimeUTC(try CASICNavTimeUTC(validating: payload))
    case (0x01, 0x01): self = .navDOP(try CASICNavDOP(validating: payload))
    case (0x01, 0x20), (0x01, 0x21), (0x01, 0x22):
      self = .navSatellites(try CASICNavSatellites(validating: payload, id: frame.messageID))
    case (0x05, 0x00), (0x05, 0x01):
      guard payload.count >= 4 else { throw .shortPayload }
      self = .acknowledgement(
        CASICAcknowledgement(
          messageClass: payload[0], messageID: payload[1], accepted: frame.messageID == 0x01))
    default: return nil
    }
  }

  /// The receiver's run time (ms since power-on) the message belongs to, for the navigation
  /// messages: the key by which the messages of one epoch belong together (docs/casic.md,
  /// "Epochs").
  public var runTime: UInt32? {
    switch self {
    case .navPV(let m): return m.runTime
    case .navTimeUTC(let m): return m.runTime
    case .navDOP(let m): return m.runTime
    case .navSatellites(let m): return m.runTime
    case .acknowledgement: return nil
    }
  }

  /// Fields the decoder left out because they held a value the receiver cannot mean.
  public var droppedFields: Int {
    switch self {
    case .navPV(let m): return Int(m.dropped)
    case .navTimeUTC(let m): return Int(m.dropped)
    case .navDOP(let m): return Int(m.dropped)
    case .navSatellites, .acknowledgement: return 0
    }
  }
}

/// Why a CASIC frame with a valid checksum was not decoded: the reasons are UBX's (a payload
/// shorter than the message's fixed part, or than its count of satellites needs).
public typealias CASICRejection = UBXRejection

/// What the decoder did with the CASIC frames the framer delivered.
public struct CASICStatistics: Sendable, Hashable {
  /// Frames decoded into a ``CASICMessage``.
  public var decoded = 0
  /// Frames of a class and ID the decoder does not decode (NAV-STATUS, configuration …).
  public var notDecoded = 0
  /// Frames refused because their payload cannot be their message's.
  public var rejected = 0
  /// Fields left out of decoded messages as impossible (the messages themselves stand).
  public var droppedFields = 0

  public init() {}
}

/// The receiver's answer to a CASIC command (ACK-ACK, ACK-NAK, class 05): the class
/// and ID of the message it answers, and whether it accepted it. What a command exchange
/// waits for after sending a CFG message.
public struct CASICAcknowledgement: Sendable, Hashable, CustomStringConvertible {
  /// Class of the message acknowledged (CFG is `0x06`).
  public var messageClass: UInt8
  /// ID of the message acknowledged.
  public var messageID: UInt8
  /// ACK-ACK (`true`) or ACK-NAK (`false`).
  public var accepted: Bool

  public init(messageClass: UInt8, messageID: UInt8, accepted: Bool) {
    self.messageClass = messageClass
    self.messageID = messageID
    self.accepted = accepted
  }

  /// The acknowledgement `frame` carries; `nil` for any other frame, or an acknowledgement
  /// too short to name a message.
  public init?(_ frame: CASICFrameView) {
    guard case .acknowledgement(let ack)? = try? CASICMessage(frame) else { return nil }
    self = ack
  }

  public var description: String {
    "CASIC ACK-\(accepted ? "ACK" : "NAK") \(Self.hex(messageClass))-\(Self.hex(messageID))"
  }

  private static func hex(_ byte: UInt8) -> String {
    (byte < 0x10 ? "0" : "") + String(byte, radix: 16, uppercase: true)
  }
}

/// NAV-PV's `posValid` and `velValid` (spec 2.7.4, remarks): how the position or velocity
/// was obtained. Only the last three are a solution.
public enum CASICValidity: UInt8, Sendable, Hashable {
  case invalid = 0
  case external = 1
  case roughEstimate = 2
  /// The last solution, held.
  case held = 3
  case deadReckoning = 4
  case fastMode = 5
  case twoD = 6
  case threeD = 7
  case gnssAndDeadReckoning = 8

  /// The fix mode gpsd gives it (driver_casic.c, msg_nav_pv): 2D, 3D, 3D; else no fix.
  public var mode: FixMode {
    switch self {
    case .twoD: return .twoD
    case .threeD, .gnssAndDeadReckoning: return .threeD
    default: return .noFix
    }
  }
}

extension UBXBytes {
  /// A little-endian IEEE single (CASIC's `R4`).
  @inline(__always) func r4(_ offset: Int) -> Double { Double(Float(bitPattern: u4(offset))) }
  /// A little-endian IEEE double (CASIC's `R8`).
  @inline(__always) func r8(_ offset: Int) -> Double {
    Double(bitPattern: UInt64(u4(offset)) | UInt64(u4(offset + 4)) << 32)
  }
}

/// A CASIC float the receiver can mean: finite; `nil` (and counted in `dropped`) otherwise.
@inline(__always)
func casicFinite(_ value: Double, _ dropped: inout UInt8) -> Double? {
  if value.isFinite { return value }
  dropped &+= 1
  return nil
}

/// A CASIC dilution of precision the receiver can mean: finite and not negative (a float, unlike
/// UBX's unsigned integers); `nil` and counted otherwise. 99 and more is kept here and left
/// out as "no value" where it joins a fix, as UBX's 99.99.
@inline(__always)
func casicDOP(_ value: Double, _ dropped: inout UInt8) -> Double? {
  guard let value = casicFinite(value, &dropped) else { return nil }
  if value >= 0 { return value }
  dropped &+= 1
  return nil
}

/// The standard deviation of a CASIC accuracy, which the spec gives as a variance (m², (m/s)²,
/// deg²): `nil` for 0 (not computed), for `CASICNavPV.noHeadingAccuracy`, and (counted) for a
/// negative or non-finite one.
@inline(__always)
func casicSigma(_ variance: Double, _ dropped: inout UInt8) -> Double? {
  guard let variance = casicFinite(variance, &dropped) else { return nil }
  if variance < 0 { dropped &+= 1 }
  guard variance > 0, variance < CASICNavPV.noHeadingAccuracy else { return nil }
  return variance.squareRoot()
}

// BA CE 50 00 01 03
// 08 5C 03 11 07 07 07 11 0A 04 03 00 8A 03 A8 3F 05 3E CE 59 E3 94 5E C0
// 0F 9B 1B 0E BB D4 47 40 28 16 60 42 BF DF AC C1 78 24 21 40 54 0C 9E 40
// 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 44 2C 8F 43
// D4 6D 0D 3D 00 24 74 49
// 70 92 23 1C
// (quectel-l76k-binary.log, its first NAV-PV: run time 285 432 840 ms, position and velocity
// 3D, 17 satellites, 47.6619585° −122.3263764°, 56.02 m above the ellipsoid, geoid −21.61 m,
// hAcc 2.52 m², heading 286.35°, cAcc 1e6: no heading accuracy)

/// `NAV-PV` (01 03), 80 bytes: the navigation solution of one epoch, position and velocity.
public struct CASICNavPV: Sendable, Hashable {
  public static let messageClass: UInt8 = 0x01
  public static let messageID: UInt8 = 0x03
  /// The `cAcc` a receiver without a heading accuracy writes (deg², gpsd's
  /// CASIC_CACC_UNKNOWN); no real variance comes near it.
  static let noHeadingAccuracy = 1e6

  /// Milliseconds since power-on.
  public var runTime: UInt32
  /// `nil` for a value the spec does not define.
  public var positionValidity: CASICValidity?
  public var velocityValidity: CASICValidity?
  /// Satellites used in the solution (`numSV`).
  public var satellitesUsed: Int
  public var pdop: Double?
  /// `nil` when the receiver has no position (validity below 2D) or gave an impossible one.
  public var position: Position?
  /// Height above the ellipsoid, metres; with a 3D position only.
  public var altitudeHAE: Double?
  /// Geoid separation (`sepGeoid`), metres: the height above sea level is `altitudeHAE` less
  /// it.
  public var geoidSeparation: Double?
  /// Standard deviations, metres, of the spec's variances `hAcc`, `vAcc`.
  public var horizontalAccuracy: Double?
  public var verticalAccuracy: Double?
  /// Velocity north, east, up, m/s; ground speed, m/s, heading, degrees; with a velocity
  /// validity of 2D or better.
  public var velocityNorth: Double?
  public var velocityEast: Double?
  /// With a 3D velocity only.
  public var velocityUp: Double?
  public var groundSpeed: Double?
  public var heading: Double?
  /// Standard deviations of `sAcc` (m/s) and `cAcc` (degrees).
  public var speedAccuracy: Double?
  public var headingAccuracy: Double?
  /// Fields left out as impossible.
  public var dropped: UInt8 = 0

  /// The height above sea level: `altitudeHAE` less the geoid separation.
  public var altitudeMSL: Double? {
    guard let altitudeHAE, let geoidSeparation else { return nil }
    return altitudeHAE - geoidSeparation
  }

  public init(validating payload: UnsafeRawBufferPointer) throws(CASICRejection) {
    let p = UBXBytes(payload)
    try p.require(80)
    runTime = p.u4(0)
    positionValidity = CASICValidity(rawValue: p.u1(4))
    velocityValidity = CASICValidity(rawValue: p.u1(5))
    satellitesUsed = Int(p.u1(7))
    pdop = casicDOP(p.r4(12), &dropped)
    let positionMode = positionValidity?.mode ?? .noFix
    if positionMode != .noFix {
      let longitude = casicFinite(p.r8(16), &dropped)
      let latitude = casicFinite(p.r8(24), &dropped)
      if let latitude, let longitude {
        // To 1e-9°, gpsd's printed precision (0.1 mm); checked before the conversion, which
        // traps beyond the integers' range.
        if abs(latitude) <= 90 && abs(longitude) <= 180 {
          position = Position(
            ubloxLatitude: Int64((latitude * 1e9).rounded()),
            longitude: Int64((longitude * 1e9).rounded()), digits: 9)
        } else {
          dropped &+= 1
        }
      }
      geoidSeparation = casicFinite(p.r4(36), &dropped)
      horizontalAccuracy = casicSigma(p.r4(40), &dropped)
      if positionMode == .threeD {
        altitudeHAE = casicFinite(p.r4(32), &dropped)
        verticalAccuracy = casicSigma(p.r4(44), &dropped)
      }
    }
    let velocityMode = velocityValidity?.mode ?? .noFix
    if velocityMode != .noFix {
      velocityNorth = casicFinite(p.r4(48), &dropped)
      velocityEast = casicFinite(p.r4(52), &dropped)
      if velocityMode == .threeD { velocityUp = casicFinite(p.r4(56), &dropped) }
      groundSpeed = casicFinite(p.r4(64), &dropped)
      heading = casicFinite(p.r4(68), &dropped)
      speedAccuracy = casicSigma(p.r4(72), &dropped)
      headingAccuracy = casicSigma(p.r4(76), &dropped)
    }
  }
}

// BA CE 18 00 01 10
// 08 5C 03 11 CA EA CC 40 00 35 09 B6 00 00 EA 07 08 06 07 12 04 07 00 03
// F6 88 CB 34
// (quectel-l76k-binary.log, its first NAV-TIMEUTC: 2026-08-06 07:18:04.000, valid 07, time
// from GPS, date agreed by several satellites)

/// `NAV-TIMEUTC` (01 10), 24 bytes: the UTC date and time of the epoch.
public struct CASICNavTimeUTC: Sendable, Hashable {
  public static let messageClass: UInt8 = 0x01
  public static let messageID: UInt8 = 0x10

  /// Milliseconds since power-on.
  public var runTime: UInt32
  /// `valid`: B0 time of week, B1 week, B2 leap seconds known.
  public var validity: UInt8
  /// `timeSrc`: 0 GPS, 1 BDS, 2 GLONASS.
  public var timeSource: UInt8
  /// `dateValid`: 0 none, 1 external, 2 from one satellite, 3 from several.
  public var dateValidity: UInt8
  /// The date and time when `validity` says all three are known and `dateValidity` is not 0
  /// (gpsd's rule); `nil` otherwise, or when the fields are not a date and time.
  public var timestamp: UTCTimestamp?
  /// Fields left out as impossible.
  public var dropped: UInt8 = 0

  /// B0, B1 and B2 of `valid`: UTC is known.
  static let utcKnown: UInt8 = 0x07

  public init(validating payload: UnsafeRawBufferPointer) throws(CASICRejection) {
    let p = UBXBytes(payload)
    try p.require(24)
    runTime = p.u4(0)
    validity = p.u1(21)
    timeSource = p.u1(22)
    dateValidity = p.u1(23)
    guard validity & Self.utcKnown == Self.utcKnown, dateValidity != 0 else { return }
    let milliseconds = p.u2(12)
    if milliseconds < 1000 {
      timestamp = UTCTimestamp(
        ubloxYear: p.u2(14), month: p.u1(16), day: p.u1(17), hour: p.u1(18), minute: p.u1(19),
        second: p.u1(20), nanoseconds: Int32(milliseconds) * 1_000_000)
    }
    if timestamp == nil { dropped &+= 1 }
  }
}

// BA CE 1C 00 01 01
// 08 5C 03 11 8A 03 A8 3F 6D 42 43 3F BD BC 88 3F 3F F6 06 3F B9 1B 0D 3F
// 34 06 33 3F
// 04 77 BF 8D
// (quectel-l76k-binary.log, its first NAV-DOP: PDOP 1.31, HDOP 0.76, VDOP 1.07, NDOP 0.53,
// EDOP 0.55, TDOP 0.70)

/// `NAV-DOP` (01 01), 28 bytes: the dilutions of precision of the epoch's solution.
public struct CASICNavDOP: Sendable, Hashable {
  public static let messageClass: UInt8 = 0x01
  public static let messageID: UInt8 = 0x01

  public var runTime: UInt32
  public var pdop: Double?
  public var hdop: Double?
  public var vdop: Double?
  /// Northing and easting DOP (gpsd's `ydop`, `xdop`).
  public var ndop: Double?
  public var edop: Double?
  public var tdop: Double?
  /// Fields left out as impossible.
  public var dropped: UInt8 = 0

  public init(validating payload: UnsafeRawBufferPointer) throws(CASICRejection) {
    let p = UBXBytes(payload)
    try p.require(28)
    runTime = p.u4(0)
    pdop = casicDOP(p.r4(4), &dropped)
    hdop = casicDOP(p.r4(8), &dropped)
    vdop = casicDOP(p.r4(12), &dropped)
    ndop = casicDOP(p.r4(16), &dropped)
    edop = casicDOP(p.r4(20), &dropped)
    tdop = casicDOP(p.r4(24), &dropped)
  }
}

// BA CE 8C 00 01 20
// 08 5C 03 11 0B 0A 00 00 15 01 C1 61 1E 12 2C 00 5E CD E8 3F 0C 06 C1 63
// 1F 11 9C 00 8B F2 A4 BF …
// 1A 2C 82 09
// (quectel-l76k-binary.log, its first NAV-GPSINFO: 11 satellites in view, 10 used; the
// first, channel 0x15, is GPS 1, flags C1 (used), C/N0 30, elevation 18°, azimuth 44°)

/// `NAV-GPSINFO` (01 20), `NAV-BDSINFO` (01 21), `NAV-GLNINFO` (01 22): the satellites of one
/// system, one layout: an 8-byte header and 12 bytes per satellite.
public struct CASICNavSatellites {
  public var runTime: UInt32
  /// The message ID (0x20 GPS, 0x21 BeiDou, 0x22 GLONASS).
  public var messageID: UInt8
  /// Satellites in view and used, as the header counts them.
  public var inView: Int
  public var used: Int
  /// The satellites, read in place from the payload.
  public let satellites: UBXBlocks<SatelliteBlock>

  /// u-blox's `gnssId` of the message's system: CASIC numbers satellites as u-blox does
  /// within a system (the receiver's own GSV names the same PRNs; gpsd's ubx2_to_prn).
  public var gnssID: UInt8 {
    switch messageID {
    case 0x21: return 3
    case 0x22: return 6
    default: return 0
    }
  }

  public init(validating payload: UnsafeRawBufferPointer, id: UInt8) throws(CASICRejection) {
    let p = UBXBytes(payload)
    try p.require(8)
    runTime = p.u4(0)
    messageID = id
    inView = Int(p.u1(4))
    used = Int(p.u1(5))
    satellites = try UBXBlocks(payload, header: 8, count: inView)
  }

  /// One satellite's block.
  public struct SatelliteBlock: UBXBlock {
    public static let size = 12
    let p: UBXBytes
    public init(block bytes: UnsafeRawBufferPointer) { p = UBXBytes(bytes) }
    /// The tracking channel, 0xFF when the satellite is not tracked.
    public var channel: UInt8 { p.u1(0) }
    public var svID: UInt8 { p.u1(1) }
    /// `flags` (B0: used in the solution) and the signal quality after it, one U2.
    var status: UInt16 { p.u2(2) }
    public var used: Bool { status & 0x0001 != 0 }
    /// Carrier-to-noise ratio, dB-Hz.
    public var carrierToNoise: UInt8 { p.u1(4) }
    /// Degrees.
    public var elevation: Int8 { p.i1(5) }
    /// Degrees.
    public var azimuth: Int16 { p.i2(6) }
    /// Pseudorange residual, metres; `nil` when not finite.
    public var pseudorangeResidual: Double? {
      let value = p.r4(8)
      return value.isFinite ? value : nil
    }

    /// The satellite as a ``SatelliteView`` lists it, in the system of `gnssID`; `nil` for a
    /// number outside the system's range.
    func satellite(gnssID: UInt8) -> Satellite? {
      Satellite(
        gnssID: gnssID, svID: svID, carrierToNoise: carrierToNoise, elevation: elevation,
        azimuth: azimuth, used: used, pseudorangeResidual: pseudorangeResidual)
    }
  }
}
