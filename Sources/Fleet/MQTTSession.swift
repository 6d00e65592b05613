import SerialGPS

/// How an attempt or a connection to the broker ended, as the adapter saw it.
enum MQTTEnd: Sendable, Equatable {
  /// libmosquitto's code for it (`MOSQ_ERR_…`), `errno` when the code says to look there,
  /// and the library's words for the code.
  case library(code: Int32, errno: Int32, text: String)
  /// The attempt was abandoned after ``BrokerConfiguration/connectTimeout``. `answered`:
  /// the TCP connection was established, so something listens there but sent no CONNACK.
  case noAnswer(answered: Bool)
}

/// One connection to the broker as a pure state machine: connecting, connected, backing off
/// after a failure, closing; events in (the broker's CONNACK, the end of an attempt or a
/// connection with its reason code, a publication acknowledged, time), actions out. It
/// performs no I/O and reads no clock: ``MQTTClient`` runs its actions with libmosquitto on
/// the network thread and feeds back what happened.
///
/// - It reconnects after a failure with the shared ``Backoff`` (doubled per consecutive failure,
///   drawn from its upper half so that a fleet does not reconnect in step), and abandons an
///   attempt that gets no CONNACK within the connect timeout, saying whether the TCP
///   connection was taken (something listens there that does not speak MQTT) or not.
/// - A refusal in CONNACK is kept and reported when the broker then closes the connection.
/// - While connected it asks for libmosquitto's keep-alive housekeeping every quarter of the
///   keep-alive, so a ping goes out well before the broker's limit of one and a half.
/// - A stop waits for the QoS 1 publications made so far to be acknowledged, at most the
///   time it was given, then closes (a clean DISCONNECT, so the broker publishes no Last
///   Will). It never finishes inside the call that asked for it, which may come from within a
///   libmosquitto callback where the client must not be destroyed: it finishes at the next
///   ``Event/timer``.
///
/// An event that the session's contract rules out (CONNACK while nothing connects, an
/// acknowledgement before connecting) is a bug: a debug build stops at it, a release build
/// ignores it and counts it (``unexpectedEvents``). Ends reported twice (a callback, then the
/// loop call's return code) are expected: the second is ignored.
struct MQTTSession<Random: RandomNumberGenerator> {
  struct Settings: Sendable, Equatable {
    var broker: BrokerConfiguration
    var backoff: Backoff

    init(broker: BrokerConfiguration) {
      self.broker = broker
      backoff = Backoff(initial: broker.reconnectDelay, maximum: broker.maximumReconnectDelay)
    }

    /// How often the keep-alive is looked after.
    var keepAliveCheck: Duration { max(.seconds(1), broker.keepAlive / 4) }
  }

  enum State: Sendable, Equatable {
    /// Not started.
    case idle
    /// Waiting to (re)connect until `until`.
    case backingOff(until: Duration)
    /// An attempt is under way since `since`; `refusal`: what CONNACK refused, reported when
    /// the broker then closes.
    case connecting(since: Duration, refusal: FleetError?)
    case connected(nextKeepAlive: Duration)
    /// Stopping: closes at `deadline`, or once every QoS 1 publication is acknowledged.
    case closing(deadline: Duration)
    case stopped
  }

  enum Event: Sendable, Equatable {
    case start
    /// The client could not be set up (an unreadable TLS file): it stops at once.
    case setupFailed(FleetError)
    /// CONNACK: `reasonCode` 0 accepts; `reason` is the library's words for the code.
    case connack(reasonCode: Int32, reason: String)
    /// The attempt failed, or the connection ended.
    case disconnected(MQTTEnd)
    /// A QoS 1 publication went to the library, not yet acknowledged.
    case sent(messageID: Int32)
    /// The broker acknowledged it.
    case published(messageID: Int32)
    /// Time passed: ``nextDeadline`` may have come.
    case timer
    /// Stop once the QoS 1 publications made so far are acknowledged, waiting at most this.
    case stop(within: Duration)
  }

  enum Action: Sendable, Equatable {
    /// Start an attempt (without blocking).
    case connect
    /// Close the attempt under way; its end comes back as ``Event/disconnected(_:)`` with
    /// ``MQTTEnd/noAnswer(answered:)``.
    case abandonAttempt
    /// Let libmosquitto send a PINGREQ if one is due, and notice a broker gone silent.
    case serviceKeepAlive
    /// Disconnect cleanly if a connection is open (no Last Will), and release the client.
    case close
    case report(Report)
  }

  /// What the owner hears.
  enum Report: Sendable, Equatable {
    /// The broker accepted the connection (a clean session: subscribe again).
    case connected
    /// The attempt failed or the connection ended; the session retries after its backoff
    /// unless stopped.
    case disconnected(FleetError, wasConnected: Bool)
    /// The broker acknowledged this QoS 1 publication.
    case delivered(messageID: Int32)
    /// Stopped for good.
    case stopped
  }

