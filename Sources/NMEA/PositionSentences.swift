// The sentences that carry an epoch's position and motion (``CycleRole/position``: GGA, RMC,
// GLL, GNS, PUBX,00; VTG and `$PGRMZ`, untimed): each type's value, a sample, its parse and
// its merge into the fix, in one place.

/// GGA: time, position, fix quality, altitude.
public struct GGA: Sendable, Hashable {
  public var talker: Talker
  public var time: UTCTime?
  public var position: Position?
  public var quality: FixQuality?
  public var satellitesUsed: Int?
  public var hdop: Double?
  /// Altitude above mean sea level (the geoid), metres.
  public var altitudeMSL: Double?
  /// Height of the geoid above the WGS-84 ellipsoid, metres.
  public var geoidSeparation: Double?
  /// Age of differential corrections, seconds.
  public var differentialAge: Double?
  public var differentialStation: Int?
}

/// RMC: the recommended minimum: time, date, status, position, speed and course.
public struct RMC: Sendable, Hashable {
  public var talker: Talker
  public var time: UTCTime?
  /// `true` for status `A` (valid), `false` for `V` (warning).
  public var isValid: Bool?
  public var position: Position?
  public var speedKnots: Double?
  /// Course over ground, degrees true.
  public var course: Double?
  public var date: UTCDate?
  /// Magnetic variation in degrees, east positive.
  public var magneticVariation: Double?
  public var mode: ModeIndicator?
  /// NMEA 4.10 navigational status (`S` safe, `C` caution, `U` unsafe, `V` not valid).
  public var navigationalStatus: UInt8?
}

/// GLL: position and time.
public struct GLL: Sendable, Hashable {
  public var talker: Talker
  public var position: Position?
  public var time: UTCTime?
  public var isValid: Bool?
  public var mode: ModeIndicator?
}

/// GNS: a multi-constellation fix.
public struct GNS: Sendable, Hashable {
  public var talker: Talker
  public var time: UTCTime?
  public var position: Position?
  /// One mode indicator per system, in the order GPS, GLONASS, Galileo, BeiDou, QZSS, NavIC.
  public var modes: [ModeIndicator] {
    (0..<modeCount).map { ModeIndicator(rawValue: modeStorage[$0]) }
  }
  var modeStorage = InlineArray<8, UInt8>(repeating: 0)
  var modeCount = 0
  public var satellitesUsed: Int?
  public var hdop: Double?
  public var altitudeMSL: Double?
  public var geoidSeparation: Double?
  public var differentialAge: Double?
  public var differentialStation: Int?
  public var navigationalStatus: UInt8?

  /// The best mode of any system (a fix if any system has one).
  public var bestMode: ModeIndicator? {
    var best: ModeIndicator?
    for index in 0..<modeCount {
      let mode = ModeIndicator(rawValue: modeStorage[index])
      if mode.isValid { return mode }
      best = best ?? mode
    }
    return best
  }

  public static func == (lhs: GNS, rhs: GNS) -> Bool {
    lhs.talker == rhs.talker && lhs.time == rhs.time && lhs.position == rhs.position
      && lhs.modes == rhs.modes && lhs.satellitesUsed == rhs.satellitesUsed
      && lhs.hdop == rhs.hdop && lhs.altitudeMSL == rhs.altitudeMSL
      && lhs.geoidSeparation == rhs.geoidSeparation && lhs.differentialAge == rhs.differentialAge
      && lhs.differentialStation == rhs.differentialStation
      && lhs.navigationalStatus == rhs.navigationalStatus
  }

  public func hash(into hasher: inout Hasher) {
    hasher.combine(time)
    hasher.combine(position)
  }
}

/// VTG: course and speed over ground.
public struct VTG: Sendable, Hashable {
  public var talker: Talker
  public var courseTrue: Double?
  public var courseMagnetic: Double?
  public var speedKnots: Double?
  public var speedKilometresPerHour: Double?
  public var mode: ModeIndicator?
}

