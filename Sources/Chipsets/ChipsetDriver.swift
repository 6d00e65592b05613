import NMEA

/// Everything the driver knows about one chipset family, in one type: its names, how it is
/// recognised, the bytes it is sent (wake, sleep at each depth, output selection, aiding), how
/// its acknowledgements are read, and what the time service and the simulator need of it.
///
/// Adding a family is one file with a type conforming to this protocol, its `ChipsetFamily`
/// static member, and one line in ``ChipsetRegistry/all`` (docs/chipsets.md, "Adding a
/// family"). Nothing outside the Chipsets module tests which family a receiver is: it asks
/// the driver.
///
/// Values are immutable; every requirement is a pure function of its arguments. The
/// requirements with a default (below) need only be written by a family that differs.
public protocol ChipsetDriver: Sendable {
  /// The identifier, declared as a static member of ``ChipsetFamily`` beside the driver.
  var family: ChipsetFamily { get }
  /// The name on the command line (`--chipset mtk`), lower case, unique in the registry.
  var cliName: String { get }
  /// Other spellings accepted on the command line, lower case (`mediatek`, `u-blox`), each
  /// naming this family only.
  var aliases: [String] { get }
  /// Makers, lower case, whose modules are built on this family among others (`quectel`:
  /// MediaTek L70/L76/L80, CASIC L76K, Airoha LC76G). A maker names no family: the driver
  /// waits to identify the receiver as one of the maker's families
  /// (``ChipsetRegistry/drivers(maker:)``). Default none.
  var makers: [String] { get }
  /// A name for people (`MediaTek/Quectel`).
  var displayName: String { get }
  /// The maker identification names when nothing more specific was seen (`u-blox`).
  var vendor: String? { get }
  /// The `type_name` of the gpsd driver for this family, which gpsd clients show in a DEVICE
  /// report (`u-blox`, `MTK-3301`, `NMEA0183`).
  var gpsdDriverName: String { get }
  /// The rate, in bits per second, the family's receivers ship with on their UART.
  var factoryBaudRate: Int { get }
  /// Whether the family has any command; `false` only for generic NMEA, which is never
  /// written to. Default `true`.
  var hasCommands: Bool { get }
  /// Whether the family answers any command it is sent (SiRF answers none of its NMEA
  /// commands). Default ``hasCommands``.
  var acknowledgesCommands: Bool { get }
  /// Whether the sentences naming a second follow the pulse that starts it (the time
  /// service). Default ``PulseOrder/sentencesFollowPulse``.
  var pulseOrder: PulseOrder { get }
  /// The protocol name the Linux kernel's GNSS subsystem gives receivers of this family (the
  /// `type` attribute, drivers/gnss/core.c `gnss_type_names`: `UBX`, `MTK`, `SiRF`); `nil`
  /// when it has none. Default `nil`.
  var kernelGNSSType: String? { get }
  /// Why a receiver of this family may keep talking after a sleep that expects silence, for
  /// the error that says it is awake; `nil` when the family has no known reason. Default
  /// `nil`.
  var keptTalkingReason: String? { get }
  /// For a family whose command set never sleeps (nothing the serial line can undo): the raw
  /// command (`PSRF117,16`) that sleeps it anyway until its wake pin, for advice; `nil` when
  /// none. Default `nil`.
  var pinOnlySleepCommand: String? { get }

  // MARK: Commands

  /// The command set for a receiver of this family connected as `options` say: its wake,
  /// its sleeps (``ReceiverCommandSet/sleep(for:)`` chooses one per ``SleepContext``: which
  /// depths exist and what wakes each) and its output selection.
  func commandSet(_ options: CommandSetOptions) -> any ReceiverCommandSet
  /// The sentences of `selection` this family has no way to switch on.
  func unsupported(_ selection: NMEASelection) -> [NMEASentenceType]
  /// The step for a command a person typed (`serialgps send`): framed, checksummed, with the
  /// acknowledgement it gets. Default: an NMEA sentence (``RawCommand/nmeaStep(_:)``).
  func rawStep(_ text: String) throws(ChipsetCommandError) -> CommandStep
  /// The acknowledgement a command with this NMEA address (`PMTK314`) gets from this family,
  /// or `nil` when the address is not the family's or is not answered. Default `nil`.
  func expectedAcknowledgement(forAddress address: Substring) -> AcknowledgementExpectation?

  // MARK: Aiding

  /// Whether the family takes aiding (time, position) at a warm or cold start. Default
  /// `false`.
  var takesAiding: Bool { get }
  /// The command telling the receiver `content` at `now` (time first, then the position:
  /// ``WakePlan/aidingSteps(for:family:acknowledged:)`` orders them); `nil` when the family
  /// takes no such aiding or has nothing to say at `now`. `acknowledged`: whether the
  /// receiver was asked to answer aiding (u-blox `ackAiding`). Default `nil`.
  func aiding(_ content: TimedCommand.Content, at now: UTCTimestamp, acknowledged: Bool)
    -> AidingCommand?

