/// The receiver's power policy as a pure state machine.
///
/// It takes events in the order they happened (a subscriber attached or detached, a hold was
/// asked for, a timer fired, the port opened or failed, the connection was lost) and returns
/// the actions to run, in order. It performs no I/O and reads no clock: the time comes with
/// each event. One task runs the actions and feeds their outcome back as the next event, so
/// power-on and power-off strictly alternate and never overlap.
///
/// Deciding and doing are apart. Events are decided one by one, in order, so that no attach
/// or detach is lost. A power-on or power-off is decided at once but started later, when the
/// controller has handed in every event queued meanwhile; ``confirm(_:now:)`` then checks it
/// against the demand as it is at that moment. So the receiver converges on what is wanted now
/// instead of replaying every past request: a thousand subscribers that came and went while
/// it was waking cost one power cycle, not a thousand.
struct PowerPolicy {
  struct Configuration {
    /// How long the receiver stays powered after the last subscription ends.
    var linger: Duration
    /// Delays between attempts to reopen a lost or missing device.
    var backoff: Backoff
  }

  typealias TimerID = UInt64

  /// Consecutive failures to open or keep the device.
  struct Failures: Equatable {
    /// How many, for the backoff.
    var attempts: Int
    /// The last one told to subscribers, so that a retry that fails alike stays quiet.
    var reason: FailureReason
  }

  enum State: Equatable {
    case off
    /// `reconnectingAfter`: the failures so far when this is a reconnection (subscribers are
    /// told `reconnected` when it succeeds); `nil` for a first power-on.
    case poweringOn(reconnectingAfter: Failures?)
    case on
    case lingering(timer: TimerID)
    case poweringOff
    case waitingToReconnect(Failures, timer: TimerID)
    case stopped
  }

  /// A hold: the receiver stays powered until `until`, when `timer` fires.
  private struct Hold {
    var until: DriverInstant
    var timer: TimerID
  }

  enum Event: Equatable {
    case attach
    case detach
    /// Keep the receiver powered until `until` (clock time) with or without subscribers.
    case hold(until: DriverInstant)
    /// The location requests want power (``RequestScheduler``), or no longer do. `linger`:
    /// when they no longer do, wait the linger first (a continuous request left) rather than
    /// power off at once (a scheduled wake or a one-shot is over).
    case scheduled(wanted: Bool, linger: Bool)
    case timerFired(TimerID)
    case poweredOn
    case powerOnFailed(reason: FailureReason)
    case connectionLost(reason: FailureReason)
    case poweredOff
    /// The device (re)appeared, for example on hotplug: try now rather than after the backoff.
    case deviceAppeared
    /// A process that has died left the receiver awake (its marker says so, ``AwakeMarkers``):
    /// put it to standby unless someone wants it.
    case leftAwake
    case shutdown
  }

  /// How long a power-off expects the receiver to sleep, from the demand that left last.
  enum ExpectedSleep: Equatable {
    /// A subscriber, a hold or a continuous request left (it may come back at any moment),
    /// or the process ends: nobody knows, and it may be short.
    case unknown
    /// A scheduled wake or a one-shot is over: until the scheduler's next wake, if it has one.
    case untilScheduledWake
  }

  enum Action: Equatable {
    /// Open the port, start reading, send the enable commands.
    case powerOn
    /// Send the disable commands, stop reading, close the port. The sleep it expects is
    /// ``PowerPolicy/expectedSleep`` as the power-off starts.
    case powerOff
    /// The connection is gone: stop reading and close the port, sending nothing.
    case discardConnection
    /// Open the port, send the disable commands, close it: a receiver left awake by a process
    /// that died. Reported like a power-off (``Event/poweredOff``).
    case putToStandby
    case armTimer(TimerID, deadline: DriverInstant)
    case cancelTimer(TimerID)
    case status(ReceiverStatus)

    /// Whether running it takes the port (and time): the operations that
    /// ``PowerPolicy/confirm(_:now:)`` re-checks before they start.
    var isPowerOperation: Bool {
      switch self {
      case .powerOn, .powerOff, .discardConnection, .putToStandby: return true
      case .armTimer, .cancelTimer, .status: return false
      }
    }
  }

  let configuration: Configuration
  private(set) var state = State.off
  private(set) var subscribers = 0
  /// Part of the demand, as the subscribers are, so in no state of its own: any state but
  /// `stopped` may have one.
  private var hold: Hold?
  /// The location requests' demand, part of the demand as the subscribers are.
  private(set) var scheduled = false
  /// What a power-off decided now expects of the sleep (``Action/powerOff``'s sleep, read by
  /// ``ReceiverMachine/sleepContext(now:)``): set by the demand that left last.
  private(set) var expectedSleep = ExpectedSleep.unknown
  /// The receiver sleeps where only the wake line wakes it (set by ``ReceiverMachine`` at each
  /// power-off's sleep): a shutdown while it is off wakes it and leaves it in standby, which a later
  /// process can leave without the line.
  var asleepOnWakeLine = false
  private var nextTimer: TimerID = 0
  /// Events and operations that came in a state that does not expect them (a bug in whoever
  /// feeds the policy): ignored, and counted here. A debug build stops at the first with an
  /// assertion unless ``assertsOnUnexpectedEvents`` is off.
  private(set) var unexpectedEvents = 0
  /// Off only in tests that feed unexpected events on purpose, to check they are counted by
  /// the same code a release build runs.
  var assertsOnUnexpectedEvents = true

