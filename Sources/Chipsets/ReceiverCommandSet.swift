/// The power state a receiver is left in by a family's power-off steps.
public enum ReceiverPowerState: String, Sendable, Hashable, CustomStringConvertible {
  /// Nothing changes on the receiver: it keeps tracking; only the port is closed.
  case running
  /// The GNSS engine is stopped; the receiver still answers commands (u-blox controlled
  /// GNSS stop).
  case gnssStopped
  /// The receiver sleeps with its RAM kept and wakes on a byte (MediaTek standby).
  case standby
  /// Only the backup domain (RTC and battery-backed RAM) is powered (u-blox backup;
  /// MediaTek `$PMTK225,4`, which only the FORCE_ON pin ends).
  case backup
  /// SiRF hibernate: woken only by a pulse on the ON_OFF pin.
  case hibernate

  public var description: String {
    switch self {
    case .running: return "running (port closed)"
    case .gnssStopped: return "GNSS stopped"
    case .standby: return "standby"
    case .backup: return "backup"
    case .hibernate: return "hibernate"
    }
  }
}

/// What powering a receiver off and on again costs: the state it reaches and how it comes
/// back.
public struct PowerProfile: Sendable, Hashable {
  /// The state the power-off steps leave the receiver in.
  public var offState: ReceiverPowerState
  /// Whether the power-on steps can bring the receiver back over the serial line alone.
  /// `false` means a pin (SiRF ON_OFF) or a power cycle is needed.
  public var wakesOverSerial: Bool
  /// Typical time from power-on to the next fix after a short off period (a hot start), in
  /// milliseconds, as the manufacturer's data sheet states it; `nil` when not known.
  public var hotStartMilliseconds: Int?

  public init(offState: ReceiverPowerState, wakesOverSerial: Bool, hotStartMilliseconds: Int?) {
    self.offState = offState
    self.wakesOverSerial = wakesOverSerial
    self.hotStartMilliseconds = hotStartMilliseconds
  }
}

/// The commands of one chipset family: what to write, in order, to power a receiver on and
/// off, and what that costs.
///
/// Values are immutable and `Sendable`; building the steps has no side effects. The gated
/// receiver writes each step's bytes, waits for its acknowledgement where there is one, and
/// then waits its settle time.
public protocol ReceiverCommandSet: Sendable {
  var family: ChipsetFamily { get }
  /// Wake or start the receiver and select its NMEA sentences.
  var powerOnSteps: [CommandStep] { get }
  /// Put the receiver into standby, backup or GNSS stop.
  var powerOffSteps: [CommandStep] { get }
  var powerProfile: PowerProfile { get }
  /// The power-on steps for a wake that `context` describes: ``powerOnSteps`` with, where
  /// ``WakePlan`` says the start will be warm or cold, the aiding that shortens it (UTC first,
  /// then the last position), placed after the wake and before the receiver starts
  /// navigating. A family that takes no aiding returns ``powerOnSteps``.
  func powerOnSteps(for context: WakeContext) -> [CommandStep]
  /// The power-off for a sleep that `context` describes: the deepest sleep the chipset
  /// offers that the driver can certainly leave again over the connection it has (and the
  /// wake line, when one is declared), when the expected sleep repays its dearer wake; else
  /// the quick-wake standby. A family with one power-off returns ``powerOffSteps``.
  func sleep(for context: SleepContext) -> SleepChoice
}

extension ReceiverCommandSet {
  public func powerOnSteps(for context: WakeContext) -> [CommandStep] { powerOnSteps }
}

/// How a receiver is attached; decides what power-off a u-blox receiver can use.
public enum HostInterface: String, Sendable, Hashable {
  /// The receiver's own USB port (a `ttyACM` device for u-blox).
  case usb
  /// A UART, possibly behind a USB-serial bridge (`ttyS`, `ttyAMA`, `ttyUSB`).
  case uart
}

extension ChipsetFamily {
  /// The command set for a receiver of this family, from its driver
  /// (``ChipsetDriver/commandSet(_:)``), with options chosen from how it is connected and, for
  /// u-blox, from what identification learned (M8 and older or M9 and later). ``nmea`` gives
  /// ``GenericNMEACommandSet``, which writes nothing. `binaryMessages` are the UBX messages a
  /// u-blox receiver is told to send beside its NMEA (``UbloxOptions/binaryMessages``); other
  /// families have none.
  public func commandSet(
    interface: HostInterface, identification: ChipsetIdentification? = nil,
    sentences: NMEASelection = .standard, binaryMessages: UBXMessageSelection = .none
  ) -> any ReceiverCommandSet {
    driver.commandSet(
      CommandSetOptions(
        interface: interface, identification: identification, sentences: sentences,
        binaryMessages: binaryMessages))
  }
}
