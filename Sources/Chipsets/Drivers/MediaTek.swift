import NMEA

/// MediaTek commands (MT3329, MT3339 and the modules built on them: Quectel L70, L76, L80,
/// GlobalTop PA6H, Fastrax IT500 …), from the MediaTek PMTK command packet manual and the
/// Quectel L76 series GNSS protocol specification.
///
/// Power on: one byte wakes the chip from standby (the byte itself may be lost), so a CR LF,
/// which no MediaTek parser acts on, goes first, then a settle time; `$PMTK314` then selects
/// the sentences and is acknowledged with `$PMTK001,314,3`, which proves the chip is awake.
/// Power off: `$PMTK161,0` (standby), acknowledged with `$PMTK001,161,3` before the chip
/// sleeps. Standby keeps RAM, so the next fix is a hot start.
public struct MediaTekCommandSet: ReceiverCommandSet {
  public let sentences: NMEASelection

  public init(sentences: NMEASelection = .standard) {
    self.sentences = sentences
  }

  public var family: ChipsetFamily { .mediatek }

  /// What wakes the chip from standby. Any byte does; CR LF ends whatever partial line the
  /// chip may hold and is otherwise ignored.
  public static let wakeBytes: [UInt8] = [0x0D, 0x0A]
  /// Wait after the wake bytes. MediaTek states no figure; `$PMTK314` is acknowledged, so a
  /// chip that needs longer costs one retry.
  public static let wakeSettleMilliseconds = 200

  public var powerOnSteps: [CommandStep] {
    [
      CommandStep(
        bytes: Self.wakeBytes, summary: "wake from standby: CR LF on RX",
        settleMilliseconds: Self.wakeSettleMilliseconds),
      sentenceSelection,
    ]
  }

  /// The wake, then (where ``WakePlan`` says so) `$PMTK740` and `$PMTK741`, each acknowledged
  /// by `$PMTK001`, then the sentence selection. The chip starts navigating as it wakes, so
  /// the aiding goes first of the acknowledged commands.
  public func powerOnSteps(for context: WakeContext) -> [CommandStep] {
    var steps = powerOnSteps
    steps.insert(
      contentsOf: WakePlan.aidingSteps(for: context, family: .mediatek, acknowledged: true), at: 1)
    return steps
  }

  public var powerOffSteps: [CommandStep] { [Self.standby] }

  /// The shortest expected sleep for which backup beats standby, with a wake line: a wake
  /// from backup holds FORCE_ON high and reboots the chip, about 1 s more at the acquisition
  /// current (25 mA) than a wake from standby, some 25 mA·s, which standby (0.2 mA) spends
  /// over backup (7 µA) in about 130 s (currents: docs/simulator.md).
  public static let backupWorthFrom: Duration = .seconds(130)

  /// `$PMTK225,4` (backup, left only when FORCE_ON is driven high) when `context` declares
  /// the wake line and expects a sleep of at least ``backupWorthFrom``; else `$PMTK161,0`
  /// (standby, left by any byte). Without the line, never backup: over a plain UART or USB
  /// nothing could wake the chip again (Telit SL869-V2 / SE868-A user guides §4.14,
  /// Quectel L96 forum answer: docs/chipsets.md).
  public func sleep(for context: SleepContext) -> SleepChoice {
    guard context.wakePin, context.depth == .deepest, let expected = context.expected,
      expected >= Self.backupWorthFrom
    else { return SleepChoice(state: .standby, steps: [Self.standby]) }
    return SleepChoice(state: .backup, steps: [Self.backup], needsWakePin: true)
  }

  public var powerProfile: PowerProfile {
    // Quectel L70/L76/L80 hardware designs and the GlobalTop PA6H (MT3339) data sheet: hot
    // start 1 s.
    PowerProfile(offState: .standby, wakesOverSerial: true, hotStartMilliseconds: 1000)
  }

  /// `$PMTK161,0`: PMTK_CMD_STANDBY_MODE, 0 = stop mode (standby).
  public static let standby = CommandStep(
    bytes: NMEAChecksum.frame("PMTK161,0"), summary: "$PMTK161,0 standby",
    acknowledgement: .mtk(command: 161))

