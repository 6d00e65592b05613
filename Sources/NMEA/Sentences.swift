/// GGA fix quality (field 6).
public struct FixQuality: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
  public let rawValue: Int
  public init(rawValue: Int) { self.rawValue = rawValue }

  public static let invalid = FixQuality(rawValue: 0)
  public static let gps = FixQuality(rawValue: 1)
  public static let differential = FixQuality(rawValue: 2)
  public static let pps = FixQuality(rawValue: 3)
  public static let rtkFixed = FixQuality(rawValue: 4)
  public static let rtkFloat = FixQuality(rawValue: 5)
  public static let deadReckoning = FixQuality(rawValue: 6)
  public static let manual = FixQuality(rawValue: 7)
  public static let simulated = FixQuality(rawValue: 8)

  public var description: String {
    switch rawValue {
    case 0: return "invalid"
    case 1: return "GPS"
    case 2: return "DGPS"
    case 3: return "PPS"
    case 4: return "RTK fixed"
    case 5: return "RTK float"
    case 6: return "dead reckoning"
    case 7: return "manual"
    case 8: return "simulated"
    default: return "quality \(rawValue)"
    }
  }
}

/// The NMEA 2.3+ mode indicator (RMC, GLL, VTG, one per system in GNS).
public struct ModeIndicator: RawRepresentable, Sendable, Hashable {
  /// The ASCII letter.
  public let rawValue: UInt8
  public init(rawValue: UInt8) { self.rawValue = rawValue }

  public static let autonomous = ModeIndicator(rawValue: 0x41)  // A
  public static let differential = ModeIndicator(rawValue: 0x44)  // D
  public static let estimated = ModeIndicator(rawValue: 0x45)  // E: dead reckoning
  public static let rtkFloat = ModeIndicator(rawValue: 0x46)  // F
  public static let manual = ModeIndicator(rawValue: 0x4D)  // M
  public static let notValid = ModeIndicator(rawValue: 0x4E)  // N
  public static let precise = ModeIndicator(rawValue: 0x50)  // P
  public static let rtkFixed = ModeIndicator(rawValue: 0x52)  // R
  public static let simulator = ModeIndicator(rawValue: 0x53)  // S

  /// Whether the mode stands for a position fix.
  public var isValid: Bool { self != .notValid && self != .manual && self != .simulator }
}

/// GSA fix type: no fix, 2D or 3D.
public enum FixMode: UInt8, Sendable, Hashable, Comparable, CustomStringConvertible {
  case noFix = 1
  case twoD = 2
  case threeD = 3

  public static func < (lhs: FixMode, rhs: FixMode) -> Bool { lhs.rawValue < rhs.rawValue }

  public var description: String {
    switch self {
    case .noFix: return "no fix"
    case .twoD: return "2D"
    case .threeD: return "3D"
    }
  }
}

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

/// Up to 12 satellite IDs, stored inline.
public struct SatelliteIDList: Sendable, Hashable, RandomAccessCollection {
  public static let capacity = 16
  var storage = InlineArray<16, UInt16>(repeating: 0)
  public private(set) var count = 0

  public init() {}

  public var startIndex: Int { 0 }
  public var endIndex: Int { count }
  public subscript(position: Int) -> UInt16 { storage[position] }

  mutating func append(_ id: UInt16) {
    guard count < Self.capacity else { return }
    storage[count] = id
    count += 1
  }

  public static func == (lhs: SatelliteIDList, rhs: SatelliteIDList) -> Bool {
    lhs.elementsEqual(rhs)
  }

  public func hash(into hasher: inout Hasher) {
    hasher.combine(count)
    for id in self { hasher.combine(id) }
  }
}

/// GSA: DOPs and the satellites used, for one system or all.
public struct GSA: Sendable, Hashable {
  public var talker: Talker
  /// `M` manual or `A` automatic 2D/3D selection.
  public var selectionMode: UInt8?
  public var fixMode: FixMode?
  /// IDs of the satellites used in the solution.
  public var satellites = SatelliteIDList()
  public var pdop: Double?
  public var hdop: Double?
  public var vdop: Double?
  /// NMEA 4.10 system ID (1 GPS, 2 GLONASS, 3 Galileo, 4 BeiDou, 5 QZSS, 6 NavIC).
  public var systemID: Int?
}

