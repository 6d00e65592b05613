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
  private var machine: ReceiverMachine
  /// Every timer the machine armed, by its name.
  private var timers: [ReceiverMachine.TimerName: Task<Void, Never>] = [:]
  private let port: PortOperations

  init(core: ReceiverCore) {
    self.core = core
    let options = core.options
    var schedule = RequestScheduler.Configuration()
    schedule.ephemerisRefresh = options.ephemerisRefresh
    machine = ReceiverMachine(
      configuration: .init(
        power: .init(
          linger: options.linger,
          backoff: .init(initial: options.reconnectDelay, maximum: options.maximumReconnectDelay)),
        schedule: schedule, wakeLine: options.wakePin != nil, sleepDepth: options.sleepDepth))
    port = PortOperations(core: core)
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
          port.write(bytes)
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
      await handle(await port.powerOn(slept: slept, keptBackup: keptBackup, opened: opened))
    case .powerOff:
      await sleep()
      await close()
    case .discardConnection:
      await close()
    case .putToStandby:
      if await port.openForStandby(opened: opened) { await sleep() }
      await close()
      port.clearLeftAwakeMarker()
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
    case .keepPosition: port.keepPosition()
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

  /// The port opened a new connection: the machine numbers it.
  private func opened() -> Int {
    _ = machine.handle(.portOpened, now: clock.now)
    return machine.generation
  }

  /// Stops reading and closes the port; the machine learns the operation ended.
  private func close() async {
    await port.close()
    await handle(.closed)
  }

  /// Runs the sleep the machine chooses (``SleepSequence``) step by step, with the command set
  /// known now (the identification may have arrived while streaming).
  private func sleep() async {
    guard port.connection != nil else { return }
    port.tellIfWithheld(.powerOff)
    let set = core.knowledge.commandSet()
    var effects = machine.beginSleep(
      choice: set.sleep(for: machine.sleepContext(now: clock.now)),
      quick: set.sleep(for: ReceiverMachine.quickContext), family: set.family)
    while !effects.isEmpty {
      var outcome: SleepSequence.Outcome?
      for effect in effects {
        if let ran = await port.runSleepStep(effect, family: set.family) {
          outcome = ran
        } else {
          await perform(effect)
        }
      }
      effects = outcome.map { machine.handle(.slept($0), now: clock.now) } ?? []
    }
  }
}
