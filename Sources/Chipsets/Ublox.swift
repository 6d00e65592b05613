/// Which configuration interface a u-blox receiver speaks.
public enum UbloxGeneration: String, Sendable, Hashable, CustomStringConvertible {
  /// u-blox 5 to 8 (protocol versions up to 23.01): sentences are selected with
  /// `UBX-CFG-MSG`.
  case m8AndOlder
  /// u-blox 9 and later (M9, F9, M10; protocol 27 and later): the configuration interface,
  /// `UBX-CFG-VALSET` with `CFG-MSGOUT-*` keys. The M10 no longer accepts `UBX-CFG-MSG`.
  case m9AndLater

  /// The generation that speaks `protocolVersion`: 27.00 (ZED-F9P HPG 1.00) was the first
  /// with the configuration interface.
  public init(protocolVersion: UbloxProtocolVersion) {
    self = protocolVersion.major >= 27 ? .m9AndLater : .m8AndOlder
  }

  /// The generation of a `UBX-MON-VER` hardware version: `00040005` u-blox 5, `00040007`
  /// u-blox 6, `00070000` u-blox 7, `00080000` u-blox 8/M8, `00190000` u-blox 9 (M9 and
  /// F9), `000A0000` u-blox 10, `000B0000` X20; `nil` for anything else.
  public init?(hardwareVersion: String) {
    guard let series = UbloxGeneration.series(hardwareVersion: hardwareVersion) else {
      return nil
    }
    self = series >= 9 ? .m9AndLater : .m8AndOlder
  }

  /// The u-blox series number (5, 6, 7, 8, 9, 10, 20) of a `UBX-MON-VER` hardware version.
  public static func series(hardwareVersion: String) -> Int? {
    // Table after PX4 GPSDrivers (src/ubx.cpp, "known_boards"), which cites u-blox's own
    // answer on decoding the MON-VER hardware string.
    switch hardwareVersion.trimmingSpaces().uppercased() {
    case "00040005": return 5
    case "00040007": return 6
    case "00070000": return 7
    case "00080000": return 8
    case "00190000": return 9
    case "000A0000": return 10
    case "000B0000": return 20
    default: return nil
    }
  }

  public var description: String {
    switch self {
    case .m8AndOlder: return "u-blox 8 and older (UBX-CFG-MSG)"
    case .m9AndLater: return "u-blox 9 and later (UBX-CFG-VALSET)"
    }
  }
}

/// The u-blox port the host talks to; `UBX-CFG-VALSET` keys name the port.
public enum UbloxPort: String, Sendable, Hashable {
  case uart1
  case usb
}

/// How a u-blox receiver is powered off.
public enum UbloxPowerOffMode: String, Sendable, Hashable {
  /// `UBX-CFG-RST` reset mode 0x08, controlled GNSS stop: the GNSS engine stops, the
  /// receiver keeps answering and, on USB, stays enumerated. The default for USB.
  case gnssStop
  /// `UBX-RXM-PMREQ` backup: everything but the backup domain is switched off until an edge
  /// on UART RX wakes it. The receiver ignores it while USB is connected, so this is the
  /// default for UART-attached modules only.
  case backup
}

/// Options where u-blox hardware differs.
public struct UbloxOptions: Sendable, Hashable {
  public var generation: UbloxGeneration
  public var port: UbloxPort
  public var powerOffMode: UbloxPowerOffMode
  public var sentences: NMEASelection
  /// The UBX messages switched on at power-on; none by default.
  public var binaryMessages: UBXMessageSelection

  /// `powerOffMode` defaults to ``UbloxPowerOffMode/gnssStop`` on USB and
  /// ``UbloxPowerOffMode/backup`` on UART.
  public init(
    generation: UbloxGeneration = .m8AndOlder, port: UbloxPort = .uart1,
    powerOffMode: UbloxPowerOffMode? = nil, sentences: NMEASelection = .standard,
    binaryMessages: UBXMessageSelection = .none
  ) {
    self.generation = generation
    self.port = port
    self.powerOffMode = powerOffMode ?? (port == .usb ? .gnssStop : .backup)
    self.sentences = sentences
    self.binaryMessages = binaryMessages
  }
}

