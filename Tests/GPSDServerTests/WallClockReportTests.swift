import POSIX
import SerialGPS
import Testing

@testable import GPSDServer

/// The times the server reports from the wall clock (a device's `activated`, POLL's `time`)
/// come from the clock it is given, not from the system's.
@Suite struct WallClockReportTests {
  @Test("activated and POLL's time are the injected wall clock's")
  func reportedTimes() async throws {
    // 2025-11-30T12:05:11.250Z
    let wallClock = FixedWallClock(unixSeconds: 1_764_504_311, nanoseconds: 250_000_000)
    let memory = MemoryConnector()
    let server = try GPSDServer(
      configuration: testConfiguration(),
      devices: .fixed([GPSDServer.ServedDevice(path: "/dev/memory0", connector: memory)]),
      wallClock: wallClock)
    let client = try TestClient(port: server.listenAddress!.port)
    defer { client.close() }
    client.send("?WATCH={\"enable\":true,\"json\":true}\n")
    #expect(await eventually { memory.opens == 1 })
    wallClock.advance(by: .milliseconds(1500))
    memory.latest!.feed(cycle(second: 1) + cycle(second: 2))
    // The device is activated when its data first flows.
    let activated = try await onOwnThread { () -> String? in
      while let report = client.read(until: "DEVICE").report {
        if let activated = report["activated"] as? String { return activated }
      }
      return nil
    }
    #expect(activated == "2025-11-30T12:05:12.750Z")
    wallClock.advance(by: .seconds(60))
    client.send("?POLL;\n")
    let poll = try await onOwnThread { client.read(until: "POLL").report }
    #expect(poll?["time"] as? String == "2025-11-30T12:06:12.750Z")
    await server.shutdown()
  }
}
