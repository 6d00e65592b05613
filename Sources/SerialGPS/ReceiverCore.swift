import Chipsets
import NMEA
import POSIX
import TimeService

/// The machinery behind a ``GPSReceiver``: the parts that the controller, the reader and the
/// requests share (the hub, the ordered event inbox, the counters, what is known of the
/// receiver), and the requests themselves.
///
/// The receiver's work is split by job, one type each:
/// - ``ReceiverMachine``: the whole decision, pure (demand, schedule, power, sleep);
/// - ``ReceiverController``: the one task that runs the machine's effects, with
///   ``PortOperations`` its hands on the port;
/// - ``CommandStepRunner``: the controller's command loop (write, acknowledgement, retry);
/// - ``ConnectionReader``: one connection's reading thread (bytes → decoder → hub);
/// - ``ReceiverKnowledge``: what the receiver has said about itself, and the commands that
///   follow from it.
///
/// Threading: every method here may be called from any thread. Requests only post events to
/// the ``inbox`` (in the order they are made) and start the controller task the first time;
/// nothing here waits for the device or holds a lock while it calls out.
final class ReceiverCore: Sendable {
  let connector: any ReceiverConnector
  let options: GPSReceiver.Options
  let clock: any DriverClock
  let hub: SubscriptionHub
  let acknowledgements = AcknowledgementMailbox()
  /// The controller's ordered events, posted from any thread.
  let inbox = ControllerInbox<ReceiverController.Event>()
  /// Updated by the controller and the reader; read by ``statistics``.
  let counters = Locked(ReceiverStatistics())
  /// What the receiver has said about itself, kept across connections.
  let knowledge: ReceiverKnowledge
  /// The open location requests' queues.
  let requests = RequestRegistry()
  /// The time service each new connection's reader feeds (``GPSReceiver/timeService``).
  let timeService = Locked<TimeService?>(nil)
  /// The last notice given (``GPSReceiver/lastNotice``).
  let lastNotice = Locked<ReceiverNotice?>(nil)
  /// Set once a shutdown is asked for, so a power-on in progress stops retrying its wake-up.
  let shutdownRequested = Locked(false)
  private let finished = Locked<(done: Bool, waiters: [CheckedContinuation<Void, Never>])>(
    (false, []))

  init(connector: any ReceiverConnector, options: GPSReceiver.Options, clock: any DriverClock) {
    self.connector = options.wakePin.map { WakingConnector(base: connector, line: $0) } ?? connector
    self.options = options
    self.clock = clock
    hub = SubscriptionHub(clock: clock, replayExpiry: options.replayExpiry)
    knowledge = ReceiverKnowledge(
      connector: self.connector, chipset: options.chipset, ubxMessages: options.ubxMessages)
  }

  /// Whether the controller task runs. It starts with the first request, so a receiver that
  /// nobody ever subscribes to costs no task at all.
  private let controllerStarted = Locked(false)

  func start() {
    connector.startWatching { [weak self] in self?.deviceAppeared() }
    // Evidence that a killed process left this receiver awake: put it to standby now, before
    // anyone asks (and only then: without it nothing is opened until there is demand).
    if let markers = options.awakeMarkers, let identity = connector.markerIdentity,
      markers.wasLeftAwake(identity, deviceOwner: { connector.deviceOwner })
    {
      inbox.post(.machine(.leftAwake))
      startControllerIfNeeded()
    }
  }

  private func startControllerIfNeeded() {
    let start = controllerStarted.withLock { started -> Bool in
      defer { started = true }
      return !started
    }
    if start {
      // The task keeps the controller, and the controller this core, until it stops.
      let controller = ReceiverController(core: self)
      DriverExecutor.task { await controller.run() }
    }
  }

  /// Keeps `notice` as the last and tells the app's handler (no lock held while calling it).
  func tell(_ notice: ReceiverNotice) {
    lastNotice.withLock { $0 = notice }
    options.notices?(connector.deviceName, notice)
  }

  var statistics: ReceiverStatistics {
    var statistics = counters.withLock { $0 }
    statistics.droppedEvents = hub.droppedEvents
    return statistics
  }