/// One satellite of a GSV sentence.
public struct SatelliteInView: Sendable, Hashable {
  /// The ID as the receiver numbers it (meaning depends on talker and receiver).
  public var id: Int
  /// Elevation, degrees (-90...90).
  public var elevation: Int?
  /// Azimuth, degrees true (0...359).
  public var azimuth: Int?
  /// Carrier-to-noise density, dB-Hz.
  public var snr: Int?

  public init(id: Int, elevation: Int? = nil, azimuth: Int? = nil, snr: Int? = nil) {
    self.id = id
    self.elevation = elevation
    self.azimuth = azimuth
    self.snr = snr
  }
}

/// GSV: satellites in view, four per sentence.
public struct GSV: Sendable, Hashable, RandomAccessCollection {
  public var talker: Talker
  // Compact storage (a GSV is most of what a receiver sends, and every copy of a sentence
  // copies its largest case): the optional header fields as values with presence bits, the
  // satellites as four columns with `absent` for an empty field. Values are exact: the
  // parser never produces `absent`, and satellites are only added by the parser.
  var presence: UInt8 = 0
  var storedCount: UInt8 = 0
  public var messageCount: Int
  public var messageNumber: Int
  var storedSatellitesInView = 0
  var storedSignalID = 0
  var storedSystemID = 0
  var ids = InlineArray<4, Int>(repeating: 0)
  var elevations = InlineArray<4, Int>(repeating: GSV.absent)
  var azimuths = InlineArray<4, Int>(repeating: GSV.absent)
  var snrs = InlineArray<4, Int>(repeating: GSV.absent)

  /// An empty satellite field.
  static let absent = Int.min

  init(talker: Talker, messageCount: Int = 0, messageNumber: Int = 0) {
    self.talker = talker
    self.messageCount = messageCount
    self.messageNumber = messageNumber
  }

  public var satellitesInView: Int? {
    get { PresenceBits.value(storedSatellitesInView, in: presence, bit: 0) }
    set { PresenceBits.set(newValue, in: &storedSatellitesInView, bits: &presence, bit: 0) }
  }

  /// NMEA 4.10 signal ID (for GPS: 1 L1 C/A, 5 L2C-M, 6 L2C-L, 7 L5-I, 8 L5-Q …).
  public var signalID: Int? {
    get { PresenceBits.value(storedSignalID, in: presence, bit: 1) }
    set { PresenceBits.set(newValue, in: &storedSignalID, bits: &presence, bit: 1) }
  }

  /// A system ID after the signal ID (NMEA 4.10 numbering), as Quectel's `$PQGSV` writes it.
  public var systemID: Int? {
    get { PresenceBits.value(storedSystemID, in: presence, bit: 2) }
    set { PresenceBits.set(newValue, in: &storedSystemID, bits: &presence, bit: 2) }
  }

  /// Adds a satellite (at most four); `absent` for an empty field.
  @inline(__always)
  mutating func append(id: Int, elevation: Int, azimuth: Int, snr: Int) {
    let index = Int(storedCount)
    guard index < 4 else { return }
    ids[index] = id
    elevations[index] = elevation
    azimuths[index] = azimuth
    snrs[index] = snr
    storedCount &+= 1
  }

  mutating func append(_ satellite: SatelliteInView) {
    append(
      id: satellite.id, elevation: satellite.elevation ?? Self.absent,
      azimuth: satellite.azimuth ?? Self.absent, snr: satellite.snr ?? Self.absent)
  }

  @inline(__always)
  static func value(_ stored: Int) -> Int? { stored == absent ? nil : stored }

  public var startIndex: Int { 0 }
  public var endIndex: Int { Int(storedCount) }
  public subscript(position: Int) -> SatelliteInView {
    SatelliteInView(
      id: ids[position], elevation: Self.value(elevations[position]),
      azimuth: Self.value(azimuths[position]), snr: Self.value(snrs[position]))
  }