  // MARK: Acknowledgements

  /// The acknowledgement `sentence` is, if it is one of this family's (`$PMTK001,314,3`):
  /// read from the sentence's fields, no type of its own needed. Default `nil`.
  func acknowledgement(in sentence: Sentence) -> ReceiverAcknowledgement?
  /// The acknowledgement a binary frame is, if it is one of this family's. Default `nil`.
  func acknowledgement(in frame: Frame) -> ReceiverAcknowledgement?
  /// How an acknowledgement of `command` (a ``CommandReply/command``) looks, for logs and
  /// error messages (`$PMTK001,314,<flag>`). Default: "<family> acknowledgement of <command>".
  func acknowledgementDescription(command: String) -> String

  // MARK: Identification

  /// What `sentence` (a proprietary or `TXT` sentence, parsed) says of this family, without
  /// anything having been written: `nil` when nothing. Default `nil`.
  func evidence(in sentence: Sentence) -> ChipsetEvidence?
  /// What a binary frame of a kind the identifier has no rule of its own for says of this
  /// family (a CASIC frame of a CASIC receiver); UBX and SiRF frames are the identifier's.
  /// Default `nil`.
  func evidence(in frame: Frame) -> ChipsetEvidence?
  /// The poll, opt-in (`--chipset probe`), that only this family answers and every other
  /// receiver ignores, and changes no setting; its answer is recognised by ``evidence(in:)``
  /// (or the identifier's binary rules). `nil` when the family has none. Default `nil`.
  var probe: [UInt8]? { get }
  /// What ``probe`` asks, for logs (`$PMTK605`). Default empty.
  var probeSummary: String { get }
}

extension ChipsetDriver {
  public var hasCommands: Bool { true }
  public var makers: [String] { [] }
  public var kernelGNSSType: String? { nil }
  public var keptTalkingReason: String? { nil }
  public var pinOnlySleepCommand: String? { nil }
  public var acknowledgesCommands: Bool { hasCommands }
  public var pulseOrder: PulseOrder { .sentencesFollowPulse }
  public var takesAiding: Bool { false }
  public var vendor: String? { nil }
  public func rawStep(_ text: String) throws(ChipsetCommandError) -> CommandStep {
    try RawCommand.nmeaStep(text)
  }
  public func expectedAcknowledgement(forAddress address: Substring)
    -> AcknowledgementExpectation?
  { nil }
  public func aiding(_ content: TimedCommand.Content, at now: UTCTimestamp, acknowledged: Bool)
    -> AidingCommand?
  { nil }
  public func acknowledgement(in sentence: Sentence) -> ReceiverAcknowledgement? { nil }
  public func acknowledgement(in frame: Frame) -> ReceiverAcknowledgement? { nil }
  public func acknowledgementDescription(command: String) -> String {
    "\(displayName) acknowledgement of \(command)"
  }
  public func evidence(in sentence: Sentence) -> ChipsetEvidence? { nil }
  public func evidence(in frame: Frame) -> ChipsetEvidence? { nil }
  public var probe: [UInt8]? { nil }
  public var probeSummary: String { "" }
}

/// How a receiver is connected and what is known of it, for building its command set.
public struct CommandSetOptions: Sendable, Hashable {
  public var interface: HostInterface
  /// What identification learned (for u-blox, its generation).
  public var identification: ChipsetIdentification?
  public var sentences: NMEASelection
  /// The UBX messages a u-blox receiver is told to send beside its NMEA; other families
  /// ignore them.
  public var binaryMessages: UBXMessageSelection

  public init(
    interface: HostInterface, identification: ChipsetIdentification? = nil,
    sentences: NMEASelection = .standard, binaryMessages: UBXMessageSelection = .none
  ) {
    self.interface = interface
    self.identification = identification
    self.sentences = sentences
    self.binaryMessages = binaryMessages
  }
}

/// One aiding command: its bytes, what it says, and what answers it.
public struct AidingCommand: Sendable, Hashable {
  public var bytes: [UInt8]
  public var summary: String
  public var acknowledgement: AcknowledgementExpectation

  public init(bytes: [UInt8], summary: String, acknowledgement: AcknowledgementExpectation) {
    self.bytes = bytes
    self.summary = summary
    self.acknowledgement = acknowledgement
  }
}

