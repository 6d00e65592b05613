extension Sentence {
  /// Parses a sentence delivered by the ``NMEAFramer``.
  ///
  /// Known sentence types become typed values; every other well-formed sentence becomes
  /// ``Sentence/unknown(_:)`` with its raw fields. Empty fields are `nil`. A field that holds
  /// something its type cannot be (letters in a number) throws
  /// ``NMEAParseError/badField(index:)``; a well-formed value no receiver can mean (31 February,
  /// minutes over 59, a negative speed, message 99 of 9) throws
  /// ``NMEAParseError/impossibleValue(_:index:)``. Parsing a typed sentence allocates nothing.
  public init(parsing raw: RawSentence) throws(NMEAParseError) {
    var result = ParsedSentence()
    Self.parse(raw, into: &result) { _ in }
    switch result.outcome {
    case .parsed(let sentence): self = sentence
    case .failed(let error): throw error
    }
  }

  /// Parses `raw` and hands the outcome to `consumer`: GGA, RMC, GSA and GSV as their own
  /// types (``FrequentSentence``, parsed in place: every copy of a `Sentence` costs), every
  /// other sentence as a `Sentence`, a failure as its error. The one place where the parser
  /// tells sentence types apart; ``init(parsing:)`` and ``NMEADecoder`` both come through
  /// here. `emit` is passed on to the consumer (the decoder's events).
  @inline(__always)
  static func parse<Consumer: ParsedSentenceConsumer>(
    _ raw: RawSentence, into consumer: inout Consumer, emit: (DecoderEvent) throws -> Void
  ) rethrows {
    switch frequentKind(raw.bytes) {
    case .gga(let talker): try parse(raw, as: GGA(talker: talker), into: &consumer, emit: emit)
    case .rmc(let talker): try parse(raw, as: RMC(talker: talker), into: &consumer, emit: emit)
    case .gsa(let talker): try parse(raw, as: GSA(talker: talker), into: &consumer, emit: emit)
    case .gsv(let talker): try parse(raw, as: GSV(talker: talker), into: &consumer, emit: emit)
    case .other:
      let sentence: Sentence
      do {
        sentence = try parseAny(raw)
      } catch {
        return try consumer.reject(raw, error, emit: emit)
      }
      try consumer.take(sentence, emit: emit)
    }
  }

  /// Parses the fields of `raw` into `empty` (a value holding only its talker) in place.
  @inline(__always)
  static func parse<S: FrequentSentence, Consumer: ParsedSentenceConsumer>(
    _ raw: RawSentence, as empty: S, into consumer: inout Consumer,
    emit: (DecoderEvent) throws -> Void
  ) rethrows {
    var sentence = empty
    do {
      // Nothing returned through `withFields`: the standard library would pass it through a
      // `Result`, a copy.
      try withFields(raw) { (reader, commas) throws(NMEAParseError) in
        var fields = reader
        try S.parse(&fields, commas: commas, into: &sentence)
      }
    } catch {
      return try consumer.reject(raw, error, emit: emit)
    }
    try consumer.take(sentence, emit: emit)
  }

  /// GGA, RMC, GSA and GSV with their talker, recognised from the address alone; `other`
  /// for everything else (proprietary, unknown and malformed addresses included), which the
  /// general path parses. Exactly the sentences the general path would parse as these types.
  enum FrequentKind {
    case gga(Talker)
    case rmc(Talker)
    case gsa(Talker)
    case gsv(Talker)
    case other
  }

  @inline(__always)
  static func frequentKind(_ bytes: UnsafeBufferPointer<UInt8>) -> FrequentKind {
    // `$TTXXX` followed by a comma or the end: a five-character address of letters and
    // digits, not proprietary.
    guard bytes.count >= 6, bytes.count == 6 || bytes[6] == ASCII.comma else { return .other }
    let first = bytes[1]
    let second = bytes[2]
    func isAlphanumeric(_ byte: UInt8) -> Bool {
      (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte)
    }
    guard first != 0x50, isAlphanumeric(first), isAlphanumeric(second) else { return .other }
    let talker = Talker(first, second)
    switch UInt32(bytes[3]) << 16 | UInt32(bytes[4]) << 8 | UInt32(bytes[5]) {
    case SentenceCode.gga: return .gga(talker)
    case SentenceCode.rmc: return .rmc(talker)
    case SentenceCode.gsa: return .gsa(talker)
    case SentenceCode.gsv: return .gsv(talker)
    default: return .other
    }
  }

  /// Calls `body` with a reader of the fields after the address and the number of commas,
  /// from a copy of the sentence on the stack that ends in a comma (see ``FieldReader``).
  ///
  /// Sentences as long as NMEA allows and as the framer's default limit fit a buffer of
  /// constant size, which costs nothing to set up; longer ones (a raised limit) get a
  /// temporary allocation of their size. (The callers that care about speed return nothing
  /// through `body`: the standard library passes its result through a `Result`, a copy.)
  @inline(__always)
  static func withFields<R>(
    _ raw: RawSentence, _ body: (FieldReader, Int) throws(NMEAParseError) -> R
  ) throws(NMEAParseError) -> R {
    let bytes = raw.bytes
    guard bytes.count < shortSentence else {
      return try withUnsafeTemporaryAllocation(of: UInt8.self, capacity: bytes.count + 1) {
        (buffer: UnsafeMutableBufferPointer<UInt8>) throws(NMEAParseError) -> R in
        try read(bytes, copy: buffer.baseAddress!, body)
      }
    }
    return try withUnsafeTemporaryAllocation(of: UInt8.self, capacity: shortSentence) {
      (buffer: UnsafeMutableBufferPointer<UInt8>) throws(NMEAParseError) -> R in
      try read(bytes, copy: buffer.baseAddress!, body)
    }
  }

  /// Sentences shorter than this are copied to a buffer of this size.
  static let shortSentence = 160

  @inline(__always)
  static func read<R>(
    _ bytes: UnsafeBufferPointer<UInt8>, copy: UnsafeMutablePointer<UInt8>,
    _ body: (FieldReader, Int) throws(NMEAParseError) -> R
  ) throws(NMEAParseError) -> R {
    let count = bytes.count
    let commas = copyCountingCommas(bytes, to: copy)
    copy[count] = ASCII.comma
    return try body(FieldReader(sentence: copy, count: count), commas)
  }

  /// The general path: every sentence but the four ``FrequentSentence`` types.
  @inline(never)
  static func parseAny(_ raw: RawSentence) throws(NMEAParseError) -> Sentence {
    let bytes = raw.bytes
    var addressEnd = 1
    while addressEnd < bytes.count && bytes[addressEnd] != ASCII.comma {
      let byte = bytes[addressEnd]
      let isAlphanumeric = (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte)
      guard isAlphanumeric else { throw .badAddress }
      addressEnd += 1
    }
    let addressLength = addressEnd - 1
    guard addressLength >= 2 else { throw .badAddress }
    return try withFields(raw) { (reader, commas) throws(NMEAParseError) -> Sentence in
      var fields = reader
      if bytes[1] == 0x50 {  // 'P': proprietary
        return try parseProprietary(raw, addressLength: addressLength, commas: commas, &fields)
      }
      let talker = Talker(bytes[1], bytes[2])
      guard addressLength == 5 else { return .unknown(unknown(raw, talker: talker)) }
      // GGA, RMC, GSA and GSV never come here: `frequentKind` took them.
      let code = UInt32(bytes[3]) << 16 | UInt32(bytes[4]) << 8 | UInt32(bytes[5])
      switch code {
      case SentenceCode.gll: return .gll(try parseGLL(talker, &fields))
      case SentenceCode.vtg: return .vtg(try parseVTG(talker, &fields))
      case SentenceCode.zda: return .zda(try parseZDA(talker, &fields))
      case SentenceCode.gst: return .gst(try parseGST(talker, &fields))
      case SentenceCode.gns: return .gns(try parseGNS(talker, &fields))
      case SentenceCode.gbs: return .gbs(try parseGBS(talker, &fields))
      case SentenceCode.grs: return .grs(try parseGRS(talker, &fields, commas: commas))
      case SentenceCode.dtm: return .dtm(try parseDTM(talker, &fields))
      case SentenceCode.txt: return .txt(try parseTXT(talker, &fields))
      default: return .unknown(unknown(raw, talker: talker))
      }
    }
  }

  /// Copies the sentence to `copy` and returns the number of its commas (the number of
  /// fields after the address, which GSA, GSV and GRS need before reading them). Sixteen
  /// bytes at a time with SSE2 (the x86-64 baseline): each comparison with ",,,…" is a byte
  /// of all ones per comma, subtracted lane by lane into sixteen counters summed at the end;
  /// then eight bytes with the carry-free zero-byte test, then one by one.
  @inline(__always)
  static func copyCountingCommas(
    _ bytes: UnsafeBufferPointer<UInt8>, to copy: UnsafeMutablePointer<UInt8>
  ) -> Int {
    guard let source = bytes.baseAddress else { return 0 }
    let count = bytes.count
    var index = 0
    var lanes = SIMD16<UInt8>()
    let commas16 = SIMD16<UInt8>(repeating: ASCII.comma)
    // At most 31 vectors this way, so that eight lanes sum to less than 256 below (the
    // rest of a longer sentence is counted eight bytes at a time).
    let vectorEnd = min(count, 31 * 16)
    while index &+ 16 <= vectorEnd {
      let vector = UnsafeRawPointer(source + index).loadUnaligned(as: SIMD16<UInt8>.self)
      UnsafeMutableRawPointer(copy + index).storeBytes(of: vector, as: SIMD16<UInt8>.self)
      let isComma = unsafeBitCast(vector .== commas16, to: SIMD16<UInt8>.self)
      lanes &+= SIMD16<UInt8>(repeating: 1) & isComma
      index &+= 16
    }
    // The sixteen lane counts summed, eight at a time by one multiplication each.
    let halves = unsafeBitCast(lanes, to: SIMD2<UInt64>.self)
    let ones: UInt64 = 0x0101_0101_0101_0101
    var commas = Int(truncatingIfNeeded: (halves[0] &* ones) >> 56 &+ (halves[1] &* ones) >> 56)
    let low7: UInt64 = 0x7F7F_7F7F_7F7F_7F7F
    let commas8: UInt64 = 0x2C2C_2C2C_2C2C_2C2C
    while index &+ 8 <= count {
      let word = UnsafeRawPointer(source + index).loadUnaligned(as: UInt64.self)
      UnsafeMutableRawPointer(copy + index).storeBytes(of: word, as: UInt64.self)
      let difference = word ^ commas8
      let zeroBytes = ~(((difference & low7) &+ low7) | difference | low7)
      commas &+= Int(truncatingIfNeeded: ((zeroBytes >> 7) &* 0x0101_0101_0101_0101) >> 56)
      index &+= 8
    }
    while index < count {
      let byte = source[index]
      copy[index] = byte
      if byte == ASCII.comma { commas &+= 1 }
      index &+= 1
    }
    return commas
  }

  /// Three-letter sentence types packed into integers, so dispatch is one switch.
  enum SentenceCode {
    static let gga: UInt32 = 0x47_4741
    static let rmc: UInt32 = 0x52_4D43
    static let gsa: UInt32 = 0x47_5341
    static let gsv: UInt32 = 0x47_5356
    static let gll: UInt32 = 0x47_4C4C
    static let vtg: UInt32 = 0x56_5447
    static let zda: UInt32 = 0x5A_4441
    static let gst: UInt32 = 0x47_5354
    static let gns: UInt32 = 0x47_4E53
    static let gbs: UInt32 = 0x47_4253
    static let grs: UInt32 = 0x47_5253
    static let dtm: UInt32 = 0x44_544D
    static let txt: UInt32 = 0x54_5854
  }

  static func unknown(_ raw: RawSentence, talker: Talker) -> UnknownSentence {
    var fields = FieldScanner(raw)
    let address = fields.next().text
    var values: [String] = []
    while fields.hasMore { values.append(fields.next().text) }
    return UnknownSentence(talker: talker, address: address, fields: values)
  }

  // MARK: - Standard sentences (GGA, RMC, GSA and GSV: in their `FrequentSentence` conformances)

  static func parseGLL(_ talker: Talker, _ f: inout FieldReader) throws(NMEAParseError) -> GLL {
    let position = try f.position()
    let time = try f.time()
    let status = try f.status()
    let mode = try f.character().map(ModeIndicator.init(rawValue:))
    return GLL(talker: talker, position: position, time: time, isValid: status, mode: mode)
  }

  static func parseVTG(_ talker: Talker, _ f: inout FieldReader) throws(NMEAParseError) -> VTG {
    var vtg = VTG(talker: talker)
    let first = try f.course()
    let second = f.next()
    if (second.count == 1 && second[0] == 0x54) || (second.isEmpty && f.hasMore) {
      // 'T': NMEA 2.3+ with unit letters; or the unit letters missing but the fields present,
      // the same layout with empty units.
      vtg.courseTrue = first
      vtg.courseMagnetic = try f.course()
      f.skip(1)
      vtg.speedKnots = try f.nonNegativeDecimal(.speed)
      f.skip(1)
      vtg.speedKilometresPerHour = try f.nonNegativeDecimal(.speed)
      f.skip(1)
      vtg.mode = try f.character().map(ModeIndicator.init(rawValue:))
    } else {
      // NMEA 1.x: course true, course magnetic, knots, km/h without unit letters.
      vtg.courseTrue = first
      if !second.isEmpty {
        guard let (magnetic, _) = FieldReader.decimal(f.base, from: second.start) else {
          throw .badField(index: 2)
        }
        guard FieldReader.isCourse(magnetic) else { throw .impossibleValue(.course, index: 2) }
        vtg.courseMagnetic = magnetic
      }
      vtg.speedKnots = try f.nonNegativeDecimal(.speed)
      vtg.speedKilometresPerHour = try f.nonNegativeDecimal(.speed)
    }
    return vtg
  }

  static func parseZDA(_ talker: Talker, _ f: inout FieldReader) throws(NMEAParseError) -> ZDA {
    let time = try f.time()
    let day = try f.uint()
    if let day, !(1...31).contains(day) { throw f.impossible(.date) }
    let month = try f.uint()
    if let month, !(1...12).contains(month) { throw f.impossible(.date) }
    let year = try f.uint()
    if let year, !(1980..<10_000).contains(year) { throw f.impossible(.date) }
    var date: UTCDate?
    if let day, let month, let year {
      // 31 April or 29 February of a common year: the day field is the one at fault.
      guard UTCDate.isValid(year: year, month: month, day: day) else {
        throw .impossibleValue(.date, index: f.index - 2)
      }
      date = UTCDate(year: year, month: UInt8(month), day: UInt8(day))
    }
    let zoneHours = try f.signedInteger()
    let zoneMinutes = try f.uint()
    return ZDA(
      talker: talker, time: time, date: date, localZoneHours: zoneHours,
      localZoneMinutes: zoneMinutes)
  }

  static func parseGST(_ talker: Talker, _ f: inout FieldReader) throws(NMEAParseError) -> GST {
    GST(
      talker: talker, time: try f.time(), rangeRMS: try f.nonNegativeDecimal(.accuracy),
      semiMajorError: try f.nonNegativeDecimal(.accuracy),
      semiMinorError: try f.nonNegativeDecimal(.accuracy), orientation: try f.decimal(),
      latitudeError: try f.nonNegativeDecimal(.accuracy),
      longitudeError: try f.nonNegativeDecimal(.accuracy),
      altitudeError: try f.nonNegativeDecimal(.accuracy))
  }

  static func parseGNS(_ talker: Talker, _ f: inout FieldReader) throws(NMEAParseError) -> GNS {
    var gns = GNS(talker: talker)
    gns.time = try f.time()
    gns.position = try f.position()
    let modes = f.next()
    for offset in 0..<min(modes.count, 8) {
      gns.modeStorage[offset] = modes[offset]
      gns.modeCount += 1
    }
    gns.satellitesUsed = try f.uint()
    gns.hdop = try f.nonNegativeDecimal(.accuracy)
    gns.altitudeMSL = try f.decimal()
    gns.geoidSeparation = try f.decimal()
    gns.differentialAge = try f.decimal()
    gns.differentialStation = try f.uint()
    gns.navigationalStatus = try f.character()
    return gns
  }

  static func parseGBS(_ talker: Talker, _ f: inout FieldReader) throws(NMEAParseError) -> GBS {
    GBS(
      talker: talker, time: try f.time(), latitudeError: try f.decimal(),
      longitudeError: try f.decimal(), altitudeError: try f.decimal(),
      failedSatellite: try f.uint(), probability: try f.decimal(), bias: try f.decimal(),
      biasStandardDeviation: try f.decimal(), systemID: try f.hexDigit(),
      signalID: try f.hexDigit())
  }

  static func parseGRS(_ talker: Talker, _ f: inout FieldReader, commas: Int)
    throws(NMEAParseError) -> GRS
  {
    let count = commas
    let time = try f.time()
    let mode = try f.uint()
    let hasSystem = count >= 16
    let residualCount = hasSystem ? 12 : max(0, count - 2)
    var residuals: [Double?] = []
    residuals.reserveCapacity(residualCount)
    for _ in 0..<residualCount { residuals.append(try f.decimal()) }
    let system = hasSystem ? try f.hexDigit() : nil
    let signal = hasSystem ? try f.hexDigit() : nil
    return GRS(
      talker: talker, time: time, mode: mode, residuals: residuals, systemID: system,
      signalID: signal)
  }

  static func parseDTM(_ talker: Talker, _ f: inout FieldReader) throws(NMEAParseError) -> DTM {
    let datum = f.text()
    let subDatum = f.text()
    let latitude = try f.signedByHemisphere(negative: 0x53)  // S
    let longitude = try f.signedByHemisphere(negative: 0x57)  // W
    let altitude = try f.decimal()
    let reference = f.text()
    return DTM(
      talker: talker, datum: datum, subDatum: subDatum, latitudeOffset: latitude,
      longitudeOffset: longitude, altitudeOffset: altitude, referenceDatum: reference)
  }

  static func parseTXT(_ talker: Talker, _ f: inout FieldReader) throws(NMEAParseError) -> TXT {
    let count = try f.uint()
    let number = try f.uint()
    let type = try f.uint()
    // The text is everything after the third comma: it may itself hold commas.
    var text = ""
    if f.hasMore {
      let first = f.next()
      var end = first.end
      while f.hasMore { end = f.next().end }
      text = String(
        decoding: UnsafeBufferPointer(start: first.base + first.start, count: end - first.start),
        as: UTF8.self)
    }
    return TXT(
      talker: talker, messageCount: count, messageNumber: number, messageType: type, text: text)
  }

  // MARK: - Proprietary sentences

  static func parseProprietary(
    _ raw: RawSentence, addressLength: Int, commas: Int, _ f: inout FieldReader
  ) throws(NMEAParseError) -> Sentence {
    let bytes = raw.bytes
    let address = UnsafeBufferPointer(rebasing: bytes[1..<(1 + addressLength)])
    if address.elementsEqual("PUBX".utf8) {
      let kind = f.next()
      if kind.equals("00") { return .pubxPosition(try parsePUBXPosition(&f)) }
      if kind.equals("03") { return .pubxSatellites(try parsePUBXSatellites(&f)) }
      if kind.equals("04") { return .pubxTime(try parsePUBXTime(&f)) }
    } else if address.elementsEqual("PQGSV".utf8) {
      // Quectel's GSV and GSA for BeiDou and QZSS, told apart by a trailing system ID.
      var gsv = GSV(talker: .pq)
      try GSV.parse(&f, commas: commas, into: &gsv)
      return .gsv(gsv)
    } else if address.elementsEqual("PQGSA".utf8) {
      var gsa = GSA(talker: .pq)
      try GSA.parse(&f, commas: commas, into: &gsa)
      return .gsa(gsa)
    } else if address.elementsEqual("PMTK001".utf8) {
      guard let command = try f.uint(), let flag = try f.uint(),
        let result = MTKAckResult(rawValue: flag)
      else { throw .badField(index: f.index) }
      return .mtkAcknowledgement(MTKAcknowledgement(command: command, result: result))
    } else if address.elementsEqual("PMTK010".utf8) {
      guard let code = try f.uint() else { throw .badField(index: f.index) }
      return .mtkSystemMessage(MTKSystemMessage(kind: .system(code)))
    } else if address.elementsEqual("PMTK011".utf8) {
      return .mtkSystemMessage(MTKSystemMessage(kind: .text(f.text() ?? "")))
    } else if address.elementsEqual("PGRME".utf8) {
      return .garminErrorEstimates(try parsePGRME(&f))
    } else if address.elementsEqual("PGRMZ".utf8) {
      return .garminAltitude(try parsePGRMZ(&f))
    } else if address.elementsEqual("PGRMM".utf8) {
      return .garminDatum(GarminDatum(datum: f.text()))
    }
    return .unknown(unknown(raw, talker: .proprietary))
  }

  /// `$PGRME,<HPE>,M,<VPE>,M,<EPE>,M`: metres, each with its unit letter.
  static func parsePGRME(_ f: inout FieldReader) throws(NMEAParseError) -> GarminErrorEstimates {
    func metres(_ f: inout FieldReader) throws(NMEAParseError) -> Double? {
      let value = try f.nonNegativeDecimal(.accuracy)
      let unit = try f.character()
      guard unit == nil || unit == 0x4D else { throw f.fail() }  // M
      return value
    }
    return GarminErrorEstimates(
      horizontal: try metres(&f), vertical: try metres(&f), spherical: try metres(&f))
  }

  /// `$PGRMZ,<altitude>,f,<dimension>`: feet, then 1 no fix, 2 2D (user altitude), 3 3D.
  static func parsePGRMZ(_ f: inout FieldReader) throws(NMEAParseError) -> GarminAltitude {
    let altitude = try f.decimal()
    let unit = try f.character()
    guard unit == nil || unit == 0x66 || unit == 0x46 else { throw f.fail() }  // f or F
    let mode = try f.uint()
    return GarminAltitude(
      altitudeFeet: altitude, fixMode: mode.flatMap { FixMode(rawValue: UInt8(clamping: $0)) })
  }

  static func parsePUBXPosition(_ f: inout FieldReader) throws(NMEAParseError) -> PUBXPosition {
    let time = try f.time()
    let position = try f.position()
    let altitude = try f.decimal()
    let status = f.next()
    var navigationStatus: UInt16?
    if status.count == 2 { navigationStatus = UInt16(status[0]) << 8 | UInt16(status[1]) }
    let hAcc = try f.nonNegativeDecimal(.accuracy)
    let vAcc = try f.nonNegativeDecimal(.accuracy)
    let speed = try f.nonNegativeDecimal(.speed)
    let course = try f.course()
    let velocity = try f.decimal()
    let age = try f.decimal()
    let hdop = try f.nonNegativeDecimal(.accuracy)
    let vdop = try f.nonNegativeDecimal(.accuracy)
    let tdop = try f.nonNegativeDecimal(.accuracy)
    let used = try f.uint()
    f.skip(1)  // reserved
    let deadReckoning = try f.uint().map { $0 != 0 }
    return PUBXPosition(
      time: time, position: position, altitudeHAE: altitude, navigationStatus: navigationStatus,
      horizontalAccuracy: hAcc, verticalAccuracy: vAcc, speedKilometresPerHour: speed,
      course: course, verticalVelocityDown: velocity, differentialAge: age, hdop: hdop,
      vdop: vdop, tdop: tdop, satellitesUsed: used, deadReckoning: deadReckoning)
  }

  static func parsePUBXSatellites(_ f: inout FieldReader) throws(NMEAParseError) -> PUBXSatellites {
    let count = try f.uint() ?? 0
    guard count <= 255 else { throw .badField(index: f.index) }
    var satellites: [PUBXSatellite] = []
    satellites.reserveCapacity(count)
    for _ in 0..<count {
      guard f.hasMore else { break }
      guard let id = try f.uint() else { throw .badField(index: f.index) }
      let status = try f.character()
      let azimuth = try f.uint()
      let elevation = try f.signedInteger()
      let snr = try f.uint()
      let lock = try f.uint()
      satellites.append(
        PUBXSatellite(
          id: id, status: status, azimuth: azimuth, elevation: elevation, snr: snr,
          lockTime: lock))
    }
    return PUBXSatellites(satellites: satellites)
  }

  static func parsePUBXTime(_ f: inout FieldReader) throws(NMEAParseError) -> PUBXTime {
    let time = try f.time()
    let date = try f.date()
    let tow = try f.decimal()
    let week = try f.uint()
    // Leap seconds: a number, with a trailing `D` when it is the firmware's default.
    let leapField = f.next()
    var leap: Int?
    var isDefault = false
    if !leapField.isEmpty {
      var value = 0
      var digits = 0
      for offset in 0..<leapField.count {
        let byte = leapField[offset]
        if byte == 0x44 && offset == leapField.count - 1 {
          isDefault = true
        } else {
          let digit = byte &- ASCII.zero
          // More than 18 digits would overflow (a crash, found by fuzzing); no leap second
          // count is that long.
          guard digit < 10, digits < 18 else { throw .badField(index: f.index) }
          value = value * 10 + Int(digit)
          digits += 1
        }
      }
      if digits > 0 { leap = value }
    }
    let bias = try f.signedInteger()
    let drift = try f.decimal()
    let granularity = try f.uint()
    return PUBXTime(
      time: time, date: date, timeOfWeek: tow, week: week, leapSeconds: leap,
      leapSecondsAreDefault: isDefault, clockBias: bias, clockDrift: drift,
      timePulseGranularity: granularity)
  }
}

