/// Reads the fields of a sentence whose bytes are followed by a comma, each in one pass.
///
/// ``Sentence/init(parsing:)`` copies the sentence to the stack and appends the comma, so
/// that every field, the last one included, ends at a comma: the loops that read a field
/// convert its digits as they look for its end, and need no test against the end of the
/// sentence (the copy costs less than those tests). A field past the end of the sentence
/// reads as empty, as with ``FieldScanner``.
struct FieldReader {
  /// The sentence; `base[count]` is a comma.
  let base: UnsafePointer<UInt8>
  let count: Int
  /// Where the next field starts.
  var offset: Int
  /// Index of the field read last: 0 is the address, 1 the first field after it.
  var index: Int
  /// The impossible values this reader has dropped (``drop(_:)``).
  var dropped = DroppedFields()

  /// A reader of the sentence at `base`, `count` bytes followed by a comma, positioned at
  /// the field after the address.
  init(sentence base: UnsafePointer<UInt8>, count: Int) {
    self.base = base
    self.count = count
    var end = 0
    while base[end] != ASCII.comma { end &+= 1 }
    offset = end &+ 1
    index = 0
  }

  /// A reader of fields copied out of a sentence, the first of which has index `index + 1`.
  init(terminated base: UnsafePointer<UInt8>, count: Int, index: Int) {
    self.base = base
    self.count = count
    offset = 0
    self.index = index
  }

  /// Whether fields remain (including empty ones).
  var hasMore: Bool { offset <= count }

  @inline(__always)
  func fail() -> NMEAParseError { .badField(index: index) }

  /// The error for the field read last, well formed but impossible, for the values that
  /// make the whole sentence meaningless (a time of day, a GSV message number).
  @inline(__always)
  func impossible(_ reason: ImpossibleValue) -> NMEAParseError {
    .impossibleValue(reason, index: index)
  }

  /// Drops a well-formed value no receiver can mean: counted by reason, the field absent,
  /// the rest of the sentence standing. Returns `nil`, for the caller to return.
  @inline(never)
  mutating func drop<T>(_ reason: ImpossibleValue) -> T? {
    dropped.add(reason)
    return nil
  }

  /// Starts the next field: its index, and whether it holds anything. Past the end of the
  /// sentence, or at an empty field, it returns `false` (and the field is consumed).
  @inline(__always)
  mutating func begin() -> Bool {
    index &+= 1
    guard offset <= count else { return false }
    if base[offset] == ASCII.comma {
      offset &+= 1
      return false
    }
    return true
  }

  /// The next field, as a range of the sentence.
  @inline(__always)
  mutating func next() -> Field {
    index &+= 1
    guard offset <= count else { return Field(base: base, start: count, end: count) }
    var end = offset
    while base[end] != ASCII.comma { end &+= 1 }
    let field = Field(base: base, start: offset, end: end)
    offset = end &+ 1
    return field
  }

  /// Skips `n` fields.
  @inline(__always)
  mutating func skip(_ n: Int) {
    for _ in 0..<n { _ = next() }
  }

  /// The largest magnitude an integer field may have, on every build: what `Int32` holds.
  static let integerLimit = Int(Int32.max)

  /// The decimal digits from `start` on: their value (exact up to nine digits, which no build's
  /// `Int` overflows; longer runs are read again by ``integer(from:to:)``) and where the first
  /// other byte is. One induction variable and the digit kept as an `Int`, so the loop is as
  /// short as it can be.
  @inline(__always)
  static func digits(from start: UnsafePointer<UInt8>) -> (value: Int, end: UnsafePointer<UInt8>) {
    var position = start
    var value = 0
    var digit = Int(position.pointee) &- Int(ASCII.zero)
    while UInt(bitPattern: digit) < 10 {
      value = value &* 10 &+ digit
      position += 1
      digit = Int(position.pointee) &- Int(ASCII.zero)
    }
    return (value, position)
  }

