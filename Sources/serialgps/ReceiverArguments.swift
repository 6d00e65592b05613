import Chipsets
import SerialGPS
import SerialPort

/// The options of the receiver a command drives, read in one place for every command that
/// has them (watch, locate, serve, record, send, replay): `--chipset`, `--baud`, `--linger`,
/// `--ubx`, `--wake-pin` and `--sleep`. A command starts from its own preset (which of them it
/// takes, which names `--chipset` accepts, its defaults), hands each argument to
/// ``take(_:from:)``, and reads the values here; the same value means the same, and the same
/// mistake gets the same message, whichever command it is given to.
struct ReceiverArguments: Equatable {
  /// The receiver options a command takes; the others are unknown options to it.
  struct Accepted: OptionSet, Equatable {
    let rawValue: Int
    static let chipset = Accepted(rawValue: 1 << 0)
    static let baud = Accepted(rawValue: 1 << 1)
    static let linger = Accepted(rawValue: 1 << 2)
    static let ubx = Accepted(rawValue: 1 << 3)
    static let wakePin = Accepted(rawValue: 1 << 4)
    static let sleep = Accepted(rawValue: 1 << 5)
  }

  /// The names `--chipset` takes besides the families' (``ChipsetFamily/cliNames``).
  enum ChipsetNames: Equatable {
    /// A family only: the command needs to know which commands to send, or none.
    case families
    /// A family, or `auto` (identify it from what it says).
    case familiesOrAuto
    /// A family, `auto`, or `probe` (ask it when what it says names no family).
    case familiesAutoOrProbe
  }

  let accepted: Accepted
  let chipsetNames: ChipsetNames
  /// `--chipset NAME`; `nil` for `auto`, `probe` or none given.
  var family: ChipsetFamily?
  /// `--chipset probe`.
  var probes = false
  /// `--chipset MAKER` (`quectel`), where the command identifies among the maker's families.
  var maker: String?
  /// `--baud N`; `nil` for `auto` (listen for the rate).
  var baud: BaudRate?
  /// `--linger SECONDS`: how long the receiver stays powered after its last subscription.
  var linger: Duration
  /// `--ubx`: the UBX messages a u-blox receiver adds to its NMEA.
  var ubx: UBXMessageSelection = .none
  /// `--wake-pin CHIP:LINE` or `control:FIFO`: the wake line wired to the receiver.
  var wakePin: String?
  /// `--sleep deepest|standby`.
  var sleepDepth: SleepDepth = .deepest

  init(
    accepting accepted: Accepted, chipsetNames: ChipsetNames = .families, baud: BaudRate? = nil,
    linger: Duration = GPSReceiver.Options().linger
  ) {
    self.accepted = accepted
    self.chipsetNames = chipsetNames
    self.baud = baud
    self.linger = linger
  }

  /// `watch`: every receiver option; it is the receiver's only subscriber, so by default
  /// nothing is kept warm after it stops.
  static let watch = ReceiverArguments(
    accepting: [.chipset, .baud, .linger, .ubx, .wakePin, .sleep],
    chipsetNames: .familiesAutoOrProbe, linger: .zero)
  /// `locate`: which receiver and how fast it talks.
  static let locate = ReceiverArguments(
    accepting: [.chipset, .baud], chipsetNames: .familiesAutoOrProbe)
  /// `serve`: every receiver option, for each receiver it serves.
  static let serve = ReceiverArguments(
    accepting: [.chipset, .baud, .linger, .ubx, .wakePin, .sleep], chipsetNames: .familiesOrAuto)
  /// `record`: the chipset whose commands wake the receiver, and the rate.
  static let record = ReceiverArguments(accepting: [.chipset, .baud])
  /// `send`: the chipset whose commands are sent, and the rate (9600 unless told).
  static let send = ReceiverArguments(accepting: [.chipset, .baud], baud: .b9600)
  /// `replay`: the chipset the simulated receiver behaves like.
  static let replay = ReceiverArguments(accepting: [.chipset])

  /// The chipset as the driver takes it.
  var chipset: ChipsetChoice {
    if probes { return .probe }
    if let maker, let choice = ChipsetChoice(cliName: maker) { return choice }
    return family.map { .family($0) } ?? .automatic
  }

