import Chipsets
import NMEA

/// The behaviour of a simulated receiver as a state machine: bytes from the host go in with
/// the time they arrived, the answers come out, and the power state follows the chip's rules.
///
/// No I/O and no clock: ``ReceiverSimulator`` drives it from a pty with the real clock; an
/// in-process replay source can drive it with a virtual one. Times are durations since an
/// origin the caller chooses.
///
/// What each profile does is listed in docs/simulator.md.
public struct ReceiverModel {
  public let profile: ReceiverProfile
  /// How the receiver treats commands; may change at any time.
  public var responses: ResponseMode
  /// How long the receiver takes to start after a wake, a reset or a power cycle; input
  /// arriving meanwhile is lost.
  public var wakeDelay: Duration

  /// The current power state.
  public private(set) var power: SimulatedPowerState
  /// What was received, in order: the newest ``receivedLimit`` inputs.
  public private(set) var received: [ReceivedInput] = []
  /// How many inputs ``received`` keeps; older ones are forgotten (and counted in
  /// ``receivedForgotten``), so a long replay that is written to keeps bounded memory.
  public var receivedLimit: Int {
    didSet {
      receivedLimit = max(0, receivedLimit)
      trimReceived()
    }
  }
  /// Inputs dropped from ``received`` because of ``receivedLimit``.
  public private(set) var receivedForgotten = 0
  /// Transitions into ``SimulatedPowerState/running``, and out of it.
  public private(set) var powerOns = 0
  public private(set) var powerOffs = 0
  /// Positive acknowledgements sent, and rejections (NAKs, `$PMTK001` flags 0–2).
  public private(set) var acknowledgements = 0
  public private(set) var rejections = 0

  /// When the receiver next changes state by itself (the end of booting, a timed backup);
  /// call ``advance(to:)`` then.
  public private(set) var nextDeadline: Duration?
  private var deadlineAction = DeadlineAction.finishBooting
  /// The boot under way follows a power cycle: MediaTek then sends its whole banner.
  private var bootIsColdStart = false

  private var framer = NMEAFramer()
  /// Bytes received since the last recorded input.
  private var pending: [UInt8] = []
  /// The state the receiver was woken from by the first pending byte, until that byte is
  /// recorded.
  private var wokeFrom: SimulatedPowerState?
  /// Replies produced while handling the current input.
  private var replies: [[UInt8]] = []
  /// u-blox `UBX-CFG-MSG` rates set so far (message → rates), for polls.
  private var messageRates: [UBXMessageID: [UInt8]] = [:]
  /// MediaTek `$PMTK314` intervals, for `$PMTK414`.
  private var mtkIntervals = [0, 1, 1, 1, 1, 1] + [Int](repeating: 0, count: 13)

  private enum DeadlineAction {
    /// Booting ends: running, with the start-up message where the chip sends one.
    case finishBooting
    /// A timed `UBX-RXM-PMREQ` ends: the receiver wakes.
    case wakeFromTimedBackup
  }

  public init(
    profile: ReceiverProfile, power: SimulatedPowerState = .running,
    responses: ResponseMode = .normal, wakeDelay: Duration = .milliseconds(50),
    receivedLimit: Int = 10_000
  ) {
    self.profile = profile
    self.power = power == .booting ? .running : power
    self.responses = responses
    self.wakeDelay = max(.zero, wakeDelay)
    self.receivedLimit = max(0, receivedLimit)
  }

  /// What the host's input did to the framer: checksum errors and noise, counted.
  public var inputStatistics: FramerStatistics { framer.statistics }

  /// Forgets what was received so far (counters stay).
  public mutating func clearReceived() { received.removeAll() }

  // MARK: - Input

