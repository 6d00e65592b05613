import NMEA

extension ChipsetFamily {
  /// CASIC: Zhongke's AT6558/AT6558R and the modules built on them (Quectel L76K, ATGM336H):
  /// `$PCAS` commands and CASIC binary (`BA CE` frames).
  public static let casic = ChipsetFamily(rawValue: "casic")
}

/// CASIC commands (CASIC Multimode Satellite Navigation Receiver Protocol Specification
/// V4.2.0.3, §1.6): `$PCAS03` selects the sentences; nothing is acknowledged (only binary
/// `CFG` messages are, §2.5).
///
/// The L76K has no sleep the UART enters and leaves (`$PCAS12` is for CASIC's low-power "5L"
/// parts, and L76Ks ignore it: docs/chipsets.md, "CASIC"). Its sleep is its standby input:
/// with a declared wake line wired to it, the power-off drives the line low and writes
/// nothing, confirmed by the receiver falling silent; every wake drives the line high. Without
/// one the receiver keeps running and only the port is closed.
public struct CASICCommandSet: ReceiverCommandSet {
  public let sentences: NMEASelection

  public init(sentences: NMEASelection = .standard) {
    self.sentences = sentences
  }

  public var family: ChipsetFamily { .casic }

  /// `$PCAS03` only: a receiver woken by its standby input resumes by itself ("equivalent to
  /// a hot start", AT6558R data sheet), and a running one needs no wake.
  public var powerOnSteps: [CommandStep] { [sentenceSelection] }

  /// The port is closed and the receiver keeps running: no command puts an L76K to sleep.
  public var powerOffSteps: [CommandStep] { [] }

  public var powerProfile: PowerProfile {
    // Hot start 5.5 s without AGNSS: Seeed Studio's XIAO L76K GNSS Module wiki, "Specification"
    // (the same as ReceiverFigures.casicL76K in the simulator).
    PowerProfile(offState: .running, wakesOverSerial: true, hotStartMilliseconds: 5500)
  }

  /// The standby input driven low (360 µA against 41 mA running: Seeed Studio's L76K module
  /// wiki) when `context` declares the wake line and allows the deepest sleep: the line ends
  /// it, whatever the expected sleep, since leaving it costs only a hot start. Else nothing:
  /// the port alone is closed.
  public func sleep(for context: SleepContext) -> SleepChoice {
    guard context.wakePin, context.depth == .deepest else {
      return SleepChoice(state: .running, steps: [])
    }
    return SleepChoice(state: .standby, steps: [Self.pinStandby], needsWakePin: true)
  }

  /// Nothing written: the controller drives the wake line low before this step, whose
  /// confirmation is the receiver falling silent (its standby stops the NMEA output), as for
  /// a u-blox backup. A receiver still talking (the line not wired to its standby input)
  /// counts as awake.
  public static let pinStandby = CommandStep(
    bytes: [], summary: "standby: the wake line (the L76K's standby input) driven low",
    acknowledgement: UbloxCommandSet.backupConfirmation)

  /// `$PCAS03`: the output rate of 18 outputs in fixes (0 off, 1 every fix, empty kept as it
  /// is). Only the sentence fields are set; ANT (the `$GPTXT …ANTENNA` line), DHV, LPS, UTC,
  /// TIM and the reserved ones are left empty.
  public var sentenceSelection: CommandStep {
    var fields = [String](repeating: "", count: 18)
    for (sentence, index) in Self.pcas03Field {
      fields[index] = sentences.sentences.contains(sentence) ? "1" : "0"
    }
    let body = "PCAS03," + fields.joined(separator: ",")
    return CommandStep(
      bytes: NMEAChecksum.frame(body), summary: "$\(body) select \(sentences)")
  }

  /// The `$PCAS03` field of each sentence: 0 GGA, 1 GLL, 2 GSA, 3 GSV, 4 RMC, 5 VTG, 6 ZDA,
  /// 7 ANT, 8 DHV, 9 LPS, 10–11 reserved, 12 UTC, 13 GST, 14–16 reserved, 17 TIM.
  public static let pcas03Field: [NMEASentenceType: Int] = [
    .gga: 0, .gll: 1, .gsa: 2, .gsv: 3, .rmc: 4, .vtg: 5, .zda: 6, .gst: 13,
  ]
}

