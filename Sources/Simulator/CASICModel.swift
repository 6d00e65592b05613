import Chipsets
import NMEA

/// The `$PCAS` commands of a CASIC receiver (Zhongke AT6558/AT6558R: Quectel L76K, ATGM336H),
/// as the simulator's ``ReceiverProfile/casic`` answers them: from the CASIC Multimode
/// Satellite Navigation Receiver Protocol Specification V4.2.0.3, §1.6 (docs/chipsets.md,
/// "CASIC").
///
/// CASIC answers no NMEA command: only its binary `CFG` messages are acknowledged (ACK-ACK or
/// ACK-NACK, §2.5), so every `$PCAS` command here is carried out or ignored in silence. The
/// L76K has no sleep that the UART enters or leaves: `$PCAS12` (a timed standby) is for
/// CASIC's "5L" low-power parts only and is ignored. Its standby is its STANDBY pin
/// (``ReceiverPin/forceOn`` here, driven low), which ``ReceiverModel`` handles.
struct CASICModel: Sendable, Hashable {
  /// The output rate of each `$PCAS03` field as last set, in that command's field order:
  /// GGA, GLL, GSA, GSV, RMC, VTG, ZDA, ANT, DHV, LPS, two reserved, UTC, GST, three reserved,
  /// TIM. The factory setting (L76K) outputs GGA, GLL, GSA, GSV, RMC, VTG, ZDA and ANT.
  private(set) var outputRates: [Int] = [1, 1, 1, 1, 1, 1, 1, 1] + [Int](repeating: 0, count: 10)

  /// The field of each sentence in `$PCAS03`.
  static let pcas03Field: [NMEASentenceType: Int] = [
    .gga: 0, .gll: 1, .gsa: 2, .gsv: 3, .rmc: 4, .vtg: 5, .zda: 6, .gst: 13,
  ]

  /// What the chip says to `$PCAS06,0` (firmware version): the `$GPTXT` line of the start-up
  /// banner that gpsd's driver_casic.c quotes from an AT6558.
  static let firmwareText = NMEAChecksum.frame("GPTXT,01,01,02,SW=URANUS5,V5.3.0.0")

  /// Whether GST is switched on (`$PCAS03` field 14): the physics then adds it to each epoch.
  var errorEstimateSwitchedOn: Bool { outputRates[13] > 0 }

  mutating func handle(_ command: ReceiverCommand, responses: ResponseMode)
    -> FamilyCommandEffect
  {
    guard case .nmeaOther(let address, let fields) = command, address.hasPrefix("PCAS"),
      let number = Int(address.dropFirst(4))
    else { return FamilyCommandEffect(outcome: .ignored) }
    // A chip told to fail everything: CASIC has no refusal for NMEA input, so it does nothing.
    if responses == .rejecting { return FamilyCommandEffect(outcome: .ignored) }
    let numbers = fields.map { Int($0) }
    func single(_ allowed: ClosedRange<Int>) -> Int? {
      guard numbers.count == 1, let value = numbers[0], allowed.contains(value) else { return nil }
      return value
    }
    switch number {
    case 0:
      // Save the configuration to flash: taken, not modelled.
      return FamilyCommandEffect(outcome: fields.isEmpty ? .carriedOut : .ignored)
    case 1, 4, 5:
      // Baud rate (0…5), constellations (1…7), NMEA version: taken, not modelled (a pty has
      // no line speed; the recording decides the constellations).
      let range: ClosedRange<Int> = number == 1 ? 0...5 : number == 4 ? 1...7 : 0...9
      return FamilyCommandEffect(outcome: single(range) == nil ? .ignored : .carriedOut)
    case 2:
      let valid = numbers.count == 1 && [1000, 500, 250, 200, 100].contains(numbers[0] ?? 0)
      return FamilyCommandEffect(outcome: valid ? .carriedOut : .ignored)
    case 3:
      // Up to 18 fields, each 0…9 (every n-th fix) or empty (keep the current rate).
      guard !fields.isEmpty, fields.count <= outputRates.count,
        zip(fields, numbers).allSatisfy({ $0.isEmpty || ($1.map { (0...9).contains($0) } ?? false) }
        )
      else { return FamilyCommandEffect(outcome: .ignored) }
      for (index, value) in numbers.enumerated() {
        if let value { outputRates[index] = value }
      }
      return FamilyCommandEffect(outcome: .carriedOut)
    case 6:
      guard single(0...5) == 0 else { return FamilyCommandEffect(outcome: .ignored) }
      return FamilyCommandEffect(outcome: .answered, replies: [Self.firmwareText])
    case 10:
      // 0 hot, 1 warm (ephemeris cleared), 2 cold (all but the configuration), 3 factory.
      guard let kind = single(0...3) else { return FamilyCommandEffect(outcome: .ignored) }
      if kind == 3 { outputRates = CASICModel().outputRates }
      let start: StartKind = kind == 0 ? .hot : kind == 1 ? .warm : .cold
      return FamilyCommandEffect(outcome: .carriedOut, restart: start)
    default:
      // $PCAS12 (standby for CASIC's low-power 5L parts, not the L76K), $PCAS15, $PCAS20 …
      return FamilyCommandEffect(outcome: .ignored)
    }
  }
}

extension ReceiverFigures {
  /// Quectel L76K (CASIC AT6558R), GPS, BeiDou and GLONASS, 3.3 V. From the Seeed Studio XIAO
  /// L76K GNSS Module wiki, "Specification" (with its active antenna): cold start 30 s without
  /// AGNSS, hot start 5.5 s without AGNSS (2 s with it), 41 mA acquiring and tracking, 360 µA
  /// in standby (the STANDBY pin held low), 2.0 m CEP. The cold start and CEP agree with
  /// Waveshare's L76K/LC76G/L76B GPS Module wiki ("Parameters") and DFRobot's TEL0157 wiki;
  /// DFRobot's 2 s hot start, which does not say whether aided, is Seeed's aided figure, so
  /// the unaided 5.5 s is used. No warm figure is published, so warm and aided (time and
  /// position, no ephemeris) are the cold start. Backup and GNSS stop are
  /// not reachable over the UART; their currents are the standby's so that no state is cheaper
  /// than a document says (docs/chipsets.md, "CASIC").
  public static let casicL76K = ReceiverFigures(
    name: "CASIC AT6558R (Quectel L76K)", hotStart: .milliseconds(5500),
    warmStart: .seconds(30), coldStart: .seconds(30), aidedStart: .seconds(30),
    convergedError: 2.0 * 1.2,
    currents: Currents(
      acquisition: 41, tracking: 41, standby: 0.36, backup: 0.36, gnssStopped: 0.36),
    supplyVolts: 3.3)
}
