import Chipsets
import NMEA
import POSIX

/// The controller's hands on the port (``ReceiverController``): open and wake, the steps of a
/// sleep, stop reading and close, a client's bytes. It decides nothing: what to do and when is
/// the receiver machine's (``ReceiverMachine``); which commands, the receiver's knowledge's
/// (``ReceiverKnowledge/commandSet()``).
///
/// Owned by the controller's task, so it needs no lock; the reader it starts is a thread of
/// its own, stopped and joined here.
final class PortOperations {
  /// Lives as long as the controller that owns this.
  private unowned let core: ReceiverCore
  private let commands: CommandStepRunner
  private let positions: PositionKeeper
  private(set) var connection: (any ReceiverConnection)?
  private var reader: OwnThread?
  private var readerStop: Locked<Bool>?

  init(core: ReceiverCore) {
    self.core = core
    let options = core.options
    commands = CommandStepRunner(
      acknowledgements: core.acknowledgements, clock: core.clock,
      attempts: options.commandAttempts, timeout: options.acknowledgementTimeout,
      counters: core.counters, hub: core.hub, shutdownRequested: core.shutdownRequested,
      utc: { [options] in options.utcNow() })
    positions = PositionKeeper(core: core)
  }

  private var connector: any ReceiverConnector { core.connector }
  private var options: GPSReceiver.Options { core.options }

  /// How far the wall clock is taken to be from UTC when aiding: the driver does not ask the
  /// kernel how well it is set; a second covers a clock kept by NTP or read from a real-time
  /// clock at boot, and is what an aided start needs (docs/chipsets.md, "Aiding").
  static let wallClockAccuracy: Duration = .seconds(1)

  /// Opens the port and wakes the receiver (aided with how long it `slept` and whether it
  /// `keptBackup`); `opened` numbers the new connection. Returns how the power-on ended.
  func powerOn(slept: Duration?, keptBackup: Bool?, opened: () -> Int) async
    -> ReceiverMachine.Event
  {
    core.knowledge.forgetReceiverIfChanged()
    let connection: any ReceiverConnection
    do {
      connection = try await connector.connect(wakingWith: core.knowledge.commandSet().family)
    } catch {
      core.counters.withLock { $0.failedOpens += 1 }
      return .openFailed(reason: FailureReason(error))
    }
    // Chosen once the port is open (a connector that follows a receiver knows which one, and
    // its chipset, only now) and before the reader starts: what the receiver says about
    // itself on this connection (a banner among the bytes heard while its rate was found)
    // must not turn into wake-up commands for a receiver that is already streaming. It
    // chooses the standby at power-off and the next power-on.
    var set = core.knowledge.commandSet()
    let probing = core.knowledge.shouldProbe
    // Told before the reader starts, so that `streaming` (if it comes) follows it.
    if !probing { tellIfWithheld(.powerOn) }
    core.counters.withLock { $0.powerOns += 1 }
    start(connection, generation: opened())
    if probing {
      // The user asked for it: the receiver's answer chooses this power-on's commands too.
      await probe(connection)
      set = core.knowledge.commandSet()
      tellIfWithheld(.powerOn)
    }
    var steps = set.powerOnSteps
    var toldTheTime = false
    if options.aiding, set.family.hasCommands {
      let context = WakeContext(
        now: options.utcNow(), timeAccuracy: Self.wallClockAccuracy, family: set.family,
        lastPosition: positions.lastPosition(), slept: slept, keptBackup: keptBackup)
      steps = set.powerOnSteps(for: context)
      toldTheTime = steps.contains { $0.timed != nil }
      if toldTheTime { core.counters.withLock { $0.aidedWakes += 1 } }
    }
    await commands.send(steps, to: connection, family: set.family, abandonOnShutdown: true)
    if let markers = options.awakeMarkers, let identity = connector.markerIdentity {
      markers.markAwake(identity)
    }
    return .poweredOn(toldTheTime: toldTheTime)
  }

