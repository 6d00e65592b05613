import Chipsets
import POSIX

/// The one task that runs a receiver's power policy: it takes the events of the
/// ``ReceiverCore/inbox`` in order, hands them to ``PowerPolicy``, and performs its actions
/// (timers, status, power-on and power-off with their commands, the reader's start and stop).
///
/// Threading: ``run()`` is one task on the ``DriverExecutor``, started by the first request;
/// every stored property here is owned by that task alone, so none needs a lock. It shares
/// with other threads only what ``ReceiverCore`` holds (each safe from any thread). The reader
/// thread reaches it only through the inbox (``Event/readerFailed(generation:reason:)``).
///
/// `@unchecked Sendable`: its stored state is owned by its one task (see Threading above), which
/// the compiler cannot know.
final class ReceiverController: @unchecked Sendable {
  enum Event: Sendable {
    case policy(PowerPolicy.Event)
    /// For the location requests' scheduler (``RequestScheduler``).
    case requests(RequestScheduler.Event)
    /// The reader of connection `generation` stopped on an error.
    case readerFailed(generation: Int, reason: FailureReason)
    /// Bytes of a client's own for the receiver (``GPSReceiver/write(_:)``), written as they
    /// are between the controller's power operations, so never inside a command exchange;
    /// `done` is called once they are written or dropped.
    case write([UInt8], done: (@Sendable () -> Void)?)
    /// Resumed once every event before it has been handled (for tests and shutdown paths).
    case barrier(CheckedContinuation<Void, Never>)
  }

  private let core: ReceiverCore
  private let commands: CommandStepRunner
  private var policy: PowerPolicy
  private var scheduler: RequestScheduler
  private var timers: [PowerPolicy.TimerID: Task<Void, Never>] = [:]
  private var requestTimers: [RequestScheduler.TimerID: Task<Void, Never>] = [:]
  private var connection: (any ReceiverConnection)?
  private var reader: OwnThread?
  private var readerStop: Locked<Bool>?
  private var generation = 0
  /// The receiver's last sleep and what its last wake showed, for planning the next wake.
  private var wakes = WakeRecord()
  /// The position last kept in ``GPSReceiver/Options/positionMemory``, so that an unchanged
  /// one is not written again.
  private var savedPosition: KnownPosition?
  /// What was last said of the position memory (a file ignored, a save failed), so that it
  /// is said once, not at every wake or power-off.
  private var positionNoticeGiven: ReceiverNotice?

  init(core: ReceiverCore) {
    self.core = core
    let options = core.options
    commands = CommandStepRunner(
      acknowledgements: core.acknowledgements, clock: core.clock,
      attempts: options.commandAttempts, timeout: options.acknowledgementTimeout,
      counters: core.counters, hub: core.hub, shutdownRequested: core.shutdownRequested,
      utc: { [options] in options.utcNow() })
    policy = PowerPolicy(
      configuration: .init(
        linger: options.linger,
        backoff: .init(initial: options.reconnectDelay, maximum: options.maximumReconnectDelay)))
    var schedule = RequestScheduler.Configuration()
    schedule.ephemerisRefresh = options.ephemerisRefresh
    scheduler = RequestScheduler(configuration: schedule)
  }

  private var clock: any DriverClock { core.clock }
  private var connector: any ReceiverConnector { core.connector }
  private var options: GPSReceiver.Options { core.options }

