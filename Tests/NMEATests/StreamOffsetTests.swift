import NMEA
import Testing

/// The stream offset of each sentence's start character and of each epoch's first byte: what
/// the time service dates an epoch by (docs/time.md, "The reader").
@Suite("Stream offsets")
struct StreamOffsetTests {
  static let gga = "GPGGA,123519,4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,"
  static let rmc = "GPRMC,123519,A,4807.038,N,01131.000,E,022.4,084.4,230394,003.1,W"

  /// The accepted sentences' texts and offsets, feeding `chunks` in order.
  static func offsets(_ chunks: [[UInt8]]) -> ([String], [UInt64], NMEAFramer) {
    var framer = NMEAFramer()
    var texts: [String] = []
    var offsets: [UInt64] = []
    for chunk in chunks {
      framer.feed(chunk) { frame in
        if case .sentence(let raw) = frame {
          texts.append(raw.text)
          offsets.append(raw.offset)
        }
      }
    }
    return (texts, offsets, framer)
  }

  @Test(
    "each sentence carries the offset of its $ through noise, binary frames, rejected sentences and false sync bytes, however the stream is split"
  )
  func sentenceOffsets() {
    var stream: [UInt8] = []
    var expected: [(String, UInt64)] = []
    func add(_ bytes: [UInt8], accepted text: String? = nil) {
      if let text { expected.append((text, UInt64(stream.count))) }
      stream += bytes
    }
    add([0x00, 0xFF, 0x13, 0x37])  // noise
    add(wire(Self.gga), accepted: "$" + Self.gga)
    add(ubxFrame(class: 0x05, id: 0x01, payload: [0x06, 0x04]))
    var bad = wire(Self.rmc)
    bad[bad.count - 3] ^= 0x01  // checksum off: rejected
    add(bad)
    add(Array("$GPGGA,123".utf8))  // cut short by the next $
    add(wire(Self.rmc), accepted: "$" + Self.rmc)
    add(sirfFrame(payload: [0x02, 0x00, 0x01]))
    // A false UBX sync whose "header" is the start of a sentence: the framer rescans the
    // bytes it took for a frame and finds the sentence behind it.
    add([0xB5, 0x62])
    add(wire(Self.gga), accepted: "$" + Self.gga)
    add([0xB5])  // a lone sync byte before a sentence
    add(wire(Self.rmc, start: "!"), accepted: "!" + Self.rmc)

    let whole = Self.offsets([stream])
    #expect(whole.0 == expected.map(\.0))
    #expect(whole.1 == expected.map(\.1))
    #expect(whole.2.streamOffset == UInt64(stream.count))

    var generator = SeededGenerator(seed: 0x0FF5E7)
    for round in 0..<200 {
      let chunks = randomSplit(stream, using: &generator, maximumChunk: round % 2 == 0 ? 5 : 40)
      let split = Self.offsets(chunks)
      #expect(split.0 == whole.0, "round \(round)")
      #expect(split.1 == whole.1, "round \(round): \(chunks.map(\.count))")
    }
    // Byte by byte: every sentence crosses a chunk boundary, every $ ends a chunk.
    #expect(Self.offsets(stream.map { [$0] }).1 == whole.1)
  }

  @Test("offsets count every byte fed, across reset()")
  func offsetsAcrossReset() {
    var framer = NMEAFramer()
    let first = Array(wire(Self.gga).prefix(20))  // a sentence in progress, dropped
    framer.feed(first) { _ in }
    framer.reset()
    var offsets: [UInt64] = []
    framer.feed(wire(Self.rmc)) { if case .sentence(let raw) = $0 { offsets.append(raw.offset) } }
    #expect(offsets == [UInt64(first.count)])
  }

  /// Three epochs of GGA, GSA, RMC at consecutive seconds, with noise and a rejected sentence
  /// in front of the second, and a TXT (no part of any epoch) in front of the third.
  static func cycles() -> (bytes: [UInt8], starts: [UInt64]) {
    var bytes: [UInt8] = []
    var starts: [UInt64] = []
    for second in 0..<4 {
      let time = "12351\(second)"
      if second == 1 {
        bytes += [0x00, 0x7F, 0x41]
        var bad = wire("GPGGA,\(time),4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,")
        bad[5] = 0x30  // GPGG0: checksum off
        bytes += bad
      }
      if second == 2 { bytes += wire("GPTXT,01,01,02,hello") }
      starts.append(UInt64(bytes.count))
      bytes += wire("GPGGA,\(time),4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,")
      bytes += wire("GPGSA,A,3,04,05,09,12,,,,,,,,,2.5,1.3,2.1")
      bytes += wire("GPRMC,\(time),A,4807.038,N,01131.000,E,022.4,084.4,230394,003.1,W")
    }
    return (bytes, starts)
  }

  @Test("an epoch keeps the offset of the $ of its first sentence, however the stream is split")
  func epochFirstByte() {
    let (bytes, starts) = Self.cycles()
    let whole = epochs(bytes)
    #expect(whole.map(\.fix.time?.second) == [10, 11, 12, 13])
    #expect(whole.map(\.firstByteOffset) == starts.map { Optional($0) })
    var generator = SeededGenerator(seed: 0xE90C)
    for round in 0..<50 {
      var decoder = NMEADecoder()
      var found: [Epoch] = []
      for chunk in randomSplit(bytes, using: &generator, maximumChunk: 1 + round) {
        decoder.decode(chunk) { if case .epoch(let epoch) = $0 { found.append(epoch) } }
      }
      decoder.finish { if case .epoch(let epoch) = $0 { found.append(epoch) } }
      #expect(found == whole, "round \(round)")
    }
  }

  @Test("an epoch opened by an untimed sentence starts at that sentence")
  func epochOpenedByUntimedSentence() {
    // A receiver that writes GSA before GGA: the GSA opens the epoch (first epoch of the
    // stream, nothing in progress before it).
    let gsa = wire("GPGSA,A,3,04,05,09,12,,,,,,,,,2.5,1.3,2.1")
    let bytes = Array("garbage".utf8) + gsa + wire(Self.gga) + wire(Self.rmc)
    #expect(epochs(bytes).map(\.firstByteOffset) == [7])
  }

  @Test("sentences given to a fix builder directly leave the offset unknown")
  func builderAlone() throws {
    var builder = FixBuilder()
    var found: [Epoch] = []
    for text in [
      "$" + Self.gga, "$" + Self.rmc,
      "$GPGGA,123520,4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,",
    ] {
      builder.add(try parse(text)) { found.append($0) }
    }
    #expect(found.count == 1)
    #expect(found.first?.firstByteOffset == nil)
  }
}
