import NMEA

extension ChipsetFamily {
  /// u-blox (UBX binary protocol, `$PUBX`).
  public static let ublox = ChipsetFamily(rawValue: "ublox")
}

/// The u-blox driver: UBX commands (``UbloxCommandSet``: the generation identification
/// learned decides `UBX-CFG-MSG` or `UBX-CFG-VALSET`, the port decides GNSS stop or backup),
/// acknowledged by `UBX-ACK-ACK`/`NAK` and, for aiding, `UBX-MGA-ACK-DATA0`. Identified by
/// any UBX frame, `$PUBX`, and its start-up banner (``ChipsetIdentifier``'s u-blox rules, which
/// also keep the protocol version); polled with `UBX-MON-VER`.
public struct UbloxDriver: ChipsetDriver {
  public init() {}
  public var family: ChipsetFamily { .ublox }
  public var cliName: String { "ublox" }
  public var aliases: [String] { ["u-blox", "ubx"] }
  public var displayName: String { "u-blox" }
  public var vendor: String? { "u-blox" }
  /// gpsd's drivers/driver_ubx.c.
  public var gpsdDriverName: String { "u-blox" }
  public var factoryBaudRate: Int { 9600 }
  public var takesAiding: Bool { true }
  public var kernelGNSSType: String? { "UBX" }
  public var keptTalkingReason: String? {
    "a u-blox receiver ignores UBX-RXM-PMREQ while its USB port is connected"
  }

  /// M8 and older unless identification says otherwise; GNSS stop on USB, backup on a UART.
  public func commandSet(_ options: CommandSetOptions) -> any ReceiverCommandSet {
    let generation = options.identification?.ubloxGeneration ?? .m8AndOlder
    return UbloxCommandSet(
      UbloxOptions(
        generation: generation, port: options.interface == .usb ? .usb : .uart1,
        sentences: options.sentences, binaryMessages: options.binaryMessages))
  }

  /// Every standard sentence has a `UBX-CFG-MSG` class 0xF0 ID and a `CFG-MSGOUT` key.
  public func unsupported(_ selection: NMEASelection) -> [NMEASentenceType] { [] }

  /// UBX as hex bytes, class and ID first (`06 04 00 00 08 00`), a message name and payload
  /// bytes (`CFG-RST 00 00 08 00`), or a whole frame starting `B5 62`; anything else is an
  /// NMEA command such as `PUBX,40,GLL,0,0,0,0`.
  public func rawStep(_ text: String) throws(ChipsetCommandError) -> CommandStep {
    if let step = try RawCommand.ubxStep(text) { return step }
    return try RawCommand.nmeaStep(text)
  }

  public func aiding(_ content: TimedCommand.Content, at now: UTCTimestamp, acknowledged: Bool)
    -> AidingCommand?
  {
    switch content {
    case .time(let accuracy):
      return AidingCommand(
        bytes: Aiding.ubloxTime(now, accuracy: accuracy),
        summary: "UBX-MGA-INI-TIME_UTC (aiding: UTC)",
        acknowledgement: acknowledged ? .mga(.mgaIni, messageType: 0x10) : .none)
    case .position(let known):
      guard let bytes = known.aiding(at: now).flatMap(Aiding.ubloxPosition) else { return nil }
      return AidingCommand(
        bytes: bytes,
        summary:
          "UBX-MGA-INI-POS_LLH (aiding: the last position\(TimedCommand.within(known, now)))",
        acknowledgement: acknowledged ? .mga(.mgaIni, messageType: 0x01) : .none)
    }
  }

  /// `UBX-ACK-ACK`/`NAK` and `UBX-MGA-ACK-DATA0` (``ReceiverAcknowledgement/init(_:)-(UBXFrameView)``).
  public func acknowledgement(in frame: Frame) -> ReceiverAcknowledgement? {
    guard case .ubx(let view) = frame else { return nil }
    return ReceiverAcknowledgement(view)
  }

  public func evidence(in sentence: Sentence) -> ChipsetEvidence? {
    switch sentence {
    case .pubxPosition, .pubxSatellites, .pubxTime:
      return ChipsetEvidence(confidence: .high, what: "$PUBX sentence")
    case .unknown(let unknown) where unknown.talker == .proprietary && unknown.address == "PUBX":
      return ChipsetEvidence(confidence: .high, what: "$PUBX sentence")
    default:
      return nil
    }
  }

  /// `B5 62 0A 04 00 00 0E 34`: the `UBX-MON-VER` poll, answered by `UBX-MON-VER` (software,
  /// hardware, `PROTVER`, `MOD`).
  public var probe: [UInt8]? { UbloxCommandSet.versionQuery.bytes }
  public var probeSummary: String { "UBX-MON-VER" }
}
