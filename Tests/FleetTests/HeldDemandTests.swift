import Fleet
import Foundation
import POSIX
import Replay
import SerialGPS
import Testing

/// Power follows what the broker holds now, against a real mosquitto (docs/fleet.md, "Demand
/// payloads" and "Many consumers").
@Suite(
  "fleet bridge: demand follows what the broker holds", .serialized,
  .enabled(if: Mosquitto.shouldRun, "\(Mosquitto.missing)"))
struct HeldDemandTests {
  /// A bridge whose log lines are kept.
  static func bridge(_ broker: TestBroker, maximumConsumers: Int = 256) throws -> (
    FleetBridge, Locked<[String]>
  ) {
    let lines = Locked<[String]>([])
    var configuration = try bridgeConfiguration(broker)
    configuration.maximumConsumers = maximumConsumers
    configuration.log = { line in lines.withLock { $0.append(line) } }
    return (try FleetBridge(configuration: configuration), lines)
  }

  @Test(
    "a retained demand replaced by a megabyte of binary withdraws it, says why, and a bridge started afterwards decides the same"
  )
  func anInvalidReplacementWithdraws() async throws {
    let broker = try await TestBroker()
    let clock = ManualClock()
    let (receiver, replay) = try makeReceiver(clock: clock, linger: .zero)
    let (bridge, lines) = try Self.bridge(broker)
    try bridge.publish(receiver, as: "board-1")
    #expect(await eventually { bridge.statistics(for: "board-1")?.connected == true })
    let topic = "serialgps/board-1/demand/alice"
    try await publish(port: broker.port, topic: topic, payload: "1", retain: true)
    #expect(await eventually { powerCommands(replay) == ["start"] })

    let directory = try ScratchDirectory()
    let file = directory.file("megabyte")
    var noise = SystemRandomNumberGenerator()
    try Data((0..<(1 << 20)).map { _ in UInt8.random(in: 0...255, using: &noise) })
      .write(to: URL(fileURLWithPath: file))
    try await publish(port: broker.port, topic: topic, payload: nil, retain: true, file: file)
    #expect(await eventually { bridge.statistics(for: "board-1")?.subscribed == false })
    #expect(bridge.statistics(for: "board-1")?.demands == 0)
    #expect(await eventually { powerCommands(replay) == ["start", "stop"] })
    #expect(
      lines.withLock { $0 }.contains {
        $0.contains("mqtt board-1: demand of alice withdrawn: the payload is 1048576 bytes")
      }, "\(lines.withLock { $0 })")
    await bridge.shutdown()

    // Started now, a bridge gets the same megabyte from the broker and does not power on.
    let (again, _) = try Self.bridge(broker)
    try again.publish(receiver, as: "board-1")
    #expect(await eventually { again.statistics(for: "board-1")?.oversizedMessages == 1 })
    #expect(again.statistics(for: "board-1")?.subscribed == false)
    #expect(powerCommands(replay) == ["start", "stop"])
    try await publish(port: broker.port, topic: topic, payload: nil, retain: true)
    await again.shutdown()
    await receiver.shutdown()
  }

  @Test("0, false, -1 and a space are not demands: the receiver is never powered")
  func documentedFormsOnly() async throws {
    let broker = try await TestBroker()
    let clock = ManualClock()
    let (receiver, replay) = try makeReceiver(clock: clock)
    let (bridge, lines) = try Self.bridge(broker)
    try bridge.publish(receiver, as: "board-1")
    #expect(await eventually { bridge.statistics(for: "board-1")?.connected == true })
    let payloads = ["0", "false", "-1", " "]
    for (index, payload) in payloads.enumerated() {
      try await publish(
        port: broker.port, topic: "serialgps/board-1/demand/c\(index)", payload: payload,
        retain: true)
    }
    #expect(await eventually { bridge.statistics(for: "board-1")?.invalidDemands == 4 })
    #expect(bridge.statistics(for: "board-1")?.demands == 0)
    #expect(powerCommands(replay) == [])
    #expect(
      lines.withLock { $0 }.filter { $0.contains("is not a demand: publish 1") }.count == 4,
      "\(lines.withLock { $0 })")
    for index in payloads.indices {
      try await publish(
        port: broker.port, topic: "serialgps/board-1/demand/c\(index)", payload: nil,
        retain: true)
    }
    await bridge.shutdown()
    await receiver.shutdown()
  }

  @Test(
    "demands beyond the limit are said, and taken when room frees: the receiver stays powered while any stands"
  )
  func demandsBeyondTheLimit() async throws {
    let broker = try await TestBroker()
    let clock = ManualClock()
    let (receiver, replay) = try makeReceiver(clock: clock, linger: .zero)
    let (bridge, lines) = try Self.bridge(broker, maximumConsumers: 3)
    try bridge.publish(receiver, as: "board-1")
    #expect(await eventually { bridge.statistics(for: "board-1")?.connected == true })
    // Ten demands: three counted, three waiting, four beyond what the bridge remembers.
    for index in 0..<10 {
      try await publish(
        port: broker.port, topic: "serialgps/board-1/demand/c\(index)", payload: "1",
        retain: true)
    }
    #expect(await eventually { bridge.statistics(for: "board-1")?.refusedConsumers == 7 })
    #expect(bridge.statistics(for: "board-1")?.demands == 3)
    #expect(
      lines.withLock { $0 }.contains { $0.contains("demand of c3 not counted yet") },
      "\(lines.withLock { $0 })")
    // The first eight withdraw: the last two stand, and keep the receiver powered.
    for index in 0..<8 {
      try await publish(
        port: broker.port, topic: "serialgps/board-1/demand/c\(index)", payload: nil,
        retain: true)
    }
    #expect(
      await eventually {
        let statistics = bridge.statistics(for: "board-1")
        return statistics?.demands == 2 && statistics?.waitingDemands == 0
      }, "\(String(describing: bridge.statistics(for: "board-1")))")
    #expect(bridge.statistics(for: "board-1")?.subscribed == true)
    #expect(bridge.statistics(for: "board-1")?.demandRereads ?? 0 >= 1)
    #expect(powerCommands(replay) == ["start"], "powered throughout")
    for index in 8..<10 {
      try await publish(
        port: broker.port, topic: "serialgps/board-1/demand/c\(index)", payload: nil,
        retain: true)
    }
    #expect(await eventually { powerCommands(replay) == ["start", "stop"] })
    await bridge.shutdown()
    await receiver.shutdown()
  }
}
