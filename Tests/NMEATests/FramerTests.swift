import NMEA
import Testing

@Suite("Framer")
struct FramerTests {
  static let gga = "GPGGA,123519,4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,"
  static let rmc = "GPRMC,123519,A,4807.038,N,01131.000,E,022.4,084.4,230394,003.1,W"
  static let aivdm = "AIVDM,1,1,,A,13aEOK?P00PD2wVMdLDRhgvL289?,0"

  // MARK: Sentences

  @Test("$ and ! sentences are delivered without checksum and line ending")
  func dollarAndBang() {
    let (found, statistics) = frames(wire(Self.gga) + wire(Self.aivdm, start: "!"))
    #expect(
      found == [
        .sentence("$" + Self.gga, hadChecksum: true),
        .sentence("!" + Self.aivdm, hadChecksum: true),
      ])
    #expect(statistics.sentences == 2)
    #expect(statistics.rejectedSentences == 0 && statistics.garbageBytes == 0)
  }

  @Test("listening for a receiver counts only sentences with a valid checksum")
  func holdsChecksummedSentences() {
    let one = wire(Self.gga)
    let two = one + wire(Self.rmc)
    #expect(!NMEAFramer.holdsChecksummedSentences(one))
    #expect(NMEAFramer.holdsChecksummedSentences(two))
    #expect(NMEAFramer.holdsChecksummedSentences(one, atLeast: 1))
    // Without a checksum, or with a wrong one, a sentence proves nothing about the rate.
    let bare = Array(("$" + Self.gga + "\r\n$" + Self.rmc + "\r\n").utf8)
    #expect(!NMEAFramer.holdsChecksummedSentences(bare))
    var corrupted = two
    corrupted[10] ^= 0x01
    #expect(!NMEAFramer.holdsChecksummedSentences(corrupted))
    #expect(!NMEAFramer.holdsChecksummedSentences([0xF8, 0x00, 0x7E, 0x24, 0xE0] + one))
  }

  @Test("listening for a receiver that sends only UBX counts its frames, checksums checked")
  func holdsUBXFrames() {
    let frame = ubxFrame(class: 0x01, id: 0x61, payload: [0x10, 0xE6, 0xB9, 0x09])
    #expect(NMEAFramer.holdsChecksummedFrames(frame + frame))
    #expect(!NMEAFramer.holdsChecksummedFrames(frame))
    #expect(!NMEAFramer.holdsChecksummedSentences(frame + frame))
    // A sentence and a frame together are two.
    #expect(NMEAFramer.holdsChecksummedFrames(wire(Self.gga) + frame))
    var corrupted = frame + frame
    corrupted[7] ^= 0x01
    #expect(!NMEAFramer.holdsChecksummedFrames(corrupted))
    let bare = Array(("$" + Self.gga + "\r\n$" + Self.rmc + "\r\n").utf8)
    #expect(!NMEAFramer.holdsChecksummedFrames(bare))
  }

  @Test("every printable byte but $ ! * is sentence text, at every alignment and in any split")
  func printableText() {
    // The sentence loop looks at eight bytes at a time and at rare punctuation byte by byte;
    // either way the text and its checksum come out the same.
    let printable = (0x20...0x7E).filter { $0 != 0x24 && $0 != 0x21 && $0 != 0x2A }
    let text = String(decoding: printable.map { UInt8($0) }, as: UTF8.self)
    var generator = SeededGenerator(seed: 0x7E87)
    for shift in 0..<8 {
      let body = "GPTXT,01,01,02," + String(repeating: "x", count: shift) + text
      var bad = wire(body)
      bad[bad.count - 3] ^= 0x01  // one checksum digit off
      let bytes = wire(body) + bad + wire(Self.rmc)
      let configuration = FramerConfiguration(maximumSentenceLength: 200)
      let (found, statistics) = frames(bytes, configuration: configuration)
      #expect(sentenceTexts(found) == ["$" + body, "$" + Self.rmc], "shift \(shift)")
      #expect(statistics.badChecksum == 1)
      let chunks = randomSplit(bytes, using: &generator, maximumChunk: 17)
      #expect(frames(chunks, configuration: configuration).0 == found)
    }
  }

  @Test("CR LF, a bare LF and several CRs before the LF all end a sentence")
  func lineEndings() {
    let bytes =
      wire(Self.gga, ending: "\r\n") + wire(Self.rmc, ending: "\n")
      + wire(Self.gga, ending: "\r\r\n")
    let (found, statistics) = frames(bytes)
    #expect(sentenceTexts(found) == ["$" + Self.gga, "$" + Self.rmc, "$" + Self.gga])
    #expect(statistics.sentences == 3)
  }

  @Test("a CR inside a sentence or a bare CR line end makes it malformed")
  func strayCarriageReturn() {
    let broken = Array("$GPGGA,1\r23*00\n".utf8)
    let (found, statistics) = frames(broken + wire(Self.rmc))
    #expect(sentenceTexts(found) == ["$" + Self.rmc])
    #expect(statistics.malformed == 1)
  }

  @Test("checksums in upper or lower case are accepted; a wrong one is counted")
  func checksumCase() {
    var bad = wire(Self.rmc)
    bad[bad.count - 3] = bad[bad.count - 3] == 0x30 ? 0x31 : 0x30  // change the last hex digit
    let bytes = wire(Self.gga, lowercase: true) + wire(Self.gga) + bad + wire(Self.rmc)
    let (found, statistics) = frames(bytes)
    #expect(sentenceTexts(found) == ["$" + Self.gga, "$" + Self.gga, "$" + Self.rmc])
    #expect(statistics.badChecksum == 1)
    #expect(statistics.sentences == 3)
  }

  @Test(
    "strict mode rejects a sentence without *hh, lenient mode accepts it and still checks others")
  func checksumPolicy() {
    var bad = wire(Self.gga)
    bad[bad.count - 4] ^= 0x01  // a wrong checksum digit
    let bytes = wireWithoutChecksum(Self.rmc) + bad + wire(Self.gga)

    let (strict, strictStatistics) = frames(bytes)
    #expect(sentenceTexts(strict) == ["$" + Self.gga])
    #expect(strictStatistics.missingChecksum == 1 && strictStatistics.badChecksum == 1)

    let lenientConfiguration = FramerConfiguration(checksumPolicy: .lenient)
    let (lenient, lenientStatistics) = frames(bytes, configuration: lenientConfiguration)
    #expect(
      lenient == [
        .sentence("$" + Self.rmc, hadChecksum: false), .sentence("$" + Self.gga, hadChecksum: true),
      ])
    #expect(lenientStatistics.missingChecksum == 0 && lenientStatistics.badChecksum == 1)
  }

  @Test(
    "malformed sentences are counted and the next one is intact",
    arguments: [
      "$GPGGA,1,2*4\r\n",  // one hex digit
      "$GPGGA,1,2*4G\r\n",  // not hex
      "$GPGGA,1,2*41X\r\n",  // bytes after the checksum
      "$GPGGA,1*2*00\r\n",  // two stars, checksum not last
      "$*00\r\n",  // no address
      "$GPGGA,1,2\u{01}3*00\r\n",  // a control byte
    ])
  func malformed(_ text: String) {
    let (found, statistics) = frames(Array(text.utf8) + wire(Self.rmc))
    #expect(sentenceTexts(found) == ["$" + Self.rmc])
    #expect(statistics.malformed == 1)
    #expect(statistics.sentences == 1)
  }

  @Test("a sentence cut short by a new start character is malformed; the new one is kept")
  func cutShort() {
    let bytes = Array("$GPGGA,123519,48".utf8) + wire(Self.rmc)
    let (found, statistics) = frames(bytes)
    #expect(sentenceTexts(found) == ["$" + Self.rmc])
    #expect(statistics.malformed == 1)
  }

  // MARK: Length limit

  static func sentence(length: Int) -> [UInt8] {
    // `$` + body + `*hh` is `length` bytes.
    let body = "GPTXT," + String(repeating: "A", count: length - 4 - 6)
    let bytes = wire(body)
    precondition(bytes.count == length + 2)
    return bytes
  }

  @Test("the default limit is 128 bytes: 128 pass, 129 are rejected and counted")
  func defaultLengthLimit() {
    let (found, statistics) = frames(
      Self.sentence(length: 128) + Self.sentence(length: 129) + wire(Self.gga))
    #expect(found.count == 2)
    #expect(sentenceTexts(found).last == "$" + Self.gga)
    #expect(statistics.tooLong == 1)
    #expect(statistics.sentences == 2)
  }

  @Test("the limit is configurable; with a bare LF the limit is the same")
  func configuredLengthLimit() {
    let long = Self.sentence(length: 203)
    let (rejected, rejectedStatistics) = frames(long)
    #expect(rejected.isEmpty && rejectedStatistics.tooLong == 1)
    let configuration = FramerConfiguration(maximumSentenceLength: 203)
    let (accepted, acceptedStatistics) = frames(
      long + Self.sentence(length: 204), configuration: configuration)
    #expect(accepted.count == 1 && acceptedStatistics.tooLong == 1)
    var bareLF = Self.sentence(length: 203)
    bareLF.remove(at: bareLF.count - 2)
    #expect(frames(bareLF, configuration: configuration).0.count == 1)
  }

  @Test("an endless sentence is rejected once, and the framer recovers at the next start")
  func endlessSentence() {
    var framer = NMEAFramer()
    var found: [FoundFrame] = []
    framer.feed(Array("$GPTXT,".utf8)) { found.append(FoundFrame($0)) }
    let filler = [UInt8](repeating: 0x41, count: 4096)
    for _ in 0..<256 { framer.feed(filler) { found.append(FoundFrame($0)) } }  // 1 MiB, no LF
    framer.feed(wire(Self.gga)) { found.append(FoundFrame($0)) }
    #expect(sentenceTexts(found) == ["$" + Self.gga])
    #expect(framer.statistics.tooLong == 1)
    #expect(framer.statistics.garbageBytes == 0)
  }

  // MARK: Binary frames

  @Test("a UBX frame is reported with class, id and payload, and the NMEA around it is kept")
  func ubx() {
    // The payload holds `$`, LF and CR: it must not be read as text.
    let payload: [UInt8] = [0x24, 0x47, 0x50, 0x0A, 0x0D, 0x00, 0xFF, 0xB5, 0x62]
    let bytes = wire(Self.gga) + ubxFrame(class: 0x01, id: 0x07, payload: payload) + wire(Self.rmc)
    let (found, statistics) = frames(bytes)
    #expect(
      found == [
        .sentence("$" + Self.gga, hadChecksum: true), .ubx(0x01, 0x07, payload),
        .sentence("$" + Self.rmc, hadChecksum: true),
      ])
    #expect(
      statistics.ubxFrames == 1 && statistics.garbageBytes == 0 && statistics.badBinaryFrames == 0)
  }

  @Test("an empty UBX payload (a poll or an ACK-less command) is a frame")
  func ubxEmptyPayload() {
    let (found, statistics) = frames(ubxFrame(class: 0x0A, id: 0x04, payload: []) + wire(Self.gga))
    #expect(found.first == .ubx(0x0A, 0x04, []))
    #expect(statistics.ubxFrames == 1 && statistics.sentences == 1)
  }

  @Test("a SiRF frame (A0 A2 … B0 B3) is reported, and the NMEA around it is kept")
  func sirf() {
    let payload: [UInt8] = [0x29, 0x24, 0x0A, 0xB0, 0xB3, 0x00, 0x41]
    let bytes = wire(Self.gga) + sirfFrame(payload: payload) + wire(Self.rmc)
    let (found, statistics) = frames(bytes)
    #expect(
      found == [
        .sentence("$" + Self.gga, hadChecksum: true), .sirf(payload),
        .sentence("$" + Self.rmc, hadChecksum: true),
      ])
    #expect(statistics.sirfFrames == 1 && statistics.garbageBytes == 0)
  }

  @Test("B5 62 with an implausible length does not swallow the sentence after it")
  func falseUBXSyncLongLength() {
    let bytes: [UInt8] = [0xB5, 0x62, 0x01, 0x07, 0xFF, 0xFF] + wire(Self.gga)
    let (found, statistics) = frames(bytes)
    #expect(sentenceTexts(found) == ["$" + Self.gga])
    #expect(statistics.badBinaryFrames == 1)
    #expect(statistics.garbageBytes == 6)
  }

  @Test("B5 62 with a plausible length but a bad checksum gives back the sentences it covered")
  func falseUBXSyncBadChecksum() {
    // The claimed 80-byte payload covers the GGA and part of the RMC.
    let bytes: [UInt8] =
      [0xB5, 0x62, 0x01, 0x07, 80, 0] + wire(Self.gga) + wire(Self.rmc) + wire(Self.gga)
    let (found, statistics) = frames(bytes)
    #expect(sentenceTexts(found) == ["$" + Self.gga, "$" + Self.rmc, "$" + Self.gga])
    #expect(statistics.badBinaryFrames == 1)
    #expect(statistics.garbageBytes == 6)
  }

  @Test("A0 A2 with a bad trailer gives back the sentences it covered")
  func falseSiRFSync() {
    let bytes: [UInt8] = [0xA0, 0xA2, 0x00, 0x20] + wire(Self.gga) + wire(Self.rmc)
    let (found, statistics) = frames(bytes)
    #expect(sentenceTexts(found) == ["$" + Self.gga, "$" + Self.rmc])
    #expect(statistics.badBinaryFrames == 1)
  }

  @Test("a UBX frame longer than the configured maximum is skipped as garbage")
  func binaryFrameLimit() {
    let configuration = FramerConfiguration(maximumBinaryFrameLength: 64)
    let big = ubxFrame(class: 0x02, id: 0x15, payload: [UInt8](repeating: 0x55, count: 100))
    let (found, statistics) = frames(big + wire(Self.gga), configuration: configuration)
    #expect(sentenceTexts(found) == ["$" + Self.gga])
    #expect(statistics.ubxFrames == 0 && statistics.badBinaryFrames == 1)
  }

  @Test("garbage and lone sync bytes are counted and skipped")
  func garbage() {
    let noise: [UInt8] = [0x00, 0xFF, 0xB5, 0x00, 0xA0, 0x13, 0x37, 0x0A, 0x0D, 0x41]
    let (found, statistics) = frames(noise + wire(Self.gga) + noise)
    #expect(sentenceTexts(found) == ["$" + Self.gga])
    #expect(statistics.garbageBytes == 2 * noise.count)
    #expect(statistics.rejectedSentences == 0)
  }

  @Test("a binary byte inside a sentence ends it, and a UBX frame starting there is still found")
  func binaryInterruptsSentence() {
    let frame = ubxFrame(class: 0x05, id: 0x01, payload: [0x06, 0x01])
    let bytes = Array("$GPGGA,123".utf8) + frame + wire(Self.rmc)
    let (found, statistics) = frames(bytes)
    #expect(
      found == [.ubx(0x05, 0x01, [0x06, 0x01]), .sentence("$" + Self.rmc, hadChecksum: true)])
    #expect(statistics.malformed == 1 && statistics.ubxFrames == 1)
  }

  // MARK: Chunking

  @Test("a start character that ends one chunk begins the sentence of the next")
  func startAtChunkEnd() {
    let bytes = wire(Self.gga)
    let (found, _) = frames([Array(bytes[..<1]), Array(bytes[1...])])
    #expect(sentenceTexts(found) == ["$" + Self.gga])
  }

  /// A stream with every kind of content: sentences of both kinds and line endings,
  /// rejected sentences of every reason, binary frames, false sync patterns, noise.
  static func mixedStream(using generator: inout SeededGenerator, pieces: Int) -> (
    bytes: [UInt8], sentences: [String]
  ) {
    var bytes: [UInt8] = []
    var sentences: [String] = []
    func emit(
      _ body: String, start: Character = "$", ending: String = "\r\n", lowercase: Bool = false
    ) {
      bytes += wire(body, start: start, ending: ending, lowercase: lowercase)
      sentences.append(String(start) + body)
    }
    for index in 0..<pieces {
      let time = String(100_000 + index)
      switch Int.random(in: 0..<14, using: &generator) {
      case 0: emit("GPGGA,\(time),4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,")
      case 1: emit("GNRMC,\(time),A,4807.038,N,01131.000,E,022.4,084.4,230394,,,A", ending: "\n")
      case 2: emit(Self.aivdm, start: "!")
      case 3:
        emit("GPGSV,3,1,12,01,40,083,46,02,17,308,41,12,07,344,39,14,22,228,45", lowercase: true)
      case 4: emit("GPTXT,01,01,02," + String(repeating: "x", count: 100), ending: "\r\r\n")
      case 5:
        var bad = wire("GPGSA,A,3,,,,,,16,18,,22,24,,,3.6,2.1,2.2")
        bad[bad.count - 3] ^= 0x01
        bytes += bad
      case 6: bytes += wireWithoutChecksum("PMTK001,604,3")
      case 7: bytes += wire("GPTXT," + String(repeating: "y", count: 140))  // too long
      case 8: bytes += Array("$GPGGA,12".utf8)  // cut short by whatever follows
      case 9:
        let count = Int.random(in: 0...120, using: &generator)
        let payload = (0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) }
        bytes += ubxFrame(class: 0x01, id: UInt8(index & 0xFF), payload: payload)
      case 10:
        let count = Int.random(in: 1...60, using: &generator)
        bytes += sirfFrame(
          payload: (0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) })
      case 11:
        bytes += [
          0xB5, 0x62, 0x01, 0x07, UInt8.random(in: 0...255, using: &generator),
          UInt8.random(in: 0...4, using: &generator),
        ]
      case 12: bytes += [0xA0, 0xA2, 0x00, UInt8.random(in: 0...255, using: &generator)]
      default:
        let count = Int.random(in: 1...40, using: &generator)
        bytes += (0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) }
      }
    }
    // Enough quiet bytes for any false frame to run out, then one last sentence.
    bytes += [UInt8](repeating: 0x20, count: 1100)
    emit("GPZDA,201530.00,04,07,2002,00,00")
    return (bytes, sentences)
  }

  @Test(
    "property: any split of the stream gives the same frames and statistics as the whole",
    arguments: 0..<8)
  func splitInvariance(seed: UInt64) {
    var generator = SeededGenerator(seed: 0x5EED_0000 + seed)
    let (bytes, sentences) = Self.mixedStream(using: &generator, pieces: 300)
    let (whole, wholeStatistics) = frames(bytes)

    // Every sentence put in is found, in order (noise may add accidental ones between).
    var remaining = sentences[...]
    for text in sentenceTexts(whole) where text == remaining.first {
      remaining = remaining.dropFirst()
    }
    #expect(remaining.isEmpty, "lost: \(remaining.prefix(3))")
    #expect(wholeStatistics.ubxFrames > 0 && wholeStatistics.sirfFrames > 0)
    #expect(wholeStatistics.badChecksum > 0 && wholeStatistics.missingChecksum > 0)
    #expect(wholeStatistics.tooLong > 0 && wholeStatistics.malformed > 0)
    #expect(wholeStatistics.badBinaryFrames > 0 && wholeStatistics.garbageBytes > 0)

    let (oneByOne, oneByOneStatistics) = frames(bytes.map { [$0] })
    #expect(oneByOne == whole)
    #expect(oneByOneStatistics == wholeStatistics)

    for _ in 0..<50 {
      let chunks = randomSplit(
        bytes, using: &generator, maximumChunk: Int.random(in: 2...300, using: &generator))
      let (split, splitStatistics) = frames(chunks)
      #expect(split == whole)
      #expect(splitStatistics == wholeStatistics)
      if split != whole || splitStatistics != wholeStatistics { break }
    }
  }

  @Test("feeding a non-contiguous sequence gives the same frames")
  func nonContiguousSequence() {
    let bytes = wire(Self.gga) + ubxFrame(class: 1, id: 2, payload: [3]) + wire(Self.rmc)
    var framer = NMEAFramer()
    var found: [FoundFrame] = []
    framer.feed(bytes.lazy.map { $0 }) { found.append(FoundFrame($0)) }
    #expect(found == frames(bytes).0)
  }

  // MARK: Reset and counters

  @Test("reset drops a sentence or frame in progress and counts it")
  func reset() {
    var framer = NMEAFramer()
    framer.feed(Array("$GPGGA,1234".utf8)) { _ in Issue.record("nothing complete yet") }
    framer.reset()
    #expect(framer.statistics.malformed == 1)
    framer.feed([0xB5, 0x62, 0x01]) { _ in }
    framer.reset()
    #expect(framer.statistics.garbageBytes == 3)
    var found: [FoundFrame] = []
    framer.feed(Array("456*00\r\n".utf8) + wire(Self.gga)) { found.append(FoundFrame($0)) }
    #expect(sentenceTexts(found) == ["$" + Self.gga])
  }

  @Test("every counter counts what it says; rejectedSentences is their sum")
  func everyCounter() {
    var badChecksum = wire(Self.gga)
    badChecksum[badChecksum.count - 3] ^= 0x01
    let bytes =
      wire(Self.gga) + wire(Self.rmc)  // 2 sentences
      + badChecksum + badChecksum + badChecksum  // 3 bad checksums
      + wireWithoutChecksum(Self.gga)  // 1 missing checksum
      + Self.sentence(length: 129) + Self.sentence(length: 300)  // 2 too long
      + Array("$GPGGA,1*4\r\n".utf8)  // 1 malformed
      + ubxFrame(class: 1, id: 1, payload: [1, 2])  // 1 UBX
      + sirfFrame(payload: [4]) + sirfFrame(payload: [5])  // 2 SiRF
      + [0xB5, 0x62, 0x01, 0x01, 0x02, 0x00, 0x01, 0x02, 0x00, 0x00]  // 1 bad binary, 10 garbage
      + [0x00, 0x01, 0x02]  // 3 garbage
    let (_, s) = frames(bytes)
    #expect(s.sentences == 2)
    #expect(s.badChecksum == 3)
    #expect(s.missingChecksum == 1)
    #expect(s.tooLong == 2)
    #expect(s.malformed == 1)
    #expect(s.ubxFrames == 1)
    #expect(s.sirfFrames == 2)
    #expect(s.badBinaryFrames == 1)
    #expect(s.garbageBytes == 13)
    #expect(s.rejectedSentences == 7)
  }

  @Test("NMEAChecksum.frame builds a sentence the framer accepts")
  func checksumFrame() {
    let bytes = NMEAChecksum.frame("PMTK161,0")
    #expect(String(decoding: bytes, as: UTF8.self) == "$PMTK161,0*28\r\n")
    #expect(sentenceTexts(frames(bytes).0) == ["$PMTK161,0"])
  }
}

