import GPSDProtocol
import NMEA
import SerialGPS

/// The bridge's decisions for one published receiver, as a pure state machine: broker and
/// receiver events in, actions out, in order. No I/O, no clock (time comes with each event),
/// so tests check every decision as an exact list of actions (`DemandGateTests`).
///
/// - Each retained message on `serialgps/<id>/demand/<consumer>` that is a demand
///   (``DemandPayload``: `1` or a JSON request) is one remote subscription of the receiver;
///   an empty one (the consumer's withdrawal, or its Last Will) is its dispose, and so is one
///   that is not a demand (oversized, binary, `0`): what counts is what the broker holds now.
///   A demand that carries an MQTT 5 message expiry also ends when it expires.
/// - At most ``Settings/maximumConsumers`` demands count at once; those beyond wait (as many
///   again, remembered with their expiry) and are taken in order as room frees. When even the
///   waiting list was full, the bridge subscribes to the demands again when it empties: the
///   broker sends every retained demand anew, and the gate takes what it has room for.
/// - With ``FleetBridge/Gating/demand`` the receiver is subscribed while any demand stands;
///   with ``FleetBridge/Gating/always``, from start to stop.
/// - Losing the broker ends every remote demand at once (a board must not stay powered for
///   consumers it cannot hear): the receiver then powers off after its own linger, as after
///   any last subscriber. On reconnect the retained demands arrive again and restore them.
/// - While the broker is away, fixes wait in an outage queue (``Settings/outageQueueLimit``,
///   oldest dropped first, counted) and go out in order with QoS 1 on reconnect.
/// - Messages that are not retained (the broker keeps the retained demand they do not
///   replace) or on a topic it does not expect are counted and ignored.
/// - Invalid demands and refused consumers are counted and said (``Action/log(_:)``): at most
///   ``noticesPerWindow`` lines of each kind per ``noticeWindow``, the rest counted into the
///   next line.
struct DemandGate {
  struct Settings: Sendable, Equatable {
    var gating: FleetBridge.Gating
    /// Retained TPV and SKY expire (MQTT 5 message expiry) after this long.
    var replayExpiry: Duration
    /// Fixes kept while the broker is away; 1 keeps the latest.
    var outageQueueLimit: Int
    /// The largest demand payload accepted, in bytes.
    var maximumDemandSize = 256
    /// Consumers counted at once per receiver; more wait (as many again) and are taken as
    /// room frees.
    var maximumConsumers = 256
  }

  enum Event: Sendable, Equatable {
    /// The bridge begins publishing this receiver (with `always` it is subscribed at once).
    case start
    /// The broker accepted the connection (a clean session: nothing subscribed yet).
    case connected
    /// The connection is gone; the client reconnects on its own.
    case connectionLost
    /// A message on a topic the bridge subscribed to. `retained`: the retain flag as the
    /// publisher set it; `expiry`: the remaining MQTT 5 message expiry, in seconds.
    case message(topic: String, payload: [UInt8], retained: Bool, expiry: UInt32?)
    /// A fix, and how old it was when the receiver delivered it (a newcomer's replay).
    case fix(Fix, age: Duration)
    case satellites(SatelliteView)
    case receiverStatus(ReceiverStatus)
    /// ``nextDeadline`` has come.
    case deadline
    /// The bridge stops publishing this receiver, saying `final` on its status topic
    /// (`offline` on shutdown, `disconnected` when the receiver went away).
    case stop(final: FleetStatus)
  }

  enum Action: Sendable, Equatable {
    /// Subscribe to the receiver (powering it on, as any subscriber does).
    case subscribeReceiver
    /// End that subscription (the receiver powers off after its linger if nobody else uses
    /// it).
    case disposeReceiver
    /// Hold this location request on the receiver (one of the consumers' interval and
    /// accuracy demands, each distinct request once), merged by the receiver's scheduler
    /// with every other request (docs/requests.md). Only while no demand is continuous: then
    /// the continuous subscription serves them all. A request that stays is never made
    /// again: changing one demand touches that one alone.
    case holdRequest(LocationRequest)
    /// End this request, held before (its last consumer withdrew, or a continuous demand
    /// serves it now).
    case endRequest(LocationRequest)
    /// Subscribe to an MQTT topic filter, retain flags as published.
    case subscribe(String)
    case publish(MQTTPublication)
    /// Disconnect cleanly once what was published has gone out; the end of a stop.
    case disconnect
    /// Tell the operator (the bridge's log), without the receiver's name.
    case log(String)
  }

