import POSIX

/// When a server that may end while unused (``GPSDServer/Configuration/whenIdle``) has been
/// unused long enough, as a state machine with no I/O: the event loop tells it after every
/// wake whether anyone uses the server now, and it answers with the deadline to wake for and,
/// once, that the time has come. Unused means no client connected and no receiver subscribed;
/// a client that connects and leaves starts the wait again from its leaving.
struct IdleExit {
  let limit: Duration
  /// When the server will have been unused for ``limit``; `nil` while it is used (or after
  /// the exit was decided).
  private(set) var deadline: MonotonicInstant?
  private(set) var decided = false

  /// Starts as used, so that the wait counts from the first ``note(inUse:now:)``.
  init(limit: Duration) { self.limit = limit }

  /// Whether the server is used now; returns `true` exactly once, when it has been unused for
  /// ``limit`` by `now`.
  mutating func note(inUse: Bool, now: MonotonicInstant) -> Bool {
    guard !decided else { return false }
    if inUse {
      deadline = nil
      return false
    }
    guard let due = deadline else {
      deadline = now + limit
      return false
    }
    guard due <= now else { return false }
    decided = true
    deadline = nil
    return true
  }
}
