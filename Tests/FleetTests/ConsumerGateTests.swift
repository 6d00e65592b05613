import GPSDProtocol
import NMEA
import SerialGPS
import Testing

@testable import Fleet

@Suite("ConsumerGate: a remote receiver's decisions, as exact action lists")
struct ConsumerGateTests {
  let topics = try! FleetTopics(id: "board-1")

  func gate(expiry: Duration? = .seconds(600)) -> ConsumerGate {
    ConsumerGate(topics: topics, consumer: "alice", demandExpiry: expiry)
  }

  var demand: ConsumerGate.Action {
    .publish(
      MQTTPublication(
        topic: "serialgps/board-1/demand/alice", payload: Array("{\"consumer\":\"alice\"}".utf8),
        qos: 1, retain: true, expiry: 600))
  }

  var withdrawal: ConsumerGate.Action {
    .publish(
      MQTTPublication(
        topic: "serialgps/board-1/demand/alice", payload: [], qos: 1, retain: true, expiry: nil))
  }

  let subscriptions: [ConsumerGate.Action] = [
    .subscribe("serialgps/board-1/status"), .subscribe("serialgps/board-1/tpv"),
    .subscribe("serialgps/board-1/sky"),
  ]

  @Test("the first subscription connects and demands; the last withdraws and disconnects")
  func firstAndLast() {
    var gate = gate()
    #expect(gate.handle(.attach, now: .zero) == [.startClient])
    #expect(gate.handle(.attach, now: .zero) == [], "already connecting")
    #expect(gate.handle(.connected, now: .seconds(1)) == subscriptions + [demand])
    #expect(gate.handle(.detach, now: .seconds(2)) == [])
    #expect(gate.handle(.detach, now: .seconds(3)) == [withdrawal, .stopClient])
    #expect(gate.handle(.detach, now: .seconds(3)) == [], "unbalanced: ignored")
    #expect(gate.handle(.clientStopped, now: .seconds(3)) == [])
    // A later subscription connects again.
    #expect(gate.handle(.attach, now: .seconds(4)) == [.startClient])
    #expect(gate.counters.demandsPublished == 1)
    #expect(gate.counters.withdrawals == 1)
  }

  @Test("a demand with terms carries them, as the bridge reads them")
  func demandWithTerms() throws {
    let request = LocationRequest(interval: .seconds(60), accuracy: 20)
    var gate = ConsumerGate(
      topics: topics, consumer: "alice", demandExpiry: nil, request: request)
    _ = gate.handle(.attach, now: .zero)
    let actions = gate.handle(.connected, now: .zero)
    guard case .publish(let publication) = actions.last else {
      Issue.record("no demand: \(actions)")
      return
    }
    #expect(publication.topic == "serialgps/board-1/demand/alice")
    #expect(DemandPayload.parse(publication.payload, maximumSize: 256) == .request(request))
  }

  @Test("a subscription that arrives while the last one's client stops gets a new client")
  func attachWhileStopping() {
    var gate = gate()
    _ = gate.handle(.attach, now: .zero)
    _ = gate.handle(.connected, now: .zero)
    _ = gate.handle(.detach, now: .zero)
    #expect(gate.handle(.attach, now: .zero) == [])
    #expect(gate.handle(.clientStopped, now: .zero) == [.startClient])
    #expect(gate.handle(.connected, now: .zero) == subscriptions + [demand])
  }

