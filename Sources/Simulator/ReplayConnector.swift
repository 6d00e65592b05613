import Chipsets
import NMEA
import POSIX
import Replay
import SerialGPS

/// A recording as a receiver in the same process, for tests of code built on ``GPSReceiver``:
/// no pty, no thread of its own, and the recording's epochs come due on the receiver's
/// ``DriverClock``. With a ``ManualClock`` a test advances time and gets exactly the epochs
/// that are due by then.
///
/// ```swift
/// let clock = ManualClock()
/// let replay = try ReplayConnector(recordingAt: "fixtures/ublox-m8-drive.nmea", clock: clock)
/// let receiver = GPSReceiver(connector: replay, clock: clock)
/// let events = receiver.subscribe()
/// clock.advance(by: .seconds(10))   // ten epochs come due: ten fixes
/// ```
///
/// The chip is modelled as the pty simulator models it (``ReceiverModel``): with a profile
/// other than ``ReceiverProfile/generic`` it acknowledges the driver's commands, stops
/// streaming in standby and resumes when woken, so a receiver's linger, hold and power-off
/// work in-process too. The driver must be given the same clock.
///
/// Timing: the chip runs from the moment the connector is made; its first epoch comes one
/// epoch interval later (a receiver outputs at its next epoch), then one per recorded interval
/// divided by the pace. Epochs that come due before the first connection wait for it, so a test
/// may advance the clock right after subscribing. After that, epochs that come due while no
/// connection is open are lost, as a real receiver's output is when nobody reads it (a gated
/// receiver is in standby then anyway). After a wake the first epoch follows one interval
/// later. ``Pace/asFastAsPossible`` hands out the next epoch whenever the reader has taken the
/// previous one.
///
/// `@unchecked Sendable`: a subclass of the non-final ``SimulatedReceiver``; its state is in
/// ``ReplayCore``, behind its lock.
public final class ReplayConnector: SimulatedReceiver, ReceiverConnector,
  ObservableSimulatedReceiver, @unchecked Sendable
{
  /// How a replay behaves (the simulated receivers' one options type).
  public typealias Configuration = SimulatorOptions

  let core: ReplayCore
  public let deviceName: String
  public let chipsetHint: ChipsetHint?

  /// A replay of `recording`, timed by `clock` (give the ``GPSReceiver`` the same clock).
  public init(
    recording: Recording, configuration: Configuration = Configuration(),
    clock: any DriverClock
  ) {
    let name = configuration.deviceName ?? "replay:\(recording.name)"
    deviceName = name
    var configuration = configuration
    if configuration.profile == nil { configuration.profile = .inferred(from: recording) }
    let family = configuration.profile!.family
    chipsetHint = ChipsetHint(
      family: configuration.announcesChipset && family.hasCommands ? family : nil,
      interface: configuration.interface)
    core = ReplayCore(
      recording: recording, configuration: configuration, clock: clock, deviceName: name)
    super.init(chip: core)
  }

  /// A replay of the recording at `path` (a fixture, or a file from `serialgps record`).
  public convenience init(
    recordingAt path: String, profile: ReceiverProfile? = nil, pace: Pace = .realTime,
    loops: Bool = false, clock: any DriverClock
  ) throws(RecordingError) {
    self.init(
      recording: try Recording.load(path: path),
      configuration: Configuration(profile: profile, pace: pace, loops: loops), clock: clock)
  }

  deinit { core.stop() }

  public func connect() async throws -> any ReceiverConnection {
    try core.connect()
  }

  public func startWatching(appeared: @escaping @Sendable () -> Void) {
    core.setAppeared(appeared)
  }

  public func stopWatching() {
    core.setAppeared(nil)
  }

  // MARK: - What a test can look at

  /// The recording replayed.
  public var recording: Recording { core.recording }
  /// The chip imitated.
  public var profile: ReceiverProfile { core.profile }
  /// Whether a connection is open.
  public var isConnected: Bool { core.state { $0.link != nil } }
  /// Whether the device is there (not unplugged with ``hangUp()``).
  public var isPluggedIn: Bool { core.state { $0.pluggedIn } }
  /// Whether bytes due by the clock wait for the open connection's reader: a test that steps
  /// a virtual clock waits for them to be read first, so that a reader starved of CPU is not
  /// outrun by the clock.
  public var hasUnreadBytes: Bool { core.hasUnreadInput(nil) }

  // MARK: - What a test can do

  /// Unplugs the receiver: a blocked read throws (the driver reports `disconnected`), the
  /// chip loses power, and connecting fails until ``replug()``. Idempotent.
  public func hangUp() {
    core.hangUp()
  }

  /// Plugs the receiver back in, running at once where its recording stopped; the driver
  /// watching the connector is told the device appeared, so it reconnects without waiting
  /// for its backoff. Does nothing while plugged in.
  public func replug() {
    core.replug()
  }
}

/// Why a replay connection failed.
public struct ReplayError: Error, Sendable, Hashable, CustomStringConvertible {
  /// What happened.
  public enum Reason: Sendable, Hashable {
    /// ``ReplayConnector/hangUp()`` unplugged the device.
    case unplugged
    /// A connection is already open; a real tty is opened by one program at a time.
    case busy
  }

  public let device: String
  public let reason: Reason

  public init(device: String, reason: Reason) {
    self.device = device
    self.reason = reason
  }

  public var description: String {
    switch reason {
    case .unplugged:
      return "\(device) is unplugged (the test called hangUp()); replug() brings it back."
    case .busy:
      return "\(device) is already open: a replay, like a serial port, serves one connection "
        + "at a time. Close the other one first."
    }
  }
}

extension ReplayError: FailureReasonConvertible {
  public var failureReason: FailureReason {
    switch reason {
    case .unplugged: return FailureReason(.unplugged, description)
    case .busy: return FailureReason(.busy, description)
    }
  }
}
