import Chipsets
import NMEA
import POSIX

/// The one task that runs a receiver's machine (``ReceiverMachine``): it takes the events of
/// the ``ReceiverCore/inbox`` in order, hands them to the machine, and runs the effects it
/// returns (timers from one table, status, deliveries, the power operations with their
/// commands, the reader's start and stop), reporting each operation's end back to it.
///
/// Threading: ``run()`` is one task on the ``DriverExecutor``, started by the first request;
/// every stored property here is owned by that task alone, so none needs a lock. It shares
/// with other threads only what ``ReceiverCore`` holds (each safe from any thread). The reader
/// thread reaches it only through the inbox.
///
/// `@unchecked Sendable`: its stored state is owned by its one task (see Threading above), which
/// the compiler cannot know.
final class ReceiverController: @unchecked Sendable {
  enum Event: Sendable {
    case machine(ReceiverMachine.Event)
    /// Bytes of a client's own for the receiver (``GPSReceiver/write(_:)``), written as they
    /// are between the controller's power operations, so never inside a command exchange;
    /// `done` is called once they are written or dropped.
    case write([UInt8], done: (@Sendable () -> Void)?)
    /// Resumed once every event before it has been handled (for tests and shutdown paths).
    case barrier(CheckedContinuation<Void, Never>)
  }

  private let core: ReceiverCore
  private let commands: CommandStepRunner
  private var machine: ReceiverMachine
  private var timers: [ReceiverMachine.TimerName: Task<Void, Never>] = [:]
  private var connection: (any ReceiverConnection)?
  private var reader: OwnThread?
  private var readerStop: Locked<Bool>?
  private let positions: PositionKeeper

  init(core: ReceiverCore) {
    self.core = core
    let options = core.options
    commands = CommandStepRunner(
      acknowledgements: core.acknowledgements, clock: core.clock,
      attempts: options.commandAttempts, timeout: options.acknowledgementTimeout,
      counters: core.counters, hub: core.hub, shutdownRequested: core.shutdownRequested,
      utc: { [options] in options.utcNow() })
    var schedule = RequestScheduler.Configuration()
    schedule.ephemerisRefresh = options.ephemerisRefresh
    machine = ReceiverMachine(
      configuration: .init(
        power: .init(
          linger: options.linger,
          backoff: .init(initial: options.reconnectDelay, maximum: options.maximumReconnectDelay)),
        schedule: schedule, wakeLine: options.wakePin != nil, sleepDepth: options.sleepDepth))
    positions = PositionKeeper(core: core)
  }

  private var clock: any DriverClock { core.clock }
  private var connector: any ReceiverConnector { core.connector }
  private var options: GPSReceiver.Options { core.options }

  /// Hands every queued event to the machine, then runs at most one power operation it
  /// decided (``ReceiverMachine/nextOperation(now:)``), re-checked against the demand as it is
  /// after all of them: a burst of subscribers that came and went while the receiver was busy
  /// costs no power cycle of its own, and a shutdown is seen as soon as the operation in hand
  /// ends.
  func run() async {
    let inbox = core.inbox
    var barriers: [CheckedContinuation<Void, Never>] = []
    while true {
      if !machine.hasPendingOperation {
        // Idle: every event before the barriers has been handled and acted upon.
        for barrier in barriers { barrier.resume() }
        barriers.removeAll()
        if machine.isStopped { break }
      }
      let batch = machine.hasPendingOperation ? inbox.takeAll() : await inbox.next()
      for event in batch {
        switch event {
        case .machine(let event): await handle(event)
        case .write(let bytes, let done):
          write(bytes)
          done?()
        case .barrier(let continuation): barriers.append(continuation)
        }
      }
      if let effects = machine.nextOperation(now: clock.now) {
        for effect in effects { await perform(effect) }
      }
      let (unexpected, refused) = (machine.unexpectedEvents, machine.refusedRequests)
      core.counters.withLock {
        $0.unexpectedPolicyEvents = unexpected
        $0.refusedRequests = refused
      }
    }
    for timer in timers.values { timer.cancel() }
    timers.removeAll()
    core.requests.finishAll()
    connector.stopWatching()
    // Nothing is handled after the stop, but nobody may be left waiting on a barrier.
    for leftover in inbox.close() {
      if case .barrier(let continuation) = leftover { continuation.resume() }
      if case .write(let bytes, let done) = leftover {
        core.counters.withLock { $0.bytesNotWritten += bytes.count }
        done?()
      }
    }
    core.hub.close()
    core.controllerStopped()
  }

