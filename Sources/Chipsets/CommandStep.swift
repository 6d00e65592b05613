import NMEA

/// What, if anything, the receiver sends back to acknowledge a command.
public enum AcknowledgementExpectation: Sendable, Hashable, CustomStringConvertible {
  /// Nothing: the command is sent and the step is over after its settle time.
  case none
  /// `UBX-ACK-ACK` (or `UBX-ACK-NAK`) naming this message class and ID.
  case ubx(UBXMessageID)
  /// A family's acknowledgement of `command` (``CommandReply``): `$PMTK001,314,<flag>` is
  /// MediaTek's of `314`. The family's driver reads it from the sentence or frame.
  case reply(ChipsetFamily, command: String)
  /// `UBX-MGA-ACK-DATA0` naming this MGA message and its type (the payload's first byte:
  /// `0x10` TIME_UTC, `0x01` POS_LLH for `UBX-MGA-INI`), which a receiver sends instead of
  /// `UBX-ACK-ACK` for aiding when its `ackAiding` is on.
  case mga(UBXMessageID, messageType: UInt8)
  /// The receiver naming its chipset: the answer to a poll that only one family answers
  /// (``ChipsetProbe``), recognised by the caller's ``ChipsetIdentifier`` and handed on as
  /// ``ReceiverAcknowledgement/identified(_:)``.
  case identification
  /// Silence: a command with no answer whose effect is that the receiver stops sending
  /// (`UBX-RXM-PMREQ` backup). What it sends within `graceMilliseconds` of the write is
  /// taken as said before the command took (an epoch's sentences already under way, bytes
  /// already in the host's buffers); one byte in the `quietMilliseconds` after that means the
  /// receiver did not carry the command out. The window is longer than an epoch at 1 Hz, so
  /// a receiver that ignored the command is heard in it.
  case silence(graceMilliseconds: Int, quietMilliseconds: Int)

  /// Whether the receiver sends an answer to wait for (not for ``none`` and ``silence``).
  public var expectsAnswer: Bool {
    switch self {
    case .none, .silence: return false
    case .ubx, .reply, .mga, .identification: return true
    }
  }

  public var description: String {
    switch self {
    case .none: return "no acknowledgement"
    case .ubx(let id): return "UBX-ACK-ACK/NAK for \(id)"
    case .reply(let family, let command):
      return family.driver.acknowledgementDescription(command: command)
    case .mga(let id, let type): return "UBX-MGA-ACK-DATA0 for \(id) type \(hex2(type))"
    case .identification: return "an answer that names the chipset"
    case .silence(let grace, let quiet):
      return "silence for \(quiet) ms from \(grace) ms after the command"
    }
  }
}

/// An acknowledgement the receiver sent, recognised from a UBX frame or a parsed sentence.
public enum ReceiverAcknowledgement: Sendable, Hashable, CustomStringConvertible {
  /// `UBX-ACK-ACK` (accepted) or `UBX-ACK-NAK` (rejected) for a message class and ID.
  case ubx(UBXMessageID, accepted: Bool)
  /// A family's acknowledgement of one of its commands, read by its driver
  /// (``ChipsetDriver/acknowledgement(in:)-(Sentence)``): `$PMTK001,314,3`, `$PAIR001,062,0`.
  case reply(CommandReply)
  /// `UBX-MGA-ACK-DATA0` for an MGA message (`id`) of `messageType` (the first byte of its
  /// payload): accepted (type 1) or not (type 0), with u-blox's information code saying why
  /// not.
  case mga(UBXMessageID, messageType: UInt8, accepted: Bool, infoCode: UInt8)
  /// The receiver said what it is (its `UBX-MON-VER`, its `$PMTK705` …): the family its
  /// identification now names. Made by whoever identifies (``ChipsetIdentifier``), never
  /// from one frame here.
  case identified(ChipsetFamily)

