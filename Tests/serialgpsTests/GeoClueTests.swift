import Foundation
import Glibc
import Replay
import Simulator
import Testing

@testable import serialgps

/// `serialgps serve --nmea-socket` with Debian's GeoClue 2.6 as its reader: a private D-Bus
/// (a system-bus-like `dbus-daemon` of the test's own), GeoClue started against it with a
/// geoclue.conf of the test's own (bind-mounted over /etc/geoclue/geoclue.conf in a mount
/// namespace of its own: 2.6 reads no other path), GeoClue's demo agent to authorize the app,
/// and its `where-am-i` demo as the app. GeoClue connects to the socket only while an app
/// wants a precise location: the simulated receiver must wake for the demo, the demo must
/// print the simulated position, and the receiver must go to standby once the demo is gone.
@Suite("serialgps serve --nmea-socket: GeoClue's where-am-i on the simulated receiver", .serialized)
struct GeoClueTests {
  static let isCI = ProcessInfo.processInfo.environment["CI"] == "true"
  static let geoclue = "/usr/libexec/geoclue"
  static let demos = "/usr/libexec/geoclue-2.0/demos"
  static var installed: Bool {
    [geoclue, "\(demos)/where-am-i", "\(demos)/agent", "/usr/bin/dbus-daemon", "/usr/bin/unshare"]
      .allSatisfy { FileManager.default.isExecutableFile(atPath: $0) }
  }

  /// A bus that lets everyone own and call everything: the test's processes only.
  static func busConfiguration(socket: String) -> String {
    """
    <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
     "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
    <busconfig>
      <type>system</type>
      <listen>unix:path=\(socket)</listen>
      <auth>EXTERNAL</auth>
      <policy context="default">
        <allow user="*"/>
        <allow own="*"/>
        <allow send_destination="*" eavesdrop="true"/>
        <allow receive_sender="*"/>
      </policy>
    </busconfig>
    """
  }

  /// The lines docs/geoclue.md tells a user to add, every other source off so that the
  /// position can only come from the socket.
  static func geoclueConfiguration(nmeaSocket: String) -> String {
    """
    [agent]
    whitelist=geoclue-demo-agent
    [network-nmea]
    enable=true
    nmea-socket=\(nmeaSocket)
    [3g]
    enable=false
    [cdma]
    enable=false
    [modem-gps]
    enable=false
    [wifi]
    enable=false
    [compass]
    enable=false

    """
  }

  @Test(
    "where-am-i wakes the receiver, prints its position, and the receiver sleeps after it",
    .enabled(if: installed || isCI, "geoclue-2.0, geoclue-2-demo or dbus is not installed"),
    // CI runs as root: there a missing privilege fails the test instead of skipping it.
    .enabled(
      if: geteuid() == 0 || isCI,
      "needs root: GeoClue's config is bind-mounted in a mount namespace (unshare --mount)"))
  func whereAmI() async throws {
    let directory = try TemporaryDirectory()
    let busSocket = directory.file("bus")
    let nmeaSocket = directory.file("nmea.sock")
    try Self.busConfiguration(socket: busSocket)
      .write(toFile: directory.file("bus.conf"), atomically: true, encoding: .utf8)
    try Self.geoclueConfiguration(nmeaSocket: nmeaSocket)
      .write(toFile: directory.file("geoclue.conf"), atomically: true, encoding: .utf8)
    let bus = try Tool(
      "/usr/bin/dbus-daemon",
      ["--config-file=\(directory.file("bus.conf"))", "--nofork", "--print-address"])
    defer { kill(bus.process.processIdentifier, SIGKILL) }
    #expect(
      await eventually { FileManager.default.fileExists(atPath: busSocket) }, "\(bus.output)")
    let address = "DBUS_SYSTEM_BUS_ADDRESS=unix:path=\(busSocket)"

    let simulator = try sleepingMediaTek()
    defer { simulator.stop() }
    let serve = try CLIProcess([
      "serve", simulator.devicePath, "--chipset", "mtk", "--baud", "9600", "--linger", "0",
      "--listen", "127.0.0.1:0", "--nmea-socket", nmeaSocket, "--nmea-socket-mode", "0660",
    ])
    #expect(
      await eventually { serve.standardError.contains("with NMEA on \(nmeaSocket)") },
      "\(serve.standardError)")
    var status = stat()
    #expect(stat(nmeaSocket, &status) == 0 && status.st_mode & 0o777 == 0o660)

    let service = try Tool(
      "/usr/bin/unshare",
      [
        "--mount", "--propagation", "private", "/bin/sh", "-c",
        "mount --bind \"$0\" /etc/geoclue/geoclue.conf && exec /usr/bin/env \"$1\" \"$2\" -t 0",
        directory.file("geoclue.conf"), address, Self.geoclue,
      ])
    defer { kill(service.process.processIdentifier, SIGKILL) }
    let agent = try Tool("/usr/bin/env", [address, "\(Self.demos)/agent"])
    defer { kill(agent.process.processIdentifier, SIGKILL) }
    // GeoClue connects only when an app asks: nothing woken yet.
    try await Task.sleep(for: .seconds(1))
    #expect(simulator.powerState == .standby, "\(service.output)")

    let app = try Tool(
      "/usr/bin/env", [address, "\(Self.demos)/where-am-i", "-a", "8", "-t", "120"])
    #expect(
      await eventually(timeout: .seconds(90)) { simulator.powerState == .running },
      "\(app.output)\n\(service.output)\n\(serve.standardError)")
    // The recording's fixes, on a window sill in Sydney (33°52.14' S, 151°12.56' E).
    #expect(
      await eventually(timeout: .seconds(90)) {
        app.output.contains("Latitude:    -33.86") && app.output.contains("Longitude:   151.20")
      }, "\(app.output)\n\(service.output)\n\(serve.standardError)")

    // The app gone, GeoClue lets go of the socket, and with it the receiver.
    await app.stop()
    #expect(
      await simulator.waitForPowerState(.standby, timeout: .seconds(30)),
      "\(service.output)\n\(serve.standardError)")
    serve.signal(SIGTERM)
    #expect(await serve.exitStatus() == 0, "\(serve.standardError)")
    #expect(!FileManager.default.fileExists(atPath: nmeaSocket), "serve removes its socket")
  }
}

