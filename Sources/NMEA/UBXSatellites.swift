// UBX satellites and signals: NAV-SAT (u-blox 8 and later), NAV-SVINFO (u-blox 6 and
// older), NAV-SIG (u-blox 9 and later). Each is a fixed header and a block per satellite or
// signal; the blocks are read in place through a view of the payload, never copied, so the
// messages are valid only while their payload is. Layouts: UBX-13003221 (M8), UBX-18010854
// (F9), GPS.G6-SW-10018 (u-blox 6).

/// One repeated block of a UBX message (a satellite, a signal, an RF block), read in place.
public protocol UBXBlock {
  /// The block's size in bytes.
  static var size: Int { get }
  /// The block over exactly `size` bytes of the payload.
  init(block bytes: UnsafeRawBufferPointer)
}

/// A message's repeated blocks, in the receiver's order, read in place from the payload:
/// valid only while the payload is.
public struct UBXBlocks<Element: UBXBlock>: RandomAccessCollection {
  let payload: UnsafeRawBufferPointer
  public let count: Int

  /// `count` blocks after `header` bytes of `payload`, or ``UBXRejection/blockCountMismatch``
  /// when the payload is too short for them.
  init(_ payload: UnsafeRawBufferPointer, header: Int, count: Int) throws(UBXRejection) {
    try UBXBytes(payload).require(header: header, blocks: count, of: Element.size)
    self.payload = UnsafeRawBufferPointer(
      rebasing: payload[header..<(header + count * Element.size)])
    self.count = count
  }

  public var startIndex: Int { 0 }
  public var endIndex: Int { count }

  public subscript(index: Int) -> Element {
    precondition(index >= 0 && index < count, "UBX block index out of range")
    let start = index * Element.size
    return Element(block: UnsafeRawBufferPointer(rebasing: payload[start..<(start + Element.size)]))
  }
}

/// One satellite of NAV-SAT, NAV-SVINFO, or one signal of NAV-SIG, as a ``Satellite`` of a
/// ``SatelliteView`` carries it: gpsd's PRN from u-blox's `gnssId` and `svId`.
extension Satellite {
  init?(
    gnssID: UInt8, svID: UInt8, signalID: Int? = nil, carrierToNoise: UInt8,
    elevation: Int8?, azimuth: Int16?, used: Bool, pseudorangeResidual: Double? = nil,
    quality: Int? = nil, health: Int? = nil
  ) {
    guard let (constellation, prn) = UBXSatelliteNumbering.prn(gnssID: gnssID, svID: svID) else {
      return nil
    }
    // A receiver writes an elevation beyond ±90° (−91) and an azimuth beyond 0…360 for a
    // satellite whose orbit it does not know.
    let elevation = elevation.flatMap { (-90...90).contains($0) ? Int($0) : nil }
    let azimuth = azimuth.flatMap { (0...360).contains($0) ? Int($0 % 360) : nil }
    // A C/N0 of 0 is a satellite searched for and not heard: gpsd prints `ss` 0 for it.
    self.init(
      constellation: constellation, prn: prn, svid: Int(svID), signalID: signalID,
      elevation: elevation, azimuth: azimuth, snr: Int(carrierToNoise), used: used,
      pseudorangeResidual: pseudorangeResidual, quality: quality,
      health: health.flatMap { (1...2).contains($0) ? $0 : nil })
  }
}

// B5 62 01 35 F8 00
// 88 6A 17 19 01 14 00 00 00 01 19 07 38 01 00 00 13 12 00 00 00 04 28 A5
// 00 00 00 00 27 08 00 00
// … (216 more payload bytes)
// 9D 83
// (ublox-neo-m8t.log: its first NAV-SAT; the first two satellites shown)

/// `UBX-NAV-SAT` (01 35), version 1: every satellite the receiver tracks or expects, with its
/// signal strength, position in the sky, use and orbit source.
public struct UBXNavSat: UBXEpochMessage {
  public static let messageClass: UInt8 = 0x01
  public static let messageID: UInt8 = 0x35
  static var role: CycleRole { .untimed }

  public var iTOW: UInt32
  /// The satellites, read in place from the payload.
  public let satellites: UBXBlocks<SatelliteBlock>

  public init(validating payload: UnsafeRawBufferPointer) throws(UBXRejection) {
    let p = UBXBytes(payload)
    try p.require(8)
    guard p.u1(4) == 1 else { throw .unknownVersion }
    let count = Int(p.u1(5))
    iTOW = p.u4(0)
    satellites = try UBXBlocks(payload, header: 8, count: count)
  }

  /// One satellite's block.
  public struct SatelliteBlock: UBXBlock {
    public static let size = 12
    let p: UBXBytes
    public init(block bytes: UnsafeRawBufferPointer) { p = UBXBytes(bytes) }
    public var gnssID: UInt8 { p.u1(0) }
    public var svID: UInt8 { p.u1(1) }
    /// Carrier-to-noise ratio, dB-Hz.
    public var carrierToNoise: UInt8 { p.u1(2) }
    /// Degrees, −90…90 (−91 and beyond: unknown).
    public var elevation: Int8 { p.i1(3) }
    /// Degrees, 0…360.
    public var azimuth: Int16 { p.i2(4) }
    /// Pseudorange residual, metres.
    public var pseudorangeResidual: Double { Double(p.i2(6)) / 10 }
    var flags: UInt32 { p.u4(8) }
    /// Signal quality, 0 (no signal) … 7 (code and carrier locked).
    public var quality: Int { Int(flags & 0x07) }
    /// Used in the navigation solution.
    public var used: Bool { flags & 0x08 != 0 }
    /// 0 unknown, 1 healthy, 2 unhealthy.
    public var health: Int { Int(flags >> 4 & 0x03) }