  /// The value of the digits from `start` to `end` (more than nine of them), with
  /// overflow-checked arithmetic: `nil`, dropped as ``ImpossibleValue/integerRange``, beyond
  /// ``integerLimit``.
  @inline(never)
  mutating func integer(from start: UnsafePointer<UInt8>, to end: UnsafePointer<UInt8>) -> Int? {
    var value: UInt32 = 0
    var position = start
    while position < end {
      let (scaled, scaleOverflow) = value.multipliedReportingOverflow(by: 10)
      let (sum, sumOverflow) = scaled.addingReportingOverflow(
        UInt32(position.pointee &- ASCII.zero))
      guard !scaleOverflow, !sumOverflow, sum <= UInt32(Self.integerLimit) else {
        return drop(.integerRange)
      }
      value = sum
      position += 1
    }
    return Int(value)
  }

  /// The unsigned decimal integer that fills the field from `start` to its comma, of at most
  /// `maximumDigits` digits; the reader moves past the comma. `nil` (dropped) beyond
  /// ``integerLimit``.
  @inline(__always)
  mutating func unsignedDigits(
    from start: UnsafePointer<UInt8>, atMost maximumDigits: Int = .max
  ) throws(NMEAParseError) -> Int? {
    let (value, end) = Self.digits(from: start)
    guard end.pointee == ASCII.comma, end - start <= maximumDigits else { throw fail() }
    offset = end - base &+ 1
    return end - start <= 9 ? value : integer(from: start, to: end)
  }

  /// An unsigned decimal integer, any number of digits; `nil` (dropped) beyond
  /// ``integerLimit``.
  @inline(__always)
  mutating func uint() throws(NMEAParseError) -> Int? {
    guard begin() else { return nil }
    return try unsignedDigits(from: base + offset)
  }

  /// An integer that may be negative (elevations, time zones); `nil` (dropped) beyond
  /// ±``integerLimit``, so that negating it never overflows.
  @inline(__always)
  mutating func signedInteger() throws(NMEAParseError) -> Int? {
    guard begin() else { return nil }
    let start = base + offset
    let first = start.pointee
    let negative = first == ASCII.minus
    let digitsStart = negative || first == ASCII.plus ? start + 1 : start
    let (value, end) = Self.digits(from: digitsStart)
    guard end.pointee == ASCII.comma, end != digitsStart else { throw fail() }
    offset = end - base &+ 1
    if end - digitsStart > 9 {
      guard let checked = integer(from: digitsStart, to: end) else { return nil }
      return negative ? 0 &- checked : checked
    }
    return negative ? 0 &- value : value
  }

  /// A system or signal ID: one hexadecimal digit (NMEA 4.11 uses `A`...`F` for signals), or
  /// up to four decimal digits (some receivers write the ID in decimal).
  @inline(__always)
  mutating func hexDigit() throws(NMEAParseError) -> Int? {
    guard begin() else { return nil }
    let start = base + offset
    if start[1] == ASCII.comma, let value = ASCII.hexValue(start[0]) {
      offset &+= 2
      return Int(value)
    }
    return try unsignedDigits(from: start, atMost: 4)
  }

  /// Appends the decimal digits from `start` on to `value` (wrapping; callers bound the
  /// count) and returns where the first other byte is.
  @inline(__always)
  static func accumulateDigits(
    _ base: UnsafePointer<UInt8>, from start: Int, into value: inout UInt64
  ) -> Int {
    var position = start
    var digit = base[position] &- ASCII.zero
    while digit < 10 {
      value = value &* 10 &+ UInt64(digit)
      position &+= 1
      digit = base[position] &- ASCII.zero
    }
    return position
  }

  /// A decimal number, optionally signed, with or without a fraction. The usual form (see
  /// ``shortDecimal(_:from:)``) is read inline, anything else by ``decimal(from:)``.
  @inline(__always)
  mutating func decimal() throws(NMEAParseError) -> Double? {
    guard begin() else { return nil }
    if let (value, end) = Self.shortDecimal(base, from: offset) {
      offset = end &+ 1
      return value
    }
    return try decimal(from: offset)
  }

