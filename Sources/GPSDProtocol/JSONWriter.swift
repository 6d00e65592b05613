import NMEA

/// Writes JSON text into a reusable byte buffer, without Foundation.
///
/// Values are appended in order; the writer puts the commas and colons between them. Object
/// members whose value is `nil` or not a finite number are left out entirely (gpsd omits
/// what it does not know rather than writing `null` or `0`), so a report never carries
/// `NaN`, `Infinity` or invented zeros. Strings are escaped so that any input becomes valid
/// JSON: quotes, backslashes and control characters as JSON escapes, every non-ASCII
/// character as `\uXXXX` (surrogate pairs beyond the Basic Multilingual Plane), so the output
/// is plain ASCII whatever a receiver sent.
///
/// ```swift
/// var json = JSONWriter()
/// json.beginObject()
/// json.member("class", "ERROR")
/// json.member("message", "unknown command")
/// json.endObject()
/// json.newline()
/// // json.bytes: {"class":"ERROR","message":"unknown command"}\n
/// ```
///
/// The writer does not check nesting: callers pair `begin…` and `end…` and write a key before
/// each value inside an object (the report functions in this module do).
public struct JSONWriter: Sendable {
  /// The JSON text written so far, UTF-8 (in fact ASCII).
  public private(set) var bytes: [UInt8]

  /// A value has been written at the current level, so the next one needs a comma.
  private var needsComma = false
  /// A key has just been written, so the next value follows its colon without a comma.
  private var afterKey = false

  /// A writer whose buffer can hold `capacity` bytes before growing.
  public init(capacity: Int = 1024) {
    bytes = []
    bytes.reserveCapacity(capacity)
  }

  /// The JSON text written so far.
  public var text: String { String(decoding: bytes, as: UTF8.self) }

  /// Forgets what was written, keeping the buffer's capacity.
  public mutating func removeAll() {
    bytes.removeAll(keepingCapacity: true)
    needsComma = false
    afterKey = false
  }

  /// Ends a line (a gpsd report is one line; the gpsd server ends them with CR LF). The
  /// next value starts a new top-level value, without a comma.
  public mutating func newline(crlf: Bool = false) {
    if crlf { bytes.append(0x0D) }
    bytes.append(0x0A)
    needsComma = false
    afterKey = false
  }

  // MARK: - Structure

  public mutating func beginObject() { open(UInt8(ascii: "{")) }
  public mutating func endObject() { close(UInt8(ascii: "}")) }
  public mutating func beginArray() { open(UInt8(ascii: "[")) }
  public mutating func endArray() { close(UInt8(ascii: "]")) }

  private mutating func open(_ bracket: UInt8) {
    separate()
    bytes.append(bracket)
    needsComma = false
  }

  private mutating func close(_ bracket: UInt8) {
    bytes.append(bracket)
    needsComma = true
  }

  /// Writes an object member's key; the next value written is its value.
  public mutating func key(_ name: StaticString) {
    if needsComma { bytes.append(UInt8(ascii: ",")) }
    name.withUTF8Buffer { appendQuoted(utf8: $0) }
    bytes.append(UInt8(ascii: ":"))
    needsComma = false
    afterKey = true
  }

  /// Writes an object member's key given at run time.
  public mutating func key(_ name: String) {
    if needsComma { bytes.append(UInt8(ascii: ",")) }
    appendQuoted(name)
    bytes.append(UInt8(ascii: ":"))
    needsComma = false
    afterKey = true
  }

  /// Writes a value whose JSON text `write` appends (for numbers formatted elsewhere).
  mutating func value(writing write: (inout [UInt8]) -> Void) {
    separate()
    write(&bytes)
    needsComma = true
  }

  /// The comma before a value, unless it is the first at its level or follows its key.
  private mutating func separate() {
    if afterKey {
      afterKey = false
    } else if needsComma {
      bytes.append(UInt8(ascii: ","))
    }
  }

  // MARK: - Values

  public mutating func string(_ value: String) {
    separate()
    appendQuoted(value)
    needsComma = true
  }

  /// A string known at compile time (a report class), written without making a `String`.
  public mutating func string(literal value: StaticString) {
    separate()
    value.withUTF8Buffer { appendQuoted(utf8: $0) }
    needsComma = true
  }

