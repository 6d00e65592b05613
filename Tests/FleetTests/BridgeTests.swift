import Chipsets
import Fleet
import Foundation
import GPSDProtocol
import NMEA
import POSIX
import Replay
import SerialGPS
import Simulator
import Testing

// The bridge and remote receivers in this process against a real mosquitto. The receiver is a
// u-blox replay on a manual clock: epochs come due only when a test advances it, and its power
// commands are what the simulated chip received. The broker runs in real time.

/// A u-blox M8 on USB replayed in-process, on a manual clock.
func makeReceiver(
  clock: ManualClock, linger: Duration = .seconds(5), fixture: String = "ublox-m8-drive"
) throws -> (GPSReceiver, ReplayConnector) {
  let replay = ReplayConnector(
    recording: try Recording.loadCached(path: fixturesDirectory + "/\(fixture).nmea"),
    configuration: .init(profile: .ublox(.m8), loops: true, interface: .usb), clock: clock)
  var options = GPSReceiver.Options()
  options.linger = linger
  options.acknowledgementTimeout = .seconds(5)
  let receiver = GPSReceiver(connector: replay, options: options, clock: clock)
  return (receiver, replay)
}

/// The u-blox power commands the chip received (`UBX-CFG-RST` GNSS start 0x09, stop 0x08).
func powerCommands(_ replay: ReplayConnector) -> [String] {
  replay.receivedCommands.compactMap { command in
    if case .ubxReset(_, let mode) = command {
      return mode == 0x09 ? "start" : mode == 0x08 ? "stop" : "reset \(mode)"
    }
    return nil
  }
}

func brokerConfiguration(_ url: String, reconnectDelay: Duration = .milliseconds(50))
  throws -> BrokerConfiguration
{
  var broker = try BrokerConfiguration(url: url)
  broker.reconnectDelay = reconnectDelay
  broker.maximumReconnectDelay = max(reconnectDelay, .milliseconds(200))
  broker.connectTimeout = .seconds(5)
  return broker
}

func bridgeConfiguration(
  _ broker: TestBroker, gating: FleetBridge.Gating = .demand,
  reconnectDelay: Duration = .milliseconds(50)
) throws -> FleetBridge.Configuration {
  var configuration = FleetBridge.Configuration(
    broker: try brokerConfiguration(broker.url, reconnectDelay: reconnectDelay))
  configuration.gating = gating
  return configuration
}

func remoteReceiver(_ broker: TestBroker, id: String, consumer: String) throws -> RemoteReceiver {
  var options = RemoteReceiver.Options()
  options.consumer = consumer
  return try RemoteReceiver(
    broker: brokerConfiguration(broker.url), id: id, options: options)
}

/// A subscription's events, collected as they come.
final class Collector: @unchecked Sendable {
  private let events = Locked<[ReceiverEvent]>([])
  private var task: Task<Void, Never>?

  init(_ sequence: ReceiverEvents) {
    task = Task { [events] in
      for await event in sequence { events.withLock { $0.append(event) } }
    }
  }

  var all: [ReceiverEvent] { events.withLock { $0 } }
  var fixes: [FixUpdate] {
    all.compactMap { if case .fix(let update) = $0 { return update } else { return nil } }
  }
  var statuses: [ReceiverStatus] {
    all.compactMap { if case .status(let status) = $0 { return status } else { return nil } }
  }

  func stop() { task?.cancel() }
}

@Suite(
  "fleet bridge against a real mosquitto", .serialized,
  .enabled(if: Mosquitto.shouldRun, "\(Mosquitto.missing)"))
struct BridgeTests {
  @Test(
    "a retained demand powers the receiver on; fixes are published; its withdrawal powers it off after the linger"
  )
  func demandOnAndOff() async throws {
    let broker = try await TestBroker()
    let clock = ManualClock()
    let (receiver, replay) = try makeReceiver(clock: clock)
    let watcher = try Subscriber(port: broker.port, "serialgps/board-1/#")
    await watcher.ready(port: broker.port)
    let bridge = try FleetBridge(configuration: bridgeConfiguration(broker))
    try bridge.publish(receiver, as: "board-1")
    #expect(await eventually { watcher.payloads(on: "serialgps/board-1/status") == ["standby"] })
    #expect(powerCommands(replay) == [])

    try await publish(
      port: broker.port, topic: "serialgps/board-1/demand/alice", payload: "1", retain: true)
    #expect(await eventually { powerCommands(replay) == ["start"] })
    clock.advance(by: .seconds(3))
    #expect(await eventually { watcher.payloads(on: "serialgps/board-1/tpv").count >= 3 })
    #expect(
      watcher.payloads(on: "serialgps/board-1/status").prefix(3) == [
        "standby", "powering on", "streaming",
      ])
    // The TPV reports are the encoder's, byte for byte, of the fixes the receiver decoded.
    let recording = try Recording.loadCached(path: fixturesDirectory + "/ublox-m8-drive.nmea")
    var decoder = NMEADecoder()
    var expected: [String] = []
    decoder.decode(recording.body) { event in
      guard case .epoch(let epoch) = event, expected.count < 3 else { return }
      var writer = JSONWriter()
      writer.tpv(epoch.fix)
      expected.append(writer.text)
    }
    #expect(Array(watcher.payloads(on: "serialgps/board-1/tpv").prefix(3)) == expected)

