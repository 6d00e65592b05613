/// Everything a receiver said about one epoch (one measurement cycle), merged.
public struct Fix: Sendable, Hashable {
  /// UTC time of the epoch.
  public var time: UTCTime?
  /// UTC date: from RMC or ZDA, else carried from an earlier epoch (across midnight too).
  public var date: UTCDate?
  public var mode: FixMode = .noFix
  /// GGA quality (GPS, DGPS, RTK fixed, RTK float, dead reckoning …) when the receiver
  /// reported one.
  public var quality: FixQuality?
  /// The fix type the receiver's own GSA gave (the highest of the epoch's GSAs), when it
  /// sent one; ``mode`` is gpsd's reading of the epoch's sentences, which may differ.
  public internal(set) var receiverFixMode: FixMode?
  /// The receiver's mode indicator from RMC, GLL, VTG or GNS, when given.
  public var modeIndicator: ModeIndicator?
  /// Latitude and longitude exactly as the receiver wrote them; `nil` without a fix.
  public var position: Position?
  /// Altitude above mean sea level, metres.
  public var altitudeMSL: Double?
  /// Geoid height above the WGS-84 ellipsoid, metres.
  public var geoidSeparation: Double?
  /// Altitude above the ellipsoid given by the receiver itself (`$PUBX,00`).
  var reportedAltitudeHAE: Double?
  /// Speed over ground, metres per second.
  public var speed: Double?
  /// Course over ground, degrees from true north.
  public var course: Double?
  /// Vertical speed, metres per second, up positive: from the receiver, or from the
  /// altitudes of this and the previous 3D fix.
  public var climb: Double?
  /// Magnetic variation, degrees, east positive.
  public var magneticVariation: Double?
  public var hdop: Double?
  public var vdop: Double?
  public var pdop: Double?
  public var tdop: Double?
  /// Satellites used in the solution.
  public var satellitesUsed: Int?
  /// Latitude and longitude error, metres, one sigma (GST).
  public var latitudeError: Double?
  public var longitudeError: Double?
  /// Radius of horizontal uncertainty, metres (root of the summed latitude and longitude
  /// variances from GST, or the receiver's own estimate), as CLLocation reports it.
  public var horizontalAccuracy: Double?
  /// Vertical uncertainty, metres, one sigma (or the receiver's own estimate).
  public var verticalAccuracy: Double?
  /// Radius of three-dimensional (spherical) uncertainty, metres: the receiver's own
  /// estimate (Garmin's EPE, `$PGRME`).
  public var sphericalAccuracy: Double?
  /// The map datum the position is in, when the receiver names it (`$PGRMM`, `DTM`):
  /// `WGS 84` as Garmin writes it, DTM's codes as gpsd names them (`W84` is `WGS84`). Kept
  /// from the last sentence that named it; at most 40 bytes, as gpsd keeps it.
  public var datum: String? {
    get { storedDatum?.text }
    set { storedDatum = newValue.map(InlineText.init) }
  }
  /// Inline, so that a `Fix` stays plain bytes to copy (a `String` member would make each copy
  /// count references, and a `Fix` is copied several times per epoch).
  var storedDatum: InlineText?
  /// Age of differential corrections, seconds.
  public var differentialAge: Double?
  public var differentialStation: Int?
  /// Whether the fix came from binary (UBX) messages alone, no NMEA sentence: its NMEA
  /// watchers get sentences made from it (``NMEAEncoder``). `false` for a fix with any
  /// sentence, and for one not made by the fix builder (read from JSON, built by hand).
  public internal(set) var fromBinaryMessagesOnly = false

