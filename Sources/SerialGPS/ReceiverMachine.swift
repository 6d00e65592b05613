import Chipsets
import NMEA

/// The whole decision of a receiver, as one pure state machine: the subscriptions and the
/// location requests merged into one demand (``PowerPolicy`` and ``RequestScheduler``
/// inside, and nothing between them outside), the schedule, the power state, the record of
/// the last sleep and wake (``WakeRecord``), and the sleep a power-off chooses with its
/// fallback (``SleepSequence``).
///
/// It takes events with the time (demand changed, a timer fired, the port opened or was lost,
/// a power operation ended, a fix arrived) and returns effects to run, in order (open and
/// wake, put to sleep, close, drive the wake line, run steps, arm or cancel a timer by name,
/// publish, deliver, count). It performs no I/O and reads no clock; ``ReceiverController``
/// runs what it returns and reports back.
///
/// Power operations are decided at once but handed out later (``nextOperation(now:)``), once
/// the controller has handed in every event queued meanwhile, and then re-checked against the
/// demand as it is (``PowerPolicy/confirm(_:now:)``): the receiver converges on what is wanted
/// now instead of replaying every past request.
struct ReceiverMachine {
  struct Configuration {
    var power: PowerPolicy.Configuration
    var schedule = RequestScheduler.Configuration()
    /// Whether a wake line is declared (``GPSReceiver/Options/wakePin``).
    var wakeLine = false
    /// How deep a power-off may put the receiver to sleep.
    var sleepDepth = SleepDepth.deepest
  }

  /// A timer by name: whose it is, and its number there.
  enum TimerName: Hashable {
    case power(PowerPolicy.TimerID)
    case requests(RequestScheduler.TimerID)
  }

  /// What the controller counts for the machine (``ReceiverStatistics``).
  enum Counter: Equatable {
    case connectionsLost, sleepsNotEntered, commandsFailed, standbysFailed
  }

  enum Event: Equatable {
    /// A subscriber came, or left.
    case attach, detach
    /// Keep the receiver powered until `until` with or without subscribers.
    case hold(until: DriverInstant)
    /// The device (re)appeared: a reconnection is tried now rather than after its backoff.
    case deviceAppeared
    /// A process that died left the receiver awake: it is put to standby unless wanted.
    case leftAwake
    case shutdown
    /// A location request made; `cached`: the latest fix (what a `maxAge` may answer with).
    case request(RequestScheduler.RequestID, LocationRequest, cached: FixUpdate?)
    /// A location request ended by its owner.
    case requestEnded(RequestScheduler.RequestID)
    case timerFired(TimerName)
    /// The power operation in hand opened the port: a new connection, numbered
    /// ``generation`` from now.
    case portOpened
    /// The power-on in hand failed to open the port.
    case openFailed(reason: FailureReason)
    /// The power-on in hand sent its wake-up; `toldTheTime`: with the time (aiding).
    case poweredOn(toldTheTime: Bool)
    /// The reader of connection `generation` stopped on an error.
    case portLost(generation: Int, reason: FailureReason)
    /// The power-off, discard or standby in hand closed the port (or found it closed).
    case closed
    /// A fix (or an epoch without a position) published live; `handle`'s `utc` is UTC at
    /// its `now`.
    case fix(FixUpdate)
    /// How the sleep step handed out last ended.
    case slept(SleepSequence.Outcome)
  }

  enum Effect: Equatable {
    /// Open the port, start reading, send the wake-up (aided with how long the receiver
    /// `slept` and whether it `keptBackup`).
    case powerOn(slept: Duration?, keptBackup: Bool?)
    /// Put the receiver to sleep: ask ``sleepContext(now:)``'s choice and the quick standby
    /// of the command set, hand them to ``beginSleep(choice:quick:)``; then stop reading and
    /// close.
    case powerOff
    /// The connection is gone: stop reading and close the port, sending nothing.
    case discardConnection
    /// Open the port, put the receiver (left awake by a process that died) to sleep, close.
    case putToStandby
    case armTimer(TimerName, deadline: DriverInstant)
    case cancelTimer(TimerName)
    case publish(ReceiverStatus)
    case tell(ReceiverNotice)
    case deliver(RequestScheduler.RequestID, FixUpdate)
    case finish(RequestScheduler.RequestID, best: FixUpdate?)
    case count(Counter)
    /// The receiver went to sleep or its connection closed: its last fix is kept
    /// (``GPSReceiver/Options/positionMemory``).
    case keepPosition
    /// A step of the sleep: its outcome comes back as ``Event/slept(_:)``.
    case driveWakeLine(high: Bool)
    case sendSteps([CommandStep])
    case runStep(CommandStep)
  }

