import NMEA

/// What the driver knows as it wakes a receiver, from which the wake is planned: the time of
/// day, what the receiver is, where it was, and how it slept.
public struct WakeContext: Sendable, Hashable {
  /// UTC now, from the wall clock; `nil` when the wall clock cannot be trusted (a board
  /// without a real-time clock that booted in 1970).
  public var now: UTCTimestamp?
  /// How far `now` may be from the truth.
  public var timeAccuracy: Duration
  /// The family identified; `nil` when nothing is known (nothing is written then).
  public var family: ChipsetFamily?
  /// Where the receiver last was: from its last fix, or kept across a restart.
  public var lastPosition: KnownPosition?
  /// How long the receiver slept; `nil` for its first start under this driver.
  public var slept: Duration?
  /// Whether the receiver kept its backup power through the sleep (its ephemeris, almanac and
  /// clock): `false` when it was unplugged or its supply cut, `nil` when not known.
  public var keptBackup: Bool?

  public init(
    now: UTCTimestamp?, timeAccuracy: Duration, family: ChipsetFamily?,
    lastPosition: KnownPosition? = nil, slept: Duration? = nil, keptBackup: Bool? = nil
  ) {
    self.now = now
    self.timeAccuracy = timeAccuracy
    self.family = family
    self.lastPosition = lastPosition
    self.slept = slept
    self.keptBackup = keptBackup
  }
}

/// How a wake is planned: whether the receiver is aided, and with what.
public enum WakePlan {
  /// How long broadcast ephemeris is good for: about four hours (GPS ICD-200: a 4-hour fit
  /// interval; receivers use it for 2 to 4 hours). A sleep longer than this makes a warm start
  /// at best, whatever the backup.
  public static let ephemerisValidity: Duration = .seconds(4 * 3600)

  /// How fast the receiver may have moved since its last fix, for widening that fix's
  /// accuracy by its age: 50 m/s (180 km/h), a road vehicle's.
  public static let assumedSpeed = 50.0

  /// A wall clock before this is not set (a board without a real-time clock, before NTP).
  public static let earliestPlausibleYear = 2024

  /// The aiding to send at this wake, or `nil`: only on a start that will be warm or cold (the
  /// backup was lost, the sleep outlived the ephemeris, or the receiver's first start with
  /// nothing known of its backup), only to a family that takes aiding, and only with a wall
  /// clock that is set. The last position goes with it when it has one, its accuracy widened
  /// by its age.
  public static func aiding(for context: WakeContext) -> AidingData? {
    guard let family = context.family, family.driver.takesAiding else { return nil }
    guard let now = context.now, now.date.year >= earliestPlausibleYear else { return nil }
    let startsWarmOrCold: Bool
    if context.keptBackup == false {
      startsWarmOrCold = true
    } else if let slept = context.slept {
      startsWarmOrCold = slept > ephemerisValidity
    } else {
      startsWarmOrCold = context.keptBackup != true
    }
    guard startsWarmOrCold else { return nil }
    var data = AidingData(time: now, timeAccuracy: context.timeAccuracy)
    data.position = context.lastPosition.flatMap { $0.aiding(at: now) }
    return data
  }
}

extension WakePlan {
  /// The aiding steps for this wake of a receiver of `family`, time first and then position
  /// (``aiding(for:)`` decides whether there are any; none when the context names no family
  /// or another one): each a ``TimedCommand``, so that every attempt carries UTC as it is when
  /// written. `acknowledged`: whether a u-blox receiver was asked to answer them
  /// (`UBX-MGA-ACK-DATA0`); MediaTek always answers, with `$PMTK001`.
  public static func aidingSteps(
    for context: WakeContext, family: ChipsetFamily, acknowledged: Bool
  ) -> [CommandStep] {
    guard context.family == family, let data = aiding(for: context) else { return [] }
    var commands = [TimedCommand(family: family, content: .time(accuracy: data.timeAccuracy))]
    if data.position != nil, let known = context.lastPosition {
      commands.append(TimedCommand(family: family, content: .position(known)))
    }
    return commands.compactMap { $0.step(at: data.time, acknowledged: acknowledged) }
  }
}

/// A position the driver knew, with when and how well: from a fix, or kept in a state file
/// across a restart.
public struct KnownPosition: Sendable, Hashable {
  /// Degrees, north and east positive.
  public var latitude: Double
  public var longitude: Double
  /// Metres above the WGS-84 ellipsoid, when known.
  public var heightAboveEllipsoid: Double?
  /// Metres above mean sea level, when known.
  public var altitudeMSL: Double?
  /// Horizontal accuracy, metres.
  public var accuracy: Double
  /// When the position was measured (UTC).
  public var time: UTCTimestamp

  public init(
    latitude: Double, longitude: Double, heightAboveEllipsoid: Double?, altitudeMSL: Double?,
    accuracy: Double, time: UTCTimestamp
  ) {
    self.latitude = latitude
    self.longitude = longitude
    self.heightAboveEllipsoid = heightAboveEllipsoid
    self.altitudeMSL = altitudeMSL
    self.accuracy = accuracy
    self.time = time
  }

  /// The position of `fix`; `nil` without a position, a horizontal accuracy, or a date and
  /// time.
  public init?(_ fix: Fix) {
    guard let position = fix.position, let accuracy = fix.horizontalAccuracy,
      let time = fix.timestamp
    else { return nil }
    self.init(
      latitude: position.latitude.decimalDegrees, longitude: position.longitude.decimalDegrees,
      heightAboveEllipsoid: fix.altitudeHAE, altitudeMSL: fix.altitudeMSL, accuracy: accuracy,
      time: time)
  }

  /// Metres above the ellipsoid or sea level a receiver is taken to be at: from below the
  /// lowest shore (the Dead Sea's, −430 m) with the geoid's deepest (−106 m) to a
  /// stratospheric balloon's 50 km. A height outside is no receiver's.
  public static let plausibleHeights: ClosedRange<Double> = -1_000...50_000

  /// The horizontal accuracies a position worth keeping has: up to 100 km.
  public static let plausibleAccuracies: ClosedRange<Double> = 0...100_000

  /// Whether every figure is finite and in its range: latitude ±90°, longitude ±180°, the
  /// heights in ``plausibleHeights``, the accuracy in ``plausibleAccuracies``.
  public var isPlausible: Bool {
    (-90.0...90.0).contains(latitude) && (-180.0...180.0).contains(longitude)
      && heightAboveEllipsoid.map(Self.plausibleHeights.contains) != false
      && altitudeMSL.map(Self.plausibleHeights.contains) != false
      && Self.plausibleAccuracies.contains(accuracy)
  }

  /// The position to aid with at `now`, its accuracy widened by its age at
  /// ``WakePlan/assumedSpeed``; `nil` when measured after `now` (a clock that disagrees), or
  /// when not ``isPlausible`` (an app's ``KnownPosition`` is taken as given, and checked here).
  public func aiding(at now: UTCTimestamp) -> AidingPosition? {
    let age = now.unixTime - time.unixTime
    guard age >= 0, isPlausible else { return nil }
    // The aiding takes a height above the ellipsoid: an altitude above the geoid is off by
    // the geoid's height (at most 107 m), none at all by up to the highest mountain's.
    let (altitude, altitudeError): (Double, Double) =
      if let heightAboveEllipsoid { (heightAboveEllipsoid, 0) } else if let altitudeMSL {
        (altitudeMSL, 110)
      } else { (0, 9_000) }
    return AidingPosition(
      latitude: latitude, longitude: longitude, altitude: altitude,
      accuracy: accuracy + altitudeError + WakePlan.assumedSpeed * age)
  }
}
