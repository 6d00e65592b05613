import POSIX

/// One subscriber's mailbox: a bounded buffer where the newest event wins.
///
/// The reader never waits for a subscriber: when the buffer is full, the oldest fix or
/// satellite view is dropped (status changes are kept while any position event can go
/// instead) and the drop is counted.
final class SubscriberQueue: @unchecked Sendable {
  let capacity: Int
  private let lock = Lock()
  private var buffer: [ReceiverEventOrRawData] = []
  private var head = 0
  private var waiter: CheckedContinuation<ReceiverEventOrRawData?, Never>?
  private var finished = false
  private var droppedCount = 0

  init(capacity: Int) {
    self.capacity = max(1, capacity)
    buffer.reserveCapacity(self.capacity)
  }

  /// Events dropped because the subscriber was slower than the receiver.
  var dropped: Int { lock.withLock { droppedCount } }

  /// Adds an event; wakes the subscriber if it is waiting.
  func push(_ event: ReceiverEventOrRawData) {
    let waiting: CheckedContinuation<ReceiverEventOrRawData?, Never>? = lock.withLock {
      if finished { return nil }
      if let waiter {
        self.waiter = nil
        return waiter
      }
      if buffer.count - head >= capacity { dropOne() }
      buffer.append(event)
      return nil
    }
    waiting?.resume(returning: event)
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
          if finished || Task.isCancelled { return .some(nil) }
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
      return finished ? (nil, ()) : nil
    }
  }

  /// Ends the queue: a waiting subscriber gets `nil`; later pushes are ignored. Events
  /// already buffered are discarded.
  func finish() {
    let waiting: CheckedContinuation<ReceiverEventOrRawData?, Never>? = lock.withLock {
      finished = true
      buffer.removeAll()
      head = 0
      let waiting = waiter
      waiter = nil
      return waiting
    }
    waiting?.resume(returning: nil)
  }
}
