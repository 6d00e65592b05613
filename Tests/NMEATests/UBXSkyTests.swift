import NMEA
import Testing

// Satellite views from UBX: NAV-SAT, NAV-SVINFO and NAV-SIG fill the epoch's SKY as GSV does,
// and one ranking (docs/ubx.md, "Satellites") decides which list an epoch keeps when NMEA
// and UBX both list satellites.

enum UBXSkySamples {
  static let iTOW = UBXEpochSamples.iTOW

  /// One NAV-SAT block: gnssId, svId, C/N0, elevation, azimuth, residual (0.1 m), flags.
  static func satBlock(
    gnss: UInt8, sv: UInt8, cno: UInt8, elevation: Int8, azimuth: Int16, residual: Int16,
    quality: UInt32, used: Bool, health: UInt32
  ) -> [UInt8] {
    let flags = quality | (used ? 0x08 : 0) | health << 4
    let az = UInt16(bitPattern: azimuth)
    let res = UInt16(bitPattern: residual)
    return [
      gnss, sv, cno, UInt8(bitPattern: elevation), UInt8(az & 0xFF), UInt8(az >> 8),
      UInt8(res & 0xFF), UInt8(res >> 8),
    ] + littleEndian(flags)
  }

  /// NAV-SAT of the sample epoch: GPS 4 used, GLONASS 8 (PRN 72) tracked and not used,
  /// Galileo 11 unhealthy with an unknown orbit (elevation −91°).
  static let navSat: [UInt8] = {
    let blocks =
      satBlock(
        gnss: 0, sv: 4, cno: 40, elevation: 48, azimuth: 216, residual: -164, quality: 7,
        used: true, health: 1)
      + satBlock(
        gnss: 6, sv: 8, cno: 25, elevation: 37, azimuth: 270, residual: 0, quality: 4,
        used: false, health: 1)
      + satBlock(
        gnss: 2, sv: 11, cno: 0, elevation: -91, azimuth: 0, residual: 0, quality: 1,
        used: false, health: 2)
    return ubxFrame(
      class: 0x01, id: 0x35, payload: littleEndian(iTOW) + [1, 3, 0, 0] + blocks)
  }()

  /// NAV-SIG of the sample epoch: GPS 4 on L1 C/A (used) and L2 CL (not), GPS 9 on L1 C/A.
  static let navSig: [UInt8] = {
    func signal(sv: UInt8, sigID: UInt8, cno: UInt8, used: Bool) -> [UInt8] {
      [0, sv, sigID, 0, 0, 0, cno, 7, 0, 0, 0x01 | (used ? 0x08 : 0), 0, 0, 0, 0, 0]
    }
    let blocks =
      signal(sv: 4, sigID: 0, cno: 40, used: true) + signal(sv: 4, sigID: 3, cno: 44, used: false)
      + signal(sv: 9, sigID: 0, cno: 30, used: false)
    return ubxFrame(
      class: 0x01, id: 0x43, payload: littleEndian(iTOW) + [0, 3, 0, 0] + blocks)
  }()

  /// NAV-SVINFO of the sample epoch (u-blox 6 numbering): GPS 21 used, SBAS 124 (PRN 37)
  /// unhealthy.
  static let navSVInfo: [UInt8] = {
    let first: [UInt8] = [0, 21, 0x0D, 0x06, 33, 73, 0x14, 0x01] + littleEndian(21_250)
    let second: [UInt8] =
      [1, 124, 0x10, 0x01, 0, 36, 0x9E, 0x00] + littleEndian(0)
    return ubxFrame(
      class: 0x01, id: 0x30, payload: littleEndian(iTOW) + [2, 0, 0, 0] + first + second)
  }()

  /// GSV and GSA of the same second as the NAV-PVT sample: two GPS satellites, one used.
  static let gsv = wire("GPGSV,1,1,02,04,48,216,40,09,10,100,30")
  static let gsa = wire("GPGSA,A,3,04,,,,,,,,,,,,1.5,0.8,1.2")
}

