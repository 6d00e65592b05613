/// Why a sentence could not be parsed.
public enum NMEAParseError: Error, Sendable, Hashable {
  /// The address field (`GPGGA`, `PUBX` …) is missing or not letters and digits.
  case badAddress
  /// Field `index` (1 is the first after the address) holds something its type cannot be.
  case badField(index: Int)
}

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
}

/// Walks the fields of a sentence after its address, left to right, without copying.
///
/// A field past the end of the sentence reads as empty, so sentences from older NMEA
/// versions, which lack the trailing fields, parse with those fields `nil`.
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

  mutating func fail() -> NMEAParseError { .badField(index: index) }

  /// An unsigned decimal integer.
  public mutating func uint() throws(NMEAParseError) -> Int? {
    // One pass instead of next() and a digit loop: the digits are summed while looking for
    // the comma, and the field is judged at its end (empty, too long, or not all digits).
    index += 1
    guard offset <= count else { return nil }
    var position = offset
    var value = 0
    var allDigits = true
    while position < count {
      let byte = base[position]
      if byte == ASCII.comma { break }
      let digit = byte &- ASCII.zero
      allDigits = allDigits && digit < 10
      value = value &* 10 &+ Int(digit)
      position += 1
    }
    let length = position - offset
    offset = position + 1
    if length == 0 { return nil }
    guard length <= 18, allDigits else { throw fail() }
    return value
  }

  /// A decimal number, optionally signed, with or without a fraction.
  public mutating func decimal() throws(NMEAParseError) -> Double? {
    let field = next()
    if field.isEmpty { return nil }
    guard let value = Self.parseDecimal(field) else { throw fail() }
    return value
  }

  /// Parses `[+-]digits[.digits]` exactly: the digits as an integer, one correctly rounded
  /// division by a power of ten.
  static func parseDecimal(_ field: Field) -> Double? {
    var offset = 0
    var negative = false
    if field[0] == ASCII.minus || field[0] == ASCII.plus {
      negative = field[0] == ASCII.minus
      offset = 1
    }
    var mantissa: UInt64 = 0
    var digits = 0
    var fractionDigits = -1
    while offset < field.count {
      let byte = field[offset]
      if byte == ASCII.dot {
        guard fractionDigits < 0 else { return nil }
        fractionDigits = 0
      } else {
        let digit = byte &- ASCII.zero
        guard digit < 10 else { return nil }
        // Digits beyond 19 significant ones cannot be held exactly; such a field is nonsense.
        guard digits < 19 else { return nil }
        if mantissa != 0 || digit != 0 { digits += 1 }
        mantissa = mantissa &* 10 &+ UInt64(digit)
        if fractionDigits >= 0 { fractionDigits += 1 }
      }
      offset += 1
    }
    guard digits > 0 || mantissa == 0, offset > (negative || field[0] == ASCII.plus ? 1 : 0)
    else { return nil }
    if fractionDigits == 0 && field.count == 1 { return nil }  // a lone "."
    // Leading zeros are not significant digits, so a fraction can be longer than 19 digits:
    // 10^20 and beyond are outside the table of powers (a crash before), and no receiver
    // writes such a number.
    if fractionDigits > 19 { return nil }
    var value = Double(mantissa)
    if fractionDigits > 0 { value /= Double(Powers.ten(fractionDigits)) }
    return negative ? -value : value
  }

  /// A single character (status, mode, hemisphere, unit).
  public mutating func character() throws(NMEAParseError) -> UInt8? {
    let field = next()
    if field.isEmpty { return nil }
    guard field.count == 1 else { throw fail() }
    return field[0]
  }

  /// A field as text, `nil` when empty (allocates; for rare sentences only).
  public mutating func text() -> String? {
    let field = next()
    return field.isEmpty ? nil : field.text
  }

  /// `hhmmss[.s…]`: a UTC time of day.
  public mutating func time() throws(NMEAParseError) -> UTCTime? {
    let field = next()
    if field.isEmpty { return nil }
    guard field.count >= 6 else { throw fail() }
    var parts: (Int, Int, Int) = (0, 0, 0)
    for pair in 0..<3 {
      let tens = field[pair * 2] &- ASCII.zero
      let ones = field[pair * 2 + 1] &- ASCII.zero
      guard tens < 10, ones < 10 else { throw fail() }
      let value = Int(tens) * 10 + Int(ones)
      switch pair {
      case 0: parts.0 = value
      case 1: parts.1 = value
      default: parts.2 = value
      }
    }
    guard parts.0 < 24, parts.1 < 60, parts.2 <= 60 else { throw fail() }
    var nanoseconds: UInt32 = 0
    if field.count > 6 {
      guard field[6] == ASCII.dot else { throw fail() }
      var scale: UInt32 = 100_000_000
      for offset in 7..<field.count {
        let digit = field[offset] &- ASCII.zero
        guard digit < 10 else { throw fail() }
        nanoseconds &+= UInt32(digit) &* scale  // digits past the ninth add 0
        scale /= 10
      }
    }
    return UTCTime(
      hour: UInt8(parts.0), minute: UInt8(parts.1), second: UInt8(parts.2),
      nanoseconds: nanoseconds)
  }

  /// `ddmmyy`: a date with a two-digit year, read as 1980–2079 (GPS time began in 1980).
  public mutating func date() throws(NMEAParseError) -> UTCDate? {
    let field = next()
    if field.isEmpty { return nil }
    guard field.count == 6 else { throw fail() }
    var values = (0, 0, 0)
    for pair in 0..<3 {
      let tens = field[pair * 2] &- ASCII.zero
      let ones = field[pair * 2 + 1] &- ASCII.zero
      guard tens < 10, ones < 10 else { throw fail() }
      let value = Int(tens) * 10 + Int(ones)
      switch pair {
      case 0: values.0 = value
      case 1: values.1 = value
      default: values.2 = value
      }
    }
    guard (1...31).contains(values.0), (1...12).contains(values.1) else { throw fail() }
    let year = values.2 >= 80 ? 1900 + values.2 : 2000 + values.2
    return UTCDate(year: year, month: UInt8(values.1), day: UInt8(values.0))
  }

  /// `[d]ddmm.mmmm` followed by a hemisphere field (`N`/`S` or `E`/`W`).
  ///
  /// Both fields are consumed. An empty angle or hemisphere is `nil`.
  public mutating func coordinate(isLongitude: Bool) throws(NMEAParseError) -> Coordinate? {
    let field = next()
    let angleIndex = index
    let hemisphere = next()
    if field.isEmpty { return nil }
    guard hemisphere.count == 1 else {
      if hemisphere.isEmpty { return nil }
      throw fail()
    }
    let negativeLetter: UInt8 = isLongitude ? 0x57 : 0x53  // W or S
    let positiveLetter: UInt8 = isLongitude ? 0x45 : 0x4E  // E or N
    guard hemisphere[0] == negativeLetter || hemisphere[0] == positiveLetter else { throw fail() }
    guard let value = Self.parseAngle(field, isLongitude: isLongitude) else {
      throw .badField(index: angleIndex)
    }
    var coordinate = value
    coordinate.isNegative = hemisphere[0] == negativeLetter
    return coordinate
  }

  static func parseAngle(_ field: Field, isLongitude: Bool) -> Coordinate? {
    var whole: UInt64 = 0
    var wholeDigits = 0
    var offset = 0
    while offset < field.count && field[offset] != ASCII.dot {
      let digit = field[offset] &- ASCII.zero
      guard digit < 10, wholeDigits < 6 else { return nil }
      whole = whole * 10 + UInt64(digit)
      wholeDigits += 1
      offset += 1
    }
    guard wholeDigits >= 3 else { return nil }  // at least d + mm
    var fraction: UInt64 = 0
    var fractionDigits = 0
    if offset < field.count {
      offset += 1  // the dot
      while offset < field.count {
        let digit = field[offset] &- ASCII.zero
        guard digit < 10, fractionDigits < 12 else { return nil }
        fraction = fraction * 10 + UInt64(digit)
        fractionDigits += 1
        offset += 1
      }
    }
    var degrees = whole / 100
    var minutes = whole % 100
    // MediaTek receivers without a fix write latitude `8960.000000` (89°60′, the pole): take
    // exactly 60 minutes as the next degree. More than 60 is an error.
    if minutes == 60 && fraction == 0 {
      degrees += 1
      minutes = 0
    }
    guard minutes < 60, degrees <= (isLongitude ? 180 : 90) else { return nil }
    let scaled = minutes * Powers.ten(fractionDigits) + fraction
    // The exact pole or antimeridian only: 90°00.000' is fine, 90°00.001' is not.
    if degrees == (isLongitude ? 180 : 90) && scaled != 0 { return nil }
    return Coordinate(
      degrees: UInt16(degrees), scaledMinutes: scaled, fractionDigits: UInt8(fractionDigits),
      isNegative: false)
  }
}