  /// Takes bytes the host wrote, arrived at `now`; returns the messages to send back, in order.
  public mutating func receive<Bytes: Collection<UInt8>>(_ bytes: Bytes, at now: Duration)
    -> [[UInt8]]
  {
    replies = []
    defer { replies = [] }
    guard !bytes.isEmpty else { return [] }
    applyDeadline(now)
    // The chunk's first byte is an edge on RX: it wakes a sleeping chip and is lost, and so is
    // everything else that arrives while it boots.
    if responses != .unresponsive, power == .backup || power == .standby {
      wokeFrom = power
      framer.reset()
      enterBooting(at: now)
    }
    let chunk = Array(bytes)
    pending += chunk
    // The whole chunk in one feed: the framer is exact for any split but one (a chunk that
    // ends with the `$` of a sentence, which a host writing whole commands never produces).
    var frames: [(wire: [UInt8], isSentence: Bool, command: ReceiverCommand?)] = []
    framer.feed(chunk) { frame in
      switch frame {
      case .ubx(let view):
        var wire: [UInt8] = [0xB5, 0x62, view.messageClass, view.messageID]
        wire += [UInt8(view.payload.count & 0xFF), UInt8(view.payload.count >> 8)]
        wire += view.payload
        let sum = UBX.checksum(wire[2...])
        frames.append((wire + [sum.a, sum.b], false, ReceiverCommand(view)))
      case .sirf(let view):
        let count = view.payload.count
        let sum = view.payload.reduce(0) { ($0 + Int($1)) & 0x7FFF }
        let wire: [UInt8] =
          [0xA0, 0xA2, UInt8(count >> 8), UInt8(count & 0xFF)] + view.payload
          + [UInt8(sum >> 8), UInt8(sum & 0xFF), 0xB0, 0xB3]
        frames.append((wire, false, nil))
      case .sentence(let raw):
        let command: ReceiverCommand
        if let sentence = try? Sentence(parsing: raw) {
          command = ReceiverCommand(sentence)
        } else {
          // A malformed standard sentence: keep its words.
          let words = raw.text.dropFirst().split(separator: ",", omittingEmptySubsequences: false)
          command = .nmeaOther(
            address: String(words.first ?? ""), fields: words.dropFirst().map(String.init))
        }
        frames.append((Array(raw.bytes), true, command))
      }
    }
    for frame in frames {
      // Frames come in stream order, so each is the first occurrence of its bytes in what is
      // pending; whatever precedes it formed no frame.
      var range = 0..<pending.count
      if let start = firstIndex(of: frame.wire, in: pending) {
        var end = start + frame.wire.count
        if frame.isSentence {
          end = (pending[end...].firstIndex(of: 0x0A) ?? pending.count - 1) + 1
        }
        range = start..<end
      }
      if range.lowerBound > 0 { record(Array(pending[..<range.lowerBound]), command: nil, at: now) }
      let bytes = Array(pending[range])
      pending.removeSubrange(..<range.upperBound)
      record(bytes, command: frame.command, at: now)
    }
    flushNoise(at: now, final: false)
    return replies
  }

  /// Lets time pass until `now`: ends booting or a timed backup when due. Returns the
  /// messages the receiver sends by itself (MediaTek's `$PMTK010,001` start-up message).
  public mutating func advance(to now: Duration) -> [[UInt8]] {
    replies = []
    defer { replies = [] }
    applyDeadline(now)
    return replies
  }

  /// What was due by `now` happens first, whenever the caller got round to asking: the
  /// model's behaviour depends on the times given, never on when it is called.
  private mutating func applyDeadline(_ now: Duration) {
    guard let deadline = nextDeadline, deadline <= now else { return }
    nextDeadline = nil
    switch deadlineAction {
    case .finishBooting:
      guard power == .booting else { return }
      // Input that arrived while booting never reached the chip.
      flushNoise(at: deadline, final: true)
      framer.reset()
      setPower(.running)
      if profile == .mediatek {
        if bootIsColdStart { replies.append(NMEAChecksum.frame("PMTK011,MTKGPS")) }
        replies.append(NMEAChecksum.frame("PMTK010,001"))
      }
    case .wakeFromTimedBackup:
      guard power == .backup else { return }
      enterBooting(at: deadline)
      applyDeadline(now)  // the boot may be over by now too
    }
  }

  /// Power cut and restored, or the ON_OFF / FORCE_ON pin pulsed: boots from any state, for
  /// ``wakeDelay``. MediaTek then announces itself with `$PMTK011,MTKGPS` and `$PMTK010,001`.
  public mutating func powerCycle(at now: Duration) {
    flushNoise(at: now, final: true)
    framer.reset()
    enterBooting(at: now)
    bootIsColdStart = true
  }