  /// Hands `event` to the machine and runs what it returns.
  private func handle(_ event: ReceiverMachine.Event) async {
    if case .timerFired(let name) = event { timers[name] = nil }
    let utc: UTCTimestamp? = if case .fix = event { options.utcNow() } else { nil }
    for effect in machine.handle(event, now: clock.now, utc: utc) { await perform(effect) }
  }

  /// Runs one effect; the end of a power operation goes back to the machine.
  private func perform(_ effect: ReceiverMachine.Effect) async {
    switch effect {
    case .powerOn(let slept, let keptBackup):
      await powerOn(slept: slept, keptBackup: keptBackup)
    case .powerOff:
      await close(sendingCommands: true)
    case .discardConnection:
      await close(sendingCommands: false)
    case .putToStandby:
      await putLeftoverToStandby()
    case .armTimer(let name, let deadline):
      let (clock, inbox) = (self.clock, core.inbox)
      timers[name] = DriverExecutor.task {
        do {
          try await clock.sleep(until: deadline)
        } catch {
          return  // cancelled
        }
        inbox.post(.machine(.timerFired(name)))
      }
    case .cancelTimer(let name):
      timers.removeValue(forKey: name)?.cancel()
    case .publish(let status): core.hub.publish(status: status)
    case .tell(let notice): core.tell(notice)
    case .deliver(let id, let update): core.requests.deliver(update, to: id)
    case .finish(let id, let best): core.requests.finish(id, best: best)
    case .count(let counter): count(counter)
    case .keepPosition: positions.keep()
    case .driveWakeLine, .sendSteps, .runStep:
      break  // steps of a sleep: run by ``sleep(on:)``
    }
  }

  private func count(_ counter: ReceiverMachine.Counter) {
    core.counters.withLock {
      switch counter {
      case .connectionsLost: $0.connectionsLost += 1
      case .sleepsNotEntered: $0.sleepsNotEntered += 1
      case .commandsFailed: $0.commandsFailed += 1
      case .standbysFailed: $0.standbysFailed += 1
      }
    }
  }

