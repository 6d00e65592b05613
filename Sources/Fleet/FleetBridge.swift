import Discovery
import Glibc
import NMEA
import POSIX
import SerialGPS

/// Publishes receivers to an MQTT broker for a fleet, carrying the power gating across the
/// network: a receiver is powered only while some consumer anywhere wants its positions.
///
/// For each receiver published under an `id` (docs/fleet.md):
/// - fixes go to `serialgps/<id>/tpv` and satellites to `serialgps/<id>/sky` as gpsd TPV and
///   SKY JSON, retained with the replay expiry as MQTT 5 message expiry, so a consumer that
///   arrives later gets the latest fix only while it is fresh;
/// - `serialgps/<id>/status` says `powering on`, `streaming`, `no fix`, `standby`,
///   `disconnected`, and `offline` as the connection's Last Will;
/// - each retained demand on `serialgps/<id>/demand/<consumer>` (`1`, or a JSON request) is
///   one remote subscription of the receiver; an empty message, or one that is not a demand,
///   its dispose (``Gating/demand``).
///
/// The bridge is a subscriber of ``GPSReceiver`` like any other: local subscribers and gpsd
/// clients of the same process count too, and the receiver powers off after its linger once
/// nobody, local or remote, wants it. Each published receiver has a connection of its own (its
/// Last Will names its status topic); all of them are served by one thread.
///
/// ```swift
/// var broker = try BrokerConfiguration(url: "mqtt://127.0.0.1")
/// let bridge = try FleetBridge(configuration: .init(broker: broker))
/// try bridge.publish(receiver, as: "truck-17")
/// // …
/// await bridge.shutdown()   // status "offline", clean disconnect
/// ```
public final class FleetBridge: Sendable {
  /// When the bridge keeps the receiver powered.
  public enum Gating: String, Sendable, Hashable, CaseIterable {
    /// While some consumer's demand stands (the default).
    case demand
    /// Always: the receiver stays powered and every fix is published.
    case always
  }

  public struct Configuration: Sendable {
    public var broker: BrokerConfiguration
    public var gating = Gating.demand
    /// Retained TPV and SKY expire after this long (MQTT 5 message expiry, whole seconds):
    /// a consumer arriving later gets the latest fix only while it is this fresh.
    public var replayExpiry: Duration = .seconds(10)
    /// Fixes kept while the broker is away, published in order with QoS 1 on reconnect;
    /// beyond it the oldest are dropped (counted). 1 keeps the latest fix.
    public var outageQueueLimit = 1
    /// Events buffered in the bridge's subscription of each receiver.
    public var subscriptionBufferSize = 64
    /// The largest demand message accepted, in bytes; a larger one is invalid: it withdraws
    /// its consumer's demand, counted and logged.
    public var maximumDemandSize = 256
    /// Consumers' demands counted at once per receiver. More are refused for now (counted and
    /// logged) and taken as room frees: up to as many again wait in the bridge's memory, and
    /// beyond that the bridge reads the demands from the broker again when room frees.
    public var maximumConsumers = defaultMaximumConsumers
    public static let defaultMaximumConsumers = 256
    /// How long a stop waits for the broker to acknowledge the final status.
    public var stopTimeout: Duration = .seconds(2)
    /// What happens (connections lost and back, refusals), for the operator; called on the
    /// bridge's thread, must not block.
    public var log: (@Sendable (String) -> Void)?

    public init(broker: BrokerConfiguration) { self.broker = broker }
  }

  let configuration: Configuration
  private let thread: NetworkThread
  private let published = Locked<[String: PublishedReceiver]>([:])

