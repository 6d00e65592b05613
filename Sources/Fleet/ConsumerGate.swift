import GPSDProtocol
import NMEA
import SerialGPS

/// A remote receiver's decisions, as a pure state machine: subscriptions and broker events
/// in, actions out, in order (``RemoteReceiver`` runs them; `ConsumerGateTests` checks them).
///
/// - The first subscription connects; once connected, the consumer subscribes to the
///   receiver's topics and publishes its demand (retained, non-empty; its Last Will, set before
///   connecting, is the empty retained message on the same topic).
/// - A demand with an expiry is published again at half its expiry while it stands, so that a
///   board keeps it only while this consumer lives, even if a Last Will were lost.
/// - When the last subscription ends, it withdraws the demand (the empty retained message,
///   QoS 1) and disconnects once the broker has it; a later subscription connects again.
/// - After a reconnect it publishes its demand again: a broker restarted without persistence
///   has forgotten it.
/// - Reports it cannot read, and messages on topics it did not ask for, are counted and
///   ignored.
struct ConsumerGate {
  enum ClientState: Sendable, Equatable {
    case none
    /// Started, not connected (connecting, or waiting to retry).
    case connecting
    case connected
    /// Stopping: the withdrawal is on its way; a new client is started once it stopped.
    case stopping
  }

  enum Event: Sendable, Equatable {
    case attach
    case detach
    case connected
    case connectionLost(FleetError, wasConnected: Bool)
    case message(topic: String, payload: [UInt8], retained: Bool)
    /// ``nextDeadline`` has come: time to refresh the demand.
    case deadline
    /// The client has stopped (after ``Action/stopClient``).
    case clientStopped
    /// The remote receiver shuts down.
    case stop
  }

  enum Action: Sendable, Equatable {
    /// Make a client (with the Last Will) and connect.
    case startClient
    /// Stop the client once its QoS 1 publications are acknowledged.
    case stopClient
    /// Subscribe to a topic filter (retain flag set only for retained messages).
    case subscribe(String)
    case publish(MQTTPublication)
    case deliverFix(Fix, retained: Bool)
    case deliverSatellites(SatelliteView)
    case deliverStatus(ReceiverStatus)
    /// Shut down: the client is stopped and nothing more will happen.
    case finished
  }

  struct Counters: Sendable, Equatable {
    var fixes = 0
    var satelliteViews = 0
    var malformedReports = 0
    var unexpectedTopics = 0
    var demandsPublished = 0
    var withdrawals = 0
  }

  let topics: FleetTopics
  let consumer: String
  /// The demand's MQTT 5 message expiry; `nil`: it stands until withdrawn.
  let demandExpiry: Duration?
  private(set) var subscribers = 0
  private(set) var client = ClientState.none
  private(set) var demandPublished = false
  private(set) var stopped = false
  private(set) var counters = Counters()
  private(set) var nextDeadline: Duration?
  /// Whether the connection was lost since subscribers last heard from the broker.
  private var lost = false
  /// What the latest SKY said, merged into the fixes that follow (TPV has no satellite
  /// counts or DOPs).
  private var latestSky: (used: Int?, hdop: Double?, vdop: Double?, pdop: Double?)?

  /// The terms the demand carries (an interval, an accuracy); `nil`: continuous.
  let request: LocationRequest?

  init(
    topics: FleetTopics, consumer: String, demandExpiry: Duration?,
    request: LocationRequest? = nil
  ) {
    self.topics = topics
    self.consumer = consumer
    self.demandExpiry = demandExpiry
    self.request = request
  }

