import NMEA

/// How sure an identification is.
public enum IdentificationConfidence: Int, Sendable, Hashable, Comparable, CustomStringConvertible {
  /// Nothing seen that names a family.
  case none = 0
  /// A hint only: a vendor sentence that some, not all, of the family's receivers send
  /// (Quectel `$PQTM…`, which newer Quectel modules built on other chips send too).
  case low = 1
  /// Not used by the built-in rules; reserved for callers that combine hints.
  case medium = 2
  /// Something only this family sends: a UBX or SiRF binary frame, a u-blox `$GxTXT` banner,
  /// `$PUBX`, `$PMTK`, `$PSRF`.
  case high = 3

  public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }

  public var description: String {
    switch self {
    case .none: return "none"
    case .low: return "low"
    case .medium: return "medium"
    case .high: return "high"
    }
  }
}

/// What passive identification learned about a receiver.
public struct ChipsetIdentification: Sendable, Hashable, CustomStringConvertible {
  /// The family; ``ChipsetFamily/nmea`` when nothing (or contradicting evidence) was seen.
  public var family: ChipsetFamily
  public var confidence: IdentificationConfidence
  /// The maker, when a sentence names it (`u-blox`, `Quectel`, `Garmin`, `SkyTraq` …), even
  /// for receivers the driver has no commands for.
  public var vendor: String?
  /// The module or product (`LEA-5H-0`, `ZED-F9P`, `QUECTEL-L70`, `Fastrax IT500`).
  public var model: String?
  /// The firmware (`ROM CORE 3.01 (107888)`, `AXN_2.51_3339_19071200`).
  public var firmware: String?
  /// The hardware (u-blox `00080000`, or the chip `UBX-M80xx`).
  public var hardware: String?
  /// The UBX protocol version a u-blox receiver reported.
  public var ubloxProtocolVersion: UbloxProtocolVersion?
  /// u-blox only: which configuration messages the receiver takes, from the protocol version
  /// or else the hardware version; `nil` when neither was seen.
  public var ubloxGeneration: UbloxGeneration?
  /// What was seen, one line per kind of evidence, in the order first seen.
  public var evidence: [String]

  public init(
    family: ChipsetFamily = .nmea, confidence: IdentificationConfidence = .none,
    vendor: String? = nil, model: String? = nil, firmware: String? = nil,
    hardware: String? = nil, ubloxProtocolVersion: UbloxProtocolVersion? = nil,
    ubloxGeneration: UbloxGeneration? = nil, evidence: [String] = []
  ) {
    self.family = family
    self.confidence = confidence
    self.vendor = vendor
    self.model = model
    self.firmware = firmware
    self.hardware = hardware
    self.ubloxProtocolVersion = ubloxProtocolVersion
    self.ubloxGeneration = ubloxGeneration
    self.evidence = evidence
  }

  /// The family whose commands may be sent: ``family`` when identification is at least
  /// `minimum` sure, ``ChipsetFamily/nmea`` (no commands) otherwise.
  public func familyForCommands(minimum: IdentificationConfidence = .medium) -> ChipsetFamily {
    confidence >= minimum ? family : .nmea
  }

  public var description: String {
    var parts = ["\(family.displayName) (confidence \(confidence))"]
    if let vendor, !family.displayName.contains(substring: vendor) { parts.append(vendor) }
    if let model { parts.append("model \(model)") }
    if let firmware { parts.append("firmware \(firmware)") }
    if let hardware { parts.append("hardware \(hardware)") }
    if let ubloxProtocolVersion { parts.append("protocol \(ubloxProtocolVersion)") }
    return parts.joined(separator: ", ")
  }
}

/// Identifies a receiver's chipset from what it sends, without ever writing to it.
///
/// Feed it everything the framer and parser produce; read ``identification`` at any time.
/// Memory is bounded (one evidence line per kind, a few strings) and observing a standard
/// sentence (GGA, RMC …) costs a switch.
///
/// ```swift
/// var identifier = ChipsetIdentifier()
/// framer.feed(bytes) { frame in identifier.observe(frame) }
/// if identifier.identification.confidence == .high { … }
/// ```
public struct ChipsetIdentifier: Sendable {
  /// Details learned per family, so one stray sentence cannot mix two receivers' details.
  struct Details: Sendable {
    var level = IdentificationConfidence.none
    var vendor: String?
    var model: String?
    var firmware: String?
    var hardware: String?
  }

