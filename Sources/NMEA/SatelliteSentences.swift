// The sentences about satellites: GSA (the ones used and the DOPs), GSV (the ones in view),
// PUBX,03. Each type's value, a sample, its parse and its merge, in one place.

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

  // Always inlined: out of line, the parse made the empty value in a temporary and copied it
  // whole into the variable it fills.
  @inline(__always)
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

// $GPGSA,A,3,10,28,09,13,,,,,,,,,03.4,01.7,03.0*00
extension GSA: NMEASentenceDescriptor {
  static var address: SentenceAddress { "GSA" }
  static var role: CycleRole { .untimed }
  init(talker: Talker) { self.talker = talker }
  var sentence: Sentence { .gsa(self) }
  /// One key per system (NMEA 4.10 sends a GSA for each).
  var cycleKey: CycleKey {
    CycleKey(Self.address, talker: talker, variant: UInt8(truncatingIfNeeded: (systemID ?? 15) + 1))
  }
  var time: UTCTime? { nil }

  @inline(__always)
  static func parse(_ f: inout FieldReader, commas: Int, into gsa: inout GSA)
    throws(NMEAParseError)
  {
    // 17 fields up to NMEA 4.0; 4.10 adds the system ID. Some receivers list more than 12
    // satellites; the DOPs are then the three fields before the end.
    let count = commas
    let hasSystemID = count == 18
    let satelliteFields = max(0, count - 5 - (hasSystemID ? 1 : 0))
    gsa.selectionMode = try f.character()
    gsa.fixMode = try f.fixMode()
    for _ in 0..<satelliteFields {
      if let id = try f.uint() {
        guard id <= 0xFFFF else { throw .badField(index: f.index) }
        gsa.satellites.append(UInt16(id))
      }
    }
    gsa.pdop = try f.dop()
    gsa.hdop = try f.dop()
    gsa.vdop = try f.dop()
    gsa.systemID = hasSystemID ? try f.hexDigit() : nil
  }

  @inline(__always)
  func merge(into builder: inout FixBuilder) {
    builder.epoch.sawGSA = true
    if let fixMode { builder.epoch.modeFromGSA = max(builder.epoch.modeFromGSA ?? .noFix, fixMode) }
    if let pdop {
      builder.epoch.fix.pdop = pdop
      builder.epoch.viewPDOP = pdop
    }
    if let hdop {
      builder.epoch.fix.hdop = hdop
      builder.epoch.viewHDOP = hdop
    }
    if let vdop {
      builder.epoch.fix.vdop = vdop
      builder.epoch.viewVDOP = vdop
    }
    for id in satellites {
      let identity = SatelliteNumbering.identify(id: Int(id), talker: talker, systemID: systemID)
      if builder.epoch.used.insert(identity.constellation, identity.svid) {
        builder.epoch.usedFromGSA += 1
      }
    }
    if let fixMode { builder.noteNMEAMode(gsa: fixMode, satellitesUsed: builder.epoch.usedFromGSA) }
  }
}

// $GPGSV,3,1,12,28,14,150,41,09,15,254,41,10,43,192,47,13,06,081,36*7A
extension GSV: NMEASentenceDescriptor {
  static var address: SentenceAddress { "GSV" }
  static var role: CycleRole { .untimed }
  @inline(__always)
  init(talker: Talker) { self.init(talker: talker, messageCount: 0, messageNumber: 0) }
  var sentence: Sentence { .gsv(self) }
  /// The last part of a GSV group and the others are told apart.
  var cycleKey: CycleKey {
    CycleKey(Self.address, talker: talker, variant: messageNumber == messageCount ? 1 : 2)
  }
  var time: UTCTime? { nil }

  @inline(__always)
  static func parse(_ f: inout FieldReader, commas: Int, into gsv: inout GSV)
    throws(NMEAParseError)
  {
    let count = commas
    guard let messageCount = try f.uint() else { throw .badField(index: f.index) }
    guard (1...9).contains(messageCount) else { throw f.impossible(.messageNumber) }
    guard let messageNumber = try f.uint() else { throw .badField(index: f.index) }
    // Message 99 of 9 would otherwise end (or never end) a satellite view of its own.
    guard (1...messageCount).contains(messageNumber) else { throw f.impossible(.messageNumber) }
    gsv.messageCount = messageCount
    gsv.messageNumber = messageNumber
    gsv.satellitesInView = try f.uint()
    // Groups of four after the three header fields; one left over is the NMEA 4.10 signal ID,
    // two are the signal ID and a system ID (Quectel's `$PQGSV`).
    let remaining = count - 3
    let groups = Swift.min(4, remaining / 4)
    for _ in 0..<groups {
      let id = try f.uint()
      let elevation = try f.signedInteger()
      let azimuth = try f.uint()
      let snr = try f.uint()
      if let id {
        gsv.append(
          id: id, elevation: elevation ?? GSV.absent, azimuth: azimuth ?? GSV.absent,
          snr: snr ?? GSV.absent)
      }
    }
    let extra = remaining - groups * 4
    if extra == 1 || extra == 2 { gsv.signalID = try f.hexDigit() }
    if extra == 2 { gsv.systemID = try f.hexDigit() }
  }

  @inline(__always)
  func merge(into builder: inout FixBuilder) {
    guard builder.epoch.takeSatellites(from: .nmea) else { return }
    for position in 0..<count {
      let satellite = self[position]
      let identity = SatelliteNumbering.identify(
        id: satellite.id, talker: talker, systemID: systemID)
      builder.epoch.addSatellite(
        Satellite(
          constellation: identity.constellation, prn: identity.prn, svid: identity.svid,
          signalID: signalID, elevation: satellite.elevation, azimuth: satellite.azimuth,
          snr: satellite.snr, used: false))
    }
  }
}

// $PUBX,03,03,23,-,,,45,010,08,U,067,31,42,025,10,U,195,33,46,026*03
extension PUBXSatellites: NMEASentenceDescriptor {
  static var address: SentenceAddress { "PUBX,03" }
  /// Joins the epoch (it is part of the cycle) but merges nothing: GSV says the same.
  static var role: CycleRole { .untimed }
  init(talker: Talker) { satellites = [] }
  var sentence: Sentence { .pubxSatellites(self) }
  var time: UTCTime? { nil }

  static func parse(_ f: inout FieldReader, commas: Int, into pubx: inout PUBXSatellites)
    throws(NMEAParseError)
  {
    let count = try f.uint() ?? 0
    guard count <= 255 else { throw .badField(index: f.index) }
    pubx.satellites.reserveCapacity(count)
    for _ in 0..<count {
      guard f.hasMore else { break }
      guard let id = try f.uint() else { throw .badField(index: f.index) }
      let status = try f.character()
      let azimuth = try f.uint()
      let elevation = try f.signedInteger()
      let snr = try f.uint()
      let lock = try f.uint()
      pubx.satellites.append(
        PUBXSatellite(
          id: id, status: status, azimuth: azimuth, elevation: elevation, snr: snr,
          lockTime: lock))
    }
  }

  func merge(into builder: inout FixBuilder) {}
}