  /// What the gate counted.
  struct Counters: Sendable, Equatable {
    var demandsAccepted = 0
    var demandsWithdrawn = 0
    var demandsExpired = 0
    /// Demands ended because the broker was lost.
    var demandsLost = 0
    /// Demands larger than ``Settings/maximumDemandSize``: invalid, withdrawing.
    var oversizedMessages = 0
    /// Not retained, or not UTF-8 text (the latter invalid, withdrawing).
    var malformedMessages = 0
    /// Text that is not a demand (`0`, `false`, a request with unknown members): withdrawing.
    var invalidDemands = 0
    var unexpectedTopics = 0
    /// Demands not counted for want of room over ``Settings/maximumConsumers``: a consumer
    /// that waits, once; one beyond the waiting list, at each of its messages.
    var refusedConsumers = 0
    /// Waiting consumers taken when room freed.
    var consumersTakenLater = 0
    /// Times the demands were read from the broker again because more stood than the gate
    /// could remember.
    var demandRereads = 0
    var fixesPublished = 0
    /// Fixes that waited in the outage queue and were published on reconnect.
    var fixesQueued = 0
    var fixesDroppedFromQueue = 0
  }

  let topics: FleetTopics
  let settings: Settings
  private(set) var connected = false
  private(set) var subscribed = false
  /// The location requests held on the receiver now (``Action/holdRequest(_:)``).
  private(set) var requested: [LocationRequest] = []
  /// The terms of the consumers whose demand is a location request rather than continuous.
  private(set) var terms: [String: LocationRequest] = [:]
  private(set) var stopped = false
  /// Consumers that want positions, and when each demand expires (`nil`: only when
  /// withdrawn).
  private(set) var demands: [String: Duration?] = [:]
  /// Consumers whose demand stands beyond ``Settings/maximumConsumers``, with when each
  /// expires; at most as many as are counted.
  private(set) var waiting: [String: Duration?] = [:]
  /// The order they came in; names no longer waiting are skipped (and dropped) when the front
  /// is taken, and the list is compacted when they pile up.
  private var waitingOrder: [String] = []
  /// Demands stood beyond the waiting list too: read them from the broker again when it
  /// empties with room free.
  private(set) var overflowed = false
  /// What was said lately, by kind, so that a flood of bad demands does not flood the log.
  private var notices: [NoticeKind: NoticeBudget] = [:]
  private(set) var status = FleetStatus.standby
  private(set) var counters = Counters()
  /// The status last published on this connection.
  private var publishedStatus: FleetStatus?
  private var latestFix: Fix?
  /// Fixes and the latest satellite view received while the broker was away, with when.
  private var outage: [(payload: [UInt8], receivedAt: Duration)] = []
  private var outageSatellites: (payload: [UInt8], receivedAt: Duration)?

  init(topics: FleetTopics, settings: Settings) {
    self.topics = topics
    var settings = settings
    settings.outageQueueLimit = max(1, settings.outageQueueLimit)
    self.settings = settings
  }

  /// When the earliest demand (counted or waiting) expires.
  var nextDeadline: Duration? {
    var earliest: Duration?
    for case let deadline? in demands.values { earliest = min(earliest ?? deadline, deadline) }
    for case let deadline? in waiting.values { earliest = min(earliest ?? deadline, deadline) }
    return earliest
  }

  /// The consumers waiting for room, in the order they are taken.
  var waitingConsumers: [String] {
    var seen: Set<String> = []
    return waitingOrder.filter { waiting[$0] != nil && seen.insert($0).inserted }
  }

  /// The fixes waiting for the broker.
  var queuedFixes: Int { outage.count }