  /// ``decimal()`` for the field at `offset` (begun) that is not of the usual form.
  @inline(never)
  mutating func decimal(from start: Int) throws(NMEAParseError) -> Double? {
    guard let (value, end) = Self.decimal(base, from: start) else { throw fail() }
    offset = end &+ 1
    return value
  }

  /// What a receiver writes nearly every decimal field as: one to nine digits, a point and
  /// up to nine more, then the comma (`1.23`, `547.3`): its value, with the arithmetic of
  /// ``decimal(_:from:)`` (the same to the bit), and where the comma is; `nil` for any other
  /// form (a sign, no point, longer runs, not a number), which ``decimal(_:from:)`` reads.
  @inline(__always)
  static func shortDecimal(_ base: UnsafePointer<UInt8>, from start: Int) -> (Double, Int)? {
    var mantissa: UInt64 = 0
    var position = accumulateDigits(base, from: start, into: &mantissa)
    let wholeDigits = position &- start
    guard UInt(bitPattern: wholeDigits &- 1) < 9, base[position] == ASCII.dot else { return nil }
    let fractionStart = position &+ 1
    position = accumulateDigits(base, from: fractionStart, into: &mantissa)
    let fractionDigits = position &- fractionStart
    guard fractionDigits < 10, base[position] == ASCII.comma else { return nil }
    var value = Double(mantissa)
    if fractionDigits > 0 { value /= Powers.tenAsDouble(fractionDigits) }
    return (value, position)
  }

  /// A decimal number that cannot be negative (an error estimate); a negative one is
  /// dropped for `reason`.
  @inline(__always)
  mutating func nonNegativeDecimal(_ reason: ImpossibleValue) throws(NMEAParseError) -> Double? {
    guard let value = try decimal() else { return nil }
    guard value >= 0 else {
      dropped.add(reason)
      return nil
    }
    return value
  }

  /// A dilution of precision: never negative (dropped as an impossible accuracy); 99 or more
  /// is how receivers write "unknown" (`99.0`, `99.99`), left out without being counted.
  /// The usual form is read inline (``shortDecimal(_:from:)``), anything else by
  /// ``dop(from:)``.
  @inline(__always)
  mutating func dop() throws(NMEAParseError) -> Double? {
    guard begin() else { return nil }
    if let (value, end) = Self.shortDecimal(base, from: offset) {
      offset = end &+ 1
      return value < 99 ? value : nil
    }
    return try dop(from: offset)
  }

  /// ``dop()`` for the field at `start` (begun) that is not of the usual form.
  @inline(never)
  mutating func dop(from start: Int) throws(NMEAParseError) -> Double? {
    guard let (value, end) = Self.decimal(base, from: start) else { throw fail() }
    offset = end &+ 1
    guard value >= 0 else {
      dropped.add(.accuracy)
      return nil
    }
    return value < 99 ? value : nil
  }

  /// A speed over ground in knots: 0 ..< 999 (`999.99` is "unknown").
  @inline(__always)
  mutating func speedKnots() throws(NMEAParseError) -> Double? {
    guard let value = try decimal() else { return nil }
    guard value >= 0, value < 999 else {
      dropped.add(.speed)
      return nil
    }
    return value
  }

  /// A speed over ground in km/h, with the limit of ``speedKnots()``.
  @inline(__always)
  mutating func speedKilometresPerHour() throws(NMEAParseError) -> Double? {
    guard let value = try decimal() else { return nil }
    guard value >= 0, value < 999 * 1.852 else {
      dropped.add(.speed)
      return nil
    }
    return value
  }

  /// An altitude in metres: −1 000 m ... 100 km (`-9999.9` is "unknown").
  @inline(__always)
  mutating func altitude() throws(NMEAParseError) -> Double? {
    guard let value = try decimal() else { return nil }
    guard Self.isAltitude(value) else {
      dropped.add(.altitude)
      return nil
    }
    return value
  }

