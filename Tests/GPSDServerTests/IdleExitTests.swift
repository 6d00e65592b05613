import POSIX
import Testing

@testable import GPSDServer

/// `IdleExit` on a virtual clock: when a server that may end while unused has been unused
/// long enough.
@Suite struct IdleExitTests {
  static func at(_ seconds: Double) -> MonotonicInstant {
    MonotonicInstant(sinceOrigin: .seconds(1000) + .milliseconds(Int64(seconds * 1000)))
  }

  /// The answers to `(inUse, seconds)` notes in turn, and the deadline after each.
  func run(_ limit: Duration, _ notes: [(Bool, Double)]) -> [(Bool, MonotonicInstant?)] {
    var idle = IdleExit(limit: limit)
    return notes.map { inUse, seconds in
      let exits = idle.note(inUse: inUse, now: Self.at(seconds))
      return (exits, idle.deadline)
    }
  }

  @Test func exitsOnceAfterTheLimitUnused() {
    let answers = run(.seconds(10), [(false, 0), (false, 9.999), (false, 10), (false, 30)])
    #expect(answers.map(\.0) == [false, false, true, false])
    // Once only, and nothing more to wake for after it.
    #expect(answers.map(\.1) == [Self.at(10), Self.at(10), nil, nil])
  }

  @Test func useStartsTheWaitAgainFromItsEnd() {
    let answers = run(
      .seconds(10), [(false, 0), (true, 8), (true, 15), (false, 20), (false, 29), (false, 31)])
    // In use past the first deadline: no exit; the wait counts from the end of the use.
    #expect(answers.map(\.0) == [false, false, false, false, false, true])
    #expect(answers.map(\.1) == [Self.at(10), nil, nil, Self.at(30), Self.at(30), nil])
  }
}
