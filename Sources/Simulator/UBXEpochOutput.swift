import Chipsets
import Glibc
import NMEA

// The u-blox navigation messages a simulated receiver sends with each epoch once the host
// switched them on (`UBX-CFG-MSG` on M8 and M9, `CFG-MSGOUT-UBX_NAV_*` keys of
// `UBX-CFG-VALSET` on M9 and M10, RAM layer), encoded from the same epoch its NMEA carries:
// NAV-PVT, NAV-DOP, NAV-SAT, and NAV-EOE last; the other messages a host may switch on are
// acknowledged and not sent. The messages, their class and ID and their configuration keys
// are Chipsets' (`UBXOutputMessage`), the table the driver's commands are made from. Only
// with physics, whose epochs leave out the recording's own UBX navigation frames.

enum UBXEpochEncoder {
  /// The frames for `messages` describing the NMEA epoch `bytes` (as the receiver sends it);
  /// `horizontalError`/`verticalError` are the model's one-sigma estimates, metres.
  static func frames(
    for bytes: [UInt8], messages: Set<UBXOutputMessage>, horizontalError: Double?,
    verticalError: Double?
  ) -> [UInt8] {
    var decoder = NMEADecoder()
    var epoch: Epoch?
    decoder.decode(bytes) { if case .epoch(let e) = $0 { epoch = e } }
    decoder.finish { if case .epoch(let e) = $0 { epoch = e } }
    guard let epoch else { return [] }
    let fix = epoch.fix
    let iTOW = timeOfWeek(fix)
    var out: [UInt8] = []
    func frame(_ message: UBXOutputMessage, _ payload: [UInt8]) {
      out += (try? UBX.frame(message.id, payload: payload)) ?? []
    }
    if messages.contains(.navPVT) {
      frame(.navPVT, pvt(fix, iTOW: iTOW, horizontal: horizontalError, vertical: verticalError))
    }
    if messages.contains(.navDOP) {
      var payload = u32(iTOW)
      for dop in [nil, fix.pdop, fix.tdop, fix.vdop, fix.hdop, nil, nil] as [Double?] {
        payload += u16(dop.map { UInt16(min(655.35, $0) * 100) } ?? 9999)
      }
      frame(.navDOP, payload)
    }
    if messages.contains(.navSat) {
      frame(.navSat, sat(epoch.satellites, iTOW: iTOW))
    }
    if messages.contains(.navEOE) { frame(.navEOE, u32(iTOW)) }
    return out
  }

  /// GPS time of week, milliseconds (UTC + 18 leap seconds since 1980-01-06); 0 without time.
  static func timeOfWeek(_ fix: Fix) -> UInt32 {
    guard let stamp = fix.timestamp else { return 0 }
    let gps = stamp.secondsSinceUnixEpoch - 315_964_800 + 18
    let week = ((gps % 604_800) + 604_800) % 604_800
    return UInt32(week * 1000 + Int64(stamp.time.nanoseconds / 1_000_000))
  }

  static func pvt(_ fix: Fix, iTOW: UInt32, horizontal: Double?, vertical: Double?) -> [UInt8] {
    var p = u32(iTOW)
    let date = fix.date
    let time = fix.time
    p += u16(UInt16(date?.year ?? 0)) + [date?.month ?? 0, date?.day ?? 0]
    p += [time?.hour ?? 0, time?.minute ?? 0, time?.second ?? 0]
    let valid: UInt8 = (date != nil ? 0x01 : 0) | (time != nil ? 0x02 : 0)
    p += [valid]
    p += u32(fix.position != nil ? 50 : 0xFFFF_FFFF)  // tAcc, ns
    p += i32(0)  // nano: epochs fall on whole seconds or tenths carried by the time
    let fixType: UInt8 = fix.mode == .threeD ? 3 : fix.mode == .twoD ? 2 : 0
    p += [fixType, fix.position != nil ? 0x01 : 0, 0, UInt8(min(255, fix.satellitesUsed ?? 0))]
    p += i32(Int32((fix.longitude ?? 0) * 1e7))
    p += i32(Int32((fix.latitude ?? 0) * 1e7))
    p += i32(Int32(((fix.altitudeHAE ?? 0) * 1000).rounded()))
    p += i32(Int32(((fix.altitudeMSL ?? 0) * 1000).rounded()))
    let noFix = fix.position == nil
    p += u32(noFix ? 0xFFFF_FFFF : UInt32(((horizontal ?? 99_999) * 1000).rounded()))
    p += u32(noFix ? 0xFFFF_FFFF : UInt32(((vertical ?? 99_999) * 1000).rounded()))
    let speed = fix.speed ?? 0
    let course = (fix.course ?? 0) * Double.pi / 180
    p += i32(Int32((speed * cos(course) * 1000).rounded()))
    p += i32(Int32((speed * sin(course) * 1000).rounded()))
    p += i32(Int32(-((fix.climb ?? 0) * 1000).rounded()))
    p += i32(Int32((speed * 1000).rounded()))
    p += i32(Int32(((fix.course ?? 0) * 1e5).rounded()))
    p += u32(noFix ? 0xFFFF_FFFF : 500)  // sAcc, mm/s
    p += u32(noFix ? 0xFFFF_FFFF : 1_000_000)  // headAcc, 1e-5 degree
    p += u16(fix.pdop.map { UInt16(min(655.35, $0) * 100) } ?? 9999)
    p += [noFix ? 0x01 : 0x00, 0, 0, 0, 0, 0]  // flags3 (invalidLlh), reserved
    p += i32(0) + u16(0) + u16(0)  // headVeh, magDec, magAcc
    return p
  }

  static func sat(_ view: SatelliteView?, iTOW: UInt32) -> [UInt8] {
    let satellites = Array((view?.satellites ?? []).prefix(255))
    var p = u32(iTOW) + [1, UInt8(satellites.count), 0, 0]
    for satellite in satellites {
      let gnss = UInt8(clamping: Int(satellite.constellation?.rawValue ?? 0))
      let sv = UInt8(clamping: satellite.svid)
      p += [gnss, sv, UInt8(clamping: Int(satellite.snr ?? 0))]
      p += [UInt8(bitPattern: Int8(clamping: Int(satellite.elevation ?? -91)))]
      p += u16(UInt16(bitPattern: Int16(clamping: Int(satellite.azimuth ?? 0))))
      p += u16(0)  // prRes
      let quality: UInt32 = (satellite.snr ?? 0) > 0 ? 4 : 1
      p += u32(quality | (satellite.used ? 0x08 : 0) | 0x10)  // health 1: healthy
    }
    return p
  }

  static func u16(_ value: UInt16) -> [UInt8] { [UInt8(value & 0xFF), UInt8(value >> 8)] }
  static func u32(_ value: UInt32) -> [UInt8] { (0..<4).map { UInt8(value >> (8 * $0) & 0xFF) } }
  static func i32(_ value: Int32) -> [UInt8] { u32(UInt32(bitPattern: value)) }
}