@Suite("UBX satellites in SKY")
struct UBXSkyTests {
  @Test("NAV-SAT gives the epoch's satellites: gpsd's PRN, used, residual, quality, health")
  func navSatView() throws {
    let emitted = epochs(
      UBXSamples.navPVT + UBXSkySamples.navSat + UBXEpochSamples.endOfEpoch)
    #expect(emitted.count == 1)
    let view = try #require(emitted.first?.satellites)
    #expect(
      view.satellites == [
        Satellite(
          constellation: .gps, prn: 4, svid: 4, elevation: 48, azimuth: 216, snr: 40,
          used: true, pseudorangeResidual: -16.4, quality: 7, health: 1),
        Satellite(
          constellation: .glonass, prn: 72, svid: 8, elevation: 37, azimuth: 270, snr: 25,
          used: false, pseudorangeResidual: 0, quality: 4, health: 1),
        Satellite(
          constellation: .galileo, prn: 311, svid: 11, elevation: nil, azimuth: 0, snr: 0,
          used: false, pseudorangeResidual: 0, quality: 1, health: 2),
      ])
    #expect(view.usedCount == 1)
    #expect(view.time == UTCTime(hour: 21, minute: 19, second: 20))
  }

  @Test("NAV-SVINFO gives the satellites of u-blox 6 and older, numbered as gpsd numbers them")
  func svInfoView() throws {
    let emitted = epochs(
      UBXSamples.navPVT + UBXSkySamples.navSVInfo + UBXEpochSamples.endOfEpoch)
    let view = try #require(emitted.first?.satellites)
    #expect(view.satellites.map(\.prn) == [21, 37])
    #expect(view.satellites.map(\.used) == [true, false])
    #expect(view.satellites.map(\.health) == [1, 2])
    #expect(view.satellites.first?.pseudorangeResidual == 212.5)
    #expect(view.satellites.first?.elevation == 73 && view.satellites.first?.azimuth == 276)
  }

  @Test("NAV-SIG alone lists each satellite once, used when any of its signals is")
  func navSigView() throws {
    let emitted = epochs(
      UBXSamples.navPVT + UBXSkySamples.navSig + UBXEpochSamples.endOfEpoch)
    let view = try #require(emitted.first?.satellites)
    #expect(view.satellites.map(\.prn) == [4, 9])
    #expect(view.satellites.map(\.used) == [true, false])
    #expect(view.satellites.map(\.snr) == [44, 30])
    #expect(view.satellites.allSatisfy { $0.elevation == nil && $0.azimuth == nil })
  }

  @Test(
    "NMEA GSV and NAV-SAT of one epoch give NAV-SAT's list, in either order; NAV-SIG gives way",
    arguments: [true, false])
  func oneSourceWins(navSatFirst: Bool) throws {
    let nmea = UBXEpochSamples.gga + UBXSkySamples.gsv + UBXSkySamples.gsa
    let ubx = UBXSkySamples.navSig + UBXSkySamples.navSat
    let emitted = epochs(
      UBXSamples.navPVT + (navSatFirst ? ubx + nmea : nmea + ubx) + UBXEpochSamples.endOfEpoch)
    #expect(emitted.count == 1)
    let view = try #require(emitted.first?.satellites)
    #expect(view.satellites.map(\.prn) == [4, 72, 311])
    // NAV-SAT's own flags: GSA's used list does not mark GLONASS 8 (it names only GPS 4).
    #expect(view.usedCount == 1)
    // GSA's dilutions stay the view's.
    #expect(view.hdop == 0.8 && view.pdop == 1.5)
  }

  @Test("GSV over NAV-SIG: the list with positions in the sky")
  func gsvOverSignals() throws {
    let emitted = epochs(
      UBXSamples.navPVT + UBXSkySamples.navSig + UBXEpochSamples.gga + UBXSkySamples.gsv
        + UBXSkySamples.gsa + UBXEpochSamples.endOfEpoch)
    let view = try #require(emitted.first?.satellites)
    #expect(view.satellites.map(\.prn) == [4, 9])
    #expect(view.satellites.map(\.elevation) == [48, 10])
    #expect(view.usedCount == 1)
  }
}