  /// The receiver lost power (unplugged).
  public mutating func unplug(at now: Duration) {
    flushNoise(at: now, final: true)
    framer.reset()
    nextDeadline = nil
    setPower(.off)
  }

  /// The receiver has power again and is running at once (it is plugged in, enumerated and
  /// booted by the time its port exists).
  public mutating func plugIn(at now: Duration) {
    framer.reset()
    nextDeadline = nil
    setPower(.running)
  }

  private mutating func enterBooting(at now: Duration) {
    bootIsColdStart = false
    setPower(.booting)
    nextDeadline = now + wakeDelay
    deadlineAction = .finishBooting
  }

  private mutating func setPower(_ new: SimulatedPowerState) {
    guard new != power else { return }
    if new == .running { powerOns += 1 }
    if power == .running { powerOffs += 1 }
    power = new
  }

  /// Records received bytes, deciding what the receiver made of them.
  private mutating func record(_ bytes: [UInt8], command: ReceiverCommand?, at now: Duration) {
    var state = power
    let outcome: InputOutcome
    if responses == .unresponsive {
      outcome = .ignored
    } else if let asleep = wokeFrom {
      state = asleep
      outcome = .wokeReceiver
    } else {
      switch power {
      case .running, .gnssStopped:
        outcome = command.map { handle($0, at: now) } ?? .ignored
      case .backup, .standby:
        // Put to sleep by an earlier command of the same write: these bytes wake it.
        enterBooting(at: now)
        outcome = .wokeReceiver
      case .booting, .hibernate, .off:
        outcome = .lost
      }
    }
    wokeFrom = nil
    received.append(
      ReceivedInput(at: now, bytes: bytes, command: command, powerState: state, outcome: outcome))
    trimReceived()
  }

  private mutating func trimReceived() {
    let excess = received.count - receivedLimit
    guard excess > 0 else { return }
    received.removeFirst(excess)
    receivedForgotten += excess
  }

  /// Records the pending bytes that cannot belong to a frame still in progress: everything
  /// before the earliest place where one could have started (a `$` or `!` with no line feed
  /// after it, a `B5 62` or `A0 A2` whose frame is longer than what has arrived, a last `B5`
  /// or `A0`). With `final`, everything.
  private mutating func flushNoise(at now: Duration, final: Bool) {
    guard !pending.isEmpty else { return }
    let keepFrom = final ? pending.count : Self.frameInProgress(pending) ?? pending.count
    guard keepFrom > 0 else { return }
    record(Array(pending[..<keepFrom]), command: nil, at: now)
    pending.removeSubrange(..<keepFrom)
  }

  static func frameInProgress(_ bytes: [UInt8]) -> Int? {
    let count = bytes.count
    var index = 0
    while index < count {
      switch bytes[index] {
      case 0x24, 0x21:
        if !bytes[index...].contains(0x0A) { return index }
      case 0xB5, 0xA0:
        guard index + 1 < count else { return index }
        let ubx = bytes[index] == 0xB5 && bytes[index + 1] == 0x62
        let sirf = bytes[index] == 0xA0 && bytes[index + 1] == 0xA2
        guard ubx || sirf else { break }
        guard index + 6 <= count else { return index }
        let length =
          ubx
          ? Int(bytes[index + 4]) | Int(bytes[index + 5]) << 8
          : Int(bytes[index + 2]) << 8 | Int(bytes[index + 3])
        // Both frames wrap the payload in 8 bytes: sync, header, checksum (and SiRF's trailer).
        let total = 8 + length
        if total <= 1032, index + total > count { return index }
      default:
        break
      }
      index += 1
    }
    return nil
  }

  // MARK: - Commands

  private mutating func handle(_ command: ReceiverCommand, at now: Duration) -> InputOutcome {
    switch profile {
    case .ublox(let model): return handleUblox(command, model: model, at: now)
    case .mediatek: return handleMediaTek(command, at: now)
    case .sirf: return handleSiRF(command, at: now)
    case .generic: return .ignored
    }
  }

  // MARK: u-blox