/// `$PUBX,00`: u-blox position, with accuracy estimates and height above the ellipsoid.
public struct PUBXPosition: Sendable, Hashable {
  // Compact storage (every copy of a sentence copies its largest case, and this was it after
  // GSV): the ten decimals and the satellite count as values with presence bits, behind the
  // same public properties.
  var decimals = InlineArray<10, Double>(repeating: 0)
  var storedSatellitesUsed = 0
  public var position: Position?
  public var time: UTCTime?
  /// `NF`, `DR`, `G2`, `G3`, `D2`, `D3`, `RK`, `TT`, as two ASCII bytes.
  public var navigationStatus: UInt16?
  public var deadReckoning: Bool?
  var presence: UInt16 = 0

  init(
    time: UTCTime?, position: Position?, altitudeHAE: Double?, navigationStatus: UInt16?,
    horizontalAccuracy: Double?, verticalAccuracy: Double?, speedKilometresPerHour: Double?,
    course: Double?, verticalVelocityDown: Double?, differentialAge: Double?, hdop: Double?,
    vdop: Double?, tdop: Double?, satellitesUsed: Int?, deadReckoning: Bool?
  ) {
    self.time = time
    self.position = position
    self.navigationStatus = navigationStatus
    self.deadReckoning = deadReckoning
    self.altitudeHAE = altitudeHAE
    self.horizontalAccuracy = horizontalAccuracy
    self.verticalAccuracy = verticalAccuracy
    self.speedKilometresPerHour = speedKilometresPerHour
    self.course = course
    self.verticalVelocityDown = verticalVelocityDown
    self.differentialAge = differentialAge
    self.hdop = hdop
    self.vdop = vdop
    self.tdop = tdop
    self.satellitesUsed = satellitesUsed
  }

  @inline(__always)
  func decimal(_ index: Int) -> Double? {
    PresenceBits.value(decimals[index], in: presence, bit: index)
  }

  @inline(__always)
  mutating func setDecimal(_ index: Int, _ value: Double?) {
    PresenceBits.set(value, in: &decimals[index], bits: &presence, bit: index)
  }

  /// Altitude above the WGS-84 ellipsoid, metres.
  public var altitudeHAE: Double? {
    get { decimal(0) }
    set { setDecimal(0, newValue) }
  }
  public var horizontalAccuracy: Double? {
    get { decimal(1) }
    set { setDecimal(1, newValue) }
  }
  public var verticalAccuracy: Double? {
    get { decimal(2) }
    set { setDecimal(2, newValue) }
  }
  public var speedKilometresPerHour: Double? {
    get { decimal(3) }
    set { setDecimal(3, newValue) }
  }
  public var course: Double? {
    get { decimal(4) }
    set { setDecimal(4, newValue) }
  }
  /// Vertical velocity, metres per second, positive downwards (as u-blox reports it).
  public var verticalVelocityDown: Double? {
    get { decimal(5) }
    set { setDecimal(5, newValue) }
  }
  public var differentialAge: Double? {
    get { decimal(6) }
    set { setDecimal(6, newValue) }
  }
  public var hdop: Double? {
    get { decimal(7) }
    set { setDecimal(7, newValue) }
  }
  public var vdop: Double? {
    get { decimal(8) }
    set { setDecimal(8, newValue) }
  }
  public var tdop: Double? {
    get { decimal(9) }
    set { setDecimal(9, newValue) }
  }
  public var satellitesUsed: Int? {
    get { PresenceBits.value(storedSatellitesUsed, in: presence, bit: 10) }
    set { PresenceBits.set(newValue, in: &storedSatellitesUsed, bits: &presence, bit: 10) }
  }

