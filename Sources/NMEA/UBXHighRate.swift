// UBX-HNR-PVT, the high-rate navigation solution of u-blox M8 dead-reckoning modules (NEO-M8L,
// NEO-M8U, ZED-F9R …: up to 30 Hz between the NAV epochs). Layout: UBX-13003221 (u-blox 8 /
// M8 Receiver Description), section "UBX-HNR-PVT".

// B5 62 28 00 48 00
// F4 24 A2 0D E8 07 01 1E 0F 1F 34 37 03 E1 F5 05 04 1D FC 2A 90 DB 8C 05
// C5 47 0D 1D B5 BF 04 00 BA 05 04 00 40 03 00 00 6F 04 00 00 5C DB 7E 01
// 5C DB 7E 01 EB 13 00 00 15 2C 00 00 1B 01 00 00 FE 65 07 00 2A 32 45 0D
// 05 32
// (ublox-neo-m8l.log: iTOW 228730100 ms, 2024-01-30 15:31:52.100 UTC, fix type 4 (GNSS and
// dead reckoning), 48.7409605° 9.3117328°, hMSL 263.610 m, gSpeed 0.832 m/s, headMot
// 250.90908°, hAcc 5.099 m)

/// `UBX-HNR-PVT` (28 00): position, velocity and time at the high navigation rate of u-blox 8
/// dead-reckoning firmware, 72 bytes. Read as the corpus' gpsd output shows it: the mode
/// from `gpsFix` alone, the position, both heights, ground speed, heading of motion and the
/// four accuracies.
public struct UBXHNRPVT: UBXEpochMessage, Sendable, Hashable {
  public static let messageClass: UInt8 = 0x28
  public static let messageID: UInt8 = 0x00
  static var role: CycleRole { .position }

  /// GPS time of week of the solution, milliseconds (`iTOW`).
  public var iTOW: UInt32
  /// The UTC date and time when `validDate` and `validTime`; a date or time outside the
  /// calendar is left out.
  public var timestamp: UTCTimestamp?
  public var fixType: UBXFixType?
  /// `GPSfixOK`: the fix is within the limits the receiver was configured with.
  public var gnssFixOK: Bool
  /// `DiffSoln`: differential corrections were applied.
  public var differential: Bool
  /// 1e-7° exactly; `nil` beyond ±90°/±180°.
  public var position: Position?
  /// Metres above the ellipsoid (`height`) and above mean sea level (`hMSL`).
  public var altitudeHAE: Double
  public var altitudeMSL: Double
  /// Ground speed, m/s (`gSpeed`); `nil` when negative.
  public var groundSpeed: Double?
  /// Heading of motion, degrees (`headMot`), 0 ..< 360; `nil` outside that.
  public var headingOfMotion: Double?
  /// Heading of the vehicle, degrees (`headVeh`), when `headVehValid`.
  public var headingOfVehicle: Double?
  /// Horizontal and vertical accuracy, metres; speed accuracy, m/s; heading accuracy,
  /// degrees (`hAcc`, `vAcc`, `sAcc`, `headAcc`).
  public var horizontalAccuracy: Double?
  public var verticalAccuracy: Double?
  public var speedAccuracy: Double?
  public var headingAccuracy: Double?
  /// Fields left out as impossible.
  var dropped: UInt8 = 0

  public init(validating payload: UnsafeRawBufferPointer) throws(UBXRejection) {
    let p = UBXBytes(payload)
    try p.require(72)
    iTOW = p.u4(0)
    let valid = p.u1(11)
    if valid & 0x03 == 0x03 {
      timestamp = UTCTimestamp(
        ubloxYear: p.u2(4), month: p.u1(6), day: p.u1(7), hour: p.u1(8), minute: p.u1(9),
        second: p.u1(10), nanoseconds: p.i4(12))
      if timestamp == nil { dropped += 1 }
    }
    fixType = UBXFixType(rawValue: p.u1(16))
    if fixType == nil { dropped += 1 }
    let flags = p.u1(17)
    gnssFixOK = flags & 0x01 != 0
    differential = flags & 0x02 != 0
    position = Position(ubloxLatitude: Int64(p.i4(24)), longitude: Int64(p.i4(20)), digits: 7)
    if position == nil { dropped += 1 }
    altitudeHAE = Double(p.i4(28)) / 1000
    altitudeMSL = Double(p.i4(32)) / 1000
    let speed = p.i4(36)
    if speed >= 0 { groundSpeed = Double(speed) / 1000 } else { dropped += 1 }
    let heading = p.i4(44)
    if (0..<36_000_000).contains(heading) {
      headingOfMotion = Double(heading) * 1e-5
    } else {
      dropped += 1
    }
    if flags & 0x10 != 0 { headingOfVehicle = Double(p.i4(48)) * 1e-5 }
    horizontalAccuracy = UBXUnits.metres(millimetres: p.u4(52))
    verticalAccuracy = UBXUnits.metres(millimetres: p.u4(56))
    speedAccuracy = UBXUnits.metres(millimetres: p.u4(60))
    headingAccuracy = p.u4(64) == .max ? nil : Double(p.u4(64)) * 1e-5
  }
}

