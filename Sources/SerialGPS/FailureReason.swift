import Chipsets
import SerialPort

/// Why a receiver is disconnected, or why a command failed: a ``Kind`` an app can act on, and
/// a message for people that names the device and says what to do.
///
/// ```swift
/// if case .status(.disconnected(let reason)) = event, reason.kind == .permissionDenied {
///   showHelp(reason.message)   // "Permission denied opening /dev/ttyUSB0 … Add your user to …"
/// }
/// ```
public struct FailureReason: Sendable, Hashable, CustomStringConvertible {
  /// What kind of trouble it is. The raw values are stable tokens, for logs and machines.
  public enum Kind: String, Sendable, Hashable, CaseIterable {
    /// The device node does not exist (not plugged in, or a wrong name).
    case missing
    /// This process may not open the device (its group, a udev rule).
    case permissionDenied = "permission-denied"
    /// Another program holds the device exclusively (gpsd, ModemManager), or another process
    /// owns it (another serialgps, minicom: the message names its PID and command).
    case busy
    /// The device went away (unplugged, hung up), or its node has no device behind it.
    case unplugged
    /// The path is not a serial port.
    case notASerialPort = "not-a-serial-port"
    /// The port opened but nothing recognisable came from it at any rate: not a receiver, or
    /// one that is off.
    case noData = "no-data"
    /// No receiver of those asked for is attached (discovery), or a remote receiver is not
    /// connected to its board.
    case notAttached = "not-attached"
    /// A remote receiver cannot be reached: its board is offline, or the broker is.
    case unreachable
    /// The receiver refused a command (`UBX-ACK-NAK`, a `$PMTK001` flag other than 3), or
    /// ignored one whose effect is silence (it kept sending after `UBX-RXM-PMREQ`).
    case rejected
    /// A command went unanswered and the receiver fell silent after it: asleep already (a
    /// standby whose answer was lost), or not woken.
    case noAnswer = "no-answer"
    /// A command went unanswered every time while the receiver kept talking: it does not
    /// speak that command language, so the chipset chosen is most likely not its own.
    case wrongChipset = "wrong-chipset"
    /// Anything else (a baud rate the driver refuses, an I/O error, a connector's own error).
    case other
  }

  public var kind: Kind
  /// What happened and what to do, for people, in an app developer's words where it says what
  /// to set (``GPSReceiver/Options``); ``message(in:)`` gives it in serialgps's options.
  public var message: String
  /// The message in serialgps's words, when it says what to set; `nil`: the same.
  private var commandLineMessage: String?

  /// A reason; `commandLine` is the message in serialgps's words (`--chipset ublox`) when
  /// `message` names the Swift API (`chipset: .family(…)`).
  public init(_ kind: Kind, _ message: String, commandLine: String? = nil) {
    self.kind = kind
    self.message = message
    self.commandLineMessage = commandLine
  }

  /// The message in the words of whoever reads it.
  public func message(in vocabulary: MessageVocabulary) -> String {
    vocabulary == .commandLine ? commandLineMessage ?? message : message
  }

  /// The reason for an error a connector or a connection threw: classified when it is one
  /// the package knows (``SerialPortError``, the discovering connector's, any
  /// ``FailureReasonConvertible``), ``Kind/other`` otherwise; the message is the error's
  /// description either way.
  public init(_ error: any Error) {
    if let known = error as? any FailureReasonConvertible {
      self = known.failureReason
    } else {
      self.init(.other, String(describing: error))
    }
  }

  public var description: String { message }
}

/// Whose words a message uses where it says what to set: an app developer's, who sets
/// ``GPSReceiver/Options`` (`chipset: .family(…)`), or a person's at a terminal, who gives
/// serialgps its options (`--chipset ublox`).
public enum MessageVocabulary: Sendable, Hashable {
  /// The Swift API's names: the default of every `description`.
  case swiftAPI
  /// serialgps's command-line options.
  case commandLine
}

/// An error that says which ``FailureReason/Kind`` it is, so that subscribers get it typed.
/// A connector of an app's own may conform its errors; others arrive as
/// ``FailureReason/Kind/other``.
public protocol FailureReasonConvertible: Error {
  var failureReason: FailureReason { get }
}

extension SerialPortError: FailureReasonConvertible {
  public var failureReason: FailureReason {
    let kind: FailureReason.Kind
    switch reason {
    case .missing: kind = .missing
    case .permissionDenied: kind = .permissionDenied
    case .busy, .inUse: kind = .busy
    case .disconnected: kind = .unplugged
    case .notATerminal: kind = .notASerialPort
    case .nothingRecognised: kind = .noData
    case .unsupportedBaudRate, .closed, .writeTimedOut, .interrupted, .system: kind = .other
    }
    return FailureReason(kind, description)
  }
}

extension DiscoveringConnector.NoReceiver: FailureReasonConvertible {
  public var failureReason: FailureReason { FailureReason(.notAttached, description) }
}

extension DiscoveringConnector.DeviceGone: FailureReasonConvertible {
  public var failureReason: FailureReason { FailureReason(.unplugged, description) }
}

extension DiscoveringConnector.NotAReceiver: FailureReasonConvertible {
  public var failureReason: FailureReason { FailureReason(.noData, description) }
}

extension DiscoveringConnector.DeviceInUse: FailureReasonConvertible {
  public var failureReason: FailureReason { FailureReason(.busy, description) }
}