  /// u-blox acknowledges input messages of class CFG only (UBX-18010854, UBX-ACK: "Reject
  /// messages to UBX-CFG input messages"); other classes get no answer unless they are polls
  /// it serves.
  private mutating func handleUblox(_ command: ReceiverCommand, model: UbloxModel, at now: Duration)
    -> InputOutcome
  {
    switch command {
    case .ubxReset(_, let resetMode):
      // Never acknowledged: the receiver resets before it could answer.
      switch resetMode {
      case 0x08:
        if power == .running { setPower(.gnssStopped) }
      case 0x09:
        if power == .gnssStopped { setPower(.running) }
      case 0x00, 0x01, 0x02, 0x04:
        framer.reset()
        enterBooting(at: now)
      default:
        return .ignored
      }
      return .carriedOut

    case .ubxPowerRequest(let duration, let flags, _):
      guard flags & 0x02 != 0 else { return .ignored }  // not a backup request
      setPower(.backup)
      if duration > 0 {
        nextDeadline = now + .milliseconds(Int64(duration))
        deadlineAction = .wakeFromTimedBackup
      } else {
        nextDeadline = nil
      }
      return .carriedOut

    case .ubxSetMessageRate(let message, let rates):
      guard model.acceptsMessageRateCommand else { return ubxAnswer(.cfgMsg, accepted: false) }
      if responses == .rejecting { return ubxAnswer(.cfgMsg, accepted: false) }
      messageRates[message] = rates
      return ubxAnswer(.cfgMsg, accepted: true)

    case .ubxSetConfiguration(let layers, let values):
      let accepted =
        model.acceptsConfigurationInterface && responses != .rejecting && layers & 0x07 != 0
        && !values.isEmpty && values.allSatisfy { Self.knownConfigurationKeys.contains($0.key) }
      return ubxAnswer(.cfgValset, accepted: accepted)

    case .ubxPoll(let message):
      if message == .monVer {
        let version = model.version
        replies.append(
          UBX.monVer(
            software: version.software, hardware: version.hardware,
            extensions: version.extensions))
        return .answered
      }
      if message.messageClass == 0x06 { return ubxAnswer(message, accepted: false) }
      return .ignored

    case .ubxOther(let message, let payload):
      if message == .cfgMsg, payload.count == 2, model.acceptsMessageRateCommand,
        responses != .rejecting
      {
        // A poll of one message's rates: the rates on all six ports, then ACK-ACK.
        let id = UBXMessageID(payload[0], payload[1])
        let rates = messageRates[id].map {
          $0.count == 6 ? $0 : [UInt8](repeating: $0[0], count: 6)
        }
        replies.append(
          try! UBX.frame(.cfgMsg, payload: payload + (rates ?? [UInt8](repeating: 0, count: 6))))
        return ubxAnswer(.cfgMsg, accepted: true)
      }
      if message == .cfgCfg, payload.count == 12 || payload.count == 13 {
        return ubxAnswer(.cfgCfg, accepted: responses != .rejecting)
      }
      // Malformed payloads of the messages above, and configuration messages this simulator
      // does not model, are rejected; other classes are not answered.
      if message.messageClass == 0x06 { return ubxAnswer(message, accepted: false) }
      return .ignored

    default:
      return .ignored  // NMEA input ($PUBX,40 …) is not acknowledged
    }
  }

  private mutating func ubxAnswer(_ message: UBXMessageID, accepted: Bool) -> InputOutcome {
    replies.append(UBX.acknowledgement(for: message, accepted: accepted))
    if accepted {
      acknowledgements += 1
      return .acknowledged
    }
    rejections += 1
    return .rejected
  }

  /// `CFG-MSGOUT-NMEA_ID_*` keys on every port (I2C, UART1, UART2, USB, SPI): what
  /// `UBX-CFG-VALSET` may set here. Any other key is rejected, as a receiver rejects keys it
  /// does not know.
  static let knownConfigurationKeys: Set<UInt32> = {
    var keys: Set<UInt32> = []
    for sentence in NMEASentenceType.allCases {
      let uart1 = UbloxCommandSet.messageOutputKey(sentence, port: .uart1)
      for offset in 0...4 { keys.insert(uart1 - 1 + UInt32(offset)) }
    }
    return keys
  }()

  // MARK: MediaTek