  init(configuration: Configuration) {
    self.configuration = configuration
  }

  /// Whether anyone wants the receiver powered.
  var hasDemand: Bool { subscribers > 0 || hold != nil || scheduled }

  mutating func handle(_ event: Event, now: DriverInstant) -> [Action] {
    if state == .stopped {
      return []
    }
    switch event {
    case .attach:
      subscribers += 1
      return demandRose()

    case .detach:
      guard subscribers > 0 else { return unexpected(event) }  // unbalanced: never negative
      subscribers -= 1
      expectedSleep = .unknown
      return demandMayHaveFallen(now: now)

    case .hold(let until):
      guard until > now else { return [] }  // over already
      var actions: [Action] = []
      if let hold { actions.append(.cancelTimer(hold.timer)) }
      let held = Hold(until: max(hold?.until ?? until, until), timer: makeTimer())
      hold = held
      actions.append(.armTimer(held.timer, deadline: held.until))
      return actions + demandRose()

    case .scheduled(let wanted, let linger):
      guard wanted != scheduled else { return [] }  // no change
      scheduled = wanted
      if !wanted { expectedSleep = linger ? .unknown : .untilScheduledWake }
      return wanted ? demandRose() : demandMayHaveFallen(now: now, lingering: linger)

    case .timerFired(let timer):
      if timer == hold?.timer {
        hold = nil
        expectedSleep = .unknown
        return demandMayHaveFallen(now: now)
      }
      switch state {
      case .lingering(let lingerTimer) where lingerTimer == timer:
        state = .poweringOff
        return [.powerOff]
      case .waitingToReconnect(let failures, let reconnectTimer) where reconnectTimer == timer:
        state = .poweringOn(reconnectingAfter: failures)
        return [.powerOn]
      case .off, .poweringOn, .on, .lingering, .poweringOff, .waitingToReconnect, .stopped:
        return []  // a timer cancelled after it fired: expected, the race is inherent
      }

    case .poweredOn:
      guard case .poweringOn(let failures) = state else { return unexpected(event) }
      state = .on
      var actions: [Action] = failures != nil ? [.status(.reconnected)] : []
      // Everyone may have left while the port was opening.
      actions += demandMayHaveFallen(now: now)
      return actions

    case .powerOnFailed(let reason):
      guard case .poweringOn(let failures) = state else { return unexpected(event) }
      return scheduleReconnect(reason: reason, after: failures, now: now)

    case .connectionLost(let reason):
      switch state {
      case .on, .lingering:
        var actions: [Action] = []
        if case .lingering(let timer) = state { actions.append(.cancelTimer(timer)) }
        actions.append(.discardConnection)
        return actions + scheduleReconnect(reason: reason, after: nil, now: now)
      case .poweringOff, .waitingToReconnect:
        // The connection is being closed already (a power-off or a discard is under way):
        // its reader may fail first. Expected.
        return []
      case .off, .poweringOn, .stopped:
        return unexpected(event)  // no connection is open
      }

    case .poweredOff:
      guard state == .poweringOff else { return unexpected(event) }
      state = .off
      var actions: [Action] = [.status(.poweredOff)]
      if hasDemand { actions += demandRose() }  // someone arrived during the power-off
      return actions

    case .leftAwake:
      guard state == .off, !hasDemand else { return [] }  // awake and wanted: nothing to do
      expectedSleep = .unknown
      state = .poweringOff
      return [.putToStandby]

    case .deviceAppeared:
      // Expected at any time: news for a receiver waiting to reconnect, else nothing to do.
      guard case .waitingToReconnect(let failures, let timer) = state else { return [] }
      state = .poweringOn(reconnectingAfter: failures)
      return [.cancelTimer(timer), .powerOn]

    case .shutdown:
      expectedSleep = .unknown  // no process will wake it on schedule
      var actions: [Action] = []
      if let hold { actions.append(.cancelTimer(hold.timer)) }
      hold = nil
      scheduled = false
      switch state {
      case .on:
        actions += [.powerOff, .status(.poweredOff)]
      case .lingering(let timer):
        actions += [.cancelTimer(timer), .powerOff, .status(.poweredOff)]
      case .waitingToReconnect(_, let timer):
        actions += [.cancelTimer(timer), .status(.poweredOff)]
      case .off where asleepOnWakeLine:
        actions.append(.putToStandby)
      case .poweringOn, .poweringOff, .off, .stopped:
        break
      }
      state = .stopped
      return actions
    }
  }

