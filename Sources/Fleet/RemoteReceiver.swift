import Glibc
import NMEA
import POSIX
import SerialGPS

/// A receiver across the fleet, read from an MQTT broker, with the same API as
/// ``GPSReceiver``: app code is the same whether the receiver is on the board or elsewhere.
///
/// Subscribing wants positions: the first subscription connects to the broker and publishes
/// this consumer's demand on `serialgps/<id>/demand/<consumer>` (retained, with the empty
/// retained message as the connection's Last Will), which powers the board's receiver on; the
/// end of the last subscription withdraws it and disconnects. A consumer killed outright is
/// withdrawn by its Last Will. A newcomer gets the board's status and, while fresh, the latest
/// fix (the broker's retained message, or the one held here).
///
/// ```swift
/// let receiver = try RemoteReceiver(broker: .init(url: "mqtts://broker"), id: "truck-17")
/// for await event in receiver.subscribe() {
///   if case .fix(let update) = event { print(update.fix.latitude ?? "-") }
/// }
/// ```
///
/// Fixes come from the board's gpsd TPV reports, with the satellite count and DOPs of its
/// latest SKY report (published after the TPV of each epoch, so they may be one epoch old).
/// A fix the broker kept (a replay) carries its age by its timestamp against this machine's
/// clock. Broker trouble reaches subscribers as ``ReceiverStatus/disconnected(reason:)``, and
/// ``ReceiverStatus/reconnected`` when it is over; the client retries with backoff.
public final class RemoteReceiver: Sendable {
  public struct Options: Sendable {
    /// This consumer's name in the demand topic; `nil`: the host name, process ID and a
    /// random suffix (two consumers must never share a name: one's withdrawal would end the
    /// other's demand).
    public var consumer: String?
    /// The demand's MQTT 5 message expiry, refreshed at half of it while it stands; `nil`: it
    /// stands until withdrawn (by the consumer or its Last Will).
    public var demandExpiry: Duration? = .seconds(600)
    /// What the demand asks for: an interval and an accuracy (docs/requests.md), merged on
    /// the board with every other request; `nil` (the default): every fix. The board
    /// publishes the fixes all its consumers cause, so a subscriber may see more than its own.
    public var request: LocationRequest?
    /// A newcomer gets the latest fix held here only while it is younger than this.
    public var replayExpiry: Duration = .seconds(10)
    /// Events buffered per subscriber before the oldest positions are dropped.
    public var subscriberBufferSize = 32
    /// How long ``RemoteReceiver/shutdown()`` waits for the broker to acknowledge the
    /// withdrawal.
    public var stopTimeout: Duration = .seconds(2)

    public init() {}
  }

  /// The board's receiver, as named in its topics.
  public let id: String
  /// This consumer's name.
  public let consumer: String
  let core: RemoteReceiverCore
  private let lifetime: RemoteLifetime

  /// A remote receiver; nothing connects until the first subscription.
  ///
  /// - Throws: when the broker configuration is unsafe or incomplete
  ///   (``BrokerConfiguration/validate()``), a name is not valid, or libmosquitto is not
  ///   installed (loaded here the first time in the process; the error says what to install).
  public init(broker: BrokerConfiguration, id: String, options: Options = Options())
    throws(FleetError)
  {
    try broker.validate()
    try Libmosquitto.require()
    let topics = try FleetTopics(id: id)
    let consumer = options.consumer ?? Self.defaultConsumerName()
    guard FleetTopics.isValidName(consumer) else {
      throw FleetError(
        "'\(consumer)' cannot name a consumer: use 1 to 64 letters, digits, '-', '_' or '.'",
        kind: .configuration)
    }
    self.id = id
    self.consumer = consumer
    core = RemoteReceiverCore(
      broker: broker, topics: topics, consumer: consumer, options: options,
      thread: .shared)
    lifetime = RemoteLifetime(core: core)
  }

  /// Subscribes to fixes, satellite views and status changes; the first subscriber publishes
  /// the demand. It ends as ``ReceiverEvents`` describes.
  public func subscribe(bufferSize: Int? = nil) -> ReceiverEvents {
    core.source.subscribe(bufferSize: bufferSize, keepAlive: lifetime)
  }

  /// Subscribes with a callback, for code that is not async; cancel the subscription, or let
  /// it go, to unsubscribe.
  public func subscribe(
    bufferSize: Int? = nil, _ handler: @escaping @Sendable (ReceiverEvent) -> Void
  ) -> Subscription {
    core.source.subscribe(bufferSize: bufferSize, keepAlive: lifetime, handler)
  }

  /// Ends every subscription, withdraws the demand (waiting at most
  /// ``Options/stopTimeout`` for the broker to acknowledge it) and disconnects.
  public func shutdown() async { await core.shutdown() }

  /// Counters since the remote receiver was made.
  public var statistics: RemoteReceiverStatistics { core.statistics }

  static func defaultConsumerName() -> String {
    var name = [UInt8](repeating: 0, count: 65)
    gethostname(&name, 64)
    let host =
      FleetTopics.name(from: String(decoding: name.prefix { $0 != 0 }, as: UTF8.self)) ?? "consumer"
    var random = SystemRandomNumberGenerator()
    let suffix = String(random.next() % 0x10000, radix: 16)
    return String("\(host.prefix(40))-\(getpid())-\(suffix)")
  }
}

/// Counters of a ``RemoteReceiver``.
public struct RemoteReceiverStatistics: Sendable, Hashable {
  public var connected = false
  public var connections = 0
  public var disconnections = 0
  public var fixes = 0
  public var satelliteViews = 0
  /// TPV, SKY or status messages that could not be read, counted and skipped.
  public var malformedReports = 0
  public var unexpectedTopics = 0
  public var demandsPublished = 0
  public var withdrawals = 0