  // What u-blox binary messages add (NAV-PVT, NAV-SOL, NAV-POSECEF/VELECEF, NAV-VELNED,
  // NAV-TIMEGPS, NAV-STATUS, MON-RF/MON-HW), as gpsd reports it. Stored without Optionals'
  // tag bytes (−∞, which no receiver's figure is, and an impossible raw value stand for "not
  // reported", and equal themselves, unlike NaN), so that a `Fix` stays as cheap to copy for
  // the NMEA sentences that never set them. The RTK solution (float or
  // fixed) is ``quality``'s: GGA's 4 and 5, whichever message said it.
  var storedSpeedAccuracy = Fix.unreported
  var storedCourseAccuracy = Fix.unreported
  var storedECEFPosition = ECEFVector.unknown
  var storedECEFPositionAccuracy = Fix.unreported
  var storedECEFVelocity = ECEFVector.unknown
  var storedECEFVelocityAccuracy = Fix.unreported
  var storedVelocityNED = ECEFVector.unknown
  var storedTimeToFirstFix = Fix.unreported
  var storedLeapSeconds = Int16.min
  var storedJammingIndicator = Int16.min
  var storedAntennaStatus = UInt8.max
  var storedAntennaPower = UInt8.max
  var storedGNSSFixOK = UInt8.max
  static let unreported = -Double.infinity

  /// Speed accuracy, m/s (gpsd's `eps`): the receiver's own estimate.
  public var speedAccuracy: Double? {
    get { storedSpeedAccuracy == Fix.unreported ? nil : storedSpeedAccuracy }
    set { storedSpeedAccuracy = newValue ?? Fix.unreported }
  }
  /// Course (heading of motion) accuracy, degrees (gpsd's `epd`).
  public var courseAccuracy: Double? {
    get { storedCourseAccuracy == Fix.unreported ? nil : storedCourseAccuracy }
    set { storedCourseAccuracy = newValue ?? Fix.unreported }
  }
  /// Earth-centred, earth-fixed position, metres (`ecefx/y/z`), and its accuracy
  /// (`ecefpAcc`).
  public var ecefPosition: ECEFVector? {
    get { storedECEFPosition.isKnown ? storedECEFPosition : nil }
    set { storedECEFPosition = newValue ?? .unknown }
  }
  public var ecefPositionAccuracy: Double? {
    get { storedECEFPositionAccuracy == Fix.unreported ? nil : storedECEFPositionAccuracy }
    set { storedECEFPositionAccuracy = newValue ?? Fix.unreported }
  }
  /// Earth-centred, earth-fixed velocity, m/s (`ecefvx/vy/vz`), and its accuracy
  /// (`ecefvAcc`).
  public var ecefVelocity: ECEFVector? {
    get { storedECEFVelocity.isKnown ? storedECEFVelocity : nil }
    set { storedECEFVelocity = newValue ?? .unknown }
  }
  public var ecefVelocityAccuracy: Double? {
    get { storedECEFVelocityAccuracy == Fix.unreported ? nil : storedECEFVelocityAccuracy }
    set { storedECEFVelocityAccuracy = newValue ?? Fix.unreported }
  }
  /// Velocity north, east and down, m/s (`velN`, `velE`, `velD`), as `x`, `y`, `z`.
  public var velocityNED: ECEFVector? {
    get { storedVelocityNED.isKnown ? storedVelocityNED : nil }
    set { storedVelocityNED = newValue ?? .unknown }
  }
  /// Time to first fix, seconds, as the receiver counts it since its start (NAV-STATUS).
  public var timeToFirstFix: Double? {
    get { storedTimeToFirstFix == Fix.unreported ? nil : storedTimeToFirstFix }
    set { storedTimeToFirstFix = newValue ?? Fix.unreported }
  }
  /// GPS − UTC leap seconds, when the receiver says it knows them (`leapseconds`).
  public var leapSeconds: Int? {
    get { storedLeapSeconds == .min ? nil : Int(storedLeapSeconds) }
    set { storedLeapSeconds = newValue.map { Int16(clamping: $0) } ?? .min }
  }
  /// Continuous-wave jamming indicator, 0 (none) … 255 (strong) (`jam`).
  public var jammingIndicator: Int? {
    get { storedJammingIndicator == .min ? nil : Int(storedJammingIndicator) }
    set { storedJammingIndicator = newValue.map { Int16(clamping: $0) } ?? .min }
  }
  /// The active antenna's state (`ant`) and power (`antPwr`).
  public var antennaStatus: AntennaStatus? {
    get { AntennaStatus(rawValue: storedAntennaStatus) }
    set { storedAntennaStatus = newValue?.rawValue ?? .max }
  }
  public var antennaPower: AntennaPower? {
    get { AntennaPower(rawValue: storedAntennaPower) }
    set { storedAntennaPower = newValue?.rawValue ?? .max }
  }