  var details: [ChipsetFamily: Details] = [:] { didSet { revision &+= 1 } }
  var protocolVersion: UbloxProtocolVersion? { didSet { revision &+= 1 } }
  var otherVendor: String? {
    didSet { if otherVendor != oldValue { revision &+= 1 } }
  }
  var evidence: [String] = [] { didSet { revision &+= 1 } }
  var habits = FormatHabits()
  static let evidenceLimit = 24

  /// Changes whenever something is learned, so that a caller feeding every sentence asks for
  /// ``identification`` (which builds a value) only when it may have changed.
  public private(set) var revision = 0

  public init() {}

  // MARK: - Observing

  /// Observes whatever the framer found. A binary frame of a kind the identifier has no rule
  /// of its own for (any but UBX and SiRF, RTCM 3 included) goes to the drivers
  /// (``ChipsetDriver/evidence(in:)-(Frame)``).
  public mutating func observe(_ frame: Frame) {
    switch frame {
    case .sentence(let raw): observe(raw)
    case .ubx(let ubx): observe(ubx)
    case .sirf(let sirf): observe(sirf)
    default:
      for driver in ChipsetRegistry.all {
        if let evidence = driver.evidence(in: frame) { take(evidence, for: driver.family) }
      }
    }
  }

  /// Observes what a ``Decoder`` handed on: its sentences and binary frames (epochs, UBX
  /// messages and parse errors show nothing of the chipset). The one reading for every
  /// decoder's user, as ``ReceiverAcknowledgement/init(_:)`` is for answers.
  public mutating func observe(event: DecoderEvent) {
    switch event {
    case .sentence(let sentence): observe(sentence)
    case .ubx(let frame): observe(frame)
    case .sirf(let frame): observe(frame)
    case .casic(let frame): observe(Frame.casic(frame))
    case .epoch, .parseError, .ubxMessage, .ubxRejected: break
    }
  }

  /// Observes a raw sentence. Proprietary (`$P…`) and `TXT` sentences are parsed; GGA and
  /// RMC are read for the way their fields are written (``FormatHabits``), which gives a hint
  /// at most.
  public mutating func observe(_ raw: RawSentence) {
    let bytes = raw.bytes
    guard bytes.count >= 6 else { return }
    let proprietary = bytes[1] == 0x50  // P
    let text = bytes[3] == 0x54 && bytes[4] == 0x58 && bytes[5] == 0x54  // TXT
    if !proprietary && !text {
      guard let hint = habits.observe(bytes) else { return }
      raise(hint.family, .low, hint.evidence)
      return
    }
    guard let sentence = try? Sentence(parsing: raw) else { return }
    observe(sentence)
  }

  /// Observes a parsed sentence.
  public mutating func observe(_ sentence: Sentence) {
    switch sentence {
    case .txt(let txt):
      observeText(txt.text)
      observeByDrivers(sentence)
    case .unknown(let unknown) where unknown.talker == .proprietary:
      if !observeByDrivers(sentence),
        let vendor = Self.vendorPrefixes.first(where: { unknown.address.hasPrefix($0.0) })?.1
      {
        otherVendor = vendor
      }
    case .pubxPosition, .pubxSatellites, .pubxTime, .mtkAcknowledgement, .mtkSystemMessage:
      observeByDrivers(sentence)
    case .garminErrorEstimates, .garminAltitude, .garminDatum:
      // The parser types `$PGRME`, `$PGRMZ` and `$PGRMM`; they still name the maker.
      otherVendor = "Garmin"
    case .gsv(let gsv) where gsv.talker == .pq:
      // The parser types Quectel's `$PQGSV`/`$PQGSA` like GSV and GSA; they still name the maker.
      otherVendor = "Quectel"
    case .gsa(let gsa) where gsa.talker == .pq:
      otherVendor = "Quectel"
    default:
      break
    }
  }