  @inline(__always)
  static func isAltitude(_ metres: Double) -> Bool { metres >= -1_000 && metres <= 100_000 }

  /// The geoid's height above the ellipsoid, metres: within ±200 m.
  @inline(__always)
  mutating func geoidSeparation() throws(NMEAParseError) -> Double? {
    guard let value = try decimal() else { return nil }
    guard value >= -200, value <= 200 else {
      dropped.add(.geoidSeparation)
      return nil
    }
    return value
  }

  /// A fix type, 1 (no fix), 2 (2D) or 3 (3D).
  @inline(__always)
  mutating func fixMode() throws(NMEAParseError) -> FixMode? {
    guard let value = try uint() else { return nil }
    guard let mode = FixMode(rawValue: UInt8(clamping: value)) else {
      dropped.add(.fixMode)
      return nil
    }
    return mode
  }

  /// A course over ground, degrees from north: 0 ..< 360.
  @inline(__always)
  mutating func course() throws(NMEAParseError) -> Double? {
    guard let value = try decimal() else { return nil }
    guard Self.isCourse(value) else {
      dropped.add(.course)
      return nil
    }
    return value
  }

  @inline(__always)
  static func isCourse(_ value: Double) -> Bool { value >= 0 && value < 360 }

  /// Reads `[+-]digits[.digits]` from `start` up to the comma that ends the field (the field
  /// is not empty) and returns the value and where the comma is, or `nil` when the field is
  /// not such a number. Exact: the digits as an integer, one correctly rounded division by a
  /// power of ten. At most 19 significant digits (more cannot be held exactly) and 19
  /// fractional ones.
  @inline(__always)
  static func decimal(_ base: UnsafePointer<UInt8>, from start: Int) -> (Double, Int)? {
    var position = start
    let first = base[position]
    let negative = first == ASCII.minus
    if negative || first == ASCII.plus { position &+= 1 }
    let digitsStart = position
    var mantissa: UInt64 = 0
    position = accumulateDigits(base, from: position, into: &mantissa)
    var digits = position &- digitsStart
    var fractionDigits = 0
    if base[position] == ASCII.dot {
      position &+= 1
      let fractionStart = position
      position = accumulateDigits(base, from: position, into: &mantissa)
      fractionDigits = position &- fractionStart
      digits &+= fractionDigits
      // A lone "." is not a number; "-." and "+." are (zero).
      if position &- start == 1 { return nil }
    } else if digits == 0 {
      return nil  // empty after the sign, or not a number at all
    }
    guard base[position] == ASCII.comma, fractionDigits <= 19 else { return nil }
    if digits > 19 {
      // Leading zeros are not significant: count the digits from the first other one.
      var significant = 0
      var scan = digitsStart
      while scan < position {
        let byte = base[scan]
        if byte != ASCII.dot && (significant > 0 || byte != ASCII.zero) { significant &+= 1 }
        scan &+= 1
      }
      guard significant <= 19 else { return nil }
    }
    var value = Double(mantissa)
    if fractionDigits > 0 { value /= Powers.tenAsDouble(fractionDigits) }
    return (negative ? -value : value, position)
  }

  /// A single character (status, mode, hemisphere, unit).
  @inline(__always)
  mutating func character() throws(NMEAParseError) -> UInt8? {
    guard begin() else { return nil }
    guard base[offset &+ 1] == ASCII.comma else { throw fail() }
    let byte = base[offset]
    offset &+= 2
    return byte
  }

  /// A field as text, `nil` when empty (allocates; for rare sentences only).
  mutating func text() -> String? {
    let field = next()
    return field.isEmpty ? nil : field.text
  }

