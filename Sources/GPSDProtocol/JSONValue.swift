/// A JSON value read from a client's command argument (`?WATCH={…}`).
///
/// Arguments are small objects of booleans, numbers and strings, so this is a plain tree;
/// nesting is accepted (gpsd ignores attributes it does not know, whatever their type) up to
/// ``JSONReader/maximumDepth``.
public enum JSONValue: Sendable, Hashable {
  case null
  case bool(Bool)
  case number(Double)
  case string(String)
  case array([JSONValue])
  /// Members in the order written; a repeated key keeps every occurrence (the last wins when
  /// read with ``member(_:)``, as in gpsd).
  case object([JSONMember])

  /// The value of the last member named `name`, for an object.
  public func member(_ name: String) -> JSONValue? {
    guard case .object(let members) = self else { return nil }
    return members.last { $0.key == name }?.value
  }
}

/// One `"key": value` of a JSON object.
public struct JSONMember: Sendable, Hashable {
  public var key: String
  public var value: JSONValue

  public init(key: String, value: JSONValue) {
    self.key = key
    self.value = value
  }
}

/// Reads one JSON value from the start of a byte buffer that may not hold all of it yet.
///
/// A client's request can arrive in pieces, so running out of bytes is not an error but
/// ``Outcome/incomplete``: the caller waits for more (within its line limit). The text after
/// the value is not looked at.
public struct JSONReader {
  /// Deepest nesting accepted; an argument deeper than this is refused rather than risking
  /// the stack.
  public static let maximumDepth = 16

  public enum Outcome: Sendable, Hashable {
    /// A value, and the index just past it.
    case value(JSONValue, end: Int)
    /// The bytes end inside the value.
    case incomplete
    /// Not JSON; the message says what was wrong, in gpsd's words where it has some.
    case invalid(String)
  }

  /// Reads the value that starts at `start` (after optional white space).
  public static func read(_ bytes: [UInt8], from start: Int = 0) -> Outcome {
    var reader = Cursor(bytes: bytes, index: start)
    do throws(Failure) {
      let value = try reader.value(depth: 0)
      return .value(value, end: reader.index)
    } catch {
      switch error {
      case .incomplete: return .incomplete
      case .invalid(let message): return .invalid(message)
      }
    }
  }

  enum Failure: Error {
    case incomplete
    case invalid(String)
  }

  struct Cursor {
    let bytes: [UInt8]
    var index: Int

    mutating func skipSpace() {
      while index < bytes.count, Self.isSpace(bytes[index]) { index += 1 }
    }

    static func isSpace(_ byte: UInt8) -> Bool {
      byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D
    }

    mutating func peek() throws(Failure) -> UInt8 {
      skipSpace()
      guard index < bytes.count else { throw .incomplete }
      return bytes[index]
    }

    mutating func value(depth: Int) throws(Failure) -> JSONValue {
      guard depth <= JSONReader.maximumDepth else {
        throw .invalid("nesting deeper than \(JSONReader.maximumDepth) levels")
      }
      switch try peek() {
      case UInt8(ascii: "{"): return try object(depth: depth)
      case UInt8(ascii: "["): return try array(depth: depth)
      case UInt8(ascii: "\""): return .string(try string())
      case UInt8(ascii: "t"):
        try literal("true")
        return .bool(true)
      case UInt8(ascii: "f"):
        try literal("false")
        return .bool(false)
      case UInt8(ascii: "n"):
        try literal("null")
        return .null
      case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
        return .number(try number())
      default:
        throw .invalid(
          "unexpected character \(Self.describe(bytes[index])) where a value was expected")
      }
    }

    mutating func object(depth: Int) throws(Failure) -> JSONValue {
      index += 1  // {
      var members: [JSONMember] = []
      if try peek() == UInt8(ascii: "}") {
        index += 1
        return .object(members)
      }
      while true {
        guard try peek() == UInt8(ascii: "\"") else {
          throw .invalid("non-whitespace when expecting attribute start")
        }
        let key = try string()
        guard try peek() == UInt8(ascii: ":") else {
          throw .invalid("expected ':' after attribute name \"\(key)\"")
        }
        index += 1
        members.append(JSONMember(key: key, value: try value(depth: depth + 1)))
        if try closes(with: UInt8(ascii: "}")) { return .object(members) }
      }
    }

    mutating func array(depth: Int) throws(Failure) -> JSONValue {
      index += 1  // [
      var elements: [JSONValue] = []
      if try peek() == UInt8(ascii: "]") {
        index += 1
        return .array(elements)
      }
      while true {
        elements.append(try value(depth: depth + 1))
        if try closes(with: UInt8(ascii: "]")) { return .array(elements) }
      }
    }

    /// After a member or an element: a comma (another follows; false) or the bracket that
    /// closes the object or array (true), taken either way.
    mutating func closes(with bracket: UInt8) throws(Failure) -> Bool {
      switch try peek() {
      case UInt8(ascii: ","):
        index += 1
        return false
      case bracket:
        index += 1
        return true
      default: throw .invalid("garbage while expecting comma or } or ]")
      }
    }