  /// Observes a UBX frame: any frame with a valid checksum is u-blox; `UBX-MON-VER` names
  /// the firmware, hardware and protocol version.
  public mutating func observe(_ frame: UBXFrameView) {
    let id = UBXMessageID(frame)
    raise(.ublox, .high, "UBX binary frame")
    guard id == .monVer, let version = UBXVersion(frame) else { return }
    note(.ublox, "UBX-MON-VER: \(version.software), hardware \(version.hardware)")
    update(.ublox) { details in
      details.vendor = "u-blox"
      if !version.software.isEmpty { details.firmware = version.software }
      if let firmware = version.extensionValue("FWVER") { details.firmware = firmware }
      if !version.hardware.isEmpty { details.hardware = version.hardware }
      if let model = version.extensionValue("MOD") { details.model = model }
    }
    if let protocolVersion = version.protocolVersion { self.protocolVersion = protocolVersion }
  }

  /// Observes a SiRF binary frame; message 6 (software version string) names the firmware.
  public mutating func observe(_ frame: SiRFFrameView) {
    guard let id = frame.payload.first else { return }
    raise(.sirf, .high, "SiRF binary frame")
    guard id == 6 else { return }
    var bytes: [UInt8] = []
    for byte in frame.payload.dropFirst() {
      if (0x20...0x7E).contains(byte) {
        bytes.append(byte)
      } else if !bytes.isEmpty {
        break
      }
    }
    let version = String(decoding: bytes, as: UTF8.self).trimmingSpaces()
    guard !version.isEmpty else { return }
    note(.sirf, "SiRF software version \(version)")
    update(.sirf) { $0.firmware = version }
  }

  // MARK: - Result

  /// What has been learned so far.
  public var identification: ChipsetIdentification {
    let top = details.values.map(\.level).max() ?? .none
    let leaders = details.filter { $0.value.level == top && top > .none }.map(\.key)
    guard leaders.count == 1, let family = leaders.first, let found = details[family] else {
      var evidence = self.evidence
      if leaders.count > 1 {
        let names = leaders.map(\.displayName).sorted().joined(separator: " and ")
        evidence.append("conflicting evidence for \(names): treated as generic NMEA")
      }
      return ChipsetIdentification(
        family: .nmea, confidence: .none, vendor: otherVendor, evidence: evidence)
    }
    var result = ChipsetIdentification(
      family: family, confidence: found.level,
      vendor: found.vendor ?? defaultVendor(family), model: found.model,
      firmware: found.firmware, hardware: found.hardware, evidence: evidence)
    if family == .ublox {
      result.ubloxProtocolVersion = protocolVersion
      if let protocolVersion {
        result.ubloxGeneration = UbloxGeneration(protocolVersion: protocolVersion)
      } else if let hardware = found.hardware {
        result.ubloxGeneration = UbloxGeneration(hardwareVersion: hardware)
      }
    }
    return result
  }

  func defaultVendor(_ family: ChipsetFamily) -> String? {
    family.driver.vendor ?? otherVendor
  }

  // MARK: - Rules

  mutating func observeText(_ text: String) {
    let lower = text.lowercased()
    if lower.contains(substring: "u-blox") {
      raise(.ublox, .high, "u-blox banner in $GxTXT")
      update(.ublox) { $0.vendor = "u-blox" }
      return
    }
    // The rest of the u-blox start-up banner (UBX-13003221, "NMEA-Gx-TXT"; gpsd captures
    // nl2008u.log, ublox-lea-5h.log): "HW UBX-M80xx 00080000", "PROTVER 15.00",
    // "ROM CORE 3.01 (107888)", "EXT CORE 6.00 (33247) …", "FWVER=SPG 3.01", "MOD LEA-5H-0".
    let words = text.split(separator: " ")
    if words.first == "HW", words.count >= 2, words[1].hasPrefix("UBX-") {
      raise(.ublox, .high, "u-blox hardware banner in $GxTXT")
      update(.ublox) { details in
        details.hardware = words.count >= 3 ? String(words[2]) : String(words[1])
      }
    } else if let version = UbloxProtocolVersion(banner: text), text.hasPrefix("PROTVER") {
      protocolVersion = version
      note(.ublox, "PROTVER \(version) in $GxTXT")
    } else if text.hasPrefix("ROM CORE") || text.hasPrefix("EXT CORE") {
      // "EXT CORE 6.00 (33247) May 13 2009 17:35:46": keep the version and build only.
      let firmware = words.prefix(4).joined(separator: " ")
      update(.ublox) { details in
        if details.firmware == nil || text.hasPrefix("EXT") { details.firmware = firmware }
      }
    } else if text.hasPrefix("FWVER=") {
      update(.ublox) { $0.firmware = String(text.dropFirst(6)) }
    } else if text.hasPrefix("MOD ") || text.hasPrefix("MOD=") {
      update(.ublox) { $0.model = String(text.dropFirst(4)).trimmingSpaces() }
    } else if lower.hasPrefix("telit") {
      otherVendor = "Telit"
    }
  }

