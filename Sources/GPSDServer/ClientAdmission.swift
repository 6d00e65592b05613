import POSIX

/// Who may connect and who must go, as a pure state machine: the client limit, the eviction of
/// an idle client when every slot is taken, the idle timeout, the backlog past which a client
/// that does not read is dropped, the pause in accepting when the process is out of
/// descriptors, and how often that is logged.
///
/// It takes events in the order they happened (a connection was accepted, `accept` failed, a
/// client sent a request, a client left, time passed), each with the time, and returns the
/// actions to run, in order. It performs no I/O and reads no clock: the event loop runs the
/// actions (writes the notices, closes the sockets, polls the listener or not), outside any
/// lock. What a client asks is ``ServerState``'s business; this only knows whether it watches.
///
/// An event the loop's contract rules out (a request from, or the leaving of, a client it does
/// not know) is a bug: a debug build stops at it, a release build ignores it and counts it
/// (``unexpectedEvents``).
struct ClientAdmission {
  struct Settings: Sendable, Equatable {
    /// Clients served at once (``GPSDServer/Configuration/maximumClients``).
    var maximumClients = 64
    /// How long a client that does not watch must have been quiet before it gives its slot
    /// to a newcomer; `nil`: never, newcomers are refused.
    var evictionIdleTime: Duration? = .seconds(5)
    /// A client that neither watches nor asks anything for this long is closed; `nil`: never.
    var idleTimeout: Duration? = .seconds(15 * 60)
    /// Bytes waiting for a client past which it is dropped: it stopped reading
    /// (``GPSDServer/Configuration/maximumBacklog``).
    var maximumBacklog = 256 * 1024
    /// How long the listener is left alone after `accept` failed, unless a client leaves
    /// first: the pending connection stays queued and the listener readable, so polling it
    /// again at once would spin until a descriptor is free.
    var acceptPause: Duration = .seconds(1)
    /// At most one message about failing to accept per this interval.
    var logInterval: Duration = .seconds(10)
  }

  enum Event: Sendable, Equatable {
    /// `accept` returned a connection from `peer`.
    case arrived(peer: String)
    /// `accept` failed (no descriptor left, typically); `reason` says how.
    case acceptFailed(reason: String)
    /// The client sent something, and after it watches (or not).
    case request(ClientID, watching: Bool)
    /// Bytes wait for the client: its socket did not take them all, and `waiting` are queued.
    case backlog(ClientID, waiting: Int)
    /// The loop closed the client for a reason of its own (the peer closed, stopped reading,
    /// an error on its socket).
    case left(ClientID)
    /// Time passed: ``nextDeadline`` may have come.
    case timer
  }

  enum Action: Sendable, Equatable {
    /// Serve the connection that just arrived as client `id`.
    case admit(ClientID)
    /// Tell the connection that just arrived that every slot is taken, and close it.
    case refuse
    /// Tell the client it was closed to make room for a newcomer, and close it.
    case evict(ClientID)
    /// Close the client: it was idle too long, or stopped reading.
    case close(ClientID)
    /// Stop polling the listener, until ``resumeAccepting``.
    case pauseAccepting
    case resumeAccepting
    /// Say this to the operator (without the program's name).
    case log(String)
  }

  struct Counters: Sendable, Equatable {
    var accepted = 0
    var refused = 0
    var evicted = 0
    /// Dropped for not reading (``Settings/maximumBacklog``).
    var dropped = 0
  }

  private struct Client {
    let peer: String
    /// When it last sent something (or connected).
    var lastRequest: MonotonicInstant
    var watching = false
  }

  /// Whether accepting is paused, and since when the failure that paused it was said.
  private enum Accepting {
    case yes
    /// Until `until`, or until a client leaves.
    case paused(until: MonotonicInstant)
  }

  let settings: Settings
  private var clients: [ClientID: Client] = [:]
  private var nextClient: ClientID = 1
  private var accepting = Accepting.yes
  /// Whether this run out of descriptors has been said (an accept that succeeds ends it).
  private var outageSaid = false
  private var outageLog: LogThrottle
  private(set) var counters = Counters()
  /// Events that came when the state did not expect them (a bug in the loop): ignored and
  /// counted. A debug build stops at the first unless ``assertsOnUnexpectedEvents`` is off.
  private(set) var unexpectedEvents = 0
  /// Off only in tests that feed unexpected events on purpose.
  var assertsOnUnexpectedEvents = true

  init(settings: Settings) {
    self.settings = settings
    outageLog = LogThrottle(interval: settings.logInterval)
  }

  /// Clients served now.
  var clientCount: Int { clients.count }

  /// Whether the listener is to be polled.
  var isAccepting: Bool {
    if case .yes = accepting { return true }
    return false
  }

  /// When the state next has something to do on its own (the end of the pause, the first
  /// client that reaches the idle timeout); `nil`: nothing, wait for events. A server whose
  /// clients all watch (or that has none) and accepts never wakes on its own.
  var nextDeadline: MonotonicInstant? {
    var earliest: MonotonicInstant?
    if case .paused(let until) = accepting { earliest = until }
    if let limit = settings.idleTimeout {
      for client in clients.values where !client.watching {
        let due = client.lastRequest + limit
        if earliest.map({ due < $0 }) ?? true { earliest = due }
      }
    }
    return earliest
  }