    mutating func literal(_ word: StaticString) throws(Failure) {
      let count = word.utf8CodeUnitCount
      for offset in 0..<count {
        guard index + offset < bytes.count else {
          // A prefix of the word so far: perhaps the rest is still to come.
          throw .incomplete
        }
        guard bytes[index + offset] == word.utf8Start[offset] else {
          throw .invalid("unknown literal; expected \(word)")
        }
      }
      index += count
    }

    mutating func number() throws(Failure) -> Double {
      let start = index
      if bytes[index] == UInt8(ascii: "-") { index += 1 }
      func digits(_ cursor: inout Cursor) -> Int {
        let first = cursor.index
        while cursor.index < cursor.bytes.count,
          (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(cursor.bytes[cursor.index])
        {
          cursor.index += 1
        }
        return cursor.index - first
      }
      let integerDigits = digits(&self)
      if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
        index += 1
        guard digits(&self) > 0 || index == bytes.count else {
          throw .invalid("a number needs digits after its decimal point")
        }
      }
      if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E")
      {
        index += 1
        if index < bytes.count,
          bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-")
        {
          index += 1
        }
        guard digits(&self) > 0 || index == bytes.count else {
          throw .invalid("a number needs digits in its exponent")
        }
      }
      // A number that reaches the end of the bytes may go on in the next read.
      guard index < bytes.count else { throw .incomplete }
      guard integerDigits > 0 else { throw .invalid("a number needs digits") }
      let text = String(decoding: bytes[start..<index], as: UTF8.self)
      guard let value = Double(text), value.isFinite else {
        throw .invalid("number \(text) is out of range")
      }
      return value
    }

    mutating func string() throws(Failure) -> String {
      index += 1  // opening quote
      var scalars = String.UnicodeScalarView()
      var pendingHigh: UInt32?
      while true {
        guard index < bytes.count else { throw .incomplete }
        let byte = bytes[index]
        if byte == UInt8(ascii: "\"") {
          index += 1
          if pendingHigh != nil { scalars.append("\u{FFFD}") }
          return String(scalars)
        }
        if byte < 0x20 {
          throw .invalid("error while string parsing: control character in a string")
        }
        if byte == UInt8(ascii: "\\") {
          guard index + 1 < bytes.count else { throw .incomplete }
          let escape = bytes[index + 1]
          index += 2
          var scalar: UInt32
          switch escape {
          case UInt8(ascii: "\""): scalar = 0x22
          case UInt8(ascii: "\\"): scalar = 0x5C
          case UInt8(ascii: "/"): scalar = 0x2F
          case UInt8(ascii: "b"): scalar = 0x08
          case UInt8(ascii: "f"): scalar = 0x0C
          case UInt8(ascii: "n"): scalar = 0x0A
          case UInt8(ascii: "r"): scalar = 0x0D
          case UInt8(ascii: "t"): scalar = 0x09
          case UInt8(ascii: "u"):
            guard index + 4 <= bytes.count else { throw .incomplete }
            guard let unit = Self.hex(bytes[index..<index + 4]) else {
              throw .invalid("error while string parsing: bad \\u escape")
            }
            index += 4
            scalar = unit
          default:
            throw .invalid("error while string parsing: unknown escape \\\(Self.describe(escape))")
          }
          if let high = pendingHigh {
            pendingHigh = nil
            if (0xDC00...0xDFFF).contains(scalar) {
              scalar = 0x10000 + ((high - 0xD800) << 10) + (scalar - 0xDC00)
            } else {
              scalars.append("\u{FFFD}")
            }
          } else if (0xD800...0xDBFF).contains(scalar) {
            pendingHigh = scalar
            continue
          }
          scalars.append(Unicode.Scalar(scalar) ?? "\u{FFFD}")
          continue
        }
        if pendingHigh != nil {
          pendingHigh = nil
          scalars.append("\u{FFFD}")
        }
        // Raw bytes: UTF-8 where valid, else one byte as Latin-1 (never an error: gpsd does
        // not check either, and the value only ever names a device).
        let (scalar, next) = JSONWriter.decodeScalar(bytes, at: index)
        scalars.append(Unicode.Scalar(scalar) ?? "\u{FFFD}")
        index = next
      }
    }

    static func hex(_ digits: ArraySlice<UInt8>) -> UInt32? {
      var value: UInt32 = 0
      for digit in digits {
        let nibble: UInt8
        switch digit {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): nibble = digit - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): nibble = digit - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): nibble = digit - UInt8(ascii: "A") + 10
        default: return nil
        }
        value = value << 4 | UInt32(nibble)
      }
      return value
    }

    static func describe(_ byte: UInt8) -> String {
      (0x21...0x7E).contains(byte)
        ? "'" + String(UnicodeScalar(byte)) + "'"
        : "0x" + String(byte, radix: 16, uppercase: true)
    }
  }
}