  public static func == (lhs: PUBXPosition, rhs: PUBXPosition) -> Bool {
    guard
      lhs.time == rhs.time && lhs.position == rhs.position
        && lhs.navigationStatus == rhs.navigationStatus
        && lhs.deadReckoning == rhs.deadReckoning && lhs.satellitesUsed == rhs.satellitesUsed
    else { return false }
    for index in 0..<10 where lhs.decimal(index) != rhs.decimal(index) { return false }
    return true
  }

  public func hash(into hasher: inout Hasher) {
    hasher.combine(time)
    hasher.combine(position)
    hasher.combine(navigationStatus)
    hasher.combine(deadReckoning)
    hasher.combine(satellitesUsed)
    for index in 0..<10 { hasher.combine(decimal(index)) }
  }
}

/// `$PGRMZ`: Garmin's altitude in feet and the dimension of its fix (Garmin, *Garmin
/// Proprietary NMEA 0183 Sentences Technical Specifications*, 190-00684-00 Rev. C; the GPS
/// 18x does not send it, handhelds and chartplotters do).
public struct GarminAltitude: Sendable, Hashable {
  /// Altitude above mean sea level, feet, as sent.
  public var altitudeFeet: Double?
  /// The fix's dimension: 2 when the altitude is the user's (held), 3 when the receiver
  /// measured it; 1 (no fix) when it has none.
  public var fixMode: FixMode?

  public init(altitudeFeet: Double? = nil, fixMode: FixMode? = nil) {
    self.altitudeFeet = altitudeFeet
    self.fixMode = fixMode
  }

  /// The altitude in metres.
  public var altitudeMetres: Double? { altitudeFeet.map { $0 * 0.3048 } }
}

// $GPGGA,193221.00,2037.72792,N,08704.08478,W,1,04,1.7,-30.40,M,-13.9,M,,*7D
extension GGA: NMEASentenceDescriptor {
  static var address: SentenceAddress { "GGA" }
  static var role: CycleRole { .position }
  init(talker: Talker) { self.talker = talker }
  var sentence: Sentence { .gga(self) }
  var cycleKey: CycleKey { CycleKey(Self.address, talker: talker) }

  @inline(__always)
  static func parse(_ f: inout FieldReader, commas: Int, into gga: inout GGA)
    throws(NMEAParseError)
  {
    gga.time = try f.time()
    gga.position = try f.position()
    if let quality = try f.uint() {
      gga.quality = quality <= 8 ? FixQuality(rawValue: quality) : f.drop(.fixQuality)
    }
    gga.satellitesUsed = try f.uint()
    gga.hdop = try f.dop()
    gga.altitudeMSL = try f.altitude()
    f.skip(1)  // M
    gga.geoidSeparation = try f.geoidSeparation()
    f.skip(1)  // M
    gga.differentialAge = try f.decimal()
    gga.differentialStation = try f.uint()
  }

  @inline(__always)
  func merge(into builder: inout FixBuilder) {
    if quality?.rawValue == 0 { builder.epoch.fixDenied = true }
    if let quality, quality.rawValue > 0 {
      builder.epoch.takePosition(position, from: .fixData)
      builder.epoch.takeAltitude(
        msl: altitudeMSL, geoidSeparation: geoidSeparation, from: .fixData)
      builder.epoch.noteStatedMode(altitude: altitudeMSL, satellitesUsed: satellitesUsed)
    }
    if let quality, quality.rawValue > 0, position != nil {
      builder.noteNMEAMode(positionWithSatellites: satellitesUsed, altitude: altitudeMSL)
    } else if quality != nil {
      builder.noteNMEANoFix()
    }
    if let quality { builder.epoch.fix.quality = quality }
    if let satellitesUsed { builder.epoch.fix.satellitesUsed = satellitesUsed }
    if let hdop { builder.epoch.fix.hdop = hdop }
    if let differentialAge { builder.epoch.fix.differentialAge = differentialAge }
    if let differentialStation { builder.epoch.fix.differentialStation = differentialStation }
  }
}

