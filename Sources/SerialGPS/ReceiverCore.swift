import Chipsets
import NMEA
import POSIX
import TimeService

/// The machinery behind a ``GPSReceiver``: the hub, the ordered event inbox, the controller
/// task that runs the power policy's actions, and the reader thread.
final class ReceiverCore: @unchecked Sendable {
  enum ControllerEvent: Sendable {
    case policy(PowerPolicy.Event)
    /// The reader of connection `generation` stopped on an error.
    case readerFailed(generation: Int, reason: String)
    /// Resumed once every event before it has been handled (for tests and shutdown paths).
    case barrier(CheckedContinuation<Void, Never>)
  }

  let connector: any ReceiverConnector
  let options: GPSReceiver.Options
  let clock: any DriverClock
  let hub: SubscriptionHub
  let acknowledgements = AcknowledgementMailbox()

  private let inbox = ControllerInbox<ControllerEvent>()
  private let counters = Locked(ReceiverStatistics())
  /// What the receiver has said about itself, kept across connections.
  let identification = Locked<ChipsetIdentification?>(nil)
  /// Which sentence ends the receiver's cycle, kept across connections.
  let cycleKnowledge = Locked<CycleKnowledge?>(nil)
  /// The time service each new connection's reader feeds (``GPSReceiver/timeService``).
  let timeService = Locked<TimeService?>(nil)
  private let finished = Locked<(done: Bool, waiters: [CheckedContinuation<Void, Never>])>(
    (false, []))

  // Owned by the controller task alone.
  private var policy: PowerPolicy
  private var timers: [PowerPolicy.TimerID: Task<Void, Never>] = [:]
  private var connection: (any ReceiverConnection)?
  private var reader: OwnThread?
  private var readerStop: Locked<Bool>?
  private var generation = 0
  /// The receiver that ``identification`` and ``cycleKnowledge`` describe.
  private var receiverIdentity: String?

  init(connector: any ReceiverConnector, options: GPSReceiver.Options, clock: any DriverClock) {
    self.connector = connector
    self.options = options
    self.clock = clock
    hub = SubscriptionHub(clock: clock, replayExpiry: options.replayExpiry)
    policy = PowerPolicy(
      configuration: .init(
        linger: options.linger,
        backoff: .init(initial: options.reconnectDelay, maximum: options.maximumReconnectDelay)))
  }

  /// Whether the controller task runs. It starts with the first request, so a receiver that
  /// nobody ever subscribes to costs no task at all.
  private let controllerStarted = Locked(false)

  func start() {
    connector.startWatching { [weak self] in self?.deviceAppeared() }
    // Evidence that a killed process left this receiver awake: put it to standby now, before
    // anyone asks (and only then: without it nothing is opened until there is demand).
    if let markers = options.awakeMarkers, let identity = connector.markerIdentity,
      markers.wasLeftAwake(identity)
    {
      inbox.post(.policy(.leftAwake))
      startControllerIfNeeded()
    }
  }

  private func startControllerIfNeeded() {
    let start = controllerStarted.withLock { started -> Bool in
      defer { started = true }
      return !started
    }
    if start {
      Task(executorPreference: DriverExecutor.shared) { await self.runController() }
    }
  }

  var statistics: ReceiverStatistics {
    var statistics = counters.withLock { $0 }
    statistics.droppedEvents = hub.droppedEvents
    return statistics
  }

  // MARK: - Requests from any thread

  func makeSubscription(bufferSize: Int?, rawData: Bool = false, lifetime: ReceiverLifetime)
    -> SubscriptionCore
  {
    let queue = SubscriberQueue(capacity: bufferSize ?? options.subscriberBufferSize)
    guard let id = hub.add(queue, rawData: rawData) else {
      queue.finish()
      return SubscriptionCore(queue: queue) {}
    }
    // The attach goes into the ordered stream before `subscribe()` returns, so a dispose
    // that follows can never overtake it.
    inbox.post(.policy(.attach))
    startControllerIfNeeded()
    return SubscriptionCore(queue: queue) { [weak self] in
      _ = lifetime  // the receiver lives while a subscription does
      guard let self else { return }
      self.hub.remove(id)
      self.inbox.post(.policy(.detach))
    }
  }

