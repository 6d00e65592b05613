// UBX time: UTC and GPS time of the navigation epoch, and the time pulse. Layouts:
// UBX-13003221 (M8) and UBX-18010854 (F9), sections "UBX-NAV" and "UBX-TIM".

// B5 62 01 21 14 00
// 10 E6 B9 09 1A 00 00 00 F1 0C FE FF E3 07 04 16 15 13 14 37
// 79 C2
// (ublox-zed-f9p-hp.log: 2019-04-22 21:19:20 UTC -127759 ns, valid 0x37)

/// `UBX-NAV-TIMEUTC` (01 21): the epoch's UTC date and time with their validity.
public struct UBXNavTimeUTC: UBXEpochMessage, Sendable, Hashable {
  public static let messageClass: UInt8 = 0x01
  public static let messageID: UInt8 = 0x21
  static var role: CycleRole { .timeOnly }

  public var iTOW: UInt32
  /// Time accuracy, seconds (`tAcc`).
  public var timeAccuracy: Double?
  /// The UTC date and time when `validUTC` says the receiver knows UTC (the leap seconds
  /// included); `nil` otherwise or outside the calendar.
  public var timestamp: UTCTimestamp?
  /// `validTOW` and `validWKN`: the GPS time of week and week are valid.
  public var timeOfWeekValid: Bool
  public var weekValid: Bool
  var dropped: UInt8 = 0

  public init(validating payload: UnsafeRawBufferPointer) throws(UBXRejection) {
    let p = UBXBytes(payload)
    try p.require(20)
    iTOW = p.u4(0)
    timeAccuracy = p.u4(4) == .max ? nil : Double(p.u4(4)) * 1e-9
    let valid = p.u1(19)
    timeOfWeekValid = valid & 0x01 != 0
    weekValid = valid & 0x02 != 0
    if valid & 0x04 != 0 {
      timestamp = UTCTimestamp(
        ubloxYear: p.u2(12), month: p.u1(14), day: p.u1(15), hour: p.u1(16), minute: p.u1(17),
        second: p.u1(18), nanoseconds: p.i4(8))
      if timestamp == nil { dropped += 1 }
    }
  }
}

// B5 62 01 20 10 00
// 10 E6 B9 09 F3 0C FE FF 02 08 12 07 1A 00 00 00
// 22 AB
// (ublox-zed-f9p-hp.log: week 2050, iTOW 163178000 ms, leap seconds 18, valid 0x07)

/// `UBX-NAV-TIMEGPS` (01 20): the epoch's GPS time, and the leap seconds GPS − UTC.
public struct UBXNavTimeGPS: UBXEpochMessage, Sendable, Hashable {
  public static let messageClass: UInt8 = 0x01
  public static let messageID: UInt8 = 0x20
  static var role: CycleRole { .timeOnly }

  public var iTOW: UInt32
  /// Fraction of `iTOW`, nanoseconds (−500 000 … 500 000), when `towValid`.
  public var fractionalTimeOfWeek: Int32?
  /// GPS week, when `weekValid`.
  public var week: Int?
  /// GPS − UTC leap seconds, when `leapSValid` (and not beyond what the receiver can mean).
  public var leapSeconds: Int?
  /// Time accuracy, seconds.
  public var timeAccuracy: Double?
  var dropped: UInt8 = 0

  public init(validating payload: UnsafeRawBufferPointer) throws(UBXRejection) {
    let p = UBXBytes(payload)
    try p.require(16)
    iTOW = p.u4(0)
    let valid = p.u1(11)
    if valid & 0x01 != 0 {
      let fraction = p.i4(4)
      if (-500_000...500_000).contains(fraction) {
        fractionalTimeOfWeek = fraction
      } else {
        dropped += 1
      }
    }
    if valid & 0x02 != 0 { week = Int(p.i2(8)) }
    if valid & 0x04 != 0 {
      // Never negative so far, and far from the I1's limits: 18 s since 2017.
      let leap = Int(p.i1(10))
      if (0...60).contains(leap) { leapSeconds = leap } else { dropped += 1 }
    }
    timeAccuracy = p.u4(12) == .max ? nil : Double(p.u4(12)) * 1e-9
  }
}

/// TIM-TP's time base: the reference of `towMS` and of the pulse.
public enum UBXTimeBase: UInt8, Sendable, Hashable {
  case gnss = 0
  case utc = 1
}

// B5 62 0D 01 10 00
// B0 9B 2D 0E 00 00 00 00 15 EF FF FF 62 08 0B 0F
// 2A 63
// (u-blox-m8t-time.log: next pulse at week 2146, 237870000 ms, quantisation error -4331 ps)

/// `UBX-TIM-TP` (0D 01): the time of the next time pulse (PPS) edge and the quantisation
/// error of that edge, which a time service subtracts from the pulse's arrival.
public struct UBXTimTP: UBXDecodable, Sendable, Hashable {
  public static let messageClass: UInt8 = 0x0D
  public static let messageID: UInt8 = 0x01
  static var role: CycleRole { .none }

  /// Time of week of the next pulse, milliseconds (`towMS`), and its sub-millisecond part in
  /// ms · 2^-32 (`towSubMS`).
  public var pulseTimeOfWeek: UInt32
  public var pulseTimeOfWeekSubmilliseconds: UInt32
  /// Quantisation error of the pulse, seconds (from `qErr` in picoseconds); `nil` when the
  /// receiver flags it invalid (`qErrInvalid`, protocol 32 and later).
  public var quantisationError: Double?
  /// GPS week of the next pulse (`week`).
  public var week: Int
  public var timeBase: UBXTimeBase
  /// Whether UTC is available (`utc`).
  public var utcAvailable: Bool

  public init(validating payload: UnsafeRawBufferPointer) throws(UBXRejection) {
    let p = UBXBytes(payload)
    try p.require(16)
    pulseTimeOfWeek = p.u4(0)
    pulseTimeOfWeekSubmilliseconds = p.u4(4)
    week = Int(p.u2(12))
    let flags = p.u1(14)
    timeBase = UBXTimeBase(rawValue: flags & 0x01)!
    utcAvailable = flags & 0x02 != 0
    quantisationError = flags & 0x10 != 0 ? nil : Double(p.i4(8)) * 1e-12
  }
}