// $GPRMC,193221.00,A,2037.7279,N,08704.0848,W,00.1,201.8,231207,01,W,A*2D
extension RMC: NMEASentenceDescriptor {
  static var address: SentenceAddress { "RMC" }
  static var role: CycleRole { .position }
  init(talker: Talker) { self.talker = talker }
  var sentence: Sentence { .rmc(self) }
  var cycleKey: CycleKey { CycleKey(Self.address, talker: talker) }

  @inline(__always)
  static func parse(_ f: inout FieldReader, commas: Int, into rmc: inout RMC)
    throws(NMEAParseError)
  {
    rmc.time = try f.time()
    rmc.isValid = try f.status()
    rmc.position = try f.position()
    rmc.speedKnots = try f.speedKnots()
    rmc.course = try f.course()
    rmc.date = try f.date()
    rmc.magneticVariation = try f.magneticVariation()
    rmc.mode = try f.character().map(ModeIndicator.init(rawValue:))
    rmc.navigationalStatus = try f.character()
  }

  @inline(__always)
  func merge(into builder: inout FixBuilder) {
    if let date { builder.epoch.explicitDate = date }
    if isValid != false && mode?.isValid != false {
      builder.epoch.takePosition(position, from: .recommendedMinimum)
      builder.epoch.takeMotion(
        speed: speedKnots.map { $0 * FixBuilder.metresPerSecondPerKnot }, course: course,
        from: .recommendedMinimum)
      if position != nil { builder.noteNMEAModeOfPositionOnly() } else { builder.noteNMEANoFix() }
    } else {
      builder.epoch.fixDenied = true
      builder.noteNMEANoFix()
    }
    if let magneticVariation { builder.epoch.fix.magneticVariation = magneticVariation }
    if let mode { builder.epoch.fix.modeIndicator = mode }
  }
}

// $GPGLL,5250.53669,N,00542.34920,E,213950.00,A,A*67
extension GLL: NMEASentenceDescriptor {
  static var address: SentenceAddress { "GLL" }
  static var role: CycleRole { .position }
  init(talker: Talker) { self.talker = talker }
  var sentence: Sentence { .gll(self) }
  var cycleKey: CycleKey { CycleKey(Self.address, talker: talker) }

  static func parse(_ f: inout FieldReader, commas: Int, into gll: inout GLL)
    throws(NMEAParseError)
  {
    gll.position = try f.position()
    gll.time = try f.time()
    gll.isValid = try f.status()
    gll.mode = try f.character().map(ModeIndicator.init(rawValue:))
  }

  func merge(into builder: inout FixBuilder) {
    if isValid != false && mode?.isValid != false {
      builder.epoch.takePosition(position, from: .positionOnly)
      if position != nil { builder.noteNMEAModeOfPositionOnly() } else { builder.noteNMEANoFix() }
    } else {
      builder.epoch.fixDenied = true
      builder.noteNMEANoFix()
    }
    if let mode, builder.epoch.fix.modeIndicator == nil { builder.epoch.fix.modeIndicator = mode }
  }
}

// $GPGNS,112257.00,3844.24011,N,00908.43828,W,AN,03,10.5,,,,*57
extension GNS: NMEASentenceDescriptor {
  static var address: SentenceAddress { "GNS" }
  static var role: CycleRole { .position }
  init(talker: Talker) { self.talker = talker }
  var sentence: Sentence { .gns(self) }
  var cycleKey: CycleKey { CycleKey(Self.address, talker: talker) }

  static func parse(_ f: inout FieldReader, commas: Int, into gns: inout GNS)
    throws(NMEAParseError)
  {
    gns.time = try f.time()
    gns.position = try f.position()
    let modes = f.next()
    for offset in 0..<min(modes.count, 8) {
      gns.modeStorage[offset] = modes[offset]
      gns.modeCount += 1
    }
    gns.satellitesUsed = try f.uint()
    gns.hdop = try f.dop()
    gns.altitudeMSL = try f.altitude()
    gns.geoidSeparation = try f.geoidSeparation()
    gns.differentialAge = try f.decimal()
    gns.differentialStation = try f.uint()
    gns.navigationalStatus = try f.character()
  }