  // MARK: - Requests from any thread

  func makeSubscription(
    bufferSize: Int?, rawData: Bool = false, sentences: Bool = false, lateFixes: Bool = false,
    forward: SubscriberQueue.Forward? = nil, lifetime: ReceiverLifetime
  ) -> SubscriptionCore {
    let queue = SubscriberQueue(
      capacity: bufferSize ?? options.subscriberBufferSize, forward: forward)
    guard
      let id = hub.add(queue, rawData: rawData, sentences: sentences, lateFixes: lateFixes)
    else {
      queue.finish()
      return SubscriptionCore(queue: queue) {}
    }
    // The attach goes into the ordered stream before `subscribe()` returns, so a dispose
    // that follows can never overtake it.
    inbox.post(.machine(.attach))
    startControllerIfNeeded()
    return SubscriptionCore(queue: queue) { [weak self] in
      _ = lifetime  // the receiver lives while a subscription does
      guard let self else { return }
      self.hub.remove(id)
      self.inbox.post(.machine(.detach))
    }
  }

  /// A queue that gets what subscribers get without counting as one: it powers nothing.
  func makeObserver(bufferSize: Int?, lifetime: ReceiverLifetime) -> SubscriptionCore {
    let queue = SubscriberQueue(capacity: bufferSize ?? options.subscriberBufferSize)
    guard let id = hub.add(queue) else {
      queue.finish()
      return SubscriptionCore(queue: queue) {}
    }
    return SubscriptionCore(queue: queue) { [weak self] in
      _ = lifetime  // the receiver lives while an observer does
      self?.hub.remove(id)
    }
  }

  /// A location request: its queue gets what the scheduler delivers, and ends when the
  /// request ends by itself or is disposed of.
  func makeRequest(
    _ request: LocationRequest, bufferSize: Int?, lifetime: ReceiverLifetime
  ) -> (SubscriptionCore, RequestRegistry.Record) {
    let queue = SubscriberQueue(capacity: bufferSize ?? options.subscriberBufferSize)
    let record = RequestRegistry.Record(queue: queue)
    let id = requests.add(record)
    // Posted before this returns, so that the dispose that follows never overtakes it.
    guard inbox.post(.machine(.request(id, request, cached: hub.latestFix))) else {
      requests.remove(id)
      queue.finish()
      return (SubscriptionCore(queue: queue) {}, record)
    }
    startControllerIfNeeded()
    let core = SubscriptionCore(queue: queue) { [weak self] in
      _ = lifetime  // the receiver lives while a request does
      guard let self else { return }
      self.requests.remove(id)
      self.inbox.post(.machine(.requestEnded(id)))
    }
    return (core, record)
  }

  func hold(for duration: Duration) {
    inbox.post(.machine(.hold(until: clock.now + duration)))
    startControllerIfNeeded()
  }

  /// Queues bytes for the controller, which writes them between its own command exchanges.
  func write(_ bytes: [UInt8], done: (@Sendable () -> Void)? = nil) {
    guard !bytes.isEmpty else {
      done?()
      return
    }
    if !inbox.post(.write(bytes, done: done)) {
      counters.withLock { $0.bytesNotWritten += bytes.count }
      done?()
    }
    startControllerIfNeeded()
  }

  func requestShutdown() {
    shutdownRequested.withLock { $0 = true }
    // A wake-up waiting for its acknowledgement gives up now rather than after its retries;
    // a standby under way is left to finish.
    acknowledgements.abandonWakeUp()
    // A baud search under way ends now rather than after its rates.
    connector.interruptConnect()
    inbox.post(.machine(.shutdown))
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
    inbox.post(.machine(.deviceAppeared))
  }

  /// Called by the controller once it has stopped: every ``shutdown()`` waiting returns.
  func controllerStopped() {
    let waiters = finished.withLock { state -> [CheckedContinuation<Void, Never>] in
      state.done = true
      defer { state.waiters.removeAll() }
      return state.waiters
    }
    for waiter in waiters { waiter.resume() }
  }
}