extension UBXHNRPVT: BinaryMessageDescriptor {
  var statedLeapSeconds: Int? {
    timestamp.flatMap { FixBuilder.leapSeconds(timeOfWeek: iTOW, utc: $0.time) }
  }

  /// The leap second itself, as NAV-PVT's.
  var time: UTCTime? { timestamp.flatMap { $0.leapSecondMillisecond } }

  /// As NAV-PVT's (the gpsd of the corpus' ublox-neo-m8l.log.chk reports it so; gpsd 3.22
  /// only logs it): the mode from the fix type alone; no velocity down, DOP or satellites.
  func merge(into builder: inout FixBuilder) {
    if let timestamp { builder.epoch.explicitDate = timestamp.dateOfNearestMillisecond }
    if let leap = statedLeapSeconds { builder.epoch.fix.leapSeconds = leap }
    builder.epoch.fix.gnssFixOK = gnssFixOK
    guard let fixType else { return }
    let mode = fixType.mode
    builder.epoch.state(binary: mode)
    guard mode != .noFix else { return }
    builder.epoch.fix.quality = fixType.quality(differential: differential, carrier: nil)
    builder.epoch.takeGeodeticSolution(
      position: position, altitudeMSL: altitudeMSL, altitudeHAE: altitudeHAE,
      horizontalAccuracy: horizontalAccuracy, verticalAccuracy: verticalAccuracy,
      speed: groundSpeed, course: headingOfMotion, speedAccuracy: speedAccuracy,
      courseAccuracy: headingAccuracy)
  }
}

/// The times of week at which NAV-PVT comes, learned from the last two: a dead-reckoning
/// receiver sends HNR-PVT at 10 or 30 Hz and NAV-PVT at 1 Hz with the same time of week every
/// tenth HNR-PVT, but the navigation epoch (NAV-PVT, NAV-SAT …) comes some hundred
/// milliseconds after the HNR-PVT of its time. That HNR-PVT is left to it: a fix of that time
/// made from HNR-PVT alone would be emitted first and the navigation epoch then dropped as
/// late (and gpsd's last report of that time is NAV-PVT's).
///
/// An HNR-PVT that comes between a navigation epoch's NAV-PVT and its NAV-EOE (when the
/// receiver sends NAV-EOE) is held and added after NAV-EOE: it would close the navigation
/// epoch before its NAV-SAT and others came.
struct NavigationCadence {
  var last: UInt32?
  /// Milliseconds between NAV-PVTs; u-blox's default of 1 s until two came.
  var period: UInt32 = 1000
  /// NAV-EOE ends this receiver's navigation epochs.
  var sawEndOfEpoch = false
  /// A NAV-PVT came and its NAV-EOE has not.
  var awaitingEnd = false
  var held: UBXHNRPVT?

  mutating func note(_ timeOfWeek: UInt32) {
    if let last, timeOfWeek != last {
      let step = FixBuilder.milliseconds(from: last, to: timeOfWeek)
      if step > 0 && step <= 10_000 { period = UInt32(step) }
    }
    last = timeOfWeek
    awaitingEnd = sawEndOfEpoch
  }

  /// Whether a navigation epoch is due at `timeOfWeek`: a whole number of periods after the
  /// last one, within ten of them (a receiver that stopped sending NAV-PVT is not waited for).
  func isDue(at timeOfWeek: UInt32) -> Bool {
    guard let last else { return false }
    let step = FixBuilder.milliseconds(from: last, to: timeOfWeek)
    return step > 0 && step % Int64(period) == 0 && step <= 10 * Int64(period)
  }
}
