import Chipsets
import POSIX

/// Hands acknowledgements seen by the reader thread to the controller waiting for them, and
/// whether the receiver said anything at all since the command was written (a receiver that
/// fell silent after a standby is asleep: ``CommandExchange`` does not retry into it).
final class AcknowledgementMailbox: Sendable {
  /// How a wait ended: the answer, or the deadline passed (or the wait was ended) with
  /// `heard` telling whether any bytes arrived since the command was announced with
  /// ``expect(_:)``.
  typealias WaitResult = CommandWait

  private struct Waiter {
    let token: UInt64
    /// Whether a shutdown may cut the wait short (a wake-up's, never a standby's).
    let abandonable: Bool
    let continuation: CheckedContinuation<WaitResult, Never>
  }

  private struct State {
    var expected: CommandStep?
    var arrived: ReceiverAcknowledgement?
    var waiter: Waiter?
    var nextToken: UInt64 = 0
    var heard = false
  }

  private let state = Locked(State())

  /// Announces the command whose acknowledgement is awaited, before the command is written,
  /// so that a fast answer is not missed.
  func expect(_ step: CommandStep) {
    state.withLock {
      $0.expected = step
      $0.arrived = nil
      $0.heard = false
    }
  }

  /// Forgets what was heard so far: the next wait's `heard` tells of what arrives from now on
  /// (the listening window of a step that expects silence).
  func startListening() {
    state.withLock { $0.heard = false }
  }

  /// Called by the reader for every chunk of bytes it read.
  func heard() {
    state.withLock { $0.heard = true }
  }

  /// Called by the reader for every acknowledgement it sees; unrelated ones are ignored.
  func deliver(_ acknowledgement: ReceiverAcknowledgement) {
    let waiter: Waiter? = state.withLock { state in
      guard let expected = state.expected, expected.isAcknowledged(by: acknowledgement) != nil
      else { return nil }
      state.expected = nil
      if let waiter = state.waiter {
        state.waiter = nil
        return waiter
      }
      state.arrived = acknowledgement
      return nil
    }
    waiter?.continuation.resume(returning: .answer(acknowledgement))
  }

  /// Waits for the acknowledgement of the expected command until `deadline`; `.timedOut` on
  /// timeout, or when ``abandonWakeUp()`` ends an `abandonable` wait.
  func wait(
    until deadline: DriverInstant, clock: any DriverClock, abandonable: Bool = false
  ) async -> WaitResult {
    let token = state.withLock { state -> UInt64 in
      state.nextToken += 1
      return state.nextToken
    }
    let timeout = DriverExecutor.task {
      try? await clock.sleep(until: deadline)
      self.expire(token)
    }
    defer { timeout.cancel() }
    return await withCheckedContinuation { continuation in
      let ready: WaitResult? = state.withLock { state in
        if let arrived = state.arrived {
          state.arrived = nil
          return .answer(arrived)
        }
        state.waiter = Waiter(token: token, abandonable: abandonable, continuation: continuation)
        return nil
      }
      if let ready { continuation.resume(returning: ready) }
    }
  }

  private func expire(_ token: UInt64) { endWait { $0.token == token } }

  /// Ends an abandonable wait at once (a shutdown: the wake-up gives up rather than retry).
  /// A standby's wait goes on: cutting it short would send the standby again, and a byte
  /// wakes a MediaTek chip that the first one put to sleep.
  func abandonWakeUp() { endWait { $0.abandonable } }

  /// Ends the wait under way with no answer, if `matches` says it is the one.
  private func endWait(if matches: (Waiter) -> Bool) {
    let ended: (Waiter, Bool)? = state.withLock { state in
      guard let waiter = state.waiter, matches(waiter) else { return nil }
      state.waiter = nil
      // Still expected: an answer that comes late is credited to its attempt.
      return (waiter, state.heard)
    }
    if let (waiter, heard) = ended {
      waiter.continuation.resume(returning: .timedOut(heard: heard))
    }
  }

  /// Forgets everything (the connection closed).
  func reset() {
    let waiter: Waiter? = state.withLock { state in
      defer { state = State(nextToken: state.nextToken) }
      return state.waiter
    }
    waiter?.continuation.resume(returning: .timedOut(heard: false))
  }
}
