import Testing

@testable import NTRIP

/// A valid frame whose message is `count` bytes counting up from `seed`.
func rtcmFrame(_ count: Int, seed: UInt8 = 0) -> [UInt8] {
  RTCM3Framer.frame(message: (0..<count).map { UInt8(truncatingIfNeeded: Int(seed) + $0) })
}

@Suite("RTCM 3 framing and CRC-24Q")
struct RTCM3FramerTests {
  @Test("CRC-24Q of a known message: gpsd's crc24q.c's check value")
  func crcCheckValue() {
    // The CRC-24Q of "123456789" is 0xCDE703 (the catalogue value of CRC-24/LTE-A, the
    // same polynomial and zero start).
    #expect(RTCM3Framer.crc24q(Array("123456789".utf8)) == 0xCDE703)
  }

  @Test("frames are handed out whole, fed whole or a byte at a time")
  func wholeFrames() {
    let frames = [rtcmFrame(19), rtcmFrame(0), rtcmFrame(1023, seed: 7), rtcmFrame(200, seed: 3)]
    var framer = RTCM3Framer()
    var out: [[UInt8]] = []
    framer.append(frames.joined()) { out.append($0) }
    #expect(out == frames)
    var bytewise = RTCM3Framer()
    var out2: [[UInt8]] = []
    for byte in frames.joined() { bytewise.append([byte]) { out2.append($0) } }
    #expect(out2 == frames)
    #expect(bytewise.counts.frames == 4)
    #expect(bytewise.counts.bytesSkipped == 0)
  }

  @Test("a corrupt frame is refused and counted; the frames around it pass")
  func corruptFrame() {
    let good1 = rtcmFrame(40, seed: 1)
    var bad = rtcmFrame(40, seed: 2)
    bad[20] ^= 0x10
    let good2 = rtcmFrame(60, seed: 3)
    var framer = RTCM3Framer()
    var out: [[UInt8]] = []
    framer.append(good1 + bad + good2) { out.append($0) }
    #expect(out == [good1, good2])
    #expect(framer.counts.crcErrors == 1)
    #expect(framer.counts.bytesSkipped == bad.count)
  }

  @Test("garbage, reserved bits set and a cut-off frame before a valid one")
  func resync() {
    let good = rtcmFrame(30, seed: 9)
    let truncated = Array(rtcmFrame(100, seed: 4).prefix(50))
    let reserved: [UInt8] = [0xD3, 0x40, 0x05, 1, 2, 3]
    var framer = RTCM3Framer()
    var out: [[UInt8]] = []
    framer.append(Array("$GPGGA,garbage\r\n".utf8) + reserved + truncated + good + good) {
      out.append($0)
    }
    // The cut-off frame's declared length swallows the next frame's start; the CRC then fails
    // and the search restarts inside, so only what the cut-off frame covered is lost.
    #expect(out == [good, good])
    #expect(framer.counts.crcErrors == 1)
    #expect(framer.pendingByteCount <= RTCM3Framer.maximumFrameLength)
  }

  @Test("the buffer never holds more than one frame's worth of garbage")
  func bounded() {
    var framer = RTCM3Framer()
    var emitted = 0
    for round in 0..<600 {
      framer.append([0xD3, 0x03, 0xFF, UInt8(truncatingIfNeeded: round)]) { _ in emitted += 1 }
      #expect(framer.pendingByteCount <= RTCM3Framer.maximumFrameLength)
    }
    #expect(emitted == 0)
  }
}

@Suite("HTTP chunked decoding")
struct ChunkedDecoderTests {
  /// Body as chunks of the given sizes, with an extension on one and a trailer.
  func encode(_ body: [UInt8], sizes: [Int]) -> [UInt8] {
    var out: [UInt8] = []
    var index = 0
    for (n, size) in sizes.enumerated() {
      let take = min(size, body.count - index)
      guard take > 0 else { break }
      out += Array(String(take, radix: 16, uppercase: n % 2 == 0).utf8)
      if n == 1 { out += Array(";name=value".utf8) }
      out += [0x0D, 0x0A] + body[index..<(index + take)] + [0x0D, 0x0A]
      index += take
    }
    return out + Array("0\r\nX-Trailer: 1\r\n\r\n".utf8)
  }

  @Test("the body comes out the same for a split at every byte boundary")
  func everySplit() throws {
    let body = rtcmFrame(30, seed: 1) + rtcmFrame(5, seed: 2) + rtcmFrame(300, seed: 3)
    let encoded = encode(body, sizes: [7, 40, 1, 0x120, 1000])
    for split in 0...encoded.count {
      var decoder = ChunkedDecoder()
      var out: [UInt8] = []
      try decoder.append(encoded[0..<split]) { out += $0 }
      try decoder.append(encoded[split...]) { out += $0 }
      #expect(out == body, "split at \(split)")
      #expect(decoder.ended)
    }
  }

  @Test("fed one byte at a time, and in three pieces at every pair of boundaries")
  func bytewiseAndTriples() throws {
    let body = rtcmFrame(20, seed: 5)
    let encoded = encode(body, sizes: [3, 17, 100])
    var decoder = ChunkedDecoder()
    var out: [UInt8] = []
    for index in encoded.indices { try decoder.append(encoded[index...index]) { out += $0 } }
    #expect(out == body)
    for first in 0...encoded.count {
      for second in first...encoded.count {
        var decoder = ChunkedDecoder()
        var out: [UInt8] = []
        try decoder.append(encoded[0..<first]) { out += $0 }
        try decoder.append(encoded[first..<second]) { out += $0 }
        try decoder.append(encoded[second...]) { out += $0 }
        #expect(out == body)
      }
    }
  }

  @Test("a size line that is not hexadecimal, or a chunk without its CR LF, is an error")
  func malformed() {
    for text in ["zz\r\nabc\r\n", "3\r\nabcX\r\n", "123456789\r\n", "\r\n", "3\rX"] {
      var decoder = ChunkedDecoder()
      #expect(throws: ChunkedDecoder.Failure.malformed) {
        try decoder.append(Array(text.utf8)[...]) { _ in }
      }
    }
  }
}
