import NMEA

extension ChipsetFamily {
  /// Airoha: AG3335/AG3352 and the modules built on them (Quectel LC26G/LC76G/LC86G, LC29H):
  /// `$PAIR` commands answered by `$PAIR001`.
  public static let airoha = ChipsetFamily(rawValue: "airoha")
}

/// Airoha commands (Quectel LC26G(AB)&LC76G&LC86G Series GNSS Protocol Specification; the
/// LC26G&LC76G&LC86G Series Low Power Mode Application Note; docs/chipsets.md, "Airoha"),
/// each answered by `$PAIR001,<command>,<result>`.
///
/// Power on: `$PAIR002` (GNSS subsystem on; harmless on a receiver already running or just
/// woken from backup, and its answer proves the receiver is awake), then one `$PAIR062` per
/// sentence. Power off: `$PAIR003` (GNSS subsystem off; the UART keeps taking commands), or,
/// with a declared wake line and a long expected sleep, `$PAIR650,0` (backup, which only the
/// wake pin or a power cycle ends).
public struct AirohaCommandSet: ReceiverCommandSet {
  public let sentences: NMEASelection

  public init(sentences: NMEASelection = .standard) {
    self.sentences = sentences
  }

  public var family: ChipsetFamily { .airoha }

  public var powerOnSteps: [CommandStep] { [Self.gnssOn] + selectionSteps }

  /// The GNSS power-on, then (where ``WakePlan`` says so) `$PAIR590` and `$PAIR600`, each
  /// answered by `$PAIR001`, then the sentence selection.
  public func powerOnSteps(for context: WakeContext) -> [CommandStep] {
    [Self.gnssOn] + WakePlan.aidingSteps(for: context, family: .airoha, acknowledged: true)
      + selectionSteps
  }

  public var powerOffSteps: [CommandStep] { [Self.gnssOff] }

  public var powerProfile: PowerProfile {
    // No hot-start figure was found for the LC76G; 1 s as for the other families.
    // No LC26G/LC76G/LC86G or LC29H document reached gives a hot start: not known.
    PowerProfile(offState: .gnssStopped, wakesOverSerial: true, hotStartMilliseconds: nil)
  }

  /// The shortest expected sleep for which backup beats GNSS off, with a wake line: leaving
  /// backup reboots the chip, taken as 1 s more at the 41 mA acquisition current than
  /// powering the GNSS on again (41 mA·s), which GNSS off (600 µA) spends over backup (14 µA)
  /// in 70 s. No LC76G document gives these figures; they are its nearest documented
  /// siblings' (docs/chipsets.md, "Airoha"), as in the simulator's `airohaLC76G`.
  public static let backupWorthFrom: Duration = .seconds(70)

  /// `$PAIR650,0` (backup, left only by the wake pin) when `context` declares the wake line
  /// and expects a sleep of at least ``backupWorthFrom``; else `$PAIR003` (GNSS off, left by
  /// `$PAIR002`). Without the line, never backup: nothing on the UART could end it.
  public func sleep(for context: SleepContext) -> SleepChoice {
    guard context.wakePin, context.depth == .deepest, let expected = context.expected,
      expected >= Self.backupWorthFrom
    else { return SleepChoice(state: .gnssStopped, steps: [Self.gnssOff]) }
    return SleepChoice(state: .backup, steps: [Self.backup], needsWakePin: true)
  }

  /// `$PAIR002`: PAIR_GNSS_SUBSYS_POWER_ON.
  public static let gnssOn = CommandStep(
    bytes: NMEAChecksum.frame("PAIR002"), summary: "$PAIR002 GNSS subsystem on",
    acknowledgement: .pair(2))

  /// `$PAIR003`: PAIR_GNSS_SUBSYS_POWER_OFF; the receiver still takes commands.
  public static let gnssOff = CommandStep(
    bytes: NMEAChecksum.frame("PAIR003"), summary: "$PAIR003 GNSS subsystem off",
    acknowledgement: .pair(3))

  /// `$PAIR650,0`: PAIR_LOW_POWER_ENTRY_RTC_MODE, no timed wake; answered `$PAIR001,650,0`
  /// before the chip sleeps, then it takes no command until its wake pin.
  public static let backup = CommandStep(
    bytes: NMEAChecksum.frame("PAIR650,0"), summary: "$PAIR650,0 backup (woken by the wake pin)",
    acknowledgement: .pair(650))

  /// One `$PAIR062,<type>,<rate>` per sentence this family can switch (on, every fix, for
  /// the selected ones; off for the others), each answered by `$PAIR001,062,<result>`.
  public var selectionSteps: [CommandStep] {
    Self.pair062Type.sorted { $0.value < $1.value }.map { sentence, type in
      let on = sentences.sentences.contains(sentence)
      let body = "PAIR062,\(type),\(on ? 1 : 0)"
      return CommandStep(
        bytes: NMEAChecksum.frame(body),
        summary: "$\(body) \(sentence.rawValue) \(on ? "on" : "off")",
        acknowledgement: .pair(62))
    }
  }

  /// The `$PAIR062` type of each sentence: 0 GGA, 1 GLL, 2 GSA, 3 GSV, 4 RMC, 5 VTG.
  public static let pair062Type: [NMEASentenceType: Int] = [
    .gga: 0, .gll: 1, .gsa: 2, .gsv: 3, .rmc: 4, .vtg: 5,
  ]
}