  func hold(for duration: Duration) {
    inbox.post(.policy(.hold(until: clock.now + duration)))
    startControllerIfNeeded()
  }

  /// Set once a shutdown is asked for, so a power-on in progress stops retrying its wake-up.
  private let shutdownRequested = Locked(false)

  func requestShutdown() {
    shutdownRequested.withLock { $0 = true }
    // A wake-up waiting for its acknowledgement gives up now rather than after its retries;
    // a standby under way is left to finish.
    acknowledgements.abandonWakeUp()
    inbox.post(.policy(.shutdown))
    startControllerIfNeeded()
  }

  func shutdown() async {
    requestShutdown()
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
      let done = finished.withLock { state -> Bool in
        if state.done { return true }
        state.waiters.append(continuation)
        return false
      }
      if done { continuation.resume() }
    }
  }

  /// Returns once the controller has handled every event sent before this call.
  func settle() async {
    startControllerIfNeeded()
    await withCheckedContinuation { continuation in
      if !inbox.post(.barrier(continuation)) { continuation.resume() }
    }
  }

  /// Tells the controller the device appeared (hotplug), so it retries at once.
  func deviceAppeared() {
    inbox.post(.policy(.deviceAppeared))
  }

  // MARK: - The controller

  /// Takes every queued event into the policy, then starts at most one power-on or power-off,
  /// re-checked against the demand as it is after all of them (``PowerPolicy/confirm(_:now:)``).
  /// Deciding is ordered, event by event, so no subscriber is lost; doing converges: a burst
  /// of subscribers that came and went while the receiver was busy costs no power cycle of
  /// its own, and a shutdown is seen as soon as the operation in hand ends.
  private func runController() async {
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
        case .readerFailed(let failedGeneration, let reason):
          // A stale failure from a connection already closed is no news.
          guard failedGeneration == generation, connection != nil else { continue }
          counters.withLock { $0.connectionsLost += 1 }
          handle(.connectionLost(reason: reason), deferring: &operations)
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
      counters.withLock { $0.unexpectedPolicyEvents = policy.unexpectedEvents }
    }
    for timer in timers.values { timer.cancel() }
    timers.removeAll()
    connector.stopWatching()
    // Nothing is handled after the stop, but nobody may be left waiting on a barrier.
    for leftover in inbox.close() {
      if case .barrier(let continuation) = leftover { continuation.resume() }
    }
    hub.close()
    let waiters = finished.withLock { state -> [CheckedContinuation<Void, Never>] in
      state.done = true
      defer { state.waiters.removeAll() }
      return state.waiters
    }
    for waiter in waiters { waiter.resume() }
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
  }

  /// Runs one action; returns the event that reports its outcome, if it has one.
  private func perform(_ action: PowerPolicy.Action) async -> PowerPolicy.Event? {
    switch action {
    case .powerOn:
      return await powerOn()
    case .powerOff:
      await powerOff(sendCommands: true)
      return .poweredOff
    case .discardConnection:
      await powerOff(sendCommands: false)
      return nil
    case .putToStandby:
      await putLeftoverToStandby()
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
      let inbox = self.inbox
      timers[id] = Task(executorPreference: DriverExecutor.shared) {
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
      hub.publish(status: status)
    case .powerOn, .powerOff, .discardConnection, .putToStandby:
      break
    }
  }

  private func powerOn() async -> PowerPolicy.Event {
    forgetReceiverIfChanged()
    let opened: any ReceiverConnection
    do {
      opened = try await connector.connect(wakingWith: commandSet().family)
    } catch {
      counters.withLock { $0.failedOpens += 1 }
      return .powerOnFailed(reason: String(describing: error))
    }
    // Chosen once the port is open (a connector that follows a receiver knows which one, and
    // its chipset, only now) and before the reader starts: what the receiver says about
    // itself on this connection (a banner among the bytes heard while its rate was found)
    // must not turn into wake-up commands for a receiver that is already streaming. It
    // chooses the standby at power-off and the next power-on.
    let commands = commandSet()
    generation += 1
    connection = opened
    counters.withLock { $0.powerOns += 1 }
    startReader(on: opened, generation: generation)
    await send(commands.powerOnSteps, to: opened, abandonOnShutdown: true)
    if let markers = options.awakeMarkers, let identity = connector.markerIdentity {
      markers.markAwake(identity)
    }
    return .poweredOn
  }

  /// The standby exchange for a receiver that a killed process left awake: open, send the
  /// standby steps (acknowledgements read as usual), close; then the marker goes.
  private func putLeftoverToStandby() async {
    let identity = connector.markerIdentity
    defer { if let identity { options.awakeMarkers?.clear(identity) } }
    let set = commandSet()
    guard !set.powerOffSteps.isEmpty,
      let opened = try? await connector.connect(wakingWith: set.family)
    else { return }
    generation += 1
    connection = opened
    startReader(on: opened, generation: generation)
    await powerOff(sendCommands: true)
  }

  /// A connector that follows "the first receiver found" may reach another receiver now: what
  /// the last one said about itself must not choose this one's commands.
  private func forgetReceiverIfChanged() {
    // No receiver attached (an open that will fail) changes nothing.
    guard let identity = connector.receiverIdentity, identity != receiverIdentity else { return }
    receiverIdentity = identity
    identification.withLock { $0 = nil }
    cycleKnowledge.withLock { $0 = nil }
  }

  private func powerOff(sendCommands: Bool) async {
    guard let current = connection else { return }
    // The identification may have arrived while streaming: the standby commands use it.
    if sendCommands { await send(commandSet().powerOffSteps, to: current) }
    readerStop?.withLock { $0 = true }
    current.interrupt()
    await reader?.join()
    reader = nil
    readerStop = nil
    current.close()
    connection = nil
    acknowledgements.reset()
    counters.withLock { $0.powerOffs += 1 }
    // Standby sent, or the connection lost: no longer this process's to put to sleep.
    if let markers = options.awakeMarkers, let identity = connector.markerIdentity {
      markers.clear(identity)
    }
  }

  // MARK: - Commands

  /// The commands for this receiver: the user's choice, else what the connector knows, else
  /// what the receiver said about itself. With none of these, no commands: a port not known to
  /// hold a GPS receiver is never written to.
  func commandSet() -> any ReceiverCommandSet {
    let hint = connector.chipsetHint
    let interface = hint?.interface ?? .uart
    let identified = identification.withLock { $0 }
    switch options.chipset {
    case .custom(let set):
      return set
    case .family(let family):
      return family.commandSet(interface: interface, identification: identified)
    case .automatic:
      if let family = hint?.family {
        return family.commandSet(interface: interface, identification: identified)
      }
      let family = identified?.familyForCommands() ?? .nmea
      return family.commandSet(interface: interface, identification: identified)
    }
  }

  /// Runs each step through the one command runner (``CommandExchange``): write, wait for
  /// the acknowledgement when it has one, retry a bounded number of times, then settle. A
  /// command that fails is reported and the next one is still sent: the receiver may well be
  /// streaming anyway.
  ///
  /// Wake-up steps are abandoned once a shutdown is asked for: the standby follows at once.
  /// Standby steps are never cut short, and never retried into a receiver that has gone quiet
  /// (a byte would wake it again).
  private func send(
    _ steps: [CommandStep], to connection: any ReceiverConnection, abandonOnShutdown: Bool = false
  ) async {
    for step in steps {
      var exchange = CommandExchange(
        step: step, attempts: options.commandAttempts, timeout: options.acknowledgementTimeout,
        retry: abandonOnShutdown ? .always : .whileReceiverTalks)
      var action = exchange.start()
      var outcome: CommandExchange.Outcome?
      while outcome == nil {
        switch action {
        case .write(let bytes):
          if abandonOnShutdown && shutdownRequested.withLock({ $0 }) { return }
          if step.acknowledgement != .none { acknowledgements.expect(step) }
          do {
            try connection.write(bytes)
            counters.withLock { $0.commandsSent += 1 }
          } catch {
            // The connection is failing: the reader reports the loss as `disconnected`; the
            // remaining steps would fail alike.
            return
          }
          action = exchange.written(now: clock.now)
        case .wait(let deadline):
          let result = await acknowledgements.wait(
            until: deadline, clock: clock, abandonable: abandonOnShutdown)
          switch result {
          case .answer(let answer):
            // A stray answer (another command's) leaves the deadline as it was.
            action = exchange.answered(answer, now: clock.now) ?? .wait(until: deadline)
          case .timedOut(let heard):
            if abandonOnShutdown && shutdownRequested.withLock({ $0 }) { return }
            action = exchange.timedOut(heard: heard, now: clock.now)
          }
        case .finished(let finished):
          outcome = finished
        }
      }
      if let failure = outcome.flatMap({ Self.failure(of: $0, step: step, exchange: exchange) }) {
        counters.withLock { $0.commandsFailed += 1 }
        hub.publish(status: .commandFailed(reason: failure))
      }
      if step.settle > .zero {
        try? await clock.sleep(until: clock.now + step.settle)
      }
    }
  }

  /// What subscribers are told of a step that did not succeed; `nil` when it did.
  static func failure(
    of outcome: CommandExchange.Outcome, step: CommandStep, exchange: CommandExchange
  ) -> String? {
    switch outcome {
    case .sent, .acknowledged:
      return nil
    case .rejected(let answer, let attempt, _):
      let why = answer.failureReason ?? "\(answer)"
      return "\(step.summary): \(why) (\(attempt) of \(exchange.attempts) attempts)"
    case .unanswered(let written, let quiet):
      let why = "no acknowledgement within \(exchange.timeout)"
      if quiet {
        return "\(step.summary): \(why); not retried, the receiver fell silent "
          + "(\(written) of \(exchange.attempts) attempts)"
      }
      return "\(step.summary): \(why) (\(written) of \(exchange.attempts) attempts)"
    }
  }

  // MARK: - Reading

  private func startReader(on connection: any ReceiverConnection, generation: Int) {
    let stop = Locked(false)
    readerStop = stop
    let session = ReadSession(
      connection: connection, generation: generation, stop: stop, core: self,
      maximumSentenceLength: options.maximumSentenceLength)
    reader = OwnThread.start(name: "serialgps-read") { session.run() }
  }

  fileprivate func readerFailed(generation: Int, reason: String) {
    inbox.post(.readerFailed(generation: generation, reason: reason))
  }

  fileprivate func record(decoder statistics: DecoderStatistics, fixes: Int) {
    counters.withLock {
      $0.decoder = statistics
      $0.fixes += fixes
    }
  }
}

