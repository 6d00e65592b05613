/// u-blox binary (UBX) messages decoded straight from a frame's payload.
///
/// Every message type has the sample frame it was written against above it, and reads its
/// fields at the offsets of the u-blox interface descriptions (u-blox 8 / M8 Receiver
/// Description incl. Protocol Specification, UBX-13003221; ZED-F9P Interface Description,
/// UBX-18010854; u-blox 6 Receiver Description, GPS.G6-SW-10018, for NAV-SOL and
/// NAV-SVINFO). Nothing is allocated: the fixed part of a message is read into a value, and
/// a message's repeated blocks (NAV-SAT's satellites, NAV-SIG's signals, MON-RF's RF blocks,
/// MON-VER's extensions) are read in place through a view of the payload, valid only while
/// the payload is (inside the closure the frame was passed to, as for ``RawSentence``).
///
/// A payload whose length cannot be the message's (shorter than its fixed part, or fewer
/// bytes than its own count of blocks needs) is refused with a ``UBXRejection`` and never
/// read past; a field that holds a value the receiver cannot mean (a latitude beyond 90°, a
/// date the calendar has not, a flag that says the field is invalid) is left `nil` and the
/// rest of the message stands. docs/ubx.md lists the messages and what each field becomes.
public enum UBXMessage {
  case navPVT(UBXNavPVT)
  case hnrPVT(UBXHNRPVT)
  case navPosLLH(UBXNavPosLLH)
  case navHPPosLLH(UBXNavHPPosLLH)
  case navPosECEF(UBXNavPosECEF)
  case navVelNED(UBXNavVelNED)
  case navVelECEF(UBXNavVelECEF)
  case navSol(UBXNavSol)
  case navDOP(UBXNavDOP)
  case navStatus(UBXNavStatus)
  case navEOE(UBXNavEOE)
  case navTimeUTC(UBXNavTimeUTC)
  case navTimeGPS(UBXNavTimeGPS)
  case navSat(UBXNavSat)
  case navSVInfo(UBXNavSVInfo)
  case navSig(UBXNavSig)
  case timTP(UBXTimTP)
  case monRF(UBXMonRF)
  case monHW(UBXMonHW)
  case monVer(UBXMonVer)

  /// Decodes `frame`: `nil` for a class and ID this module does not decode (acknowledgements,
  /// configuration, raw measurements …); throws when the payload's length cannot be the
  /// message's.
  public init?(_ frame: UBXFrameView) throws(UBXRejection) {
    let payload = UnsafeRawBufferPointer(frame.payload)
    switch (frame.messageClass, frame.messageID) {
    case (0x01, 0x07): self = .navPVT(try UBXNavPVT(validating: payload))
    case (0x28, 0x00): self = .hnrPVT(try UBXHNRPVT(validating: payload))
    case (0x01, 0x02): self = .navPosLLH(try UBXNavPosLLH(validating: payload))
    case (0x01, 0x14): self = .navHPPosLLH(try UBXNavHPPosLLH(validating: payload))
    case (0x01, 0x01): self = .navPosECEF(try UBXNavPosECEF(validating: payload))
    case (0x01, 0x12): self = .navVelNED(try UBXNavVelNED(validating: payload))
    case (0x01, 0x11): self = .navVelECEF(try UBXNavVelECEF(validating: payload))
    case (0x01, 0x06): self = .navSol(try UBXNavSol(validating: payload))
    case (0x01, 0x04): self = .navDOP(try UBXNavDOP(validating: payload))
    case (0x01, 0x03): self = .navStatus(try UBXNavStatus(validating: payload))
    case (0x01, 0x61): self = .navEOE(try UBXNavEOE(validating: payload))
    case (0x01, 0x21): self = .navTimeUTC(try UBXNavTimeUTC(validating: payload))
    case (0x01, 0x20): self = .navTimeGPS(try UBXNavTimeGPS(validating: payload))
    case (0x01, 0x35): self = .navSat(try UBXNavSat(validating: payload))
    case (0x01, 0x30): self = .navSVInfo(try UBXNavSVInfo(validating: payload))
    case (0x01, 0x43): self = .navSig(try UBXNavSig(validating: payload))
    case (0x0D, 0x01): self = .timTP(try UBXTimTP(validating: payload))
    case (0x0A, 0x38): self = .monRF(try UBXMonRF(validating: payload))
    case (0x0A, 0x09): self = .monHW(try UBXMonHW(validating: payload))
    case (0x0A, 0x04): self = .monVer(try UBXMonVer(validating: payload))
    default: return nil
    }
  }

