import POSIX

/// The controller's queue of events: posted from any thread in order, taken by the controller
/// task all at once.
///
/// Taking everything that is queued (rather than one event at a time, as an `AsyncStream`
/// hands them out) is what lets the controller converge: it hands the whole batch to the
/// receiver machine before it starts the next power-on or power-off, so that action is computed
/// from the demand as it is now, not as it was when a long-gone subscriber attached.
final class ControllerInbox<Event: Sendable>: Sendable {
  private struct State {
    var events: [Event] = []
    var waiter: CheckedContinuation<[Event], Never>?
    var closed = false
  }

  private let state = Locked(State())

  /// Queues `event`; false (and nothing queued) once the inbox is closed.
  @discardableResult
  func post(_ event: Event) -> Bool {
    let (accepted, waiter) = state.withLock {
      state -> (Bool, CheckedContinuation<[Event], Never>?) in
      if state.closed { return (false, nil) }
      if let waiter = state.waiter {
        state.waiter = nil
        return (true, waiter)
      }
      state.events.append(event)
      return (true, nil)
    }
    waiter?.resume(returning: [event])
    return accepted
  }

  /// Every event queued now, oldest first; empty when there is none. Never waits.
  func takeAll() -> [Event] {
    state.withLock { state in
      defer { state.events.removeAll(keepingCapacity: true) }
      return state.events
    }
  }

  /// Every event queued, oldest first, waiting for one when there is none. One task at a
  /// time may wait.
  func next() async -> [Event] {
    await withCheckedContinuation { continuation in
      let ready: [Event]? = state.withLock { state in
        if !state.events.isEmpty || state.closed {
          defer { state.events.removeAll(keepingCapacity: true) }
          return state.events
        }
        state.waiter = continuation
        return nil
      }
      if let ready { continuation.resume(returning: ready) }
    }
  }

  /// Refuses further events and returns those still queued.
  func close() -> [Event] {
    state.withLock { state in
      state.closed = true
      defer { state.events.removeAll() }
      return state.events
    }
  }
}
