import GPSDProtocol
import NMEA
import SerialGPS
import Testing

@testable import Fleet

/// A 3D fix at 12:00:`second`.
func testFix(second: UInt8) -> Fix {
  var fix = Fix()
  fix.mode = .threeD
  fix.date = UTCDate(year: 2026, month: 11, day: 30)
  fix.time = UTCTime(hour: 12, minute: 0, second: second)
  fix.position = Position(
    latitude: Coordinate(
      degrees: 47, scaledMinutes: 2_261_418, fractionDigits: 5, isNegative: false),
    longitude: Coordinate(
      degrees: 8, scaledMinutes: 3_250_206, fractionDigits: 5, isNegative: false))
  fix.altitudeMSL = 408.3
  fix.satellitesUsed = 8
  return fix
}

func tpvBytes(_ fix: Fix) -> [UInt8] {
  var writer = JSONWriter()
  writer.tpv(fix)
  return writer.bytes
}

@Suite("DemandGate: the bridge's decisions, as exact action lists")
struct DemandGateTests {
  let topics = try! FleetTopics(id: "board-1")

  func gate(
    _ gating: FleetBridge.Gating = .demand, queue: Int = 1, maximumConsumers: Int = 256
  ) -> DemandGate {
    DemandGate(
      topics: topics,
      settings: .init(
        gating: gating, replayExpiry: .seconds(10), outageQueueLimit: queue,
        maximumConsumers: maximumConsumers))
  }

  func status(_ text: String) -> DemandGate.Action {
    .publish(
      MQTTPublication(
        topic: "serialgps/board-1/status", payload: Array(text.utf8), qos: 1, retain: true,
        expiry: nil, carriesLayoutVersion: true))
  }

  func demand(
    _ consumer: String, _ payload: String = "{}", retained: Bool = true, expiry: UInt32? = nil
  )
    -> DemandGate.Event
  {
    .message(
      topic: "serialgps/board-1/demand/\(consumer)", payload: Array(payload.utf8),
      retained: retained, expiry: expiry)
  }

  func tpv(_ fix: Fix, qos: Int32 = 0, retain: Bool = true, expiry: UInt32? = 10)
    -> DemandGate.Action
  {
    .publish(
      MQTTPublication(
        topic: "serialgps/board-1/tpv", payload: tpvBytes(fix), qos: qos, retain: retain,
        expiry: expiry))
  }