  /// The receiver's own verdict on its fix (u-blox `gnssFixOK` of NAV-PVT, NAV-SOL or
  /// NAV-STATUS): `false` when the solution is outside the limits it was configured with
  /// (DOP and accuracy masks), though it reports the position with its error estimates, as
  /// gpsd does; `nil` when the receiver did not say. A request that asks for an accuracy
  /// judges such a fix by ``horizontalAccuracy``.
  public var gnssFixOK: Bool? {
    get { storedGNSSFixOK == .max ? nil : storedGNSSFixOK != 0 }
    set { storedGNSSFixOK = newValue.map { $0 ? 1 : 0 } ?? .max }
  }

  public init() {}

  /// Altitude above the WGS-84 ellipsoid, metres: the receiver's own, or MSL plus geoid
  /// separation.
  public var altitudeHAE: Double? {
    if let reportedAltitudeHAE { return reportedAltitudeHAE }
    guard let altitudeMSL, let geoidSeparation else { return nil }
    return altitudeMSL + geoidSeparation
  }

  /// Latitude in decimal degrees, north positive.
  public var latitude: Double? { position?.latitude.decimalDegrees }
  /// Longitude in decimal degrees, east positive.
  public var longitude: Double? { position?.longitude.decimalDegrees }

  /// Latitude and longitude in decimal degrees when the epoch has a position, `nil` when it
  /// has none: `.fix` events include every epoch, also those before the first position fix
  /// and those the receiver sent without one (`if let position = fix.coordinate { … }`).
  public var coordinate: (latitude: Double, longitude: Double)? {
    guard let position else { return nil }
    return (position.latitude.decimalDegrees, position.longitude.decimalDegrees)
  }

  /// Date and time together, when both are known.
  public var timestamp: UTCTimestamp? {
    guard let date, let time else { return nil }
    return UTCTimestamp(date: date, time: time)
  }
}

/// A vector of three components: an ECEF position (metres) or velocity (m/s), or a velocity
/// north, east, down.
public struct ECEFVector: Sendable, Hashable {
  public var x: Double
  public var y: Double
  public var z: Double

  public init(x: Double, y: Double, z: Double) {
    self.x = x
    self.y = y
    self.z = z
  }

  /// "Not reported", inside a `Fix`.
  static let unknown = ECEFVector(x: Fix.unreported, y: Fix.unreported, z: Fix.unreported)
  var isKnown: Bool { x != Fix.unreported }
}

/// Up to 40 bytes of text kept inline (longer text is cut there), for names a `Fix` carries.
struct InlineText: Sendable, Hashable {
  static let capacity = 40
  var bytes = InlineArray<40, UInt8>(repeating: 0)
  var count = 0

  init(_ text: String) {
    for byte in text.utf8 {
      guard count < Self.capacity else { break }
      bytes[count] = byte
      count += 1
    }
  }

  var text: String {
    var utf8: [UInt8] = []
    utf8.reserveCapacity(count)
    for index in 0..<count { utf8.append(bytes[index]) }
    return String(decoding: utf8, as: UTF8.self)
  }

  static func == (lhs: InlineText, rhs: InlineText) -> Bool {
    guard lhs.count == rhs.count else { return false }
    for index in 0..<lhs.count where lhs.bytes[index] != rhs.bytes[index] { return false }
    return true
  }

  func hash(into hasher: inout Hasher) {
    hasher.combine(count)
    for index in 0..<count { hasher.combine(bytes[index]) }
  }
}