  /// A string given as bytes from a device (a receiver's text, a version string): valid
  /// UTF-8 sequences are decoded as such; any other byte is taken as Latin-1 (as gpsd does),
  /// so nothing a receiver sends can make the output invalid.
  public mutating func string<Bytes: Collection>(bytes value: Bytes) where Bytes.Element == UInt8 {
    separate()
    appendQuoted(bytes: value)
    needsComma = true
  }

  public mutating func integer<Integer: BinaryInteger>(_ value: Integer) {
    separate()
    appendInteger(value)
    needsComma = true
  }

  public mutating func boolean(_ value: Bool) {
    separate()
    appendLiteral(value ? "true" : "false")
    needsComma = true
  }

  public mutating func null() {
    separate()
    appendLiteral("null")
    needsComma = true
  }

  /// A number with exactly `decimals` digits after the point (0...15), rounded as C's
  /// `printf("%.*f")` rounds (to nearest, ties to even, on the exact binary value), without
  /// a minus sign on a result of zero. Not being a number, NaN and the infinities are written
  /// as `null`; use ``member(_:_:decimals:)`` to leave them out instead.
  public mutating func number(_ value: Double, decimals: Int) {
    separate()
    if value.isFinite {
      DecimalFormatting.appendFixed(value, decimals: decimals, to: &bytes)
    } else {
      appendLiteral("null")
    }
    needsComma = true
  }

  /// A number in the shortest form that reads back as the same `Double` (`null` if not
  /// finite).
  public mutating func number(_ value: Double) {
    separate()
    if value.isFinite {
      bytes.append(contentsOf: value.description.utf8)
    } else {
      appendLiteral("null")
    }
    needsComma = true
  }

  /// A UTC timestamp as gpsd writes it: ISO 8601 with milliseconds,
  /// `"2026-03-17T23:40:00.000Z"`. Fractions of a millisecond are cut, never rounded, so a
  /// time never moves into the next second.
  public mutating func timestamp(_ value: UTCTimestamp) {
    separate()
    bytes.append(UInt8(ascii: "\""))
    DecimalFormatting.appendPadded(value.date.year, width: 4, to: &bytes)
    bytes.append(UInt8(ascii: "-"))
    DecimalFormatting.appendPadded(Int(value.date.month), width: 2, to: &bytes)
    bytes.append(UInt8(ascii: "-"))
    DecimalFormatting.appendPadded(Int(value.date.day), width: 2, to: &bytes)
    bytes.append(UInt8(ascii: "T"))
    DecimalFormatting.appendPadded(Int(value.time.hour), width: 2, to: &bytes)
    bytes.append(UInt8(ascii: ":"))
    DecimalFormatting.appendPadded(Int(value.time.minute), width: 2, to: &bytes)
    bytes.append(UInt8(ascii: ":"))
    DecimalFormatting.appendPadded(Int(value.time.second), width: 2, to: &bytes)
    bytes.append(UInt8(ascii: "."))
    DecimalFormatting.appendPadded(Int(value.time.nanoseconds / 1_000_000), width: 3, to: &bytes)
    bytes.append(UInt8(ascii: "Z"))
    bytes.append(UInt8(ascii: "\""))
    needsComma = true
  }

  // MARK: - Members that leave out what is unknown

  public mutating func member(_ name: StaticString, _ value: String?) {
    guard let value else { return }
    key(name)
    string(value)
  }

  public mutating func member(_ name: StaticString, _ value: Int?) {
    guard let value else { return }
    key(name)
    integer(value)
  }

  public mutating func member(_ name: StaticString, _ value: Bool?) {
    guard let value else { return }
    key(name)
    boolean(value)
  }

  /// A fixed-decimal number member, left out when `nil`, NaN or infinite.
  public mutating func member(_ name: StaticString, _ value: Double?, decimals: Int) {
    guard let value, value.isFinite else { return }
    key(name)
    number(value, decimals: decimals)
  }

  public mutating func member(_ name: StaticString, _ value: UTCTimestamp?) {
    guard let value else { return }
    key(name)
    timestamp(value)
  }

  // MARK: - Escaping

  private mutating func appendLiteral(_ literal: StaticString) {
    literal.withUTF8Buffer { bytes.append(contentsOf: $0) }
  }