  /// The rate as a serial connector takes it.
  var baudSetting: SerialConnector.BaudSetting { baud.map { .fixed($0) } ?? .automatic() }

  /// Takes `argument` and its value when it is one of the receiver options this command
  /// takes; `false` otherwise (the command's own options, or an unknown one).
  mutating func take(_ argument: String, from reader: inout ArgumentReader) throws(UsageMessage)
    -> Bool
  {
    switch argument {
    case "--chipset" where accepted.contains(.chipset):
      try takeChipset(from: &reader)
    case "--baud" where accepted.contains(.baud):
      let text = try reader.value("--baud needs a rate or auto", allowingEmpty: true)
      if text == "auto" {
        baud = nil
        break
      }
      guard let rate = Int(text), BaudRate(rate).isSupported else {
        let rates = BaudRate.supported.map(\.description).joined(separator: ", ")
        throw UsageMessage("--baud \(text) is not a rate serialgps can set; use \(rates) or auto")
      }
      baud = BaudRate(rate)
    case "--linger" where accepted.contains(.linger):
      // From 0 to a day: longer is certainly a typo.
      linger = try reader.seconds(
        in: 0...86_400, allowingZero: true,
        "--linger needs a number of seconds from 0 to 86400, such as 5 or 0.5")
    case "--ubx" where accepted.contains(.ubx):
      let name = try reader.value(
        "--ubx needs \(UBXMessageSelection.cliNames)", allowingEmpty: true)
      guard let selection = UBXMessageSelection(cliName: name) else {
        throw UsageMessage(
          "unknown --ubx '\(name)'; use \(UBXMessageSelection.cliNames) (navigation for u-blox "
            + "8 and later, legacy for u-blox 6 and older)")
      }
      ubx = selection
    case "--wake-pin" where accepted.contains(.wakePin):
      wakePin = try reader.value(
        "--wake-pin needs CHIP:LINE (the GPIO line wired to FORCE_ON, such as gpiochip0:17)")
    case "--sleep" where accepted.contains(.sleep):
      let value = try reader.value("--sleep needs deepest or standby")
      guard let depth = SleepDepth(rawValue: value) else {
        throw UsageMessage("--sleep takes deepest or standby, not \(value)")
      }
      sleepDepth = depth
    default:
      return false
    }
    return true
  }

  private mutating func takeChipset(from reader: inout ArgumentReader) throws(UsageMessage) {
    let name = try reader.value("--chipset needs a name", allowingEmpty: true)
    maker = nil
    if chipsetNames != .families, name == "auto" || name == "automatic" {
      (family, probes) = (nil, false)
    } else if chipsetNames == .familiesAutoOrProbe, name == "probe" {
      (family, probes) = (nil, true)
    } else if let named = ChipsetFamily(cliName: name) {
      (family, probes) = (named, false)
    } else if case let makers = ChipsetRegistry.drivers(maker: name).map(\.family),
      !makers.isEmpty
    {
      // Identifying among a maker's families needs a command that listens first.
      guard chipsetNames == .familiesAutoOrProbe else {
        throw UsageMessage(
          "'\(name)' makes receivers of more than one chipset family; name the family: "
            + ChipsetRegistry.choices(makers))
      }
      (family, probes, maker) = (nil, false, name)
    } else {
      let others: String
      switch chipsetNames {
      case .families: others = ""
      case .familiesOrAuto: others = " or auto"
      case .familiesAutoOrProbe: others = ", auto or probe"
      }
      throw UsageMessage("unknown chipset '\(name)'; use \(ChipsetFamily.cliNames)\(others)")
    }
  }

  /// Sets what the driver's options take from these (the chipset, and those of linger, UBX
  /// messages and sleep depth this command takes); the wake line is made apart, as making it
  /// opens the GPIO chip (``Watch/wakeLine(_:)``).
  func apply(to options: inout GPSReceiver.Options) {
    if accepted.contains(.chipset) { options.chipset = chipset }
    if accepted.contains(.linger) { options.linger = linger }
    if accepted.contains(.ubx) { options.ubxMessages = ubx }
    if accepted.contains(.sleep) { options.sleepDepth = sleepDepth }
  }
}