  /// `$PMTK225,4`: PMTK_CMD_PERIODIC_MODE, type 4, perpetual backup; acknowledged with
  /// `$PMTK001,225,3` before the chip sleeps. Only FORCE_ON high ends it.
  public static let backup = CommandStep(
    bytes: NMEAChecksum.frame("PMTK225,4"), summary: "$PMTK225,4 backup (woken by FORCE_ON)",
    acknowledgement: .mtk(command: 225))

  /// `$PMTK314`: PMTK_API_SET_NMEA_OUTPUT, 19 fields, each the output interval in fixes
  /// (0 off, 1 every fix).
  public var sentenceSelection: CommandStep {
    var fields = [Int](repeating: 0, count: 19)
    for sentence in sentences.sentences {
      if let index = Self.pmtk314Field[sentence] { fields[index] = 1 }
    }
    let body = "PMTK314," + fields.map(String.init).joined(separator: ",")
    return CommandStep(
      bytes: NMEAChecksum.frame(body), summary: "$\(body) select \(sentences)",
      acknowledgement: .mtk(command: 314))
  }

  /// The `$PMTK314` field of each sentence: 0 GLL, 1 RMC, 2 VTG, 3 GGA, 4 GSA, 5 GSV, 6 GRS,
  /// 7 GST, 8–12 reserved, 13–16 MALM, MEPH, MDGP, MDBG, 17 ZDA, 18 MCHN.
  public static let pmtk314Field: [NMEASentenceType: Int] = [
    .gll: 0, .rmc: 1, .vtg: 2, .gga: 3, .gsa: 4, .gsv: 5, .grs: 6, .gst: 7, .zda: 17,
  ]
}

extension ChipsetFamily {
  /// MediaTek and the modules built on it (Quectel L70/L76/L80, GlobalTop, Fastrax …):
  /// `$PMTK` commands.
  public static let mediatek = ChipsetFamily(rawValue: "mediatek")
}

/// The MediaTek driver: `$PMTK` commands (``MediaTekCommandSet``), acknowledged by
/// `$PMTK001,<command>,<flag>`; identified by any `$PMTK` sentence, hinted at by Quectel's
/// `$PQ…` ones; polled with `$PMTK605`.
public struct MediaTekDriver: ChipsetDriver {
  public init() {}
  public var family: ChipsetFamily { .mediatek }
  public var cliName: String { "mtk" }
  public var aliases: [String] { ["mediatek"] }
  /// Quectel's L70, L76 and L80 are MediaTek; its L76K is CASIC and its LC76G Airoha.
  public var makers: [String] { ["quectel"] }
  public var displayName: String { "MediaTek/Quectel" }
  public var vendor: String? { "MediaTek" }
  /// gpsd's drivers.c names MediaTek's NMEA with `$PMTK` "MTK-3301".
  public var gpsdDriverName: String { "MTK-3301" }
  public var factoryBaudRate: Int { 9600 }
  public var takesAiding: Bool { true }
  public var kernelGNSSType: String? { "MTK" }

  public func commandSet(_ options: CommandSetOptions) -> any ReceiverCommandSet {
    MediaTekCommandSet(sentences: options.sentences)
  }

  public func unsupported(_ selection: NMEASelection) -> [NMEASentenceType] {
    selection.sentences.filter { MediaTekCommandSet.pmtk314Field[$0] == nil }
  }

  /// `$PMTKnnn` set commands expect `$PMTK001,nnn,3`; queries (`PMTK4xx`, `PMTK6xx`) are
  /// answered by data sentences instead.
  public func expectedAcknowledgement(forAddress address: Substring)
    -> AcknowledgementExpectation?
  {
    guard address.hasPrefix("PMTK"), let number = Int(address.dropFirst(4)),
      !(400..<500).contains(number), !(600..<700).contains(number)
    else { return nil }
    return .mtk(command: number)
  }

  public func aiding(_ content: TimedCommand.Content, at now: UTCTimestamp, acknowledged: Bool)
    -> AidingCommand?
  {
    switch content {
    case .time:
      return AidingCommand(
        bytes: Aiding.mediatekTime(now), summary: "$PMTK740 (aiding: UTC)",
        acknowledgement: .mtk(command: 740))
    case .position(let known):
      guard let bytes = known.aiding(at: now).flatMap({ Aiding.mediatekPosition($0, at: now) })
      else { return nil }
      return AidingCommand(
        bytes: bytes,
        summary: "$PMTK741 (aiding: the last position\(TimedCommand.within(known, now)))",
        acknowledgement: .mtk(command: 741))
    }
  }

