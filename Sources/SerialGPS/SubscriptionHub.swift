import NMEA
import POSIX

/// Fans events out to every subscriber and remembers what a newcomer should be told at once:
/// the current status and the latest fix, with its age, while it is younger than the replay
/// expiry.
final class SubscriptionHub: Sendable {
  private struct State {
    var subscribers: [UInt64: SubscriberQueue] = [:]
    /// The subscribers that asked for the bytes read from the device.
    var rawDataSubscribers: Set<UInt64> = []
    /// The subscribers that asked for the sentences the reader framed.
    var sentenceSubscribers: Set<UInt64> = []
    /// The subscribers that asked for fixes read late.
    var lateFixSubscribers: Set<UInt64> = []
    var nextID: UInt64 = 0
    var latestFix: Fix?
    var latestFixTime: DriverInstant = .origin
    var status: ReceiverStatus?
    var closed = false
  }

  private let state = Locked(State())
  private let clock: any DriverClock
  private let replayExpiry: Duration

  init(clock: any DriverClock, replayExpiry: Duration) {
    self.clock = clock
    self.replayExpiry = replayExpiry
  }

  /// Registers a subscriber's queue, preloaded with the current status and, if fresh enough,
  /// the latest fix. Returns `nil` once the hub is closed.
  func add(
    _ queue: SubscriberQueue, rawData: Bool = false, sentences: Bool = false,
    lateFixes: Bool = false
  ) -> UInt64? {
    let now = clock.now
    return state.withLock { state -> UInt64? in
      guard !state.closed else { return nil }
      // The queue is new and nobody waits on it yet, so pushing under the hub lock resumes
      // nothing; doing it here keeps the replay ahead of any live event.
      if let status = state.status { queue.push(.event(.status(status))) }
      if let replay = replay(of: state, at: now) { queue.push(.event(.fix(replay))) }
      state.nextID += 1
      state.subscribers[state.nextID] = queue
      if rawData { state.rawDataSubscribers.insert(state.nextID) }
      if sentences { state.sentenceSubscribers.insert(state.nextID) }
      if lateFixes { state.lateFixSubscribers.insert(state.nextID) }
      return state.nextID
    }
  }

  func remove(_ id: UInt64) {
    state.withLock { state in
      state.subscribers.removeValue(forKey: id)
      state.rawDataSubscribers.remove(id)
      state.sentenceSubscribers.remove(id)
      state.lateFixSubscribers.remove(id)
    }
  }

  /// Whether any subscriber wants the bytes read from the device, and whether any wants the
  /// framed sentences (the reader copies them only then), asked once per read.
  var wants: (rawData: Bool, sentences: Bool) {
    state.withLock { (!$0.rawDataSubscribers.isEmpty, !$0.sentenceSubscribers.isEmpty) }
  }

  /// Complete sentences, as framed by the reader, for the subscribers that asked for them.
  func publish(sentences: [UInt8]) {
    let queues = state.withLock { state in
      state.sentenceSubscribers.compactMap { state.subscribers[$0] }
    }
    let event = ReceiverEventOrRawData.sentences(sentences)
    for queue in queues { queue.push(event) }
  }

  func publish(rawData: [UInt8]) {
    let queues = state.withLock { state in
      state.rawDataSubscribers.compactMap { state.subscribers[$0] }
    }
    let event = ReceiverEventOrRawData.rawData(rawData)
    for queue in queues { queue.push(event) }
  }

  /// Total events dropped by slow subscribers still attached.
  var droppedEvents: Int {
    let queues = state.withLock { Array($0.subscribers.values) }
    return queues.reduce(0) { $0 + $1.dropped }
  }

  /// A fix for every subscriber, remembered for newcomers. `age`: how old it already was on
  /// arrival (a report relayed from elsewhere); `isReplay`: it is not a live one. Returns the
  /// update the subscribers were given.
  @discardableResult
  func publish(fix: Fix, age: Duration = .zero, isReplay: Bool = false) -> FixUpdate {
    let arrival = clock.now - age
    let queues = state.withLock { state -> [SubscriberQueue] in
      state.latestFix = fix
      state.latestFixTime = arrival
      return Array(state.subscribers.values)
    }
    let update = FixUpdate(fix: fix, age: age, isReplay: isReplay, arrival: arrival)
    let event = ReceiverEventOrRawData.event(.fix(update))
    for queue in queues { queue.push(event) }
    return update
  }

  /// A fix read late (queued behind a newer one), `age` old at least, for the subscribers that
  /// asked for such fixes. Not remembered: the newer one is the latest.
  func publish(lateFix fix: Fix, age: Duration) {
    let arrival = clock.now - age
    let queues = state.withLock { state in
      state.lateFixSubscribers.compactMap { state.subscribers[$0] }
    }
    guard !queues.isEmpty else { return }
    let event = ReceiverEventOrRawData.event(
      .fix(FixUpdate(fix: fix, age: age, isReplay: false, arrival: arrival, isLate: true)))
    for queue in queues { queue.push(event) }
  }

  func publish(satellites: SatelliteView) {
    let queues = state.withLock { Array($0.subscribers.values) }
    let event = ReceiverEventOrRawData.event(.satellites(satellites))
    for queue in queues { queue.push(event) }
  }

  /// Publishes a status change; repeats of the current status are not sent again.
  func publish(status: ReceiverStatus) {
    let queues = state.withLock { state -> [SubscriberQueue] in
      if state.status == status { return [] }
      state.status = status
      return Array(state.subscribers.values)
    }
    for queue in queues { queue.push(.event(.status(status))) }
  }

  /// The status last published; `nil` before the first.
  var status: ReceiverStatus? { state.withLock { $0.status } }

  /// The latest fix with its age, whatever that age; `nil` before the first fix.
  var latestFix: FixUpdate? {
    let now = clock.now
    return state.withLock { state in
      state.latestFix.map {
        FixUpdate(
          fix: $0, age: now - state.latestFixTime, isReplay: true, arrival: state.latestFixTime)
      }
    }
  }

  /// What a new subscriber is replayed now: the latest fix with its age, while it is no older
  /// than the replay expiry.
  var replay: FixUpdate? {
    let now = clock.now
    return state.withLock { replay(of: $0, at: now) }
  }

  /// The one rule for replaying the latest fix (to a new subscription, or when asked).
  private func replay(of state: State, at now: DriverInstant) -> FixUpdate? {
    guard let fix = state.latestFix else { return nil }
    let age = now - state.latestFixTime
    guard age <= replayExpiry else { return nil }
    return FixUpdate(fix: fix, age: age, isReplay: true, arrival: state.latestFixTime)
  }

  /// Ends every subscription and refuses new ones.
  func close() {
    let queues = state.withLock { state -> [SubscriberQueue] in
      state.closed = true
      defer {
        state.subscribers.removeAll()
        state.rawDataSubscribers.removeAll()
        state.sentenceSubscribers.removeAll()
        state.lateFixSubscribers.removeAll()
      }
      return Array(state.subscribers.values)
    }
    for queue in queues { queue.finish() }
  }
}