// MARK: - The frequent sentences, and what receives a parsed sentence

/// GGA, RMC, GSA and GSV, the sentences a receiver sends most: parsed in place and handed to
/// a ``ParsedSentenceConsumer`` as their own types, never inside a ``Sentence`` (a `Sentence`
/// is as large as its largest case, and every copy of one costs).
protocol FrequentSentence {
  /// A sentence with its talker and no fields yet.
  init(talker: Talker)
  /// Reads the fields after the address; `commas` is their number.
  static func parse(_ fields: inout FieldReader, commas: Int, into sentence: inout Self)
    throws(NMEAParseError)
  /// The sentence as a ``Sentence``, for an event or a caller that wants one.
  var sentence: Sentence { get }

  // What the fix builder needs (FixBuilder.swift).

  /// The sentence's place in the receiver's cycle (``FixBuilder/key(_:_:_:)``).
  var cycleKey: UInt32 { get }
  /// The UTC time the sentence carries; `nil` for types without one.
  var time: UTCTime? { get }
  /// Whether the type normally carries the time of a position.
  static var isNormallyTimed: Bool { get }
  /// Merges the sentence's data into the epoch in progress.
  func merge(into builder: inout FixBuilder)
}

/// What ``Sentence/parse(_:into:emit:)`` hands the outcome of parsing a sentence to.
protocol ParsedSentenceConsumer {
  /// A GGA, RMC, GSA or GSV, without the ``Sentence`` around it.
  mutating func take<S: FrequentSentence>(
    _ sentence: borrowing S, emit: (DecoderEvent) throws -> Void) rethrows
  /// Any other sentence.
  mutating func take(_ sentence: Sentence, emit: (DecoderEvent) throws -> Void) rethrows
  /// A sentence that failed to parse.
  mutating func reject(
    _ raw: RawSentence, _ error: NMEAParseError, emit: (DecoderEvent) throws -> Void) rethrows
}