  /// Called just before the controller starts a power `operation` that an earlier event
  /// decided, once every event queued since has been handled. Returns what to run now: the
  /// operation itself while it is still wanted, else what replaces it.
  ///
  /// - A power-on whose demand has gone (the subscribers left, the hold ended) is not
  ///   started: the receiver stays off.
  /// - A power-off that a new subscriber (or a hold) made moot is not started: the receiver
  ///   stays on, and the subscriber gets the stream that is already running.
  /// - After a shutdown a pending power-on is dropped and a pending power-off still runs: the
  ///   process ends with the receiver in standby.
  mutating func confirm(_ operation: Action, now: DriverInstant) -> [Action] {
    switch (operation, state) {
    case (.powerOn, .poweringOn):
      if hasDemand { return [.powerOn] }
      state = .off
      return [.status(.poweredOff)]
    case (.powerOn, .stopped):
      return []  // stopped meanwhile
    case (.powerOff, .poweringOff):
      if hasDemand {
        state = .on
        return []
      }
      return [.powerOff]
    case (.powerOff, .stopped):
      return [.powerOff]  // decided by the shutdown, or before it: standby either way
    case (.putToStandby, .poweringOff):
      guard hasDemand else { return [.putToStandby] }
      state = .off  // a subscriber came first: it wins, and is woken as usual
      return demandRose()
    case (.putToStandby, .stopped):
      return [.putToStandby]
    case (.powerOn, _), (.powerOff, _), (.putToStandby, _):
      // Decided in a state that no event leaves before the operation starts.
      return unexpected(operation)
    case (.discardConnection, _):
      return [operation]  // the connection is gone whatever happened since
    case (.armTimer, _), (.cancelTimer, _), (.status, _):
      return unexpected(operation)  // not a power operation: nothing to confirm
    }
  }

  private mutating func makeTimer() -> TimerID {
    nextTimer += 1
    return nextTimer
  }

  /// Demand may have appeared: power on, or cancel a pending power-off.
  private mutating func demandRose() -> [Action] {
    guard hasDemand else { return [] }
    switch state {
    case .off:
      state = .poweringOn(reconnectingAfter: nil)
      return [.status(.poweringOn), .powerOn]
    case .lingering(let timer):
      state = .on
      return [.cancelTimer(timer)]
    case .poweringOn, .on, .waitingToReconnect, .stopped:
      return []  // on, or on its way (a reconnection retries by itself)
    case .poweringOff:
      return []  // ``confirm(_:now:)`` drops the power-off that is now moot
    }
  }

  /// Demand may be gone: linger (unless `lingering` is false), then power off; or stop
  /// waiting to reconnect.
  private mutating func demandMayHaveFallen(now: DriverInstant, lingering: Bool = true)
    -> [Action]
  {
    guard !hasDemand else { return [] }
    switch state {
    case .on:
      if !lingering || configuration.linger <= .zero {
        state = .poweringOff
        return [.powerOff]
      }
      let timer = makeTimer()
      state = .lingering(timer: timer)
      return [.armTimer(timer, deadline: now + configuration.linger)]
    case .waitingToReconnect(_, let timer):
      state = .off
      return [.cancelTimer(timer), .status(.poweredOff)]
    case .off, .lingering, .poweringOff, .stopped:
      return []  // off, or on its way
    case .poweringOn:
      return []  // ``confirm(_:now:)`` drops the power-on that is now moot
    }
  }

  /// `previous`: the failures before this one, if it is a reconnection that failed.
  private mutating func scheduleReconnect(
    reason: FailureReason, after previous: Failures?, now: DriverInstant
  )
    -> [Action]
  {
    // Tell subscribers once per distinct reason, not on every retry.
    var actions: [Action] = []
    if reason != previous?.reason {
      actions.append(.status(.disconnected(reason: reason)))
    }
    guard hasDemand else {
      state = .off
      actions.append(.status(.poweredOff))
      return actions
    }
    let failures = Failures(attempts: (previous?.attempts ?? 0) + 1, reason: reason)
    let timer = makeTimer()
    state = .waitingToReconnect(failures, timer: timer)
    let delay = configuration.backoff.delay(attempt: failures.attempts)
    actions.append(.armTimer(timer, deadline: now + delay))
    return actions
  }

  /// An event (or operation) that the state does not expect: counted and ignored.
  private mutating func unexpected(_ what: some Any) -> [Action] {
    unexpectedEvents += 1
    if assertsOnUnexpectedEvents {
      assertionFailure("PowerPolicy: unexpected \(what) in state \(state)")
    }
    return []
  }
}