  let settings: Settings
  private(set) var state = State.idle
  /// Consecutive failures, for the backoff.
  private(set) var failures = 0
  /// QoS 1 publications not yet acknowledged.
  private(set) var unacknowledged: Set<Int32> = []
  private var random: Random
  private(set) var unexpectedEvents = 0
  /// Off only in tests that feed unexpected events on purpose.
  var assertsOnUnexpectedEvents = true

  init(settings: Settings, random: Random) {
    self.settings = settings
    self.random = random
  }

  var isConnected: Bool {
    if case .connected = state { return true }
    return false
  }

  /// Whether a connection or an attempt may be open, with a socket to watch.
  var hasSocket: Bool {
    switch state {
    case .connecting, .connected, .closing: return true
    case .idle, .backingOff, .stopped: return false
    }
  }

  /// When the session next wants ``Event/timer``; `nil`: never (idle or stopped).
  var nextDeadline: Duration? {
    switch state {
    case .backingOff(let until): return until
    case .connecting(let since, _): return since + settings.broker.connectTimeout
    case .connected(let nextKeepAlive): return nextKeepAlive
    case .closing(let deadline): return deadline
    case .idle, .stopped: return nil
    }
  }

  mutating func handle(_ event: Event, now: Duration) -> [Action] {
    switch event {
    case .start:
      guard state == .idle else { return unexpected(event) }
      state = .backingOff(until: now)  // connects at the first timer, outside the caller's job
      return []

    case .setupFailed(let error):
      guard state == .idle else { return unexpected(event) }
      state = .stopped
      return [.close, .report(.disconnected(error, wasConnected: false)), .report(.stopped)]

    case .connack(let code, let reason):
      switch state {
      case .connecting where code == 0:
        failures = 0
        state = .connected(nextKeepAlive: now + settings.keepAliveCheck)
        return [.report(.connected)]
      case .connecting(let since, _):
        // The broker closes the connection next: the refusal is reported then.
        state = .connecting(
          since: since, refusal: .refusal(code: code, reason: reason, broker: settings.broker))
        return []
      case .closing:
        return []  // asked to stop while connecting: the answer no longer matters
      case .idle, .backingOff, .connected, .stopped:
        return unexpected(event)
      }

    case .disconnected(let end):
      let wasConnected: Bool
      let reason: FleetError
      switch state {
      case .connecting(_, let refusal):
        wasConnected = false
        reason = refusal ?? .ended(end, broker: settings.broker, wasConnected: false)
        failures += 1
      case .connected:
        wasConnected = true
        reason = .ended(end, broker: settings.broker, wasConnected: true)
        failures = 1
      case .closing:
        state = .closing(deadline: now)  // nothing left to wait for
        return []
      case .idle, .backingOff, .stopped:
        return []  // the same end seen twice (a callback, then the loop call's code)
      }
      unacknowledged.removeAll()
      let delay = settings.backoff.delay(attempt: failures, jitteredBy: &random)
      state = .backingOff(until: now + delay)
      return [.report(.disconnected(reason, wasConnected: wasConnected))]

    case .sent(let messageID):
      guard isConnected else { return unexpected(event) }
      unacknowledged.insert(messageID)
      return []

    case .published(let messageID):
      guard unacknowledged.remove(messageID) != nil else {
        return []  // not ours to wait for (QoS 0), or from before a reconnect
      }
      if case .closing = state, unacknowledged.isEmpty { state = .closing(deadline: now) }
      return [.report(.delivered(messageID: messageID))]

    case .timer:
      switch state {
      case .backingOff(let until) where until <= now:
        state = .connecting(since: now, refusal: nil)
        return [.connect]
      case .connecting(let since, _) where since + settings.broker.connectTimeout <= now:
        return [.abandonAttempt]
      case .connected(let nextKeepAlive) where nextKeepAlive <= now:
        state = .connected(nextKeepAlive: now + settings.keepAliveCheck)
        return [.serviceKeepAlive]
      case .closing(let deadline) where deadline <= now:
        state = .stopped
        return [.close, .report(.stopped)]
      default:
        return []  // not yet
      }

    case .stop(let limit):
      switch state {
      case .connected:
        state = .closing(deadline: unacknowledged.isEmpty ? now : now + limit)
      case .idle, .backingOff, .connecting:
        state = .closing(deadline: now)
      case .closing, .stopped:
        break
      }
      return []
    }
  }

  private mutating func unexpected(_ event: Event) -> [Action] {
    unexpectedEvents += 1
    if assertsOnUnexpectedEvents {
      assertionFailure("MQTTSession: unexpected \(event) in \(state)")
    }
    return []
  }
}