  public init() {}
}

/// Shuts the remote receiver down when neither it nor any subscription refers to it.
final class RemoteLifetime: Sendable {
  let core: RemoteReceiverCore
  init(core: RemoteReceiverCore) { self.core = core }
  deinit { core.requestStop() }
}

/// The remote receiver's state and connection, owned by the network thread (but `source`,
/// `statistics` and the stop waiters).
///
/// `@unchecked Sendable`: its mutable state is the network thread's alone (reached through
/// ``NetworkThread/post(_:)``); `source`, `shared` and `finished` are safe from any thread.
final class RemoteReceiverCore: MQTTClientDelegate, @unchecked Sendable {
  let broker: BrokerConfiguration
  let topics: FleetTopics
  let options: RemoteReceiver.Options
  let thread: NetworkThread
  let source: EventSource
  private var gate: ConsumerGate
  private var client: MQTTClient?
  private var counts = (connections: 0, disconnections: 0)
  private let shared = Locked(RemoteReceiverStatistics())
  private let finished = Outcome<Void>()

  init(
    broker: BrokerConfiguration, topics: FleetTopics, consumer: String,
    options: RemoteReceiver.Options, thread: NetworkThread
  ) {
    self.broker = broker
    self.topics = topics
    self.options = options
    self.thread = thread
    gate = ConsumerGate(
      topics: topics, consumer: consumer, demandExpiry: options.demandExpiry,
      request: options.request)
    // The source's callbacks reach the gate through the thread's inbox, in the order they
    // happen; `weak` so that the source does not keep its owner alive.
    let box = WeakCore()
    source = EventSource(
      clock: SystemClock(), replayExpiry: options.replayExpiry,
      bufferSize: options.subscriberBufferSize,
      attached: { thread.post { box.core?.handle(.attach) } },
      detached: { thread.post { box.core?.handle(.detach) } })
    box.core = self
  }

  /// `@unchecked Sendable`: `core` is set once in the initialiser, before any closure that reads it
  /// can run.
  private final class WeakCore: @unchecked Sendable {
    weak var core: RemoteReceiverCore?
  }

  var statistics: RemoteReceiverStatistics { shared.withLock { $0 } }

  func requestStop() {
    thread.post { [self] in handle(.stop) }
  }

  func shutdown() async {
    requestStop()
    await finished.value()
  }

  // MARK: - On the network thread

  private func handle(_ event: ConsumerGate.Event) {
    perform(gate.handle(event, now: thread.now))
  }

  private func perform(_ actions: [ConsumerGate.Action]) {
    for action in actions {
      switch action {
      case .startClient:
        let client = MQTTClient(
          broker: broker, clientID: gate.consumer,
          will: MQTTClient.Will(
            topic: topics.demand(consumer: gate.consumer), payload: [], qos: 1, retain: true),
          thread: thread)
        client.delegate = self
        self.client = client
        client.start()
      case .stopClient:
        client?.stop(within: options.stopTimeout)
      case .subscribe(let filter):
        client?.subscribe(filter, retainAsPublished: false)
      case .publish(let publication):
        client?.publish(publication)
      case .deliverFix(let fix, let retained):
        source.publish(fix: fix, age: retained ? Self.age(of: fix) : .zero, isReplay: retained)
      case .deliverSatellites(let view):
        source.publish(satellites: view)
      case .deliverStatus(let status):
        source.publish(status: status)
      case .finished:
        source.close()
        finished.settle(())
      }
    }
    client?.touch()  // the gate's deadline may have moved
    updateStatistics()
  }

  /// How old a fix the broker kept is, by its timestamp against `clock` (this machine's wall
  /// clock but in tests); zero when that cannot tell: no date, or clocks that disagree.
  static func age(of fix: Fix, on clock: any WallClock = SystemWallClock()) -> Duration {
    guard let timestamp = fix.timestamp else { return .zero }
    let age =
      clock.now() - .seconds(timestamp.secondsSinceUnixEpoch)
      - .nanoseconds(timestamp.time.nanoseconds)
    guard age > .zero, age < .seconds(86_400) else { return .zero }
    return age
  }

  private func updateStatistics() {
    let counters = gate.counters
    let connected = client?.isConnected ?? false
    let counts = self.counts
    shared.withLock { shared in
      shared.connected = connected
      shared.connections = counts.connections
      shared.disconnections = counts.disconnections
      shared.fixes = counters.fixes
      shared.satelliteViews = counters.satelliteViews
      shared.malformedReports = counters.malformedReports
      shared.unexpectedTopics = counters.unexpectedTopics
      shared.demandsPublished = counters.demandsPublished
      shared.withdrawals = counters.withdrawals
    }
  }

  // MARK: - MQTTClientDelegate

  func clientConnected(now: Duration) {
    counts.connections += 1
    handle(.connected)
  }

  func clientDisconnected(_ reason: FleetError, wasConnected: Bool, now: Duration) {
    counts.disconnections += 1
    handle(.connectionLost(reason, wasConnected: wasConnected))
  }

  func clientReceived(
    topic: String, payload: [UInt8], retained: Bool, expiry: UInt32?, now: Duration
  ) {
    handle(.message(topic: topic, payload: payload, retained: retained))
  }

  func clientDelivered(messageID: Int32) {}

  func clientStopped() {
    client = nil
    handle(.clientStopped)
  }

  var ownerDeadline: Duration? { gate.nextDeadline }

  func ownerDeadlinePassed(now: Duration) { handle(.deadline) }
}