  /// Asks every driver what `sentence` says of its family (``ChipsetDriver/evidence(in:)``)
  /// and takes what they say; whether any said something.
  @discardableResult
  mutating func observeByDrivers(_ sentence: Sentence) -> Bool {
    var found = false
    for driver in ChipsetRegistry.all {
      guard let evidence = driver.evidence(in: sentence) else { continue }
      found = true
      take(evidence, for: driver.family)
    }
    return found
  }

  mutating func take(_ evidence: ChipsetEvidence, for family: ChipsetFamily) {
    if let level = evidence.confidence {
      raise(family, level, evidence.what)
    } else {
      note(family, evidence.what)
    }
    let fillsOnly = evidence.fillsOnly
    guard
      evidence.vendor != nil || evidence.model != nil || evidence.firmware != nil
        || evidence.hardware != nil
    else { return }
    update(family) { details in
      if let vendor = evidence.vendor { details.vendor = vendor }
      if let model = evidence.model, !(fillsOnly && details.model != nil) {
        details.model = model
      }
      if let firmware = evidence.firmware, !(fillsOnly && details.firmware != nil) {
        details.firmware = firmware
      }
      if let hardware = evidence.hardware, !(fillsOnly && details.hardware != nil) {
        details.hardware = hardware
      }
    }
  }

  /// Makers named by their proprietary prefix, whose receivers the driver has no commands
  /// for. `PQ` alone is Quectel's cellular modules (EG25-G `$PQGSV`), not MediaTek.
  static let vendorPrefixes: [(String, String)] = [
    ("PGRM", "Garmin"), ("PSTI", "SkyTraq"), ("PSTM", "STMicroelectronics"),
    ("PTNL", "Trimble"), ("PASHR", "Ashtech"), ("PSAT", "Hemisphere"),
    ("PQ", "Quectel"),
  ]

  /// `L70BGR03A05S` → `L70`: the letters and digits of the module name.
  static func quectelModel(_ version: String) -> String? {
    let letters = version.prefix { $0.isUppercase && $0.isLetter }
    let digits = version.dropFirst(letters.count).prefix { $0.isNumber }
    guard !letters.isEmpty, !digits.isEmpty else { return nil }
    return String(letters) + String(digits)
  }

  // MARK: - Bookkeeping

  mutating func raise(
    _ family: ChipsetFamily, _ level: IdentificationConfidence, _ what: String
  ) {
    let current = details[family]?.level ?? .none
    if level > current { details[family, default: Details()].level = level }
    note(family, what)
  }

  mutating func update(_ family: ChipsetFamily, _ change: (inout Details) -> Void) {
    var current = details[family] ?? Details()
    change(&current)
    details[family] = current
  }

  mutating func note(_ family: ChipsetFamily, _ what: String) {
    let line = "\(family.displayName): \(what)"
    guard evidence.count < Self.evidenceLimit, !evidence.contains(line) else { return }
    evidence.append(line)
  }
}

/// How a receiver writes its GGA and RMC: firmware families keep their own habits, which a
/// hint (never enough to write to a receiver) can be read from.
///
/// MediaTek firmware writes `hhmmss.sss`, `ddmm.mmmm`, HDOP with two decimals, and either the
/// satellite count unpadded (`,1,4,1.31,`) or `0000,0000` in the DGPS fields (gpsd captures
/// mt3339, bt-q818, mtk-3329, quectel-L70, tr737A+). SiRF firmware writes `hhmmss.sss`,
/// `ddmm.mmmm`, HDOP with one decimal, the count padded, an empty DGPS age and station
/// `0000` (bu353s4, gpslim236, nd-1005, nokia-ld-4w, sirfstarv-nmea); SkyTraq's Venus 6
/// writes GGA the same way but RMC's speed with one decimal (`000.0`, bn-9015), which rules
/// SiRF out. Only epochs with a fix count. These are habits, not rules: u-blox receivers set
/// to their compatibility format write SiRF's (nl402u, nl2008u, identified by their banners
/// first), and some MediaTek modules ship with SiRF's (the LOCOSYS LS20031 data sheet shows
/// `…,1,08,1.1,63.8,M,15.2,M,,0000`). So the result is ``IdentificationConfidence/low``, a
/// hint for what to advise; u-blox has no such habit of its own (SkyTraq's Venus 6 copies
/// its GGA, RMC, GSA and VTG byte for byte: venus634lp).
struct FormatHabits: Sendable {
  var mediatek = 0
  var sirf = 0
  /// RMCs whose speed has one decimal: not SiRF.
  var oneDecimalSpeeds = 0
  var hinted: ChipsetFamily?
  /// Epochs of one style, and none of the other, before a hint is given.
  static let epochsNeeded = 3

