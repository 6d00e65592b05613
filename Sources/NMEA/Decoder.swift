/// Counters of a whole decoding pipeline.
public struct DecoderStatistics: Sendable, Hashable {
  public var framer = FramerStatistics()
  public var builder = FixBuilderStatistics()
  /// Sentences that framed correctly but held an impossible field, by parse error.
  public var parseErrors = 0
  /// Sentences parsed to a type the fix builder knows nothing about.
  public var unknownSentences = 0

  public init() {}
}

/// What the decoder reports, in stream order.
public enum DecoderEvent {
  /// A parsed sentence (every accepted one, before it joins its epoch).
  case sentence(Sentence)
  /// A sentence that framed correctly but failed to parse.
  case parseError(RawSentence, NMEAParseError)
  /// A complete epoch.
  case epoch(Epoch)
  /// A binary UBX frame (acknowledgements, version reports …).
  case ubx(UBXFrameView)
  /// A binary SiRF frame.
  case sirf(SiRFFrameView)
}

/// Bytes in, epochs out: the framer, parser and fix builder in one value.
///
/// ```swift
/// var decoder = NMEADecoder()
/// decoder.decode(bytes) { event in
///   if case .epoch(let epoch) = event { print(epoch.fix) }
/// }
/// decoder.finish { event in … }   // end of a recording
/// ```
public struct NMEADecoder {
  public var framer: NMEAFramer
  var stages = Stages()

  /// Parser and fix builder, kept apart from the framer so both can be used while the framer
  /// scans.
  struct Stages {
    var builder = FixBuilder()
    var parseErrors = 0
    var unknownSentences = 0
  }

  /// The fix builder (its statistics, whether it has learned the cycle end).
  public var builder: FixBuilder { stages.builder }

  /// The fix builder's knowledge of the receiver's cycle; see ``FixBuilder/cycleKnowledge``.
  public var cycleKnowledge: CycleKnowledge? {
    get { stages.builder.cycleKnowledge }
    set { stages.builder.cycleKnowledge = newValue }
  }

  public init(configuration: FramerConfiguration = FramerConfiguration()) {
    framer = NMEAFramer(configuration: configuration)
  }

  public var statistics: DecoderStatistics {
    var statistics = DecoderStatistics()
    statistics.framer = framer.statistics
    statistics.builder = stages.builder.statistics
    statistics.parseErrors = stages.parseErrors
    statistics.unknownSentences = stages.unknownSentences
    return statistics
  }

  /// Decodes a chunk of bytes, calling `body` for each event.
  public mutating func decode<Bytes: Sequence>(
    _ bytes: Bytes, _ body: (DecoderEvent) throws -> Void
  ) rethrows where Bytes.Element == UInt8 {
    try framer.feed(bytes) { frame in
      try stages.handle(frame, body)
    }
  }

  /// Decodes the bytes in `chunk`.
  public mutating func decode(
    _ chunk: UnsafeRawBufferPointer, _ body: (DecoderEvent) throws -> Void
  )
    rethrows
  {
    try framer.feed(chunk) { frame in
      try stages.handle(frame, body)
    }
  }

  /// Emits the epoch in progress (at the end of a recording or when the port closes).
  public mutating func finish(_ body: (DecoderEvent) throws -> Void) rethrows {
    try stages.builder.flush { try body(.epoch($0)) }
  }
}

extension NMEADecoder.Stages {
  mutating func handle(_ frame: Frame, _ body: (DecoderEvent) throws -> Void) rethrows {
    switch frame {
    case .sentence(let raw):
      // The four types a receiver sends most go from the parser to the fix builder as
      // typed values, without the `Sentence` around them (each copy of a sentence costs).
      switch Sentence.frequentKind(raw.bytes) {
      case .gga(let talker):
        var gga = GGA(talker: talker)
        do {
          try Sentence.withFields(raw) { (reader, _) throws(NMEAParseError) in
            var f = reader
            try Sentence.parseGGA(&f, into: &gga)
          }
        } catch {
          return try parseError(raw, error, body)
        }
        try body(.sentence(.gga(gga)))
        try builder.add(gga) { try body(.epoch($0)) }
      case .rmc(let talker):
        var rmc = RMC(talker: talker)
        do {
          try Sentence.withFields(raw) { (reader, _) throws(NMEAParseError) in
            var f = reader
            try Sentence.parseRMC(&f, into: &rmc)
          }
        } catch {
          return try parseError(raw, error, body)
        }
        try body(.sentence(.rmc(rmc)))
        try builder.add(rmc) { try body(.epoch($0)) }
      case .gsa(let talker):
        var gsa = GSA(talker: talker)
        do {
          try Sentence.withFields(raw) { (reader, commas) throws(NMEAParseError) in
            var f = reader
            try Sentence.parseGSA(&f, commas: commas, into: &gsa)
          }
        } catch {
          return try parseError(raw, error, body)
        }
        try body(.sentence(.gsa(gsa)))
        try builder.add(gsa) { try body(.epoch($0)) }
      case .gsv(let talker):
        var gsv = GSV(talker: talker)
        do {
          try Sentence.withFields(raw) { (reader, commas) throws(NMEAParseError) in
            var f = reader
            try Sentence.parseGSV(&f, commas: commas, into: &gsv)
          }
        } catch {
          return try parseError(raw, error, body)
        }
        try body(.sentence(.gsv(gsv)))
        try builder.add(gsv) { try body(.epoch($0)) }
      case .other:
        let sentence: Sentence
        do {
          sentence = try Sentence.parseAny(raw)
        } catch {
          return try parseError(raw, error, body)
        }
        if case .unknown = sentence { unknownSentences += 1 }
        try body(.sentence(sentence))
        try builder.add(sentence) { try body(.epoch($0)) }
      }
    case .ubx(let frame):
      try body(.ubx(frame))
    case .sirf(let frame):
      try body(.sirf(frame))
    }
  }

  mutating func parseError(
    _ raw: RawSentence, _ error: NMEAParseError, _ body: (DecoderEvent) throws -> Void
  ) rethrows {
    parseErrors += 1
    try body(.parseError(raw, error))
  }
}