  /// `$PMTK001,<command>,<flag>`: flag 3 is success; 0 invalid command, 1 unsupported
  /// command, 2 valid but failed.
  public func acknowledgement(in sentence: Sentence) -> ReceiverAcknowledgement? {
    guard case .mtkAcknowledgement(let ack) = sentence else { return nil }
    return .mtk(command: ack.command, result: ack.result)
  }

  public func acknowledgementDescription(command: String) -> String {
    "$PMTK001,\(command),<flag>"
  }

  public func evidence(in sentence: Sentence) -> ChipsetEvidence? {
    switch sentence {
    case .mtkAcknowledgement:
      return ChipsetEvidence(confidence: .high, what: "$PMTK001 acknowledgement")
    case .mtkSystemMessage(let message):
      switch message.kind {
      case .system(let code):
        return ChipsetEvidence(confidence: .high, what: "$PMTK010 system message \(pad3(code))")
      case .text(let text): return ChipsetEvidence(confidence: .high, what: "$PMTK011 \(text)")
      }
    case .unknown(let unknown) where unknown.talker == .proprietary:
      return evidence(unknown.address, unknown.fields)
    default:
      return nil
    }
  }

  func evidence(_ address: String, _ fields: [String]) -> ChipsetEvidence? {
    if address.hasPrefix("PMTK") {
      var found = ChipsetEvidence(confidence: .high, what: "$\(address) sentence")
      guard address == "PMTK705" else { return found }
      // $PMTK705,<release>,<build>,<product model>,<SDK version> (PMTK_DT_RELEASE).
      if let release = fields.first, !release.isEmpty {
        found.firmware =
          fields.count > 1 && !fields[1].isEmpty ? "\(release) build \(fields[1])" : release
      }
      if fields.count > 2, !fields[2].isEmpty {
        found.model = fields[2]
        if fields[2].uppercased().hasPrefix("QUECTEL") { found.vendor = "Quectel" }
      }
      return found
    }
    if address == "PQVERNO" || address.hasPrefix("PQTM") {
      // Quectel's own sentences. The MediaTek-based L70/L76/L80 send them, but so do newer
      // Quectel modules on other chips, so they are a hint only.
      var found = ChipsetEvidence(
        confidence: .low, what: "Quectel $\(address) sentence", vendor: "Quectel")
      found.fillsOnly = true
      if address == "PQVERNO", fields.count > 1, !fields[1].isEmpty {
        found.firmware = fields[1]
        found.model = ChipsetIdentifier.quectelModel(fields[1])
      }
      return found
    }
    return nil
  }

  /// `$PMTK605*31`: PMTK_Q_RELEASE, answered by `$PMTK705` (release, build, model).
  public var probe: [UInt8]? { NMEAChecksum.frame("PMTK605") }
  public var probeSummary: String { "$PMTK605" }
}

extension AcknowledgementExpectation {
  /// `$PMTK001,<command>,<flag>`: MediaTek's acknowledgement of `$PMTK<command>`.
  public static func mtk(command: Int) -> AcknowledgementExpectation {
    .reply(.mediatek, command: String(command))
  }
}

extension ReceiverAcknowledgement {
  /// `$PMTK001,<command>,<flag>` as MediaTek's driver reads it: flag 3 is success; 0 invalid
  /// command, 1 unsupported command, 2 valid but failed.
  public static func mtk(command: Int, result: MTKAckResult) -> ReceiverAcknowledgement {
    let reason: String
    switch result {
    case .succeeded: reason = ""
    case .invalidCommand: reason = "the receiver called $PMTK\(pad3(command)) an invalid command"
    case .unsupported:
      reason = "the receiver does not support $PMTK\(pad3(command)) (unsupported command)"
    case .failed:
      reason = "the receiver accepted $PMTK\(pad3(command)) but could not carry it out"
    }
    return .reply(
      CommandReply(
        family: .mediatek, command: String(command), accepted: result == .succeeded,
        text: "$PMTK001,\(command),\(result.rawValue)", failureReason: reason))
  }
}
