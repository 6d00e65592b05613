import POSIX
import Testing

@testable import GPSDServer

/// `ClientAdmission` on a virtual clock: exact action lists for the limit, eviction, the idle
/// timeout, the accept pause and its log throttling, including what sockets cannot reach in a
/// test (a limit reached while accepting is paused, an outage that repeats for minutes).
@Suite struct ClientAdmissionTests {
  /// Instants as time since an origin, so that each test reads as a time line.
  static func at(_ seconds: Double) -> MonotonicInstant {
    MonotonicInstant(sinceOrigin: .seconds(1000) + .milliseconds(Int64(seconds * 1000)))
  }

  static func settings(
    clients: Int = 3, eviction: Duration? = .seconds(5), idle: Duration? = .seconds(60)
  ) -> ClientAdmission.Settings {
    ClientAdmission.Settings(
      maximumClients: clients, evictionIdleTime: eviction, idleTimeout: idle,
      acceptPause: .seconds(1), logInterval: .seconds(10))
  }

  static let emfile = "accept: Too many open files (EMFILE)"

  static func outage(_ suffix: String = "") -> ClientAdmission.Action {
    .log(
      "cannot accept clients: \(emfile)\(suffix); waiting for a client to leave (raise the "
        + "process's descriptor limit, ulimit -n or LimitNOFILE=, or lower --max-clients)")
  }

  static func refusal(_ peer: String, limit: Int = 3) -> ClientAdmission.Action {
    .log(
      "refused a client from \(peer): \(limit) clients already connected, none of them idle "
        + "(raise --max-clients to serve more)")
  }

  static func eviction(_ peer: String, idle: Int, for newcomer: String, limit: Int = 3)
    -> ClientAdmission.Action
  {
    .log(
      "closed idle client \(peer) (not watching, no request for \(idle) s) to make room for "
        + "\(newcomer): \(limit) clients connected (--max-clients)")
  }

  var admission = ClientAdmission(settings: Self.settings())

  mutating func arrive(_ peer: String, at seconds: Double) -> [ClientAdmission.Action] {
    admission.handle(.arrived(peer: peer), now: Self.at(seconds))
  }

  @Test mutating func clientsAreAdmittedUpToTheLimitThenRefused() {
    #expect(arrive("a", at: 0) == [.admit(1)])
    #expect(arrive("b", at: 0) == [.admit(2)])
    #expect(arrive("c", at: 0) == [.admit(3)])
    // All three just connected: none has been quiet for the eviction time.
    #expect(arrive("d", at: 1) == [.refuse, Self.refusal("d")])
    #expect(admission.clientCount == 3)
    #expect(admission.counters == .init(accepted: 3, refused: 1, evicted: 0))
    // One leaves: the next is admitted with a number of its own.
    #expect(admission.handle(.left(2), now: Self.at(2)) == [])
    #expect(arrive("e", at: 2) == [.admit(4)])
  }