  /// Reads a GGA or RMC (`$` through the last field); returns the hint the first time the
  /// habits name a family.
  mutating func observe(_ bytes: UnsafeBufferPointer<UInt8>) -> (
    family: ChipsetFamily, evidence: String
  )? {
    guard hinted == nil, bytes.count > 7 else { return nil }
    let gga = bytes[3] == 0x47 && bytes[4] == 0x47 && bytes[5] == 0x41  // GGA
    let rmc = bytes[3] == 0x52 && bytes[4] == 0x4D && bytes[5] == 0x43  // RMC
    guard gga || rmc else { return nil }
    return withUnsafeTemporaryAllocation(of: Range<Int>.self, capacity: 16) { storage in
      var count = 0
      var start = 7
      for index in 7..<bytes.count where bytes[index] == 0x2C && count < 15 {
        storage[count] = start..<index
        count += 1
        start = index + 1
      }
      storage[count] = start..<bytes.count
      count += 1
      return observe(bytes, fields: UnsafeBufferPointer(rebasing: storage[0..<count]), rmc: rmc)
    }
  }

  private mutating func observe(
    _ bytes: UnsafeBufferPointer<UInt8>, fields: UnsafeBufferPointer<Range<Int>>, rmc: Bool
  ) -> (family: ChipsetFamily, evidence: String)? {
    if rmc {
      // $GPRMC,time,status,lat,N,lon,E,speed,…
      if fields.count > 6, Self.decimals(bytes, fields[6]) == 1 { oneDecimalSpeeds += 1 }
      return nil
    }
    // $GPGGA,time,lat,N,lon,E,quality,satellites,hdop,alt,M,sep,M,age,station
    guard fields.count >= 14, !fields[1].isEmpty, !fields[5].isEmpty,
      !(fields[5].count == 1 && bytes[fields[5].lowerBound] == 0x30)
    else { return nil }
    guard Self.shape(bytes, fields[0], whole: 6, decimals: 3),
      Self.shape(bytes, fields[1], whole: 4, decimals: 4)
    else { return nil }
    let hdop = Self.decimals(bytes, fields[7])
    let zeros = { (range: Range<Int>) in
      range.count == 4 && range.allSatisfy { bytes[$0] == 0x30 }
    }
    if hdop == 2 && (fields[6].count == 1 || (zeros(fields[12]) && zeros(fields[13]))) {
      mediatek += 1
    } else if hdop == 1 && fields[6].count == 2 && fields[12].isEmpty && zeros(fields[13]) {
      sirf += 1
    }
    if mediatek >= Self.epochsNeeded && sirf == 0 {
      hinted = .mediatek
      return (.mediatek, "GGA written as MediaTek firmware writes it")
    }
    if sirf >= Self.epochsNeeded && mediatek == 0 && oneDecimalSpeeds == 0 {
      hinted = .sirf
      return (.sirf, "GGA written as SiRF firmware writes it")
    }
    return nil
  }

  /// Whether the field is `whole` digits, a point and `decimals` digits.
  static func shape(
    _ bytes: UnsafeBufferPointer<UInt8>, _ range: Range<Int>, whole: Int, decimals: Int
  ) -> Bool {
    guard range.count == whole + 1 + decimals, bytes[range.lowerBound + whole] == 0x2E else {
      return false
    }
    return range.allSatisfy { $0 == range.lowerBound + whole || (0x30...0x39).contains(bytes[$0]) }
  }

  /// How many digits follow the point; `nil` without one.
  static func decimals(_ bytes: UnsafeBufferPointer<UInt8>, _ range: Range<Int>) -> Int? {
    guard let point = range.first(where: { bytes[$0] == 0x2E }) else { return nil }
    return range.upperBound - point - 1
  }
}