/// The consumer behind ``Sentence/init(parsing:)``: it keeps the outcome.
struct ParsedSentence: ParsedSentenceConsumer {
  enum Outcome {
    case parsed(Sentence)
    case failed(NMEAParseError)
  }
  var outcome = Outcome.failed(.badAddress)

  @inline(__always)
  mutating func take<S: FrequentSentence>(
    _ sentence: borrowing S, emit: (DecoderEvent) throws -> Void
  ) {
    outcome = .parsed(sentence.sentence)
  }

  @inline(__always)
  mutating func take(_ sentence: Sentence, emit: (DecoderEvent) throws -> Void) {
    outcome = .parsed(sentence)
  }

  @inline(__always)
  mutating func reject(
    _ raw: RawSentence, _ error: NMEAParseError, emit: (DecoderEvent) throws -> Void
  ) {
    outcome = .failed(error)
  }
}

extension GGA: FrequentSentence {
  init(talker: Talker) { self.talker = talker }
  var sentence: Sentence { .gga(self) }

  @inline(__always)
  static func parse(_ f: inout FieldReader, commas: Int, into gga: inout GGA)
    throws(NMEAParseError)
  {
    gga.time = try f.time()
    gga.position = try f.position()
    gga.quality = try f.uint().map(FixQuality.init(rawValue:))
    gga.satellitesUsed = try f.uint()
    gga.hdop = try f.nonNegativeDecimal(.accuracy)
    gga.altitudeMSL = try f.decimal()
    f.skip(1)  // M
    gga.geoidSeparation = try f.decimal()
    f.skip(1)  // M
    gga.differentialAge = try f.decimal()
    gga.differentialStation = try f.uint()
  }
}

