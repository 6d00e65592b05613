import NMEA

extension ChipsetFamily {
  /// A generic NMEA 0183 receiver, or one whose chipset is not known: no commands.
  public static let nmea = ChipsetFamily(rawValue: "nmea")
}

/// The driver of a receiver whose chipset is not known: it writes nothing, ever. Gating such
/// a receiver is opening and closing its port; it keeps running in between.
public struct GenericNMEADriver: ChipsetDriver {
  public init() {}
  public var family: ChipsetFamily { .nmea }
  public var cliName: String { "nmea" }
  public var aliases: [String] { ["generic"] }
  public var displayName: String { "generic NMEA" }
  /// gpsd's generic NMEA driver.
  public var gpsdDriverName: String { "NMEA0183" }
  /// NMEA 0183's own rate is 4800; the receivers sold today ship at 9600, and a family
  /// without commands is opened as the user set it, so this is not used to wake anything.
  public var factoryBaudRate: Int { 9600 }
  public var hasCommands: Bool { false }

  public func commandSet(_ options: CommandSetOptions) -> any ReceiverCommandSet {
    GenericNMEACommandSet()
  }

  public func unsupported(_ selection: NMEASelection) -> [NMEASentenceType] {
    selection.sentences
  }

  /// Throws ``ChipsetCommandError/noCommands(_:)``: the driver writes only to receivers of a
  /// known family.
  public func rawStep(_ text: String) throws(ChipsetCommandError) -> CommandStep {
    throw .noCommands(family)
  }
}

/// A receiver with no known chipset: no commands at all. Gating it is opening and closing
/// its port; it keeps running in between.
public struct GenericNMEACommandSet: ReceiverCommandSet {
  public init() {}
  public var family: ChipsetFamily { .nmea }
  public var powerOnSteps: [CommandStep] { [] }
  public var powerOffSteps: [CommandStep] { [] }
  public var powerProfile: PowerProfile {
    PowerProfile(offState: .running, wakesOverSerial: true, hotStartMilliseconds: nil)
  }
}