  /// Checks the configuration (see ``BrokerConfiguration/validate()``) and loads libmosquitto
  /// (the first time in the process); connects nothing yet.
  ///
  /// - Throws: when the configuration is unsafe or incomplete, or libmosquitto is not
  ///   installed (the error says what to install).
  public init(configuration: Configuration) throws(FleetError) {
    try configuration.broker.validate()
    try Libmosquitto.require()
    guard configuration.outageQueueLimit >= 1 else {
      throw FleetError("the outage queue must keep at least one fix", kind: .configuration)
    }
    guard configuration.maximumConsumers >= 1 else {
      throw FleetError("the bridge must count at least one consumer", kind: .configuration)
    }
    self.configuration = configuration
    thread = .shared
  }

  /// Starts publishing `receiver` under `id` (its own connection to the broker, with its
  /// status as Last Will).
  ///
  /// - Throws: when `id` is not a valid name (``FleetTopics/isValidName(_:)``) or is published
  ///   already.
  public func publish(_ receiver: GPSReceiver, as id: String) throws(FleetError) {
    let topics = try FleetTopics(id: id)
    let entry = PublishedReceiver(
      receiver: receiver, topics: topics, configuration: configuration, thread: thread)
    let added = published.withLock { published -> Bool in
      guard published[id] == nil else { return false }
      published[id] = entry
      return true
    }
    guard added else {
      throw FleetError(
        "two receivers would be published as '\(id)'; give each its own name", kind: .configuration)
    }
    thread.post { entry.start() }
  }

  /// The broker, as a URL without credentials.
  public var brokerURL: String { configuration.broker.url }

  /// The names published now.
  public var publishedIDs: [String] { published.withLock { Array($0.keys).sorted() } }

  /// Stops publishing `id` (its receiver went away): ends its subscription, says
  /// `disconnected` on its status topic and disconnects; returns when done.
  public func withdraw(_ id: String) async {
    guard let entry = published.withLock({ $0.removeValue(forKey: id) }) else { return }
    await entry.stop(final: .disconnected)
  }

  /// Stops publishing everything: ends the subscriptions, says `offline` on every status
  /// topic, disconnects cleanly; returns when done (at most ``Configuration/stopTimeout`` per
  /// connection waiting for the broker).
  public func shutdown() async {
    let entries = published.withLock { published -> [PublishedReceiver] in
      defer { published.removeAll() }
      return Array(published.values)
    }
    await withTaskGroup(of: Void.self) { group in
      for entry in entries { group.addTask { await entry.stop(final: .offline) } }
    }
  }

  /// A bridge let go without ``shutdown()`` still stops cleanly, without waiting.
  deinit {
    for entry in published.withLock({ Array($0.values) }) { entry.requestStop(final: .offline) }
  }

  /// What the bridge has done for `id`, or `nil` if it is not published.
  public func statistics(for id: String) -> FleetBridgeStatistics? {
    published.withLock { $0[id] }?.statistics
  }

  /// Connects once, with this configuration's credentials and TLS, and disconnects: `nil` when
  /// the broker accepted, else why not. Lets a program refuse to start with credentials or
  /// certificates that cannot work, rather than retry them forever.
  public func checkBroker(timeout: Duration = .seconds(10)) async -> FleetError? {
    var broker = configuration.broker
    broker.connectTimeout = timeout
    let probe = BrokerProbe(broker: broker, thread: thread)
    return await probe.run()
  }
}