  /// `$PMTK` set commands the chip takes without this simulator modelling their effect.
  static let mediatekSetCommands: Set<Int> = [
    0, 220, 223, 251, 255, 256, 285, 286, 300, 301, 313, 319, 320, 330, 351, 352, 353, 386, 397,
    869, 886,
  ]

  private mutating func handleMediaTek(_ command: ReceiverCommand, at now: Duration) -> InputOutcome
  {
    switch command {
    case .mtkStandby(let mode):
      guard mode == 0 || mode == 1 else { return mtkAnswer(161, .invalidCommand) }
      if responses == .rejecting { return mtkAnswer(161, .failed) }
      // The chip acknowledges, then sleeps.
      let outcome = mtkAnswer(161, .succeeded)
      setPower(.standby)
      nextDeadline = nil
      return outcome

    case .mtkSetNMEAOutput(let intervals):
      let valid =
        intervals == [-1]
        || (intervals.count == 19 && intervals.allSatisfy { (0...5).contains($0) })
      guard valid else { return mtkAnswer(314, .invalidCommand) }
      if responses == .rejecting { return mtkAnswer(314, .failed) }
      mtkIntervals =
        intervals == [-1] ? [0, 1, 1, 1, 1, 1] + [Int](repeating: 0, count: 13) : intervals
      return mtkAnswer(314, .succeeded)

    case .mtkOther(let number, let fields):
      switch number {
      case 101, 102, 103, 104:
        // Hot, warm, cold and full cold restart: no acknowledgement; the chip restarts and
        // announces itself with $PMTK010,001.
        framer.reset()
        enterBooting(at: now)
        return .carriedOut
      case 161, 314:
        return mtkAnswer(number, .invalidCommand)  // malformed fields
      case 225:
        guard let mode = fields.first.flatMap({ Int($0) }), [0, 1, 2, 4, 8, 9].contains(mode)
        else { return mtkAnswer(225, .invalidCommand) }
        if responses == .rejecting { return mtkAnswer(225, .failed) }
        let outcome = mtkAnswer(225, .succeeded)
        // Backup mode: left only through the FORCE_ON pin. Periodic modes keep streaming.
        if mode == 4 { setPower(.hibernate) }
        return outcome
      case 414:
        if responses == .rejecting { return mtkAnswer(414, .failed) }
        replies.append(
          NMEAChecksum.frame("PMTK514," + mtkIntervals.map(String.init).joined(separator: ",")))
        return .answered
      case 605:
        if responses == .rejecting { return mtkAnswer(605, .failed) }
        replies.append(NMEAChecksum.frame("PMTK705,AXN_3.8_3333_16070500,0000,SIM-MT3339,1.0"))
        return .answered
      default:
        if Self.mediatekSetCommands.contains(number) {
          return mtkAnswer(number, responses == .rejecting ? .failed : .succeeded)
        }
        return mtkAnswer(number, .unsupported)
      }

    default:
      return .ignored
    }
  }

  private mutating func mtkAnswer(_ command: Int, _ result: MTKAckResult) -> InputOutcome {
    replies.append(MediaTekCommandSet.acknowledgement(command: command, result: result))
    if result == .succeeded {
      acknowledgements += 1
      return .acknowledged
    }
    rejections += 1
    return .rejected
  }

  // MARK: SiRF

  /// SiRF never acknowledges NMEA input (SiRF NMEA Reference Manual): `$PSRF103` is taken
  /// silently; `$PSRF117,16` answers `$PSRF150,0` and hibernates.
  private mutating func handleSiRF(_ command: ReceiverCommand, at now: Duration) -> InputOutcome {
    switch command {
    case .sirfSetRate:
      return .carriedOut
    case .sirfTurnOff(let code):
      guard code == 16, responses != .rejecting else { return .ignored }
      replies.append(NMEAChecksum.frame("PSRF150,0"))
      setPower(.hibernate)
      nextDeadline = nil
      return .carriedOut
    default:
      return .ignored
    }
  }
}

func firstIndex(of needle: [UInt8], in haystack: [UInt8]) -> Int? {
  guard !needle.isEmpty, needle.count <= haystack.count else { return nil }
  for start in 0...(haystack.count - needle.count)
  where haystack[start] == needle[0]
    && haystack[start..<(start + needle.count)].elementsEqual(needle)
  {
    return start
  }
  return nil
}
