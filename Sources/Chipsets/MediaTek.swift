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