  @Test(
    "a demand subscribes, fixes are published retained with the replay expiry, the withdrawal disposes"
  )
  func demandOnAndOff() {
    var gate = gate()
    #expect(gate.handle(.start, now: .zero) == [])
    #expect(
      gate.handle(.connected, now: .zero) == [
        .subscribe("serialgps/board-1/demand/+"), status("standby"),
      ])
    #expect(
      gate.handle(demand("alice"), now: .seconds(1)) == [.subscribeReceiver, status("powering on")])
    #expect(
      gate.handle(.receiverStatus(.poweredOff), now: .seconds(1)) == [], "a replayed old status")
    #expect(gate.handle(.receiverStatus(.streaming), now: .seconds(1)) == [status("streaming")])
    #expect(gate.handle(.receiverStatus(.streaming), now: .seconds(1)) == [])
    #expect(
      gate.handle(.fix(testFix(second: 2), age: .zero), now: .seconds(2)) == [
        tpv(testFix(second: 2))
      ])
    // A replayed fix keeps the expiry it had left; one past it is not published again.
    #expect(
      gate.handle(.fix(testFix(second: 2), age: .milliseconds(3500)), now: .seconds(2)) == [
        tpv(testFix(second: 2), expiry: 7)
      ])
    #expect(gate.handle(.fix(testFix(second: 2), age: .seconds(10)), now: .seconds(2)) == [])
    #expect(
      gate.handle(demand("alice", ""), now: .seconds(3)) == [.disposeReceiver, status("standby")])
    // A fix of the disposed subscription still in flight is dropped.
    #expect(gate.handle(.fix(testFix(second: 3), age: .zero), now: .seconds(3)) == [])
    #expect(gate.counters.demandsAccepted == 1)
    #expect(gate.counters.demandsWithdrawn == 1)
    #expect(gate.counters.fixesPublished == 2)
  }

  @Test("two consumers: the receiver stays subscribed until both have withdrawn")
  func twoConsumers() {
    var gate = gate()
    _ = gate.handle(.connected, now: .zero)
    #expect(
      gate.handle(demand("alice"), now: .zero) == [.subscribeReceiver, status("powering on")])
    #expect(gate.handle(demand("bob"), now: .zero) == [])
    #expect(gate.handle(demand("alice"), now: .zero) == [], "a refresh is not a second demand")
    #expect(gate.handle(demand("alice", ""), now: .zero) == [])
    #expect(gate.handle(demand("carol", ""), now: .zero) == [], "withdrawing what was never there")
    #expect(gate.handle(demand("bob", ""), now: .zero) == [.disposeReceiver, status("standby")])
    #expect(gate.counters.demandsAccepted == 2)
    #expect(gate.counters.demandsWithdrawn == 2)
  }

  @Test("losing the broker ends the remote demands; on reconnect the retained demands restore them")
  func brokerLostAndBack() {
    var gate = gate()
    _ = gate.handle(.connected, now: .zero)
    _ = gate.handle(demand("alice"), now: .zero)
    _ = gate.handle(demand("bob"), now: .zero)
    #expect(gate.handle(.connectionLost, now: .seconds(5)) == [.disposeReceiver])
    #expect(gate.counters.demandsLost == 2)
    #expect(gate.demands.isEmpty)
    #expect(
      gate.handle(.connected, now: .seconds(6)) == [
        .subscribe("serialgps/board-1/demand/+"), status("standby"),
      ])
    #expect(
      gate.handle(demand("alice"), now: .seconds(6)) == [.subscribeReceiver, status("powering on")])
  }

  @Test("oversized, non-retained, non-text and unexpected messages are counted and change nothing")
  func badMessagesAreCounted() {
    var gate = gate()
    _ = gate.handle(.connected, now: .zero)
    #expect(gate.handle(demand("alice", String(repeating: "x", count: 257)), now: .zero) == [])
    #expect(gate.handle(demand("alice", "1", retained: false), now: .zero) == [])
    #expect(gate.handle(demand("alice", "a\u{0}b"), now: .zero) == [])
    #expect(
      gate.handle(
        .message(
          topic: "serialgps/board-1/demand/alice", payload: [0xFF, 0xFE], retained: true,
          expiry: nil),
        now: .zero) == [])
    #expect(
      gate.handle(
        .message(
          topic: "serialgps/board-2/demand/alice", payload: [0x31], retained: true, expiry: nil),
        now: .zero) == [])
    #expect(
      gate.handle(
        .message(topic: "serialgps/board-1/tpv", payload: [0x31], retained: true, expiry: nil),
        now: .zero) == [])
    #expect(
      gate.handle(
        .message(
          topic: "serialgps/board-1/demand/a+b", payload: [0x31], retained: true, expiry: nil),
        now: .zero) == [])
    #expect(gate.counters.oversizedMessages == 1)
    #expect(gate.counters.malformedMessages == 3)
    #expect(gate.counters.unexpectedTopics == 3)
    #expect(gate.demands.isEmpty)
    // A good one after all that still works.
    #expect(
      gate.handle(demand("alice", String(repeating: "x", count: 256)), now: .zero) == [
        .subscribeReceiver, status("powering on"),
      ])
  }

  @Test("a demand with a message expiry ends when it expires unless refreshed")
  func demandExpiry() {
    var gate = gate()
    _ = gate.handle(.connected, now: .zero)
    _ = gate.handle(demand("alice", expiry: 60), now: .zero)
    _ = gate.handle(demand("bob"), now: .zero)
    #expect(gate.nextDeadline == .seconds(60))
    _ = gate.handle(demand("alice", expiry: 60), now: .seconds(30))  // refreshed
    #expect(gate.nextDeadline == .seconds(90))
    #expect(gate.handle(.deadline, now: .seconds(60)) == [])
    _ = gate.handle(demand("bob", ""), now: .seconds(61))
    #expect(gate.handle(.deadline, now: .seconds(90)) == [.disposeReceiver, status("standby")])
    #expect(gate.counters.demandsExpired == 1)
    #expect(gate.nextDeadline == nil)
  }

  @Test("consumers beyond the limit are refused and counted")
  func consumerLimit() {
    var gate = gate(maximumConsumers: 2)
    _ = gate.handle(.connected, now: .zero)
    _ = gate.handle(demand("a"), now: .zero)
    _ = gate.handle(demand("b"), now: .zero)
    #expect(gate.handle(demand("c"), now: .zero) == [])
    #expect(gate.counters.refusedConsumers == 1)
    #expect(gate.demands.keys.sorted() == ["a", "b"])
  }

  @Test(
    "always: subscribed from the start; during an outage fixes queue, oldest dropped; on reconnect they go out in order with QoS 1"
  )
  func alwaysWithOutageQueue() {
    var gate = gate(.always, queue: 3)
    #expect(gate.handle(.start, now: .zero) == [.subscribeReceiver])
    #expect(
      gate.handle(.connected, now: .zero) == [
        .subscribe("serialgps/board-1/demand/+"), status("powering on"),
      ])
    _ = gate.handle(.receiverStatus(.streaming), now: .zero)
    #expect(gate.handle(.connectionLost, now: .seconds(1)) == [], "always stays subscribed")
    for second in UInt8(1)...5 {
      #expect(
        gate.handle(.fix(testFix(second: second), age: .zero), now: .seconds(Int64(second))) == [])
    }
    #expect(gate.queuedFixes == 3)
    #expect(gate.counters.fixesDroppedFromQueue == 2)
    // Back at 7.5 s: fixes 3, 4, 5; the newest (2.5 s old) retained for the rest of its 10 s.
    #expect(
      gate.handle(.connected, now: .milliseconds(7500)) == [
        .subscribe("serialgps/board-1/demand/+"), status("streaming"),
        tpv(testFix(second: 3), qos: 1, retain: false, expiry: nil),
        tpv(testFix(second: 4), qos: 1, retain: false, expiry: nil),
        tpv(testFix(second: 5), qos: 1, retain: true, expiry: 8),
      ])
    #expect(gate.counters.fixesQueued == 3)
    #expect(gate.queuedFixes == 0)
    #expect(
      gate.handle(.fix(testFix(second: 8), age: .zero), now: .seconds(8)) == [
        tpv(testFix(second: 8))
      ])
  }

  @Test("a queued fix older than the replay expiry goes out but is not retained")
  func staleQueuedFixIsNotRetained() {
    var gate = gate(.always)
    _ = gate.handle(.start, now: .zero)
    _ = gate.handle(.fix(testFix(second: 1), age: .zero), now: .seconds(1))
    _ = gate.handle(.fix(testFix(second: 2), age: .zero), now: .seconds(2))
    #expect(gate.counters.fixesDroppedFromQueue == 1, "by default only the latest is kept")
    #expect(
      gate.handle(.connected, now: .seconds(30)) == [
        .subscribe("serialgps/board-1/demand/+"), status("powering on"),
        tpv(testFix(second: 2), qos: 1, retain: false, expiry: nil),
      ])
  }

  @Test("stop disposes, says its final status and disconnects; then nothing more happens")
  func stop() {
    var gate = gate()
    _ = gate.handle(.connected, now: .zero)
    _ = gate.handle(demand("alice"), now: .zero)
    #expect(
      gate.handle(.stop(final: .offline), now: .zero) == [
        .disposeReceiver, status("offline"), .disconnect,
      ])
    #expect(gate.handle(demand("bob"), now: .zero) == [])
    #expect(gate.handle(.connected, now: .zero) == [])

    var unreachable = self.gate()
    #expect(unreachable.handle(.stop(final: .disconnected), now: .zero) == [.disconnect])
  }

  @Test("expiries are whole seconds rounded up, at least one")
  func expirySeconds() {
    #expect(DemandGate.seconds(.seconds(10)) == 10)
    #expect(DemandGate.seconds(.milliseconds(2500)) == 3)
    #expect(DemandGate.seconds(.milliseconds(1)) == 1)
    #expect(DemandGate.seconds(.zero) == 1)
  }
}