/// One satellite as seen in one epoch.
public struct Satellite: Sendable, Hashable {
  /// `nil` when neither the talker nor the ID tells the system.
  public var constellation: Constellation?
  /// The satellite number as gpsd reports it from NMEA (GPS 1–32, SBAS 33–64 or 120–158 as
  /// the receiver wrote it, GLONASS 65–96, Galileo 301–336, BeiDou 401–463, QZSS 193–202,
  /// NavIC 801–…).
  public var prn: Int
  /// The number within its own system (gpsd's and u-blox's `svId`).
  public var svid: Int
  /// NMEA 4.10 signal ID, if the receiver gave one.
  public var signalID: Int?
  public var elevation: Int?
  public var azimuth: Int?
  /// Carrier-to-noise density, dB-Hz.
  public var snr: Int?
  /// Whether the satellite was used in the solution (listed in a GSA, or flagged so by
  /// UBX-NAV-SAT, NAV-SVINFO or NAV-SIG).
  public var used: Bool
  /// Pseudorange residual, metres (gpsd's `prRes`): UBX only.
  public var pseudorangeResidual: Double?
  /// Signal quality, 0 (no signal) … 7 (code and carrier locked), u-blox's `qualityInd`
  /// (gpsd's `qual`): UBX only.
  public var quality: Int?
  /// 1 healthy, 2 unhealthy (gpsd's `health`); `nil` unknown.
  public var health: Int?

  public init(
    constellation: Constellation?, prn: Int, svid: Int, signalID: Int? = nil,
    elevation: Int? = nil, azimuth: Int? = nil, snr: Int? = nil, used: Bool = false,
    pseudorangeResidual: Double? = nil, quality: Int? = nil, health: Int? = nil
  ) {
    self.constellation = constellation
    self.prn = prn
    self.svid = svid
    self.signalID = signalID
    self.elevation = elevation
    self.azimuth = azimuth
    self.snr = snr
    self.used = used
    self.pseudorangeResidual = pseudorangeResidual
    self.quality = quality
    self.health = health
  }
}

/// The satellites of one epoch, with the dilutions of precision.
public struct SatelliteView: Sendable, Hashable {
  public var time: UTCTime?
  public var satellites: [Satellite]
  public var hdop: Double?
  public var vdop: Double?
  public var pdop: Double?
  /// Geometric, time, east (gpsd's `xdop`) and north (`ydop`) DOPs, which u-blox's NAV-DOP
  /// gives and NMEA does not.
  public var gdop: Double?
  public var tdop: Double?
  public var edop: Double?
  public var ndop: Double?

  public init(
    time: UTCTime? = nil, satellites: [Satellite], hdop: Double? = nil, vdop: Double? = nil,
    pdop: Double? = nil, gdop: Double? = nil, tdop: Double? = nil, edop: Double? = nil,
    ndop: Double? = nil
  ) {
    self.time = time
    self.satellites = satellites
    self.hdop = hdop
    self.vdop = vdop
    self.pdop = pdop
    self.gdop = gdop
    self.tdop = tdop
    self.edop = edop
    self.ndop = ndop
  }

  /// Satellites used in the solution.
  public var usedCount: Int { satellites.reduce(0) { $0 + ($1.used ? 1 : 0) } }
}

/// What the fix builder emits when an epoch is complete.
public struct Epoch: Sendable, Hashable {
  public var fix: Fix
  /// `nil` when the epoch carried no GSV or GSA.
  public var satellites: SatelliteView?
  /// The stream offset (``NMEAFramer/streamOffset``) of the start character of the epoch's
  /// first sentence, whatever its type: where the receiver began writing the epoch. The time
  /// service dates the epoch by the arrival of that byte. `nil` when the sentences did not come
  /// through a framer (``FixBuilder`` fed directly).
  public var firstByteOffset: UInt64? {
    get { storedFirstByteOffset == Self.noOffset ? nil : storedFirstByteOffset }
    set { storedFirstByteOffset = newValue ?? Self.noOffset }
  }
  // Kept without an Optional's tag byte: an `Epoch` is copied several times per sentence's
  // event, and the tag would widen each copy.
  var storedFirstByteOffset: UInt64
  static let noOffset = UInt64.max

  public init(fix: Fix, satellites: SatelliteView? = nil, firstByteOffset: UInt64? = nil) {
    self.fix = fix
    self.satellites = satellites
    self.storedFirstByteOffset = firstByteOffset ?? Self.noOffset
  }
}