  /// The newcomer takes the slot of the client quiet longest among those that do not watch
  /// and have been quiet for the eviction time; watchers never give theirs.
  @Test mutating func theLongestIdleNonWatcherGivesItsSlot() {
    _ = arrive("a", at: 0)
    _ = arrive("watcher", at: 0)
    _ = arrive("c", at: 1)
    #expect(admission.handle(.request(2, watching: true), now: Self.at(1)) == [])
    // a asks something after c connected: c is now the longest idle.
    #expect(admission.handle(.request(1, watching: false), now: Self.at(2)) == [])
    #expect(
      arrive("d", at: 12) == [.evict(3), Self.eviction("c", idle: 11, for: "d"), .admit(4)])
    // Then a (quiet since 2) rather than d (since 12).
    #expect(arrive("e", at: 15) == [.evict(1), Self.eviction("a", idle: 13, for: "e"), .admit(5)])
    // d has been quiet 4 s only, e 1 s, and the watcher never counts.
    #expect(arrive("f", at: 16) == [.refuse, Self.refusal("f")])
    #expect(arrive("g", at: 17) == [.evict(4), Self.eviction("d", idle: 5, for: "g"), .admit(6)])
    #expect(admission.counters == .init(accepted: 6, refused: 1, evicted: 3))
  }

  @Test mutating func equallyIdleClientsGoInTheOrderTheyCame() {
    for peer in ["a", "b", "c"] { _ = arrive(peer, at: 0) }
    #expect(arrive("d", at: 5) == [.evict(1), Self.eviction("a", idle: 5, for: "d"), .admit(4)])
    #expect(arrive("e", at: 5) == [.evict(2), Self.eviction("b", idle: 5, for: "e"), .admit(5)])
  }

  @Test func withoutAnEvictionTimeNewcomersAreRefused() {
    var admission = ClientAdmission(settings: Self.settings(clients: 1, eviction: nil))
    #expect(admission.handle(.arrived(peer: "a"), now: Self.at(0)) == [.admit(1)])
    #expect(
      admission.handle(.arrived(peer: "b"), now: Self.at(3600))
        == [.refuse, Self.refusal("b", limit: 1)])
  }

  /// Clients that neither watch nor ask are closed after the idle timeout; the deadline the
  /// loop polls with is the first of them, and none at all when every client watches.
  @Test mutating func idleClientsAreClosedAndWatchersAreNot() {
    #expect(admission.nextDeadline == nil)
    _ = arrive("a", at: 0)
    _ = arrive("b", at: 10)
    _ = arrive("watcher", at: 20)
    #expect(admission.handle(.request(3, watching: true), now: Self.at(20)) == [])
    #expect(admission.nextDeadline == Self.at(60))
    #expect(admission.handle(.request(1, watching: false), now: Self.at(30)) == [])
    #expect(admission.nextDeadline == Self.at(70))
    #expect(admission.handle(.timer, now: Self.at(69.9)) == [])
    #expect(
      admission.handle(.timer, now: Self.at(70)) == [
        .close(2), .log("closed client b: no request for 60.0 seconds and not watching"),
      ])
    #expect(admission.nextDeadline == Self.at(90))
    #expect(
      admission.handle(.timer, now: Self.at(500)) == [
        .close(1), .log("closed client a: no request for 60.0 seconds and not watching"),
      ])
    // Only the watcher is left: nothing to wake for.
    #expect(admission.nextDeadline == nil)
    #expect(admission.clientCount == 1)
    // A watcher that stops watching is timed again from its last request.
    #expect(admission.handle(.request(3, watching: false), now: Self.at(600)) == [])
    #expect(admission.nextDeadline == Self.at(660))
  }

  @Test mutating func withoutAnIdleTimeoutNothingIsTimed() {
    admission = ClientAdmission(settings: Self.settings(idle: nil))
    _ = arrive("a", at: 0)
    #expect(admission.nextDeadline == nil)
    #expect(admission.handle(.timer, now: Self.at(1e6)) == [])
  }

  /// Out of descriptors: the listener is left alone for a second or until a client leaves,
  /// and it is said once, not at every attempt.
  @Test mutating func anAcceptFailurePausesUntilAClientLeavesOrASecondHasPassed() {
    _ = arrive("a", at: 0)
    #expect(
      admission.handle(.acceptFailed(reason: Self.emfile), now: Self.at(1))
        == [.pauseAccepting, Self.outage()])
    #expect(!admission.isAccepting)
    #expect(admission.nextDeadline == Self.at(2))
    #expect(admission.handle(.timer, now: Self.at(1.5)) == [])
    #expect(admission.handle(.timer, now: Self.at(2)) == [.resumeAccepting])
    // Still out: paused again, and not said again (no accept succeeded in between).
    #expect(
      admission.handle(.acceptFailed(reason: Self.emfile), now: Self.at(2)) == [.pauseAccepting])
    // A client leaving frees a descriptor: accept at once.
    #expect(admission.handle(.left(1), now: Self.at(2.2)) == [.resumeAccepting])
    #expect(admission.isAccepting)
    #expect(admission.nextDeadline == nil)
  }

  /// A burst queued behind the descriptor limit takes every descriptor freed and runs out
  /// again and again: said at most every 10 s, with the count of the times in between.
  @Test mutating func repeatedOutagesAreSaidAtMostEveryTenSecondsWithTheirCount() {
    var said: [ClientAdmission.Action] = []
    var time = 0.0
    var client = arrive("x", at: time).first
    // An outage every 0.5 s for 25 s, each ended by a client leaving and a newcomer taking
    // the descriptor freed.
    for round in 0..<50 {
      let actions = admission.handle(.acceptFailed(reason: Self.emfile), now: Self.at(time))
      #expect(actions.first == .pauseAccepting, "round \(round)")
      said += actions.filter { if case .log = $0 { true } else { false } }
      time += 0.25
      guard case .admit(let id) = client else { break }
      #expect(admission.handle(.left(id), now: Self.at(time)) == [.resumeAccepting])
      client = arrive("p\(round)", at: time).first
      time += 0.25
    }
    #expect(
      said == [
        Self.outage(), Self.outage(" (ran out 19 more times since the last message)"),
        Self.outage(" (ran out 19 more times since the last message)"),
      ])
  }

  /// The slots fill while accepting is paused (clients accepted in the same wake as the
  /// failure, before it): when the pause ends the newcomer is refused, not admitted past the
  /// limit, and an idle client still gives its slot.
  @Test mutating func aLimitReachedWhileThePauseRunsStillHolds() {
    _ = arrive("a", at: 0)
    _ = arrive("b", at: 0.1)
    #expect(
      admission.handle(.acceptFailed(reason: Self.emfile), now: Self.at(0.2))
        == [.pauseAccepting, Self.outage()])
    // Accepted before the failure was seen (the listener had it queued): the limit is reached.
    #expect(arrive("c", at: 0.3) == [.admit(3)])
    #expect(!admission.isAccepting, "an accept that succeeds does not end the pause")
    #expect(admission.handle(.timer, now: Self.at(1.2)) == [.resumeAccepting])
    #expect(arrive("d", at: 1.3) == [.refuse, Self.refusal("d")])
    #expect(admission.clientCount == 3)
    // Quiet long enough: a gives its slot, without resuming anything (none was freed).
    #expect(arrive("e", at: 5.5) == [.evict(1), Self.eviction("a", idle: 5, for: "e"), .admit(4)])
    // Out again after accepts succeeded: a new outage, but within 10 s of the last message,
    // so it is counted for the next one rather than said.
    #expect(
      admission.handle(.acceptFailed(reason: Self.emfile), now: Self.at(6)) == [.pauseAccepting])
    // The idle timeout ends the pause too: a descriptor is free.
    var idle = ClientAdmission(settings: Self.settings(idle: .seconds(2)))
    _ = idle.handle(.arrived(peer: "a"), now: Self.at(0))
    _ = idle.handle(.acceptFailed(reason: Self.emfile), now: Self.at(1.5))
    #expect(idle.nextDeadline == Self.at(2))
    #expect(
      idle.handle(.timer, now: Self.at(2)) == [
        .close(1), .log("closed client a: no request for 2.0 seconds and not watching"),
        .resumeAccepting,
      ])
    #expect(idle.handle(.timer, now: Self.at(2.5)) == [])
  }

  /// A client with more than the backlog waiting stopped reading: it is dropped, watcher or
  /// not, counted and said, and its descriptor lets a paused listener go on.
  @Test func aClientThatStopsReadingIsDropped() {
    var admission = ClientAdmission(
      settings: ClientAdmission.Settings(
        maximumClients: 3, idleTimeout: nil, maximumBacklog: 1000, acceptPause: .seconds(1)))
    _ = admission.handle(.arrived(peer: "a"), now: Self.at(0))
    _ = admission.handle(.arrived(peer: "b"), now: Self.at(0))
    _ = admission.handle(.request(1, watching: true), now: Self.at(1))
    #expect(admission.handle(.backlog(1, waiting: 1000), now: Self.at(2)) == [])
    #expect(
      admission.handle(.acceptFailed(reason: Self.emfile), now: Self.at(2))
        == [.pauseAccepting, Self.outage()])
    #expect(
      admission.handle(.backlog(1, waiting: 1001), now: Self.at(2.5)) == [
        .log("dropped client a: it stopped reading (1001 bytes waiting, limit 1000)"), .close(1),
        .resumeAccepting,
      ])
    #expect(admission.counters == .init(accepted: 2, refused: 0, evicted: 0, dropped: 1))
    #expect(admission.clientCount == 1)
    #expect(
      admission.handle(.backlog(2, waiting: 5000), now: Self.at(3)) == [
        .log("dropped client b: it stopped reading (5000 bytes waiting, limit 1000)"), .close(2),
      ])
    #expect(admission.clientCount == 0)
  }

  /// A request from, or the leaving of, a client it does not know is a bug in the loop:
  /// counted and ignored (a debug build stops at it).
  @Test mutating func unexpectedEventsAreCountedAndIgnored() {
    admission.assertsOnUnexpectedEvents = false
    _ = arrive("a", at: 0)
    #expect(admission.handle(.request(7, watching: true), now: Self.at(1)) == [])
    #expect(admission.handle(.left(7), now: Self.at(1)) == [])
    #expect(admission.handle(.backlog(7, waiting: 1 << 30), now: Self.at(1)) == [])
    #expect(admission.unexpectedEvents == 3)
    #expect(admission.clientCount == 1)
    #expect(admission.handle(.left(1), now: Self.at(1)) == [])
    #expect(admission.handle(.left(1), now: Self.at(1)) == [])
    #expect(admission.unexpectedEvents == 4)
  }

  @Test func theThrottleSaysTheFirstAndCountsTheRest() {
    var throttle = LogThrottle(interval: .seconds(10))
    #expect(throttle.allow(now: Self.at(0)) == 0)
    #expect(throttle.allow(now: Self.at(3)) == nil)
    #expect(throttle.allow(now: Self.at(9.999)) == nil)
    #expect(throttle.allow(now: Self.at(10)) == 2)
    #expect(throttle.allow(now: Self.at(30)) == 0)
  }
}
