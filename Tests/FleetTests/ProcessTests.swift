import Fleet
import Foundation
import GPSDProtocol
import Glibc
import NMEA
import Replay
import SerialGPS
import Simulator
import Testing

// The built `serialgps` as the process under test: `follow` (its Last Will when killed, its
// withdrawal when stopped), `serve --mqtt` (credentials refused, the whole path from a
// receiver on a pty to a follower).

@Suite(
  "serialgps follow and serve --mqtt as processes, against a real mosquitto", .serialized,
  .enabled(if: Mosquitto.shouldRun, "\(Mosquitto.missing)"))
struct ProcessTests {
  @Test(
    "a follower killed with SIGKILL: its Last Will withdraws the demand; standby after the linger")
  func killedFollower() async throws {
    let broker = try await TestBroker()
    let clock = ManualClock()
    let (receiver, replay) = try makeReceiver(clock: clock, linger: .seconds(5))
    let bridge = try FleetBridge(configuration: bridgeConfiguration(broker))
    try bridge.publish(receiver, as: "board-1")
    let follower = try Child(
      try serialgpsBinary(), ["follow", "--mqtt", broker.url, "board-1", "--consumer", "doomed"])
    #expect(await eventually { bridge.statistics(for: "board-1")?.demands == 1 })
    #expect(await eventually { powerCommands(replay) == ["start"] })
    clock.advance(by: .seconds(3))
    #expect(await eventually { follower.lines.count >= 2 })

    follower.signal(SIGKILL)
    #expect(await follower.wait() == SIGKILL)
    // The broker publishes the empty retained demand (the Last Will): the bridge disposes.
    #expect(await eventually { bridge.statistics(for: "board-1")?.demands == 0 })
    #expect(bridge.statistics(for: "board-1")?.demandsWithdrawn == 1)
    #expect(await eventually { clock.sleeperCount >= 2 })
    #expect(powerCommands(replay) == ["start"])
    clock.advance(by: .seconds(5))
    #expect(await eventually { powerCommands(replay) == ["start", "stop"] })
    // Nothing of the demand is left at the broker.
    let check = try Subscriber(port: broker.port, "serialgps/board-1/demand/+")
    await check.ready(port: broker.port)
    #expect(check.payloads(on: "serialgps/board-1/demand/doomed").isEmpty)
    await bridge.shutdown()
    await receiver.shutdown()
  }

  @Test(
    "follow prints like watch (and --json TPV); SIGTERM withdraws its demand, exit 0")
  func followPrintsAndWithdraws() async throws {
    let broker = try await TestBroker()
    let clock = ManualClock()
    let (receiver, replay) = try makeReceiver(clock: clock)
    let bridge = try FleetBridge(configuration: bridgeConfiguration(broker))
    try bridge.publish(receiver, as: "board-1")
    let follower = try Child(try serialgpsBinary(), ["follow", "--mqtt", broker.url, "board-1"])
    let json = try Child(
      try serialgpsBinary(), ["follow", "--mqtt", broker.url, "board-1", "--json", "--count", "2"])
    #expect(await eventually { bridge.statistics(for: "board-1")?.demands == 2 })
    clock.advance(by: .seconds(4))
    #expect(await eventually { follower.lines.count >= 3 })
    // `watch`'s line: time, mode, latitude, longitude, altitude, speed, satellites, accuracy.
    let line = try #require(follower.lines.last)
    #expect(line.hasPrefix("2026-03-14T07:41:"))
    #expect(line.contains("  3D  47.28"))
    #expect(line.contains("  alt ") && line.contains("  speed ") && line.contains("  sats "))
    #expect(await json.wait() == 0, "--count 2 ends it")
    #expect(json.lines.count == 2)
    #expect(json.lines.allSatisfy { $0.hasPrefix("{\"class\":\"TPV\"") })

    follower.signal(SIGTERM)
    #expect(await follower.wait() == 0)
    #expect(follower.errorOutput.contains("withdrawing the demand"))
    #expect(await eventually { bridge.statistics(for: "board-1")?.demands == 0 })
    #expect(bridge.statistics(for: "board-1")?.demandsWithdrawn == 2)
    #expect(powerCommands(replay) == ["start"], "the linger has not passed on the manual clock")
    await bridge.shutdown()
    await receiver.shutdown()
  }