  let configuration: Configuration
  private(set) var policy: PowerPolicy
  private(set) var scheduler: RequestScheduler
  private(set) var wakes = WakeRecord()
  /// Power operations decided and not yet handed out, in order.
  private var pending: [PowerPolicy.Action] = []
  /// The power operation handed out and not yet ended.
  private(set) var inHand: PowerPolicy.Action?
  /// The connection under way: its number, and whether it is open.
  private(set) var generation = 0
  private(set) var isOpen = false
  private var sleep: SleepSequence?
  /// The last ``ReceiverNotice/keepsRunning(family:cause:)`` said: it is not said again
  /// until the family or the cause changes.
  private var toldKeepsRunning: ReceiverNotice?

  init(configuration: Configuration) {
    self.configuration = configuration
    policy = PowerPolicy(configuration: configuration.power)
    scheduler = RequestScheduler(configuration: configuration.schedule)
  }

  /// Whether the receiver is stopped (after a shutdown) and no power operation is pending.
  var isStopped: Bool { policy.state == .stopped && pending.isEmpty }
  var hasPendingOperation: Bool { !pending.isEmpty }
  var unexpectedEvents: Int { policy.unexpectedEvents + scheduler.unexpectedEvents }
  var refusedRequests: Int { scheduler.refusedRequests }
  var assertsOnUnexpectedEvents: Bool {
    get { policy.assertsOnUnexpectedEvents }
    set {
      policy.assertsOnUnexpectedEvents = newValue
      scheduler.assertsOnUnexpectedEvents = newValue
    }
  }

  mutating func handle(_ event: Event, now: DriverInstant, utc: UTCTimestamp? = nil) -> [Effect] {
    switch event {
    case .attach: return decide(.attach, now: now)
    case .detach: return decide(.detach, now: now)
    case .hold(let until): return decide(.hold(until: until), now: now)
    case .deviceAppeared: return decide(.deviceAppeared, now: now)
    case .leftAwake: return decide(.leftAwake, now: now)
    case .shutdown: return decide(.shutdown, now: now)
    case .request(let id, let request, let cached):
      return schedule(.add(id, request, cached: cached), now: now)
    case .requestEnded(let id):
      return schedule(.remove(id), now: now)
    case .timerFired(.power(let id)):
      return decide(.timerFired(id), now: now)
    case .timerFired(.requests(let id)):
      return schedule(.timerFired(id), now: now)
    case .portOpened:
      generation += 1
      isOpen = true
      return []
    case .openFailed(let reason):
      inHand = nil
      return decide(.powerOnFailed(reason: reason), now: now)
    case .poweredOn(let toldTheTime):
      inHand = nil
      if toldTheTime { wakes.tellsTheTime() }
      return decide(.poweredOn, now: now)
    case .portLost(let lost, let reason):
      // A stale failure from a connection already closed is no news.
      guard lost == generation, isOpen else { return [] }
      return [.count(.connectionsLost)] + decide(.connectionLost(reason: reason), now: now)
    case .closed:
      return closed(now: now)
    case .fix(let update):
      judgeWake(by: update, now: now, utc: utc)
      return schedule(.fix(update), now: now)
    case .slept(let outcome):
      guard var current = sleep else { return [] }
      let effects = current.handle(outcome)
      sleep = current.isDone ? nil : current
      if current.isDone { policy.asleepOnWakeLine = current.asleepOnWakeLine }
      return effects
    }
  }

  /// The next power operation decided, re-checked against the demand as it is now; `nil`
  /// when none is pending. What it returns (the operation, or what replaces it) is run in
  /// order; an operation's end comes back as an event (``Event/poweredOn(toldTheTime:)``,
  /// ``Event/openFailed(reason:)``, ``Event/closed``).
  mutating func nextOperation(now: DriverInstant) -> [Effect]? {
    guard !pending.isEmpty else { return nil }
    let decided = pending.removeFirst()
    var effects: [Effect] = []
    for action in policy.confirm(decided, now: now) {
      switch action {
      case .powerOn:
        inHand = action
        let slept = wakes.slept(at: now)
        let keptBackup = wakes.keptBackup
        wakes.wakeBegins(at: now)
        effects.append(.powerOn(slept: slept, keptBackup: keptBackup))
      case .powerOff, .discardConnection, .putToStandby:
        inHand = action
        effects.append(Self.effect(of: action))
      case .armTimer, .cancelTimer, .status:
        effects.append(Self.effect(of: action))
      }
    }
    return effects
  }

  /// What a power-off asks of the command set's sleep (``ReceiverCommandSet/sleep(for:)``):
  /// how long the receiver is expected to sleep (until the scheduler's next wake when only
  /// scheduled requests wanted it, else unknown), the wake line and the depth allowed.
  func sleepContext(now: DriverInstant) -> SleepContext {
    var expected: Duration?
    if policy.expectedSleep == .untilScheduledWake, let wake = scheduler.nextWake {
      expected = max(.zero, wake - now)
    }
    return SleepContext(
      expected: expected, wakePin: configuration.wakeLine, depth: configuration.sleepDepth)
  }

  /// The quick-wake standby's context, the fallback of every deeper sleep.
  static let quickContext = SleepContext(expected: nil, depth: .standby)