/// One connection's reading loop, on the reader thread: bytes → decoder → hub.
private final class ReadSession: @unchecked Sendable {
  let connection: any ReceiverConnection
  let generation: Int
  let stop: Locked<Bool>
  unowned let core: ReceiverCore
  var decoder: NMEADecoder
  var status: ReceiverStatus?
  var identifier = ChipsetIdentifier()
  /// Identification stops once sure, or after this many sentences: banners come early.
  var identificationBudget = 2000
  /// Read times and epochs for the time service, when the receiver has one.
  var timekeeping: ReaderTimekeeping?

  init(
    connection: any ReceiverConnection, generation: Int, stop: Locked<Bool>, core: ReceiverCore,
    maximumSentenceLength: Int
  ) {
    self.connection = connection
    self.generation = generation
    self.stop = stop
    self.core = core
    decoder = NMEADecoder(
      configuration: FramerConfiguration(maximumSentenceLength: maximumSentenceLength))
    // What an earlier connection learned of the cycle: the first epoch is out at once.
    decoder.cycleKnowledge = core.cycleKnowledge.withLock { $0 }
    knownCycle = decoder.cycleKnowledge
    timekeeping = core.timeService.withLock { $0 }.map {
      ReaderTimekeeping(service: $0, timing: connection.lineTiming)
    }
  }

