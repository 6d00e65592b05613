extension Sentence {
  /// Parses a sentence delivered by the ``NMEAFramer``.
  ///
  /// Known sentence types become typed values; every other well-formed sentence becomes
  /// ``Sentence/unknown(_:)`` with its raw fields. Empty fields are `nil`. A field that holds
  /// something its type cannot be (letters in a number) throws
  /// ``NMEAParseError/badField(index:)``. A well-formed value no receiver can mean (31
  /// February, minutes over 59, a negative speed, a magnetic variation of 999.9) makes that
  /// field `nil` and the rest of the sentence stands; only an impossible time of day or GSV
  /// message number, which the sentence is about, throws
  /// ``NMEAParseError/impossibleValue(_:index:)``. Parsing a typed sentence allocates nothing.
  public init(parsing raw: RawSentence) throws(NMEAParseError) {
    // The registry hands the sentence back as its result, which goes straight to the
    // caller: no placeholder written first, no local `Sentence` copied out. (Never returned
    // through a closure: the standard library passes a closure's result through a `Result`,
    // a generic copy of a `Sentence`, which holds references.)
    var consumer = ParsedSentence()
    self = SentenceRegistry.parse(raw, into: &consumer) { _ in }
    if let failure = consumer.failure { throw failure }
  }

  /// Parses the fields of `raw` into a sentence of type `S` and `talker` in place and hands
  /// it to `consumer` with the impossible values dropped from it, or hands on the error.
  /// `skipping` fields after the address are the message field of an address that includes
  /// it (`PUBX,00`).
  @inline(__always)
  static func parse<S: NMEASentenceDescriptor, Consumer: ParsedSentenceConsumer>(
    _ raw: RawSentence, as type: S.Type, talker: Talker, skipping: Int = 0,
    into consumer: inout Consumer, emit: (DecoderEvent) throws -> Void
  ) rethrows -> Consumer.Result {
    // Made here, in the variable the parse fills: passed in, a sentence as large as a GSV is
    // copied whole into that variable first.
    var sentence = S(talker: talker)
    return try parse(raw, filling: &sentence, skipping: skipping, into: &consumer, emit: emit)
  }

  /// Parses the fields of `raw` into `empty` (a value holding only its talker, or what an
  /// alias row of ``SentenceRegistry`` sets), as ``parse(_:as:talker:skipping:into:emit:)``.
  @inline(__always)
  static func parse<S: NMEASentenceDescriptor, Consumer: ParsedSentenceConsumer>(
    _ raw: RawSentence, as empty: S, skipping: Int = 0, into consumer: inout Consumer,
    emit: (DecoderEvent) throws -> Void
  ) rethrows -> Consumer.Result {
    var sentence = empty
    return try parse(raw, filling: &sentence, skipping: skipping, into: &consumer, emit: emit)
  }

  /// Fills `sentence` from the fields of `raw` and hands it on, or hands on the error.
  @inline(__always)
  static func parse<S: NMEASentenceDescriptor, Consumer: ParsedSentenceConsumer>(
    _ raw: RawSentence, filling sentence: inout S, skipping: Int, into consumer: inout Consumer,
    emit: (DecoderEvent) throws -> Void
  ) rethrows -> Consumer.Result {
    let dropped: DroppedFields
    do {
      // Only the drops returned through `withFields` (one word): the standard library passes
      // a result through a `Result`, a copy, which the sentence would cost.
      dropped = try withFields(raw) { (reader, commas) throws(NMEAParseError) -> DroppedFields in
        var fields = reader
        if skipping > 0 { fields.skip(skipping) }
        try S.parse(&fields, commas: commas, into: &sentence)
        return fields.dropped
      }
    } catch {
      return try consumer.reject(raw, error, emit: emit)
    }
    return try consumer.take(sentence, dropped: dropped, emit: emit)
  }

  /// ``parse(_:as:talker:skipping:into:emit:)`` out of line, for the types a receiver sends
  /// less often than once per epoch or once per type: their code stays out of the dispatch.
  @inline(never)
  static func parseOutOfLine<S: NMEASentenceDescriptor, Consumer: ParsedSentenceConsumer>(
    _ raw: RawSentence, as type: S.Type, talker: Talker, into consumer: inout Consumer,
    emit: (DecoderEvent) throws -> Void
  ) rethrows -> Consumer.Result {
    try parse(raw, as: type, talker: talker, into: &consumer, emit: emit)
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

  static func unknown(_ raw: RawSentence, talker: Talker) -> UnknownSentence {
    var fields = FieldScanner(raw)
    let address = fields.next().text
    var values: [String] = []
    while fields.hasMore { values.append(fields.next().text) }
    return UnknownSentence(talker: talker, address: address, fields: values)
  }
}

// MARK: - What receives a parsed sentence

/// What ``SentenceRegistry/parse(_:into:emit:)`` hands the outcome of parsing a sentence to.
/// What the consumer returns is the registry's result: `Void` for a consumer that hands the
/// sentence on (``NMEADecoder``), the ``Sentence`` itself for ``Sentence/init(parsing:)``.
protocol ParsedSentenceConsumer {
  associatedtype Result
  /// A sentence of a known type, without the ``Sentence`` around it (a `Sentence` is as large
  /// as its largest case, and every copy of one costs), with the impossible values dropped
  /// from it.
  mutating func take<S: NMEASentenceDescriptor>(
    _ sentence: borrowing S, dropped: DroppedFields, emit: (DecoderEvent) throws -> Void
  ) rethrows -> Result
  /// A sentence of a type the registry has no row for.
  mutating func takeUnknown(_ sentence: UnknownSentence, emit: (DecoderEvent) throws -> Void)
    rethrows -> Result
  /// A sentence that failed to parse.
  mutating func reject(
    _ raw: RawSentence, _ error: NMEAParseError, emit: (DecoderEvent) throws -> Void
  ) rethrows -> Result
}

/// The consumer behind ``Sentence/init(parsing:)``: it returns the sentence, or keeps the
/// failure (and returns a placeholder that owns no references, never seen by a caller).
struct ParsedSentence: ParsedSentenceConsumer {
  var failure: NMEAParseError?

  @inline(__always)
  mutating func take<S: NMEASentenceDescriptor>(
    _ sentence: borrowing S, dropped: DroppedFields, emit: (DecoderEvent) throws -> Void
  ) -> Sentence {
    sentence.sentence
  }

  mutating func takeUnknown(_ sentence: UnknownSentence, emit: (DecoderEvent) throws -> Void)
    -> Sentence
  {
    .unknown(sentence)
  }

  @inline(__always)
  mutating func reject(
    _ raw: RawSentence, _ error: NMEAParseError, emit: (DecoderEvent) throws -> Void
  ) -> Sentence {
    failure = error
    return .mtkAcknowledgement(MTKAcknowledgement(command: 0, result: .failed))
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
    let letter = try character()
    guard let value else { return nil }
    guard value >= -180 && value <= 180 else { return drop(.magneticVariation) }
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