  /// Two decimal digits at `position`, or `nil` (a comma included: the field is short).
  @inline(__always)
  func twoDigits(at position: Int) -> Int? {
    let tens = base[position] &- ASCII.zero
    guard tens < 10 else { return nil }
    let ones = base[position &+ 1] &- ASCII.zero
    guard ones < 10 else { return nil }
    return Int(tens) &* 10 &+ Int(ones)
  }

  /// `hhmmss[.s…]`: a UTC time of day, fractional seconds kept to the nanosecond.
  @inline(__always)
  mutating func time() throws(NMEAParseError) -> UTCTime? {
    guard begin() else { return nil }
    let start = offset
    // The digits are checked in order, so a short field stops at its comma.
    guard let hour = twoDigits(at: start), let minute = twoDigits(at: start &+ 2),
      let second = twoDigits(at: start &+ 4)
    else { throw fail() }
    var position = start &+ 6
    var nanoseconds: UInt32 = 0
    if base[position] == ASCII.dot {
      position &+= 1
      var scale: UInt32 = 100_000_000
      var digit = base[position] &- ASCII.zero
      while digit < 10 {
        nanoseconds &+= UInt32(digit) &* scale  // digits past the ninth add 0
        scale /= 10
        position &+= 1
        digit = base[position] &- ASCII.zero
      }
    }
    guard base[position] == ASCII.comma else { throw fail() }
    guard hour < 24, minute < 60, second <= 60 else { throw impossible(.timeOfDay) }
    offset = position &+ 1
    return UTCTime(
      hour: UInt8(truncatingIfNeeded: hour), minute: UInt8(truncatingIfNeeded: minute),
      second: UInt8(truncatingIfNeeded: second), nanoseconds: nanoseconds)
  }

  /// `ddmmyy`: a date with a two-digit year, read as 1980–2079 (GPS time began in 1980).
  @inline(__always)
  mutating func date() throws(NMEAParseError) -> UTCDate? {
    guard begin() else { return nil }
    let start = offset
    guard let day = twoDigits(at: start), let month = twoDigits(at: start &+ 2),
      let year = twoDigits(at: start &+ 4), base[start &+ 6] == ASCII.comma
    else { throw fail() }
    let fullYear = year >= 80 ? 1900 + year : 2000 + year
    offset = start &+ 7
    guard UTCDate.isValid(year: fullYear, month: month, day: day) else {
      dropped.add(.date)
      return nil
    }
    return UTCDate(
      year: fullYear, month: UInt8(truncatingIfNeeded: month),
      day: UInt8(truncatingIfNeeded: day))
  }

  /// `[d]ddmm.mmmm` followed by a hemisphere field (`N`/`S` or `E`/`W`).
  ///
  /// Both fields are consumed. An empty angle or hemisphere is `nil`. A bad hemisphere is
  /// reported before a bad angle.
  ///
  /// The usual form (`4717.11399,N`: three to six digits, a point, at most twelve digits,
  /// a one-letter hemisphere) is read inline in one pass; anything else (an empty field, a
  /// bad one) by ``coordinate(from:isLongitude:)``, which reports the errors.
  @inline(__always)
  mutating func coordinate(isLongitude: Bool) throws(NMEAParseError) -> Coordinate? {
    let start = offset
    if start <= count {
      var whole: UInt64 = 0
      var position = Self.accumulateDigits(base, from: start, into: &whole)
      if UInt(bitPattern: position &- start &- 3) < 4, base[position] == ASCII.dot {
        let fractionStart = position &+ 1
        var fraction: UInt64 = 0
        position = Self.accumulateDigits(base, from: fractionStart, into: &fraction)
        let fractionDigits = position &- fractionStart
        let negativeLetter: UInt8 = isLongitude ? 0x57 : 0x53  // W or S
        let positiveLetter: UInt8 = isLongitude ? 0x45 : 0x4E  // E or N
        // The hemisphere's comma is at most the one after the sentence (`base[count]`).
        if fractionDigits <= 12, base[position] == ASCII.comma, position &+ 2 <= count,
          base[position &+ 2] == ASCII.comma,
          case let letter = base[position &+ 1],
          letter == negativeLetter || letter == positiveLetter
        {
          index &+= 2
          offset = position &+ 3
          guard
            var value = angle(
              whole: whole, fraction: fraction, fractionDigits: fractionDigits,
              isLongitude: isLongitude)
          else { return nil }
          value.isNegative = letter == negativeLetter
          return value
        }
      }
    }
    return try coordinate(from: start, isLongitude: isLongitude)
  }