/// The NMEA socket's path and its connections, with socat as the reader.
@Suite("serialgps serve --nmea-socket: the socket", .serialized)
struct NMEASocketTests {
  @Test(
    "a socket left by a process that is gone is replaced; socat reads sentences while connected",
    .enabled(
      if: FileManager.default.isExecutableFile(atPath: "/usr/bin/socat") || GeoClueTests.isCI,
      "socat is not installed"))
  func staleSocketReplacedAndRead() async throws {
    let directory = try TemporaryDirectory()
    let path = directory.file("nmea.sock")
    // Bound and closed without removing it, as a process that was killed leaves it.
    let stale = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(path.utf8) + [0]) }
    let bound = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        bind(stale, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
      }
    }
    close(stale)
    try #require(bound == 0)

    let simulator = try sleepingMediaTek()
    defer { simulator.stop() }
    let serve = try CLIProcess([
      "serve", simulator.devicePath, "--chipset", "mtk", "--baud", "9600", "--linger", "0",
      "--listen", "127.0.0.1:0", "--nmea-socket", path,
    ])
    #expect(
      await eventually { serve.standardError.contains("with NMEA on \(path)") },
      "\(serve.standardError)")
    var status = stat()
    #expect(stat(path, &status) == 0 && status.st_mode & 0o777 == 0o666)
    #expect(simulator.powerState == .standby, "nobody connected: nothing woken")

    let reader = try Tool("/usr/bin/socat", ["-u", "UNIX-CONNECT:\(path)", "STDOUT"])
    #expect(
      await eventually { reader.output.contains("$GPGGA,") && reader.output.contains("$GPRMC,") },
      "\(reader.output)\n\(serve.standardError)")
    #expect(simulator.powerState == .running)
    // Sentences only, each whole with its CR LF: no PMTK boot noise cut in half, no binary.
    let lines = reader.output.split(separator: "\n").dropLast()
    #expect(lines.allSatisfy { $0.hasPrefix("$") && $0.hasSuffix("\r") }, "\(reader.output)")
    await reader.stop()
    #expect(await simulator.waitForPowerState(.standby, timeout: .seconds(30)))
    serve.signal(SIGTERM)
    #expect(await serve.exitStatus() == 0, "\(serve.standardError)")
  }

  /// A board that serves only GeoClue, or only the raw port, opens no gpsd port.
  @Test(
    "--listen none with only --nmea-socket or only --raw-listen serves that",
    arguments: [true, false])
  func onlyTheStreamPort(nmea: Bool) async throws {
    let directory = try TemporaryDirectory()
    let path = directory.file("nmea.sock")
    let port = nmea ? ["--nmea-socket", path] : ["--raw-listen", "127.0.0.1:0"]
    let serve = try CLIProcess(
      ["serve", "/dev/null-no-such-receiver", "--listen", "none"] + port)
    let started = nmea ? "no gpsd port with NMEA on \(path)" : "no gpsd port with the raw stream on"
    #expect(
      await eventually { serve.standardError.contains(started) }, "\(serve.standardError)")
    serve.signal(SIGTERM)
    #expect(await serve.exitStatus() == 0, "\(serve.standardError)")
  }

  @Test("a file that is not a socket is left alone and stops serve with exit status 2")
  func fileInTheWay() async throws {
    let directory = try TemporaryDirectory()
    let path = directory.file("nmea.sock")
    try "keep me".write(toFile: path, atomically: true, encoding: .utf8)
    let serve = try CLIProcess([
      "serve", "/dev/null-no-such-receiver", "--listen", "127.0.0.1:0", "--nmea-socket", path,
    ])
    #expect(await serve.exitStatus() == 2, "\(serve.standardError)")
    #expect(serve.standardError.contains("not a socket"), "\(serve.standardError)")
    #expect(try String(contentsOfFile: path, encoding: .utf8) == "keep me")
  }
}
