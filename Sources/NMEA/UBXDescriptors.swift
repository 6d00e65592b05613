// The UBX message types as descriptors (``BinaryMessageDescriptor``): how each joins the
// epoch the fix builder is building, beside the NMEA sentences of the same epoch. The ranks
// decide which source a field comes from (``PositionSource``, ``AccuracySource``); nothing
// here knows what else the epoch holds. docs/ubx.md lists what each field becomes.

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

extension UBXFixType {
  /// NAV-SOL's fix mode with `gnssFixOK`: a fix outside the receiver's configured limits is
  /// no fix (gpsd's ubx_msg_nav_sol in the gpsd that made the corpus' output), except the
  /// time-only fix of a timing receiver on its surveyed position. NAV-PVT, HNR-PVT and
  /// NAV-STATUS take ``mode`` from the fix type alone, as gpsd's ubx_msg_nav_pvt does.
  func mode(fixOK: Bool) -> FixMode {
    fixOK || self == .timeOnly ? mode : .noFix
  }

  /// The quality the fix type and its flags stand for, as GGA's quality field names it.
  func quality(differential: Bool, carrier: UBXCarrierSolution?) -> FixQuality {
    switch carrier {
    case .fixed: return .rtkFixed
    case .float: return .rtkFloat
    default: break
    }
    if self == .deadReckoningOnly { return .deadReckoning }
    return differential ? .differential : .gps
  }
}

/// The limits a fix holds for every source (the NMEA parser's, docs/nmea.md): a binary
/// field beyond them is the receiver's "no value" (NAV-PVT's pDOP 99.99 without a fix) or
/// nothing a receiver can mean, and is left out of the fix, as an NMEA field would be.
enum UBXPlausible {
  @inline(__always)
  static func dop(_ value: Double) -> Double? { value < 99 ? value : nil }
  @inline(__always)
  static func speed(_ value: Double?) -> Double? {
    value.flatMap { $0 >= 0 && $0 < 999 * FixBuilder.metresPerSecondPerKnot ? $0 : nil }
  }
  @inline(__always)
  static func altitude(_ value: Double?) -> Double? {
    value.flatMap { (-1_000...100_000).contains($0) ? $0 : nil }
  }
  /// The geoid separation of a height above the ellipsoid and one above sea level.
  @inline(__always)
  static func separation(hae: Double?, msl: Double?) -> Double? {
    guard let hae, let msl, abs(hae - msl) <= 200 else { return nil }
    return hae - msl
  }
  @inline(__always)
  static func course(_ value: Double?) -> Double? {
    value.flatMap { $0 >= 0 && $0 < 360 ? $0 : nil }
  }
}

extension UTCTimestamp {
  /// The date of the instant rounded to the millisecond: u-blox writes the UTC of an epoch
  /// to the nanosecond around its whole millisecond, so 23:59:59.9999 is the next day's
  /// epoch.
  var dateOfNearestMillisecond: UTCDate {
    if leapSecondMillisecond != nil { return date }
    return time.nanosecondsOfDay + 500_000 >= 86_400 * 1_000_000_000 ? date.next : date
  }

  /// 23:59:60 to the nearest millisecond, when this is the leap second: `nil` for any
  /// other time (one rounded to 23:59:60.000 from just before it, too).
  var leapSecondMillisecond: UTCTime? {
    guard time.second == 60 else { return nil }
    let milliseconds = (time.nanoseconds + 500_000) / 1_000_000
    return UTCTime(
      hour: time.hour, minute: time.minute, second: 60,
      nanoseconds: min(milliseconds, 999) * 1_000_000)
  }
}

extension EpochInProgress {
  /// A dimension a binary message states: no fix denies the epoch's fix, as GGA's quality 0
  /// does; else the dimension is stated.
  @inline(__always)
  mutating func state(binary mode: FixMode) {
    if mode == .noFix { fixDenied = true } else { state(mode) }
  }
}

