import Chipsets
import NMEA
import Testing

@testable import SerialGPS

/// A location request's accuracy is judged by the receiver's own horizontal accuracy when UBX
/// gives it (`UBX-NAV-PVT` `hAcc`), over the NMEA estimate of the same epoch, whatever the
/// order: docs/requests.md, "Accuracy". Each case has a GST on the other side of the request's
/// 10 m, so a fix builder that ignored hAcc would fail both.
@Suite struct BinaryAccuracyRequestTests {
  /// gpsd's ublox-zed-f9p-hp.log NAV-PVT, 2019-04-22 21:19:20 UTC; its hAcc (payload offset
  /// 40, millimetres) replaced by `hAcc`, its `gnssFixOK` flag cleared unless `fixOK`.
  static func navPVT(hAccMillimetres hAcc: UInt32, fixOK: Bool = true) throws -> [UInt8] {
    var payload: [UInt8] = [
      0x10, 0xE6, 0xB9, 0x09, 0xE3, 0x07, 0x04, 0x16, 0x15, 0x13, 0x14, 0x37, 0x1A, 0x00, 0x00,
      0x00, 0xF1, 0x0C, 0xFE, 0xFF, 0x03, 0x01, 0xEB, 0x10, 0x5A, 0x41, 0xA0, 0x65, 0x0A, 0xA5,
      0xA7, 0xE4, 0x32, 0x72, 0x00, 0x00, 0x33, 0x6B, 0x00, 0x00, 0x91, 0x38, 0x00, 0x00, 0x62,
      0x32, 0x00, 0x00, 0xFB, 0x00, 0x00, 0x00, 0xD9, 0xFF, 0xFF, 0xFF, 0xE8, 0xFF, 0xFF, 0xFF,
      0xFE, 0x00, 0x00, 0x00, 0x01, 0x74, 0x4C, 0x01, 0x87, 0x03, 0x00, 0x00, 0x2D, 0x28, 0x5E,
      0x00, 0x7D, 0x00, 0x00, 0x00, 0xDC, 0xCA, 0x49, 0x32, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
      0x00, 0x00,
    ]
    for index in 0..<4 { payload[40 + index] = UInt8(truncatingIfNeeded: hAcc >> (8 * index)) }
    if !fixOK { payload[21] = 0x00 }  // flags: gnssFixOK clear
    return try UBX.frame(UBXMessageID(0x01, 0x07), payload: payload)
  }

  /// NAV-EOE of the same iTOW.
  static let endOfEpoch = try! UBX.frame(
    UBXMessageID(0x01, 0x61), payload: [0x10, 0xE6, 0xB9, 0x09])

  /// `$body*HH\r\n`.
  static func wire(_ body: String) -> [UInt8] {
    let sum = NMEAChecksum.compute(body.utf8)
    let hex = String(sum, radix: 16, uppercase: true)
    return Array(("$" + body + "*" + (hex.count < 2 ? "0" : "") + hex + "\r\n").utf8)
  }

  /// GGA (HDOP 0.77) and GST of the same second, GST's latitude and longitude errors `error`.
  static func nmea(gstError error: Double) -> [UInt8] {
    wire("GNGGA,211920.00,4552.65172,S,17030.00784,E,1,12,0.77,27.4,M,2.0,M,,")
      + wire("GNGST,211920.00,1.0,\(error),\(error),0.0,\(error),\(error),\(error)")
  }

  static func fix(_ bytes: [UInt8]) throws -> Fix {
    var decoder = NMEADecoder()
    var fixes: [Fix] = []
    decoder.decode(bytes) { if case .epoch(let epoch) = $0 { fixes.append(epoch.fix) } }
    decoder.finish { if case .epoch(let epoch) = $0 { fixes.append(epoch.fix) } }
    #expect(fixes.count == 1)
    return try #require(fixes.first)
  }

  /// What the scheduler does with a request for 10 m, the receiver on, and `fix`.
  static func delivered(_ fix: Fix) -> Bool {
    var scheduler = RequestScheduler(configuration: .init())
    let now = DriverInstant.origin
    let request = LocationRequest(accuracy: 10, maxUpdates: 1, duration: .seconds(60))
    _ = scheduler.handle(.add(1, request, cached: nil), now: now)
    _ = scheduler.handle(.receiverPowered(true), now: now)
    let update = FixUpdate(fix: fix, age: .zero, isReplay: false, arrival: now)
    return scheduler.handle(.fix(update), now: now).contains(.deliver(1, update))
  }

  @Test("hAcc 4 m satisfies 10 m though GST says 25 m, in either order")
  func binaryAccuracySatisfies() throws {
    let pvt = try Self.navPVT(hAccMillimetres: 4_000)
    for bytes in [
      Self.nmea(gstError: 25) + pvt + Self.endOfEpoch,
      pvt + Self.nmea(gstError: 25) + Self.endOfEpoch,
    ] {
      let fix = try Self.fix(bytes)
      #expect(fix.horizontalAccuracy == 4)
      #expect(LocationRequest(accuracy: 10).accepts(fix))
      #expect(Self.delivered(fix))
    }
  }

  @Test("hAcc 14.481 m does not satisfy 10 m, though GST says 3 m and HDOP is 0.77")
  func binaryAccuracyRefuses() throws {
    let pvt = try Self.navPVT(hAccMillimetres: 14_481)
    for bytes in [
      Self.nmea(gstError: 3) + pvt + Self.endOfEpoch,
      pvt + Self.nmea(gstError: 3) + Self.endOfEpoch,
    ] {
      let fix = try Self.fix(bytes)
      #expect(fix.horizontalAccuracy == 14.481)
      #expect(!LocationRequest(accuracy: 10).accepts(fix))
      #expect(!Self.delivered(fix))
    }
    // Without NAV-PVT the GST estimate is the accuracy; HDOP alone gives none (no estimate
    // is made from DOPs), and a fix without one counts for any accuracy.
    #expect(try Self.fix(Self.nmea(gstError: 3)).horizontalAccuracy.map { $0 < 10 } == true)
    let ggaOnly = Self.wire("GNGGA,211920.00,4552.65172,S,17030.00784,E,1,12,0.77,27.4,M,2.0,M,,")
    #expect(try Self.fix(ggaOnly).horizontalAccuracy == nil)
  }

  @Test("gnssFixOK clear: judged by hAcc when an accuracy is asked, never taken as any fix")
  func fixOutsideReceiverLimits() throws {
    let near = try Self.fix(try Self.navPVT(hAccMillimetres: 4_000, fixOK: false) + Self.endOfEpoch)
    #expect(near.mode == .threeD && near.gnssFixOK == false && near.horizontalAccuracy == 4)
    #expect(LocationRequest(accuracy: 10).accepts(near))
    #expect(!LocationRequest().accepts(near))
    let far = try Self.fix(try Self.navPVT(hAccMillimetres: 14_481, fixOK: false) + Self.endOfEpoch)
    #expect(!LocationRequest(accuracy: 10).accepts(far))
    #expect(LocationRequest(accuracy: 20).accepts(far))
    // The flag set, or no flag at all (NMEA): any fix.
    let ok = try Self.fix(try Self.navPVT(hAccMillimetres: 14_481) + Self.endOfEpoch)
    #expect(ok.gnssFixOK == true && LocationRequest().accepts(ok))
  }
}