  /// Opens the port of a receiver that a killed process left awake, for its standby; false
  /// when there is no standby to send or the port does not open.
  func openForStandby(opened: () -> Int) async -> Bool {
    let set = core.knowledge.commandSet()
    guard !set.powerOffSteps.isEmpty,
      let connection = try? await connector.connect(wakingWith: set.family)
    else { return false }
    start(connection, generation: opened())
    return true
  }

  /// The marker of a receiver left awake goes once its standby was tried.
  func clearLeftAwakeMarker() {
    if let identity = connector.markerIdentity { options.awakeMarkers?.clear(identity) }
  }

  /// Runs one step of a sleep (``SleepSequence``) on the open connection; returns how it
  /// ended (`nil` for an effect that is no step of a sleep).
  func runSleepStep(_ effect: ReceiverMachine.Effect, family: ChipsetFamily) async
    -> SleepSequence.Outcome?
  {
    guard let connection else { return nil }
    switch effect {
    case .driveWakeLine(let high):
      do {
        try options.wakePin?.drive(high: high)
        return .lineDriven(failure: nil)
      } catch {
        return .lineDriven(failure: FailureReason(error))
      }
    case .sendSteps(let steps):
      return .sent(failure: await commands.send(steps, to: connection, family: family))
    case .runStep(let step):
      let ran = await commands.run(step, on: connection, abandonOnShutdown: false)
      let failure = ran.flatMap { CommandStepRunner.failure(of: $0, family: family) }
      return .ran(succeeded: ran?.outcome.succeeded ?? false, failure: failure)
    default:
      return nil
    }
  }

  /// Stops reading and closes the port, if it is open.
  func close() async {
    guard let current = connection else { return }
    readerStop?.withLock { $0 = true }
    current.interrupt()
    await reader?.join()
    (reader, readerStop, connection) = (nil, nil, nil)
    current.close()
    core.acknowledgements.reset()
    core.counters.withLock { $0.powerOffs += 1 }
    // Standby sent, or the connection lost: no longer this process's to put to sleep.
    if let markers = options.awakeMarkers, let identity = connector.markerIdentity {
      markers.clear(identity)
    }
  }

  /// Keeps the last fix in the position memory.
  func keepPosition() {
    positions.keep()
  }

  /// Writes a client's bytes to the open connection; with none (the receiver is powered
  /// off, or its port is being opened) they are dropped and counted: bytes for a receiver
  /// that is not there mean nothing later.
  func write(_ bytes: [UInt8]) {
    let written = (try? connection?.write(bytes)) != nil
    core.counters.withLock {
      if written { $0.bytesWritten += bytes.count } else { $0.bytesNotWritten += bytes.count }
    }
  }

  /// Tells subscribers (and counts) that no power commands go to the receiver, when that is
  /// for want of knowing its chipset.
  func tellIfWithheld(_ moment: CommandsWithheld.Moment) {
    guard let withheld = core.knowledge.withheld(moment) else { return }
    core.counters.withLock { $0.powerCommandsWithheld += 1 }
    core.hub.publish(status: .commandsWithheld(withheld))
  }

  /// Asks the receiver what it is (``ChipsetProbe``) through the one command runner: the
  /// exchange ends when the reader's identification names a family.
  private func probe(_ connection: any ReceiverConnection) async {
    let ran = await commands.run(ChipsetProbe.step, on: connection, abandonOnShutdown: true)
    guard let ran, !ran.outcome.succeeded else { return }
    // Unanswered (identified meanwhile by what it sent, or not at all).
    core.knowledge.noteProbeUnanswered()
  }

  /// Takes `opened` as the connection and starts its reader.
  private func start(_ opened: any ReceiverConnection, generation: Int) {
    connection = opened
    let stop = Locked(false)
    readerStop = stop
    let reader = ConnectionReader(
      connection: opened, generation: generation, stop: stop, core: core,
      maximumSentenceLength: options.maximumSentenceLength)
    self.reader = OwnThread.start(name: "serialgps-read") { reader.run() }
  }
}
