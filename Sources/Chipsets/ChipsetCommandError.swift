/// Why a command could not be built. Messages say what was wrong and what to write instead.
public enum ChipsetCommandError: Error, Sendable, Hashable, CustomStringConvertible {
  /// The command text was empty.
  case empty
  /// A UBX payload longer than the 16-bit length field allows.
  case payloadTooLong(Int)
  /// An NMEA command held a byte that cannot be sent inside a sentence (control characters,
  /// non-ASCII, or `$`, `!`, `*` in the body).
  case invalidNMEACharacter(String)
  /// An NMEA command carried a checksum that does not match its body.
  case checksumMismatch(stated: String, computed: String)
  /// An NMEA command longer than a receiver accepts.
  case sentenceTooLong(Int)
  /// A raw UBX command that is neither hex bytes nor a known message name.
  case invalidUBX(String)
  /// A raw command for a family that has no commands (generic NMEA).
  case noCommands(ChipsetFamily)

  public var description: String {
    switch self {
    case .empty:
      return "the command is empty; give an NMEA body such as PMTK161,0 or UBX hex bytes"
    case .payloadTooLong(let count):
      return "a UBX payload of \(count) bytes is longer than the 65535 bytes a frame can carry"
    case .invalidNMEACharacter(let text):
      return
        "the NMEA command \(text) holds a character that cannot be sent (control, non-ASCII, "
        + "or $ ! * inside the body); write printable ASCII such as PMTK161,0"
    case .checksumMismatch(let stated, let computed):
      return
        "the command's checksum *\(stated) does not match its body (*\(computed)); "
        + "fix it or leave the checksum out and it is added"
    case .sentenceTooLong(let count):
      return
        "the NMEA command is \(count) bytes long; receivers accept at most "
        + "\(NMEACommand.maximumLength)"
    case .invalidUBX(let text):
      return
        "\(text) is not a UBX command: write the class, ID and payload as hex bytes "
        + "(06 04 00 00 08 00) or a message name followed by payload bytes (CFG-RST 00 00 08 00)"
    case .noCommands(let family):
      return
        "the \(family.displayName) family has no commands: the driver never writes to a "
        + "receiver whose chipset is not known; pass --chipset "
        + ChipsetRegistry.commandableNames + " if you know it"
    }
  }
}