/// u-blox commands: UBX frames for GNSS start/stop, backup, and sentence selection.
///
/// Power on: after backup, a burst of `0xFF` wakes the receiver (every byte is one falling
/// edge on RX, and `0xFF` can start neither a UBX nor an NMEA frame), then a settle time;
/// the sentences are selected, then the UBX messages (``UbloxOptions/binaryMessages``; each
/// acknowledged, which proves the receiver is awake); last,
/// `UBX-CFG-RST` reset mode 0x09 starts GNSS with `navBbrMask` 0x0000 (hot start, nothing
/// cleared); it does no harm on a receiver already running and also recovers one a previous
/// session left stopped.
///
/// Power off: `UBX-CFG-RST` reset mode 0x08 (controlled GNSS stop) or `UBX-RXM-PMREQ`
/// (backup, no timeout). Neither is acknowledged by current firmware; a backup is confirmed
/// by the receiver falling silent (``backupConfirmation``).
public struct UbloxCommandSet: ReceiverCommandSet {
  public let options: UbloxOptions

  public init(_ options: UbloxOptions = UbloxOptions()) {
    self.options = options
  }

  public var family: ChipsetFamily { .ublox }

  /// Bytes that wake a receiver from backup: any edge on UART RX does, and the bytes
  /// themselves are lost.
  public static let wakeBurst = [UInt8](repeating: 0xFF, count: 8)
  /// The wait after the wake burst before the next command. Not a figure u-blox states: the
  /// next step is acknowledged, so a receiver that needs longer costs one retry, not a
  /// failure.
  public static let wakeSettleMilliseconds = 500

  public var powerOnSteps: [CommandStep] {
    var steps: [CommandStep] = []
    if options.powerOffMode == .backup {
      steps.append(
        CommandStep(
          bytes: Self.wakeBurst,
          summary: "wake from backup: \(Self.wakeBurst.count) bytes of 0xFF on UART RX",
          settleMilliseconds: Self.wakeSettleMilliseconds))
    }
    steps += selectionSteps
    steps += binarySelectionSteps
    steps.append(Self.gnssStart)
    return steps
  }

  /// ``powerOnSteps`` with, where ``WakePlan`` says so, `UBX-MGA-INI-TIME_UTC` then
  /// `UBX-MGA-INI-POS_LLH` (time first, then position, as the u-blox 8 / M8 Receiver
  /// Description UBX-13003221 orders aiding) after the sentence selection, whose
  /// acknowledgements prove the receiver awake, and before the GNSS start, so that it arrives
  /// before the search. On u-blox 9 and later ``acknowledgeAiding`` goes first and each aiding
  /// message is acknowledged (`UBX-MGA-ACK-DATA0`), so that a lost one is written again with
  /// the time of its own writing. On u-blox 8 and older the aiding is not acknowledged: the
  /// switch there (`UBX-CFG-NAVX5` `ackAiding`) has a version per protocol version that the
  /// driver often does not know, and u-blox 5 to 7, which this generation also covers, have
  /// no MGA messages at all and ignore them, where an acknowledged step would fail.
  public func powerOnSteps(for context: WakeContext) -> [CommandStep] {
    let acknowledged = options.generation == .m9AndLater
    let aiding = WakePlan.aidingSteps(
      for: context, family: .ublox, acknowledged: acknowledged)
    var steps = powerOnSteps
    guard !aiding.isEmpty else { return steps }
    steps.insert(
      contentsOf: (acknowledged ? [Self.acknowledgeAiding] : []) + aiding, at: steps.count - 1)
    return steps
  }

  /// `CFG-NAVSPG-ACKAIDING` (key 0x10110025, L) = 1 by `UBX-CFG-VALSET`, RAM layer only: the
  /// receiver then answers every MGA message with `UBX-MGA-ACK-DATA0` (u-blox 9 and later;
  /// ZED-F9P Interface Description UBX-18010854, CFG-NAVSPG).
  public static let acknowledgeAiding = enableInRAM(
    [0x1011_0025], summary: "CFG-NAVSPG-ACKAIDING")

  public var powerOffSteps: [CommandStep] {
    switch options.powerOffMode {
    case .gnssStop: return [Self.gnssStop]
    case .backup: return [backupRequest]
    }
  }

  /// The shortest expected sleep for which backup beats GNSS stop on a UART: leaving backup
  /// costs the wake burst's 500 ms settle and the re-selection at the acquisition current
  /// (32 mA for an M8), about 16 mA·s, which a GNSS stop (about 5 mA, an estimate:
  /// docs/simulator.md) spends in some 3 s more than backup (30 µA); taken three times over.
  public static let backupWorthFrom: Duration = .seconds(10)

