import Chipsets
import Replay

/// How a simulated receiver behaves: one type for both, the receiver on a pty
/// (``ReceiverSimulator``, whose `Configuration` it is) and the one in the same process
/// (``ReplayConnector``, likewise), so that a test or a tool sets either up the same way. The
/// last groups of fields apply to one of them only, as said.
public struct SimulatorOptions: Sendable {
  /// Which chip it imitates; `nil` (the default): the chip the recording came from
  /// (``ReceiverProfile/inferred(from:)``), so that it answers the commands the driver sends
  /// once it has identified the receiver from the same bytes. ``ReceiverProfile/generic``
  /// streams whenever it has power and takes no commands.
  public var profile: ReceiverProfile?
  /// How fast the recording plays (for ``ReplayConnector``, against its clock).
  public var pace: Pace
  /// Whether the recording starts again after its last epoch; otherwise the receiver falls
  /// silent (still answering commands) once it has played everything. `nil` (the default):
  /// the pty simulator loops, as a device keeps streaming; the in-process replay does not, as
  /// a test's input ends.
  public var loops: Bool?
  /// The power state it starts in. ``SimulatedPowerState/running`` is a receiver that was
  /// just plugged in; asleep (``SimulatedPowerState/standby``, ``SimulatedPowerState/backup``,
  /// ``SimulatedPowerState/gnssStopped``) one that a previous program left so.
  public var initialPowerState: SimulatedPowerState
  /// How long a wake, a reset or a power cycle takes; input meanwhile is lost.
  public var wakeDelay: Duration
  /// How it treats commands.
  public var responses: ResponseMode
  /// How many inputs its `received` keeps (the newest); a long run that a program keeps
  /// writing to stays bounded.
  public var receivedLimit: Int
  /// The physics to model (starts, errors, currents, aiding; docs/simulator.md); `nil` (the
  /// default) plays the recording's epochs exactly as recorded.
  public var physics: PhysicsConfiguration?

  // ReceiverSimulator (a pty) only.

  /// Where the device appears: a symbolic link to the current pty, kept across
  /// ``ReceiverSimulator/replug()``. `nil`: `gps0` in a new directory under `/tmp`, removed
  /// by ``ReceiverSimulator/stop()``.
  public var devicePath: String?
  /// How long a write may wait for room in the pty before its bytes are dropped, as unread
  /// bytes on a real line are lost. The pty fills only when nobody reads (the port is
  /// closed; opening it discards what is queued and makes room at once) or the reader is
  /// far behind, so this is long: a slow reader on a loaded machine loses nothing.
  public var writeTimeout: Duration

  // ReplayConnector (in-process) only.

  /// How the receiver is attached, as the connector's `chipsetHint` tells the driver
  /// (u-blox over USB is put to GNSS stop, over a UART to backup).
  public var interface: HostInterface
  /// Whether the hint names the profile's chipset family, as discovery does for a receiver
  /// known by its USB IDs. Without it the driver identifies the receiver from what it says.
  public var announcesChipset: Bool
  /// The name the driver uses in messages; `nil`: `replay:` and the recording's name.
  public var deviceName: String?

  public init(
    profile: ReceiverProfile? = nil, pace: Pace = .realTime, loops: Bool? = nil,
    initialPowerState: SimulatedPowerState = .running,
    wakeDelay: Duration = .milliseconds(50), responses: ResponseMode = .normal,
    devicePath: String? = nil, writeTimeout: Duration = .seconds(10),
    interface: HostInterface = .usb, announcesChipset: Bool = true, deviceName: String? = nil,
    receivedLimit: Int = 10_000, physics: PhysicsConfiguration? = nil
  ) {
    self.profile = profile
    self.pace = pace
    self.loops = loops
    self.initialPowerState = initialPowerState
    self.wakeDelay = wakeDelay
    self.responses = responses
    self.devicePath = devicePath
    self.writeTimeout = writeTimeout
    self.interface = interface
    self.announcesChipset = announcesChipset
    self.deviceName = deviceName
    self.receivedLimit = receivedLimit
    self.physics = physics
  }
}

extension SimulatorOptions {
  /// The chip these options make for `recording`, as `profile` (the one they name, or the
  /// recording's), at `now` on the simulator's time line.
  func model(of recording: Recording, as profile: ReceiverProfile, at now: Duration = .zero)
    -> ReceiverModel
  {
    ReceiverModel(
      profile: profile, power: initialPowerState, responses: responses, wakeDelay: wakeDelay,
      receivedLimit: receivedLimit, physics: physics, recordingStart: recording.firstTimestamp,
      epochInterval: recording.nominalInterval, at: now)
  }

  /// The playback of `recording` these options make (with physics, only the epochs that
  /// carry a fix: the physics writes the rest); `loopsByDefault` when ``loops`` is `nil`.
  func playback(of recording: Recording, loopsByDefault: Bool) -> Playback {
    Playback(
      recording: physics != nil ? recording.fixEpochs : recording, pace: pace,
      loops: loops ?? loopsByDefault)
  }
}