    try await publish(
      port: broker.port, topic: "serialgps/board-1/demand/alice", payload: nil, retain: true)
    #expect(await eventually { watcher.payloads(on: "serialgps/board-1/status").last == "standby" })
    // The receiver lingers on the manual clock: no standby until it has passed.
    #expect(await eventually { clock.sleeperCount >= 2 })
    #expect(powerCommands(replay) == ["start"])
    clock.advance(by: .seconds(5))
    #expect(await eventually { powerCommands(replay) == ["start", "stop"] })
    let statistics = try #require(bridge.statistics(for: "board-1"))
    #expect(statistics.demandsAccepted == 1)
    #expect(statistics.demandsWithdrawn == 1)
    #expect(statistics.fixesPublished >= 3)
    await bridge.shutdown()
    #expect(await eventually { watcher.payloads(on: "serialgps/board-1/status").last == "offline" })
    await receiver.shutdown()
  }

  @Test(
    "two remote receivers: both get the fixes; the receiver stays on until the second one leaves")
  func twoConsumers() async throws {
    let broker = try await TestBroker()
    let clock = ManualClock()
    let (receiver, replay) = try makeReceiver(clock: clock)
    let bridge = try FleetBridge(configuration: bridgeConfiguration(broker))
    try bridge.publish(receiver, as: "board-1")
    let alice = try remoteReceiver(broker, id: "board-1", consumer: "alice")
    let bob = try remoteReceiver(broker, id: "board-1", consumer: "bob")
    let aliceEvents = Collector(alice.subscribe())
    let bobEvents = Collector(bob.subscribe())
    #expect(await eventually { bridge.statistics(for: "board-1")?.demands == 2 })
    #expect(await eventually { powerCommands(replay) == ["start"] })
    clock.advance(by: .seconds(3))
    #expect(await eventually { aliceEvents.fixes.count >= 3 && bobEvents.fixes.count >= 3 })
    #expect(aliceEvents.fixes.map(\.fix.time) == bobEvents.fixes.map(\.fix.time))
    #expect(aliceEvents.statuses.contains(.streaming))

    // Alice leaves (her demand withdrawn, acknowledged): bob still wants it.
    aliceEvents.stop()
    #expect(await eventually { bridge.statistics(for: "board-1")?.demands == 1 })
    #expect(await eventually { alice.statistics.withdrawals == 1 })
    #expect(await eventually { clock.sleeperCount == 1 }, "only the replay sleeps: no linger")
    clock.advance(by: .seconds(10))
    #expect(await eventually { bobEvents.fixes.count >= 13 })
    #expect(powerCommands(replay) == ["start"])

    bobEvents.stop()
    #expect(await eventually { bridge.statistics(for: "board-1")?.demands == 0 })
    #expect(await eventually { clock.sleeperCount >= 2 })
    clock.advance(by: .seconds(5))
    #expect(await eventually { powerCommands(replay) == ["start", "stop"] })
    await alice.shutdown()
    await bob.shutdown()
    await bridge.shutdown()
    await receiver.shutdown()
  }

  @Test(
    "the broker killed and restarted mid-stream: both sides reconnect; the retained demand restores the stream without a power cycle"
  )
  func brokerRestart() async throws {
    let broker = try await TestBroker()
    let clock = ManualClock()
    let (receiver, replay) = try makeReceiver(clock: clock, linger: .seconds(30))
    let bridge = try FleetBridge(configuration: bridgeConfiguration(broker))
    try bridge.publish(receiver, as: "board-1")
    let consumer = try remoteReceiver(broker, id: "board-1", consumer: "alice")
    let events = Collector(consumer.subscribe())
    #expect(await eventually { powerCommands(replay) == ["start"] })
    // (Until the fix builder has learned the cycle's last sentence, an epoch is complete only
    // when the next one starts: N seconds give at least N - 1 fixes.)
    clock.advance(by: .seconds(3))
    #expect(await eventually { events.fixes.count >= 2 })

    await broker.kill()
    #expect(
      await eventually {
        events.statuses.contains { if case .disconnected = $0 { true } else { false } }
      })
    // The bridge no longer hears its consumers: the demand ends, the receiver lingers.
    #expect(await eventually { bridge.statistics(for: "board-1")?.subscribed == false })
    #expect(bridge.statistics(for: "board-1")?.demandsLost == 1)

    try await broker.start()
    #expect(await eventually { events.statuses.contains(.reconnected) })
    #expect(await eventually { bridge.statistics(for: "board-1")?.subscribed == true })
    let before = events.fixes.count
    clock.advance(by: .seconds(2))
    #expect(await eventually { events.fixes.count >= before + 2 })
    #expect(powerCommands(replay) == ["start"], "back within the linger: no power cycle")
    #expect(bridge.statistics(for: "board-1")?.connections == 2)
    #expect(consumer.statistics.connections == 2)
    events.stop()
    await consumer.shutdown()
    await bridge.shutdown()
    await receiver.shutdown()
  }

  @Test(
    "during an outage fixes queue (oldest dropped, counted) and go out in order with QoS 1 on reconnect"
  )
  func outageQueue() async throws {
    // A persistent watcher session on a broker that keeps sessions across a clean restart, so
    // that the QoS 1 fixes reach it whoever reconnects first after the outage.
    let broker = try await TestBroker(persistence: true)
    let watcher = try Subscriber(
      port: broker.port, "serialgps/board-1/tpv",
      extra: ["-c", "-x", "300", "-i", "fleet-test-watcher"])
    await watcher.ready(port: broker.port)
    let clock = ManualClock()
    let (receiver, _) = try makeReceiver(clock: clock)
    var configuration = try bridgeConfiguration(broker, gating: .always)
    configuration.outageQueueLimit = 5
    let bridge = try FleetBridge(configuration: configuration)
    try bridge.publish(receiver, as: "board-1")
    #expect(await eventually { bridge.statistics(for: "board-1")?.connected == true })
    clock.advance(by: .seconds(3))
    // Every live fix has reached the watcher before the broker goes (QoS 0 in flight would be
    // lost with it), and none is still on its way from the receiver: the same count twice,
    // half a second apart.
    var live = 0
    for _ in 0..<40 {
      let published = bridge.statistics(for: "board-1")?.fixesPublished ?? 0
      try await Task.sleep(for: .milliseconds(500))
      if published >= 2 && published == bridge.statistics(for: "board-1")?.fixesPublished
        && published == self.published(watcher).count
      {
        live = published
        break
      }
    }
    #expect(live >= 2)

    await broker.stop()
    #expect(await eventually { bridge.statistics(for: "board-1")?.connected == false })
    clock.advance(by: .seconds(8))  // eight more epochs while the broker is away
    #expect(
      await eventually { (bridge.statistics(for: "board-1")?.fixesDroppedFromQueue ?? 0) >= 3 })
    try await Task.sleep(for: .milliseconds(500))
    let dropped = bridge.statistics(for: "board-1")?.fixesDroppedFromQueue ?? 0

    try await broker.start()
    #expect(await eventually { self.published(watcher).count >= live + 5 })
    try await Task.sleep(for: .milliseconds(200))
    let seconds = self.published(watcher).compactMap { payload -> Int? in
      guard case .tpv(let fix, _)? = GPSDReport(json: Array(payload.utf8)) else { return nil }
      return fix.time.map { Int($0.second) }
    }
    // The live ones from the fixture's first epoch (07:41:05), then, after those dropped, the
    // last five epochs of the outage, in order.
    #expect(
      seconds
        == Array(5..<(5 + live)) + Array((5 + live + dropped)..<(5 + live + dropped + 5)))
    #expect(bridge.statistics(for: "board-1")?.fixesQueued == 5)
    await bridge.shutdown()
    await receiver.shutdown()
  }

  /// The TPVs a watcher got as they were published (the copy of the retained one it gets
  /// again when it subscribes again on reconnecting is left out).
  func published(_ watcher: Subscriber) -> [String] {
    watcher.messages.filter { $0.topic == "serialgps/board-1/tpv" && !$0.retained }.map(\.payload)
  }

  @Test("the retained fix expires with the replay expiry: a late consumer does not get a stale one")
  func retainedFixExpiry() async throws {
    let broker = try await TestBroker()
    let clock = ManualClock()
    let (receiver, _) = try makeReceiver(clock: clock)
    var configuration = try bridgeConfiguration(broker)
    // Long enough for the newcomer below to come in time on a loaded machine (under
    // ThreadSanitizer, 2 s were once not), short enough to wait out.
    configuration.replayExpiry = .seconds(8)
    let bridge = try FleetBridge(configuration: configuration)
    try bridge.publish(receiver, as: "board-1")
    let consumer = try remoteReceiver(broker, id: "board-1", consumer: "alice")
    let events = Collector(consumer.subscribe())
    #expect(await eventually { bridge.statistics(for: "board-1")?.subscribed == true })
    clock.advance(by: .seconds(3))
    #expect(await eventually { events.fixes.count >= 2 })
    #expect(events.fixes.allSatisfy { !$0.isReplay })
    events.stop()
    await consumer.shutdown()

    // At once, a newcomer gets the broker's retained fix, marked as a replay.
    let early = try Subscriber(port: broker.port, "serialgps/board-1/tpv")
    #expect(await eventually { early.messages.contains { $0.retained } })
    let late = try remoteReceiver(broker, id: "board-1", consumer: "bob")
    let lateEvents = Collector(late.subscribe())
    #expect(await eventually { lateEvents.fixes.first?.isReplay == true })
    lateEvents.stop()
    await late.shutdown()

    // Its expiry (8 s) passed without a new fix: a newcomer gets none.
    try await Task.sleep(for: .milliseconds(8500))
    let after = try Subscriber(port: broker.port, "serialgps/board-1/#")
    await after.ready(port: broker.port)
    try await Task.sleep(for: .milliseconds(200))
    #expect(after.payloads(on: "serialgps/board-1/tpv").isEmpty)
    #expect(after.payloads(on: "serialgps/board-1/sky").isEmpty)
    #expect(after.payloads(on: "serialgps/board-1/status") == ["standby"], "the status stays")
    await bridge.shutdown()
    await receiver.shutdown()
  }

  @Test(
    "malformed, oversized and non-retained demands are counted and never power the receiver"
  )
  func badDemands() async throws {
    let broker = try await TestBroker()
    let clock = ManualClock()
    let (receiver, replay) = try makeReceiver(clock: clock)
    let bridge = try FleetBridge(configuration: bridgeConfiguration(broker))
    try bridge.publish(receiver, as: "board-1")
    #expect(await eventually { bridge.statistics(for: "board-1")?.connected == true })
    let topic = "serialgps/board-1/demand/mallory"
    try await publish(
      port: broker.port, topic: topic, payload: String(repeating: "x", count: 5000), retain: true)
    try await publish(port: broker.port, topic: topic + "2", payload: "1", retain: false)
    let binary = try ScratchDirectory()
    let file = binary.file("noise")
    try Data([0xFF, 0xFE, 0x00, 0x80]).write(to: URL(fileURLWithPath: file))
    try await publish(port: broker.port, topic: topic + "3", payload: nil, retain: true, file: file)
    #expect(
      await eventually {
        let statistics = bridge.statistics(for: "board-1")
        return statistics?.oversizedMessages == 1 && statistics?.malformedMessages == 2
      })
    #expect(bridge.statistics(for: "board-1")?.demands == 0)
    #expect(powerCommands(replay) == [])
    // A good demand still works afterwards.
    try await publish(port: broker.port, topic: topic, payload: "1", retain: true)
    #expect(await eventually { powerCommands(replay) == ["start"] })
    try await publish(port: broker.port, topic: topic, payload: nil, retain: true)
    await bridge.shutdown()
    await receiver.shutdown()
  }

  @Test(
    "TLS: certificates made with openssl; the broker verified against the CA, the board by its client certificate"
  )
  func tls() async throws {
    let directory = try ScratchDirectory()
    let certificates = try await TestCertificates(in: directory)
    let broker = try await TestBroker(directory: directory) { port in
      """
      listener \(port) 127.0.0.1
      allow_anonymous true
      cafile \(certificates.ca)
      certfile \(certificates.serverCertificate)
      keyfile \(certificates.serverKey)
      require_certificate true

      """
    }
    var tls = try brokerConfiguration("mqtts://127.0.0.1:\(broker.port)")
    tls.caFile = certificates.ca
    tls.certificateFile = certificates.clientCertificate
    tls.keyFile = certificates.clientKey
    let clock = ManualClock()
    let (receiver, replay) = try makeReceiver(clock: clock)
    let bridge = try FleetBridge(configuration: .init(broker: tls))
    #expect(await bridge.checkBroker() == nil)
    try bridge.publish(receiver, as: "board-1")
    var options = RemoteReceiver.Options()
    options.consumer = "alice"
    let consumer = try RemoteReceiver(broker: tls, id: "board-1", options: options)
    let events = Collector(consumer.subscribe())
    #expect(await eventually { powerCommands(replay) == ["start"] })
    clock.advance(by: .seconds(3))
    #expect(await eventually { events.fixes.count >= 2 })
    events.stop()
    await consumer.shutdown()

    // A broker certificate the CA given did not sign: refused, for good, saying why.
    var wrongCA = tls
    wrongCA.caFile = certificates.otherCA
    let refused = try await FleetBridge(configuration: .init(broker: wrongCA)).checkBroker()
    #expect(refused?.kind == .refused)
    #expect(refused?.description.contains("TLS") == true)
    // No client certificate: the broker (require_certificate) refuses the handshake.
    var anonymous = tls
    anonymous.certificateFile = nil
    anonymous.keyFile = nil
    #expect(try await FleetBridge(configuration: .init(broker: anonymous)).checkBroker() != nil)
    // Plaintext to the TLS port is not a connection either.
    let plain = try brokerConfiguration("mqtt://127.0.0.1:\(broker.port)")
    #expect(try await FleetBridge(configuration: .init(broker: plain)).checkBroker() != nil)
    await bridge.shutdown()
    await receiver.shutdown()
  }

  @Test(
    "the contrib ACL: a board cannot publish another board's topics, nor a consumer another's demand"
  )
  func aclStopsForgery() async throws {
    let directory = try ScratchDirectory()
    let passwords = directory.file("passwd")
    try await makePasswordFile(
      passwords, users: ["truck-17": "board-secret", "dashboard": "consumer-secret"])
    let acl = repositoryDirectory + "/contrib/mosquitto/serialgps.acl"
    let broker = try await TestBroker(directory: directory) { port in
      """
      listener \(port) 127.0.0.1
      allow_anonymous false
      password_file \(passwords)
      acl_file \(acl)

      """
    }
    func credentials(_ user: String, _ password: String) throws -> BrokerConfiguration {
      var configuration = try brokerConfiguration(broker.url)
      configuration.username = user
      configuration.password = password
      return configuration
    }
    // The dashboard reads everything the ACL lets it read.
    // (Mosquitto checks a subscription's filter against the ACL: `serialgps/#` is refused.)
    let watcher = try Subscriber(
      port: broker.port, "serialgps/+/tpv", "serialgps/+/status",
      extra: ["-u", "dashboard", "-P", "consumer-secret"])
    let clock = ManualClock()
    let (receiver, _) = try makeReceiver(clock: clock)
    var configuration = FleetBridge.Configuration(
      broker: try credentials("truck-17", "board-secret"))
    configuration.gating = .always
    let bridge = try FleetBridge(configuration: configuration)
    try bridge.publish(receiver, as: "truck-17")  // its own name: allowed
    try bridge.publish(receiver, as: "truck-18")  // another board's: the ACL drops it
    #expect(await eventually { bridge.statistics(for: "truck-18")?.connected == true })
    #expect(await eventually { !watcher.payloads(on: "serialgps/truck-17/status").isEmpty })
    clock.advance(by: .seconds(3))
    #expect(await eventually { watcher.payloads(on: "serialgps/truck-17/tpv").count >= 2 })
    #expect(
      await eventually { bridge.statistics(for: "truck-18")?.fixesPublished ?? 0 >= 2 },
      "it did try")
    try await Task.sleep(for: .milliseconds(300))
    #expect(watcher.messages.filter { $0.topic.hasPrefix("serialgps/truck-18/") }.isEmpty)

    // A consumer's demand under its own name arrives; under another's it never does.
    try await publish(
      port: broker.port, topic: "serialgps/truck-17/demand/eve", payload: "1", retain: true,
      extra: ["-u", "dashboard", "-P", "consumer-secret"])
    try await Task.sleep(for: .milliseconds(300))
    #expect(bridge.statistics(for: "truck-17")?.demandsAccepted == 0)
    try await publish(
      port: broker.port, topic: "serialgps/truck-17/demand/dashboard", payload: "1", retain: true,
      extra: ["-u", "dashboard", "-P", "consumer-secret"])
    #expect(await eventually { bridge.statistics(for: "truck-17")?.demandsAccepted == 1 })
    await bridge.shutdown()
    await receiver.shutdown()
  }
}
