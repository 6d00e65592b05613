import CMosquitto
import Testing

@testable import Fleet

/// `MQTTSession`, the broker connection's decisions, on a virtual clock: exact action lists for
/// what the real-broker tests see (connect, refusals, a broker restart, a clean stop that waits
/// for its acknowledgements) and what they cannot reach (a broker that flaps every 100 ms, a
/// port that takes the TCP connection and never answers, the keep-alive's timing).
@Suite("MQTTSession: the broker connection's decisions, as exact action lists")
struct MQTTSessionTests {
  /// Draws the lowest value every time (see BackoffTests): each backoff is exactly half its
  /// delay.
  struct Lowest: RandomNumberGenerator {
    mutating func next() -> UInt64 { 1 }
  }

  typealias Session = MQTTSession<Lowest>

  static let broker: BrokerConfiguration = {
    var broker = try! BrokerConfiguration(url: "mqtt://127.0.0.1:1883")
    broker.reconnectDelay = .milliseconds(500)
    broker.maximumReconnectDelay = .seconds(30)
    broker.connectTimeout = .seconds(15)
    broker.keepAlive = .seconds(30)
    return broker
  }()

  static let lost = MQTTEnd.library(
    code: Int32(MOSQ_ERR_CONN_LOST.rawValue), errno: 0, text: "The connection was lost.")
  static let refusedTCP = MQTTEnd.library(
    code: Int32(MOSQ_ERR_ERRNO.rawValue), errno: 111, text: "Unknown error.")

  static func ms(_ value: Int64) -> Duration { .milliseconds(value) }

  var session = Session(settings: .init(broker: Self.broker), random: Lowest())

