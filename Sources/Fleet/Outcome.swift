import POSIX

/// A value set once and awaited by any number of tasks: a stop finished, a probe's answer.
/// (The same waiting as `OwnThread.join` and `GPSReceiver.shutdown`; a candidate for the shared
/// system layer.)
final class Outcome<Value: Sendable>: Sendable {
  private let state = Locked<(value: Value?, waiters: [CheckedContinuation<Value, Never>])>(
    (nil, []))

  /// Sets the value, the first time only, and wakes whoever waits for it.
  func settle(_ value: Value) {
    let waiters = state.withLock { state -> [CheckedContinuation<Value, Never>] in
      guard state.value == nil else { return [] }
      state.value = value
      defer { state.waiters.removeAll() }
      return state.waiters
    }
    for waiter in waiters { waiter.resume(returning: value) }
  }

  /// The value, once it is set.
  func value() async -> Value {
    await withCheckedContinuation { (continuation: CheckedContinuation<Value, Never>) in
      let ready = state.withLock { state -> Value? in
        if let value = state.value { return value }
        state.waiters.append(continuation)
        return nil
      }
      if let ready { continuation.resume(returning: ready) }
    }
  }
}