  @Test("broker lost: subscribers are told why; back: told so, and the demand goes out again")
  func reconnect() {
    var gate = gate()
    _ = gate.handle(.attach, now: .zero)
    _ = gate.handle(.connected, now: .zero)
    let reason = FleetError(
      "lost mqtt://127.0.0.1:1883: the connection was lost", kind: .unreachable)
    #expect(
      gate.handle(.connectionLost(reason, wasConnected: true), now: .seconds(1)) == [
        .deliverStatus(.disconnected(reason: FailureReason(.unreachable, reason.description)))
      ])
    #expect(gate.nextDeadline == nil)
    #expect(
      gate.handle(.connected, now: .seconds(2)) == subscriptions + [
        .deliverStatus(.reconnected), demand,
      ])
  }

  @Test("the demand is published again at half its expiry while it stands")
  func refresh() {
    var gate = gate()
    _ = gate.handle(.attach, now: .zero)
    _ = gate.handle(.connected, now: .seconds(10))
    #expect(gate.nextDeadline == .seconds(310))
    #expect(gate.handle(.deadline, now: .seconds(309)) == [])
    #expect(gate.handle(.deadline, now: .seconds(310)) == [demand])
    #expect(gate.nextDeadline == .seconds(610))

    var forever = self.gate(expiry: nil)
    _ = forever.handle(.attach, now: .zero)
    _ = forever.handle(.connected, now: .zero)
    #expect(forever.nextDeadline == nil)
  }

  @Test("reports become fixes with the latest SKY's counts; bad ones are counted")
  func reports() {
    var gate = gate()
    _ = gate.handle(.attach, now: .zero)
    _ = gate.handle(.connected, now: .zero)
    let fix = testFix(second: 5)
    var sky = JSONWriter()
    let view = SatelliteView(
      satellites: [
        Satellite(
          constellation: .gps, prn: 3, svid: 3, elevation: 40, azimuth: 100, snr: 40, used: true),
        Satellite(
          constellation: .gps, prn: 7, svid: 7, elevation: 10, azimuth: 200, snr: 30, used: false),
      ], hdop: 0.9)
    sky.sky(view, time: fix.timestamp)
    let skyActions = gate.handle(
      .message(topic: "serialgps/board-1/sky", payload: sky.bytes, retained: false), now: .zero)
    var expectedView = view
    expectedView.time = fix.time
    #expect(skyActions == [.deliverSatellites(expectedView)])

    var expected = fix
    expected.satellitesUsed = 1
    expected.hdop = 0.9
    // The TPV does not carry satellitesUsed: the SKY before it does.
    var read = fix
    read.satellitesUsed = nil
    #expect(
      gate.handle(
        .message(topic: "serialgps/board-1/tpv", payload: tpvBytes(read), retained: true),
        now: .zero)
        == [.deliverFix(expected, retained: true)])
    #expect(
      gate.handle(
        .message(topic: "serialgps/board-1/status", payload: Array("offline".utf8), retained: true),
        now: .zero) == [
          .deliverStatus(
            .disconnected(
              reason: FailureReason(
                .unreachable,
                "the board publishing board-1 is offline (stopped, or lost power or network)"))
          )
        ])
    #expect(
      gate.handle(
        .message(topic: "serialgps/board-1/tpv", payload: Array("{".utf8), retained: false),
        now: .zero)
        == [])
    #expect(
      gate.handle(
        .message(
          topic: "serialgps/board-1/status", payload: Array("on fire".utf8), retained: false),
        now: .zero)
        == [])
    #expect(
      gate.handle(
        .message(topic: "serialgps/board-2/tpv", payload: tpvBytes(fix), retained: false),
        now: .zero)
        == [])
    #expect(
      gate.handle(.message(topic: "serialgps/board-1/tpv", payload: [], retained: true), now: .zero)
        == [],
      "a deleted retained fix")
    #expect(gate.counters.malformedReports == 2)
    #expect(gate.counters.unexpectedTopics == 1)
    #expect(gate.counters.fixes == 1)
  }

  @Test(
    "stop withdraws and stops the client, then finishes; before any connection it finishes at once")
  func stop() {
    var gate = gate()
    _ = gate.handle(.attach, now: .zero)
    _ = gate.handle(.connected, now: .zero)
    #expect(gate.handle(.stop, now: .zero) == [withdrawal, .stopClient])
    #expect(gate.handle(.attach, now: .zero) == [], "nothing starts once stopped")
    #expect(gate.handle(.clientStopped, now: .zero) == [.finished])

    var idle = self.gate()
    #expect(idle.handle(.stop, now: .zero) == [.finished])
  }
}