  public static func == (lhs: GSV, rhs: GSV) -> Bool {
    lhs.talker == rhs.talker && lhs.messageCount == rhs.messageCount
      && lhs.messageNumber == rhs.messageNumber && lhs.satellitesInView == rhs.satellitesInView
      && lhs.signalID == rhs.signalID && lhs.systemID == rhs.systemID && lhs.elementsEqual(rhs)
  }

  public func hash(into hasher: inout Hasher) {
    hasher.combine(talker)
    hasher.combine(messageNumber)
    for satellite in self { hasher.combine(satellite) }
  }
}

/// GLL: position and time.
public struct GLL: Sendable, Hashable {
  public var talker: Talker
  public var position: Position?
  public var time: UTCTime?
  public var isValid: Bool?
  public var mode: ModeIndicator?
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

/// ZDA: time and full date.
public struct ZDA: Sendable, Hashable {
  public var talker: Talker
  public var time: UTCTime?
  public var date: UTCDate?
  public var localZoneHours: Int?
  public var localZoneMinutes: Int?
}

/// GST: pseudorange error statistics, metres (one sigma).
public struct GST: Sendable, Hashable {
  public var talker: Talker
  public var time: UTCTime?
  public var rangeRMS: Double?
  public var semiMajorError: Double?
  public var semiMinorError: Double?
  /// Orientation of the semi-major axis, degrees from true north.
  public var orientation: Double?
  public var latitudeError: Double?
  public var longitudeError: Double?
  public var altitudeError: Double?
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

/// GBS: satellite fault detection (RAIM).
public struct GBS: Sendable, Hashable {
  public var talker: Talker
  public var time: UTCTime?
  public var latitudeError: Double?
  public var longitudeError: Double?
  public var altitudeError: Double?
  public var failedSatellite: Int?
  public var probability: Double?
  public var bias: Double?
  public var biasStandardDeviation: Double?
  public var systemID: Int?
  public var signalID: Int?
}

/// GRS: range residuals, metres, in the order of the satellites of GSA.
public struct GRS: Sendable, Hashable {
  public var talker: Talker
  public var time: UTCTime?
  /// 0: residuals used to calculate the position; 1: recomputed after it.
  public var mode: Int?
  public var residuals: [Double?]
  public var systemID: Int?
  public var signalID: Int?
}

/// DTM: datum reference.
public struct DTM: Sendable, Hashable {
  public var talker: Talker
  public var datum: String?
  public var subDatum: String?
  /// Offsets in minutes, north and east positive.
  public var latitudeOffset: Double?
  public var longitudeOffset: Double?
  public var altitudeOffset: Double?
  public var referenceDatum: String?
}

/// TXT: a text message from the receiver (banners, antenna status …).
public struct TXT: Sendable, Hashable {
  public var talker: Talker
  public var messageCount: Int?
  public var messageNumber: Int?
  /// 0 error, 1 warning, 2 notice, 7 user.
  public var messageType: Int?
  public var text: String
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

/// One satellite of `$PUBX,03`.
public struct PUBXSatellite: Sendable, Hashable {
  public var id: Int
  /// `U` used, `e` ephemeris available but not used, `-` not used.
  public var status: UInt8?
  public var azimuth: Int?
  public var elevation: Int?
  public var snr: Int?
  /// Seconds the carrier has been locked.
  public var lockTime: Int?

  public init(
    id: Int, status: UInt8? = nil, azimuth: Int? = nil, elevation: Int? = nil, snr: Int? = nil,
    lockTime: Int? = nil
  ) {
    self.id = id
    self.status = status
    self.azimuth = azimuth
    self.elevation = elevation
    self.snr = snr
    self.lockTime = lockTime
  }
}

/// `$PUBX,03`: u-blox satellite status.
public struct PUBXSatellites: Sendable, Hashable {
  public var satellites: [PUBXSatellite]
}

/// `$PUBX,04`: u-blox time of day and clock information.
public struct PUBXTime: Sendable, Hashable {
  public var time: UTCTime?
  public var date: UTCDate?
  public var timeOfWeek: Double?
  public var week: Int?
  public var leapSeconds: Int?
  /// Whether the leap seconds value is the firmware's default rather than from the satellites.
  public var leapSecondsAreDefault: Bool
  public var clockBias: Int?
  public var clockDrift: Double?
  public var timePulseGranularity: Int?
}

/// Result code of `$PMTK001`.
public enum MTKAckResult: Int, Sendable, Hashable {
  case invalidCommand = 0
  case unsupported = 1
  case failed = 2
  case succeeded = 3
}

/// `$PMTK001`: MediaTek's acknowledgement of a command.
public struct MTKAcknowledgement: Sendable, Hashable {
  /// The command number acknowledged (`161` for `$PMTK161`).
  public var command: Int
  public var result: MTKAckResult

