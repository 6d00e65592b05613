import POSIX

/// The queues of the location requests that are open, by the scheduler's request number: the
/// controller delivers into them what ``RequestScheduler`` decides, and ends them when a
/// request ends by itself.
///
/// Threading: any thread. The lock guards only the table; queues are pushed and finished
/// outside it.
final class RequestRegistry: Sendable {
  /// One request's queue, and the best fix it saw when it ended unserved.
  final class Record: Sendable {
    let queue: SubscriberQueue
    private let ending = Locked<(endedBySelf: Bool, best: FixUpdate?)>((false, nil))

    init(queue: SubscriberQueue) { self.queue = queue }

    /// Whether the request ended by itself (updates or duration over), and the best fix it
    /// saw that was not good enough.
    var ended: (endedBySelf: Bool, best: FixUpdate?) { ending.withLock { $0 } }

    func end(best: FixUpdate?) {
      ending.withLock { $0 = (true, best) }
      queue.finishAfterBuffered()
    }
  }

  private let records = Locked<(next: UInt64, open: [UInt64: Record])>((0, [:]))

  /// Registers `record`; its number for the scheduler.
  func add(_ record: Record) -> UInt64 {
    records.withLock { state in
      state.next += 1
      state.open[state.next] = record
      return state.next
    }
  }

  func remove(_ id: UInt64) {
    _ = records.withLock { $0.open.removeValue(forKey: id) }
  }

  func deliver(_ update: FixUpdate, to id: UInt64) {
    let record = records.withLock { $0.open[id] }
    record?.queue.push(.event(.fix(update)))
  }

  /// The request ended by itself: its queue ends after what it was delivered.
  func finish(_ id: UInt64, best: FixUpdate?) {
    let record = records.withLock { $0.open.removeValue(forKey: id) }
    record?.end(best: best)
  }

  /// The receiver stopped: every request ends.
  func finishAll() {
    let all = records.withLock { state -> [Record] in
      defer { state.open.removeAll() }
      return Array(state.open.values)
    }
    for record in all { record.queue.finish() }
  }
}
