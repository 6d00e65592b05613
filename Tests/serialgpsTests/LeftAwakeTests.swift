import Chipsets
import Foundation
import Glibc
import Replay
import Simulator
import Testing

/// Issue 14 item 2: a receiver left awake by a process killed outright (SIGKILL) is put to
/// standby by the next `serialgps serve`, with no client; without that evidence `serve` opens
/// nothing.
@Suite("a receiver left awake by a killed process", .serialized)
struct LeftAwakeTests {
  func isStandby(_ input: ReceivedInput) -> Bool {
    input.bytes == MediaTekCommandSet.standby.bytes
  }

  func markerFiles(_ directory: TemporaryDirectory) -> [String] {
    ((try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []).filter {
      $0.hasSuffix(".awake")
    }
  }

  /// A real tty forgets TIOCEXCL when its last descriptor closes (the kernel releases it), so
  /// a killed process's hold dies with it. A pty's device side lives on while the simulator
  /// holds the other side, and keeps the flag: clear it as the kernel would for a real port.
  func releaseExclusivity(_ path: String) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
    process.arguments = [
      "-c",
      "import fcntl, os, sys, termios; fd = os.open(sys.argv[1], os.O_RDWR | os.O_NOCTTY "
        + "| os.O_NONBLOCK); fcntl.ioctl(fd, termios.TIOCNXCL); os.close(fd)",
      path,
    ]
    try? process.run()
    process.waitUntilExit()
  }

  @Test func theNextServePutsItToStandbyWithNoClient() async throws {
    let markers = try TemporaryDirectory()
    let environment = ["SERIALGPS_RUNTIME_DIR": markers.path]
    let simulator = try sleepingMediaTek()
    defer { simulator.stop() }
    let serveArguments = [
      "serve", simulator.devicePath, "--chipset", "mtk", "--baud", "9600", "--listen",
      "127.0.0.1:0", "--linger", "0",
    ]

    // No marker: a server with no client opens nothing.
    let idle = try CLIProcess(serveArguments, environment: environment)
    #expect(await eventually { idle.standardError.contains("listening on") })
    try await Task.sleep(for: .seconds(1))
    #expect(simulator.received.isEmpty)
    idle.signal(SIGTERM)
    #expect(await idle.exitStatus(timeout: .seconds(30)) == 0)
    #expect(simulator.received.isEmpty)

    // Woken by `watch`, which is then killed outright: no standby, the marker stays.
    let watch = try CLIProcess(
      ["watch", simulator.devicePath, "--chipset", "mtk", "--baud", "9600"],
      environment: environment)
    #expect(await simulator.waitForPowerState(.running, timeout: .seconds(30)))
    #expect(await eventually { markerFiles(markers).count == 1 }, "\(watch.standardError)")
    watch.signal(SIGKILL)
    _ = await watch.exitStatus(timeout: .seconds(30))
    releaseExclusivity(simulator.devicePath)
    #expect(!simulator.received.contains(where: isStandby))
    #expect(simulator.powerState == .running)

    // The next server, with no client: one standby exchange, and the marker is gone.
    let serve = try CLIProcess(serveArguments, environment: environment)
    #expect(
      await simulator.waitForPowerState(.standby, timeout: .seconds(30)), "\(serve.standardError)")
    #expect(await eventually { markerFiles(markers).isEmpty })
    let standbys = simulator.received.filter(isStandby)
    #expect(standbys.count == 1)
    #expect(standbys.first?.outcome == .acknowledged)
    serve.signal(SIGTERM)
    #expect(await serve.exitStatus(timeout: .seconds(30)) == 0, "\(serve.standardError)")
    #expect(simulator.received.filter(isStandby).count == 1)
  }
}