  public init(command: Int, result: MTKAckResult) {
    self.command = command
    self.result = result
  }
}

/// `$PMTK010` system message or `$PMTK011` text, both sent at start-up.
public struct MTKSystemMessage: Sendable, Hashable {
  public enum Kind: Sendable, Hashable {
    /// `$PMTK010,nnn`: 0 unknown, 1 start-up, 2 extension-EPO notification, 3 normal mode.
    case system(Int)
    /// `$PMTK011,text`, usually `MTKGPS`.
    case text(String)
  }
  public var kind: Kind

  public init(kind: Kind) { self.kind = kind }
}

/// `$PGRME`: Garmin's estimated position errors, metres, as the receiver states them (Garmin,
/// *GPS 18x Technical Specifications*, 190-00879-08 Rev. B, §4.2.10 "Estimated Error
/// Information": HPE, VPE and EPE, 0.0 to 999.9 m; Garmin names no confidence level).
public struct GarminErrorEstimates: Sendable, Hashable {
  /// Estimated horizontal position error (HPE).
  public var horizontal: Double?
  /// Estimated vertical position error (VPE).
  public var vertical: Double?
  /// Estimated position error (EPE): the three-dimensional, spherical error.
  public var spherical: Double?

  public init(horizontal: Double? = nil, vertical: Double? = nil, spherical: Double? = nil) {
    self.horizontal = horizontal
    self.vertical = vertical
    self.spherical = spherical
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

/// `$PGRMM`: the map datum a Garmin receiver's positions are in (Garmin, *GPS 18x Technical
/// Specifications*, 190-00879-08 Rev. B, §4.2.12 "Map Datum": a name such as `WGS 84`).
public struct GarminDatum: Sendable, Hashable {
  public var datum: String?

  public init(datum: String?) { self.datum = datum }
}

/// A sentence the parser has no type for: its address and raw fields.
public struct UnknownSentence: Sendable, Hashable {
  /// Talker ID for standard sentences; ``Talker/proprietary`` for `$P…`.
  public var talker: Talker
  /// The address after `$` (`GPXTE`, `PGRMZ`, `AIVDM` …).
  public var address: String
  public var fields: [String]

  public init(talker: Talker, address: String, fields: [String]) {
    self.talker = talker
    self.address = address
    self.fields = fields
  }
}

/// A parsed NMEA sentence.
public enum Sentence: Sendable, Hashable {
  case gga(GGA)
  case rmc(RMC)
  case gsa(GSA)
  case gsv(GSV)
  case gll(GLL)
  case vtg(VTG)
  case zda(ZDA)
  case gst(GST)
  case gns(GNS)
  case gbs(GBS)
  case grs(GRS)
  case dtm(DTM)
  case txt(TXT)
  case pubxPosition(PUBXPosition)
  case pubxSatellites(PUBXSatellites)
  case pubxTime(PUBXTime)
  case mtkAcknowledgement(MTKAcknowledgement)
  case mtkSystemMessage(MTKSystemMessage)
  case garminErrorEstimates(GarminErrorEstimates)
  case garminAltitude(GarminAltitude)
  case garminDatum(GarminDatum)
  case unknown(UnknownSentence)

  /// The UTC time of day the sentence carries, if it carries one.
  @inline(__always)
  public var time: UTCTime? {
    switch self {
    case .gga(let s): return s.time
    case .rmc(let s): return s.time
    case .gll(let s): return s.time
    case .zda(let s): return s.time
    case .gst(let s): return s.time
    case .gns(let s): return s.time
    case .gbs(let s): return s.time
    case .grs(let s): return s.time
    case .pubxPosition(let s): return s.time
    case .pubxTime(let s): return s.time
    default: return nil
    }
  }
}