  private mutating func appendInteger<Integer: BinaryInteger>(_ value: Integer) {
    if let small = Int64(exactly: value) {
      if small < 0 {
        bytes.append(UInt8(ascii: "-"))
        DecimalFormatting.appendDigits(small.magnitude, to: &bytes)
      } else {
        DecimalFormatting.appendDigits(UInt64(small), to: &bytes)
      }
    } else {
      bytes.append(contentsOf: String(value).utf8)
    }
  }

  private mutating func appendQuoted(_ value: String) {
    bytes.append(UInt8(ascii: "\""))
    for scalar in value.unicodeScalars { appendEscaped(scalar.value) }
    bytes.append(UInt8(ascii: "\""))
  }

  private mutating func appendQuoted(utf8 value: UnsafeBufferPointer<UInt8>) {
    appendQuoted(bytes: value)
  }

  private mutating func appendQuoted<Bytes: Collection>(bytes value: Bytes)
  where Bytes.Element == UInt8 {
    bytes.append(UInt8(ascii: "\""))
    var index = value.startIndex
    while index != value.endIndex {
      let (scalar, next) = Self.decodeScalar(value, at: index)
      appendEscaped(scalar)
      index = next
    }
    bytes.append(UInt8(ascii: "\""))
  }

  /// One code point from UTF-8 at `index`: a well-formed sequence (no overlongs, surrogates or
  /// values past U+10FFFF) as its code point, any other byte as itself (Latin-1).
  static func decodeScalar<Bytes: Collection>(_ value: Bytes, at index: Bytes.Index) -> (
    UInt32, Bytes.Index
  ) where Bytes.Element == UInt8 {
    let first = value[index]
    let next = value.index(after: index)
    guard first >= 0x80 else { return (UInt32(first), next) }
    let length: Int
    let minimum: UInt32
    var scalar: UInt32
    switch first {
    case 0xC2...0xDF: (length, minimum, scalar) = (2, 0x80, UInt32(first & 0x1F))
    case 0xE0...0xEF: (length, minimum, scalar) = (3, 0x800, UInt32(first & 0x0F))
    case 0xF0...0xF4: (length, minimum, scalar) = (4, 0x10000, UInt32(first & 0x07))
    default: return (UInt32(first), next)
    }
    var cursor = next
    for _ in 1..<length {
      guard cursor != value.endIndex else { return (UInt32(first), next) }
      let byte = value[cursor]
      guard byte & 0xC0 == 0x80 else { return (UInt32(first), next) }
      scalar = scalar << 6 | UInt32(byte & 0x3F)
      cursor = value.index(after: cursor)
    }
    guard scalar >= minimum, scalar <= 0x10FFFF, !(0xD800...0xDFFF).contains(scalar) else {
      return (UInt32(first), next)
    }
    return (scalar, cursor)
  }

  private mutating func appendEscaped(_ scalar: UInt32) {
    switch scalar {
    case 0x22: bytes.append(contentsOf: [0x5C, 0x22])  // \"
    case 0x5C: bytes.append(contentsOf: [0x5C, 0x5C])  // \\
    case 0x08: bytes.append(contentsOf: [0x5C, UInt8(ascii: "b")])
    case 0x0C: bytes.append(contentsOf: [0x5C, UInt8(ascii: "f")])
    case 0x0A: bytes.append(contentsOf: [0x5C, UInt8(ascii: "n")])
    case 0x0D: bytes.append(contentsOf: [0x5C, UInt8(ascii: "r")])
    case 0x09: bytes.append(contentsOf: [0x5C, UInt8(ascii: "t")])
    case 0x20...0x7E: bytes.append(UInt8(scalar))
    case 0x10000...:
      let offset = scalar - 0x10000
      appendUnicodeEscape(0xD800 + (offset >> 10))
      appendUnicodeEscape(0xDC00 + (offset & 0x3FF))
    default: appendUnicodeEscape(scalar)  // other controls, DEL, everything non-ASCII
    }
  }

  private mutating func appendUnicodeEscape(_ unit: UInt32) {
    let hex: StaticString = "0123456789abcdef"
    bytes.append(0x5C)
    bytes.append(UInt8(ascii: "u"))
    for shift in stride(from: 12, through: 0, by: -4) {
      bytes.append(hex.utf8Start[Int((unit >> UInt32(shift)) & 0xF)])
    }
  }
}
