// The sentences that carry a time, a date or error estimates and nothing of the position
// (``CycleRole/timeOnly``: ZDA, GST, GBS, GRS, PUBX,04, `$PGRME`). Each type's value, a
// sample, its parse and its merge, in one place.

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

// $GPZDA,193223.00,23,12,2007,00,00*69
extension ZDA: NMEASentenceDescriptor {
  static var address: SentenceAddress { "ZDA" }
  static var role: CycleRole { .timeOnly }
  init(talker: Talker) { self.talker = talker }
  var sentence: Sentence { .zda(self) }
  var cycleKey: CycleKey { CycleKey(Self.address, talker: talker) }

  static func parse(_ f: inout FieldReader, commas: Int, into zda: inout ZDA)
    throws(NMEAParseError)
  {
    zda.time = try f.time()
    // An impossible day, month or year drops the date, never the time.
    var day = try f.uint()
    if let value = day, !(1...31).contains(value) { day = f.drop(.date) }
    var month = try f.uint()
    if let value = month, !(1...12).contains(value) { month = f.drop(.date) }
    var year = try f.uint()
    if let value = year, !(1980..<10_000).contains(value) { year = f.drop(.date) }
    if let day, let month, let year {
      // 31 April or 29 February of a common year.
      zda.date =
        UTCDate.isValid(year: year, month: month, day: day)
        ? UTCDate(year: year, month: UInt8(month), day: UInt8(day)) : f.drop(.date)
    }
    zda.localZoneHours = try f.signedInteger()
    zda.localZoneMinutes = try f.uint()
  }

  func merge(into builder: inout FixBuilder) {
    if let date { builder.epoch.explicitDate = date }
  }
}

// $GPGST,112257.00,0.387,317.719,3.872,1.791,317.563,10.659,180.746*61
extension GST: NMEASentenceDescriptor {
  static var address: SentenceAddress { "GST" }
  static var role: CycleRole { .timeOnly }
  init(talker: Talker) { self.talker = talker }
  var sentence: Sentence { .gst(self) }
  var cycleKey: CycleKey { CycleKey(Self.address, talker: talker) }

  static func parse(_ f: inout FieldReader, commas: Int, into gst: inout GST)
    throws(NMEAParseError)
  {
    gst.time = try f.time()
    gst.rangeRMS = try f.nonNegativeDecimal(.accuracy)
    gst.semiMajorError = try f.nonNegativeDecimal(.accuracy)
    gst.semiMinorError = try f.nonNegativeDecimal(.accuracy)
    gst.orientation = try f.decimal()
    gst.latitudeError = try f.nonNegativeDecimal(.accuracy)
    gst.longitudeError = try f.nonNegativeDecimal(.accuracy)
    gst.altitudeError = try f.nonNegativeDecimal(.accuracy)
  }

  func merge(into builder: inout FixBuilder) {
    builder.epoch.takeErrors(
      latitude: latitudeError, longitude: longitudeError, vertical: altitudeError,
      from: .receiverEstimate)
  }
}

// $GPGBS,112257.00,123.204,0.490,75.521,23,0.000,0.000,0.000*53
extension GBS: NMEASentenceDescriptor {
  static var address: SentenceAddress { "GBS" }
  static var role: CycleRole { .timeOnly }
  init(talker: Talker) { self.talker = talker }
  var sentence: Sentence { .gbs(self) }
  var cycleKey: CycleKey { CycleKey(Self.address, talker: talker) }

  static func parse(_ f: inout FieldReader, commas: Int, into gbs: inout GBS)
    throws(NMEAParseError)
  {
    gbs.time = try f.time()
    gbs.latitudeError = try f.nonNegativeDecimal(.accuracy)
    gbs.longitudeError = try f.nonNegativeDecimal(.accuracy)
    gbs.altitudeError = try f.nonNegativeDecimal(.accuracy)
    gbs.failedSatellite = try f.uint()
    gbs.probability = try f.decimal()
    gbs.bias = try f.decimal()
    gbs.biasStandardDeviation = try f.decimal()
    gbs.systemID = try f.hexDigit()
    gbs.signalID = try f.hexDigit()
  }

  /// The expected errors of the receiver's fault detection, as gpsd takes them for `epx`,
  /// `epy` and `epv`; the receiver's own estimates (GST, `$PGRME`, PUBX,00) rank above them.
  func merge(into builder: inout FixBuilder) {
    builder.epoch.takeErrors(
      latitude: latitudeError, longitude: longitudeError, vertical: altitudeError,
      from: .faultDetection)
  }
}

