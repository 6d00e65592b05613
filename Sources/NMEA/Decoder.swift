/// Counters of a whole decoding pipeline.
public struct DecoderStatistics: Sendable, Hashable {
  public var framer = FramerStatistics()
  public var builder = FixBuilderStatistics()
  /// Sentences that framed correctly but failed to parse: a malformed field or address, or
  /// an impossible time of day or GSV message number (those also counted by reason in
  /// ``impossibleValues``).
  public var parseErrors = 0
  /// Well-formed but impossible values, by reason: each field dropped alone (its sentence
  /// standing), and the times of day and message numbers whose sentence was refused.
  public var impossibleValues = ImpossibleValueStatistics()
  /// Sentences parsed to a type the fix builder knows nothing about.
  public var unknownSentences = 0
  /// UBX frames decoded, not decoded, and refused by reason.
  public var ubx = UBXStatistics()
  /// CASIC frames decoded, not decoded, and refused.
  public var casic = CASICStatistics()

  public init() {}
}

/// Impossible values (``ImpossibleValue``), one counter per reason, as ``FramerStatistics``
/// counts the framer's rejections: a field dropped, or a sentence refused
/// (``NMEAParseError/impossibleValue(_:index:)``).
public struct ImpossibleValueStatistics: Sendable, Hashable {
  public var timeOfDay = 0
  public var date = 0
  public var latitude = 0
  public var longitude = 0
  public var arcMinutes = 0
  public var speed = 0
  public var course = 0
  public var magneticVariation = 0
  public var accuracy = 0
  public var messageNumber = 0
  public var altitude = 0
  public var geoidSeparation = 0
  public var fixQuality = 0
  public var fixMode = 0
  public var integerRange = 0

  public init() {}

  /// Adds the values dropped from one sentence.
  mutating func add(_ dropped: DroppedFields) {
    for reason in ImpossibleValue.allCases {
      let count = dropped.count(of: reason)
      if count > 0 { self[reason] += count }
    }
  }

  /// The counter of `reason`.
  public subscript(reason: ImpossibleValue) -> Int {
    get {
      switch reason {
      case .timeOfDay: return timeOfDay
      case .date: return date
      case .latitude: return latitude
      case .longitude: return longitude
      case .arcMinutes: return arcMinutes
      case .speed: return speed
      case .course: return course
      case .magneticVariation: return magneticVariation
      case .accuracy: return accuracy
      case .messageNumber: return messageNumber
      case .altitude: return altitude
      case .geoidSeparation: return geoidSeparation
      case .fixQuality: return fixQuality
      case .fixMode: return fixMode
      case .integerRange: return integerRange
      }
    }
    set {
      switch reason {
      case .timeOfDay: timeOfDay = newValue
      case .date: date = newValue
      case .latitude: latitude = newValue
      case .longitude: longitude = newValue
      case .arcMinutes: arcMinutes = newValue
      case .speed: speed = newValue
      case .course: course = newValue
      case .magneticVariation: magneticVariation = newValue
      case .accuracy: accuracy = newValue
      case .messageNumber: messageNumber = newValue
      case .altitude: altitude = newValue
      case .geoidSeparation: geoidSeparation = newValue
      case .fixQuality: fixQuality = newValue
      case .fixMode: fixMode = newValue
      case .integerRange: integerRange = newValue
      }
    }
  }

  /// All impossible values, dropped or refused.
  public var total: Int { ImpossibleValue.allCases.reduce(0) { $0 + self[$1] } }

  /// The reasons that occurred, with their counts, in ``ImpossibleValue``'s order: for a
  /// report that lists them without naming each (`date 2, speed 1`).
  public var counts: [(reason: ImpossibleValue, count: Int)] {
    ImpossibleValue.allCases.compactMap { self[$0] > 0 ? ($0, self[$0]) : nil }
  }
}

/// What the decoder reports, in stream order.
public enum DecoderEvent {
  /// A parsed sentence (every accepted one, before it joins its epoch).
  case sentence(Sentence)
  /// A sentence that framed correctly but failed to parse.
  case parseError(RawSentence, NMEAParseError)
  /// A complete epoch.
  case epoch(Epoch)
  /// A binary UBX frame, every one (acknowledgements, version reports …), before the
  /// message decoded from it.
  case ubx(UBXFrameView)
  /// A UBX message decoded from the frame just reported (navigation, time, monitoring); its
  /// views of the payload are valid only inside the closure.
  case ubxMessage(UBXMessage)
  /// A UBX frame of a known message whose payload cannot be that message (its length field
  /// disagrees with the message's layout): skipped, counted in ``UBXStatistics``.
  case ubxRejected(UBXFrameView, UBXRejection)
  /// A binary SiRF frame.
  case sirf(SiRFFrameView)
  /// A CASIC binary frame, every one (acknowledgements too: ``CASICAcknowledgement``), before
  /// the message decoded from it joins its epoch.
  case casic(CASICFrameView)
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
    var impossibleValues = ImpossibleValueStatistics()
    var unknownSentences = 0
    var ubx = UBXStatistics()
    var casic = CASICStatistics()
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
    statistics.impossibleValues = stages.impossibleValues
    statistics.unknownSentences = stages.unknownSentences
    statistics.ubx = stages.ubx
    statistics.casic = stages.casic
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