  mutating func handle(_ event: Event, now: Duration) -> [Action] {
    guard !stopped else { return [] }
    var actions: [Action] = []
    switch event {
    case .start:
      converge(into: &actions)

    case .connected:
      connected = true
      publishedStatus = nil
      actions.append(.subscribe(topics.demands))
      publishStatus(into: &actions)
      flushOutage(now: now, into: &actions)
      // With `always` the receiver is subscribed before the first connection.
      converge(into: &actions)

    case .connectionLost:
      connected = false
      publishedStatus = nil
      counters.demandsLost += demands.count + waiting.count
      demands.removeAll()
      terms.removeAll()
      waiting.removeAll()
      waitingOrder.removeAll()
      overflowed = false
      converge(into: &actions)

    case .message(let topic, let payload, let retained, let expiry):
      guard let consumer = topics.consumer(inDemandTopic: topic),
        FleetTopics.isValidName(consumer)
      else {
        counters.unexpectedTopics += 1
        return []
      }
      // A message that is not retained leaves the broker's retained demand as it was.
      guard retained else {
        counters.malformedMessages += 1
        return []
      }
      let deadline = expiry.map { now + .seconds(Int64($0)) }
      switch DemandPayload.parse(payload, maximumSize: settings.maximumDemandSize) {
      case .withdrawn:
        if withdraw(consumer, into: &actions) { counters.demandsWithdrawn += 1 }
      case .invalid(let reason):
        switch reason {
        case .oversized: counters.oversizedMessages += 1
        case .notText: counters.malformedMessages += 1
        case .notADemand, .badRequest: counters.invalidDemands += 1
        }
        let stood = withdraw(consumer, into: &actions)
        if stood { counters.demandsWithdrawn += 1 }
        notice(
          .invalidDemand,
          "demand of \(consumer) \(stood ? "withdrawn" : "refused"): \(reason)", now: now,
          into: &actions)
      case .continuous:
        terms[consumer] = nil
        stand(consumer, until: deadline, now: now, into: &actions)
      case .request(let request):
        terms[consumer] = request
        stand(consumer, until: deadline, now: now, into: &actions)
      }
      converge(into: &actions)

    case .fix(let fix, let age):
      // From a subscription already disposed: dropped.
      guard subscribed || !requested.isEmpty else { return [] }
      // The receiver replays its latest fix to a new subscription: published again, it keeps
      // the expiry it had left, and one past it is not published at all.
      guard age < settings.replayExpiry else { return [] }
      latestFix = fix
      var json = JSONWriter(capacity: 512)
      json.tpv(fix)
      if connected {
        counters.fixesPublished += 1
        actions.append(
          .publish(
            MQTTPublication(
              topic: topics.tpv, payload: json.bytes, qos: 0, retain: true,
              expiry: Self.seconds(settings.replayExpiry - age))))
      } else {
        outage.append((json.bytes, now - age))
        if outage.count > settings.outageQueueLimit {
          outage.removeFirst()
          counters.fixesDroppedFromQueue += 1
        }
      }

    case .satellites(let view):
      guard subscribed else { return [] }
      var json = JSONWriter(capacity: 2048)
      json.sky(view, time: latestFix?.timestamp, satellitesUsed: latestFix?.satellitesUsed)
      if connected {
        actions.append(
          .publish(
            MQTTPublication(
              topic: topics.sky, payload: json.bytes, qos: 0, retain: true,
              expiry: Self.seconds(settings.replayExpiry))))
      } else {
        outageSatellites = (json.bytes, now)
      }

    case .receiverStatus(let receiverStatus):
      guard subscribed, let mapped = Self.fleetStatus(receiverStatus) else { return [] }
      status = mapped
      publishStatus(into: &actions)

    case .deadline:
      let expired = demands.filter { _, deadline in deadline.map { $0 <= now } ?? false }
      let expiredWaiting = waiting.filter { _, deadline in deadline.map { $0 <= now } ?? false }
      guard !expired.isEmpty || !expiredWaiting.isEmpty else { return [] }
      for consumer in expired.keys {
        demands.removeValue(forKey: consumer)
        terms[consumer] = nil
      }
      for consumer in expiredWaiting.keys {
        waiting.removeValue(forKey: consumer)
        terms[consumer] = nil
      }
      counters.demandsExpired += expired.count + expiredWaiting.count
      makeRoom(into: &actions)
      converge(into: &actions)

    case .stop(let final):
      stopped = true
      demands.removeAll()
      waiting.removeAll()
      waitingOrder.removeAll()
      if subscribed {
        subscribed = false
        actions.append(.disposeReceiver)
      }
      hold([], into: &actions)
      terms.removeAll()
      status = final
      publishStatus(into: &actions)
      actions.append(.disconnect)
    }
    return actions
  }

