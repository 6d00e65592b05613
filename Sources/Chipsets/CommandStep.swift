import NMEA

/// What, if anything, the receiver sends back to acknowledge a command.
public enum AcknowledgementExpectation: Sendable, Hashable, CustomStringConvertible {
  /// Nothing: the command is sent and the step is over after its settle time.
  case none
  /// `UBX-ACK-ACK` (or `UBX-ACK-NAK`) naming this message class and ID.
  case ubx(UBXMessageID)
  /// `$PMTK001,<command>,<flag>`.
  case mtk(command: Int)
  /// The receiver naming its chipset: the answer to a poll that only one family answers
  /// (``ChipsetProbe``), recognised by the caller's ``ChipsetIdentifier`` and handed on as
  /// ``ReceiverAcknowledgement/identified(_:)``.
  case identification

  public var description: String {
    switch self {
    case .none: return "no acknowledgement"
    case .ubx(let id): return "UBX-ACK-ACK/NAK for \(id)"
    case .mtk(let command): return "$PMTK001,\(command),<flag>"
    case .identification: return "an answer that names the chipset"
    }
  }
}

/// An acknowledgement the receiver sent, recognised from a UBX frame or a parsed sentence.
public enum ReceiverAcknowledgement: Sendable, Hashable, CustomStringConvertible {
  /// `UBX-ACK-ACK` (accepted) or `UBX-ACK-NAK` (rejected) for a message class and ID.
  case ubx(UBXMessageID, accepted: Bool)
  /// `$PMTK001,<command>,<flag>`: flag 3 is success; 0 invalid command, 1 unsupported
  /// command, 2 valid but failed.
  case mtk(command: Int, result: MTKAckResult)
  /// The receiver said what it is (its `UBX-MON-VER`, its `$PMTK705` …): the family its
  /// identification now names. Made by whoever identifies (``ChipsetIdentifier``), never
  /// from one frame here.
  case identified(ChipsetFamily)

  /// Recognises `UBX-ACK-ACK` and `UBX-ACK-NAK`, and `UBX-MGA-ACK-DATA0`, with which a
  /// receiver answers the MGA (aiding) messages instead (payload: type 1 accepted or 0 not,
  /// version, an information code, the MGA message's ID, the start of its payload); `nil`
  /// for any other frame or a malformed payload.
  public init?(_ frame: UBXFrameView) {
    if frame.messageClass == 0x13, frame.messageID == 0x60, frame.payload.count == 8 {
      let type = frame.payload[0]
      guard type <= 1 else { return nil }
      self = .ubx(UBXMessageID(0x13, frame.payload[3]), accepted: type == 1)
      return
    }
    guard frame.messageClass == 0x05, frame.messageID <= 0x01, frame.payload.count == 2 else {
      return nil
    }
    let acknowledged = UBXMessageID(frame.payload[0], frame.payload[1])
    self = .ubx(acknowledged, accepted: frame.messageID == 0x01)
  }

  /// Recognises `$PMTK001`; `nil` for any other sentence.
  public init?(_ sentence: Sentence) {
    guard case .mtkAcknowledgement(let ack) = sentence else { return nil }
    self = .mtk(command: ack.command, result: ack.result)
  }

  /// Whether the receiver accepted the command.
  public var isPositive: Bool {
    switch self {
    case .ubx(_, let accepted): return accepted
    case .mtk(_, let result): return result == .succeeded
    case .identified: return true
    }
  }

  /// Why the receiver refused, for an error message; `nil` when it accepted.
  public var failureReason: String? {
    switch self {
    case .ubx(let id, let accepted):
      return accepted ? nil : "the receiver rejected \(id) (UBX-ACK-NAK)"
    case .mtk(let command, let result):
      switch result {
      case .succeeded: return nil
      case .invalidCommand: return "the receiver called $PMTK\(pad3(command)) an invalid command"
      case .unsupported:
        return "the receiver does not support $PMTK\(pad3(command)) (unsupported command)"
      case .failed: return "the receiver accepted $PMTK\(pad3(command)) but could not carry it out"
      }
    case .identified:
      return nil
    }
  }

  public var description: String {
    switch self {
    case .ubx(let id, let accepted): return "\(accepted ? "UBX-ACK-ACK" : "UBX-ACK-NAK") \(id)"
    case .mtk(let command, let result): return "$PMTK001,\(command),\(result.rawValue)"
    case .identified(let family): return "identified as \(family.displayName)"
    }
  }
}

func pad3(_ value: Int) -> String {
  let digits = String(value)
  return digits.count >= 3 ? digits : String(repeating: "0", count: 3 - digits.count) + digits
}

/// One command in a power-on or power-off sequence: the bytes to write, what acknowledges
/// them, and how long to wait afterwards before the next step.
///
/// The gated receiver writes ``bytes``, waits for ``acknowledgement`` if there is one (with its
/// own timeout and bounded retries), then waits ``settleMilliseconds`` before the next step.
public struct CommandStep: Sendable, Hashable, CustomStringConvertible {
  /// The bytes to write, exactly as they go on the wire.
  public let bytes: [UInt8]
  /// What the command does, for logs and error messages (`UBX-CFG-RST controlled GNSS stop`).
  public let summary: String
  /// What acknowledges the command.
  public let acknowledgement: AcknowledgementExpectation
  /// How long to wait after the command (and after its acknowledgement) before the next
  /// step, in milliseconds: for example while a receiver wakes from backup.
  public let settleMilliseconds: Int

  public init(
    bytes: [UInt8], summary: String, acknowledgement: AcknowledgementExpectation = .none,
    settleMilliseconds: Int = 0
  ) {
    self.bytes = bytes
    self.summary = summary
    self.acknowledgement = acknowledgement
    self.settleMilliseconds = max(0, settleMilliseconds)
  }

  /// The settle time as a `Duration`.
  public var settle: Duration { .milliseconds(settleMilliseconds) }

  /// Whether `acknowledgement` answers this step: `true` if it accepts the command, `false`
  /// if it refuses it, `nil` if it is about something else (or the step expects nothing).
  public func isAcknowledged(by acknowledgement: ReceiverAcknowledgement) -> Bool? {
    switch (self.acknowledgement, acknowledgement) {
    case (.ubx(let expected), .ubx(let id, let accepted)) where expected == id:
      return accepted
    case (.mtk(let expected), .mtk(let command, let result)) where expected == command:
      return result == .succeeded
    case (.identification, .identified(let family)):
      return family.hasCommands
    default:
      return nil
    }
  }

  public var description: String { summary }
}