  /// Backup (`UBX-RXM-PMREQ`, no timeout) where ``UbloxOptions/powerOffMode`` allows it,
  /// unless `context` expects a sleep shorter than ``backupWorthFrom`` or asks for the
  /// standby, which is GNSS stop (`UBX-CFG-RST` 0x08: RAM kept, no wake burst). An unknown
  /// sleep gets backup too: any byte on RX ends it (NEO-M9N integration manual UBX-19014286
  /// R07 §3.11.4), so it is as certain to leave as GNSS stop and dearer only by the settle.
  /// Over USB it is GNSS stop always: the receiver ignores `PMREQ` there unless `force`,
  /// which would disable its USB port.
  public func sleep(for context: SleepContext) -> SleepChoice {
    let stop = SleepChoice(state: .gnssStopped, steps: [Self.gnssStop])
    guard options.powerOffMode == .backup, context.depth == .deepest else { return stop }
    if let expected = context.expected, expected < Self.backupWorthFrom { return stop }
    return SleepChoice(state: .backup, steps: [backupRequest])
  }

  public var powerProfile: PowerProfile {
    PowerProfile(
      offState: options.powerOffMode == .gnssStop ? .gnssStopped : .backup,
      wakesOverSerial: true,
      // NEO-M8 data sheet (UBX-15031086): hot start 1 s. NEO-M9N (UBX-19014285) and
      // ZED-F9P (UBX-17051259) data sheets: hot start 2 s.
      hotStartMilliseconds: options.generation == .m8AndOlder ? 1000 : 2000)
  }

  // MARK: - Commands

  /// `UBX-CFG-RST`: `navBbrMask` (U2), `resetMode` (U1), reserved (U1) (UBX-13003221
  /// §32.10.29). Reset mode 0x09 is controlled GNSS start; mask 0x0000 keeps all backup data
  /// (hot start).
  public static let gnssStart = CommandStep(
    bytes: UBX.unchecked(.cfgRst, payload: [0x00, 0x00, 0x09, 0x00]),
    summary: "UBX-CFG-RST controlled GNSS start (hot start)")

  /// `UBX-CFG-RST` reset mode 0x08, controlled GNSS stop, keeping all backup data.
  public static let gnssStop = CommandStep(
    bytes: UBX.unchecked(.cfgRst, payload: [0x00, 0x00, 0x08, 0x00]),
    summary: "UBX-CFG-RST controlled GNSS stop")

  /// `UBX-RXM-PMREQ` with no timeout: the 8-byte form (duration U4, flags X4 with `backup`,
  /// bit 1) for u-blox 8 and older, which wakes on UART RX by default; the 16-byte form
  /// (version, reserved, duration, flags `backup` | `force`, `wakeupSources` `uartrx`,
  /// bit 3) for u-blox 9 and later (UBX-18010854 §5.15.2, UBX-RXM-PMREQ). Confirmed by
  /// silence (``backupConfirmation``).
  public var backupRequest: CommandStep {
    switch options.generation {
    case .m8AndOlder:
      return CommandStep(
        bytes: UBX.unchecked(
          .rxmPmreq, payload: UBX.littleEndian(UInt32(0)) + UBX.littleEndian(UInt32(0x02))),
        summary: "UBX-RXM-PMREQ backup until UART RX activity",
        acknowledgement: Self.backupConfirmation)
    case .m9AndLater:
      let payload: [UInt8] =
        [0x00, 0x00, 0x00, 0x00] + UBX.littleEndian(UInt32(0)) + UBX.littleEndian(UInt32(0x06))
        + UBX.littleEndian(UInt32(0x08))
      return CommandStep(
        bytes: UBX.unchecked(.rxmPmreq, payload: payload),
        summary: "UBX-RXM-PMREQ backup until UART RX activity (wake source uartrx)",
        acknowledgement: Self.backupConfirmation)
    }
  }

  /// How a backup is confirmed: `UBX-RXM-PMREQ` has no answer, and a receiver in backup has
  /// its UART switched off, so it says nothing more; one that ignored the request (its USB
  /// port connected, the frame damaged on the line) goes on with its next epoch. What arrives
  /// in the first 500 ms is taken as sent before the request took (bytes already in the
  /// host's buffers); a byte in the 1.5 s after that, longer than an epoch at the default
  /// 1 Hz, means the receiver is awake.
  public static let backupConfirmation = AcknowledgementExpectation.silence(
    graceMilliseconds: 500, quietMilliseconds: 1500)