    /// The satellite as a ``SatelliteView`` lists it; `nil` for a number outside its system.
    public var satellite: Satellite? {
      Satellite(
        gnssID: gnssID, svID: svID, carrierToNoise: carrierToNoise, elevation: elevation,
        azimuth: azimuth, used: used, pseudorangeResidual: pseudorangeResidual,
        quality: quality, health: health)
    }
  }

}

// B5 62 01 30 C8 00
// B1 A3 DE 13 10 00 00 00 00 15 0D 06 21 49 14 01 53 00 00 00 01 18 0D 07
// 2E 38 5E 00 94 FF FF FF
// … (168 more payload bytes)
// 25 37
// (ublox-lea-4t.log, u-blox 4: the first two channels shown)

/// `UBX-NAV-SVINFO` (01 30): the satellites of u-blox 6 and older (u-blox 8 still sends it),
/// numbered in the single u-blox range (GPS 1–32, SBAS 120–158, GLONASS 65–96 …).
public struct UBXNavSVInfo: UBXEpochMessage {
  public static let messageClass: UInt8 = 0x01
  public static let messageID: UInt8 = 0x30
  static var role: CycleRole { .untimed }

  public var iTOW: UInt32
  public let channels: UBXBlocks<ChannelBlock>

  public init(validating payload: UnsafeRawBufferPointer) throws(UBXRejection) {
    let p = UBXBytes(payload)
    try p.require(8)
    let count = Int(p.u1(4))
    iTOW = p.u4(0)
    channels = try UBXBlocks(payload, header: 8, count: count)
  }

  /// One channel's block.
  public struct ChannelBlock: UBXBlock {
    public static let size = 12
    let p: UBXBytes
    public init(block bytes: UnsafeRawBufferPointer) { p = UBXBytes(bytes) }
    public var channel: UInt8 { p.u1(0) }
    /// The u-blox satellite number (`svid`).
    public var svid: UInt8 { p.u1(1) }
    var flags: UInt8 { p.u1(2) }
    public var used: Bool { flags & 0x01 != 0 }
    public var unhealthy: Bool { flags & 0x10 != 0 }
    /// Signal quality, 0 (idle) … 7.
    public var quality: Int { Int(p.u1(3) & 0x0F) }
    public var carrierToNoise: UInt8 { p.u1(4) }
    public var elevation: Int8 { p.i1(5) }
    public var azimuth: Int16 { p.i2(6) }
    /// Pseudorange residual, metres (from cm).
    public var pseudorangeResidual: Double { Double(p.i4(8)) / 100 }

    public var satellite: Satellite? {
      guard let identity = UBXSatelliteNumbering.identity(legacySVID: svid) else { return nil }
      return Satellite(
        gnssID: identity.gnssID, svID: identity.svID, carrierToNoise: carrierToNoise,
        elevation: elevation, azimuth: azimuth, used: used,
        pseudorangeResidual: pseudorangeResidual, quality: quality,
        health: unhealthy ? 2 : 1)
    }
  }

}

// B5 62 01 43 B8 04
// F8 AA 61 0F 00 4B 00 00 00 05 00 00 01 00 2C 07 01 02 69 01 00 00 00 00
// 00 05 03 00 AE FF 26 07 00 02 21 00 00 00 00 00
// … (1168 more payload bytes)
// D3 2C
// (ublox-f9p-rtcm.log: the first two of its signals shown)

/// `UBX-NAV-SIG` (01 43), version 0: every signal the receiver tracks (L1 C/A, L2 CL, E5b …
/// of each satellite), with its strength, quality and use.
public struct UBXNavSig: UBXEpochMessage {
  public static let messageClass: UInt8 = 0x01
  public static let messageID: UInt8 = 0x43
  static var role: CycleRole { .untimed }

  public var iTOW: UInt32
  public let signals: UBXBlocks<SignalBlock>

  public init(validating payload: UnsafeRawBufferPointer) throws(UBXRejection) {
    let p = UBXBytes(payload)
    try p.require(8)
    guard p.u1(4) == 0 else { throw .unknownVersion }
    let count = Int(p.u1(5))
    iTOW = p.u4(0)
    signals = try UBXBlocks(payload, header: 8, count: count)
  }

  /// One signal's block.
  public struct SignalBlock: UBXBlock {
    public static let size = 16
    let p: UBXBytes
    public init(block bytes: UnsafeRawBufferPointer) { p = UBXBytes(bytes) }
    public var gnssID: UInt8 { p.u1(0) }
    public var svID: UInt8 { p.u1(1) }
    /// u-blox signal ID within the system (gpsd's `sigid`).
    public var signalID: UInt8 { p.u1(2) }
    /// GLONASS frequency slot + 7 (gpsd's `freqid`).
    public var frequencyID: UInt8 { p.u1(3) }
    public var pseudorangeResidual: Double { Double(p.i2(4)) / 10 }
    public var carrierToNoise: UInt8 { p.u1(6) }
    public var quality: Int { Int(p.u1(7)) }
    var flags: UInt16 { p.u2(10) }
    /// 0 unknown, 1 healthy, 2 unhealthy.
    public var health: Int { Int(flags & 0x03) }
    /// The pseudorange was used in the solution.
    public var used: Bool { flags & 0x08 != 0 }

    /// The signal's satellite as a ``SatelliteView`` lists it, without position in the sky
    /// (NAV-SIG gives none) and without the signal (``Satellite/signalID`` is NMEA's
    /// numbering, not u-blox's); `nil` for a number outside its system.
    public var satellite: Satellite? {
      Satellite(
        gnssID: gnssID, svID: svID, carrierToNoise: carrierToNoise, elevation: nil,
        azimuth: nil, used: used, pseudorangeResidual: pseudorangeResidual, quality: quality,
        health: health)
    }
  }

}
