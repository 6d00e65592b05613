import NMEA

/// One command written to the receiver to wake it or put it to standby.
public struct PowerCommand: Sendable, Hashable {
  /// What acknowledges a command.
  public enum Acknowledgement: Sendable, Hashable {
    /// `UBX-ACK-ACK` (or `-NAK`) for the message class and ID.
    case ubx(messageClass: UInt8, messageID: UInt8)
    /// `$PMTK001,<command>,<flag>`.
    case mtk(command: Int)
  }

  public var bytes: [UInt8]
  public var description: String
  /// `nil` when the receiver does not acknowledge this command.
  public var acknowledgement: Acknowledgement?
  /// Time to leave the receiver after the command, before the next one (for example after a
  /// wake-up burst).
  public var settleTime: Duration

  public init(
    bytes: [UInt8], description: String, acknowledgement: Acknowledgement? = nil,
    settleTime: Duration = .zero
  ) {
    self.bytes = bytes
    self.description = description
    self.acknowledgement = acknowledgement
    self.settleTime = settleTime
  }
}

/// The commands that power a receiver on and off.
public struct PowerCommands: Sendable, Hashable {
  public var powerOn: [PowerCommand]
  public var powerOff: [PowerCommand]

  public init(powerOn: [PowerCommand], powerOff: [PowerCommand]) {
    self.powerOn = powerOn
    self.powerOff = powerOff
  }

  /// No commands: gating is opening and closing the port (generic NMEA receivers).
  public static let none = PowerCommands(powerOn: [], powerOff: [])
}

/// An acknowledgement seen in the receiver's output.
struct ObservedAcknowledgement: Sendable, Hashable {
  var answers: PowerCommand.Acknowledgement
  var positive: Bool
  var detail: String
}
