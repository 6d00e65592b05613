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

  /// Exponential backoff: `initial`, doubled per attempt, at most `maximum`.
  struct Backoff {
    var initial: Duration
    var maximum: Duration

    func delay(attempt: Int) -> Duration {
      var delay = initial
      for _ in 1..<max(1, attempt) {
        delay = delay * 2
        if delay >= maximum { return maximum }
      }
      return min(delay, maximum)
    }
  }

  typealias TimerID = UInt64

  enum State: Equatable {
    case off
    case poweringOn(reconnecting: Bool)
    case on
    case lingering(timer: TimerID)
    case poweringOff
    case waitingToReconnect(attempt: Int, timer: TimerID)
    case stopped
  }

  enum Event: Equatable {
    case attach
    case detach
    /// Keep the receiver powered until `until` (clock time) with or without subscribers.
    case hold(until: DriverInstant)
    case timerFired(TimerID)
    case poweredOn
    case powerOnFailed(reason: String)
    case connectionLost(reason: String)
    case poweredOff
    /// The device (re)appeared, for example on hotplug: try now rather than after the backoff.
    case deviceAppeared
    /// A process that has died left the receiver awake (its marker says so, ``AwakeMarkers``):
    /// put it to standby unless someone wants it.
    case leftAwake
    case shutdown
  }

  enum Action: Equatable {
    /// Open the port, start reading, send the enable commands.
    case powerOn
    /// Send the disable commands, stop reading, close the port.
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
  private var holdUntil: DriverInstant?
  private var holdTimer: TimerID?
  private var nextTimer: TimerID = 0
  /// Consecutive failures to open or keep the device, for the backoff.
  private var failedAttempts = 0
  /// The last failure told to subscribers, so a retry that fails alike stays quiet.
  private var lastFailure: String?

  init(configuration: Configuration) {
    self.configuration = configuration
  }

  /// Whether anyone wants the receiver powered.
  var hasDemand: Bool { subscribers > 0 || holdUntil != nil }

  mutating func handle(_ event: Event, now: DriverInstant) -> [Action] {
    if state == .stopped {
      return []
    }
    switch event {
    case .attach:
      subscribers += 1
      return demandRose()

    case .detach:
      guard subscribers > 0 else { return [] }  // unbalanced: ignore rather than go negative
      subscribers -= 1
      return demandMayHaveFallen(now: now)

    case .hold(let until):
      guard until > now else { return [] }
      var actions: [Action] = []
      if let holdTimer { actions.append(.cancelTimer(holdTimer)) }
      holdUntil = max(holdUntil ?? until, until)
      let timer = makeTimer()
      holdTimer = timer
      actions.append(.armTimer(timer, deadline: holdUntil!))
      return actions + demandRose()

    case .timerFired(let timer):
      if timer == holdTimer {
        holdTimer = nil
        holdUntil = nil
        return demandMayHaveFallen(now: now)
      }
      switch state {
      case .lingering(let lingerTimer) where lingerTimer == timer:
        state = .poweringOff
        return [.powerOff]
      case .waitingToReconnect(_, let reconnectTimer) where reconnectTimer == timer:
        state = .poweringOn(reconnecting: true)
        return [.powerOn]
      default:
        return []  // a timer cancelled after it fired
      }

    case .poweredOn:
      guard case .poweringOn(let reconnecting) = state else { return [] }
      state = .on
      failedAttempts = 0
      lastFailure = nil
      var actions: [Action] = reconnecting ? [.status(.reconnected)] : []
      // Everyone may have left while the port was opening.
      actions += demandMayHaveFallen(now: now)
      return actions

    case .powerOnFailed(let reason):
      guard case .poweringOn = state else { return [] }
      return scheduleReconnect(reason: reason, now: now)

    case .connectionLost(let reason):
      switch state {
      case .on, .lingering:
        var actions: [Action] = []
        if case .lingering(let timer) = state { actions.append(.cancelTimer(timer)) }
        actions.append(.discardConnection)
        failedAttempts = 0
        lastFailure = nil
        return actions + scheduleReconnect(reason: reason, now: now)
      default:
        return []
      }

    case .poweredOff:
      guard state == .poweringOff else { return [] }
      state = .off
      var actions: [Action] = [.status(.poweredOff)]
      if hasDemand { actions += demandRose() }  // someone arrived during the power-off
      return actions

    case .leftAwake:
      guard state == .off, !hasDemand else { return [] }  // awake and wanted: nothing to do
      state = .poweringOff
      return [.putToStandby]

    case .deviceAppeared:
      guard case .waitingToReconnect(_, let timer) = state else { return [] }
      state = .poweringOn(reconnecting: true)
      return [.cancelTimer(timer), .powerOn]

    case .shutdown:
      var actions: [Action] = []
      if let holdTimer { actions.append(.cancelTimer(holdTimer)) }
      holdTimer = nil
      holdUntil = nil
      switch state {
      case .on:
        actions += [.powerOff, .status(.poweredOff)]
      case .lingering(let timer):
        actions += [.cancelTimer(timer), .powerOff, .status(.poweredOff)]
      case .waitingToReconnect(_, let timer):
        actions += [.cancelTimer(timer), .status(.poweredOff)]
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
      failedAttempts = 0
      lastFailure = nil
      return [.status(.poweredOff)]
    case (.powerOn, _):
      return []  // stopped meanwhile
    case (.powerOff, .poweringOff):
      if hasDemand {
        state = .on
        return []
      }
      return [.powerOff]
    case (.powerOff, .stopped):
      return [.powerOff]  // decided by the shutdown, or before it: standby either way
    case (.powerOff, _):
      return []
    case (.putToStandby, .poweringOff):
      guard hasDemand else { return [.putToStandby] }
      state = .off  // a subscriber came first: it wins, and is woken as usual
      return demandRose()
    case (.putToStandby, .stopped):
      return [.putToStandby]
    case (.putToStandby, _):
      return []
    default:
      return [operation]
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
      state = .poweringOn(reconnecting: false)
      return [.status(.poweringOn), .powerOn]
    case .lingering(let timer):
      state = .on
      return [.cancelTimer(timer)]
    default:
      return []
    }
  }

  /// Demand may be gone: linger, then power off; or stop waiting to reconnect.
  private mutating func demandMayHaveFallen(now: DriverInstant) -> [Action] {
    guard !hasDemand else { return [] }
    switch state {
    case .on:
      if configuration.linger <= .zero {
        state = .poweringOff
        return [.powerOff]
      }
      let timer = makeTimer()
      state = .lingering(timer: timer)
      return [.armTimer(timer, deadline: now + configuration.linger)]
    case .waitingToReconnect(_, let timer):
      state = .off
      failedAttempts = 0
      lastFailure = nil
      return [.cancelTimer(timer), .status(.poweredOff)]
    default:
      return []
    }
  }

  private mutating func scheduleReconnect(reason: String, now: DriverInstant) -> [Action] {
    failedAttempts += 1
    // Tell subscribers once per distinct reason, not on every retry.
    var actions: [Action] = []
    if reason != lastFailure {
      actions.append(.status(.disconnected(reason: reason)))
      lastFailure = reason
    }
    guard hasDemand else {
      state = .off
      failedAttempts = 0
      lastFailure = nil
      actions.append(.status(.poweredOff))
      return actions
    }
    let timer = makeTimer()
    state = .waitingToReconnect(attempt: failedAttempts, timer: timer)
    let delay = configuration.backoff.delay(attempt: failedAttempts)
    actions.append(.armTimer(timer, deadline: now + delay))
    return actions
  }
}