  /// `consumer`'s demand stands (new, refreshed, or waiting for room).
  private mutating func stand(
    _ consumer: String, until deadline: Duration?, now: Duration, into actions: inout [Action]
  ) {
    if demands[consumer] != nil {
      // `updateValue`: assigning a `nil` deadline through the subscript would remove it.
      demands.updateValue(deadline, forKey: consumer)
      return
    }
    if waiting[consumer] != nil {
      waiting.updateValue(deadline, forKey: consumer)
      return
    }
    if demands.count < settings.maximumConsumers {
      demands.updateValue(deadline, forKey: consumer)
      counters.demandsAccepted += 1
      return
    }
    counters.refusedConsumers += 1
    let waits = waiting.count < settings.maximumConsumers
    if waits {
      waiting.updateValue(deadline, forKey: consumer)
      if waitingOrder.count > 2 * waiting.count + 16 {
        waitingOrder.removeAll { waiting[$0] == nil }
      }
      waitingOrder.append(consumer)
    } else {
      overflowed = true
    }
    let limit = settings.maximumConsumers
    let count = waiting.count
    notice(
      .refusedConsumer,
      "demand of \(consumer) not counted yet: \(limit) consumers' demands are counted already "
        + "(the limit; --mqtt-max-consumers), "
        + (waits
          ? "it waits and is taken when one leaves"
          : "\(count) more wait already; it is read from the broker again when they are taken"),
      now: now, into: &actions)
  }

  /// Ends `consumer`'s demand, counted or waiting; whether it stood.
  private mutating func withdraw(_ consumer: String, into actions: inout [Action]) -> Bool {
    terms[consumer] = nil
    if demands.removeValue(forKey: consumer) != nil {
      makeRoom(into: &actions)
      return true
    }
    return waiting.removeValue(forKey: consumer) != nil
  }

  /// Takes waiting demands into the room there is; when none waits but some stood beyond the
  /// waiting list, reads them from the broker again.
  private mutating func makeRoom(into actions: inout [Action]) {
    var taken = 0
    while demands.count < settings.maximumConsumers, !waiting.isEmpty,
      taken < waitingOrder.count
    {
      let consumer = waitingOrder[taken]
      taken += 1
      guard let deadline = waiting.removeValue(forKey: consumer) else { continue }
      demands.updateValue(deadline, forKey: consumer)
      counters.demandsAccepted += 1
      counters.consumersTakenLater += 1
    }
    waitingOrder.removeFirst(taken)
    if waiting.isEmpty { waitingOrder.removeAll() }
    if overflowed, waiting.isEmpty, demands.count < settings.maximumConsumers, connected {
      overflowed = false
      counters.demandRereads += 1
      // Subscribing again to the same filter makes the broker send every retained message
      // on it again (retain handling 0).
      actions.append(.subscribe(topics.demands))
    }
  }

  enum NoticeKind: Hashable {
    case invalidDemand
    case refusedConsumer
  }

  /// Lines of one kind said in the current window, and those held back.
  struct NoticeBudget {
    var windowStart: Duration
    var said = 0
    var heldBack = 0
  }

  /// Lines of each kind said at most per ``noticeWindow``.
  static let noticesPerWindow = 5
  static let noticeWindow = Duration.seconds(10)

  /// Says `text` unless ``noticesPerWindow`` lines of its kind were said in this window; the
  /// lines held back are counted into the next one said.
  private mutating func notice(
    _ kind: NoticeKind, _ text: @autoclosure () -> String, now: Duration,
    into actions: inout [Action]
  ) {
    var budget = notices[kind] ?? NoticeBudget(windowStart: now)
    if now - budget.windowStart >= Self.noticeWindow {
      budget.windowStart = now
      budget.said = 0
    }
    if budget.said < Self.noticesPerWindow {
      let held = budget.heldBack == 0 ? "" : " (and \(budget.heldBack) more like it before)"
      actions.append(.log(text() + held))
      budget.said += 1
      budget.heldBack = 0
    } else {
      budget.heldBack += 1
    }
    notices[kind] = budget
  }