  /// Recognises `UBX-ACK-ACK` and `UBX-ACK-NAK`, and `UBX-MGA-ACK-DATA0`, with which a
  /// receiver answers the MGA (aiding) messages instead (8 bytes: type, 1 accepted or 0 not;
  /// version 0; infoCode; the MGA message's ID; the first four bytes of its payload, the first
  /// of which is its type); `nil` for any other frame or a malformed payload.
  public init?(_ frame: UBXFrameView) {
    let payload = frame.payload
    if frame.messageClass == 0x13, frame.messageID == 0x60, payload.count == 8 {
      let start = payload.startIndex
      let type = payload[start]
      guard type <= 1, payload[start + 1] == 0 else { return nil }
      self = .mga(
        UBXMessageID(0x13, payload[start + 3]), messageType: payload[start + 4],
        accepted: type == 1, infoCode: payload[start + 2])
      return
    }
    guard frame.messageClass == 0x05, frame.messageID <= 0x01, payload.count == 2 else {
      return nil
    }
    let acknowledged = UBXMessageID(payload[payload.startIndex], payload[payload.startIndex + 1])
    self = .ubx(acknowledged, accepted: frame.messageID == 0x01)
  }

  /// Recognises a family's acknowledgement sentence (`$PMTK001` …): the first driver of
  /// ``ChipsetRegistry/all`` that reads `sentence` as one; `nil` for any other sentence.
  public init?(_ sentence: Sentence) {
    for driver in ChipsetRegistry.all {
      if let found = driver.acknowledgement(in: sentence) {
        self = found
        return
      }
    }
    return nil
  }

  /// Recognises an acknowledgement in any frame: a sentence's or a binary frame's, as the
  /// drivers read them (`UBX-ACK-ACK`, `$PMTK001` …); `nil` for anything else.
  public init?(frame: Frame) {
    for driver in ChipsetRegistry.all {
      if let found = driver.acknowledgement(in: frame) {
        self = found
        return
      }
    }
    return nil
  }

  /// Recognises an acknowledgement in whatever the decoder handed out: a sentence or a binary
  /// frame, as the drivers read them; `nil` for anything else. The one call every reader makes,
  /// so a family's acknowledgements reach every command loop alike.
  public init?(_ event: DecoderEvent) {
    switch event {
    case .sentence(let sentence): self.init(sentence)
    case .ubx(let view): self.init(frame: .ubx(view))
    case .sirf(let view): self.init(frame: .sirf(view))
    case .casic(let view): self.init(frame: .casic(view))
    case .epoch, .parseError, .ubxMessage, .ubxRejected: return nil
    }
  }

  /// Whether the receiver accepted the command.
  public var isPositive: Bool {
    switch self {
    case .ubx(_, let accepted): return accepted
    case .reply(let reply): return reply.accepted
    case .mga(_, _, let accepted, _): return accepted
    case .identified: return true
    }
  }

  /// Why the receiver refused, for an error message; `nil` when it accepted.
  public var failureReason: String? {
    switch self {
    case .ubx(let id, let accepted):
      return accepted ? nil : "the receiver rejected \(id) (UBX-ACK-NAK)"
    case .reply(let reply):
      return reply.accepted ? nil : reply.failureReason
    case .mga(let id, let type, let accepted, let infoCode):
      guard !accepted else { return nil }
      return "the receiver did not use \(id) type \(hex2(type)) (UBX-MGA-ACK-DATA0: "
        + Self.mgaInfo(infoCode) + ")"
    case .identified:
      return nil
    }
  }

  public var description: String {
    switch self {
    case .ubx(let id, let accepted): return "\(accepted ? "UBX-ACK-ACK" : "UBX-ACK-NAK") \(id)"
    case .reply(let reply): return reply.text
    case .mga(let id, let type, let accepted, let infoCode):
      return "UBX-MGA-ACK-DATA0 \(id) type \(hex2(type)) "
        + (accepted ? "accepted" : "not used, info code \(infoCode)")
    case .identified(let family): return "identified as \(family.displayName)"
    }
  }

  /// u-blox's meaning of a `UBX-MGA-ACK-DATA0` information code (u-blox 8 / M8 Receiver
  /// Description UBX-13003221 and the u-blox 9 and 10 interface descriptions, UBX-MGA-ACK).
  static func mgaInfo(_ code: UInt8) -> String {
    switch code {
    case 0: return "accepted"
    case 1: return "it does not know the time yet, so cannot use the data; send the time first"
    case 2: return "this message version is not supported"
    case 3: return "the message size does not match its version"
    case 4: return "the data could not be stored"
    case 5: return "the receiver is not ready to use the data"
    case 6: return "the message type is unknown"
    default: return "information code \(code)"
    }
  }
}