/// What a ``FleetBridge`` did for one receiver.
public struct FleetBridgeStatistics: Sendable, Hashable {
  /// Connected to the broker now.
  public var connected = false
  /// Successful connections, and connections lost or refused.
  public var connections = 0
  public var disconnections = 0
  /// Consumers whose demand stands now.
  public var demands = 0
  /// Whether the bridge subscribes to the receiver now.
  public var subscribed = false
  /// Location requests held on the receiver for the consumers' interval demands now (one
  /// per distinct request), and those made since the start: a demand that changes makes
  /// or ends its own request alone.
  public var requestsHeld = 0
  public var requestsMade = 0
  public var demandsAccepted = 0
  public var demandsWithdrawn = 0
  public var demandsExpired = 0
  public var demandsLost = 0
  /// Demands over the size limit (invalid: each withdraws its consumer's demand).
  public var oversizedMessages = 0
  /// Demand messages that were not retained (ignored), or not UTF-8 text (invalid).
  public var malformedMessages = 0
  /// Demands whose text is not a demand (`0`, `false`, an unknown request member): invalid.
  public var invalidDemands = 0
  public var unexpectedTopics = 0
  /// Demands not counted for want of room (``FleetBridge/Configuration/maximumConsumers``).
  public var refusedConsumers = 0
  /// Consumers whose demand waits for room now.
  public var waitingDemands = 0
  /// Waiting demands taken when room freed.
  public var consumersTakenLater = 0
  /// Times the demands were read from the broker again (more stood than the bridge keeps).
  public var demandRereads = 0
  public var fixesPublished = 0
  public var fixesQueued = 0
  public var fixesDroppedFromQueue = 0
  /// Publications libmosquitto refused (for example while its buffers were full).
  public var publishFailures = 0

  public init() {}
}

extension FleetTopics {
  /// The name a receiver found by discovery goes by in the fleet: its USB serial number (which
  /// survives reboots and moving the plug, unlike the tty path), made a valid name; `nil`
  /// without one (then the user names it).
  public static func id(for device: SerialDevice) -> String? {
    device.serialNumber.flatMap { name(from: $0) }
  }
}

/// One receiver published: its connection, its ``DemandGate``, its subscription. Everything
/// but `statistics` and the stop waiters is owned by the network thread.
///
/// `@unchecked Sendable`: its mutable state is the network thread's alone (reached through
/// ``NetworkThread/post(_:)``); what other threads read is behind `shared` and `stopped`.
final class PublishedReceiver: MQTTClientDelegate, @unchecked Sendable {
  let receiver: GPSReceiver
  let topics: FleetTopics
  let configuration: FleetBridge.Configuration
  let thread: NetworkThread
  private var gate: DemandGate
  private var client: MQTTClient?
  private var subscription: Subscription?
  /// Events of a subscription already disposed are recognised by this and dropped.
  private var generation = 0
  /// The location requests held for the consumers' interval demands, each with its tag
  /// (a generation, negated, that its events carry).
  private var requests: [LocationRequest: (subscription: Subscription, tag: Int)] = [:]
  private var requestGeneration = 0
  /// The arrival of the last fix published from the requests: a fix several of them got is
  /// published once.
  private var lastRequestFix: DriverInstant?
  /// The last failure logged, so that retries failing alike stay quiet.
  private var lastLoggedFailure: String?
  private var counts = (connections: 0, disconnections: 0, publishFailures: 0)
  private let shared = Locked(FleetBridgeStatistics())
  private let stopped = Outcome<Void>()
  /// Receiver events on their way to the thread.
  private let mailbox = Locked((events: [(ReceiverEvent, Int)](), scheduled: false))

  init(
    receiver: GPSReceiver, topics: FleetTopics, configuration: FleetBridge.Configuration,
    thread: NetworkThread
  ) {
    self.receiver = receiver
    self.topics = topics
    self.configuration = configuration
    self.thread = thread
    gate = DemandGate(
      topics: topics,
      settings: DemandGate.Settings(
        gating: configuration.gating, replayExpiry: configuration.replayExpiry,
        outageQueueLimit: configuration.outageQueueLimit,
        maximumDemandSize: configuration.maximumDemandSize,
        maximumConsumers: configuration.maximumConsumers))
  }

  var statistics: FleetBridgeStatistics { shared.withLock { $0 } }

  // MARK: - On the network thread

  func start() {
    let client = MQTTClient(
      broker: configuration.broker, clientID: "serialgps-\(topics.id)",
      will: MQTTClient.Will(
        topic: topics.status, payload: Array(FleetStatus.offline.rawValue.utf8), qos: 1,
        retain: true),
      thread: thread)
    client.delegate = self
    self.client = client
    client.start()
    // With `always` the receiver is wanted before the broker is reached.
    handle(.start, now: thread.now)
  }

