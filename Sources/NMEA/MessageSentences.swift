// The sentences with nothing for a fix (``CycleRole/none``): text from the receiver and
// MediaTek's replies to commands.

/// TXT: a text message from the receiver (banners, antenna status …).
public struct TXT: Sendable, Hashable {
  public var talker: Talker
  public var messageCount: Int?
  public var messageNumber: Int?
  /// 0 error, 1 warning, 2 notice, 7 user.
  public var messageType: Int?
  public var text: String
}

/// Result code of `$PMTK001`.
public enum MTKAckResult: Int, Sendable, Hashable {
  case invalidCommand = 0
  case unsupported = 1
  case failed = 2
  case succeeded = 3
}

/// `$PMTK001`: MediaTek's acknowledgement of a command.
public struct MTKAcknowledgement: Sendable, Hashable {
  /// The command number acknowledged (`161` for `$PMTK161`).
  public var command: Int
  public var result: MTKAckResult

  public init(command: Int, result: MTKAckResult) {
    self.command = command
    self.result = result
  }
}

/// `$PMTK010` system message or `$PMTK011` text, both sent at start-up.
public struct MTKSystemMessage: Sendable, Hashable {
  public enum Kind: Sendable, Hashable {
    /// `$PMTK010,nnn`: 0 unknown, 1 start-up, 2 extension-EPO notification, 3 normal mode.
    case system(Int)
    /// `$PMTK011,text`, usually `MTKGPS`.
    case text(String)
  }
  public var kind: Kind

  public init(kind: Kind) { self.kind = kind }
}

// $GNTXT,01,01,02,u-blox AG - www.u-blox.com*4E
extension TXT: NMEASentenceDescriptor {
  static var address: SentenceAddress { "TXT" }
  static var role: CycleRole { .none }
  init(talker: Talker) {
    self.talker = talker
    text = ""
  }
  var sentence: Sentence { .txt(self) }
  var time: UTCTime? { nil }

  static func parse(_ f: inout FieldReader, commas: Int, into txt: inout TXT)
    throws(NMEAParseError)
  {
    txt.messageCount = try f.uint()
    txt.messageNumber = try f.uint()
    txt.messageType = try f.uint()
    // The text is everything after the third comma: it may itself hold commas.
    if f.hasMore {
      let first = f.next()
      var end = first.end
      while f.hasMore { end = f.next().end }
      txt.text = String(
        decoding: UnsafeBufferPointer(start: first.base + first.start, count: end - first.start),
        as: UTF8.self)
    }
  }

  func merge(into builder: inout FixBuilder) {}
}

// $PMTK001,604,1*30
extension MTKAcknowledgement: NMEASentenceDescriptor {
  static var address: SentenceAddress { "PMTK001" }
  static var role: CycleRole { .none }
  init(talker: Talker) { self.init(command: 0, result: .invalidCommand) }
  var sentence: Sentence { .mtkAcknowledgement(self) }
  var time: UTCTime? { nil }

  static func parse(_ f: inout FieldReader, commas: Int, into ack: inout MTKAcknowledgement)
    throws(NMEAParseError)
  {
    guard let command = try f.uint(), let flag = try f.uint(),
      let result = MTKAckResult(rawValue: flag)
    else { throw .badField(index: f.index) }
    ack = MTKAcknowledgement(command: command, result: result)
  }

  func merge(into builder: inout FixBuilder) {}
}

// $PMTK010,001*2E
// $PMTK011,MTKGPS*08
extension MTKSystemMessage: NMEASentenceDescriptor {
  static var address: SentenceAddress { "PMTK010" }
  /// `$PMTK011`, the start-up text: the same type, read as text (a row of its own in
  /// ``SentenceRegistry``, parsing into ``text``).
  static var textAddress: SentenceAddress { "PMTK011" }
  /// An empty `$PMTK011`, for the registry's row: ``parse(_:commas:into:)`` reads text into it.
  static var text: MTKSystemMessage { MTKSystemMessage(kind: .text("")) }
  static var role: CycleRole { .none }
  init(talker: Talker) { self.init(kind: .system(0)) }
  var sentence: Sentence { .mtkSystemMessage(self) }
  var time: UTCTime? { nil }

  static func parse(_ f: inout FieldReader, commas: Int, into message: inout MTKSystemMessage)
    throws(NMEAParseError)
  {
    switch message.kind {
    case .system:
      guard let code = try f.uint() else { throw .badField(index: f.index) }
      message.kind = .system(code)
    case .text:
      message.kind = .text(f.text() ?? "")
    }
  }

  func merge(into builder: inout FixBuilder) {}
}