  @Test("a wrong password: serve and follow say so and exit 1; the right one is accepted")
  func wrongPassword() async throws {
    let directory = try ScratchDirectory()
    let passwords = directory.file("passwd")
    try await makePasswordFile(passwords, users: ["board-1": "right", "alice": "alices"])
    let broker = try await TestBroker(directory: directory) { port in
      "listener \(port) 127.0.0.1\nallow_anonymous false\npassword_file \(passwords)\n"
    }
    let binary = try serialgpsBinary()
    let serve = try Child(
      binary,
      [
        "serve", "--listen", "none", "--mqtt", broker.url, "--mqtt-username", "board-1",
        "--mqtt-id", "board-1", "/nonexistent/gps0",
      ], environment: ["SERIALGPS_MQTT_PASSWORD": "wrong"])
    #expect(await serve.wait() == 1)
    #expect(serve.errorOutput.contains("refused user board-1"))
    #expect(serve.errorOutput.contains("SERIALGPS_MQTT_PASSWORD"))

    let passwordFile = try directory.write("alice-password", "wrong too\n")
    let follow = try Child(
      binary,
      [
        "follow", "--mqtt", broker.url, "--mqtt-username", "alice", "--mqtt-password-file",
        passwordFile, "board-1",
      ])
    #expect(await follow.wait() == 1)
    #expect(follow.errorOutput.contains("refused user alice"))

    // The right password, from a file: serve starts and publishes its status.
    let rightFile = try directory.write("board-password", "right\n")
    let watcher = try Subscriber(
      port: broker.port, "serialgps/board-1/status", extra: ["-u", "alice", "-P", "alices"])
    let good = try Child(
      binary,
      [
        "serve", "--listen", "none", "--mqtt", broker.url, "--mqtt-username", "board-1",
        "--mqtt-password-file", rightFile, "--mqtt-id", "board-1", "/nonexistent/gps0",
      ])
    #expect(await eventually { watcher.payloads(on: "serialgps/board-1/status") == ["standby"] })
    good.signal(SIGTERM)
    #expect(await good.wait() == 0)
    #expect(await eventually { watcher.payloads(on: "serialgps/board-1/status").last == "offline" })
  }

  @Test(
    "serve --listen none --mqtt: a receiver on a pty, a follower; status offline after SIGTERM")
  func serveEndToEnd() async throws {
    let broker = try await TestBroker()
    let directory = try ScratchDirectory()
    let binary = try serialgpsBinary()
    let link = directory.file("gps0")
    let replay = try Child(
      binary,
      [
        "replay", fixturesDirectory + "/ublox-m8-drive.nmea", "--loop", "--speed", "5", "--link",
        link,
      ])
    #expect(await eventually { FileManager.default.fileExists(atPath: link) })
    let watcher = try Subscriber(port: broker.port, "serialgps/truck-17/status")
    let serve = try Child(
      binary,
      [
        "serve", "--listen", "none", "--linger", "0", "--mqtt", broker.url, "--mqtt-id",
        "truck-17", link,
      ])
    #expect(await eventually { watcher.payloads(on: "serialgps/truck-17/status") == ["standby"] })
    let follower = try Child(
      binary, ["follow", "--mqtt", broker.url, "truck-17", "--count", "3"])
    #expect(await follower.wait(timeout: .seconds(30)) == 0)
    #expect(follower.lines.count == 3)
    #expect(
      follower.lines.allSatisfy {
        $0.contains("  3D  ") || $0.contains("  no fix  ") || $0.contains("  2D  ")
      })
    // The last consumer gone (linger 0): standby again.
    #expect(
      await eventually { watcher.payloads(on: "serialgps/truck-17/status").last == "standby" })
    #expect(
      watcher.payloads(on: "serialgps/truck-17/status").contains("streaming"),
      "\(watcher.payloads(on: "serialgps/truck-17/status"))")

    serve.signal(SIGTERM)
    #expect(await serve.wait() == 0)
    #expect(serve.errorOutput.contains("publishing \(link) as serialgps/truck-17/"))
    #expect(
      await eventually { watcher.payloads(on: "serialgps/truck-17/status").last == "offline" })
    replay.signal(SIGKILL)
    await replay.wait()
  }
}