  func merge(into builder: inout FixBuilder) {
    let mode = bestMode
    if mode?.isValid ?? false {
      builder.epoch.takePosition(position, from: .fixData)
      builder.epoch.takeAltitude(
        msl: altitudeMSL, geoidSeparation: geoidSeparation, from: .fixData)
      builder.epoch.noteStatedMode(altitude: altitudeMSL, satellitesUsed: satellitesUsed)
      if position != nil {
        builder.noteNMEAMode(
          positionWithSatellites: satellitesUsed, altitude: altitudeMSL,
          fewerThanThreeIsNoFix: false)
      }
    }
    if let mode, builder.epoch.fix.modeIndicator == nil { builder.epoch.fix.modeIndicator = mode }
    if let satellitesUsed { builder.epoch.fix.satellitesUsed = satellitesUsed }
    if let hdop { builder.epoch.fix.hdop = hdop }
    if let differentialAge { builder.epoch.fix.differentialAge = differentialAge }
  }
}

// $GPVTG,,T,,M,0.020,N,0.038,K,A*2A
extension VTG: NMEASentenceDescriptor {
  static var address: SentenceAddress { "VTG" }
  static var role: CycleRole { .untimed }
  init(talker: Talker) { self.talker = talker }
  var sentence: Sentence { .vtg(self) }
  var cycleKey: CycleKey { CycleKey(Self.address, talker: talker) }
  var time: UTCTime? { nil }

  static func parse(_ f: inout FieldReader, commas: Int, into vtg: inout VTG)
    throws(NMEAParseError)
  {
    let first = try f.course()
    let second = f.next()
    if (second.count == 1 && second[0] == 0x54) || (second.isEmpty && f.hasMore) {
      // 'T': NMEA 2.3+ with unit letters; or the unit letters missing but the fields present,
      // the same layout with empty units.
      vtg.courseTrue = first
      vtg.courseMagnetic = try f.course()
      f.skip(1)
      vtg.speedKnots = try f.speedKnots()
      f.skip(1)
      vtg.speedKilometresPerHour = try f.speedKilometresPerHour()
      f.skip(1)
      vtg.mode = try f.character().map(ModeIndicator.init(rawValue:))
    } else {
      // NMEA 1.x: course true, course magnetic, knots, km/h without unit letters.
      vtg.courseTrue = first
      if !second.isEmpty {
        guard let (magnetic, _) = FieldReader.decimal(f.base, from: second.start) else {
          throw .badField(index: 2)
        }
        vtg.courseMagnetic = FieldReader.isCourse(magnetic) ? magnetic : f.drop(.course)
      }
      vtg.speedKnots = try f.speedKnots()
      vtg.speedKilometresPerHour = try f.speedKilometresPerHour()
    }
  }

  func merge(into builder: inout FixBuilder) {
    guard mode?.isValid != false else { return }
    let speed = speedKnots.map { $0 * FixBuilder.metresPerSecondPerKnot }
    builder.epoch.takeMotion(
      speed: speed ?? speedKilometresPerHour.map { $0 / 3.6 }, course: courseTrue,
      from: .recommendedMinimum)
  }
}

// $PUBX,00,081350.00,4717.113210,N,00833.915187,E,546.589,G3,2.1,2.0,0.007,77.52,0.007,,0.92,1.19,0.77,9,0,0*5F
extension PUBXPosition: NMEASentenceDescriptor {
  static var address: SentenceAddress { "PUBX,00" }
  static var role: CycleRole { .position }
  init(talker: Talker) {}
  var sentence: Sentence { .pubxPosition(self) }

