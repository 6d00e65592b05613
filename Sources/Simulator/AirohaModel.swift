import Chipsets
import NMEA

/// The `$PAIR` commands of an Airoha receiver (AG3335/AG3352: Quectel LC26G/LC76G/LC86G,
/// LC29H), as the simulator's ``ReceiverProfile/airoha`` answers them: from the Quectel
/// LC26G(AB)&LC76G&LC86G Series GNSS Protocol Specification (docs/chipsets.md, "Airoha").
///
/// Every `$PAIR` command is answered by `$PAIR001,<command>,<result>`: 0 done, 2 failed,
/// 3 not supported, 4 a parameter out of range. `$PAIR003` powers the GNSS subsystem off while
/// the UART keeps taking commands (``SimulatedPowerState/gnssStopped``); `$PAIR002` powers it
/// on. `$PAIR650` enters backup, acknowledged before the chip sleeps; then it takes no
/// command until its wake line (``ReceiverPin/forceOn`` here) is driven high
/// (``SimulatedPowerState/hibernate``, handled by ``ReceiverModel``).
struct AirohaModel: Sendable, Hashable {
  /// The rate of each `$PAIR062` sentence type (every n-th fix, 0 off) as last set. Types:
  /// 0 GGA, 1 GLL, 2 GSA, 3 GSV, 4 RMC, 5 VTG. The factory output of an LC76G is these six.
  private(set) var outputRates: [Int] = [1, 1, 1, 1, 1, 1]

  /// The `$PAIR062` type of each sentence.
  static let pair062Type: [NMEASentenceType: Int] = [
    .gga: 0, .gll: 1, .gsa: 2, .gsv: 3, .rmc: 4, .vtg: 5,
  ]

  /// `$PAIR001,<command>,<result>`, as the chip sends it.
  static func acknowledgement(command: Int, result: Int) -> [UInt8] {
    let id = command < 10 ? "00\(command)" : command < 100 ? "0\(command)" : "\(command)"
    return NMEAChecksum.frame("PAIR001,\(id),\(result)")
  }

  mutating func handle(
    _ command: ReceiverCommand, power: SimulatedPowerState, responses: ResponseMode
  ) -> FamilyCommandEffect {
    guard case .nmeaOther(let address, let fields) = command, address.hasPrefix("PAIR"),
      address.count == 7, let number = Int(address.dropFirst(4))
    else { return FamilyCommandEffect(outcome: .ignored) }
    func answer(_ result: Int) -> FamilyCommandEffect {
      FamilyCommandEffect(
        outcome: result == 0 ? .acknowledged : .rejected,
        replies: [Self.acknowledgement(command: number, result: result)])
    }
    let known: Set<Int> = [2, 3, 4, 5, 6, 7, 62, 590, 600, 650]
    guard known.contains(number) else { return answer(3) }
    if responses == .rejecting { return answer(2) }
    let numbers = fields.map { Int($0) }
    switch number {
    case 2, 3:
      guard fields.isEmpty else { return answer(4) }
      var effect = answer(0)
      if number == 3, power == .running { effect.power = .gnssStopped }
      if number == 2, power == .gnssStopped { effect.power = .running }
      return effect
    case 4, 5, 6, 7:
      // Hot, warm, cold and full cold start: acknowledged, then the chip restarts.
      guard fields.isEmpty else { return answer(4) }
      var effect = answer(0)
      effect.restart = number == 4 ? .hot : number == 5 ? .warm : .cold
      return effect
    case 62:
      // $PAIR062,<type>,<rate>: type 0…5 here, rate 0…20; type -1 puts every sentence back
      // to its factory rate, whatever the rate field says.
      guard numbers.count == 2, let type = numbers[0], let rate = numbers[1],
        (-1...5).contains(type), (0...20).contains(rate)
      else { return answer(4) }
      if type == -1 {
        outputRates = AirohaModel().outputRates
      } else {
        outputRates[type] = rate
      }
      return answer(0)
    case 590:
      // $PAIR590,YYYY,MM,DD,hh,mm,ss: the reference UTC.
      guard numbers.count == 6, !numbers.contains(nil), let year = numbers[0],
        let month = numbers[1], let day = numbers[2], let hour = numbers[3],
        let minute = numbers[4], let second = numbers[5], (1...12).contains(month),
        (1...31).contains(day), (0...23).contains(hour), (0...59).contains(minute),
        (0...60).contains(second)
      else { return answer(4) }
      var effect = answer(0)
      effect.aiding = .time(
        UTCTimestamp(
          date: UTCDate(year: year, month: UInt8(month), day: UInt8(day)),
          time: UTCTime(hour: UInt8(hour), minute: UInt8(minute), second: UInt8(second))),
        accuracySeconds: nil)
      return effect
    case 600:
      // $PAIR600,<lat>,<lon>,<height>,<accMaj>,<accMin>,<bearing>,<accVert>: the reference
      // position, degrees and metres.
      let values = fields.map { Double($0) }
      guard values.count == 7, !values.contains(nil), let latitude = values[0],
        let longitude = values[1], abs(latitude) <= 90, abs(longitude) <= 180
      else { return answer(4) }
      var effect = answer(0)
      effect.aiding = .position(
        latitude: latitude, longitude: longitude, altitude: values[2],
        accuracyMetres: values[3])
      return effect
    default:  // 650
      // $PAIR650,<seconds>: backup, acknowledged before the chip sleeps. A timed wake
      // (seconds > 0) is not modelled: the chip sleeps until its wake line.
      guard numbers.count <= 1, !numbers.contains(nil) else { return answer(4) }
      // A request lost on the line: no answer, and the chip goes on running.
      if responses == .ignoringBackupRequest { return FamilyCommandEffect(outcome: .ignored) }
      var effect = answer(0)
      effect.power = .hibernate
      return effect
    }
  }
}

extension ReceiverFigures {
  /// Quectel LC76G (Airoha AG3352Q), GPS, GLONASS, Galileo, BeiDou and QZSS, 3.3 V. Cold start
  /// 26 s autonomous: Waveshare's L76K/LC76G/L76B GPS Module wiki, "Parameters"; no warm
  /// figure, so warm and aided are the cold start. No document reached gives the LC76G's hot
  /// start, currents or accuracy (docs/chipsets.md, "Airoha"): each is the nearest documented
  /// sibling's, and of two siblings the one that does not flatter the sleeps the driver
  /// chooses. Hot start 5.5 s, acquisition and tracking 41 mA and 2.0 m CEP: the L76K on the
  /// same Waveshare board (Seeed Studio's XIAO L76K wiki). GNSS off (`$PAIR003`: RF off, the
  /// processor and UART on) 600 µA: the Quectel L76's standby, the same state (L76&L76-L
  /// Hardware Design, §3.3.2). Backup 14 µA: the MediaTek GNSS (Airoha's predecessor) backup
  /// of Quectel's MC60 Hardware Design, §3.4.2.3, above the MT3339's 7 µA. Standby is not
  /// reachable on this chip and is given GNSS off's current.
  public static let airohaLC76G = ReceiverFigures(
    name: "Airoha AG3352 (Quectel LC76G)", hotStart: .milliseconds(5500),
    warmStart: .seconds(26), coldStart: .seconds(26), aidedStart: .seconds(26),
    convergedError: 2.0 * 1.2,
    currents: Currents(
      acquisition: 41, tracking: 41, standby: 0.6, backup: 0.014, gnssStopped: 0.6),
    supplyVolts: 3.3)
}