/// The CASIC driver: `$PCAS03` output selection, no acknowledgement (``CASICCommandSet``);
/// sleep only through a declared wake line on the standby input. Identified by the
/// `$GPTXT` lines CASIC firmware writes unasked (its start-up banner, and its antenna status
/// once a second or so); no probe.
public struct CASICDriver: ChipsetDriver {
  public init() {}
  public var family: ChipsetFamily { .casic }
  public var cliName: String { "casic" }
  public var aliases: [String] { ["l76k", "atgm336h", "at6558"] }
  /// Quectel builds the L76K on it (beside MediaTek and Airoha modules).
  public var makers: [String] { ["quectel"] }
  public var displayName: String { "CASIC (Quectel L76K, ATGM336H)" }
  public var vendor: String? { "Zhongke (CASIC)" }
  /// gpsd 3.26's drivers/driver_casic.c, `type_name`.
  public var gpsdDriverName: String { "CASIC" }
  /// 9600 bit/s: Seeed Studio's XIAO L76K GNSS Module wiki ("UART interface", default
  /// 9600 bps), Waveshare's Pico-GPS-L76K wiki ("default 9600bps").
  public var factoryBaudRate: Int { 9600 }
  /// CASIC answers no NMEA command (protocol specification §2.5).
  public var acknowledgesCommands: Bool { false }
  /// Its only sleep is the wake line held low on the standby input.
  public var keptTalkingReason: String? {
    "a CASIC receiver goes quiet only when the wake line reaches its standby input: check the wiring"
  }

  public func commandSet(_ options: CommandSetOptions) -> any ReceiverCommandSet {
    CASICCommandSet(sentences: options.sentences)
  }

  public func unsupported(_ selection: NMEASelection) -> [NMEASentenceType] {
    selection.sentences.filter { CASICCommandSet.pcas03Field[$0] == nil }
  }

  /// ACK-ACK or ACK-NAK (class `0x05`, protocol specification §2.5, ``CASICAcknowledgement``):
  /// the receiver's answer to a binary command, named by the class and ID it answers.
  public func acknowledgement(in frame: Frame) -> ReceiverAcknowledgement? {
    guard case .casic(let view) = frame, let answer = CASICAcknowledgement(view) else {
      return nil
    }
    let command = Self.commandName(answer.messageClass, answer.messageID)
    return .reply(
      CommandReply(
        family: family, command: command, accepted: answer.accepted,
        text: answer.description,
        failureReason: "the receiver refused CASIC message \(command) (ACK-NAK)"))
  }

  public func acknowledgementDescription(command: String) -> String {
    "CASIC ACK-ACK/NAK for \(command)"
  }

  /// How a binary message is named in an acknowledgement: class and ID in hex (`06-01`).
  static func commandName(_ messageClass: UInt8, _ messageID: UInt8) -> String {
    "\(hexDigits(messageClass))-\(hexDigits(messageID))"
  }

  private static func hexDigits(_ byte: UInt8) -> String {
    (byte < 0x10 ? "0" : "") + String(byte, radix: 16, uppercase: true)
  }

  /// What CASIC firmware writes unasked, in `$GPTXT` (sentence 01 of 01):
  /// - its start-up banner, text identifier 02 (`MA=CASIC`, `IC=AT6558…`, `SW=…`, `TB=…`,
  ///   `MO=…`, as gpsd's driver_casic.c quotes an AT6558's): the maker and the chip, high;
  /// - its antenna status, text identifier 01 (`ANTENNA OK`, `ANTENNA OPEN`, `ANTENNA SHORT`):
  ///   medium. In gpsd's 64 captures only the two L76K ones write it (u-blox writes
  ///   `ANTSTATUS=`, MediaTek `$PGTOP`/`$PCD`), but it is a plain text line another maker
  ///   could copy; medium is enough for the only command sent, `$PCAS03`, which a receiver of
  ///   another family ignores as an unknown sentence.
  public func evidence(in sentence: Sentence) -> ChipsetEvidence? {
    guard case .txt(let txt) = sentence else { return nil }
    let text = txt.text
    if text.hasPrefix("ANTENNA OK") || text.hasPrefix("ANTENNA OPEN")
      || text.hasPrefix("ANTENNA SHORT")
    {
      var found = ChipsetEvidence(
        confidence: .medium, what: "CASIC antenna status ($GxTXT \(text))")
      found.fillsOnly = true
      return found
    }
    if text == "MA=CASIC" {
      return ChipsetEvidence(confidence: .high, what: "CASIC banner (MA=CASIC)", vendor: vendor)
    }
    if text.hasPrefix("IC=AT6558") || text.hasPrefix("IC=AT6556") {
      return ChipsetEvidence(
        confidence: .high, what: "CASIC banner (\(text))", vendor: vendor,
        hardware: String(text.dropFirst(3)))
    }
    if text.hasPrefix("SW=URANUS") {
      var found = ChipsetEvidence(
        confidence: nil, what: "CASIC firmware (\(text))", firmware: String(text.dropFirst(3)))
      found.fillsOnly = true
      return found
    }
    return nil
  }
}

extension AcknowledgementExpectation {
  /// CASIC ACK-ACK (or ACK-NAK) naming the binary message of `messageClass` and `messageID`
  /// (a `CFG` message, class `0x06`): how the receiver answers its binary commands.
  public static func casic(_ messageClass: UInt8, _ messageID: UInt8)
    -> AcknowledgementExpectation
  {
    .reply(.casic, command: CASICDriver.commandName(messageClass, messageID))
  }
}