  /// The cycle knowledge last shared with the core.
  var knownCycle: CycleKnowledge?

  func run() {
    let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 4096, alignment: 1)
    defer { buffer.deallocate() }
    var fixes = 0
    while !stop.withLock({ $0 }) {
      let count: Int
      do {
        count = try connection.read(into: buffer)
        // The system time first, before anything else is done with the bytes (docs/time.md).
        if count > 0 { timekeeping?.readReturned(count: count, at: .now()) }
      } catch {
        if !stop.withLock({ $0 }) {
          core.readerFailed(generation: generation, reason: String(describing: error))
        }
        break
      }
      if count == 0 { continue }  // interrupted: check whether to stop
      core.acknowledgements.heard()
      // Before decoding, so that a chunk reaches subscribers ahead of the fixes it completes.
      if core.hub.wantsRawData {
        core.hub.publish(rawData: Array(UnsafeRawBufferPointer(rebasing: buffer[0..<count])))
      }
      fixes = 0
      decoder.decode(UnsafeRawBufferPointer(rebasing: buffer[0..<count])) { event in
        handle(event, fixes: &fixes)
      }
      core.record(decoder: decoder.statistics, fixes: fixes)
      if decoder.cycleKnowledge != knownCycle {
        knownCycle = decoder.cycleKnowledge
        core.cycleKnowledge.withLock { $0 = knownCycle }
      }
    }
    timekeeping?.connectionClosed()
  }

  private func handle(_ event: DecoderEvent, fixes: inout Int) {
    timekeeping?.observe(event)
    switch event {
    case .sentence(let sentence):
      if status == nil { publish(.streaming) }
      if let acknowledgement = ReceiverAcknowledgement(sentence) {
        core.acknowledgements.deliver(acknowledgement)
      }
      if identificationBudget > 0 { observe { $0.observe(sentence) } }
    case .epoch(let epoch):
      fixes += 1
      publish(epoch.fix.mode == .noFix ? .noFix : .streaming)
      core.hub.publish(fix: epoch.fix)
      if let satellites = epoch.satellites { core.hub.publish(satellites: satellites) }
    case .ubx(let frame):
      if let acknowledgement = ReceiverAcknowledgement(frame) {
        core.acknowledgements.deliver(acknowledgement)
      }
      if identificationBudget > 0 { observe { $0.observe(frame) } }
    case .sirf(let frame):
      if identificationBudget > 0 { observe { $0.observe(frame) } }
    case .parseError:
      break
    }
  }

  /// Feeds the chipset identifier until it is sure, and shares what it learns.
  private func observe(_ body: (inout ChipsetIdentifier) -> Void) {
    identificationBudget -= 1
    let before = identifier.identification
    body(&identifier)
    let after = identifier.identification
    guard after != before else { return }
    if after.confidence >= .medium {
      core.identification.withLock { $0 = after }
    }
    if after.confidence == .high { identificationBudget = 0 }
  }

  private func publish(_ newStatus: ReceiverStatus) {
    guard newStatus != status else { return }
    status = newStatus
    core.hub.publish(status: newStatus)
  }
}
