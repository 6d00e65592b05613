/// What the framer found in the byte stream.
public enum Frame {
  case sentence(RawSentence)
  case ubx(UBXFrameView)
  case sirf(SiRFFrameView)
  case rtcm3(RTCM3FrameView)
  case casic(CASICFrameView)
}

/// Splits a receiver's byte stream into NMEA sentences and binary frames.
///
/// Feed it chunks of any size; the frames found are the same however the stream is split.
/// Whole sentences inside a chunk are handed out in place, without copying; only a sentence
/// cut by a chunk boundary is copied, into a buffer of fixed size. Binary UBX, SiRF, RTCM 3 and
/// CASIC frames are recognised by their framing and checksum and reported separately, so that
/// NMEA around them is never lost; anything else is garbage, counted and skipped, and the
/// framer resynchronises on the next `$`.
public struct NMEAFramer: Sendable {
  public let configuration: FramerConfiguration
  /// What has been accepted and rejected so far.
  public private(set) var statistics = FramerStatistics()
  /// Bytes fed so far: the stream offset of the next byte. ``reset()`` does not change it (the
  /// bytes were received all the same); a new framer starts at 0, as a reader's count of the
  /// bytes since its port opened does.
  public private(set) var streamOffset: UInt64 = 0

  @usableFromInline
  enum State: UInt8, Sendable {
    case hunting
    case sentence
    case discarding  // a sentence over the length limit: skip to its end
    case ubxSync  // saw B5
    case ubx  // in a UBX frame; binaryBuffer holds it
    case sirfSync  // saw A0
    case sirf
    case rtcm3Sync  // saw D3
    case rtcm3
    case casicSync  // saw BA
    case casic
  }

  @usableFromInline var state = State.hunting

  // The sentence in progress. While `partial` is empty the sentence starts inside the chunk
  // being scanned (at `startInChunk`); otherwise its bytes so far are in `partial`.
  @usableFromInline var partial: [UInt8] = []
  @usableFromInline var length = 0
  @usableFromInline var xor: UInt8 = 0
  @usableFromInline var starAt = -1
  @usableFromInline var carriageReturns = 0
  /// The stream offset of the sentence's start character.
  @usableFromInline var sentenceOffset: UInt64 = 0

  // The binary frame in progress.
  @usableFromInline var binary: [UInt8] = []
  @usableFromInline var binaryExpected = 0
  @usableFromInline var binaryHeaderParsed = false
  /// The stream offset of the binary frame's first sync byte (its bytes are rescanned from the
  /// next one when it proves not to be a frame).
  @usableFromInline var binaryOffset: UInt64 = 0

  public init(configuration: FramerConfiguration = FramerConfiguration()) {
    self.configuration = configuration
    partial.reserveCapacity(configuration.maximumSentenceLength + 8)
    binary.reserveCapacity(configuration.maximumBinaryFrameLength)
  }

  /// Feeds bytes and calls `body` for every complete frame, in stream order.
  @inlinable
  public mutating func feed<Bytes: Sequence>(
    _ bytes: Bytes, _ body: (Frame) throws -> Void
  ) rethrows where Bytes.Element == UInt8 {
    let done: Void?? = try bytes.withContiguousStorageIfAvailable { buffer in
      try feed(UnsafeRawBufferPointer(buffer), body)
    }
    if done == nil {
      let copy = Array(bytes)
      try copy.withUnsafeBytes { try feed($0, body) }
    }
  }

  /// Feeds the bytes of `chunk` and calls `body` for every complete frame, in stream order.
  public mutating func feed(_ chunk: UnsafeRawBufferPointer, _ body: (Frame) throws -> Void)
    rethrows
  {
    guard let base = chunk.baseAddress, chunk.count > 0 else { return }
    let offset = streamOffset
    // Counted first: a sentence delivered from this chunk may ask for the offset of the next.
    streamOffset += UInt64(chunk.count)
    try scan(base.assumingMemoryBound(to: UInt8.self), count: chunk.count, at: offset, body)
  }

  /// Drops a sentence or frame in progress (for example after the port was reopened), counting
  /// it as malformed, and starts hunting for the next one.
  public mutating func reset() {
    if state == .sentence || state == .discarding { statistics.malformed += 1 }
    if state != .hunting && state != .sentence && state != .discarding {
      statistics.garbageBytes += max(binary.count, 1)
    }
    state = .hunting
    partial.removeAll(keepingCapacity: true)
    binary.removeAll(keepingCapacity: true)
  }