extension EpochInProgress {
  /// A whole geodetic solution (NAV-PVT's, HNR-PVT's): position, both heights, accuracies,
  /// speed and course, ranked as ``PositionSource/binarySolution``, each figure within the
  /// limits every fix holds.
  @inline(__always)
  mutating func takeGeodeticSolution(
    position: Position?, altitudeMSL: Double?, altitudeHAE: Double?,
    horizontalAccuracy: Double?, verticalAccuracy: Double?, speed: Double?, course: Double?,
    speedAccuracy: Double?, courseAccuracy: Double?
  ) {
    takePosition(position, from: .binarySolution)
    takeAltitude(
      msl: UBXPlausible.altitude(altitudeMSL),
      geoidSeparation: UBXPlausible.separation(hae: altitudeHAE, msl: altitudeMSL),
      hae: UBXPlausible.altitude(altitudeHAE), from: .binarySolution)
    takeHorizontalAccuracy(horizontalAccuracy, from: .binarySolution)
    takeVerticalAccuracy(verticalAccuracy, from: .binarySolution)
    takeMotion(speed: UBXPlausible.speed(speed), course: course, from: .binarySolution)
    fix.speedAccuracy = speedAccuracy
    fix.courseAccuracy = courseAccuracy
  }
}

extension UBXNavPVT: BinaryMessageDescriptor {
  var statedLeapSeconds: Int? {
    timestamp.flatMap { FixBuilder.leapSeconds(timeOfWeek: iTOW, utc: $0.time) }
  }

  /// The leap second itself (23:59:60) when the receiver writes it: a time of week less the
  /// leap seconds cannot say it (it would be the next day's 00:00:00, which the next epoch
  /// is).
  var time: UTCTime? { timestamp.flatMap { $0.leapSecondMillisecond } }

  func merge(into builder: inout FixBuilder) {
    if let timestamp { builder.epoch.explicitDate = timestamp.dateOfNearestMillisecond }
    if let leap = statedLeapSeconds { builder.epoch.fix.leapSeconds = leap }
    builder.epoch.fix.satellitesUsed = satellitesUsed
    if let pdop = UBXPlausible.dop(pdop) { builder.epoch.fix.pdop = pdop }
    builder.epoch.fix.gnssFixOK = gnssFixOK
    guard let fixType else { return }
    // The fix type alone, as gpsd: a fix the receiver flags outside its limits (gnssFixOK
    // clear) still has its position and error estimates, by which a request judges it.
    let mode = fixType.mode
    builder.epoch.state(binary: mode)
    guard mode != .noFix else { return }
    builder.epoch.fix.quality = fixType.quality(
      differential: differential, carrier: carrierSolution)
    builder.epoch.takeGeodeticSolution(
      position: position, altitudeMSL: altitudeMSL, altitudeHAE: altitudeHAE,
      horizontalAccuracy: horizontalAccuracy, verticalAccuracy: verticalAccuracy,
      speed: groundSpeed, course: headingOfMotion, speedAccuracy: speedAccuracy,
      courseAccuracy: headingAccuracy)
    builder.epoch.fix.climb = -velocityDown
    builder.epoch.fix.velocityNED = ECEFVector(x: velocityNorth, y: velocityEast, z: velocityDown)
    if let magneticDeclination, abs(magneticDeclination) <= 180 {
      builder.epoch.fix.magneticVariation = magneticDeclination
    }
  }
}

extension UBXNavPosLLH: BinaryMessageDescriptor {
  /// No validity of its own: NAV-STATUS, NAV-SOL or NAV-PVT of the epoch deny a fix when
  /// there is none.
  func merge(into builder: inout FixBuilder) {
    builder.epoch.takePosition(position, from: .binarySolution)
    builder.epoch.takeAltitude(
      msl: UBXPlausible.altitude(altitudeMSL),
      geoidSeparation: UBXPlausible.separation(hae: altitudeHAE, msl: altitudeMSL),
      hae: UBXPlausible.altitude(altitudeHAE), from: .binarySolution)
    builder.epoch.noteStatedMode(altitude: altitudeMSL, satellitesUsed: nil)
    builder.epoch.takeHorizontalAccuracy(horizontalAccuracy, from: .binarySolution)
    builder.epoch.takeVerticalAccuracy(verticalAccuracy, from: .binarySolution)
  }
}

extension UBXNavHPPosLLH: BinaryMessageDescriptor {
  func merge(into builder: inout FixBuilder) {
    builder.epoch.takePosition(position, from: .highPrecisionSolution)
    builder.epoch.takeAltitude(
      msl: UBXPlausible.altitude(altitudeMSL),
      geoidSeparation: UBXPlausible.separation(hae: altitudeHAE, msl: altitudeMSL),
      hae: UBXPlausible.altitude(altitudeHAE), from: .highPrecisionSolution)
    builder.epoch.takeHorizontalAccuracy(horizontalAccuracy, from: .binarySolution)
    builder.epoch.takeVerticalAccuracy(verticalAccuracy, from: .binarySolution)
  }
}