  /// The steps that switch the selected sentences on.
  public var selectionSteps: [CommandStep] {
    switch options.generation {
    case .m8AndOlder:
      return options.sentences.sentences.map { sentence in
        // The 3-byte form sets the rate on the port the command arrives on (UBX-13003221,
        // UBX-CFG-MSG "Set message rate (current port)"): right for USB and UART alike.
        CommandStep(
          bytes: UBX.unchecked(.cfgMsg, payload: [0xF0, Self.nmeaMessageID[sentence]!, 1]),
          summary: "UBX-CFG-MSG NMEA \(sentence.rawValue) once per epoch",
          acknowledgement: .ubx(.cfgMsg))
      }
    case .m9AndLater:
      guard !options.sentences.sentences.isEmpty else { return [] }
      let keys = options.sentences.sentences.map {
        Self.messageOutputKey($0, port: options.port)
      }
      let names = options.sentences.sentences.map(\.rawValue).joined(separator: ",")
      return [Self.enableInRAM(keys, summary: "CFG-MSGOUT-NMEA_ID_{\(names)}_\(portName)")]
    }
  }

  /// The port's name in configuration keys.
  var portName: String { options.port == .usb ? "USB" : "UART1" }

  /// `UBX-CFG-VALSET` setting each of `keys` (U1-sized) to 1: version 0, layers RAM only
  /// (bit 0), so the receiver's saved configuration is never changed, reserved U1[2], then key
  /// (U4) / value (U1) pairs (UBX-18010854, UBX-CFG-VALSET); acknowledged by UBX-ACK-ACK.
  static func enableInRAM(_ keys: [UInt32], summary: String) -> CommandStep {
    var payload: [UInt8] = [0x00, 0x01, 0x00, 0x00]
    for key in keys {
      payload += UBX.littleEndian(key)
      payload.append(1)
    }
    return CommandStep(
      bytes: UBX.unchecked(.cfgValset, payload: payload),
      summary: "UBX-CFG-VALSET \(summary) = 1 (RAM)", acknowledgement: .ubx(.cfgValset))
  }

  /// `UBX-MON-VER` poll (no payload). Only for a receiver already known to be u-blox, or one
  /// the user asked to be probed (``ChipsetProbe``): otherwise the driver identifies
  /// receivers by listening, never by writing.
  public static let versionQuery = CommandStep(
    bytes: UBX.unchecked(.monVer, payload: []), summary: "UBX-MON-VER poll")

  /// NMEA message IDs in class 0xF0 (UBX-13003221, "NMEA messages overview").
  public static let nmeaMessageID: [NMEASentenceType: UInt8] = [
    .gga: 0x00, .gll: 0x01, .gsa: 0x02, .gsv: 0x03, .rmc: 0x04, .vtg: 0x05, .grs: 0x06,
    .gst: 0x07, .zda: 0x08, .gbs: 0x09, .dtm: 0x0A, .gns: 0x0D,
  ]

  /// `CFG-MSGOUT-NMEA_ID_<sentence>_UART1` and `_USB` keys (u-blox ZED-F9P Interface
  /// Description, UBX-18010854, CFG-MSGOUT configuration keys; size U1, so the keys start 0x2091).
  public static func messageOutputKey(_ sentence: NMEASentenceType, port: UbloxPort) -> UInt32 {
    let uart1: UInt32
    switch sentence {
    case .dtm: uart1 = 0x2091_00A7
    case .gbs: uart1 = 0x2091_00DE
    case .gga: uart1 = 0x2091_00BB
    case .gll: uart1 = 0x2091_00CA
    case .gns: uart1 = 0x2091_00B6
    case .grs: uart1 = 0x2091_00CF
    case .gsa: uart1 = 0x2091_00C0
    case .gst: uart1 = 0x2091_00D4
    case .gsv: uart1 = 0x2091_00C5
    case .rmc: uart1 = 0x2091_00AC
    case .vtg: uart1 = 0x2091_00B1
    case .zda: uart1 = 0x2091_00D9
    }
    // Each message has five consecutive keys: I2C, UART1, UART2, USB, SPI.
    return port == .uart1 ? uart1 : uart1 + 2
  }
}