  // MARK: - Scanning

  /// Byte classes for the sentence loop: 0 ordinary text, everything else needs a look.
  @usableFromInline
  static let byteClass: [UInt8] = {
    var table = [UInt8](repeating: 0, count: 256)
    for byte in 0..<0x20 { table[byte] = 5 }  // control: ends the sentence badly
    for byte in 0x7F...0xFF { table[byte] = 5 }  // binary: ends the sentence badly
    table[Int(ASCII.lf)] = 1
    table[Int(ASCII.star)] = 2
    table[Int(ASCII.dollar)] = 3
    table[Int(ASCII.bang)] = 3
    table[Int(ASCII.cr)] = 4
    return table
  }()

  /// Scans `n` bytes at `p`, whose first byte has stream offset `base`.
  @usableFromInline
  mutating func scan(
    _ p: UnsafePointer<UInt8>, count n: Int, at base: UInt64, _ body: (Frame) throws -> Void
  ) rethrows {
    var i = 0
    var startInChunk = 0
    // One more byte than the limit for a CR; the exact length is checked on delivery.
    let limit = configuration.maximumSentenceLength + 1
    try Self.byteClass.withUnsafeBufferPointer { classes in
      while i < n {
        switch state {
        case .hunting:
          let byte = p[i]
          if byte == ASCII.dollar || byte == ASCII.bang {
            beginSentence(at: base &+ UInt64(i))
            startInChunk = i
            i += 1
            // A start character that ends the chunk is all the next chunk's sentence has.
            if i == n { partial.append(byte) }
          } else if byte == 0xB5 {
            state = .ubxSync
            binaryOffset = base &+ UInt64(i)
            i += 1
          } else if byte == RTCM3.preamble {
            state = .rtcm3Sync
            binaryOffset = base &+ UInt64(i)
            i += 1
          } else if byte == 0xA0 {
            state = .sirfSync
            binaryOffset = base &+ UInt64(i)
            i += 1
          } else if byte == CASICFraming.sync.0 {
            state = .casicSync
            binaryOffset = base &+ UInt64(i)
            i += 1
          } else {
            statistics.garbageBytes += 1
            i += 1
          }

        case .sentence:
          // The hot loop: whole sentences inside the chunk are scanned once, in place.
          var sum = xor
          var len = length
          var end = false
          // Eight ordinary bytes at a time while they last (up to the `*`, usually), then one
          // at a time through the cases below.
          var position = i
          // As far as both the chunk and the length limit allow.
          let wordsEnd = i &+ min(n &- i, limit &- len)
          var words: UInt64 = 0
          while position &+ 8 <= wordsEnd {
            let word = UnsafeRawPointer(p + position).loadUnaligned(as: UInt64.self)
            let special = Self.specialBytes(word)
            if special != 0 {
              // The bytes before the first one flagged are ordinary: take them too.
              let ordinary = Self.ordinaryBytes(before: special)
              words ^= word & ((1 as UInt64) &<< UInt64(ordinary &* 8) &- 1)
              position &+= ordinary
              break
            }
            words ^= word
            position &+= 8
          }
          if position != i {
            sum ^= Self.foldXOR(words)
            len &+= position &- i
            i = position
          }
          while i < n {
            let byte = p[i]
            let kind = classes[Int(byte)]
            if kind == 0 {
              sum ^= byte
              len &+= 1  // both bounded: by the limit and by the chunk
              i &+= 1
              if len > limit { break }
              continue
            }
            if kind == 1 {  // LF
              end = true
              i += 1
              break
            } else if kind == 2 {  // '*'
              if starAt < 0 { starAt = len }
              sum ^= byte
              len &+= 1
              i &+= 1
              // Usually two checksum digits and the line end follow, in this chunk and within
              // the limit: take them in one step, exactly as the cases here would one by one.
              if i &+ 3 <= n, len &+ 3 <= limit, classes[Int(p[i])] == 0,
                classes[Int(p[i &+ 1])] == 0
              {
                let third = p[i &+ 2]
                if third == ASCII.lf {
                  sum ^= p[i] ^ p[i &+ 1]
                  len &+= 2
                  i &+= 3
                  end = true
                  break
                } else if third == ASCII.cr, i &+ 4 <= n, p[i &+ 3] == ASCII.lf {
                  sum ^= p[i] ^ p[i &+ 1]
                  carriageReturns += 1
                  len &+= 3
                  i &+= 4
                  end = true
                  break
                }
              }
            } else if kind == 4 {  // CR: allowed only right before LF, checked at the end
              carriageReturns += 1
              len += 1
              i += 1
            } else if kind == 3 {  // a new start character: this sentence was cut short
              statistics.malformed += 1
              beginSentence(at: base &+ UInt64(i))
              startInChunk = i
              sum = 0
              len = 1  // the start character
              i += 1
            } else {  // control or binary byte: the sentence is broken; rescan this byte
              statistics.malformed += 1
              partial.removeAll(keepingCapacity: true)
              state = .hunting
              break
            }
            if len > limit { break }
          }
          xor = sum
          length = len
          if state != .sentence { break }
          if end {
            try finishSentence(p, startInChunk: startInChunk, endInChunk: i - 1, body)
          } else if len > limit {
            statistics.tooLong += 1
            partial.removeAll(keepingCapacity: true)
            state = .discarding
          } else if i == n {
            // The chunk ends inside the sentence: keep what we have.
            partial.append(
              contentsOf: UnsafeBufferPointer(start: p + startInChunk, count: i - startInChunk))
          }

        case .discarding:
          let byte = p[i]
          let kind = classes[Int(byte)]
          if kind == 1 {
            state = .hunting
            i += 1
          } else if kind == 3 {
            beginSentence(at: base &+ UInt64(i))
            startInChunk = i
            i += 1
            if i == n { partial.append(byte) }
          } else if kind == 5 {
            state = .hunting  // rescan the byte: it may start a binary frame
          } else {
            i += 1
          }

        case .ubxSync:
          if p[i] == 0x62 {
            beginBinaryFrame(0xB5, 0x62, headerLength: 6)
            state = .ubx
            i += 1
          } else {
            statistics.garbageBytes += 1  // the B5; rescan this byte
            state = .hunting
          }

        case .sirfSync:
          if p[i] == 0xA2 {
            beginBinaryFrame(0xA0, 0xA2, headerLength: 4)
            state = .sirf
            i += 1
          } else {
            statistics.garbageBytes += 1
            state = .hunting
          }

        case .casicSync:
          if p[i] == CASICFraming.sync.1 {
            beginBinaryFrame(CASICFraming.sync.0, p[i], headerLength: 6)
            state = .casic
            i += 1
          } else {
            statistics.garbageBytes += 1
            state = .hunting
          }

        case .rtcm3Sync:
          // The six bits after the preamble are reserved and zero in RTCM 3.
          if p[i] & 0xFC == 0 {
            beginBinaryFrame(RTCM3.preamble, p[i], headerLength: 3)
            state = .rtcm3
            i += 1
          } else {
            statistics.garbageBytes += 1
            state = .hunting
          }

        case .ubx, .sirf, .rtcm3, .casic:
          let take = min(binaryExpected - binary.count, n - i)
          binary.append(contentsOf: UnsafeBufferPointer(start: p + i, count: take))
          i += take
          guard binary.count == binaryExpected else { break }
          if !binaryHeaderParsed {
            // Header complete: its length field says how much more belongs to the frame.
            binaryHeaderParsed = true
            if state == .ubx {
              binaryExpected = 6 + (Int(binary[4]) | Int(binary[5]) << 8) + 2
            } else if state == .rtcm3 {
              binaryExpected = 3 + (Int(binary[1] & 0x03) << 8 | Int(binary[2])) + 3
            } else if state == .casic {
              binaryExpected = casicFrameLength()
            } else {
              binaryExpected = 4 + (Int(binary[2]) << 8 | Int(binary[3])) + 4
            }
            if binaryExpected > configuration.maximumBinaryFrameLength {
              try rejectBinaryFrame(body)
              startInChunk = i  // a sentence found in the rescan continues here
            }
          } else {
            try finishBinaryFrame(body)
            startInChunk = i
          }
        }
      }
      // A start character that was the chunk's last byte (seen while hunting or discarding)
      // begins a sentence whose bytes the sentence state never got to keep: keep them now.
      if state == .sentence && partial.isEmpty {
        partial.append(
          contentsOf: UnsafeBufferPointer(start: p + startInChunk, count: n - startInChunk))
      }
    }
  }