// $GPGRS,112257.00,1,-0.1,-0.3,-0.1,,,,,,,,,*4C
extension GRS: NMEASentenceDescriptor {
  static var address: SentenceAddress { "GRS" }
  static var role: CycleRole { .timeOnly }
  init(talker: Talker) {
    self.talker = talker
    residuals = []
  }
  var sentence: Sentence { .grs(self) }
  var cycleKey: CycleKey { CycleKey(Self.address, talker: talker) }

  static func parse(_ f: inout FieldReader, commas: Int, into grs: inout GRS)
    throws(NMEAParseError)
  {
    grs.time = try f.time()
    grs.mode = try f.uint()
    let hasSystem = commas >= 16
    let residualCount = hasSystem ? 12 : max(0, commas - 2)
    grs.residuals.reserveCapacity(residualCount)
    for _ in 0..<residualCount { grs.residuals.append(try f.decimal()) }
    grs.systemID = hasSystem ? try f.hexDigit() : nil
    grs.signalID = hasSystem ? try f.hexDigit() : nil
  }

  /// Residuals say how well each satellite fits, nothing a fix reports; the sentence still
  /// belongs to its epoch's cycle.
  func merge(into builder: inout FixBuilder) {}
}

// $PUBX,04,073731.00,091202,113851.00,1196,15D,1930035,-2660.664,43,*5D
extension PUBXTime: NMEASentenceDescriptor {
  static var address: SentenceAddress { "PUBX,04" }
  static var role: CycleRole { .timeOnly }
  init(talker: Talker) { leapSecondsAreDefault = false }
  var sentence: Sentence { .pubxTime(self) }

  static func parse(_ f: inout FieldReader, commas: Int, into pubx: inout PUBXTime)
    throws(NMEAParseError)
  {
    pubx.time = try f.time()
    pubx.date = try f.date()
    pubx.timeOfWeek = try f.decimal()
    pubx.week = try f.uint()
    // Leap seconds: a number, with a trailing `D` when it is the firmware's default.
    let leapField = f.next()
    if !leapField.isEmpty {
      let start = leapField.base + leapField.start
      var end = leapField.base + leapField.end
      if end[-1] == 0x44 {
        pubx.leapSecondsAreDefault = true
        end -= 1
      }
      let (value, digitsEnd) = FieldReader.digits(from: start)
      guard digitsEnd == end else { throw .badField(index: f.index) }
      if end > start {
        pubx.leapSeconds = end - start <= 9 ? value : f.integer(from: start, to: end)
      }
    }
    pubx.clockBias = try f.signedInteger()
    pubx.clockDrift = try f.decimal()
    pubx.timePulseGranularity = try f.uint()
  }

  /// The receiver's leap seconds, unless they are its firmware's default.
  var statedLeapSeconds: Int? { leapSecondsAreDefault ? nil : leapSeconds }

  func merge(into builder: inout FixBuilder) {
    if let date { builder.epoch.explicitDate = date }
  }
}

// $PGRME,7.6,M,41.7,M,42.4,M*2F
extension GarminErrorEstimates: NMEASentenceDescriptor {
  static var address: SentenceAddress { "PGRME" }
  static var role: CycleRole { .timeOnly }
  init(talker: Talker) {}
  var sentence: Sentence { .garminErrorEstimates(self) }
  var time: UTCTime? { nil }

  /// `$PGRME,<HPE>,M,<VPE>,M,<EPE>,M`: metres, each with its unit letter.
  static func parse(_ f: inout FieldReader, commas: Int, into garmin: inout GarminErrorEstimates)
    throws(NMEAParseError)
  {
    func metres(_ f: inout FieldReader) throws(NMEAParseError) -> Double? {
      let value = try f.nonNegativeDecimal(.accuracy)
      let unit = try f.character()
      guard unit == nil || unit == 0x4D else { throw f.fail() }  // M
      return value
    }
    garmin.horizontal = try metres(&f)
    garmin.vertical = try metres(&f)
    garmin.spherical = try metres(&f)
  }

  /// Garmin's own figures, unscaled (gpsd multiplies them by 2.45 / 1.18, taking them for 50 %
  /// errors and making them 95 %; Garmin states no confidence level).
  func merge(into builder: inout FixBuilder) {
    builder.epoch.takeHorizontalAccuracy(horizontal, from: .receiverEstimate)
    builder.epoch.takeVerticalAccuracy(vertical, from: .receiverEstimate)
    builder.epoch.takeSphericalAccuracy(spherical, from: .receiverEstimate)
  }
}