extension UBXNavPosECEF: BinaryMessageDescriptor {
  func merge(into builder: inout FixBuilder) {
    builder.epoch.fix.ecefPosition = ECEFVector(x: x, y: y, z: z)
    builder.epoch.fix.ecefPositionAccuracy = accuracy
  }
}

extension UBXNavVelECEF: BinaryMessageDescriptor {
  func merge(into builder: inout FixBuilder) {
    builder.epoch.fix.ecefVelocity = ECEFVector(x: x, y: y, z: z)
    builder.epoch.fix.ecefVelocityAccuracy = accuracy
  }
}

extension UBXNavVelNED: BinaryMessageDescriptor {
  func merge(into builder: inout FixBuilder) {
    builder.epoch.takeMotion(
      speed: UBXPlausible.speed(groundSpeed), course: heading, from: .binarySolution)
    builder.epoch.fix.climb = -velocityDown
    builder.epoch.fix.velocityNED = ECEFVector(x: velocityNorth, y: velocityEast, z: velocityDown)
    builder.epoch.fix.speedAccuracy = speedAccuracy
    builder.epoch.fix.courseAccuracy = headingAccuracy
  }
}

extension UBXNavSol: BinaryMessageDescriptor {
  /// The solution of u-blox 6 and older in ECEF: its latitude, longitude and height are
  /// those of the WGS-84 ellipsoid (``ECEFVector/geodetic``), its speed, course and climb
  /// those of its velocity there, as gpsd's ecef_to_wgs84fix makes them.
  func merge(into builder: inout FixBuilder) {
    builder.epoch.fix.ecefPosition = ECEFVector(x: ecefX, y: ecefY, z: ecefZ)
    builder.epoch.fix.ecefPositionAccuracy = positionAccuracy
    builder.epoch.fix.ecefVelocity = ECEFVector(x: ecefVX, y: ecefVY, z: ecefVZ)
    builder.epoch.fix.ecefVelocityAccuracy = speedAccuracy
    builder.epoch.fix.satellitesUsed = satellitesUsed
    if let pdop = UBXPlausible.dop(pdop) { builder.epoch.fix.pdop = pdop }
    if let week, timeOfWeekValid, let leap = builder.leapSeconds {
      builder.epoch.explicitDate = FixBuilder.utcDate(
        week: week, timeOfWeek: iTOW, leapSeconds: leap)
    }
    builder.epoch.fix.gnssFixOK = gnssFixOK
    guard let fixType else { return }
    let mode = fixType.mode(fixOK: gnssFixOK)
    builder.epoch.state(binary: mode)
    guard mode != .noFix else { return }
    builder.epoch.fix.quality = fixType.quality(differential: differential, carrier: nil)
    let geodetic = ECEFVector(x: ecefX, y: ecefY, z: ecefZ).geodetic(
      velocity: ECEFVector(x: ecefVX, y: ecefVY, z: ecefVZ))
    builder.epoch.takePosition(geodetic.position, from: .binarySolution)
    builder.epoch.takeAltitude(
      hae: UBXPlausible.altitude(geodetic.height), from: .binarySolution)
    builder.epoch.takeMotion(
      speed: UBXPlausible.speed(geodetic.speed), course: UBXPlausible.course(geodetic.course),
      from: .binarySolution)
    builder.epoch.fix.climb = geodetic.climb
  }
}

extension UBXNavDOP: BinaryMessageDescriptor {
  func merge(into builder: inout FixBuilder) {
    let hdop = UBXPlausible.dop(hdop)
    let vdop = UBXPlausible.dop(vdop)
    let pdop = UBXPlausible.dop(pdop)
    let tdop = UBXPlausible.dop(tdop)
    if let hdop { builder.epoch.fix.hdop = hdop }
    if let vdop { builder.epoch.fix.vdop = vdop }
    if let pdop { builder.epoch.fix.pdop = pdop }
    if let tdop { builder.epoch.fix.tdop = tdop }
    builder.epoch.viewDOP = BinaryDOP(
      gdop: UBXPlausible.dop(gdop), tdop: tdop, edop: UBXPlausible.dop(edop),
      ndop: UBXPlausible.dop(ndop), hdop: hdop, vdop: vdop, pdop: pdop)
  }
}

