/// HTTP/1.1 chunked transfer coding (RFC 9112, section 7.1), as an NTRIP 2 caster sends its
/// stream: a hexadecimal size line (extensions after `;` ignored), that many bytes, CR LF, …,
/// a zero size and the trailer. A pure machine fed bytes in any split: a chunk-size line, the
/// CR LF after a chunk or a frame inside a chunk may be cut at any byte.
struct ChunkedDecoder: Sendable {
  enum Failure: Error, Equatable {
    /// A size line that is not hexadecimal, too long, or a chunk not followed by CR LF.
    case malformed
  }

  private enum Phase: Equatable {
    case size(value: Int, digits: Int, inExtension: Bool)
    case sizeLineFeed(value: Int)
    case data(remaining: Int)
    case dataCarriageReturn
    case dataLineFeed
    /// After the last chunk: trailer lines until an empty one. `lineLength` of the current.
    case trailer(lineLength: Int)
    case trailerLineFeed(lineLength: Int)
    case ended
    case failed
  }

  /// The longest size line accepted, extensions included.
  static let maximumSizeDigits = 8
  private var phase = Phase.size(value: 0, digits: 0, inExtension: false)
  private var lineLength = 0

  /// Whether the zero-size chunk ended the body.
  var ended: Bool { phase == .ended }

  /// Feeds `bytes`; `data` gets the body's bytes as they come, in runs.
  mutating func append(_ bytes: ArraySlice<UInt8>, data: (ArraySlice<UInt8>) -> Void)
    throws(Failure)
  {
    var index = bytes.startIndex
    while index < bytes.endIndex {
      let byte = bytes[index]
      switch phase {
      case .size(let value, let digits, let inExtension):
        lineLength += 1
        if lineLength > 80 { return try fail() }
        if byte == 0x0D {
          guard digits > 0 else { return try fail() }
          phase = .sizeLineFeed(value: value)
        } else if inExtension {
          // An extension's text, to the end of the line: ignored.
        } else if byte == UInt8(ascii: ";") {
          guard digits > 0 else { return try fail() }
          phase = .size(value: value, digits: digits, inExtension: true)
        } else if let digit = Self.hexValue(byte), digits < Self.maximumSizeDigits {
          phase = .size(value: value << 4 | digit, digits: digits + 1, inExtension: false)
        } else {
          return try fail()
        }
        index += 1
      case .sizeLineFeed(let value):
        guard byte == 0x0A else { return try fail() }
        lineLength = 0
        phase = value == 0 ? .trailer(lineLength: 0) : .data(remaining: value)
        index += 1
      case .data(let remaining):
        let take = min(remaining, bytes.endIndex - index)
        data(bytes[index..<(index + take)])
        index += take
        phase = remaining == take ? .dataCarriageReturn : .data(remaining: remaining - take)
      case .dataCarriageReturn:
        guard byte == 0x0D else { return try fail() }
        phase = .dataLineFeed
        index += 1
      case .dataLineFeed:
        guard byte == 0x0A else { return try fail() }
        phase = .size(value: 0, digits: 0, inExtension: false)
        index += 1
      case .trailer(let length):
        if length > 1024 { return try fail() }
        phase =
          byte == 0x0D ? .trailerLineFeed(lineLength: length) : .trailer(lineLength: length + 1)
        index += 1
      case .trailerLineFeed(let length):
        guard byte == 0x0A else { return try fail() }
        phase = length == 0 ? .ended : .trailer(lineLength: 0)
        index += 1
      case .ended:
        // Bytes after the end belong to no body; a caster sends none.
        return
      case .failed:
        throw .malformed
      }
    }
  }

  private mutating func fail() throws(Failure) {
    phase = .failed
    throw .malformed
  }

  private static func hexValue(_ byte: UInt8) -> Int? {
    switch byte {
    case UInt8(ascii: "0")...UInt8(ascii: "9"): return Int(byte - UInt8(ascii: "0"))
    case UInt8(ascii: "a")...UInt8(ascii: "f"): return Int(byte - UInt8(ascii: "a")) + 10
    case UInt8(ascii: "A")...UInt8(ascii: "F"): return Int(byte - UInt8(ascii: "A")) + 10
    default: return nil
    }
  }
}
