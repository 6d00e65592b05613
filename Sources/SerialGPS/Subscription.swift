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
final class SubscriptionCore: @unchecked Sendable {
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