  @usableFromInline
  mutating func beginBinaryFrame(_ first: UInt8, _ second: UInt8, headerLength: Int) {
    binary.removeAll(keepingCapacity: true)
    binary.append(first)
    binary.append(second)
    binaryExpected = headerLength
    binaryHeaderParsed = false
  }

  @inlinable
  mutating func beginSentence(at offset: UInt64) {
    sentenceOffset = offset
    state = .sentence
    // Usually empty already: emptying it anyway costs two uniqueness checks per sentence.
    if !partial.isEmpty { partial.removeAll(keepingCapacity: true) }
    length = 1  // the start character
    xor = 0
    starAt = -1
    carriageReturns = 0
  }

  @usableFromInline
  mutating func finishSentence(
    _ p: UnsafePointer<UInt8>, startInChunk: Int, endInChunk: Int, _ body: (Frame) throws -> Void
  ) rethrows {
    state = .hunting
    if partial.isEmpty {
      try deliverSentence(
        UnsafeBufferPointer(start: p + startInChunk, count: endInChunk - startInChunk), body)
    } else {
      partial.append(
        contentsOf: UnsafeBufferPointer(start: p + startInChunk, count: endInChunk - startInChunk))
      try partial.withUnsafeBufferPointer { try deliverSentence($0, body) }
      partial.removeAll(keepingCapacity: true)
    }
  }