  /// The GPS time of week (ms) the message belongs to, for the messages that carry one: the
  /// key by which the messages of one navigation epoch belong together.
  public var timeOfWeek: UInt32? {
    switch self {
    case .navPVT(let m): return m.iTOW
    case .hnrPVT(let m): return m.iTOW
    case .navPosLLH(let m): return m.iTOW
    case .navHPPosLLH(let m): return m.iTOW
    case .navPosECEF(let m): return m.iTOW
    case .navVelNED(let m): return m.iTOW
    case .navVelECEF(let m): return m.iTOW
    case .navSol(let m): return m.iTOW
    case .navDOP(let m): return m.iTOW
    case .navStatus(let m): return m.iTOW
    case .navEOE(let m): return m.iTOW
    case .navTimeUTC(let m): return m.iTOW
    case .navTimeGPS(let m): return m.iTOW
    case .navSat(let m): return m.iTOW
    case .navSVInfo(let m): return m.iTOW
    case .navSig(let m): return m.iTOW
    case .timTP, .monRF, .monHW, .monVer: return nil
    }
  }

  /// Fields the decoder left out because they held a value the receiver cannot mean.
  public var droppedFields: Int {
    switch self {
    case .navPVT(let m): return Int(m.dropped)
    case .hnrPVT(let m): return Int(m.dropped)
    case .navPosLLH(let m): return Int(m.dropped)
    case .navHPPosLLH(let m): return Int(m.dropped)
    case .navVelNED(let m): return Int(m.dropped)
    case .navSol(let m): return Int(m.dropped)
    case .navTimeUTC(let m): return Int(m.dropped)
    case .navTimeGPS(let m): return Int(m.dropped)
    case .navPosECEF, .navVelECEF, .navDOP, .navStatus, .navEOE, .navSat, .navSVInfo, .navSig,
      .timTP, .monRF, .monHW, .monVer:
      return 0
    }
  }
}

/// Why a UBX frame with a valid checksum was not decoded: its length field disagrees with
/// the message it names. Counted by ``UBXStatistics``.
public enum UBXRejection: Error, Sendable, Hashable, CaseIterable, CustomStringConvertible {
  /// Shorter than the message's fixed part.
  case shortPayload
  /// The message's own count of repeated blocks (satellites, signals, RF blocks) needs more
  /// bytes than the payload has, or the payload is not its fixed part plus whole blocks.
  case blockCountMismatch
  /// A message version this decoder does not know (the layout after the version byte may
  /// differ).
  case unknownVersion

  public var description: String {
    switch self {
    case .shortPayload: return "payload shorter than the message's fixed part"
    case .blockCountMismatch: return "block count does not fit the payload"
    case .unknownVersion: return "unknown message version"
    }
  }
}

/// What the decoder did with the UBX frames the framer delivered.
public struct UBXStatistics: Sendable, Hashable {
  /// Frames decoded into a ``UBXMessage``.
  public var decoded = 0
  /// Frames of a class and ID the decoder does not decode (acknowledgements, configuration,
  /// raw measurements …), passed on as frames only.
  public var notDecoded = 0
  /// Frames refused, by reason.
  public var shortPayload = 0
  public var blockCountMismatch = 0
  public var unknownVersion = 0
  /// Fields left out of decoded messages as impossible (the messages themselves stand).
  public var droppedFields = 0

  public init() {}