extension RMC: FrequentSentence {
  init(talker: Talker) { self.talker = talker }
  var sentence: Sentence { .rmc(self) }

  @inline(__always)
  static func parse(_ f: inout FieldReader, commas: Int, into rmc: inout RMC)
    throws(NMEAParseError)
  {
    rmc.time = try f.time()
    rmc.isValid = try f.status()
    rmc.position = try f.position()
    rmc.speedKnots = try f.nonNegativeDecimal(.speed)
    rmc.course = try f.course()
    rmc.date = try f.date()
    rmc.magneticVariation = try f.magneticVariation()
    rmc.mode = try f.character().map(ModeIndicator.init(rawValue:))
    rmc.navigationalStatus = try f.character()
  }
}

extension GSA: FrequentSentence {
  init(talker: Talker) { self.talker = talker }
  var sentence: Sentence { .gsa(self) }

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
    let mode = try f.uint()
    gsa.fixMode = mode.flatMap { FixMode(rawValue: UInt8(clamping: $0)) }
    for _ in 0..<satelliteFields {
      if let id = try f.uint() {
        guard id <= 0xFFFF else { throw .badField(index: f.index) }
        gsa.satellites.append(UInt16(id))
      }
    }
    gsa.pdop = try f.nonNegativeDecimal(.accuracy)
    gsa.hdop = try f.nonNegativeDecimal(.accuracy)
    gsa.vdop = try f.nonNegativeDecimal(.accuracy)
    gsa.systemID = hasSystemID ? try f.hexDigit() : nil
  }
}