/// What one sentence says of a family: how sure it makes identification, and the details it
/// names. The identifier keeps details per family, so one stray sentence cannot mix two
/// receivers' details.
public struct ChipsetEvidence: Sendable, Hashable {
  /// How sure the sentence makes identification; `nil` when it only adds details.
  public var confidence: IdentificationConfidence?
  /// What was seen, for the evidence lines (`$PMTK001 acknowledgement`).
  public var what: String
  public var vendor: String?
  public var model: String?
  public var firmware: String?
  public var hardware: String?
  /// Whether the details only fill what is not known yet (a hint's details never replace a
  /// firmware query's); the vendor is always taken.
  public var fillsOnly: Bool = false

  public init(
    confidence: IdentificationConfidence?, what: String, vendor: String? = nil,
    model: String? = nil, firmware: String? = nil, hardware: String? = nil
  ) {
    self.confidence = confidence
    self.what = what
    self.vendor = vendor
    self.model = model
    self.firmware = firmware
    self.hardware = hardware
  }
}

/// Whether a receiver sends the sentences naming a second after the pulse that starts it, or
/// before.
public enum PulseOrder: Sendable, Hashable {
  /// The pulse marks the start of second S and the epoch stamped S follows it, some
  /// milliseconds to most of a second later. Every receiver of the families SerialGPS speaks
  /// does this with NMEA (docs/time.md); it is also what gpsd assumes.
  case sentencesFollowPulse
  /// The epoch stamped S arrives before the pulse that starts S: the receiver announces the
  /// coming second (as some timing receivers' binary messages do, u-blox's `UBX-TIM-TP`
  /// among them).
  case sentencesPrecedePulse

  /// The order of a chipset family's NMEA output.
  public static func of(_ family: ChipsetFamily) -> PulseOrder { family.driver.pulseOrder }
}

/// The one list of chipset drivers: every family the driver speaks, in the order help texts
/// name them and the probe polls them.
public enum ChipsetRegistry {
  /// Every driver. Adding a family adds one line here.
  public static let all: [any ChipsetDriver] = [
    GenericNMEADriver(),
    UbloxDriver(),
    MediaTekDriver(),
    SiRFDriver(),
    CASICDriver(),
    AirohaDriver(),
  ]

  /// The driver of `family`; the generic NMEA driver (no commands) for an unregistered one.
  public static func driver(for family: ChipsetFamily) -> any ChipsetDriver {
    all.first { $0.family == family } ?? GenericNMEADriver()
  }

  /// The one driver that answers to `name`: its command-line name, its family's identifier
  /// (`mediatek`) or an alias, ignoring case; `nil` for none.
  public static func driver(cliName name: String) -> (any ChipsetDriver)? {
    let lower = name.lowercased()
    return all.first { $0.cliName == lower || $0.family.rawValue.lowercased() == lower }
      ?? all.first { $0.aliases.contains(lower) }
  }

  /// The drivers of the families `maker` builds modules on (``ChipsetDriver/makers``), in the
  /// registry's order; empty when `maker` is no maker's name.
  public static func drivers(maker: String) -> [any ChipsetDriver] {
    let lower = maker.lowercased()
    return all.filter { $0.makers.contains(lower) }
  }

  /// The families with commands, as the command line names them: `ublox|mtk|sirf`.
  public static var commandableNames: String {
    all.filter(\.hasCommands).map(\.cliName).joined(separator: "|")
  }

  /// Every command-line name, the families with commands first: `ublox|mtk|sirf|nmea`.
  public static var allNames: String {
    (all.filter(\.hasCommands) + all.filter { !$0.hasCommands }).map(\.cliName)
      .joined(separator: "|")
  }

  /// Every maker's name (``ChipsetDriver/makers``) once, in the registry's order: `quectel`.
  public static var makerNames: [String] {
    var names: [String] = []
    for maker in all.flatMap(\.makers) where !names.contains(maker) { names.append(maker) }
    return names
  }

  /// The command-line names in prose, for help texts: `ublox, mtk, sirf or nmea`; the
  /// families with commands only (`ublox, mtk or sirf`) without `generic`.
  public static func namesInProse(generic: Bool = true) -> String {
    let names =
      all.filter(\.hasCommands).map(\.cliName)
      + (generic ? all.filter { !$0.hasCommands }.map(\.cliName) : [])
    return prose(names, "or")
  }

  /// How to name each of `families` on the command line, for a message:
  /// `--chipset mtk (MediaTek/Quectel), casic (…) or airoha (…)`.
  public static func choices(_ families: [ChipsetFamily]) -> String {
    "--chipset " + prose(families.map { "\($0.cliName) (\($0.displayName))" }, "or")
  }

  /// `a, b or c` (with `conjunction` "or"), for the lists in messages; empty for none.
  public static func prose(_ items: [String], _ conjunction: String) -> String {
    guard let last = items.last else { return "" }
    return items.count == 1
      ? last : items.dropLast().joined(separator: ", ") + " \(conjunction) " + last
  }

}