  /// Subscribes or disposes so that the receiver is subscribed exactly while it is wanted.
  private mutating func converge(into actions: inout [Action]) {
    let wanted =
      !stopped && (settings.gating == .always || demands.keys.contains { terms[$0] == nil })
    let requests =
      wanted || stopped
      ? []
      : Set(demands.keys.compactMap { terms[$0] }).sorted {
        ($0.interval ?? .zero, $0.accuracy ?? 0) < ($1.interval ?? .zero, $1.accuracy ?? 0)
      }

    if wanted && !subscribed {
      subscribed = true
      actions.append(.subscribeReceiver)
      status = .poweringOn
      publishStatus(into: &actions)
    } else if !wanted && subscribed {
      subscribed = false
      actions.append(.disposeReceiver)
      status = .standby
      publishStatus(into: &actions)
    }
    // After the continuous subscription is made: no gap in the power between the two.
    hold(requests, into: &actions)
  }

  /// Holds exactly `requests`: the new ones first, then those no longer wanted ended, so
  /// that a request replaced leaves no gap in the power; those that stay are left alone.
  private mutating func hold(_ requests: [LocationRequest], into actions: inout [Action]) {
    guard requests != requested else { return }
    for request in requests where !requested.contains(request) {
      actions.append(.holdRequest(request))
    }
    for request in requested where !requests.contains(request) {
      actions.append(.endRequest(request))
    }
    requested = requests
  }

  private mutating func publishStatus(into actions: inout [Action]) {
    guard connected, publishedStatus != status else { return }
    publishedStatus = status
    actions.append(
      .publish(
        MQTTPublication(
          topic: topics.status, payload: Array(status.rawValue.utf8), qos: 1, retain: true,
          expiry: nil, carriesLayoutVersion: true)))
  }

  /// What waited for the broker, in order, with QoS 1: every queued fix, the newest retained
  /// while it is fresh (expiring when it would have), then the latest satellite view if fresh.
  private mutating func flushOutage(now: Duration, into actions: inout [Action]) {
    for (index, entry) in outage.enumerated() {
      let age = now - entry.receivedAt
      let retain = index == outage.count - 1 && age < settings.replayExpiry
      actions.append(
        .publish(
          MQTTPublication(
            topic: topics.tpv, payload: entry.payload, qos: 1, retain: retain,
            expiry: retain ? Self.seconds(settings.replayExpiry - age) : nil)))
    }
    counters.fixesQueued += outage.count
    counters.fixesPublished += outage.count
    outage.removeAll()
    if let satellites = outageSatellites, now - satellites.receivedAt < settings.replayExpiry {
      actions.append(
        .publish(
          MQTTPublication(
            topic: topics.sky, payload: satellites.payload, qos: 1, retain: true,
            expiry: Self.seconds(settings.replayExpiry - (now - satellites.receivedAt)))))
    }
    outageSatellites = nil
  }

  /// The status the fleet sees for a receiver status; `nil` for those that change nothing.
  static func fleetStatus(_ status: ReceiverStatus) -> FleetStatus? {
    switch status {
    case .poweringOn: return .poweringOn
    case .streaming: return .streaming
    case .noFix: return .noFix
    case .disconnected: return .disconnected
    // The bridge's own subscription keeps the receiver on, so a power-off seen through it is
    // a status replayed from before the subscription (or the receiver's shutdown, after which
    // the bridge publishes its own final status).
    case .poweredOff, .reconnected, .commandFailed, .commandsWithheld: return nil
    }
  }

  /// Whole seconds for an MQTT expiry, rounded up, at least 1.
  static func seconds(_ duration: Duration) -> UInt32 {
    let (seconds, attoseconds) = duration.components
    let whole = seconds + (attoseconds > 0 ? 1 : 0)
    return UInt32(clamping: max(1, whole))
  }
}