  /// Takes every queued event into the policy, then starts at most one power-on or power-off,
  /// re-checked against the demand as it is after all of them (``PowerPolicy/confirm(_:now:)``).
  /// Deciding is ordered, event by event, so no subscriber is lost; doing converges: a burst
  /// of subscribers that came and went while the receiver was busy costs no power cycle of
  /// its own, and a shutdown is seen as soon as the operation in hand ends.
  func run() async {
    let inbox = core.inbox
    // Power operations decided and not yet started, in order (at most a discard and a
    // power-on: while one is pending the policy is in a state that decides no other).
    var operations: [PowerPolicy.Action] = []
    // Resumed once every event before them has been handled and acted upon.
    var barriers: [CheckedContinuation<Void, Never>] = []
    while true {
      if operations.isEmpty {
        // Idle: every event before the barriers has been handled and acted upon.
        for barrier in barriers { barrier.resume() }
        barriers.removeAll()
        if policy.state == .stopped { break }
      }
      let batch = operations.isEmpty ? await inbox.next() : inbox.takeAll()
      for event in batch {
        switch event {
        case .policy(let policyEvent):
          handle(policyEvent, deferring: &operations)
        case .requests(let requestEvent):
          if case .timerFired(let id) = requestEvent { requestTimers[id] = nil }
          if case .fix(let update) = requestEvent { judgeWake(by: update) }
          schedule(requestEvent, deferring: &operations)
        case .readerFailed(let failedGeneration, let reason):
          // A stale failure from a connection already closed is no news.
          guard failedGeneration == generation, connection != nil else { continue }
          core.counters.withLock { $0.connectionsLost += 1 }
          handle(.connectionLost(reason: reason), deferring: &operations)
        case .write(let bytes, let done):
          write(bytes)
          done?()
        case .barrier(let continuation):
          barriers.append(continuation)
        }
      }
      if !operations.isEmpty {
        let decided = operations.removeFirst()
        for action in policy.confirm(decided, now: clock.now) {
          if let outcome = await perform(action) { handle(outcome, deferring: &operations) }
        }
      }
      let unexpected = policy.unexpectedEvents + scheduler.unexpectedEvents
      let refused = scheduler.refusedRequests
      core.counters.withLock {
        $0.unexpectedPolicyEvents = unexpected
        $0.refusedRequests = refused
      }
    }
    for timer in timers.values { timer.cancel() }
    timers.removeAll()
    for timer in requestTimers.values { timer.cancel() }
    requestTimers.removeAll()
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

  /// Hands `event` to the policy: runs the quick actions (timers, status) now and queues the
  /// power operations, which the controller starts only after it has taken every event queued.
  private func handle(_ event: PowerPolicy.Event, deferring operations: inout [PowerPolicy.Action])
  {
    for action in policy.handle(event, now: clock.now) {
      if action.isPowerOperation {
        operations.append(action)
      } else {
        performAtOnce(action)
      }
    }
    // The scheduler learns the receiver's starts from when it is powered.
    switch event {
    case .poweredOn: schedule(.receiverPowered(true), deferring: &operations)
    case .poweredOff, .connectionLost: schedule(.receiverPowered(false), deferring: &operations)
    default: break
    }
  }

  /// Hands `event` to the requests' scheduler and runs what it decides: its demand goes to the
  /// power policy as an event of its own, deliveries to the requests' queues.
  private func schedule(
    _ event: RequestScheduler.Event, deferring operations: inout [PowerPolicy.Action]
  ) {
    for action in scheduler.handle(event, now: clock.now) {
      switch action {
      case .powerOn:
        handle(.scheduled(wanted: true, linger: false), deferring: &operations)
      case .powerOff(let linger):
        handle(.scheduled(wanted: false, linger: linger), deferring: &operations)
      case .deliver(let id, let update):
        core.requests.deliver(update, to: id)
      case .finish(let id, let best):
        core.requests.finish(id, best: best)
      case .armTimer(let id, let deadline):
        let clock = self.clock
        let inbox = core.inbox
        requestTimers[id] = DriverExecutor.task {
          do {
            try await clock.sleep(until: deadline)
          } catch {
            return  // cancelled
          }
          inbox.post(.requests(.timerFired(id)))
        }
      case .cancelTimer(let id):
        requestTimers.removeValue(forKey: id)?.cancel()
      }
    }
  }

  /// Runs one action; returns the event that reports its outcome, if it has one.
  private func perform(_ action: PowerPolicy.Action) async -> PowerPolicy.Event? {
    switch action {
    case .powerOn:
      return await powerOn()
    case .powerOff:
      let wasOpen = connection != nil
      await powerOff(sendCommands: true)
      if wasOpen { asleep(commanded: true) }
      return .poweredOff
    case .discardConnection:
      let wasOpen = connection != nil
      await powerOff(sendCommands: false)
      if wasOpen { asleep(commanded: false) }
      return nil
    case .putToStandby:
      await putLeftoverToStandby()
      asleep(commanded: true)
      return .poweredOff
    case .armTimer, .cancelTimer, .status:
      performAtOnce(action)
      return nil
    }
  }

  /// Runs an action that neither waits nor reports an outcome.
  private func performAtOnce(_ action: PowerPolicy.Action) {
    switch action {
    case .armTimer(let id, let deadline):
      let clock = self.clock
      let inbox = core.inbox
      timers[id] = DriverExecutor.task {
        do {
          try await clock.sleep(until: deadline)
        } catch {
          return  // cancelled
        }
        inbox.post(.policy(.timerFired(id)))
      }
    case .cancelTimer(let id):
      timers.removeValue(forKey: id)?.cancel()
    case .status(let status):
      core.hub.publish(status: status)
    case .powerOn, .powerOff, .discardConnection, .putToStandby:
      break
    }
  }

  private func powerOn() async -> PowerPolicy.Event {
    core.knowledge.forgetReceiverIfChanged()
    let sleep = (slept: wakes.slept(at: clock.now), keptBackup: wakes.keptBackup)
    wakes.wakeBegins(at: clock.now)
    let opened: any ReceiverConnection
    do {
      opened = try await connector.connect(wakingWith: core.knowledge.commandSet().family)
    } catch {
      core.counters.withLock { $0.failedOpens += 1 }
      return .powerOnFailed(reason: FailureReason(error))
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
    generation += 1
    connection = opened
    core.counters.withLock { $0.powerOns += 1 }
    startReader(on: opened, generation: generation)
    if probing {
      // The user asked for it: the receiver's answer chooses this power-on's commands too.
      await probe(opened)
      set = core.knowledge.commandSet()
      tellIfWithheld(.powerOn)
    }
    var steps = set.powerOnSteps
    if options.aiding, set.family.hasCommands {
      let context = WakeContext(
        now: options.utcNow(), timeAccuracy: Self.wallClockAccuracy, family: set.family,
        lastPosition: lastPosition(), slept: sleep.slept, keptBackup: sleep.keptBackup)
      steps = set.powerOnSteps(for: context)
      if steps.contains(where: { $0.timed != nil }) {
        core.counters.withLock { $0.aidedWakes += 1 }
        wakes.tellsTheTime()
      }
    }
    await commands.send(steps, to: opened, family: set.family, abandonOnShutdown: true)
    if let markers = options.awakeMarkers, let identity = connector.markerIdentity {
      markers.markAwake(identity)
    }
    return .poweredOn
  }

  /// What an epoch of the wake under way says of the receiver's backup (``WakeRecord``): its
  /// first fix by when it came, a time before it by agreeing with UTC.
  private func judgeWake(by update: FixUpdate) {
    if update.fix.position != nil {
      wakes.fixArrived(at: update.arrival)
    } else if let time = update.fix.time, let utc = options.utcNow() {
      wakes.timeHeard(time, at: update.arrival, utc: utc, now: clock.now)
    }
  }

  /// How far the wall clock is taken to be from UTC when aiding: the driver does not ask the
  /// kernel how well it is set; a second covers a clock kept by NTP or read from a real-time
  /// clock at boot, and is what an aided start needs (docs/chipsets.md, "Aiding").
  static let wallClockAccuracy: Duration = .seconds(1)

  /// What the receiver is told of where it was: the last fix heard, else the position kept
  /// across restarts, else the app's ``GPSReceiver/Options/initialPosition``.
  private func lastPosition() -> KnownPosition? {
    if let fix = core.hub.latestFix?.fix, let known = KnownPosition(aidingFrom: fix) {
      return known
    }
    if let memory = options.positionMemory, let now = options.utcNow() {
      let identity = positionIdentity
      switch memory.read(identity: identity, now: now) {
      case .position(let kept): return kept
      case .none: break
      case .ignored(let reason):
        tellOnce(.keptPositionIgnored(path: memory.path(for: identity), reason: reason))
      }
    }
    return options.initialPosition
  }

  /// The name a kept position goes by: what stays the same for the receiver across replugs
  /// and reboots (``ReceiverConnector/positionIdentity``), else the device (a position
  /// belongs to the machine as much as to its receiver).
  private var positionIdentity: String { connector.positionIdentity ?? connector.deviceName }

  /// Tells the app `notice` unless it was the last said of the position memory.
  private func tellOnce(_ notice: ReceiverNotice) {
    guard notice != positionNoticeGiven else { return }
    positionNoticeGiven = notice
    core.tell(notice)
  }

  /// The receiver was put to sleep (`commanded`) or its connection closed after a loss: noted
  /// for the next wake, and its last fix kept in the position memory.
  private func asleep(commanded: Bool) {
    wakes.poweredOff(at: clock.now, commanded: commanded)
    guard let memory = options.positionMemory, let fix = core.hub.latestFix?.fix,
      let position = KnownPosition(aidingFrom: fix), position != savedPosition
    else { return }
    // A state directory that cannot be written costs only the aiding of the next start: said
    // once, with the reason.
    let identity = positionIdentity
    do {
      try memory.save(position, identity: identity)
      savedPosition = position
      if case .positionNotKept = positionNoticeGiven { positionNoticeGiven = nil }
    } catch {
      tellOnce(.positionNotKept(path: memory.path(for: identity), error: error))
    }
  }

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
    guard !set.powerOffSteps.isEmpty,
      let opened = try? await connector.connect(wakingWith: set.family)
    else { return }
    generation += 1
    connection = opened
    startReader(on: opened, generation: generation)
    await powerOff(sendCommands: true)
  }

  private func powerOff(sendCommands: Bool) async {
    guard let current = connection else { return }
    // The identification may have arrived while streaming: the standby commands use it.
    if sendCommands {
      let set = core.knowledge.commandSet()
      tellIfWithheld(.powerOff)
      await sleep(set, on: current)
    }
    readerStop?.withLock { $0 = true }
    current.interrupt()
    await reader?.join()
    reader = nil
    readerStop = nil
    current.close()
    connection = nil
    core.acknowledgements.reset()
    core.counters.withLock { $0.powerOffs += 1 }
    // Standby sent, or the connection lost: no longer this process's to put to sleep.
    if let markers = options.awakeMarkers, let identity = connector.markerIdentity {
      markers.clear(identity)
    }
  }

  /// How long the receiver is expected to sleep from now: until the scheduler's next wake
  /// when only scheduled requests wanted it, else unknown.
  private var expectedSleep: Duration? {
    guard policy.expectedSleep == .untilScheduledWake, let wake = scheduler.nextWake else {
      return nil
    }
    return max(.zero, wake - clock.now)
  }

  /// Puts the receiver to the sleep its command set chooses for the expected sleep
  /// (``ReceiverCommandSet/sleep(for:)``). A sleep deeper than the quick-wake standby counts
  /// only when the receiver confirms it: acknowledged (`$PMTK001,225,3`), or silent after a
  /// request that has no answer (`UBX-RXM-PMREQ`). A sleep that only the wake line ends is
  /// entered with the line released. Refused, unanswered, ignored while the receiver kept
  /// talking, or with the line failing, the receiver is taken as awake: it is counted
  /// (``ReceiverStatistics/sleepsNotEntered``) and gets the quick-wake standby instead; every
  /// wake drives the line and sends the whole wake-up whatever the last sleep was. A standby
  /// that fails too (refused, or ignored while the receiver kept talking: not merely
  /// unanswered by a receiver that fell silent), or one that nothing confirms (a u-blox GNSS
  /// stop) after a sleep the receiver ignored while it kept talking, may leave it powered:
  /// that is said whoever listens (``ReceiverNotice/standbyFailed(reason:)``) and counted
  /// (``ReceiverStatistics/standbysFailed``).
  private func sleep(_ set: any ReceiverCommandSet, on connection: any ReceiverConnection) async {
    if let failure = await enterSleep(set, on: connection), failure.kind != .noAnswer {
      core.counters.withLock { $0.standbysFailed += 1 }
      core.tell(.standbyFailed(reason: failure))
    }
  }

  /// The sleep of ``sleep(_:on:)``; returns why the receiver may not be asleep: the failure of
  /// the standby, else that of the deeper sleep when nothing confirms the standby.
  private func enterSleep(
    _ set: any ReceiverCommandSet, on connection: any ReceiverConnection
  ) async -> FailureReason? {
    let context = SleepContext(
      expected: expectedSleep, wakePin: options.wakePin != nil, depth: options.sleepDepth)
    let choice = set.sleep(for: context)
    let quick = set.sleep(for: SleepContext(expected: nil, depth: .standby))
    policy.asleepOnWakeLine = false
    let line = choice.needsWakePin ? options.wakePin : nil
    guard choice.state != quick.state, choice.steps.count == 1,
      line != nil || !choice.needsWakePin
    else {
      return await commands.send(choice.steps, to: connection, family: set.family)
    }
    if let line {
      do {
        try line.drive(high: false)
      } catch {
        core.counters.withLock { $0.sleepsNotEntered += 1 }
        core.hub.publish(status: .commandFailed(reason: FailureReason(error)))
        return await commands.send(quick.steps, to: connection, family: set.family)
      }
    }
    let ran = await commands.run(choice.steps[0], on: connection, abandonOnShutdown: false)
    if let ran, ran.outcome.succeeded {
      policy.asleepOnWakeLine = line != nil
      return nil
    }
    // Not in that sleep: awake (or gone). The line goes high again so that it cannot enter
    // backup by itself later, and the standby follows.
    let failure = ran.flatMap { CommandStepRunner.failure(of: $0, family: set.family) }
    core.counters.withLock {
      $0.sleepsNotEntered += 1
      if failure != nil { $0.commandsFailed += 1 }
    }
    if let failure { core.hub.publish(status: .commandFailed(reason: failure)) }
    try? line?.drive(high: true)
    if let standby = await commands.send(quick.steps, to: connection, family: set.family) {
      return standby
    }
    // A standby with no answer (a u-blox GNSS stop) does not show that a receiver that just
    // ignored a sleep while it kept talking took it.
    let unconfirmed = quick.steps.allSatisfy { $0.acknowledgement == .none }
    return unconfirmed ? failure : nil
  }

  /// Writes a client's bytes to the open connection; with none (the receiver is powered
  /// off, or its port is being opened) they are dropped and counted: bytes for a receiver
  /// that is not there mean nothing later.
  private func write(_ bytes: [UInt8]) {
    guard let connection else {
      core.counters.withLock { $0.bytesNotWritten += bytes.count }
      return
    }
    do {
      try connection.write(bytes)
      core.counters.withLock { $0.bytesWritten += bytes.count }
    } catch {
      core.counters.withLock { $0.bytesNotWritten += bytes.count }
    }
  }

  private func startReader(on connection: any ReceiverConnection, generation: Int) {
    let stop = Locked(false)
    readerStop = stop
    let reader = ConnectionReader(
      connection: connection, generation: generation, stop: stop, core: core,
      maximumSentenceLength: options.maximumSentenceLength)
    self.reader = OwnThread.start(name: "serialgps-read") { reader.run() }
  }
}