/// The Airoha driver: `$PAIR` commands (``AirohaCommandSet``), acknowledged by
/// `$PAIR001,<command>,<result>`; identified by any `$PAIR` sentence it writes unasked; aided
/// with `$PAIR590` (UTC) and `$PAIR600` (position); no probe.
public struct AirohaDriver: ChipsetDriver {
  public init() {}
  public var family: ChipsetFamily { .airoha }
  public var cliName: String { "airoha" }
  public var aliases: [String] { ["lc76g", "lc26g", "lc86g", "lc29h", "ag3335"] }
  /// Quectel builds the LC26G/LC76G/LC86G and LC29H on it.
  public var makers: [String] { ["quectel"] }
  public var displayName: String { "Airoha (Quectel LC76G, LC29H)" }
  public var vendor: String? { "Airoha" }
  /// gpsd has no Airoha driver: its generic NMEA driver reads these receivers.
  public var gpsdDriverName: String { "NMEA0183" }
  /// 115200 bit/s, the LC26G/LC76G/LC86G and LC29H factory setting, read second-hand only
  /// (the LC76G protocol guide's `$PAIR864` section as quoted, the LC29H's tools): no
  /// original Quectel document was reached (docs/chipsets.md, "Airoha").
  public var factoryBaudRate: Int { 115200 }
  public var takesAiding: Bool { true }

  public func commandSet(_ options: CommandSetOptions) -> any ReceiverCommandSet {
    AirohaCommandSet(sentences: options.sentences)
  }

  public func unsupported(_ selection: NMEASelection) -> [NMEASentenceType] {
    selection.sentences.filter { AirohaCommandSet.pair062Type[$0] == nil }
  }

  /// `$PAIRnnn` expects `$PAIR001,nnn,0`; `$PAIR001` itself is an answer, not a command.
  public func expectedAcknowledgement(forAddress address: Substring)
    -> AcknowledgementExpectation?
  {
    guard address.hasPrefix("PAIR"), address.count == 7, let number = Int(address.dropFirst(4)),
      number != 1
    else { return nil }
    return .pair(number)
  }

  public func aiding(_ content: TimedCommand.Content, at now: UTCTimestamp, acknowledged: Bool)
    -> AidingCommand?
  {
    switch content {
    case .time:
      return AidingCommand(
        bytes: NMEAChecksum.frame("PAIR590," + Aiding.mediatekStamp(now)),
        summary: "$PAIR590 (aiding: UTC)", acknowledgement: .pair(590))
    case .position(let known):
      guard let position = known.aiding(at: now), position.isPlausible,
        let latitude = Aiding.decimal(position.latitude, digits: 6),
        let longitude = Aiding.decimal(position.longitude, digits: 6),
        let height = Aiding.decimal(position.altitude, digits: 1),
        let accuracy = Aiding.decimal(position.accuracy, digits: 1)
      else { return nil }
      // Lat, Lon, Height, AccMaj, AccMin, Bearing, AccVert: a circle of the accuracy, the
      // height twice as uncertain.
      let vertical = Aiding.decimal(2 * position.accuracy, digits: 1) ?? accuracy
      let body =
        "PAIR600,\(latitude),\(longitude),\(height),\(accuracy),\(accuracy),0.0,\(vertical)"
      return AidingCommand(
        bytes: NMEAChecksum.frame(body),
        summary: "$PAIR600 (aiding: the last position\(TimedCommand.within(known, now)))",
        acknowledgement: .pair(600))
    }
  }

  /// `$PAIR001,<command>,<result>`: 0 done; 1 still being processed (the final answer
  /// follows, so this is no answer yet: `nil`); 2 failed; 3 not supported; 4 a parameter
  /// error; 5 busy.
  public func acknowledgement(in sentence: Sentence) -> ReceiverAcknowledgement? {
    guard case .unknown(let unknown) = sentence, unknown.address == "PAIR001",
      unknown.fields.count >= 2, let command = Int(unknown.fields[0]),
      let result = Int(unknown.fields[1]), result != 1
    else { return nil }
    return .pair(command: command, result: result)
  }

  public func acknowledgementDescription(command: String) -> String {
    "$PAIR001,\(pad3(Int(command) ?? 0)),<result>"
  }

  /// Any `$PAIR` sentence: only Airoha firmware writes them ("P" proprietary, "AIR" the
  /// chipset supplier's, as Quectel's protocol specifications put it), e.g. `$PAIR010`
  /// asking for aiding at start-up or a `$PAIR001` answer.
  public func evidence(in sentence: Sentence) -> ChipsetEvidence? {
    guard case .unknown(let unknown) = sentence, unknown.talker == .proprietary,
      unknown.address.hasPrefix("PAIR")
    else { return nil }
    return ChipsetEvidence(confidence: .high, what: "$\(unknown.address) sentence", vendor: vendor)
  }
}

extension AcknowledgementExpectation {
  /// `$PAIR001,<command>,<result>`: Airoha's acknowledgement of `$PAIR<command>`.
  public static func pair(_ command: Int) -> AcknowledgementExpectation {
    .reply(.airoha, command: String(command))
  }
}

extension ReceiverAcknowledgement {
  /// `$PAIR001,<command>,<result>` as the Airoha driver reads it; `result` 0 is success.
  public static func pair(command: Int, result: Int) -> ReceiverAcknowledgement {
    let name = "$PAIR\(pad3(command))"
    let reason: String
    switch result {
    case 0: reason = ""
    case 2: reason = "the receiver could not carry out \(name) (result 2, failed)"
    case 3: reason = "the receiver does not support \(name) (result 3)"
    case 4: reason = "the receiver refused \(name)'s parameters (result 4, parameter error)"
    case 5: reason = "the receiver was busy and did not take \(name) (result 5); try again"
    default: reason = "the receiver answered \(name) with result \(result)"
    }
    return .reply(
      CommandReply(
        family: .airoha, command: String(command), accepted: result == 0,
        text: "$PAIR001,\(pad3(command)),\(result)", failureReason: result == 0 ? nil : reason))
  }
}
