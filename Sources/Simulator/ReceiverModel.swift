import Chipsets
import NMEA
import Replay

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

  /// The physics (starts, errors, ephemeris, currents, aiding); `nil`: the recording plays
  /// as it is, as before physics existed.
  public private(set) var physics: ReceiverPhysics?
  /// What wakes the chip from u-blox backup: UART RX activity and the EXTINT pin, as the
  /// last `UBX-RXM-PMREQ` set them (its 8-byte form keeps both).
  public private(set) var backupWakeSources = BackupWakeSources.uartAndPin
  /// The chip's periodic mode (`$PMTK225,1|2,…`), while on.
  public private(set) var periodic: PeriodicMode?
  /// Whether u-blox answers aiding with `UBX-MGA-ACK-DATA0` (`CFG-NAVX5` ackAiding on M8,
  /// `CFG-NAVSPG-ACKAIDING` on M9 and M10; off by default, as on the chips).
  public private(set) var acknowledgesAiding = false
  /// The level of each pin the host drives (all low at the start).
  public private(set) var pinLevels: [ReceiverPin: Bool] = [:]
  /// The u-blox messages the host switched on (RAM layer); NAV-PVT, NAV-DOP, NAV-SAT and
  /// NAV-EOE among them are sent with each epoch when physics is modelled.
  public private(set) var ubxNavigationOutput: Set<UBXOutputMessage> = []

  /// Which of the wake-up sources of `UBX-RXM-PMREQ` can end a backup.
  public struct BackupWakeSources: Sendable, Hashable {
    /// Activity on UART RX (`uartrx`, bit 3).
    public var uart: Bool
    /// An edge on EXTINT (`extint0`, bit 5, or `extint1`, bit 6).
    public var pin: Bool

    public static let uartAndPin = BackupWakeSources(uart: true, pin: true)

    public init(uart: Bool, pin: Bool) {
      self.uart = uart
      self.pin = pin
    }
  }

  /// MediaTek's periodic mode: on for ``runTime``, then asleep for ``sleepTime``
  /// (``SimulatedPowerState/hibernate`` for periodic backup, type 1;
  /// ``SimulatedPowerState/standby`` for periodic standby, type 2), over and over.
  public struct PeriodicMode: Sendable, Hashable {
    /// 1: periodic backup; 2: periodic standby.
    public var type: Int
    public var runTime: Duration
    public var sleepTime: Duration
  }

  private enum DeadlineAction {
    /// Booting ends: running, with the start-up message where the chip sends one.
    case finishBooting
    /// A timed `UBX-RXM-PMREQ` ends: the receiver wakes.
    case wakeFromTimedBackup
    /// A periodic run ends: the chip sleeps (once it has a fix).
    case periodicSleep
    /// A periodic sleep ends: the chip wakes.
    case periodicWake
  }

  /// - Parameters:
  ///   - physics: the physics to model; `nil` plays the recording's epochs as they are.
  ///   - recordingStart: the recording's first UTC time (``Recording/firstTimestamp``), the
  ///     physics' UTC at time zero unless its configuration names one.
  ///   - epochInterval: the recording's epoch interval, to which epoch times are rounded.
  public init(
    profile: ReceiverProfile, power: SimulatedPowerState = .running,
    responses: ResponseMode = .normal, wakeDelay: Duration = .milliseconds(50),
    receivedLimit: Int = 10_000, physics: PhysicsConfiguration? = nil,
    recordingStart: UTCTimestamp? = nil, epochInterval: Duration = .seconds(1),
    at start: Duration = .zero
  ) {
    self.profile = profile
    self.power = power == .booting ? .running : power
    self.responses = responses
    self.wakeDelay = max(.zero, wakeDelay)
    self.receivedLimit = max(0, receivedLimit)
    self.physics = physics.map {
      ReceiverPhysics(
        configuration: $0, power: self.power, at: start, recordingStart: recordingStart,
        epochInterval: epochInterval)
    }
  }

  /// Whether a byte on RX wakes the chip from its current sleep.
  public var wakesOnBytes: Bool {
    switch power {
    case .standby: return true
    case .backup: return backupWakeSources.uart
    default: return false
    }
  }

  // MARK: - Physics

  /// The epoch the chip sends at `now`, made from the recording's `burst`: the same bytes
  /// without physics; with it, as ``ReceiverPhysics`` makes it (no fix while acquiring, the
  /// modelled error after).
  public mutating func epoch(_ burst: ArraySlice<UInt8>, at now: Duration) -> [UInt8] {
    guard physics != nil else { return Array(burst) }
    var bytes = physics!.render(
      burst, at: now, style: EpochStyle(profile), addsErrorEstimate: errorEstimateSwitchedOn)
    if case .ublox = profile, !ubxNavigationOutput.isEmpty {
      let horizontal = physics!.horizontalError(at: now)
      let vertical = horizontal.map { physics!.figures.verticalErrorRatio * $0 / 2.0.squareRoot() }
      bytes += UBXEpochEncoder.frames(
        for: bytes, messages: ubxNavigationOutput, horizontalError: horizontal,
        verticalError: vertical)
    }
    return bytes
  }

  /// The energy meter read at `now`; `nil` without physics.
  public func energy(at now: Duration) -> EnergyReport? { physics?.energy(at: now) }

  /// Connects or removes the backup supply (a coin cell, a supercapacitor): without it the
  /// next main power cut loses everything and the start after it is cold.
  public mutating func setBackupPower(_ on: Bool, at now: Duration) {
    physics?.setBackupPower(on, at: now)
  }

  /// The host drives `pin` to `high` at `now`; returns what the chip sends (MediaTek's
  /// start-up message after a wake comes when booting ends, from ``advance(to:)``).
  ///
  /// MediaTek FORCE_ON: a high level wakes the chip from backup (`$PMTK225,4`, or the sleep
  /// of a periodic backup). u-blox EXTINT: an edge wakes it from backup when the PMREQ's
  /// wake-up sources include the pin. Other changes do nothing.
  public mutating func drivePin(_ pin: ReceiverPin, high: Bool, at now: Duration) {
    applyDeadline(now)
    let was = pinLevels[pin] ?? false
    pinLevels[pin] = high
    guard was != high, responses != .unresponsive else { return }
    switch (pin, profile) {
    case (.forceOn, .mediatek) where high && power == .hibernate:
      flushNoise(at: now, final: true)
      framer.reset()
      enterBooting(at: now)
    case (.extint, .ublox) where power == .backup && backupWakeSources.pin:
      flushNoise(at: now, final: true)
      framer.reset()
      enterBooting(at: now)
    default:
      break
    }
  }

  /// Whether the host switched GST on: `$PMTK314` field 7 on MediaTek, `CFG-MSG` F0 07 or
  /// `CFG-MSGOUT-NMEA_ID_GST_*` on u-blox.
  private var errorEstimateSwitchedOn: Bool {
    switch profile {
    case .mediatek: return mtkIntervals[7] > 0
    case .ublox: return gstSwitchedOn
    default: return false
    }
  }
  private var gstSwitchedOn = false

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
    if responses != .unresponsive, wakesOnBytes {
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
      case .rtcm3(let view):
        frames.append((RTCM3.frame(message: view.message), false, nil))
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
      setPower(.running, at: deadline)
      if profile == .mediatek {
        if bootIsColdStart { replies.append(NMEAChecksum.frame("PMTK011,MTKGPS")) }
        replies.append(NMEAChecksum.frame("PMTK010,001"))
      }
      if let periodic {
        nextDeadline = deadline + periodic.runTime
        deadlineAction = .periodicSleep
        applyDeadline(now)
      }
    case .wakeFromTimedBackup:
      guard power == .backup else { return }
      enterBooting(at: deadline)
      applyDeadline(now)  // the boot may be over by now too
    case .periodicSleep:
      guard let periodic, power == .running else { return }
      if let physics, !physics.hasFix {
        // The chip enters its sleep only after a fix: try again an epoch later.
        nextDeadline = deadline + .seconds(1)
        deadlineAction = .periodicSleep
      } else {
        flushNoise(at: deadline, final: true)
        setPower(periodic.type == 1 ? .hibernate : .standby, at: deadline)
        nextDeadline = deadline + periodic.sleepTime
        deadlineAction = .periodicWake
      }
      applyDeadline(now)
    case .periodicWake:
      guard periodic != nil, power == .hibernate || power == .standby else { return }
      enterBooting(at: deadline)
      applyDeadline(now)
    }
  }

  /// Power cut and restored, or the ON_OFF / FORCE_ON pin pulsed: boots from any state, for
  /// ``wakeDelay``. MediaTek then announces itself with `$PMTK011,MTKGPS` and `$PMTK010,001`.
  public mutating func powerCycle(at now: Duration) {
    flushNoise(at: now, final: true)
    framer.reset()
    periodic = nil
    setPower(.off, at: now)
    physics?.lostMainPower(at: now)
    enterBooting(at: now)
    bootIsColdStart = true
  }

  /// The receiver lost power (unplugged).
  public mutating func unplug(at now: Duration) {
    flushNoise(at: now, final: true)
    framer.reset()
    nextDeadline = nil
    periodic = nil
    setPower(.off, at: now)
    physics?.lostMainPower(at: now)
  }

  /// The receiver has power again and is running at once (it is plugged in, enumerated and
  /// booted by the time its port exists).
  public mutating func plugIn(at now: Duration) {
    framer.reset()
    nextDeadline = nil
    setPower(.running, at: now)
  }

  private mutating func enterBooting(at now: Duration) {
    bootIsColdStart = false
    setPower(.booting, at: now)
    nextDeadline = now + wakeDelay
    deadlineAction = .finishBooting
  }

  private mutating func setPower(_ new: SimulatedPowerState, at now: Duration) {
    guard new != power else { return }
    if new == .running { powerOns += 1 }
    if power == .running { powerOffs += 1 }
    power = new
    physics?.powerChanged(to: new, at: now)
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
        // Put to sleep by an earlier command of the same write: these bytes wake it, unless
        // only a pin or a timer can.
        if wakesOnBytes {
          enterBooting(at: now)
          outcome = .wokeReceiver
        } else {
          outcome = .lost
        }
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
    case .ubxReset(let mask, let resetMode):
      // Never acknowledged: the receiver resets before it could answer. The mask says what
      // the reset clears (bit 0 ephemeris, 1 almanac, 4 position, 8 RTC; 0xFFFF everything).
      if mask != 0, resetMode != 0x08, resetMode != 0x09 {
        physics?.clear(
          ephemeris: mask & 0x0001 != 0, almanacAndPosition: mask & 0x0012 != 0,
          time: mask & 0x0100 != 0)
      }
      switch resetMode {
      case 0x08:
        if power == .running { setPower(.gnssStopped, at: now) }
      case 0x09:
        if power == .gnssStopped { setPower(.running, at: now) }
      case 0x00, 0x01, 0x02, 0x04:
        framer.reset()
        enterBooting(at: now)
      default:
        return .ignored
      }
      return .carriedOut

    case .ubxPowerRequest(let duration, let flags, let sources):
      // Not a backup request, or a receiver that ignores them.
      guard flags & 0x02 != 0, responses != .ignoringBackupRequest else { return .ignored }
      // The 8-byte form wakes on UART RX and EXTINT; the 16-byte form on the sources it
      // lists: uartrx (bit 3), extint0 (bit 5), extint1 (bit 6).
      backupWakeSources =
        sources.map { BackupWakeSources(uart: $0 & 0x08 != 0, pin: $0 & 0x60 != 0) }
        ?? .uartAndPin
      setPower(.backup, at: now)
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
      if message == UBXMessageID(0xF0, 0x07) { gstSwitchedOn = rates.contains { $0 > 0 } }
      if let navigation = UBXOutputMessage(id: message) {
        if rates.contains(where: { $0 > 0 }) {
          ubxNavigationOutput.insert(navigation)
        } else {
          ubxNavigationOutput.remove(navigation)
        }
      }
      return ubxAnswer(.cfgMsg, accepted: true)

    case .ubxSetConfiguration(let layers, let values):
      let accepted =
        model.acceptsConfigurationInterface && responses != .rejecting && layers & 0x07 != 0
        && !values.isEmpty && values.allSatisfy { Self.knownConfigurationKeys.contains($0.key) }
      if accepted { applyConfiguration(values) }
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
      if message == Self.cfgRxm, payload.count == 2, model == .m8 {
        // Power save mode (lpMode 1) or continuous (0), M8 only (M9 and later: CFG-PM).
        let accepted = responses != .rejecting && [0, 1, 4].contains(payload[1])
        if accepted { physics?.powerSave = payload[1] == 1 }
        return ubxAnswer(message, accepted: accepted)
      }
      if message == Self.cfgNavx5, payload.count == 40 || payload.count == 44, model == .m8 {
        // mask1 bit 10 (ackAid) applies ackAiding, byte 17.
        let accepted = responses != .rejecting
        if accepted, payload[3] & 0x04 != 0 { acknowledgesAiding = payload[17] != 0 }
        return ubxAnswer(message, accepted: accepted)
      }
      if message == Self.mgaIni {
        return handleAiding(payload, at: now)
      }
      // Malformed payloads of the messages above, and configuration messages this simulator
      // does not model, are rejected; other classes are not answered.
      if message.messageClass == 0x06 { return ubxAnswer(message, accepted: false) }
      return .ignored

    default:
      return .ignored  // NMEA input ($PUBX,40 …) is not acknowledged
    }
  }

  static let cfgRxm = UBXMessageID(0x06, 0x11)
  static let cfgNavx5 = UBXMessageID(0x06, 0x23)
  static let mgaIni = UBXMessageID(0x13, 0x40)
  static let mgaAck = UBXMessageID(0x13, 0x60)
  /// `CFG-PM-OPERATEMODE` (0 full power, 1 PSMOO, 2 PSMCT) and `CFG-NAVSPG-ACKAIDING`.
  static let powerModeKey: UInt32 = 0x20D0_0001
  static let acknowledgeAidingKey: UInt32 = 0x1011_0025

  /// What the simulator models of an accepted `CFG-VALSET`: GST output, power save mode and
  /// aiding acknowledgements.
  private mutating func applyConfiguration(_ values: [UBXConfigurationValue]) {
    let gstKeys = (0...4).map {
      UbloxCommandSet.messageOutputKey(.gst, port: .uart1) - 1 + UInt32($0)
    }
    for value in values {
      if gstKeys.contains(value.key) { gstSwitchedOn = value.value > 0 }
      if value.key == Self.powerModeKey { physics?.powerSave = value.value == 2 }
      if value.key == Self.acknowledgeAidingKey { acknowledgesAiding = value.value != 0 }
      if let navigation = UBXOutputMessage(outputKey: value.key) {
        if value.value > 0 {
          ubxNavigationOutput.insert(navigation)
        } else {
          ubxNavigationOutput.remove(navigation)
        }
      }
    }
  }

  /// `UBX-MGA-INI-TIME_UTC` (type 0x10, 24 bytes) and `-POS_LLH` (type 0x01, 20 bytes): the
  /// values recorded, `UBX-MGA-ACK-DATA0` sent when acknowledgements are on. Other MGA-INI
  /// types are acknowledged and not modelled.
  private mutating func handleAiding(_ p: [UInt8], at now: Duration) -> InputOutcome {
    func u16(_ i: Int) -> Int { Int(p[i]) | Int(p[i + 1]) << 8 }
    func u32(_ i: Int) -> UInt32 {
      UInt32(p[i]) | UInt32(p[i + 1]) << 8 | UInt32(p[i + 2]) << 16 | UInt32(p[i + 3]) << 24
    }
    func i32(_ i: Int) -> Int32 { Int32(bitPattern: u32(i)) }
    var content: AidingReceived.Content?
    var valid = p.count >= 2 && p[1] == 0
    if valid, p[0] == 0x10, p.count == 24 {
      let date = UTCDate(year: u16(4), month: p[6], day: p[7])
      if p[6] >= 1, p[6] <= 12, p[7] >= 1, p[7] <= 31, p[8] < 24, p[9] < 60, p[10] < 61,
        u32(12) < 1_000_000_000
      {
        let time = UTCTime(hour: p[8], minute: p[9], second: p[10], nanoseconds: u32(12))
        let accuracy = Double(u16(16)) + Double(u32(20)) / 1e9
        content = .time(UTCTimestamp(date: date, time: time), accuracySeconds: accuracy)
      } else {
        valid = false
      }
    } else if valid, p[0] == 0x01, p.count == 20 {
      content = .position(
        latitude: Double(i32(4)) / 1e7, longitude: Double(i32(8)) / 1e7,
        altitude: Double(i32(12)) / 100, accuracyMetres: Double(u32(16)) / 100)
    } else if valid {
      valid = [0x00, 0x01, 0x10, 0x11, 0x20, 0x21, 0x30, 0x40].contains(p[0])
    }
    if let content { physics?.receive(content, at: now) }
    guard acknowledgesAiding else { return valid ? .carriedOut : .ignored }
    // UBX-MGA-ACK-DATA0: type (1 accepted, 0 not), version 0, infoCode (0 accepted,
    // 3 size mismatch), the message's ID, the first four bytes of its payload.
    let start = Array(p.prefix(4)) + [UInt8](repeating: 0, count: max(0, 4 - p.count))
    replies.append(
      try! UBX.frame(Self.mgaAck, payload: [valid ? 1 : 0, 0, valid ? 0 : 3, 0x40] + start))
    if valid {
      acknowledgements += 1
      return .acknowledged
    }
    rejections += 1
    return .rejected
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
    keys.insert(powerModeKey)
    keys.insert(acknowledgeAidingKey)
    for message in UBXOutputMessage.allCases {
      if let outputKeys = message.outputKeys { keys.formUnion(outputKeys) }
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
      setPower(.standby, at: now)
      nextDeadline = nil
      periodic = nil
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
        // announces itself with $PMTK010,001. Warm clears the ephemeris, cold everything.
        if number >= 102 {
          physics?.clear(ephemeris: true, almanacAndPosition: number >= 103, time: number >= 103)
        }
        framer.reset()
        periodic = nil
        enterBooting(at: now)
        return .carriedOut
      case 740, 741:
        return handleAiding(number, fields, at: now)
      case 161, 314:
        return mtkAnswer(number, .invalidCommand)  // malformed fields
      case 225:
        guard let mode = fields.first.flatMap({ Int($0) }), [0, 1, 2, 4, 8, 9].contains(mode)
        else { return mtkAnswer(225, .invalidCommand) }
        let times = fields.dropFirst().map { Int($0) }
        let periodRange = 1000...518_400_000
        if mode == 1 || mode == 2 {
          // $PMTK225,<type>,<run ms>,<sleep ms>,<2nd run ms>,<2nd sleep ms>.
          guard times.count >= 2, let run = times[0], let sleep = times[1],
            periodRange.contains(run), periodRange.contains(sleep)
          else { return mtkAnswer(225, .invalidCommand) }
          if responses == .rejecting { return mtkAnswer(225, .failed) }
          periodic = PeriodicMode(
            type: mode, runTime: .milliseconds(run), sleepTime: .milliseconds(sleep))
          nextDeadline = now + .milliseconds(run)
          deadlineAction = .periodicSleep
          return mtkAnswer(225, .succeeded)
        }
        if responses == .rejecting { return mtkAnswer(225, .failed) }
        let outcome = mtkAnswer(225, .succeeded)
        if mode == 0, periodic != nil {
          periodic = nil
          nextDeadline = nil
        }
        // Backup mode: left only through the FORCE_ON pin. AlwaysLocate (8, 9) is
        // acknowledged and not modelled: the chip keeps streaming.
        if mode == 4 {
          periodic = nil
          setPower(.hibernate, at: now)
          nextDeadline = nil
        }
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

  /// `$PMTK740,YYYY,MM,DD,hh,mm,ss` (UTC time) and
  /// `$PMTK741,lat,lon,alt,YYYY,MM,DD,hh,mm,ss` (position, degrees and metres).
  private mutating func handleAiding(_ number: Int, _ fields: [String], at now: Duration)
    -> InputOutcome
  {
    let dateFields = number == 740 ? fields : Array(fields.dropFirst(3))
    let numbers = dateFields.map { Int($0) }
    guard fields.count == (number == 740 ? 6 : 9), !numbers.contains(nil),
      let year = numbers[0], let month = numbers[1], let day = numbers[2],
      let hour = numbers[3], let minute = numbers[4], let second = numbers[5],
      (1...12).contains(month), (1...31).contains(day), (0...23).contains(hour),
      (0...59).contains(minute), (0...60).contains(second)
    else { return mtkAnswer(number, .invalidCommand) }
    let time = UTCTimestamp(
      date: UTCDate(year: year, month: UInt8(month), day: UInt8(day)),
      time: UTCTime(hour: UInt8(hour), minute: UInt8(minute), second: UInt8(second)))
    if number == 741 {
      guard let latitude = Double(fields[0]), let longitude = Double(fields[1]),
        let altitude = Double(fields[2]), abs(latitude) <= 90, abs(longitude) <= 180
      else { return mtkAnswer(number, .invalidCommand) }
      if responses == .rejecting { return mtkAnswer(number, .failed) }
      physics?.receive(
        .position(
          latitude: latitude, longitude: longitude, altitude: altitude, accuracyMetres: nil),
        at: now)
    } else {
      if responses == .rejecting { return mtkAnswer(number, .failed) }
      physics?.receive(.time(time, accuracySeconds: nil), at: now)
    }
    return mtkAnswer(number, .succeeded)
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
      setPower(.hibernate, at: now)
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