func hex2(_ value: UInt8) -> String {
  let digits = String(value, radix: 16, uppercase: true)
  return "0x" + (digits.count < 2 ? "0" + digits : digits)
}

func pad3(_ value: Int) -> String {
  let digits = String(value)
  return digits.count >= 3 ? digits : String(repeating: "0", count: 3 - digits.count) + digits
}

/// A family's answer to one of its commands, as its driver read it from a sentence or a
/// frame: data, so that a family's acknowledgement needs no type of its own.
public struct CommandReply: Sendable, Hashable, CustomStringConvertible {
  /// The family whose driver read it.
  public var family: ChipsetFamily
  /// The command it answers, as the family names its commands (`314` for `$PMTK314`), and
  /// as ``AcknowledgementExpectation/reply(_:command:)`` names it.
  public var command: String
  /// Whether the receiver accepted and carried out the command.
  public var accepted: Bool
  /// The answer as the receiver sent it (`$PMTK001,314,3`), for logs.
  public var text: String
  /// Why the receiver refused, in the user's words; `nil` when it accepted.
  public var failureReason: String?

  public init(
    family: ChipsetFamily, command: String, accepted: Bool, text: String,
    failureReason: String? = nil
  ) {
    self.family = family
    self.command = command
    self.accepted = accepted
    self.text = text
    self.failureReason = accepted ? nil : failureReason
  }

  public var description: String { text }
}

/// One command in a power-on or power-off sequence: the bytes to write, what acknowledges
/// them, and how long to wait afterwards before the next step.
///
/// The gated receiver writes ``bytes(at:)``, waits for ``acknowledgement`` if there is one
/// (with its own timeout and bounded retries), then waits ``settleMilliseconds`` before the
/// next step. A step that tells the receiver the time (``timed``) makes its bytes anew for
/// every attempt, from UTC as it is when the attempt is written: a retry a second later says
/// so.
public struct CommandStep: Sendable, Hashable, CustomStringConvertible {
  /// The bytes to write, exactly as they go on the wire; for a ``timed`` step, as they were
  /// when the step was planned (what is written when no UTC is at hand).
  public let bytes: [UInt8]
  /// What the bytes say that depends on the time they are written at; `nil` for a fixed
  /// command.
  public let timed: TimedCommand?
  /// What the command does, for logs and error messages (`UBX-CFG-RST controlled GNSS stop`).
  public let summary: String
  /// What acknowledges the command.
  public let acknowledgement: AcknowledgementExpectation
  /// How long to wait after the command (and after its acknowledgement) before the next
  /// step, in milliseconds: for example while a receiver wakes from backup.
  public let settleMilliseconds: Int

  public init(
    bytes: [UInt8], summary: String, acknowledgement: AcknowledgementExpectation = .none,
    settleMilliseconds: Int = 0, timed: TimedCommand? = nil
  ) {
    self.bytes = bytes
    self.timed = timed
    self.summary = summary
    self.acknowledgement = acknowledgement
    self.settleMilliseconds = max(0, settleMilliseconds)
  }

  /// The bytes to write at `now` (UTC): made from `now` for a ``timed`` step, else (or with
  /// no UTC known) ``bytes``.
  public func bytes(at now: UTCTimestamp?) -> [UInt8] {
    guard let timed, let now, let made = timed.bytes(at: now) else { return bytes }
    return made
  }

  /// The settle time as a `Duration`.
  public var settle: Duration { .milliseconds(settleMilliseconds) }

  /// Whether `acknowledgement` answers this step: `true` if it accepts the command, `false`
  /// if it refuses it, `nil` if it is about something else (or the step expects nothing).
  public func isAcknowledged(by acknowledgement: ReceiverAcknowledgement) -> Bool? {
    switch (self.acknowledgement, acknowledgement) {
    case (.ubx(let expected), .ubx(let id, let accepted)) where expected == id:
      return accepted
    case (.reply(let family, let expected), .reply(let reply))
    where family == reply.family && expected == reply.command:
      return reply.accepted
    case (.mga(let expected, let type), .mga(let id, let answeredType, let accepted, _))
    where expected == id && type == answeredType:
      return accepted
    case (.identification, .identified(let family)):
      return family.hasCommands
    default:
      return nil
    }
  }

  public var description: String { summary }
}
