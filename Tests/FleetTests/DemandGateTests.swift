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

  @Test("non-retained messages and unexpected topics are counted and change nothing")
  func badMessagesAreCounted() {
    var gate = gate()
    _ = gate.handle(.connected, now: .zero)
    #expect(gate.handle(demand("alice", "1", retained: false), now: .zero) == [])
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
    #expect(gate.counters.malformedMessages == 1)
    #expect(gate.counters.unexpectedTopics == 3)
    #expect(gate.demands.isEmpty)
    // A good one after all that still works.
    #expect(
      gate.handle(demand("alice", "1"), now: .zero) == [.subscribeReceiver, status("powering on")])
  }

  @Test(
    "the documented forms only: empty, 1, a JSON request; anything else is invalid, with its reason",
    arguments: [
      ("", DemandPayload.withdrawn),
      ("1", .continuous),
      ("{}", .continuous),
      (" { } \n", .continuous),
      ("{\"consumer\":\"alice\"}", .continuous),
      ("0", .invalid(.notADemand("0"))),
      ("false", .invalid(.notADemand("false"))),
      ("-1", .invalid(.notADemand("-1"))),
      (" ", .invalid(.notADemand(" "))),
      ("1\n", .invalid(.notADemand("1\n"))),
      ("true", .invalid(.notADemand("true"))),
      ("[1]", .invalid(.notADemand("[1]"))),
      ("ok", .invalid(.notADemand("ok"))),
      ("{\"consumer\":5}", .invalid(.badRequest("'consumer' must be a string"))),
      ("{\"consumer\":\"a\"", .invalid(.badRequest("the JSON object is not closed"))),
      ("{} {}", .invalid(.badRequest("text after the JSON object"))),
      (
        "{\"interval\":60,\"accuracy\":20}",
        .request(LocationRequest(interval: .seconds(60), accuracy: 20))
      ),
      (
        "{\"consumer\":\"a\",\"interval\":0.5}",
        .request(LocationRequest(interval: .milliseconds(500)))
      ),
      ("{\"accuracy\":5}", .request(LocationRequest(accuracy: 5))),
      (
        "{\"interval\":0}",
        .invalid(.badRequest("'interval' must be a number of seconds from 0.001 up to a week"))
      ),
      // Below the millisecond the driver counts: refused as 0 is, never rounded to nothing.
      (
        "{\"interval\":0.0001}",
        .invalid(.badRequest("'interval' must be a number of seconds from 0.001 up to a week"))
      ),
      (
        "{\"interval\":1e-9}",
        .invalid(.badRequest("'interval' must be a number of seconds from 0.001 up to a week"))
      ),
      (
        "{\"interval\":\"60\"}",
        .invalid(.badRequest("'interval' must be a number of seconds from 0.001 up to a week"))
      ),
      ("{\"accuracy\":-2}", .invalid(.badRequest("'accuracy' must be a number of metres above 0"))),
      (
        "{\"rate\":1}",
        .invalid(
          .badRequest("unknown member 'rate' (a request may carry consumer, interval and accuracy)")
        )
      ),
    ] as [(String, DemandPayload)])
  func payloadForms(payload: String, expected: DemandPayload) {
    #expect(DemandPayload.parse(Array(payload.utf8), maximumSize: 256) == expected)
  }

  @Test("interval requests are held on the receiver, merged with continuous demands")
  func intervalRequests() {
    var gate = gate()
    _ = gate.handle(.connected, now: .zero)
    let minute = LocationRequest(interval: .seconds(60), accuracy: 20)
    let fine = LocationRequest(interval: .seconds(30), accuracy: 5)
    // Requests only: no continuous subscription, the requests themselves.
    #expect(
      gate.handle(demand("alice", "{\"interval\":60,\"accuracy\":20}"), now: .zero) == [
        .holdRequest(minute)
      ])
    #expect(
      gate.handle(demand("bob", "{\"interval\":30,\"accuracy\":5}"), now: .zero) == [
        .holdRequest(fine)
      ])
    // The same terms again change nothing.
    #expect(gate.handle(demand("carol", "{\"interval\":60,\"accuracy\":20}"), now: .zero) == [])
    // Their fixes are published.
    let fix = testFix(second: 1)
    #expect(gate.handle(.fix(fix, age: .zero), now: .zero) == [tpv(fix)])
    // A continuous demand serves them all: subscribed, then the requests let go.
    #expect(
      gate.handle(demand("dave", "1"), now: .seconds(1)) == [
        .subscribeReceiver, status("powering on"), .endRequest(fine), .endRequest(minute),
      ])
    // It leaves (its Last Will): back to the requests.
    #expect(
      gate.handle(demand("dave", ""), now: .seconds(2)) == [
        .disposeReceiver, status("standby"), .holdRequest(fine), .holdRequest(minute),
      ])
    // A malformed replacement withdraws bob's, with the reason; never taken as continuous.
    #expect(
      gate.handle(demand("bob", "{\"interval\":-1}"), now: .seconds(3)) == [
        .log(
          "demand of bob withdrawn: not a request this bridge serves: 'interval' must be a "
            + "number of seconds from 0.001 up to a week"),
        .endRequest(fine),
      ])
    #expect(gate.handle(demand("alice", ""), now: .seconds(4)) == [], "carol's stands")
    #expect(gate.handle(demand("carol", ""), now: .seconds(4)) == [.endRequest(minute)])
    #expect(gate.handle(.fix(fix, age: .zero), now: .seconds(5)) == [])
    #expect(gate.counters.invalidDemands == 1)
  }

  @Test("changing one interval demand touches its request alone; withdrawn demands leave nothing")
  func oneDemandChangesAlone() {
    var gate = gate()
    _ = gate.handle(.connected, now: .zero)
    let a = LocationRequest(interval: .seconds(300))
    let b = LocationRequest(interval: .seconds(200))
    #expect(gate.handle(demand("a", "{\"interval\":300}"), now: .zero) == [.holdRequest(a)])
    #expect(gate.handle(demand("b", "{\"interval\":200}"), now: .zero) == [.holdRequest(b)])
    // a withdraws: its request ends, b's is not made again (that powered the receiver).
    #expect(gate.handle(demand("a", ""), now: .seconds(1)) == [.endRequest(a)])
    // b changes its terms: the new request first, then the old one ended.
    let c = LocationRequest(interval: .seconds(100))
    #expect(
      gate.handle(demand("b", "{\"interval\":100}"), now: .seconds(2)) == [
        .holdRequest(c), .endRequest(b),
      ])
    #expect(gate.handle(demand("b", ""), now: .seconds(3)) == [.endRequest(c)])

    // 256 consumers with distinct intervals, then all withdrawn: one request made and one
    // ended for each, and nothing kept of them afterwards.
    var actions: [DemandGate.Action] = []
    for index in 1...256 {
      actions += gate.handle(
        demand("c\(index)", "{\"interval\":\(index)}"), now: .seconds(4))
    }
    #expect(actions == (1...256).map { .holdRequest(LocationRequest(interval: .seconds($0))) })
    #expect(gate.requested.count == 256 && gate.terms.count == 256)
    actions = []
    for index in 1...256 {
      actions += gate.handle(demand("c\(index)", ""), now: .seconds(5))
    }
    #expect(actions == (1...256).map { .endRequest(LocationRequest(interval: .seconds($0))) })
    #expect(gate.requested.isEmpty && gate.demands.isEmpty)
    #expect(gate.terms.isEmpty, "the withdrawn consumers' terms are forgotten")
  }

  @Test("binary and oversized payloads are invalid")
  func binaryAndOversized() {
    #expect(DemandPayload.parse([0xFF, 0xFE], maximumSize: 256) == .invalid(.notText))
    #expect(DemandPayload.parse(Array("a\u{0}b".utf8), maximumSize: 256) == .invalid(.notText))
    let megabyte = [UInt8](repeating: 0x80, count: 1 << 20)
    #expect(
      DemandPayload.parse(megabyte, maximumSize: 256)
        == .invalid(.oversized(bytes: 1 << 20, limit: 256)))
    let long = Array(("{\"consumer\":\"" + String(repeating: "x", count: 250) + "\"}").utf8)
    #expect(
      DemandPayload.parse(long, maximumSize: 256)
        == .invalid(.oversized(bytes: long.count, limit: 256)))
    #expect(DemandPayload.parse(long, maximumSize: long.count) == .continuous)
  }

  @Test(
    "a retained demand replaced by an invalid payload withdraws it, says why, and a new gate fed what the broker holds decides the same"
  )
  func anInvalidReplacementWithdraws() {
    let megabyte = [UInt8](repeating: 0x80, count: 1 << 20)
    var gate = gate()
    _ = gate.handle(.connected, now: .zero)
    _ = gate.handle(demand("alice", "1"), now: .zero)
    _ = gate.handle(demand("bob", "1"), now: .zero)
    #expect(
      gate.handle(
        .message(
          topic: "serialgps/board-1/demand/alice", payload: megabyte, retained: true, expiry: nil),
        now: .seconds(1)) == [
          .log(
            "demand of alice withdrawn: the payload is 1048576 bytes, over the 256 a demand may have"
          )
        ])
    #expect(
      gate.handle(demand("bob", "0"), now: .seconds(2)) == [
        .log(
          "demand of bob withdrawn: '0' is not a demand: publish 1, or a JSON request such as "
            + "{\"consumer\":\"name\"} (an empty message withdraws)"),
        .disposeReceiver, status("standby"),
      ])
    #expect(gate.demands.isEmpty)
    #expect(gate.counters.oversizedMessages == 1)
    #expect(gate.counters.invalidDemands == 1)
    #expect(gate.counters.demandsWithdrawn == 2)
    // A bridge started now gets the same retained messages, and decides the same: nothing.
    var fresh = self.gate()
    _ = fresh.handle(.connected, now: .zero)
    #expect(
      fresh.handle(
        .message(
          topic: "serialgps/board-1/demand/alice", payload: megabyte, retained: true, expiry: nil),
        now: .zero) == [
          .log(
            "demand of alice refused: the payload is 1048576 bytes, over the 256 a demand may have")
        ])
    #expect(fresh.handle(demand("bob", "0"), now: .zero).contains(.subscribeReceiver) == false)
    #expect(fresh.subscribed == gate.subscribed)
  }

  @Test(
    "a flood of invalid demands is said five times per ten seconds, the rest counted into the next line"
  )
  func invalidDemandsAreSaidWithinBounds() {
    var gate = gate()
    _ = gate.handle(.connected, now: .zero)
    var logged: [String] = []
    for index in 0..<8 {
      for case .log(let line) in gate.handle(demand("c\(index)", "no"), now: .seconds(1)) {
        logged.append(line)
      }
    }
    #expect(logged.count == 5)
    let next = gate.handle(demand("late", "no"), now: .seconds(11))
    #expect(
      next == [
        .log(
          "demand of late refused: 'no' is not a demand: publish 1, or a JSON request such as "
            + "{\"consumer\":\"name\"} (an empty message withdraws) (and 3 more like it before)")
      ])
    #expect(gate.counters.invalidDemands == 9)
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

  @Test(
    "consumers beyond the limit are said, wait, and are taken as room frees; beyond the waiting list the broker is read again"
  )
  func consumerLimit() {
    var gate = gate(maximumConsumers: 2)
    _ = gate.handle(.connected, now: .zero)
    _ = gate.handle(demand("a", "1"), now: .zero)
    _ = gate.handle(demand("b", "1"), now: .zero)
    func refusal(_ consumer: String, _ kept: String) -> DemandGate.Action {
      .log(
        "demand of \(consumer) not counted yet: 2 consumers' demands are counted already (the "
          + "limit; --mqtt-max-consumers), \(kept)")
    }
    let waits = "it waits and is taken when one leaves"
    #expect(gate.handle(demand("c", "1"), now: .zero) == [refusal("c", waits)])
    #expect(gate.handle(demand("d", "1", expiry: 60), now: .zero) == [refusal("d", waits)])
    #expect(gate.handle(demand("c", "1"), now: .zero) == [], "a waiting consumer's refresh")
    #expect(
      gate.handle(demand("e", "1"), now: .zero) == [
        refusal("e", "2 more wait already; it is read from the broker again when they are taken")
      ])
    #expect(gate.counters.refusedConsumers == 3)
    #expect(gate.demands.keys.sorted() == ["a", "b"])
    #expect(gate.waitingConsumers == ["c", "d"])
    #expect(gate.overflowed)
    #expect(gate.nextDeadline == .seconds(60), "a waiting demand's expiry counts")
    // Room frees: the first waiting is taken, no power change.
    #expect(gate.handle(demand("a", ""), now: .seconds(1)) == [])
    #expect(gate.demands.keys.sorted() == ["b", "c"])
    // A waiting consumer withdraws: nothing else changes.
    #expect(gate.handle(demand("d", ""), now: .seconds(1)) == [])
    #expect(gate.waiting.isEmpty)
    // Room frees with nobody waiting but some stood beyond: the demands are read again.
    #expect(
      gate.handle(demand("b", ""), now: .seconds(2)) == [.subscribe("serialgps/board-1/demand/+")])
    #expect(gate.counters.demandRereads == 1)
    #expect(!gate.overflowed)
    // The broker sends what it holds: c (counted already) and e, taken now.
    #expect(gate.handle(demand("c", "1"), now: .seconds(2)) == [])
    #expect(gate.handle(demand("e", "1"), now: .seconds(2)) == [])
    #expect(gate.demands.keys.sorted() == ["c", "e"])
    #expect(gate.counters.consumersTakenLater == 1)
    #expect(gate.counters.demandsAccepted == 4)
    // Whoever is counted, the receiver is wanted while any demand stands.
    #expect(gate.subscribed)
    #expect(gate.handle(demand("c", ""), now: .seconds(3)) == [])
    #expect(
      gate.handle(demand("e", ""), now: .seconds(3)) == [.disposeReceiver, status("standby")])
  }

  @Test("5 000 retained demands, the first 256 withdrawn: the other 4 744 keep the receiver wanted")
  func fiveThousandDemands() {
    var gate = gate()
    _ = gate.handle(.connected, now: .zero)
    // What the broker holds, in the order it sends it.
    var held = (0..<5000).map { "c\($0)" }
    var rereads = 0
    func handle(_ event: DemandGate.Event) {
      // The broker answers a subscription with everything it holds on the filter.
      for action in gate.handle(event, now: .zero)
      where action == .subscribe("serialgps/board-1/demand/+") {
        rereads += 1
        for consumer in held { handle(demand(consumer, "1")) }
      }
    }
    for consumer in held { handle(demand(consumer, "1")) }
    #expect(gate.demands.count == 256)
    #expect(gate.waiting.count == 256)
    #expect(gate.subscribed)
    for consumer in held.prefix(256) { handle(demand(consumer, "")) }
    held.removeFirst(256)
    #expect(gate.subscribed)
    #expect(gate.demands.count == 256)
    // Withdrawn until 100 stand: every one of them counted in the end.
    while held.count > 100 {
      let consumer = held.removeFirst()
      handle(demand(consumer, ""))
      #expect(gate.subscribed, "\(held.count) stand")
    }
    #expect(Set(gate.demands.keys) == Set(held))
    #expect(rereads >= 1 && rereads <= 20, "\(rereads) re-reads")
  }

  @Test("a waiting demand that expires is forgotten; one counted that expires makes room")
  func waitingDemandsExpire() {
    var gate = gate(maximumConsumers: 1)
    _ = gate.handle(.connected, now: .zero)
    _ = gate.handle(demand("a", "1", expiry: 100), now: .zero)
    _ = gate.handle(demand("b", "1", expiry: 10), now: .zero)
    #expect(gate.nextDeadline == .seconds(10))
    #expect(gate.handle(.deadline, now: .seconds(10)) == [])
    #expect(gate.waiting.isEmpty)
    _ = gate.handle(demand("c", "1", expiry: 190), now: .seconds(10))
    #expect(gate.waitingConsumers == ["c"])
    #expect(gate.handle(.deadline, now: .seconds(100)) == [])
    #expect(gate.demands.keys.sorted() == ["c"])
    #expect(gate.counters.demandsExpired == 2)
    #expect(gate.handle(.deadline, now: .seconds(200)) == [.disposeReceiver, status("standby")])
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
