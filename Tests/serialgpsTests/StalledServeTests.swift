import Foundation
import Glibc
import Replay
import Simulator
import Testing

/// `serialgps serve` stopped (SIGSTOP) while its receiver streams, then continued: the epochs
/// queued in the kernel meanwhile are not sent to gpsd clients as a burst of live fixes; the
/// newest is (docs/server.md, "After a stall").
@Suite("serialgps serve after a stall", .serialized)
struct StalledServeTests {
  /// A gpsd client's TPVs with when each arrived.
  static func reports(_ client: SocketLines) -> [(at: ContinuousClock.Instant, line: String)] {
    client.timed.filter { $0.line.contains("\"class\":\"TPV\"") }
  }

  /// The seconds of the day of a TPV's `"time":"2026-03-14T07:41:31.000Z"`.
  static func seconds(_ line: String) -> Int? {
    guard let range = line.range(of: "\"time\":\"") else { return nil }
    let clock = line[range.upperBound...].drop { $0 != "T" }.dropFirst().prefix(8)
    let parts = clock.split(separator: ":").compactMap { Int($0) }
    guard parts.count == 3 else { return nil }
    return parts[0] * 3600 + parts[1] * 60 + parts[2]
  }

  @Test func theNewestEpochGoesOutNotTheBacklog() async throws {
    let recording = try Recording.load(path: "\(fixturesDirectory)/ublox-m8-drive.nmea")
    let simulator = try ReceiverSimulator(
      recording: recording, configuration: .init(profile: .ublox(.m8), pace: .recorded(speed: 4)))
    defer { simulator.stop() }
    let serve = try CLIProcess([
      "serve", simulator.devicePath, "--chipset", "nmea", "--baud", "9600", "--listen",
      "127.0.0.1:0", "--linger", "0",
    ])
    defer { if serve.process.isRunning { serve.signal(SIGKILL) } }
    let signals = ServeSignalTests()
    let port = try #require(await signals.listeningPort(serve), "\(serve.standardError)")
    let client = SocketLines(try signals.watch(port: port))
    defer { close(client.descriptor) }
    #expect(await eventually { Self.reports(client).count >= 6 }, "\(serve.standardError)")

    // Four epochs a second queue in the pty while serve is stopped for three seconds.
    serve.signal(SIGSTOP)
    try await Task.sleep(for: .seconds(3))
    let resumed = ContinuousClock.now
    serve.signal(SIGCONT)
    try await Task.sleep(for: .seconds(2))

    let before = Self.reports(client).filter { $0.at < resumed }.compactMap {
      Self.seconds($0.line)
    }
    let after = Self.reports(client).filter { $0.at > resumed }.compactMap { Self.seconds($0.line) }
    let stopped = try #require(before.last)
    let first = try #require(after.first, "\(serve.standardError)")
    // Without the check the twelve queued epochs came first, each as live (the first one the
    // second after the last before the stall); now the newest comes first, about twelve
    // receiver seconds on, and none of the queued ones after it.
    #expect(first - stopped >= 8, "first after the stall: +\(first - stopped) s")
    #expect(!after.contains { $0 > stopped && $0 < first }, "\(after.map { $0 - stopped })")
    #expect(after == after.sorted())
    #expect(after.count >= 3, "streaming goes on")
    // Ended as a user ends it: standby, port closed, lock file removed.
    serve.signal(SIGTERM)
    #expect(await serve.exitStatus(timeout: .seconds(30)) == 0, "\(serve.standardError)")
  }
}