  /// The counter of `reason`.
  public subscript(reason: UBXRejection) -> Int {
    get {
      switch reason {
      case .shortPayload: return shortPayload
      case .blockCountMismatch: return blockCountMismatch
      case .unknownVersion: return unknownVersion
      }
    }
    set {
      switch reason {
      case .shortPayload: shortPayload = newValue
      case .blockCountMismatch: blockCountMismatch = newValue
      case .unknownVersion: unknownVersion = newValue
      }
    }
  }

  /// All frames refused, whatever the reason.
  public var rejected: Int { shortPayload + blockCountMismatch + unknownVersion }
}

// MARK: - Reading the payload

/// Little-endian reads from a payload whose length the caller has checked.
struct UBXBytes {
  let raw: UnsafeRawBufferPointer

  @inline(__always) init(_ raw: UnsafeRawBufferPointer) { self.raw = raw }

  @inline(__always) var count: Int { raw.count }

  @inline(__always) func u1(_ offset: Int) -> UInt8 { raw[offset] }
  @inline(__always) func i1(_ offset: Int) -> Int8 { Int8(bitPattern: raw[offset]) }
  @inline(__always) func u2(_ offset: Int) -> UInt16 {
    UInt16(littleEndian: raw.loadUnaligned(fromByteOffset: offset, as: UInt16.self))
  }
  @inline(__always) func i2(_ offset: Int) -> Int16 { Int16(bitPattern: u2(offset)) }
  @inline(__always) func u4(_ offset: Int) -> UInt32 {
    UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: offset, as: UInt32.self))
  }
  @inline(__always) func i4(_ offset: Int) -> Int32 { Int32(bitPattern: u4(offset)) }

  /// Refuses a payload shorter than `length`.
  @inline(__always)
  func require(_ length: Int) throws(UBXRejection) {
    guard raw.count >= length else { throw .shortPayload }
  }

  /// Refuses a payload without room for `count` blocks of `size` bytes after `header`.
  @inline(__always)
  func require(header: Int, blocks count: Int, of size: Int) throws(UBXRejection) {
    guard raw.count >= header + count * size else { throw .blockCountMismatch }
  }
}

extension Coordinate {
  /// An angle given as an integer number of `10^-digits` degrees (u-blox writes 1e-7°, and
  /// 1e-9° in its high-precision messages), exactly: the minutes of `n · 10^-digits` degrees
  /// are `(n mod 10^digits) · 6 · 10^-(digits-1)`, so nothing is rounded.
  init(scaledDegrees value: Int64, digits: Int) {
    let magnitude = value.magnitude
    let scale = Powers.ten(digits)
    self.init(
      degrees: UInt16(truncatingIfNeeded: magnitude / scale),
      scaledMinutes: (magnitude % scale) * 6, fractionDigits: UInt8(digits - 1),
      isNegative: value < 0)
  }
}

extension Position {
  /// The position of u-blox integer degrees (`10^-digits`), or `nil` when the latitude is
  /// beyond ±90° or the longitude beyond ±180°.
  init?(ubloxLatitude latitude: Int64, longitude: Int64, digits: Int) {
    let scale = Int64(Powers.ten(digits))
    guard latitude.magnitude <= 90 * scale, longitude.magnitude <= 180 * scale else {
      return nil
    }
    self.init(
      latitude: Coordinate(scaledDegrees: latitude, digits: digits),
      longitude: Coordinate(scaledDegrees: longitude, digits: digits))
  }
}

