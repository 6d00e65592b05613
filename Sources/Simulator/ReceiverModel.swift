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
  public internal(set) var acknowledgements = 0
  public internal(set) var rejections = 0

  /// When the receiver next changes state by itself (the end of booting, a timed backup);
  /// call ``advance(to:)`` then.
  public internal(set) var nextDeadline: Duration?
  var deadlineAction = DeadlineAction.finishBooting
  /// The boot under way follows a power cycle: MediaTek then sends its whole banner.
  private var bootIsColdStart = false

  var framer = NMEAFramer()
  /// Bytes received since the last recorded input.
  private var pending: [UInt8] = []
  /// The state the receiver was woken from by the first pending byte, until that byte is
  /// recorded.
  private var wokeFrom: SimulatedPowerState?
  /// Replies produced while handling the current input.
  var replies: [[UInt8]] = []
  /// u-blox `UBX-CFG-MSG` rates set so far (message → rates), for polls.
  var messageRates: [UBXMessageID: [UInt8]] = [:]
  /// MediaTek `$PMTK314` intervals, for `$PMTK414`.
  var mtkIntervals = [0, 1, 1, 1, 1, 1] + [Int](repeating: 0, count: 13)
  /// The `$PCAS` and `$PAIR` command models (their own files).
  var casic = CASICModel()
  var airoha = AirohaModel()

  /// The physics (starts, errors, ephemeris, currents, aiding); `nil`: the recording plays
  /// as it is, as before physics existed.
  public internal(set) var physics: ReceiverPhysics?
  /// What wakes the chip from u-blox backup: UART RX activity and the EXTINT pin, as the
  /// last `UBX-RXM-PMREQ` set them (its 8-byte form keeps both).
  public internal(set) var backupWakeSources = BackupWakeSources.uartAndPin
  /// The chip's periodic mode (`$PMTK225,1|2,…`), while on.
  public internal(set) var periodic: PeriodicMode?
  /// Whether u-blox answers aiding with `UBX-MGA-ACK-DATA0` (`CFG-NAVX5` ackAiding on M8,
  /// `CFG-NAVSPG-ACKAIDING` on M9 and M10; off by default, as on the chips).
  public internal(set) var acknowledgesAiding = false
  /// The level of each pin the host drives (all low at the start).
  public private(set) var pinLevels: [ReceiverPin: Bool] = [:]
  /// The u-blox messages the host switched on (RAM layer); NAV-PVT, NAV-DOP, NAV-SAT and
  /// NAV-EOE among them are sent with each epoch when physics is modelled.
  public internal(set) var ubxNavigationOutput: Set<UBXOutputMessage> = []

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

  enum DeadlineAction {
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
    case .standby: return profile.standbyWakesOnBytes
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
      burst, at: now, style: profile.epochStyle, addsErrorEstimate: errorEstimateSwitchedOn)
    // Only u-blox's commands switch UBX navigation messages on.
    if !ubxNavigationOutput.isEmpty {
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
    switch profile.pinEffect(pin, high: high, power: power, backupWakeSources: backupWakeSources) {
    case .wake:
      flushNoise(at: now, final: true)
      framer.reset()
      enterBooting(at: now)
    case .standby:
      flushNoise(at: now, final: true)
      setPower(.standby, at: now)
      nextDeadline = nil
    case nil:
      break
    }
  }

  /// Whether the host switched GST on: `$PMTK314` field 7 on MediaTek, `CFG-MSG` F0 07 or
  /// `CFG-MSGOUT-NMEA_ID_GST_*` on u-blox, `$PCAS03` on CASIC. Each is changed only by its own
  /// family's commands, so the others stay off.
  private var errorEstimateSwitchedOn: Bool {
    mtkIntervals[7] > 0 || gstSwitchedOn || casic.errorEstimateSwitchedOn
  }
  var gstSwitchedOn = false

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
      case .casic:
        frames.append((frame.bytes, false, nil))
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
      replies += profile.startMessages(coldStart: bootIsColdStart)
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

  mutating func enterBooting(at now: Duration) {
    bootIsColdStart = false
    setPower(.booting, at: now)
    nextDeadline = now + wakeDelay
    deadlineAction = .finishBooting
  }

  mutating func setPower(_ new: SimulatedPowerState, at now: Duration) {
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