  /// Decodes the bytes in `chunk`, and shows each frame to `observe` first, as the framer
  /// delivers it (before the events it leads to): for a reader that also passes sentences on
  /// without framing them a second time.
  public mutating func decode(
    _ chunk: UnsafeRawBufferPointer, observingFrames observe: (Frame) -> Void,
    _ body: (DecoderEvent) throws -> Void
  ) rethrows {
    try framer.feed(chunk) { frame in
      observe(frame)
      try stages.handle(frame, body)
    }
  }

  /// Emits the epoch in progress (at the end of a recording or when the port closes), after
  /// the frames and sentences that a binary frame still unfinished had swallowed
  /// (``NMEAFramer/finish(_:)``).
  public mutating func finish(_ body: (DecoderEvent) throws -> Void) rethrows {
    // A binary frame that never completed gives back the bytes it swallowed.
    try framer.finish { frame in try stages.handle(frame, body) }
    try stages.builder.releaseHeldHighRateSolution { try body(.epoch($0)) }
    try stages.builder.flush { try body(.epoch($0)) }
  }
}

extension NMEADecoder.Stages: ParsedSentenceConsumer {
  mutating func handle(_ frame: Frame, _ body: (DecoderEvent) throws -> Void) rethrows {
    switch frame {
    case .sentence(let raw):
      builder.sentenceOffset = raw.offset
      try SentenceRegistry.parse(raw, into: &self, emit: body)
    case .ubx(let frame):
      builder.sentenceOffset = nil
      try body(.ubx(frame))
      try decode(frame, body)
    case .sirf(let frame):
      try body(.sirf(frame))
    case .casic(let frame):
      builder.sentenceOffset = nil
      try body(.casic(frame))
      try decode(frame, body)
    case .rtcm3:
      // Corrections echoed or sent by an RTK receiver: known (the framer counts them), and
      // nothing to decode into a fix.
      break
    }
  }

  /// Decodes a UBX frame into its message, or counts why not.
  mutating func decode(_ frame: UBXFrameView, _ body: (DecoderEvent) throws -> Void) rethrows {
    let message: UBXMessage?
    do {
      message = try UBXMessage(frame)
    } catch {
      ubx[error] += 1
      try body(.ubxRejected(frame, error))
      return
    }
    guard let message else {
      ubx.notDecoded += 1
      return
    }
    ubx.decoded += 1
    ubx.droppedFields += message.droppedFields
    try body(.ubxMessage(message))
    try message.add(to: &builder) { try body(.epoch($0)) }
  }

  /// Decodes a CASIC frame into its message and adds it to its epoch, or counts why not.
  mutating func decode(_ frame: CASICFrameView, _ body: (DecoderEvent) throws -> Void) rethrows {
    let message: CASICMessage?
    do {
      message = try CASICMessage(frame)
    } catch {
      casic.rejected += 1
      return
    }
    guard let message else {
      casic.notDecoded += 1
      return
    }
    casic.decoded += 1
    casic.droppedFields += message.droppedFields
    try message.add(to: &builder) { try body(.epoch($0)) }
  }

  @inline(__always)
  mutating func take<S: NMEASentenceDescriptor>(
    _ sentence: borrowing S, dropped: DroppedFields, emit body: (DecoderEvent) throws -> Void
  ) rethrows {
    if !dropped.isEmpty { impossibleValues.add(dropped) }
    try body(.sentence(sentence.sentence))
    try builder.add(sentence) { try body(.epoch($0)) }
  }

  mutating func takeUnknown(_ sentence: UnknownSentence, emit body: (DecoderEvent) throws -> Void)
    rethrows
  {
    unknownSentences += 1
    try body(.sentence(.unknown(sentence)))
  }

  mutating func reject(
    _ raw: RawSentence, _ error: NMEAParseError, emit body: (DecoderEvent) throws -> Void
  ) rethrows {
    parseErrors += 1
    if case .impossibleValue(let reason, _) = error { impossibleValues[reason] += 1 }
    try body(.parseError(raw, error))
  }
}