  private func powerOn(slept: Duration?, keptBackup: Bool?) async {
    core.knowledge.forgetReceiverIfChanged()
    let opened: any ReceiverConnection
    do {
      opened = try await connector.connect(wakingWith: core.knowledge.commandSet().family)
    } catch {
      core.counters.withLock { $0.failedOpens += 1 }
      return await handle(.openFailed(reason: FailureReason(error)))
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
    open(opened)
    if probing {
      // The user asked for it: the receiver's answer chooses this power-on's commands too.
      await probe(opened)
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
    await commands.send(steps, to: opened, family: set.family, abandonOnShutdown: true)
    if let markers = options.awakeMarkers, let identity = connector.markerIdentity {
      markers.markAwake(identity)
    }
    await handle(.poweredOn(toldTheTime: toldTheTime))
  }

  /// How far the wall clock is taken to be from UTC when aiding: the driver does not ask the
  /// kernel how well it is set; a second covers a clock kept by NTP or read from a real-time
  /// clock at boot, and is what an aided start needs (docs/chipsets.md, "Aiding").
  static let wallClockAccuracy: Duration = .seconds(1)

  /// Asks the receiver what it is (``ChipsetProbe``) through the one command runner: the
  /// exchange ends when the reader's identification names a family.
  private func probe(_ connection: any ReceiverConnection) async {
    let ran = await commands.run(ChipsetProbe.step, on: connection, abandonOnShutdown: true)
    guard let ran, !ran.outcome.succeeded else { return }
    // Unanswered (identified meanwhile by what it sent, or not at all).
    core.knowledge.noteProbeUnanswered()
  }

  /// Tells subscribers (and counts) that no power commands go to the receiver, when that is
  /// for want of knowing its chipset.
  private func tellIfWithheld(_ moment: CommandsWithheld.Moment) {
    guard let withheld = core.knowledge.withheld(moment) else { return }
    core.counters.withLock { $0.powerCommandsWithheld += 1 }
    core.hub.publish(status: .commandsWithheld(withheld))
  }

  /// The standby exchange for a receiver that a killed process left awake: open, send the
  /// standby steps (acknowledgements read as usual), close; then the marker goes.
  private func putLeftoverToStandby() async {
    let identity = connector.markerIdentity
    defer { if let identity { options.awakeMarkers?.clear(identity) } }
    let set = core.knowledge.commandSet()
    if !set.powerOffSteps.isEmpty,
      let opened = try? await connector.connect(wakingWith: set.family)
    {
      open(opened)
    }
    await close(sendingCommands: true)
  }

  /// Puts the receiver to sleep (`sendingCommands`), stops reading and closes the port.
  private func close(sendingCommands: Bool) async {
    if let current = connection {
      // The identification may have arrived while streaming: the standby commands use it.
      if sendingCommands {
        tellIfWithheld(.powerOff)
        await sleep(on: current)
      }
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
    await handle(.closed)
  }

  /// Runs the sleep the machine chooses (``SleepSequence``) step by step.
  private func sleep(on connection: any ReceiverConnection) async {
    let set = core.knowledge.commandSet()
    var effects = machine.beginSleep(
      choice: set.sleep(for: machine.sleepContext(now: clock.now)),
      quick: set.sleep(for: ReceiverMachine.quickContext))
    while !effects.isEmpty {
      var outcome: SleepSequence.Outcome?
      for effect in effects {
        switch effect {
        case .driveWakeLine(let high):
          do {
            try options.wakePin?.drive(high: high)
            outcome = .lineDriven(failure: nil)
          } catch {
            outcome = .lineDriven(failure: FailureReason(error))
          }
        case .sendSteps(let steps):
          outcome = .sent(failure: await commands.send(steps, to: connection, family: set.family))
        case .runStep(let step):
          let ran = await commands.run(step, on: connection, abandonOnShutdown: false)
          let failure = ran.flatMap { CommandStepRunner.failure(of: $0, family: set.family) }
          outcome = .ran(succeeded: ran?.outcome.succeeded ?? false, failure: failure)
        default:
          await perform(effect)
        }
      }
      effects = outcome.map { machine.handle(.slept($0), now: clock.now) } ?? []
    }
  }

  /// Writes a client's bytes to the open connection; with none (the receiver is powered
  /// off, or its port is being opened) they are dropped and counted: bytes for a receiver
  /// that is not there mean nothing later.
  private func write(_ bytes: [UInt8]) {
    let written = (try? connection?.write(bytes)) != nil
    core.counters.withLock {
      if written { $0.bytesWritten += bytes.count } else { $0.bytesNotWritten += bytes.count }
    }
  }

  /// Takes `opened` as the connection and starts its reader.
  private func open(_ opened: any ReceiverConnection) {
    _ = machine.handle(.portOpened, now: clock.now)
    connection = opened
    let stop = Locked(false)
    readerStop = stop
    let reader = ConnectionReader(
      connection: opened, generation: machine.generation, stop: stop, core: core,
      maximumSentenceLength: options.maximumSentenceLength)
    self.reader = OwnThread.start(name: "serialgps-read") { reader.run() }
  }
}
