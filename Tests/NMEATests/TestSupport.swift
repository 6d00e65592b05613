import NMEA

// Helpers shared by the NMEA tests: building wire bytes, collecting what the framer finds, a
// seeded random generator for property tests.

/// A sentence on the wire: `$body*HH` and the line ending.
func wire(_ body: String, start: Character = "$", ending: String = "\r\n", lowercase: Bool = false)
  -> [UInt8]
{
  let sum = NMEAChecksum.compute(body.utf8)
  var hex = String(sum, radix: 16, uppercase: !lowercase)
  if hex.count < 2 { hex = "0" + hex }
  return Array((String(start) + body + "*" + hex + ending).utf8)
}

/// A sentence without checksum.
func wireWithoutChecksum(_ body: String, ending: String = "\r\n") -> [UInt8] {
  Array(("$" + body + ending).utf8)
}

/// A UBX frame with a correct Fletcher checksum.
func ubxFrame(class messageClass: UInt8, id: UInt8, payload: [UInt8]) -> [UInt8] {
  var frame: [UInt8] = [
    0xB5, 0x62, messageClass, id, UInt8(payload.count & 0xFF), UInt8(payload.count >> 8),
  ]
  frame += payload
  var a: UInt8 = 0
  var b: UInt8 = 0
  for byte in frame[2...] {
    a = a &+ byte
    b = b &+ a
  }
  return frame + [a, b]
}

/// A CASIC frame (`BA CE`, length, class, ID, payload, checksum), the checksum summed here as
/// the CASIC spec V4.2.0.3 gives it: the payload's little-endian 32-bit words added to
/// `(id << 24) + (class << 16) + length`.
func casicFrame(class messageClass: UInt8, id: UInt8, payload: [UInt8]) -> [UInt8] {
  var sum = UInt32(id) << 24 &+ UInt32(messageClass) << 16 &+ UInt32(payload.count)
  for start in stride(from: 0, to: payload.count, by: 4) {
    for (shift, byte) in payload[start..<min(start + 4, payload.count)].enumerated() {
      sum = sum &+ UInt32(byte) << (8 * UInt32(shift))
    }
  }
  let length = [UInt8(payload.count & 0xFF), UInt8(payload.count >> 8)]
  let checksum = (0..<4).map { UInt8(truncatingIfNeeded: sum >> (8 * UInt32($0))) }
  return [0xBA, 0xCE] + length + [messageClass, id] + payload + checksum
}

/// A SiRF binary frame with a correct checksum and trailer.
func sirfFrame(payload: [UInt8]) -> [UInt8] {
  let sum = payload.reduce(0) { $0 + Int($1) } & 0x7FFF
  return [0xA0, 0xA2, UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)] + payload
    + [UInt8(sum >> 8), UInt8(sum & 0xFF), 0xB0, 0xB3]
}

/// What the framer delivered, copied out of the closure so it can be compared.
enum FoundFrame: Equatable, CustomStringConvertible {
  case sentence(String, hadChecksum: Bool)
  case ubx(UInt8, UInt8, [UInt8])
  case sirf([UInt8])
  case rtcm3([UInt8])
  case casic(UInt8, UInt8, [UInt8])

  init(_ frame: Frame) {
    switch frame {
    case .sentence(let raw): self = .sentence(raw.text, hadChecksum: raw.hadChecksum)
    case .ubx(let view): self = .ubx(view.messageClass, view.messageID, Array(view.payload))
    case .sirf(let view): self = .sirf(Array(view.payload))
    case .rtcm3(let view): self = .rtcm3(Array(view.message))
    case .casic(let view): self = .casic(view.messageClass, view.messageID, Array(view.payload))
    }
  }

  var description: String {
    switch self {
    case .sentence(let text, let checked): return checked ? text : text + " (no checksum)"
    case .ubx(let c, let i, let p): return "UBX \(c)/\(i) \(p.count) bytes"
    case .sirf(let p): return "SiRF \(p.count) bytes"
    case .rtcm3(let m): return "RTCM 3 \(m.count) bytes"
    case .casic(let c, let i, let p): return "CASIC \(c)/\(i) \(p.count) bytes"
    }
  }
}

/// Feeds `chunks` in order and returns what the framer found and its statistics.
func frames(
  _ chunks: [[UInt8]], configuration: FramerConfiguration = FramerConfiguration()
) -> ([FoundFrame], FramerStatistics) {
  var framer = NMEAFramer(configuration: configuration)
  var found: [FoundFrame] = []
  for chunk in chunks { framer.feed(chunk) { found.append(FoundFrame($0)) } }
  return (found, framer.statistics)
}

func frames(_ bytes: [UInt8], configuration: FramerConfiguration = FramerConfiguration())
  -> ([FoundFrame], FramerStatistics)
{
  frames([bytes], configuration: configuration)
}

/// The sentence texts (without checksum) the framer found.
func sentenceTexts(_ found: [FoundFrame]) -> [String] {
  found.compactMap { if case .sentence(let text, _) = $0 { return text } else { return nil } }
}

/// SplitMix64: small, seeded, reproducible.
struct SeededGenerator: RandomNumberGenerator {
  var state: UInt64
  init(seed: UInt64) { state = seed }
  mutating func next() -> UInt64 {
    state &+= 0x9E37_79B9_7F4A_7C15
    var z = state
    z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
    z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
    return z ^ (z >> 31)
  }
}

/// Splits `bytes` into chunks at random places.
func randomSplit(_ bytes: [UInt8], using generator: inout SeededGenerator, maximumChunk: Int = 64)
  -> [[UInt8]]
{
  var chunks: [[UInt8]] = []
  var start = 0
  while start < bytes.count {
    let length = Int.random(in: 1...maximumChunk, using: &generator)
    let end = min(bytes.count, start + length)
    chunks.append(Array(bytes[start..<end]))
    start = end
  }
  return chunks
}

/// Decodes `bytes` whole and returns the epochs.
func epochs(_ bytes: [UInt8]) -> [Epoch] {
  var decoder = NMEADecoder()
  var result: [Epoch] = []
  decoder.decode(bytes) { if case .epoch(let epoch) = $0 { result.append(epoch) } }
  decoder.finish { if case .epoch(let epoch) = $0 { result.append(epoch) } }
  return result
}

/// Parses one sentence given as text without checksum (`$GPGGA,...`).
func parse(_ text: String) throws(NMEAParseError) -> Sentence {
  let bytes = Array(text.utf8)
  return try bytes.withUnsafeBufferPointer { buffer throws(NMEAParseError) -> Sentence in
    try Sentence(parsing: RawSentence(bytes: buffer, hadChecksum: true))
  }
}

/// The impossible values the decoder counts in one sentence (`text` without checksum).
func impossibleValues(_ text: String) -> ImpossibleValueStatistics {
  var decoder = NMEADecoder()
  decoder.decode(wire(String(text.dropFirst()))) { _ in }
  decoder.finish { _ in }
  return decoder.statistics.impossibleValues
}
