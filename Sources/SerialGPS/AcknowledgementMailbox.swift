/// Hands acknowledgements seen by the reader thread to the controller waiting for them.
final class AcknowledgementMailbox: @unchecked Sendable {
  private struct Waiter {
    let token: UInt64
    let expected: PowerCommand.Acknowledgement
    let continuation: CheckedContinuation<ObservedAcknowledgement?, Never>
  }

  private struct State {
    var expected: PowerCommand.Acknowledgement?
    var arrived: ObservedAcknowledgement?
    var waiter: Waiter?
    var nextToken: UInt64 = 0
  }

  private let state = Locked(State())

  /// Announces the acknowledgement the next command expects, before the command is written,
  /// so that a fast answer is not missed.
  func expect(_ acknowledgement: PowerCommand.Acknowledgement) {
    state.withLock {
      $0.expected = acknowledgement
      $0.arrived = nil
    }
  }

  /// Called by the reader for every acknowledgement it sees.
  func deliver(_ acknowledgement: ObservedAcknowledgement) {
    let waiter: Waiter? = state.withLock { state in
      guard state.expected == acknowledgement.answers else { return nil }
      if let waiter = state.waiter, waiter.expected == acknowledgement.answers {
        state.waiter = nil
        state.expected = nil
        return waiter
      }
      state.arrived = acknowledgement
      return nil
    }
    waiter?.continuation.resume(returning: acknowledgement)
  }

  /// Waits for the expected acknowledgement until `deadline`; `nil` on timeout.
  func wait(
    for expected: PowerCommand.Acknowledgement, until deadline: Duration, clock: any DriverClock
  ) async -> ObservedAcknowledgement? {
    let token = state.withLock { state -> UInt64 in
      state.nextToken += 1
      return state.nextToken
    }
    let timeout = Task {
      try? await clock.sleep(until: deadline)
      self.expire(token)
    }
    defer { timeout.cancel() }
    return await withCheckedContinuation { continuation in
      let ready: ObservedAcknowledgement?? = state.withLock { state in
        if let arrived = state.arrived, arrived.answers == expected {
          state.arrived = nil
          state.expected = nil
          return .some(arrived)
        }
        state.waiter = Waiter(token: token, expected: expected, continuation: continuation)
        return nil
      }
      if let ready { continuation.resume(returning: ready) }
    }
  }

  private func expire(_ token: UInt64) {
    let waiter: Waiter? = state.withLock { state in
      guard let waiter = state.waiter, waiter.token == token else { return nil }
      state.waiter = nil
      return waiter
    }
    waiter?.continuation.resume(returning: nil)
  }

  /// Forgets everything (the connection closed).
  func reset() {
    let waiter: Waiter? = state.withLock { state in
      defer { state = State(nextToken: state.nextToken) }
      return state.waiter
    }
    waiter?.continuation.resume(returning: nil)
  }
}