/// `Frame.bytes` and `bytesInProgress`: what the raw port's writer passes on and drops.
@Suite struct FrameBytesTests {
  @Test func eachFrameGoesOnAsItCameAndWhatIsUnfinishedIsCounted() {
    let sentence = Array("$PMTK605*31\r\n".utf8)
    let ubx: [UInt8] = [0xB5, 0x62, 0x06, 0x04, 0x04, 0x00, 0x00, 0x00, 0x08, 0x00, 0x16, 0x74]
    let sirf: [UInt8] = [0xA0, 0xA2, 0x00, 0x02, 0x84, 0x00, 0x00, 0x84, 0xB0, 0xB3]
    var framer = NMEAFramer()
    var out: [UInt8] = []
    framer.feed(sentence + ubx + sirf) { out += $0.bytes }
    #expect(out == sentence + ubx + sirf)
    #expect(framer.bytesInProgress == 0)
    // A UBX header announcing 256 bytes: held, not delivered, until dropped (65 535, over
    // the configured limit, is refused at once and counted as garbage).
    framer.feed([0xB5, 0x62, 0x06, 0x04, 0x00, 0x01]) { _ in Issue.record("a frame delivered") }
    #expect(framer.bytesInProgress == 6)
    framer.reset()
    #expect(framer.bytesInProgress == 0)
    framer.feed(Array("$PMTK220,1000".utf8)) { _ in Issue.record("a sentence delivered") }
    #expect(framer.bytesInProgress == 13)
  }

  @Test(
    "a byte to look at in any of a word's eight places: the ordinary bytes before it counted once")
  func specialByteAtEveryOffset() {
    // The sentence starts at every offset of a word and its `*`, a space (flagged, yet
    // ordinary) and a new start character fall at every place within one.
    var bytes: [UInt8] = []
    var expected: [String] = []
    for pad in 0..<16 {
      let body =
        "GPTXT,01,01,02," + String(repeating: "A", count: pad) + " B"
        + String(repeating: "C", count: pad % 8)
      bytes += wire(body)
      expected.append("$" + body)
      // Cut short by a new sentence after `pad` bytes: counted as malformed, the next found.
      bytes += Array(("$GPGSV," + String(repeating: "9", count: pad)).utf8)
    }
    bytes += wire("GPGSA,A,3")
    expected.append("$GPGSA,A,3")
    let (found, statistics) = frames(bytes)
    #expect(sentenceTexts(found) == expected)
    #expect(statistics.badChecksum == 0)
    #expect(statistics.malformed == 16)
  }
}