  /// Validates one line (start character up to, not including, LF) and delivers it.
  @usableFromInline
  mutating func deliverSentence(_ line: UnsafeBufferPointer<UInt8>, _ body: (Frame) throws -> Void)
    rethrows
  {
    var end = line.count
    var trailingCR = 0
    while end > 0 && line[end - 1] == ASCII.cr {
      end -= 1
      trailingCR += 1
    }
    if trailingCR != carriageReturns || end < 2 {
      statistics.malformed += 1
      return
    }
    if end > configuration.maximumSentenceLength {
      statistics.tooLong += 1
      return
    }
    if starAt >= 0 {
      // Exactly two hex digits must follow the star.
      guard starAt == end - 3, let high = ASCII.hexValue(line[end - 2]),
        let low = ASCII.hexValue(line[end - 1])
      else {
        statistics.malformed += 1
        return
      }
      // `xor` covers everything after the start character; take out the star and digits.
      let sum = xor ^ ASCII.star ^ line[end - 2] ^ line[end - 1]
      guard sum == (high << 4 | low) else {
        statistics.badChecksum += 1
        return
      }
      guard starAt >= 2 else {
        statistics.malformed += 1
        return
      }
      statistics.sentences += 1
      try body(
        .sentence(
          RawSentence(
            bytes: UnsafeBufferPointer(rebasing: line[0..<starAt]), hadChecksum: true,
            offset: sentenceOffset, line: UnsafeBufferPointer(rebasing: line[0..<end]))))
    } else {
      guard configuration.checksumPolicy == .lenient else {
        statistics.missingChecksum += 1
        return
      }
      statistics.sentences += 1
      try body(
        .sentence(
          RawSentence(
            bytes: UnsafeBufferPointer(rebasing: line[0..<end]), hadChecksum: false,
            offset: sentenceOffset)))
    }
  }

  @usableFromInline
  mutating func finishBinaryFrame(_ body: (Frame) throws -> Void) rethrows {
    if state == .casic {
      guard casicChecksumMatches() else { return try rejectBinaryFrame(body) }
      statistics.casicFrames += 1
      return try deliverCASICFrame(body)
    }
    let valid: Bool
    let isUBX = state == .ubx
    if state == .rtcm3 {
      let end = binary.count - 3
      let stated =
        UInt32(binary[end]) << 16 | UInt32(binary[end + 1]) << 8 | UInt32(binary[end + 2])
      valid = RTCM3.crc24q(binary[0..<end]) == stated
    } else if isUBX {
      var a: UInt8 = 0
      var b: UInt8 = 0
      for index in 2..<(binary.count - 2) {
        a = a &+ binary[index]
        b = b &+ a
      }
      valid = a == binary[binary.count - 2] && b == binary[binary.count - 1]
    } else {
      var sum = 0
      for index in 4..<(binary.count - 4) { sum += Int(binary[index]) }
      let stated = Int(binary[binary.count - 4]) << 8 | Int(binary[binary.count - 3])
      valid =
        (sum & 0x7FFF) == stated && binary[binary.count - 2] == 0xB0
        && binary[binary.count - 1] == 0xB3
    }
    guard valid else {
      try rejectBinaryFrame(body)
      return
    }
    let kind = state
    state = .hunting
    if kind == .rtcm3 {
      statistics.rtcm3Frames += 1
      try binary.withUnsafeBufferPointer { frame in
        try body(
          .rtcm3(
            RTCM3FrameView(message: UnsafeBufferPointer(rebasing: frame[3..<(frame.count - 3)]))))
      }
    } else if isUBX {
      statistics.ubxFrames += 1
      try binary.withUnsafeBufferPointer { frame in
        let view = UBXFrameView(
          messageClass: frame[2], messageID: frame[3],
          payload: UnsafeBufferPointer(rebasing: frame[6..<(frame.count - 2)]))
        try body(.ubx(view))
      }
    } else {
      statistics.sirfFrames += 1
      try binary.withUnsafeBufferPointer { frame in
        try body(
          .sirf(SiRFFrameView(payload: UnsafeBufferPointer(rebasing: frame[4..<(frame.count - 4)])))
        )
      }
    }
    binary.removeAll(keepingCapacity: true)
  }