extension UTCTimestamp {
  /// A UBX date and time of day with its signed nanoseconds (NAV-PVT and NAV-TIMEUTC write
  /// `nano` from −1 s to +1 s around the whole second, so 12:00:00 with −1 000 ns is
  /// 11:59:59.999999): `nil` when the date is not in the calendar or the time of day is
  /// impossible.
  init?(
    ubloxYear year: UInt16, month: UInt8, day: UInt8, hour: UInt8, minute: UInt8,
    second: UInt8, nanoseconds: Int32
  ) {
    guard (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60,
      second <= 60, (-1_000_000_000...1_000_000_000).contains(nanoseconds)
    else { return nil }
    let date = UTCDate(year: Int(year), month: month, day: day)
    guard UTCDate(daysSinceUnixEpoch: date.daysSinceUnixEpoch) == date else { return nil }
    if nanoseconds >= 0 && nanoseconds < 1_000_000_000 {
      self.init(
        date: date,
        time: UTCTime(
          hour: hour, minute: minute, second: second, nanoseconds: UInt32(nanoseconds)))
      return
    }
    // Carry into the neighbouring second (and so, rarely, minute, hour or day). A leap
    // second (60) is left as it is: the carry never lands on one.
    var days = date.daysSinceUnixEpoch
    var seconds = (Int(hour) * 60 + Int(minute)) * 60 + Int(second)
    var nanos = Int(nanoseconds)
    if nanos < 0 {
      nanos += 1_000_000_000
      seconds -= 1
    } else {
      nanos -= 1_000_000_000
      seconds += 1
    }
    if seconds < 0 {
      seconds += 86_400
      days -= 1
    } else if seconds >= 86_400 {
      seconds -= 86_400
      days += 1
    }
    self.init(
      date: UTCDate(daysSinceUnixEpoch: days),
      time: UTCTime(
        hour: UInt8(seconds / 3600), minute: UInt8(seconds / 60 % 60),
        second: UInt8(seconds % 60), nanoseconds: UInt32(nanos)))
  }
}

/// The satellite numbering gpsd reports for u-blox's `gnssId`/`svId` (gpsd's ubx2_to_prn,
/// after Appendix A of the ZED-F9P Interface Description): GPS 1–32, SBAS 120–151 as 33–64
/// and 152–158 as themselves, Galileo 301–336, BeiDou 401–463, IMES 173–182, QZSS 193–199,
/// GLONASS 65–96; `nil` for a number outside its system's range (GLONASS 255: tracked but
/// not identified).
enum UBXSatelliteNumbering {
  static func prn(gnssID: UInt8, svID: UInt8) -> (Constellation, Int)? {
    let sv = Int(svID)
    guard sv >= 1 else { return nil }
    switch gnssID {
    case 0: return sv <= 32 ? (.gps, sv) : nil
    case 1:
      if (120...151).contains(sv) { return (.sbas, sv - 87) }
      if (152...158).contains(sv) { return (.sbas, sv) }
      return nil
    case 2:
      if sv <= 36 { return (.galileo, sv + 300) }
      if (211...246).contains(sv) { return (.galileo, sv + 90) }
      return nil
    case 3: return sv <= 63 ? (.beidou, sv + 400) : nil
    case 4: return sv <= 10 ? (.imes, sv + 172) : nil
    case 5: return sv <= 7 ? (.qzss, sv + 192) : nil
    case 6: return sv <= 32 ? (.glonass, sv + 64) : nil
    case 7: return sv <= 14 ? (.navic, sv + 800) : nil
    default: return nil
    }
  }

  /// The system and number within it of the u-blox 6 and older single numbering (NAV-SVINFO's
  /// `svid`): GPS 1–32, SBAS 120–158, GLONASS 65–96, BeiDou 33–64 and 159–163, QZSS 193–199,
  /// IMES 173–182, Galileo 211–246 (gpsd's ubx_to_prn).
  static func identity(legacySVID id: UInt8) -> (gnssID: UInt8, svID: UInt8)? {
    switch id {
    case 1...32: return (0, id)
    case 33...64: return (3, id - 27)
    case 65...96: return (6, id - 64)
    case 120...158: return (1, id)
    case 159...163: return (3, id - 158)
    case 173...182: return (4, id - 172)
    case 193...199: return (5, id - 192)
    case 211...246: return (2, id - 210)
    default: return nil
    }
  }
}

/// UBX's integer accuracies and rates as Fix's units: `nil` for the sentinel a receiver
/// writes when it has no estimate.
enum UBXUnits {
  /// Millimetres (or mm/s) to metres; `UInt32.max` is "no estimate".
  @inline(__always)
  static func metres(millimetres value: UInt32) -> Double? {
    value == .max ? nil : Double(value) / 1000
  }
}
