import NMEA
import Testing

/// An RTCM 3 message of `count` bytes counting up from `seed`.
private func message(_ count: Int, seed: UInt8 = 0) -> [UInt8] {
  (0..<count).map { UInt8(truncatingIfNeeded: Int(seed) + $0) }
}

/// RTCM 3 frames in the framer: preamble, reserved bits, 10-bit length, CRC-24Q.
@Suite("Framer: RTCM 3")
struct RTCM3FramerTests {
  static let gga = "GPGGA,123519,4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,"

  @Test("CRC-24Q of a known message: gpsd's crc24q.c's check value")
  func crcCheckValue() {
    // The CRC-24Q of "123456789" is 0xCDE703 (the catalogue value of CRC-24/LTE-A, the
    // same polynomial and zero start).
    #expect(RTCM3.crc24q(Array("123456789".utf8)) == 0xCDE703)
    // A frame built around a message ends with the CRC of everything before it.
    let frame = RTCM3.frame(message: message(19))
    let crc = RTCM3.crc24q(frame[0..<22])
    #expect(Array(frame[22...]) == [UInt8(crc >> 16), UInt8(crc >> 8 & 0xFF), UInt8(crc & 0xFF)])
  }

  @Test("valid frames, from empty to 1023 bytes, between sentences and UBX")
  func validFrames() {
    let messages = [message(19), message(0), message(1023, seed: 7), message(200, seed: 3)]
    let ubx = ubxFrame(class: 0x01, id: 0x07, payload: [1, 2, 3])
    let bytes =
      messages.map { RTCM3.frame(message: $0) }.joined() + wire(Self.gga) + ubx
      + RTCM3.frame(message: messages[0])
    let (found, statistics) = frames(bytes)
    #expect(
      found
        == messages.map { .rtcm3($0) } + [
          .sentence("$" + Self.gga, hadChecksum: true), .ubx(0x01, 0x07, [1, 2, 3]),
          .rtcm3(messages[0]),
        ])
    #expect(statistics.rtcm3Frames == 5 && statistics.ubxFrames == 1 && statistics.sentences == 1)
    #expect(statistics.garbageBytes == 0 && statistics.badBinaryFrames == 0)
    #expect(statistics.rejectedSentences == 0)
  }

  @Test("the message number is the message's first 12 bits")
  func messageNumber() {
    var framer = NMEAFramer()
    var numbers: [Int?] = []
    framer.feed(RTCM3.frame(message: [0x3E, 0xD0, 0x00]) + RTCM3.frame(message: [])) { frame in
      if case .rtcm3(let view) = frame { numbers.append(view.messageNumber) }
    }
    #expect(numbers == [1005, nil])
  }

  @Test("a bad CRC is a bad binary frame; the frames around it are found")
  func badCRC() {
    let good1 = RTCM3.frame(message: message(40, seed: 1))
    let good2 = RTCM3.frame(message: message(60, seed: 3))
    for index in 3..<46 {
      var bad = RTCM3.frame(message: message(40, seed: 2))
      bad[index] ^= 0x10
      let (found, statistics) = frames(good1 + bad + good2)
      #expect(found == [.rtcm3(message(40, seed: 1)), .rtcm3(message(60, seed: 3))], "\(index)")
      #expect(statistics.rtcm3Frames == 2 && statistics.badBinaryFrames == 1, "\(index)")
    }
  }

  @Test("a header with a reserved bit set is no frame: garbage, and what follows is found")
  func reservedBits() {
    let good = RTCM3.frame(message: message(30, seed: 9))
    for bit in 2..<8 {
      var flagged = RTCM3.frame(message: message(5, seed: 0x40))
      flagged[1] |= 1 << bit
      let (found, statistics) = frames(flagged + good)
      #expect(found == [.rtcm3(message(30, seed: 9))], "bit \(bit)")
      #expect(statistics.rtcm3Frames == 1 && statistics.badBinaryFrames == 0, "bit \(bit)")
      #expect(statistics.garbageBytes > 0, "bit \(bit)")
    }
    // The smallest case, counted exactly: the preamble and each byte after it are garbage.
    let (found, statistics) = frames([0xD3, 0x40, 0x05, 1, 2, 3] + good)
    #expect(found == [.rtcm3(message(30, seed: 9))])
    #expect(statistics.garbageBytes == 6)
  }

  @Test("a truncated frame is held, never delivered; one cut off by frames is rescanned")
  func truncated() {
    let whole = RTCM3.frame(message: message(100, seed: 4))
    var framer = NMEAFramer()
    framer.feed(whole.prefix(50)) { _ in Issue.record("a frame delivered") }
    #expect(framer.bytesInProgress == 50)
    framer.reset()
    #expect(framer.bytesInProgress == 0 && framer.statistics.garbageBytes == 50)
    // Its declared length swallows the next frames' start; the CRC then fails and the bytes
    // are scanned again, so only what the cut-off frame covered is lost.
    let good = RTCM3.frame(message: message(30, seed: 9))
    let (found, statistics) = frames(Array(whole.prefix(50)) + good + good)
    #expect(found == [.rtcm3(message(30, seed: 9)), .rtcm3(message(30, seed: 9))])
    #expect(statistics.badBinaryFrames == 1 && statistics.rtcm3Frames == 2)
  }

  @Test("a frame still unfinished at the end of the input is counted and what it swallowed found")
  func unfinishedAtTheEnd() {
    // A header announcing 1 000 bytes, then a sentence and a frame it would swallow.
    let sentence = wire("GPZDA,201530.00,04,07,2002,00,00")
    let good = RTCM3.frame(message: message(30, seed: 9))
    var framer = NMEAFramer()
    var found: [String] = []
    let input = [0xD3, 0x03, 0xE8] + sentence + good
    framer.feed(input) { _ in Issue.record("a frame delivered before the end") }
    framer.finish { frame in
      switch frame {
      case .sentence(let raw): found.append(String(decoding: raw.bytes, as: UTF8.self))
      case .rtcm3(let view): found.append("RTCM 3 \(view.message.count)")
      default: found.append("other")
      }
    }
    #expect(found == ["$GPZDA,201530.00,04,07,2002,00,00", "RTCM 3 30"])
    #expect(framer.statistics.unfinishedBinaryFrames == 1)
    #expect(framer.bytesInProgress == 0)
  }

  @Test("garbage before a frame is counted, byte by byte")
  func garbageBefore() {
    let garbage: [UInt8] = [0x00, 0xFF, 0xD3, 0xD3, 0x41, 0xB5, 0x00, 0xA0, 0x01, 0x0A]
    let good = RTCM3.frame(message: message(12, seed: 0x50))
    let (found, statistics) = frames(garbage + good)
    #expect(found == [.rtcm3(message(12, seed: 0x50))])
    #expect(statistics.garbageBytes == garbage.count)
    #expect(statistics.badBinaryFrames == 0 && statistics.rtcm3Frames == 1)
  }

  @Test("a frame longer than the configured limit is refused")
  func overLimit() {
    let configuration = FramerConfiguration(maximumBinaryFrameLength: 100)
    let (found, statistics) = frames(
      RTCM3.frame(message: message(95, seed: 0x41)) + RTCM3.frame(message: message(94)),
      configuration: configuration)
    #expect(found == [.rtcm3(message(94))])
    #expect(statistics.badBinaryFrames == 1 && statistics.rtcm3Frames == 1)
  }

  @Test("split across two reads at every byte, or fed a byte at a time: the same frames")
  func everySplit() {
    let bytes =
      wire(Self.gga) + RTCM3.frame(message: message(25, seed: 0xD3))
      + ubxFrame(class: 0x01, id: 0x07, payload: [0xD3, 0x00, 0x01])
      + RTCM3.frame(message: []) + RTCM3.frame(message: message(3, seed: 0xB5)) + wire(Self.gga)
    let (whole, wholeStatistics) = frames(bytes)
    #expect(wholeStatistics.rtcm3Frames == 3 && wholeStatistics.sentences == 2)
    #expect(wholeStatistics.garbageBytes == 0 && wholeStatistics.badBinaryFrames == 0)
    for split in 0...bytes.count {
      let (found, statistics) = frames([Array(bytes[..<split]), Array(bytes[split...])])
      #expect(found == whole, "split at \(split)")
      #expect(statistics == wholeStatistics, "split at \(split)")
    }
    let (bytewise, statistics) = frames(bytes.map { [$0] })
    #expect(bytewise == whole && statistics == wholeStatistics)
  }

  @Test("a frame goes on as it came; the start of one is held until dropped")
  func frameBytes() {
    let frame = RTCM3.frame(message: message(33, seed: 5))
    var framer = NMEAFramer()
    var out: [UInt8] = []
    framer.feed(frame + frame.prefix(10)) { out += $0.bytes }
    #expect(out == frame)
    #expect(framer.bytesInProgress == 10)
  }

  @Test("the framer holds at most one frame's worth of an endless false header")
  func bounded() {
    var framer = NMEAFramer(
      configuration: FramerConfiguration(maximumBinaryFrameLength: RTCM3.maximumFrameLength))
    for round in 0..<600 {
      framer.feed([0xD3, 0x03, 0xFF, UInt8(truncatingIfNeeded: round)]) { _ in
        Issue.record("a frame delivered")
      }
      #expect(framer.bytesInProgress <= RTCM3.maximumFrameLength)
    }
  }
}