extension GSV: FrequentSentence {
  init(talker: Talker) { self.init(talker: talker, messageCount: 0, messageNumber: 0) }
  var sentence: Sentence { .gsv(self) }

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
}

extension FieldReader {
  /// Latitude with hemisphere, then longitude with hemisphere: four fields. `nil` unless
  /// both are present, so a half-empty position is never taken for 0°.
  mutating func position() throws(NMEAParseError) -> Position? {
    let latitude = try coordinate(isLongitude: false)
    let longitude = try coordinate(isLongitude: true)
    guard let latitude, let longitude else { return nil }
    return Position(latitude: latitude, longitude: longitude)
  }

  /// `A` → true, `V` → false.
  mutating func status() throws(NMEAParseError) -> Bool? {
    guard let byte = try character() else { return nil }
    switch byte {
    case 0x41: return true  // A
    case 0x56: return false  // V
    default: throw fail()
    }
  }

  /// A magnetic variation, at most 180°, and its direction letter: west negative.
  mutating func magneticVariation() throws(NMEAParseError) -> Double? {
    let value = try decimal()
    if let value, !(value >= -180 && value <= 180) { throw impossible(.magneticVariation) }
    let letter = try character()
    guard let value else { return nil }
    return letter == 0x57 ? -value : value  // W
  }

  /// A magnitude followed by a direction letter; negative when the letter is `negative`.
  mutating func signedByHemisphere(negative: UInt8) throws(NMEAParseError) -> Double? {
    let value = try decimal()
    let letter = try character()
    guard let value else { return nil }
    return letter == negative ? -value : value
  }
}
