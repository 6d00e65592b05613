import NMEA
import Testing

@testable import NTRIP

/// A valid frame whose message is `count` bytes counting up from `seed`.
func rtcmFrame(_ count: Int, seed: UInt8 = 0) -> [UInt8] {
  RTCM3.frame(message: (0..<count).map { UInt8(truncatingIfNeeded: Int(seed) + $0) })
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
