/// One comma-separated field of a sentence, as a range of its bytes.
public struct Field {
  let base: UnsafePointer<UInt8>
  let start: Int
  let end: Int

  init(base: UnsafePointer<UInt8>, start: Int, end: Int) {
    self.base = base
    self.start = start
    self.end = end
  }

  public var isEmpty: Bool { start == end }
  public var count: Int { end - start }

  public subscript(offset: Int) -> UInt8 { base[start + offset] }

  /// The field's bytes as text (allocates).
  public var text: String {
    String(decoding: UnsafeBufferPointer(start: base + start, count: count), as: UTF8.self)
  }

  /// Whether the field is exactly `literal` (ASCII).
  public func equals(_ literal: StaticString) -> Bool {
    guard literal.utf8CodeUnitCount == count else { return false }
    let bytes = literal.utf8Start
    for offset in 0..<count where bytes[offset] != base[start + offset] { return false }
    return true
  }

  /// Calls `body` with a copy of the field followed by a comma, the form ``FieldReader``'s
  /// conversions read (for fields of a ``FieldScanner``, whose sentence has no such comma).
  func withTerminatedCopy<R>(
    _ body: (UnsafePointer<UInt8>) throws(NMEAParseError) -> R
  ) throws(NMEAParseError) -> R {
    let count = self.count
    let start = base + self.start
    return try withUnsafeTemporaryAllocation(of: UInt8.self, capacity: count + 1) {
      (buffer: UnsafeMutableBufferPointer<UInt8>) throws(NMEAParseError) -> R in
      let copy = buffer.baseAddress!
      copy.initialize(from: start, count: count)
      copy[count] = ASCII.comma
      return try body(UnsafePointer(copy))
    }
  }
}

/// Walks the fields of a sentence after its address, left to right, without copying.
///
/// A field past the end of the sentence reads as empty, so sentences from older NMEA
/// versions, which lack the trailing fields, parse with those fields `nil`. The typed fields
/// follow the same rules as ``Sentence/init(parsing:)``, which reads them with the faster
/// ``FieldReader``.
public struct FieldScanner {
  let base: UnsafePointer<UInt8>
  let count: Int
  var offset: Int
  /// Index of the field `next()` returned last: 0 is the address, 1 the first field after it
  /// (NMEA's own numbering, the one ``NMEAParseError/badField(index:)`` reports).
  public private(set) var index = -1

  /// A scanner positioned at the address field of `sentence`.
  public init(_ sentence: RawSentence) {
    // A zero-length sentence never reaches here: the framer delivers at least two bytes.
    base = sentence.bytes.baseAddress!
    count = sentence.bytes.count
    offset = 1  // after '$' or '!'
  }

  /// Whether fields remain (including empty ones).
  public var hasMore: Bool { offset <= count }

  /// The next field; empty once the sentence is exhausted.
  public mutating func next() -> Field {
    index += 1
    guard offset <= count else { return Field(base: base, start: count, end: count) }
    var end = offset
    while end < count && base[end] != ASCII.comma { end += 1 }
    let field = Field(base: base, start: offset, end: end)
    offset = end + 1
    return field
  }

  /// Skips `n` fields.
  public mutating func skip(_ n: Int) {
    for _ in 0..<n { _ = next() }
  }

  // MARK: - Typed fields. Empty is nil; anything unparseable throws.

  /// Reads the next field with one of ``FieldReader``'s conversions.
  mutating func read<T>(
    _ convert: (inout FieldReader) throws(NMEAParseError) -> T?
  ) throws(NMEAParseError) -> T? {
    let field = next()
    if field.isEmpty { return nil }
    let fieldIndex = index
    return try field.withTerminatedCopy { (copy) throws(NMEAParseError) -> T? in
      var reader = FieldReader(terminated: copy, count: field.count, index: fieldIndex - 1)
      let value = try convert(&reader)
      // One field read on its own: an impossible value is that field's error.
      if let reason = reader.dropped.first { throw .impossibleValue(reason, index: fieldIndex) }
      return value
    }
  }

  /// An unsigned decimal integer.
  public mutating func uint() throws(NMEAParseError) -> Int? {
    try read { (reader) throws(NMEAParseError) in try reader.uint() }
  }

  /// A decimal number, optionally signed, with or without a fraction.
  public mutating func decimal() throws(NMEAParseError) -> Double? {
    try read { (reader) throws(NMEAParseError) in try reader.decimal() }
  }

  /// A single character (status, mode, hemisphere, unit).
  public mutating func character() throws(NMEAParseError) -> UInt8? {
    try read { (reader) throws(NMEAParseError) in try reader.character() }
  }

  /// A field as text, `nil` when empty (allocates; for rare sentences only).
  public mutating func text() -> String? {
    let field = next()
    return field.isEmpty ? nil : field.text
  }

  /// `hhmmss[.s…]`: a UTC time of day.
  public mutating func time() throws(NMEAParseError) -> UTCTime? {
    try read { (reader) throws(NMEAParseError) in try reader.time() }
  }

  /// `ddmmyy`: a date with a two-digit year, read as 1980–2079 (GPS time began in 1980).
  public mutating func date() throws(NMEAParseError) -> UTCDate? {
    try read { (reader) throws(NMEAParseError) in try reader.date() }
  }

  /// `[d]ddmm.mmmm` followed by a hemisphere field (`N`/`S` or `E`/`W`).
  ///
  /// Both fields are consumed. An empty angle or hemisphere is `nil`.
  public mutating func coordinate(isLongitude: Bool) throws(NMEAParseError) -> Coordinate? {
    let angle = next()
    let hemisphere = next()
    let angleIndex = index - 1
    // Both fields, each followed by a comma, for the reader.
    let length = angle.count + hemisphere.count + 2
    return try withUnsafeTemporaryAllocation(of: UInt8.self, capacity: length) {
      (buffer: UnsafeMutableBufferPointer<UInt8>) throws(NMEAParseError) -> Coordinate? in
      let copy = buffer.baseAddress!
      copy.initialize(from: angle.base + angle.start, count: angle.count)
      copy[angle.count] = ASCII.comma
      (copy + angle.count + 1).initialize(
        from: hemisphere.base + hemisphere.start, count: hemisphere.count)
      copy[length - 1] = ASCII.comma
      var reader = FieldReader(terminated: copy, count: length - 1, index: angleIndex - 1)
      let value = try reader.coordinate(isLongitude: isLongitude)
      if let reason = reader.dropped.first { throw .impossibleValue(reason, index: angleIndex) }
      return value
    }
  }
}