extension UBXNavStatus: BinaryMessageDescriptor {
  func merge(into builder: inout FixBuilder) {
    if let timeToFirstFix { builder.epoch.fix.timeToFirstFix = timeToFirstFix }
    if builder.epoch.fix.gnssFixOK == nil { builder.epoch.fix.gnssFixOK = gnssFixOK }
    guard let fixType else { return }
    let mode = fixType.mode
    builder.epoch.state(binary: mode)
    if mode != .noFix, builder.epoch.fix.quality == nil {
      builder.epoch.fix.quality = fixType.quality(
        differential: differential, carrier: carrierSolution)
    }
  }
}

extension UBXNavEOE: BinaryMessageDescriptor {
  static var endsEpoch: Bool { true }
  func merge(into builder: inout FixBuilder) {}
}

extension UBXNavTimeUTC: BinaryMessageDescriptor {
  /// The leap second itself, as NAV-PVT's.
  var time: UTCTime? { timestamp.flatMap { $0.leapSecondMillisecond } }

  var statedLeapSeconds: Int? {
    timestamp.flatMap { FixBuilder.leapSeconds(timeOfWeek: iTOW, utc: $0.time) }
  }

  func merge(into builder: inout FixBuilder) {
    guard let timestamp else { return }
    builder.epoch.explicitDate = timestamp.dateOfNearestMillisecond
    if let leap = statedLeapSeconds { builder.epoch.fix.leapSeconds = leap }
  }
}

extension UBXNavTimeGPS: BinaryMessageDescriptor {
  var statedLeapSeconds: Int? { leapSeconds }

  func merge(into builder: inout FixBuilder) {
    if let leapSeconds { builder.epoch.fix.leapSeconds = leapSeconds }
    if let week, let leap = builder.leapSeconds, builder.epoch.explicitDate == nil {
      builder.epoch.explicitDate = FixBuilder.utcDate(
        week: week, timeOfWeek: iTOW, leapSeconds: leap)
    }
  }
}

extension UBXNavSat: BinaryMessageDescriptor {
  func merge(into builder: inout FixBuilder) {
    guard builder.epoch.takeSatellites(from: .binarySatellites) else { return }
    for block in satellites {
      if let satellite = block.satellite { builder.epoch.addSatellite(satellite) }
    }
  }
}

extension UBXNavSVInfo: BinaryMessageDescriptor {
  func merge(into builder: inout FixBuilder) {
    guard builder.epoch.takeSatellites(from: .binarySatellites) else { return }
    for block in channels {
      if let satellite = block.satellite { builder.epoch.addSatellite(satellite) }
    }
  }
}

extension UBXNavSig: BinaryMessageDescriptor {
  func merge(into builder: inout FixBuilder) {
    guard builder.epoch.takeSatellites(from: .binarySignals) else { return }
    for block in signals {
      if let satellite = block.satellite {
        builder.epoch.addSatellite(satellite, combining: true)
      }
    }
  }
}

extension UBXTimTP: BinaryMessageDescriptor {
  func merge(into builder: inout FixBuilder) {}
}

extension UBXMonRF: BinaryMessageDescriptor {
  /// The first (L1) front end's jamming indicator and antenna, kept until the next report.
  func merge(into builder: inout FixBuilder) {
    guard let first = blocks.first else { return }
    builder.settings.jammingIndicator = Int16(first.jammingIndicator)
    builder.settings.antennaStatus = first.antennaStatus?.rawValue ?? .max
    builder.settings.antennaPower = first.antennaPower?.rawValue ?? .max
  }
}

extension UBXMonHW: BinaryMessageDescriptor {
  func merge(into builder: inout FixBuilder) {
    builder.settings.jammingIndicator = Int16(jammingIndicator)
    builder.settings.antennaStatus = antennaStatus?.rawValue ?? .max
    builder.settings.antennaPower = antennaPower?.rawValue ?? .max
  }
}

extension UBXMonVer: BinaryMessageDescriptor {
  func merge(into builder: inout FixBuilder) {}
}

extension FixBuilder {
  /// Adds the HNR-PVT held back while a navigation epoch was in progress.
  @inline(__always)
  mutating func releaseHeldHighRateSolution(emit: (Epoch) throws -> Void) rethrows {
    guard let held = navigationCadence.held else { return }
    navigationCadence.held = nil
    try add(held, emit: emit)
  }
}

