import Chipsets
import NMEA
import Replay

/// What a test looks at and changes on a simulated receiver, on a pty (``ReceiverSimulator``)
/// or in-process (``ReplayConnector``): the simulated chip (``ReceiverModel``) and the
/// recording it plays (``Playback``), which both keep behind their own lock. Written once
/// here; what differs (plugging, connecting, threads) is each one's own.
///
/// `@unchecked Sendable`: a public class that is subclassed, so it cannot be final; its one
/// property is a `let` of a `Sendable` type.
public class SimulatedReceiver: @unchecked Sendable {
  // @unchecked (here and in the two subclasses): a class with subclasses cannot be checked;
  // every stored property of the three is a constant of a Sendable type.
  let chip: any SimulatedChipCore

  init(chip: any SimulatedChipCore) { self.chip = chip }

  /// The chip's power state now.
  public var powerState: SimulatedPowerState { chip.readingModel { $0.power } }
  /// Counters since the receiver was made: epochs (bursts) and their sentences and bytes
  /// handed out, and those lost while nobody read; replies; power transitions; loops;
  /// unplugs and replugs.
  public var counters: SimulatorCounters { chip.snapshotCounters() }
  /// What the driver wrote, decoded, in order: the newest `receivedLimit` inputs of the
  /// configuration.
  public var received: [ReceivedInput] { chip.readingModel { $0.received } }
  /// The commands among ``received``.
  public var receivedCommands: [ReceiverCommand] { received.compactMap(\.command) }

  /// Changes how commands are treated from now on.
  public func setResponses(_ responses: ResponseMode) {
    chip.changingModel { model, _ in model.responses = responses }
  }

  /// Changes how fast the recording plays from the next epoch on.
  public func setPace(_ pace: Pace) {
    chip.changingPlayback { $0.pace = pace }
  }

  /// Forgets what has been received so far (counters stay).
  public func clearReceived() {
    chip.changingModel { model, _ in model.clearReceived() }
  }

  /// Cuts and restores the main power (or pulses the ON_OFF pin): the chip boots (for the
  /// wake delay) from any state, hibernate included, and runs. With physics, what it knew
  /// survives only with backup power (``setBackupPower(_:)``).
  public func powerCycle() {
    chip.changingModel { model, now in model.powerCycle(at: now) }
  }

  // MARK: Physics (nil or empty without it)

  /// The chip's physics as it is now: knowledge, starts, aiding, meter.
  public var physics: ReceiverPhysics? { chip.readingModel { $0.physics } }

  /// The energy meter read now.
  public var energy: EnergyReport? {
    var report: EnergyReport?
    chip.changingModel { model, now in report = model.energy(at: now) }
    return report
  }

  /// Every start so far, with its kind and time to first fix.
  public var starts: [StartRecord] { physics?.starts ?? [] }

  /// The aiding received, decoded, with when it arrived and the simulator's UTC then.
  public var aidingReceived: [AidingReceived] { physics?.aiding ?? [] }

  /// The simulator's UTC now (the physics' clock); `nil` without physics.
  public var utcNow: UTCTimestamp? {
    var utc: UTCTimestamp?
    chip.changingModel { model, now in utc = model.physics?.utc(at: now) }
    return utc
  }

  /// Connects or removes the backup supply: without it the next power cut (``powerCycle()``,
  /// an unplug) loses time, almanac, ephemeris and position, and the next start is cold.
  public func setBackupPower(_ on: Bool) {
    chip.changingModel { model, now in model.setBackupPower(on, at: now) }
  }

  /// Drives a pin of the receiver high or low (MediaTek FORCE_ON, u-blox EXTINT).
  public func drivePin(_ pin: ReceiverPin, high: Bool) {
    chip.changingModel { model, now in model.drivePin(pin, high: high, at: now) }
  }

  /// Drives `pin` high, then low: the pulse that wakes a chip from a pin-only sleep.
  public func pulsePin(_ pin: ReceiverPin) {
    drivePin(pin, high: true)
    drivePin(pin, high: false)
  }
}

/// The state of a simulated receiver, as its core keeps it behind its lock.
protocol SimulatedChipState {
  var model: ReceiverModel { get set }
  var playback: Playback { get set }
  func snapshotCounters() -> SimulatorCounters
}

/// The lock and the state behind a ``SimulatedReceiver``: ``SimulatorCore`` (a pty and two
/// threads) or ``ReplayCore`` (a connection and the driver's clock).
protocol SimulatedChipCore: AnyObject, Sendable {
  associatedtype State: SimulatedChipState
  /// Reads the state under the lock.
  func state<T>(_ body: (State) -> T) -> T
  /// Changes the state under the lock, given the chip's time now, and follows what the change
  /// did to the chip's power (streaming starts or stops).
  func mutate(_ body: (inout State, Duration) -> Void)
}

extension SimulatedChipCore {
  func readingModel<T>(_ body: (ReceiverModel) -> T) -> T {
    state { body($0.model) }
  }

  func changingModel(_ body: (inout ReceiverModel, Duration) -> Void) {
    mutate { state, now in body(&state.model, now) }
  }

  func changingPlayback(_ body: (inout Playback) -> Void) {
    mutate { state, _ in body(&state.playback) }
  }

  func snapshotCounters() -> SimulatorCounters { state { $0.snapshotCounters() } }
}
