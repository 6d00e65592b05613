import Foundation
import Replay
import SerialGPS
import Simulator
import Testing

@testable import Fleet

/// A consumer's JSON request through a real mosquitto: the bridge holds it on the receiver,
/// whose scheduler powers it for the request's fixes only.
@Suite(
  "fleet bridge: request demands", .serialized,
  .enabled(if: Mosquitto.shouldRun, "\(Mosquitto.missing)"))
struct RequestDemandTests {
  /// Advances `clock` in half seconds up to `limit`, letting the driver act after each step,
  /// until `condition` holds.
  func advance(_ clock: ManualClock, upTo limit: Duration, until condition: () -> Bool) async
    -> Bool
  {
    var advanced = Duration.zero
    while !condition() {
      guard advanced < limit else { return false }
      try? await Task.sleep(for: .milliseconds(20))
      clock.advance(by: .milliseconds(500))
      advanced += .milliseconds(500)
    }
    return true
  }

  /// A receiver on a manual clock published as board-1 through a real mosquitto, in standby,
  /// and a watcher of its topics.
  func publishedReceiver() async throws -> (
    TestBroker, ManualClock, GPSReceiver, ReplayConnector, Subscriber, FleetBridge
  ) {
    let broker = try await TestBroker()
    let clock = ManualClock()
    let (receiver, replay) = try makeReceiver(clock: clock, linger: .seconds(5))
    let watcher = try Subscriber(port: broker.port, "serialgps/board-1/#")
    await watcher.ready(port: broker.port)
    let bridge = try FleetBridge(configuration: bridgeConfiguration(broker))
    try bridge.publish(receiver, as: "board-1")
    #expect(await eventually { watcher.payloads(on: "serialgps/board-1/status") == ["standby"] })
    return (broker, clock, receiver, replay, watcher, bridge)
  }

  @Test("{\"interval\":20}: on for the first fix, then asleep while it stands")
  func intervalDemand() async throws {
    let (broker, clock, receiver, replay, watcher, bridge) = try await publishedReceiver()

    try await publish(
      port: broker.port, topic: "serialgps/board-1/demand/alice", payload: "{\"interval\":20}",
      retain: true)
    #expect(await eventually { powerCommands(replay) == ["start"] })
    // The first wake is a hot start (the simulator's ephemeris is usable, so none is
    // collected): the receiver stops at once after its fix, the demand still standing: no
    // linger.
    #expect(
      await advance(clock, upTo: .seconds(45)) { powerCommands(replay) == ["start", "stop"] },
      "\(powerCommands(replay))")
    // Each wake's fix reaches the watcher through the broker, after the receiver stopped.
    func tpv() -> Int { watcher.payloads(on: "serialgps/board-1/tpv").count }
    #expect(await eventually { tpv() >= 1 }, "\(tpv())")
    // It wakes again for the next fix, and sleeps again.
    #expect(
      await advance(clock, upTo: .seconds(30)) {
        powerCommands(replay) == ["start", "stop", "start", "stop"]
      }, "\(powerCommands(replay))")
    #expect(await eventually { tpv() >= 2 }, "\(tpv())")
    // One fix a wake, not one an epoch: the bridge published the two the watcher has.
    let statistics = try #require(bridge.statistics(for: "board-1"))
    #expect(statistics.fixesPublished == 2 && tpv() == 2, "\(statistics) \(tpv())")
    #expect(statistics.demandsAccepted == 1 && statistics.invalidDemands == 0)
    await bridge.shutdown()
    await receiver.shutdown()
  }

  @Test("withdrawing one interval demand leaves the other's request alone: nothing woken")
  func withdrawingOneLeavesTheOther() async throws {
    let (broker, clock, receiver, replay, _, bridge) = try await publishedReceiver()
    func statistics() -> FleetBridgeStatistics? { bridge.statistics(for: "board-1") }

    try await publish(
      port: broker.port, topic: "serialgps/board-1/demand/a", payload: "{\"interval\":300}",
      retain: true)
    try await publish(
      port: broker.port, topic: "serialgps/board-1/demand/b", payload: "{\"interval\":200}",
      retain: true)
    #expect(await eventually { statistics()?.requestsHeld == 2 })
    // Woken once for both first fixes, then asleep.
    #expect(
      await advance(clock, upTo: .seconds(45)) { powerCommands(replay) == ["start", "stop"] },
      "\(powerCommands(replay))")
    // a withdraws: its request ends, b's stays as it was, due in 200 s; nothing is woken.
    try await publish(
      port: broker.port, topic: "serialgps/board-1/demand/a", payload: "", retain: true)
    #expect(await eventually { statistics()?.requestsHeld == 1 })
    #expect(statistics()?.requestsMade == 2, "\(String(describing: statistics()))")
    #expect(
      !(await advance(clock, upTo: .seconds(30)) { powerCommands(replay).count > 2 }),
      "\(powerCommands(replay))")
    // b withdraws: nothing held any more.
    try await publish(
      port: broker.port, topic: "serialgps/board-1/demand/b", payload: "", retain: true)
    #expect(await eventually { statistics()?.requestsHeld == 0 && statistics()?.demands == 0 })
    #expect(statistics()?.requestsMade == 2)
    await bridge.shutdown()
    await receiver.shutdown()
  }
}