  private func handle(_ event: DemandGate.Event, now: Duration) {
    perform(gate.handle(event, now: now))
  }

  private func perform(_ actions: [DemandGate.Action]) {
    for action in actions {
      switch action {
      case .subscribeReceiver:
        generation += 1
        let generation = self.generation
        subscription = receiver.subscribe(bufferSize: configuration.subscriptionBufferSize) {
          [weak self] event in
          self?.deliver(event, generation: generation)
        }
      case .disposeReceiver:
        generation += 1
        subscription?.cancel()
        subscription = nil
      case .holdRequest(let request):
        requestGeneration += 1
        let tag = -requestGeneration
        do {
          let subscription = try receiver.subscribe(
            request, bufferSize: configuration.subscriptionBufferSize
          ) { [weak self] event in
            self?.deliver(event, generation: tag)
          }
          requests[request] = (subscription, tag)
        } catch {
          // DemandPayload reads terms as the library does: a refusal here is a bug, said.
          log("serialgps: mqtt \(topics.id): \(error)")
        }
      case .endRequest(let request):
        requests.removeValue(forKey: request)?.subscription.cancel()
      case .subscribe(let filter):
        client?.subscribe(filter, retainAsPublished: true)
      case .publish(let publication):
        if case .failure(let error)? = client?.publish(publication) {
          counts.publishFailures += 1
          log("serialgps: mqtt \(topics.id): \(error)")
        }
      case .disconnect:
        client?.stop(within: configuration.stopTimeout)
      case .log(let message):
        log("serialgps: mqtt \(topics.id): \(message)")
      }
    }
    client?.touch()  // the gate's deadline may have moved
    updateStatistics()
  }

  /// From the subscription's task: into the mailbox, which the thread empties in one job
  /// however many events wait (an epoch's fix and satellites, a burst of receivers).
  private func deliver(_ event: ReceiverEvent, generation: Int) {
    let schedule = mailbox.withLock { mailbox -> Bool in
      mailbox.events.append((event, generation))
      defer { mailbox.scheduled = true }
      return !mailbox.scheduled
    }
    guard schedule else { return }
    thread.post { [self] in
      let events = mailbox.withLock { mailbox -> [(ReceiverEvent, Int)] in
        defer {
          mailbox.events.removeAll(keepingCapacity: true)
          mailbox.scheduled = false
        }
        return mailbox.events
      }
      for (event, generation) in events { receiverEvent(event, generation: generation) }
    }
  }

  private func receiverEvent(_ event: ReceiverEvent, generation: Int) {
    if generation < 0 {
      guard requests.values.contains(where: { $0.tag == generation }),
        case .fix(let update) = event,
        update.arrival != lastRequestFix
      else { return }
      lastRequestFix = update.arrival
    } else {
      guard generation == self.generation else { return }
    }
    let now = thread.now
    switch event {
    case .fix(let update): handle(.fix(update.fix, age: update.age), now: now)
    case .satellites(let view): handle(.satellites(view), now: now)
    case .status(let status): handle(.receiverStatus(status), now: now)
    }
  }

  private func updateStatistics() {
    let gate = self.gate
    let connected = client?.isConnected ?? false
    let counts = self.counts
    let requestsHeld = requests.count
    let requestsMade = requestGeneration
    shared.withLock { shared in
      var statistics = FleetBridgeStatistics()
      statistics.connected = connected
      statistics.connections = counts.connections
      statistics.disconnections = counts.disconnections
      statistics.publishFailures = counts.publishFailures
      statistics.demands = gate.demands.count
      statistics.subscribed = gate.subscribed
      statistics.requestsHeld = requestsHeld
      statistics.requestsMade = requestsMade
      let counters = gate.counters
      statistics.demandsAccepted = counters.demandsAccepted
      statistics.demandsWithdrawn = counters.demandsWithdrawn
      statistics.demandsExpired = counters.demandsExpired
      statistics.demandsLost = counters.demandsLost
      statistics.oversizedMessages = counters.oversizedMessages
      statistics.malformedMessages = counters.malformedMessages
      statistics.invalidDemands = counters.invalidDemands
      statistics.unexpectedTopics = counters.unexpectedTopics
      statistics.refusedConsumers = counters.refusedConsumers
      statistics.waitingDemands = gate.waiting.count
      statistics.consumersTakenLater = counters.consumersTakenLater
      statistics.demandRereads = counters.demandRereads
      statistics.fixesPublished = counters.fixesPublished
      statistics.fixesQueued = counters.fixesQueued
      statistics.fixesDroppedFromQueue = counters.fixesDroppedFromQueue
      shared = statistics
    }
  }