extension UBXMessage {
  /// Adds the message to `builder`'s epochs through its descriptor, as the registry does for
  /// a sentence; calls `emit` for each epoch it completes.
  @inline(__always)
  func add(to builder: inout FixBuilder, emit: (Epoch) throws -> Void) rethrows {
    switch self {
    case .navPVT(let m):
      // Noted even when it comes too late to be merged.
      try builder.releaseHeldHighRateSolution(emit: emit)
      builder.navigationCadence.note(m.iTOW)
      try builder.add(m, emit: emit)
    case .hnrPVT(let m):
      if builder.navigationCadence.isDue(at: m.iTOW) {
        // The navigation epoch of the same time comes later and says more: it makes that fix.
        builder.leaveToNavigation()
      } else if builder.navigationCadence.awaitingEnd {
        // Inside a navigation epoch that NAV-EOE will end: after it.
        try builder.releaseHeldHighRateSolution(emit: emit)
        builder.navigationCadence.held = m
      } else {
        try builder.releaseHeldHighRateSolution(emit: emit)
        try builder.add(m, emit: emit)
      }
    case .navPosLLH(let m): try builder.add(m, emit: emit)
    case .navHPPosLLH(let m): try builder.add(m, emit: emit)
    case .navPosECEF(let m): try builder.add(m, emit: emit)
    case .navVelNED(let m): try builder.add(m, emit: emit)
    case .navVelECEF(let m): try builder.add(m, emit: emit)
    case .navSol(let m): try builder.add(m, emit: emit)
    case .navDOP(let m): try builder.add(m, emit: emit)
    case .navStatus(let m): try builder.add(m, emit: emit)
    case .navEOE(let m):
      try builder.add(m, emit: emit)
      builder.navigationCadence.sawEndOfEpoch = true
      builder.navigationCadence.awaitingEnd = false
      try builder.releaseHeldHighRateSolution(emit: emit)
    case .navTimeUTC(let m): try builder.add(m, emit: emit)
    case .navTimeGPS(let m): try builder.add(m, emit: emit)
    case .navSat(let m): try builder.add(m, emit: emit)
    case .navSVInfo(let m): try builder.add(m, emit: emit)
    case .navSig(let m): try builder.add(m, emit: emit)
    case .timTP(let m): try builder.add(m, emit: emit)
    case .monRF(let m): try builder.add(m, emit: emit)
    case .monHW(let m): try builder.add(m, emit: emit)
    case .monVer(let m): try builder.add(m, emit: emit)
    }
  }
}

/// Latitude, longitude and height on the WGS-84 ellipsoid of an ECEF position, with the
/// speed, course and climb of an ECEF velocity there.
struct GeodeticSolution {
  var position: Position?
  var height: Double
  var speed: Double
  var course: Double
  var climb: Double
}

extension ECEFVector {
  /// This position on the WGS-84 ellipsoid, and `velocity` as speed over ground, course
  /// and climb: Bowring's formula in one step, as gpsd's ecef_to_wgs84fix (centimetre
  /// positions need no more); the position to 1e-9°, gpsd's printed precision.
  func geodetic(velocity: ECEFVector) -> GeodeticSolution {
    let a = 6_378_137.0
    let f = 1 / 298.257223563
    let b = a * (1 - f)
    let e2 = (a * a - b * b) / (a * a)
    let ePrime2 = (a * a - b * b) / (b * b)
    let lambda = atan2(y, x)
    let p = (x * x + y * y).squareRoot()
    let theta = atan2(z * a, p * b)
    let sinTheta = sin(theta)
    let cosTheta = cos(theta)
    let phi = atan2(
      z + ePrime2 * b * sinTheta * sinTheta * sinTheta,
      p - e2 * a * cosTheta * cosTheta * cosTheta)
    let sinPhi = sin(phi)
    let cosPhi = cos(phi)
    let n = a / (1 - e2 * sinPhi * sinPhi).squareRoot()
    let height = p / cosPhi - n
    let sinLambda = sin(lambda)
    let cosLambda = cos(lambda)
    let north =
      -velocity.x * sinPhi * cosLambda - velocity.y * sinPhi * sinLambda + velocity.z * cosPhi
    let east = -velocity.x * sinLambda + velocity.y * cosLambda
    let up =
      velocity.x * cosPhi * cosLambda + velocity.y * cosPhi * sinLambda + velocity.z * sinPhi
    var course = atan2(east, north) * 180 / Double.pi
    if course < 0 { course += 360 }
    if course >= 360 { course -= 360 }
    let degrees = 180 / Double.pi
    return GeodeticSolution(
      position: Position(
        ubloxLatitude: Int64((phi * degrees * 1e9).rounded()),
        longitude: Int64((lambda * degrees * 1e9).rounded()), digits: 9),
      height: height, speed: (north * north + east * east).squareRoot(), course: course,
      climb: up)
  }
}