  mutating func handle(_ event: Event, now: MonotonicInstant) -> [Action] {
    switch event {
    case .arrived(let peer):
      outageSaid = false
      var actions: [Action] = []
      if clients.count >= settings.maximumClients {
        guard let evicted = evictionCandidate(now: now) else {
          counters.refused += 1
          return [
            .refuse,
            .log(
              "refused a client from \(peer): \(settings.maximumClients) clients already "
                + "connected, none of them idle (raise --max-clients to serve more)"),
          ]
        }
        let client = clients.removeValue(forKey: evicted)!
        counters.evicted += 1
        let idle = client.lastRequest.duration(to: now)
        actions += [
          .evict(evicted),
          .log(
            "closed idle client \(client.peer) (not watching, no request for "
              + "\(idle.components.seconds) s) to make room for \(peer): "
              + "\(settings.maximumClients) clients connected (--max-clients)"),
        ]
      }
      let id = nextClient
      nextClient += 1
      clients[id] = Client(peer: peer, lastRequest: now)
      counters.accepted += 1
      return actions + [.admit(id)]

    case .acceptFailed(let reason):
      var actions: [Action] = []
      if isAccepting { actions.append(.pauseAccepting) }
      accepting = .paused(until: now + settings.acceptPause)
      // Said once each time it runs out; when it runs out again and again (a burst queued
      // behind the descriptor limit takes each descriptor freed), at most once per interval
      // with the count of the times in between.
      if !outageSaid {
        outageSaid = true
        if let suppressed = outageLog.allow(now: now) {
          let since =
            suppressed == 0 ? "" : " (ran out \(suppressed) more times since the last message)"
          actions.append(
            .log(
              "cannot accept clients: \(reason)\(since); waiting for a client to leave (raise "
                + "the process's descriptor limit, ulimit -n or LimitNOFILE=, or lower "
                + "--max-clients)"))
        }
      }
      return actions

    case .request(let id, let watching):
      guard clients[id] != nil else { return unexpected(event) }
      clients[id]!.lastRequest = now
      clients[id]!.watching = watching
      return []

    case .backlog(let id, let waiting):
      guard waiting > settings.maximumBacklog else { return [] }
      guard let client = clients.removeValue(forKey: id) else { return unexpected(event) }
      counters.dropped += 1
      let said = Action.log(
        "dropped client \(client.peer): it stopped reading "
          + "(\(waiting) bytes waiting, limit \(settings.maximumBacklog))")
      return [said, .close(id)] + resume()

    case .left(let id):
      guard clients.removeValue(forKey: id) != nil else { return unexpected(event) }
      return resume()  // a descriptor is free again: a waiting connection can be taken

    case .timer:
      var actions: [Action] = []
      if case .paused(let until) = accepting, until <= now { actions += resume() }
      guard let limit = settings.idleTimeout else { return actions }
      let idle = clients.filter { !$0.value.watching && $0.value.lastRequest + limit <= now }
      for (id, client) in idle.sorted(by: { $0.key < $1.key }) {
        clients[id] = nil
        actions += [
          .close(id),
          .log("closed client \(client.peer): no request for \(limit) and not watching"),
        ]
      }
      if !idle.isEmpty { actions += resume() }
      return actions
    }
  }

  /// The client that has gone longest without a request among those that do not watch and
  /// have been quiet for the eviction time (the lowest number among equals); watchers never.
  private func evictionCandidate(now: MonotonicInstant) -> ClientID? {
    guard let minimum = settings.evictionIdleTime else { return nil }
    var best: (id: ClientID, lastRequest: MonotonicInstant)?
    for (id, client) in clients where !client.watching {
      guard client.lastRequest + minimum <= now else { continue }
      if let current = best,
        current.lastRequest < client.lastRequest
          || (current.lastRequest == client.lastRequest && current.id < id)
      {
        continue
      }
      best = (id, client.lastRequest)
    }
    return best?.id
  }

  /// What a client closed by ``Action/evict(_:)`` is told, when nothing of its own is queued
  /// ahead of it (it would be cut short).
  static let eviction =
    "Too many clients: this connection was idle and not watching, so it was closed to serve "
    + "a new one; reconnect when needed"

  /// What a connection refused by ``Action/refuse`` is told.
  func refusal() -> String {
    "Too many clients: this server serves at most \(settings.maximumClients) at once; try again "
      + "later"
  }

  private mutating func resume() -> [Action] {
    guard !isAccepting else { return [] }
    accepting = .yes
    return [.resumeAccepting]
  }

  private mutating func unexpected(_ event: Event) -> [Action] {
    unexpectedEvents += 1
    if assertsOnUnexpectedEvents {
      assertionFailure("ClientAdmission: unexpected \(event)")
    }
    return []
  }
}

/// At most one message per `interval`, with the count of those held back in between.
struct LogThrottle: Sendable, Equatable {
  let interval: Duration
  private var last: MonotonicInstant?
  private var heldBack = 0

  init(interval: Duration) { self.interval = interval }

  /// Whether a message may be said `now`: `nil` when not (it is counted), else how many were
  /// held back since the last one said.
  mutating func allow(now: MonotonicInstant) -> Int? {
    if let last, last.duration(to: now) < interval {
      heldBack += 1
      return nil
    }
    last = now
    defer { heldBack = 0 }
    return heldBack
  }
}
