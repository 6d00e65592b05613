import Chipsets
import Fleet
import Foundation
import GPSDProtocol
import NMEA
import Replay
import SerialGPS
import Testing

/// A u-blox M8 on USB replayed in-process, on a manual clock.
func makeReceiver(
  clock: ManualClock, linger: Duration = .seconds(5), fixture: String = "ublox-m8-drive"
)
  throws -> (GPSReceiver, ReplayConnector)
{
  let replay = ReplayConnector(
    recording: try Recording.load(path: fixturesDirectory + "/\(fixture).nmea"),
    configuration: .init(profile: .ublox(.m8), loops: true, interface: .usb), clock: clock)
  var options = GPSReceiver.Options()
  options.linger = linger
  options.acknowledgementTimeout = .seconds(5)
  let receiver = GPSReceiver(connector: replay, options: options, clock: clock)
  return (receiver, replay)
}

/// The u-blox power commands (`UBX-CFG-RST` GNSS start 0x09 and stop 0x08), in order.
func powerCommands(_ replay: ReplayConnector) -> [String] {
  replay.receivedCommands.compactMap { command in
    if case .ubxReset(_, let mode) = command {
      return mode == 0x09 ? "start" : mode == 0x08 ? "stop" : "reset \(mode)"
    }
    return nil
  }
}

func bridgeConfiguration(_ broker: TestBroker, gating: FleetBridge.Gating = .demand) throws
  -> FleetBridge.Configuration
{
  var brokerConfiguration = try BrokerConfiguration(url: broker.url)
  brokerConfiguration.reconnectDelay = .milliseconds(50)
  brokerConfiguration.maximumReconnectDelay = .milliseconds(200)
  var configuration = FleetBridge.Configuration(broker: brokerConfiguration)
  configuration.gating = gating
  return configuration
}

@Suite(
  "fleet bridge against a real mosquitto", .serialized,
  .enabled(if: Mosquitto.shouldRun, "\(Mosquitto.missing)"))
struct BridgeTests {
  @Test(
    "a retained demand powers the receiver on, fixes are published, its withdrawal powers it off after the linger"
  )
  func demandOnAndOff() async throws {
    let broker = try TestBroker()
    let clock = ManualClock()
    let (receiver, replay) = try makeReceiver(clock: clock)
    let watcher = try Subscriber(port: broker.port, "serialgps/board-1/#")
    await watcher.ready(port: broker.port)
    let bridge = try FleetBridge(configuration: bridgeConfiguration(broker))
    try bridge.publish(receiver, as: "board-1")
    #expect(await eventually { watcher.payloads(on: "serialgps/board-1/status") == ["standby"] })
    #expect(powerCommands(replay) == [])

    try publish(
      port: broker.port, topic: "serialgps/board-1/demand/alice", payload: "1", retain: true)
    #expect(await eventually { powerCommands(replay) == ["start"] })
    clock.advance(by: .seconds(3))
    #expect(await eventually { watcher.payloads(on: "serialgps/board-1/tpv").count >= 3 })
    #expect(
      watcher.payloads(on: "serialgps/board-1/status").prefix(3) == [
        "standby", "powering on", "streaming",
      ])
    let tpv = watcher.payloads(on: "serialgps/board-1/tpv")
    #expect(tpv.allSatisfy { $0.hasPrefix("{\"class\":\"TPV\"") })

    try publish(
      port: broker.port, topic: "serialgps/board-1/demand/alice", payload: nil, retain: true)
    #expect(await eventually { watcher.payloads(on: "serialgps/board-1/status").last == "standby" })
    #expect(await eventually { clock.sleeperCount >= 2 })
    #expect(powerCommands(replay) == ["start"])
    clock.advance(by: .seconds(5))
    #expect(await eventually { powerCommands(replay) == ["start", "stop"] })
    let statistics = try #require(bridge.statistics(for: "board-1"))
    #expect(statistics.demandsAccepted == 1)
    #expect(statistics.demandsWithdrawn == 1)
    await bridge.shutdown()
    #expect(await eventually { watcher.payloads(on: "serialgps/board-1/status").last == "offline" })
    await receiver.shutdown()
  }
}
