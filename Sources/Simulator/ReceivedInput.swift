import Chipsets

/// Bytes the host wrote to the simulated receiver, decoded: one command, or a run of bytes
/// that formed none (a wake burst, CR LF, line noise, a sentence with a bad checksum).
public struct ReceivedInput: Sendable, Hashable, CustomStringConvertible {
  /// When the last byte arrived, since the simulator started.
  public let at: Duration
  /// The bytes exactly as they arrived: for a command, its whole frame or sentence with CR LF.
  public let bytes: [UInt8]
  /// The command, when the bytes formed a checksum-valid UBX frame or NMEA sentence.
  public let command: ReceiverCommand?
  /// The power state when the bytes arrived.
  public let powerState: SimulatedPowerState
  /// What the receiver did about them.
  public let outcome: InputOutcome

  public var description: String {
    let what = command.map { "\($0)" } ?? "\(bytes.count) bytes without a command"
    return "\(at): \(what) [\(powerState), \(outcome)]"
  }
}

/// What a simulated receiver did with what it received.
public enum InputOutcome: String, Sendable, Hashable, CustomStringConvertible {
  /// Nothing: noise, a command this chip does not act on, or the receiver is deaf
  /// (``ResponseMode/unresponsive``).
  case ignored
  /// Arrived while the receiver was asleep, hibernating, booting or unplugged: never seen.
  case lost
  /// Arrived while the receiver was asleep and woke it (the bytes themselves are lost).
  case wokeReceiver
  /// Acknowledged: `UBX-ACK-ACK` or `$PMTK001,<cmd>,3`.
  case acknowledged
  /// Rejected: `UBX-ACK-NAK` or `$PMTK001,<cmd>,0|1|2`.
  case rejected
  /// A poll or query answered with data (`UBX-MON-VER`, `$PMTK705` …).
  case answered
  /// Carried out without an answer (`UBX-CFG-RST`, `UBX-RXM-PMREQ`, `$PSRF117`, `$PMTK101`).
  case carriedOut

  public var description: String { rawValue }
}