  static func parse(_ f: inout FieldReader, commas: Int, into pubx: inout PUBXPosition)
    throws(NMEAParseError)
  {
    pubx.time = try f.time()
    pubx.position = try f.position()
    pubx.altitudeHAE = try f.altitude()
    let status = f.next()
    if status.count == 2 { pubx.navigationStatus = UInt16(status[0]) << 8 | UInt16(status[1]) }
    pubx.horizontalAccuracy = try f.nonNegativeDecimal(.accuracy)
    pubx.verticalAccuracy = try f.nonNegativeDecimal(.accuracy)
    pubx.speedKilometresPerHour = try f.speedKilometresPerHour()
    pubx.course = try f.course()
    pubx.verticalVelocityDown = try f.decimal()
    pubx.differentialAge = try f.decimal()
    pubx.hdop = try f.dop()
    pubx.vdop = try f.dop()
    pubx.tdop = try f.dop()
    pubx.satellitesUsed = try f.uint()
    f.skip(1)  // reserved
    pubx.deadReckoning = try f.uint().map { $0 != 0 }
  }

  func merge(into builder: inout FixBuilder) {
    let status = navigationStatus
    if status != nil && status != Self.noFix && status != Self.timeOnly {
      builder.epoch.takePosition(position, from: .recommendedMinimum)
      builder.epoch.takeAltitude(hae: altitudeHAE, from: .fixData)
      let threeD = status == Self.threeD || status == Self.differential3D || status == Self.rtk
      builder.epoch.state(threeD ? .threeD : .twoD)
      builder.epoch.takeMotion(
        speed: speedKilometresPerHour.map { $0 / 3.6 }, course: course,
        from: .recommendedMinimum)
      if let verticalVelocityDown { builder.epoch.fix.climb = -verticalVelocityDown }
    }
    builder.epoch.takeHorizontalAccuracy(horizontalAccuracy, from: .receiverEstimate)
    builder.epoch.takeVerticalAccuracy(verticalAccuracy, from: .receiverEstimate)
    if let hdop { builder.epoch.fix.hdop = hdop }
    if let vdop { builder.epoch.fix.vdop = vdop }
    if let tdop { builder.epoch.fix.tdop = tdop }
    if let satellitesUsed { builder.epoch.fix.satellitesUsed = satellitesUsed }
  }

  static let noFix: UInt16 = 0x4E46  // NF
  static let timeOnly: UInt16 = 0x5454  // TT
  static let threeD: UInt16 = 0x4733  // G3
  static let differential3D: UInt16 = 0x4433  // D3
  static let rtk: UInt16 = 0x524B  // RK
}

// $PGRMZ,93,f,3*21
extension GarminAltitude: NMEASentenceDescriptor {
  static var address: SentenceAddress { "PGRMZ" }
  static var role: CycleRole { .untimed }
  init(talker: Talker) {}
  var sentence: Sentence { .garminAltitude(self) }
  var time: UTCTime? { nil }

  /// `$PGRMZ,<altitude>,f,<dimension>`: feet, then 1 no fix, 2 2D (user altitude), 3 3D.
  static func parse(_ f: inout FieldReader, commas: Int, into garmin: inout GarminAltitude)
    throws(NMEAParseError)
  {
    let altitude = try f.decimal()
    let unit = try f.character()
    guard unit == nil || unit == 0x66 || unit == 0x46 else { throw f.fail() }  // f or F
    if let altitude {
      garmin.altitudeFeet =
        FieldReader.isAltitude(altitude * 0.3048) ? altitude : f.drop(.altitude)
    }
    garmin.fixMode = try f.fixMode()
  }

  /// The altitude counts unless the receiver says it has no fix; GGA's, when the epoch has
  /// one, wins (`finishFix`). Its dimension is a statement like GGA's.
  func merge(into builder: inout FixBuilder) {
    guard fixMode != .noFix else { return }
    if let altitudeMetres { builder.epoch.garminAltitude = altitudeMetres }
    if let fixMode {
      builder.epoch.state(fixMode)
      builder.noteNMEAMode(stated: fixMode)
    }
  }
}