  /// Starts and connects at `now`; the broker accepts.
  mutating func connect(at now: Duration = .zero) {
    #expect(session.handle(.start, now: now) == [])
    #expect(session.nextDeadline == now)
    #expect(session.handle(.timer, now: now) == [.connect])
    #expect(
      session.handle(.connack(reasonCode: 0, reason: "Success"), now: now) == [
        .report(.connected)
      ])
  }

  @Test mutating func startConnectsAtTheFirstTimerAndKeepsTheConnectionAlive() {
    connect()
    #expect(session.isConnected)
    // A quarter of the 30 s keep-alive.
    #expect(session.nextDeadline == .seconds(7.5))
    #expect(session.handle(.timer, now: .seconds(7)) == [])
    #expect(session.handle(.timer, now: .seconds(7.5)) == [.serviceKeepAlive])
    #expect(session.nextDeadline == .seconds(15))
  }

  /// A broker restart: the connection is lost, retried after half a second (the lowest draw
  /// of the first delay, 250 ms), then after growing delays while it stays away; connected
  /// again, the count starts afresh.
  @Test mutating func aLostConnectionIsRetriedWithTheBackoff() {
    connect()
    let reason = FleetError(
      "lost mqtt://127.0.0.1:1883: the connection was lost.", kind: .unreachable)
    #expect(
      session.handle(.disconnected(Self.lost), now: .seconds(10)) == [
        .report(.disconnected(reason, wasConnected: true))
      ])
    #expect(session.nextDeadline == .seconds(10) + Self.ms(250))
    #expect(session.handle(.timer, now: .seconds(10) + Self.ms(249)) == [])
    #expect(session.handle(.timer, now: .seconds(10) + Self.ms(250)) == [.connect])
    // Refused while the broker restarts: 0.5 s, then 1 s (half of 1 s and 2 s).
    var now = Duration.seconds(10) + Self.ms(250)
    let refused = FleetError(
      "cannot reach mqtt://127.0.0.1:1883: connection refused", kind: .unreachable)
    for expected in [Self.ms(500), Self.ms(1000), Self.ms(2000)] {
      #expect(
        session.handle(.disconnected(Self.refusedTCP), now: now) == [
          .report(.disconnected(refused, wasConnected: false))
        ])
      #expect(session.nextDeadline == now + expected)
      now += expected
      #expect(session.handle(.timer, now: now) == [.connect])
    }
    #expect(
      session.handle(.connack(reasonCode: 0, reason: "Success"), now: now) == [
        .report(.connected)
      ])
    #expect(session.failures == 0)
    // Lost again: the first delay again, not the fourth.
    _ = session.handle(.disconnected(Self.lost), now: now)
    #expect(session.nextDeadline == now + Self.ms(250))
  }

  /// A broker that accepts and drops every connection 100 ms later, for a minute: the session
  /// never reconnects faster than its backoff allows, however often it gets in. Each drop
  /// after a success counts as the first failure, so it retries every 250 ms at the lowest
  /// draw: at most one attempt per 350 ms cycle, and every drop is reported.
  @Test mutating func aBrokerThatFlapsEvery100MillisecondsIsRetriedAtTheBackoffsPace() {
    var now = Duration.zero
    _ = session.handle(.start, now: now)
    var connects = 0
    var reports = 0
    while true {
      guard let deadline = session.nextDeadline else {
        Issue.record("no deadline in \(session.state)")
        return
      }
      guard deadline < .seconds(60) else { break }
      now = max(now, deadline)
      for action in session.handle(.timer, now: now) where action == .connect {
        connects += 1
        #expect(
          session.handle(.connack(reasonCode: 0, reason: "Success"), now: now) == [
            .report(.connected)
          ])
        now += Self.ms(100)
        let actions = session.handle(.disconnected(Self.lost), now: now)
        reports += actions.count
        #expect(session.nextDeadline == now + Self.ms(250))
      }
    }
    #expect(connects == 172)  // 60 s / 350 ms, the first at 0
    #expect(reports == connects)
    // And a broker that refuses every attempt backs off to the maximum: 15 s at the lowest
    // draw, after 7 failures (0.25, 0.5, 1, 2, 4, 8, 15).
    var down = Session(settings: .init(broker: Self.broker), random: Lowest())
    now = .zero
    _ = down.handle(.start, now: now)
    var delays: [Duration] = []
    for _ in 0..<9 {
      now = down.nextDeadline!
      #expect(down.handle(.timer, now: now) == [.connect])
      _ = down.handle(.disconnected(Self.refusedTCP), now: now)
      delays.append(down.nextDeadline! - now)
    }
    #expect(
      delays == [
        Self.ms(250), Self.ms(500), .seconds(1), .seconds(2), .seconds(4), .seconds(8),
        .seconds(15), .seconds(15), .seconds(15),
      ])
  }

  /// A port that takes the TCP connection but never speaks MQTT: the attempt is abandoned
  /// after the connect timeout, and the reason says what was seen.
  @Test mutating func anAttemptWithoutCONNACKIsAbandonedAndSaysWhatWasSeen() {
    _ = session.handle(.start, now: .zero)
    #expect(session.handle(.timer, now: .zero) == [.connect])
    #expect(session.nextDeadline == .seconds(15))
    #expect(session.handle(.timer, now: .seconds(14)) == [])
    #expect(session.handle(.timer, now: .seconds(15)) == [.abandonAttempt])
    let silent = FleetError(
      "mqtt://127.0.0.1:1883 accepted the TCP connection but sent no CONNACK within 15 s: is "
        + "it an MQTT broker, and is 1883 its plaintext (mqtt://) port?", kind: .unreachable)
    #expect(
      session.handle(.disconnected(.noAnswer(answered: true)), now: .seconds(15)) == [
        .report(.disconnected(silent, wasConnected: false))
      ])
    // The library's own report of the close that follows is the same end: ignored.
    #expect(
      session.handle(
        .disconnected(.library(code: 0, errno: 0, text: "No error.")), now: .seconds(15)) == [])
    #expect(session.handle(.timer, now: .seconds(15) + Self.ms(250)) == [.connect])
    #expect(session.handle(.timer, now: .seconds(30) + Self.ms(250)) == [.abandonAttempt])
    let nobody = FleetError(
      "mqtt://127.0.0.1:1883 did not answer within 15 s", kind: .unreachable)
    #expect(
      session.handle(.disconnected(.noAnswer(answered: false)), now: .seconds(31)) == [
        .report(.disconnected(nobody, wasConnected: false))
      ])
  }

  /// A refusal in CONNACK is reported when the broker then closes, as what it is (credentials
  /// to check), not as the lost connection that follows.
  @Test mutating func aRefusalIsReportedWhenTheBrokerCloses() {
    var broker = Self.broker
    broker.username = "truck-17"
    session = Session(settings: .init(broker: broker), random: Lowest())
    _ = session.handle(.start, now: .zero)
    _ = session.handle(.timer, now: .zero)
    #expect(
      session.handle(
        .connack(reasonCode: Int32(MQTT_RC_NOT_AUTHORIZED.rawValue), reason: "Not authorized"),
        now: .zero) == [])
    let actions = session.handle(.disconnected(Self.lost), now: .zero)
    guard case .report(.disconnected(let reason, false)) = actions.first, actions.count == 1
    else {
      Issue.record("\(actions)")
      return
    }
    #expect(reason.kind == .refused)
    #expect(
      reason.description.hasPrefix("mqtt://127.0.0.1:1883 refused user truck-17 (not authorized)"))
    // The next attempt starts clean: a plain loss is reported as such.
    _ = session.handle(.timer, now: Self.ms(250))
    let next = session.handle(.disconnected(Self.refusedTCP), now: Self.ms(250))
    guard case .report(.disconnected(let again, _)) = next.first else { return }
    #expect(again.kind == .unreachable)
  }

  /// A stop waits for the QoS 1 publications made so far (the final status, a withdrawal),
  /// at most the time given, and closes at a timer, never inside the call that asked.
  @Test mutating func aStopWaitsForItsAcknowledgementsThenCloses() {
    connect()
    #expect(session.handle(.sent(messageID: 7), now: .seconds(1)) == [])
    #expect(session.handle(.sent(messageID: 8), now: .seconds(1)) == [])
    #expect(session.handle(.stop(within: .seconds(2)), now: .seconds(1)) == [])
    #expect(session.nextDeadline == .seconds(3))
    #expect(
      session.handle(.published(messageID: 7), now: .seconds(1.2)) == [
        .report(.delivered(messageID: 7))
      ])
    #expect(session.nextDeadline == .seconds(3))
    // A QoS 0 message (not waited for) changes nothing.
    #expect(session.handle(.published(messageID: 99), now: .seconds(1.3)) == [])
    #expect(
      session.handle(.published(messageID: 8), now: .seconds(1.4)) == [
        .report(.delivered(messageID: 8))
      ])
    #expect(session.nextDeadline == .seconds(1.4))
    #expect(session.handle(.timer, now: .seconds(1.4)) == [.close, .report(.stopped)])
    #expect(session.state == .stopped)
    #expect(session.nextDeadline == nil)
    // Whatever the library reports after the close is ignored.
    #expect(session.handle(.disconnected(Self.lost), now: .seconds(2)) == [])
    #expect(session.handle(.stop(within: .zero), now: .seconds(2)) == [])
  }

  @Test mutating func aStopGivesUpWaitingAtItsLimitAndAnEndStopsTheWait() {
    connect()
    _ = session.handle(.sent(messageID: 1), now: .zero)
    _ = session.handle(.stop(within: .seconds(2)), now: .zero)
    #expect(session.handle(.timer, now: .seconds(1.9)) == [])
    #expect(session.handle(.timer, now: .seconds(2)) == [.close, .report(.stopped)])

    // The connection lost while waiting: nothing more can come, close at the next timer.
    var other = Session(settings: .init(broker: Self.broker), random: Lowest())
    _ = other.handle(.start, now: .zero)
    _ = other.handle(.timer, now: .zero)
    _ = other.handle(.connack(reasonCode: 0, reason: "Success"), now: .zero)
    _ = other.handle(.sent(messageID: 1), now: .zero)
    _ = other.handle(.stop(within: .seconds(2)), now: .zero)
    #expect(other.handle(.disconnected(Self.lost), now: .seconds(0.5)) == [])
    #expect(other.nextDeadline == .seconds(0.5))
    #expect(other.handle(.timer, now: .seconds(0.5)) == [.close, .report(.stopped)])
  }

  /// Stopped before it ever connected (a remote receiver whose subscriber left at once, a
  /// probe whose answer came): it closes at the next timer; a CONNACK arriving meanwhile
  /// changes nothing.
  @Test mutating func aStopWhileConnectingClosesAtTheNextTimer() {
    _ = session.handle(.start, now: .zero)
    _ = session.handle(.timer, now: .zero)
    #expect(session.handle(.stop(within: .seconds(2)), now: Self.ms(10)) == [])
    #expect(session.handle(.connack(reasonCode: 0, reason: "Success"), now: Self.ms(11)) == [])
    #expect(session.handle(.timer, now: Self.ms(12)) == [.close, .report(.stopped)])
  }

  @Test mutating func aClientThatCannotBeSetUpStopsAtOnce() {
    let error = FleetError("cannot use the TLS files", kind: .configuration)
    #expect(
      session.handle(.setupFailed(error), now: .zero) == [
        .close, .report(.disconnected(error, wasConnected: false)), .report(.stopped),
      ])
    #expect(session.nextDeadline == nil)
  }

  @Test mutating func unexpectedEventsAreCountedAndIgnored() {
    session.assertsOnUnexpectedEvents = false
    #expect(session.handle(.connack(reasonCode: 0, reason: "Success"), now: .zero) == [])
    #expect(session.handle(.sent(messageID: 1), now: .zero) == [])
    connect()
    #expect(session.handle(.start, now: .zero) == [])
    #expect(session.unexpectedEvents == 3)
    #expect(session.isConnected)
  }
}