  /// What looked like a binary frame was not one: count its first byte as garbage and scan the
  /// rest again, so that a sentence hiding behind a false sync pattern is not lost.
  @usableFromInline
  mutating func rejectBinaryFrame(_ body: (Frame) throws -> Void) rethrows {
    statistics.badBinaryFrames += 1
    statistics.garbageBytes += 1
    state = .hunting
    let rest = Array(binary.dropFirst())  // an error path: allocating here is fine
    binary.removeAll(keepingCapacity: true)
    try rest.withUnsafeBufferPointer { buffer in
      try scan(buffer.baseAddress!, count: buffer.count, at: binaryOffset &+ 1, body)
    }
  }
}

extension NMEAFramer {
  /// Whether `bytes` hold at least `count` sentences that carried a valid checksum: what
  /// listening for a receiver's baud rate, or for a receiver at all, waits for (one could be
  /// luck in noise at a wrong rate).
  public static func holdsChecksummedSentences(_ bytes: [UInt8], atLeast count: Int = 2) -> Bool {
    var framer = NMEAFramer()
    var found = 0
    framer.feed(bytes) { frame in
      if case .sentence(let sentence) = frame, sentence.hadChecksum { found += 1 }
    }
    return found >= count
  }

  /// Whether `bytes` hold at least `count` frames that prove the rate: sentences that
  /// carried a valid checksum, or UBX or CASIC frames (sync, length and checksum), so that a
  /// receiver configured for binary output only is found at its rate as an NMEA one is.
  public static func holdsChecksummedFrames(_ bytes: [UInt8], atLeast count: Int = 2) -> Bool {
    var framer = NMEAFramer()
    var found = 0
    framer.feed(bytes) { frame in
      switch frame {
      case .sentence(let sentence): if sentence.hadChecksum { found += 1 }
      case .ubx, .casic: found += 1
      case .sirf, .rtcm3: break
      }
    }
    return found >= count
  }
}

extension NMEAFramer {
  /// The end of the input: a binary frame still waiting for the bytes its header announced
  /// will never get them. It is counted (``FramerStatistics/unfinishedBinaryFrames``) and the
  /// bytes after its first sync byte are scanned again, so that the frames and sentences a
  /// lying length field swallowed are delivered after all; the same for a frame found in
  /// that rescan. A sentence without its line end stays as it is. Call it once no more bytes
  /// will come (the end of a recording); ``feed(_:_:)`` may go on afterwards.
  public mutating func finish(_ body: (Frame) throws -> Void) rethrows {
    while state == .ubx || state == .sirf || state == .rtcm3 || state == .casic {
      statistics.unfinishedBinaryFrames += 1
      statistics.garbageBytes += 1
      state = .hunting
      let rest = Array(binary.dropFirst())  // once, at the end of the input
      binary.removeAll(keepingCapacity: true)
      guard !rest.isEmpty else { break }
      try rest.withUnsafeBufferPointer { buffer in
        try scan(buffer.baseAddress!, count: buffer.count, at: binaryOffset &+ 1, body)
      }
    }
    if state == .ubxSync || state == .sirfSync || state == .rtcm3Sync || state == .casicSync {
      statistics.garbageBytes += 1
      state = .hunting
    }
  }
}
