import POSIX

/// The events of one subscription, as an `AsyncSequence`.
///
/// The subscription starts when ``GPSReceiver/subscribe(bufferSize:)`` returns (the first
/// subscriber powers the receiver on at once, before iteration begins) and ends at the first
/// of:
/// - `cancel()` on the sequence;
/// - cancellation of the task iterating it (the pending `next()` returns `nil`);
/// - the sequence and all its iterators being deallocated (dropping it unsubscribes);
/// - the receiver shutting down (`next()` returns `nil`).
///
/// Events buffered at the end are discarded. Each subscription has a bounded buffer; when
/// its consumer is slower than the receiver the oldest positions are dropped, newest wins.
public struct ReceiverEvents: AsyncSequence, Sendable {
  public typealias Element = ReceiverEvent
  public typealias Failure = Never

  let core: SubscriptionCore

  public struct AsyncIterator: AsyncIteratorProtocol {
    let core: SubscriptionCore

    public mutating func next() async -> ReceiverEvent? {
      // Only a subscription made with raw data gets bytes; skipping them keeps this honest.
      while let item = await core.queue.next() {
        if case .event(let event) = item { return event }
      }
      core.dispose()
      return nil
    }
  }

  public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(core: core) }

  /// Ends the subscription now. Safe to call more than once, from anywhere.
  public func cancel() { core.dispose() }

  /// Events dropped so far because this subscriber fell behind.
  public var droppedEvents: Int { core.queue.dropped }
}

/// The events of a subscription made with ``GPSReceiver/subscribeWithRawData(bufferSize:)``:
/// the usual events and, ahead of the fixes decoded from them, the bytes read from the
/// device. It ends as ``ReceiverEvents`` does.
public struct ReceiverEventsWithRawData: AsyncSequence, Sendable {
  public typealias Element = ReceiverEventOrRawData
  public typealias Failure = Never

  let core: SubscriptionCore

  public struct AsyncIterator: AsyncIteratorProtocol {
    let core: SubscriptionCore

    public mutating func next() async -> ReceiverEventOrRawData? {
      let item = await core.queue.next()
      if item == nil { core.dispose() }
      return item
    }
  }

  public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(core: core) }

  /// Ends the subscription now. Safe to call more than once, from anywhere.
  public func cancel() { core.dispose() }

  /// Events and chunks dropped so far because this subscriber fell behind.
  public var droppedEvents: Int { core.queue.dropped }
}

/// A subscription delivered to a callback, for code that is not async.
///
/// Cancelling it, or letting the last reference to it go, ends the subscription.
public final class Subscription: Sendable {
  let core: SubscriptionCore
  /// The task that feeds the handler; `nil` when the hub calls it directly.
  private let task: Task<Void, Never>?

  /// A subscription whose handler the hub calls itself (``GPSReceiver/subscribeOnReaderThread(rawData:sentences:_:)``).
  init(direct core: SubscriptionCore) {
    self.core = core
    task = nil
  }

  init(core: SubscriptionCore, handler: @escaping @Sendable (ReceiverEventOrRawData) -> Void) {
    self.core = core
    let events = ReceiverEventsWithRawData(core: core)
    task = DriverExecutor.task {
      for await event in events { handler(event) }
    }
  }

  /// Ends the subscription. The handler is not called after this returns, except for an
  /// event already being delivered.
  public func cancel() {
    core.dispose()
    task?.cancel()
  }

  /// Events dropped so far because the handler fell behind.
  public var droppedEvents: Int { core.queue.dropped }

  deinit { cancel() }
}

/// What a subscription holds: its queue and the way back to detach it, exactly once.
final class SubscriptionCore: Sendable {
  let queue: SubscriberQueue
  private let onDispose: @Sendable () -> Void
  private let disposed = Locked(false)

  init(queue: SubscriberQueue, onDispose: @escaping @Sendable () -> Void) {
    self.queue = queue
    self.onDispose = onDispose
  }

  func dispose() {
    let first = disposed.withLock { disposed -> Bool in
      defer { disposed = true }
      return !disposed
    }
    guard first else { return }
    queue.finish()
    onDispose()
  }

  deinit { dispose() }
}

/// One subscriber's mailbox: a bounded buffer where the newest event wins.
///
/// The reader never waits for a subscriber: when the buffer is full, the oldest fix or
/// satellite view is dropped (status changes are kept while any position event can go
/// instead) and the drop is counted.
///
/// Made with a `forward` handler, the queue buffers nothing once ``startForwarding()`` has
/// run: each event is handed to the handler on the thread that pushed it, outside the lock.
/// Until then (while the hub preloads the replay under its own lock) events wait in the
/// buffer, so the replay still comes first.
///
/// `@unchecked Sendable`: its buffer and waiter are behind `lock`, a ``Lock`` the compiler cannot
/// see guards them.
final class SubscriberQueue: @unchecked Sendable {
  typealias Forward = @Sendable (ReceiverEventOrRawData) -> Void