  private func log(_ message: String) { configuration.log?(message) }

  // MARK: - MQTTClientDelegate

  func clientConnected(now: Duration) {
    counts.connections += 1
    log(
      "serialgps: mqtt \(topics.id): connected to \(configuration.broker.url)"
        + (lastLoggedFailure == nil ? "" : " again"))
    lastLoggedFailure = nil
    handle(.connected, now: now)
  }

  func clientDisconnected(_ reason: FleetError, wasConnected: Bool, now: Duration) {
    counts.disconnections += 1
    if reason.description != lastLoggedFailure {
      lastLoggedFailure = reason.description
      log("serialgps: mqtt \(topics.id): \(reason); retrying with backoff")
    }
    handle(.connectionLost, now: now)
  }

  func clientReceived(
    topic: String, payload: [UInt8], retained: Bool, expiry: UInt32?, now: Duration
  ) {
    handle(.message(topic: topic, payload: payload, retained: retained, expiry: expiry), now: now)
  }

  func clientDelivered(messageID: Int32) {}

  func clientStopped() {
    client = nil
    updateStatistics()
    stopped.settle(())
  }

  var ownerDeadline: Duration? { gate.nextDeadline }

  func ownerDeadlinePassed(now: Duration) { handle(.deadline, now: now) }

  // MARK: - From other threads

  /// Asks for the stop (the final status, a clean disconnect) without waiting for it.
  func requestStop(final: FleetStatus) {
    thread.post { [self] in
      if client == nil {
        // Never started, or already stopped.
        clientStopped()
      } else {
        handle(.stop(final: final), now: thread.now)
      }
    }
  }

  /// Stops and waits until the connection is closed.
  func stop(final: FleetStatus) async {
    requestStop(final: final)
    await stopped.value()
  }
}

/// One connection that only checks the broker accepts us, then leaves.
///
/// `@unchecked Sendable`: its client is touched on the network thread only; the result is an
/// ``Outcome``.
private final class BrokerProbe: MQTTClientDelegate, @unchecked Sendable {
  private let client: MQTTClient
  private let thread: NetworkThread
  private let result = Outcome<FleetError?>()

  init(broker: BrokerConfiguration, thread: NetworkThread) {
    self.thread = thread
    var random = SystemRandomNumberGenerator()
    client = MQTTClient(
      broker: broker, clientID: "serialgps-check-\(getpid())-\(random.next() % 1_000_000)",
      will: nil, thread: thread)
  }

  func run() async -> FleetError? {
    thread.post { [self] in
      client.delegate = self
      client.start()
    }
    return await result.value()
  }

  private func finish(_ outcome: FleetError?) { result.settle(outcome) }

  func clientConnected(now: Duration) {
    client.stop(within: .zero)
    finish(nil)
  }

  func clientDisconnected(_ reason: FleetError, wasConnected: Bool, now: Duration) {
    client.stop(within: .zero)
    finish(reason)
  }

  func clientReceived(
    topic: String, payload: [UInt8], retained: Bool, expiry: UInt32?, now: Duration
  ) {}
  func clientDelivered(messageID: Int32) {}
  func clientStopped() { finish(nil) }
  var ownerDeadline: Duration? { nil }
  func ownerDeadlinePassed(now: Duration) {}
}
