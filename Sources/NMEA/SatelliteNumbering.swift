/// Maps the satellite numbers receivers write in GSV and GSA to a system, gpsd's PRN and the
/// satellite's number within its system.
///
/// The talker decides the system when it names one; a system ID (NMEA 4.10) decides it for
/// `GN` sentences; otherwise the number range does (the NMEA 2.x/4.0 and u-blox extended
/// numbering: GPS 1–32, SBAS 33–64 and 120–158, GLONASS 65–96, QZSS 193–202, Galileo 301–336,
/// BeiDou 401–437).
enum SatelliteNumbering {
  struct Identity: Hashable {
    var constellation: Constellation?
    var prn: Int
    var svid: Int
  }

  static func identify(id: Int, talker: Talker, systemID: Int?) -> Identity {
    var system: Constellation?
    if let systemID, let fromID = Constellation(nmeaSystemID: systemID) {
      system = fromID
    } else {
      system = talker.constellation
    }
    // Single-talker receivers (GP for everything) number other systems by range.
    if system == nil || system == .gps {
      system = byRange(id) ?? system
    }
    guard let system else { return Identity(constellation: nil, prn: id, svid: id) }
    switch system {
    case .gps:
      return Identity(constellation: .gps, prn: id, svid: id)
    case .sbas:
      // gpsd keeps the receiver's number as the PRN (NMEA 33–64 or 120–158); the svid is the
      // SBAS PRN proper, 120–158.
      return Identity(constellation: .sbas, prn: id, svid: id < 100 ? id + 87 : id)
    case .glonass:
      if id > 64 && id <= 96 { return Identity(constellation: .glonass, prn: id, svid: id - 64) }
      if id <= 32 { return Identity(constellation: .glonass, prn: id + 64, svid: id) }
      return Identity(constellation: .glonass, prn: id, svid: id)
    case .galileo:
      if id > 300 && id <= 336 { return Identity(constellation: .galileo, prn: id, svid: id - 300) }
      // Quectel numbers Galileo 101–136.
      if id > 100 && id <= 136 {
        return Identity(constellation: .galileo, prn: id + 200, svid: id - 100)
      }
      return Identity(constellation: .galileo, prn: id + 300, svid: id)
    case .beidou:
      if id > 400 && id <= 463 { return Identity(constellation: .beidou, prn: id, svid: id - 400) }
      if id > 200 && id <= 263 {
        return Identity(constellation: .beidou, prn: id + 200, svid: id - 200)
      }
      return Identity(constellation: .beidou, prn: id + 400, svid: id)
    case .qzss:
      if id > 192 && id <= 202 { return Identity(constellation: .qzss, prn: id, svid: id - 192) }
      return Identity(constellation: .qzss, prn: id + 192, svid: id)
    case .navic:
      if id > 800 { return Identity(constellation: .navic, prn: id, svid: id - 800) }
      return Identity(constellation: .navic, prn: id + 800, svid: id)
    case .imes:
      return Identity(constellation: .imes, prn: id, svid: id)
    }
  }

  static func byRange(_ id: Int) -> Constellation? {
    switch id {
    case 1...32: return .gps
    case 33...64, 120...158: return .sbas
    case 65...96: return .glonass
    case 193...202: return .qzss
    case 301...336: return .galileo
    case 401...463: return .beidou
    default: return nil
    }
  }
}