  /// Starts the power-off's sleep: `choice` for ``sleepContext(now:)``, `quick` for
  /// ``quickContext``, both of `family`'s command set. Returns its first step; each step's
  /// end comes back as ``Event/slept(_:)``, until a step returns nothing more to run. A
  /// choice that leaves the receiver running is said first
  /// (``ReceiverNotice/keepsRunning(family:cause:)``), once per family and cause.
  mutating func beginSleep(choice: SleepChoice, quick: SleepChoice, family: ChipsetFamily)
    -> [Effect]
  {
    policy.asleepOnWakeLine = false
    let (sequence, effects) = SleepSequence.start(
      choice: choice, quick: quick, wakeLine: configuration.wakeLine)
    sleep = sequence
    guard choice.state == .running else { return effects }
    let notice = ReceiverNotice.keepsRunning(family: family, cause: keepsRunningCause(family))
    guard notice != toldKeepsRunning else { return effects }
    toldKeepsRunning = notice
    return [.tell(notice)] + effects
  }

  /// Why a sleep that leaves `family`'s receiver running was all there was.
  private func keepsRunningCause(_ family: ChipsetFamily) -> ReceiverNotice.KeepsRunningCause {
    if !family.hasCommands { return .chipsetUnknown }
    if !configuration.wakeLine { return .noWakeLine }
    if configuration.sleepDepth == .standby { return .quickWakeChosen }
    return .noSleep
  }

  // MARK: - Inside

  /// Hands `event` to the power policy: quick actions become effects now, power operations
  /// wait for ``nextOperation(now:)``; the scheduler learns when the receiver is powered.
  private mutating func decide(_ event: PowerPolicy.Event, now: DriverInstant) -> [Effect] {
    var effects: [Effect] = []
    for action in policy.handle(event, now: now) {
      if action.isPowerOperation {
        pending.append(action)
      } else {
        effects.append(Self.effect(of: action))
      }
    }
    switch event {
    case .poweredOn: effects += schedule(.receiverPowered(true), now: now)
    case .poweredOff, .connectionLost: effects += schedule(.receiverPowered(false), now: now)
    default: break
    }
    return effects
  }

  /// Hands `event` to the requests' scheduler: its demand goes to the power policy.
  private mutating func schedule(_ event: RequestScheduler.Event, now: DriverInstant)
    -> [Effect]
  {
    var effects: [Effect] = []
    for action in scheduler.handle(event, now: now) {
      switch action {
      case .powerOn: effects += decide(.scheduled(wanted: true, linger: false), now: now)
      case .powerOff(let linger):
        effects += decide(.scheduled(wanted: false, linger: linger), now: now)
      case .deliver(let id, let update): effects.append(.deliver(id, update))
      case .finish(let id, let best): effects.append(.finish(id, best: best))
      case .armTimer(let id, let deadline):
        effects.append(.armTimer(.requests(id), deadline: deadline))
      case .cancelTimer(let id): effects.append(.cancelTimer(.requests(id)))
      }
    }
    return effects
  }

  /// The operation in hand closed the port: the receiver sleeps (commanded) or is gone.
  private mutating func closed(now: DriverInstant) -> [Effect] {
    let operation = inHand
    inHand = nil
    let wasOpen = isOpen
    isOpen = false
    switch operation {
    case .powerOff:
      guard wasOpen else { return decide(.poweredOff, now: now) }
      wakes.poweredOff(at: now, commanded: true)
      return [.keepPosition] + decide(.poweredOff, now: now)
    case .discardConnection:
      guard wasOpen else { return [] }
      wakes.poweredOff(at: now, commanded: false)
      return [.keepPosition]
    case .putToStandby:
      wakes.poweredOff(at: now, commanded: true)
      return [.keepPosition] + decide(.poweredOff, now: now)
    case .powerOn, .armTimer, .cancelTimer, .status, nil:
      return []  // no operation that closes is in hand
    }
  }

  /// What an epoch of the wake under way says of the receiver's backup: its first fix by
  /// when it came, a time before it by agreeing with UTC.
  private mutating func judgeWake(by update: FixUpdate, now: DriverInstant, utc: UTCTimestamp?) {
    if update.fix.position != nil {
      wakes.fixArrived(at: update.arrival)
    } else if let time = update.fix.time, let utc {
      wakes.timeHeard(time, at: update.arrival, utc: utc, now: now)
    }
  }

  private static func effect(of action: PowerPolicy.Action) -> Effect {
    switch action {
    case .powerOn: return .powerOn(slept: nil, keptBackup: nil)
    case .powerOff: return .powerOff
    case .discardConnection: return .discardConnection
    case .putToStandby: return .putToStandby
    case .armTimer(let id, let deadline): return .armTimer(.power(id), deadline: deadline)
    case .cancelTimer(let id): return .cancelTimer(.power(id))
    case .status(let status): return .publish(status)
    }
  }
}