  let capacity: Int
  private let forward: Forward?
  private var forwarding = false
  private let lock = Lock()
  private var buffer: [ReceiverEventOrRawData] = []
  private var head = 0
  private var waiter: CheckedContinuation<ReceiverEventOrRawData?, Never>?
  private var finished = false
  /// Ended after what is buffered: ``next()`` hands that out, then `nil`.
  private var draining = false
  private var droppedCount = 0

  init(capacity: Int, forward: Forward? = nil) {
    self.capacity = max(1, capacity)
    self.forward = forward
    buffer.reserveCapacity(self.capacity)
  }

  /// Hands what waits to the handler, in order, then every later event as it is pushed. Each
  /// batch is taken under the lock and delivered outside it; events pushed meanwhile join the
  /// next batch, so none overtakes an earlier one.
  func startForwarding() {
    guard let forward else { return }
    while true {
      let batch: [ReceiverEventOrRawData] = lock.withLock {
        let waiting = Array(buffer[head...])
        buffer.removeAll(keepingCapacity: true)
        head = 0
        if waiting.isEmpty { forwarding = !finished }
        return waiting
      }
      if batch.isEmpty { return }
      for event in batch { forward(event) }
    }
  }

  /// Events dropped because the subscriber was slower than the receiver.
  var dropped: Int { lock.withLock { droppedCount } }

  /// Adds an event; wakes the subscriber if it is waiting.
  func push(_ event: ReceiverEventOrRawData) {
    enum Delivery {
      case none
      case resume(CheckedContinuation<ReceiverEventOrRawData?, Never>)
      case forward(Forward)
    }
    let delivery: Delivery = lock.withLock {
      if finished || draining { return .none }
      if forwarding, let forward { return .forward(forward) }
      if let waiter {
        self.waiter = nil
        return .resume(waiter)
      }
      if buffer.count - head >= capacity { dropOne() }
      buffer.append(event)
      return .none
    }
    switch delivery {
    case .none: break
    case .resume(let waiter): waiter.resume(returning: event)
    case .forward(let forward): forward(event)
    }
  }

  private func dropOne() {
    droppedCount += 1
    // Prefer dropping a position or satellite event over a status change.
    let victim =
      buffer[head...].firstIndex { event in
        if case .event(.status) = event { return false }
        return true
      } ?? head
    buffer.remove(at: victim)
    compact()
  }

  private func compact() {
    if head == buffer.count {
      buffer.removeAll(keepingCapacity: true)
      head = 0
    } else if head > 64 && head * 2 > buffer.count {
      buffer.removeFirst(head)
      head = 0
    }
  }

  /// The next event, waiting for one; `nil` once finished (or when the task is cancelled).
  func next() async -> ReceiverEventOrRawData? {
    if let ready = takeReady() { return ready.event }
    return await withTaskCancellationHandler {
      await withCheckedContinuation {
        (continuation: CheckedContinuation<ReceiverEventOrRawData?, Never>) in
        let resumeWith: ReceiverEventOrRawData?? = lock.withLock {
          if head < buffer.count {
            let event = buffer[head]
            head += 1
            compact()
            return .some(event)
          }
          if finished || draining || Task.isCancelled { return .some(nil) }
          waiter = continuation
          return nil
        }
        if let resumeWith { continuation.resume(returning: resumeWith) }
      }
    } onCancel: {
      finish()
    }
  }

  private func takeReady() -> (event: ReceiverEventOrRawData?, ())? {
    lock.withLock {
      if head < buffer.count {
        let event = buffer[head]
        head += 1
        compact()
        return (event, ())
      }
      return finished || draining ? (nil, ()) : nil
    }
  }

  /// Ends the queue after the events already buffered: the subscriber gets them, then `nil`;
  /// later pushes are ignored.
  func finishAfterBuffered() {
    let waiting: CheckedContinuation<ReceiverEventOrRawData?, Never>? = lock.withLock {
      draining = true
      let waiting = waiter
      waiter = nil
      return waiting
    }
    // A waiter means the buffer is empty.
    waiting?.resume(returning: nil)
  }

  /// Ends the queue: a waiting subscriber gets `nil`; later pushes are ignored. Events
  /// already buffered are discarded.
  func finish() {
    let waiting: CheckedContinuation<ReceiverEventOrRawData?, Never>? = lock.withLock {
      finished = true
      forwarding = false
      buffer.removeAll()
      head = 0
      let waiting = waiter
      waiter = nil
      return waiting
    }
    waiting?.resume(returning: nil)
  }
}