  /// ``coordinate(isLongitude:)`` for the fields at `start` that are not of the usual form.
  @inline(never)
  mutating func coordinate(from start: Int, isLongitude: Bool) throws(NMEAParseError)
    -> Coordinate?
  {
    let angle = next()
    let angleIndex = index
    let hemisphere = next()
    if angle.isEmpty { return nil }
    guard hemisphere.count == 1 else {
      if hemisphere.isEmpty { return nil }
      throw fail()
    }
    let negativeLetter: UInt8 = isLongitude ? 0x57 : 0x53  // W or S
    let positiveLetter: UInt8 = isLongitude ? 0x45 : 0x4E  // E or N
    let letter = base[hemisphere.start]
    guard letter == negativeLetter || letter == positiveLetter else { throw fail() }
    guard
      var value = try self.angle(from: angle.start, isLongitude: isLongitude, index: angleIndex)
    else { return nil }
    value.isNegative = letter == negativeLetter
    return value
  }

  /// `[d]ddmm[.mmmm]` from `start` to the comma that ends field `index`; `nil` (dropped)
  /// beyond the pole or the antimeridian or with 60 minutes or more.
  @inline(__always)
  mutating func angle(from start: Int, isLongitude: Bool, index: Int)
    throws(NMEAParseError) -> Coordinate?
  {
    var whole: UInt64 = 0
    var position = Self.accumulateDigits(base, from: start, into: &whole)
    let wholeDigits = position &- start
    // At least d + mm.
    guard wholeDigits >= 3, wholeDigits <= 6 else { throw .badField(index: index) }
    var fraction: UInt64 = 0
    var fractionDigits = 0
    if base[position] == ASCII.dot {
      position &+= 1
      let fractionStart = position
      position = Self.accumulateDigits(base, from: position, into: &fraction)
      fractionDigits = position &- fractionStart
    }
    guard base[position] == ASCII.comma, fractionDigits <= 12 else {
      throw .badField(index: index)
    }
    return angle(
      whole: whole, fraction: fraction, fractionDigits: fractionDigits, isLongitude: isLongitude)
  }

  /// The angle of `whole` (`[d]ddmm`) and `fractionDigits` digits of minutes `fraction`;
  /// `nil` (dropped) beyond the pole or the antimeridian or with 60 minutes or more.
  @inline(__always)
  mutating func angle(whole: UInt64, fraction: UInt64, fractionDigits: Int, isLongitude: Bool)
    -> Coordinate?
  {
    var degrees = whole / 100
    var minutes = whole % 100
    // MediaTek receivers without a fix write latitude `8960.000000` (89°60′, the pole): take
    // exactly 60 minutes as the next degree. More than 60 is impossible.
    if minutes == 60 && fraction == 0 {
      degrees += 1
      minutes = 0
    }
    guard minutes < 60 else {
      dropped.add(.arcMinutes)
      return nil
    }
    let limit: UInt64 = isLongitude ? 180 : 90
    let scaled = minutes * Powers.ten(fractionDigits) + fraction
    // Up to the exact pole or antimeridian: 90°00.000' is fine, 90°00.001' is not.
    guard degrees < limit || (degrees == limit && scaled == 0) else {
      dropped.add(isLongitude ? .longitude : .latitude)
      return nil
    }
    return Coordinate(
      degrees: UInt16(degrees), scaledMinutes: scaled, fractionDigits: UInt8(fractionDigits),
      isNegative: false)
  }
}