  mutating func handle(_ event: Event, now: Duration) -> [Action] {
    var actions: [Action] = []
    switch event {
    case .attach:
      subscribers += 1
      guard !stopped else { return [] }
      switch client {
      case .none:
        client = .connecting
        actions.append(.startClient)
      case .connected:
        if !demandPublished { publishDemand(now: now, into: &actions) }
      case .connecting, .stopping:
        break  // the demand goes out on connect; a stopping client is replaced once stopped
      }

    case .detach:
      guard subscribers > 0 else { return [] }
      subscribers -= 1
      guard subscribers == 0, !stopped else { return [] }
      leave(into: &actions)

    case .connected:
      guard client == .connecting else { return [] }
      client = .connected
      actions += [.subscribe(topics.status), .subscribe(topics.tpv), .subscribe(topics.sky)]
      if lost {
        lost = false
        actions.append(.deliverStatus(.reconnected))
      }
      if subscribers > 0 { publishDemand(now: now, into: &actions) }

    case .connectionLost(let reason, _):
      guard client == .connected || client == .connecting else { return [] }
      client = .connecting  // the client retries by itself
      demandPublished = false
      nextDeadline = nil
      lost = true
      actions.append(.deliverStatus(.disconnected(reason: reason.failureReason)))

    case .message(let topic, let payload, let retained):
      guard !stopped else { return [] }
      if topic == topics.tpv {
        guard !payload.isEmpty else { return [] }  // a retained fix deleted
        guard case .tpv(var fix, _)? = GPSDReport(json: payload) else {
          counters.malformedReports += 1
          return []
        }
        if let sky = latestSky {
          fix.satellitesUsed = sky.used
          fix.hdop = sky.hdop
          fix.vdop = sky.vdop
          fix.pdop = sky.pdop
        }
        counters.fixes += 1
        actions.append(.deliverFix(fix, retained: retained))
      } else if topic == topics.sky {
        guard !payload.isEmpty else { return [] }
        guard case .sky(let view, _, let used, _)? = GPSDReport(json: payload) else {
          counters.malformedReports += 1
          return []
        }
        latestSky = (
          view.satellites.isEmpty ? used : view.usedCount, view.hdop, view.vdop, view.pdop
        )
        counters.satelliteViews += 1
        actions.append(.deliverSatellites(view))
      } else if topic == topics.status {
        guard let text = String(validating: payload, as: UTF8.self),
          let status = FleetStatus(rawValue: text)
        else {
          counters.malformedReports += 1
          return []
        }
        actions.append(.deliverStatus(receiverStatus(status)))
      } else {
        counters.unexpectedTopics += 1
      }

    case .deadline:
      guard let deadline = nextDeadline, deadline <= now else { return [] }
      nextDeadline = nil
      if client == .connected && subscribers > 0 && !stopped {
        publishDemand(now: now, into: &actions)
      }

    case .clientStopped:
      client = .none
      if stopped {
        actions.append(.finished)
      } else if subscribers > 0 {
        client = .connecting
        actions.append(.startClient)
      }

    case .stop:
      guard !stopped else { return [] }
      stopped = true
      if client == .none {
        actions.append(.finished)
      } else {
        leave(into: &actions)
      }
    }
    return actions
  }

  /// Withdraws the demand if it was published, and stops the client.
  private mutating func leave(into actions: inout [Action]) {
    if client == .connected && demandPublished {
      counters.withdrawals += 1
      actions.append(
        .publish(
          MQTTPublication(
            topic: topics.demand(consumer: consumer), payload: [], qos: 1, retain: true,
            expiry: nil)))
    }
    demandPublished = false
    nextDeadline = nil
    if client == .connected || client == .connecting {
      client = .stopping
      actions.append(.stopClient)
    }
  }

  private mutating func publishDemand(now: Duration, into actions: inout [Action]) {
    var json = JSONWriter(capacity: 96)
    json.beginObject()
    json.member("consumer", consumer)
    if let interval = request?.interval {
      let seconds =
        Double(interval.components.seconds) + Double(interval.components.attoseconds) * 1e-18
      json.member("interval", seconds, decimals: 3)
    }
    json.member("accuracy", request?.accuracy, decimals: 2)
    json.endObject()
    counters.demandsPublished += 1
    demandPublished = true
    actions.append(
      .publish(
        MQTTPublication(
          topic: topics.demand(consumer: consumer), payload: json.bytes, qos: 1, retain: true,
          expiry: demandExpiry.map { DemandGate.seconds($0) })))
    nextDeadline = demandExpiry.map { now + $0 / 2 }
  }

  /// What subscribers are told for the board's status.
  func receiverStatus(_ status: FleetStatus) -> ReceiverStatus {
    switch status {
    case .poweringOn: return .poweringOn
    case .streaming: return .streaming
    case .noFix: return .noFix
    case .standby: return .poweredOff
    case .disconnected:
      return .disconnected(
        reason: FailureReason(
          .notAttached, "the receiver \(topics.id) is not connected to its board"))
    case .offline:
      return .disconnected(
        reason: FailureReason(
          .unreachable,
          "the board publishing \(topics.id) is offline (stopped, or lost power or network)"))
    }
  }
}

extension FleetError: FailureReasonConvertible {
  /// What a remote receiver's subscribers are told when the broker cannot be used.
  public var failureReason: FailureReason {
    switch kind {
    case .configuration: return FailureReason(.other, description)
    case .refused: return FailureReason(.permissionDenied, description)
    case .unreachable: return FailureReason(.unreachable, description)
    }
  }
}