/// Why the driver sends a receiver no power commands, and what to set so that it does.
///
/// The driver never writes to a receiver whose chipset it does not know (a port may hold a
/// modem, or another maker's receiver that a stray command would upset). Such a receiver is
/// only opened and closed: one in standby is not woken, one that streams is not put to
/// standby. Subscribers are told so at power-on and again at power-off, with what would let
/// the driver act: naming the chipset (``ChipsetChoice/family(_:)``), or asking the receiver
/// (``ChipsetChoice/probe``).
public struct CommandsWithheld: Sendable, Hashable, CustomStringConvertible {
  /// When the commands were withheld.
  public enum Moment: Sendable, Hashable {
    /// At power-on: a receiver in standby is not woken.
    case powerOn
    /// At power-off: the receiver is left running; only its port is closed.
    case powerOff
  }

  public var moment: Moment
  /// What listening learned, if anything: a maker the driver has no commands for (Garmin,
  /// SkyTraq …), or a family hinted too weakly to write to (Quectel `$PQ…`, the format of
  /// its sentences). `nil`: nothing heard names a maker.
  public var identification: ChipsetIdentification?
  /// Whether the receiver was asked (``ChipsetChoice/probe``) and answered neither poll.
  public var probed: Bool
  /// The families the user allowed (``ChipsetChoice/oneOf(maker:families:)``), none of which
  /// what the receiver said has named yet; empty when the user named none.
  public var choices: [ChipsetFamily]

  public init(
    moment: Moment, identification: ChipsetIdentification?, probed: Bool = false,
    choices: [ChipsetFamily] = []
  ) {
    self.moment = moment
    self.identification = identification
    self.probed = probed
    self.choices = choices
  }

  /// The family the hints point at, when they point at one with commands: what to set if it
  /// is right.
  public var likelyFamily: ChipsetFamily? {
    guard let identification, identification.family.hasCommands,
      identification.confidence > .none
    else { return nil }
    return identification.family
  }

  /// What to set, in an app developer's words: `chipset: .family(…)` when a hint
  /// names the family, else any family or `.probe`.
  public var advice: String { advice(in: .swiftAPI) }

  /// What to set, in the words of whoever reads it: `chipset: .family(…)` for an app
  /// developer, `--chipset mtk` at the terminal.
  public func advice(in vocabulary: MessageVocabulary) -> String {
    let swift = vocabulary == .swiftAPI
    let commandable = ChipsetRegistry.all.filter(\.hasCommands).map(\.family)
    if !choices.isEmpty {
      return "what it sent has not said which of "
        + ChipsetRegistry.prose(choices.map(\.displayName), "and") + " it is; name it: "
        + (swift
          ? "set chipset: "
            + ChipsetRegistry.prose(choices.map { ".family(.\($0.rawValue))" }, "or")
          : "give " + ChipsetRegistry.choices(choices))
    }
    if probed {
      let probing = ChipsetRegistry.all.filter { $0.probe != nil }
      let polls = probing.map(\.probeSummary)
      return "it answered "
        + (polls.count == 2
          ? "neither \(polls[0]) nor \(polls[1])" : "none of " + ChipsetRegistry.prose(polls, "or"))
        + ", so it is no " + ChipsetRegistry.prose(probing.map(\.displayName), "or")
        + " receiver (or one that did not wake); if you know its family, "
        + (swift
          ? "set chipset: "
            + ChipsetRegistry.prose(commandable.map { ".family(.\($0.rawValue))" }, "or")
            + ", or .family(.\(ChipsetFamily.nmea.rawValue)) to say it has none"
          : "give --chipset \(ChipsetRegistry.commandableNames), or --chipset "
            + "\(ChipsetFamily.nmea.cliName) to say it has none")
    }
    if let family = likelyFamily {
      return "if it is a \(family.displayName) receiver, as \(hintSource) suggests, "
        + (swift
          ? "set chipset: .family(.\(family.rawValue)); or chipset: .probe to ask it"
          : "give --chipset \(family.cliName); or --chipset probe to ask it")
    }
    let queries = ChipsetRegistry.all.filter { $0.probe != nil }.count
    return
      (swift
      ? "set chipset: "
        + ChipsetRegistry.prose(commandable.map { ".family(.\($0.rawValue))" }, "or")
        + " to name its family, or chipset: .probe to ask it"
      : "give --chipset \(ChipsetRegistry.commandableNames) to name its family, or --chipset "
        + "probe to ask it")
      + " (writes \(Self.count(queries)) queries to the device)"
  }

  static func count(_ number: Int) -> String {
    let words = ["no", "one", "two", "three", "four", "five", "six"]
    return number < words.count ? words[number] : String(number)
  }

  private var hintSource: String {
    let prefix = "\(likelyFamily?.displayName ?? ""): "
    guard let evidence = identification?.evidence.last(where: { $0.hasPrefix(prefix) }) else {
      return "what it sent"
    }
    return "its " + evidence.dropFirst(prefix.count)
  }

  public var description: String { description(in: .swiftAPI) }

  /// What was withheld and what to set, in the words of whoever reads it.
  public func description(in vocabulary: MessageVocabulary) -> String {
    var known = "its chipset is not known"
    if let vendor = identification?.vendor, likelyFamily == nil {
      known = "it is \(vendor)'s, a maker the driver has no commands for"
    }
    switch moment {
    case .powerOn:
      return "no power commands: \(known), so nothing is written to it and a receiver in "
        + "standby stays asleep; \(advice(in: vocabulary))"
    case .powerOff:
      return "not put to standby: \(known), so it keeps running with its port closed; "
        + advice(in: vocabulary)
    }
  }
}
