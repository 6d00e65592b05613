import Chipsets
import Foundation
import Glibc
import Replay
import Testing

@testable import serialgps

/// `serialgps serve` started by systemd's own socket activator (`systemd-socket-activate`,
/// from Debian's systemd package), as `serialgps.socket` starts it: the activator binds the
/// ports and starts serve at the first client; serve must serve the sockets it is handed
/// (binding its own port would fail: the activator holds it) and, with `--exit-idle`, end with
/// the receiver in standby once nobody uses it.
@Suite("serialgps serve under socket activation", .serialized)
struct SocketActivationTests {
  static let activator = "/usr/bin/systemd-socket-activate"
  static let isCI = ProcessInfo.processInfo.environment["CI"] == "true"

  /// A port free now on both loopbacks (the activator binds it a moment later).
  func freePort() throws -> UInt16 {
    let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(descriptor) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let named = withUnsafeMutablePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
        bind(descriptor, pointer, length) == 0 && getsockname(descriptor, pointer, &length) == 0
      }
    }
    try #require(named)
    return UInt16(bigEndian: address.sin_port)
  }

  /// Whether this machine has ::1 (a container may have IPv6 off).
  var hasIPv6Loopback: Bool {
    let descriptor = socket(AF_INET6, Int32(SOCK_STREAM.rawValue), 0)
    guard descriptor >= 0 else { return false }
    defer { close(descriptor) }
    var address = sockaddr_in6()
    address.sin6_family = sa_family_t(AF_INET6)
    address.sin6_addr = in6addr_loopback
    return withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in6>.size)) == 0
      }
    }
  }

  /// gpsd's own client, `gpspipe -w`, started for `lines` lines (or until 60 s passed).
  func gpspipe(_ server: String, lines: Int) throws -> Tool {
    try Tool("/usr/bin/gpspipe", ["-w", "-n", "\(lines)", "-x", "60", server])
  }

  /// The `flags:` line of a descriptor of a process, in octal as the kernel gives it.
  func descriptorFlags(pid: Int32, descriptor: Int32) -> Int? {
    guard
      let info = try? String(
        contentsOfFile: "/proc/\(pid)/fdinfo/\(descriptor)", encoding: .utf8),
      let line = info.split(separator: "\n").first(where: { $0.hasPrefix("flags:") })
    else { return nil }
    return Int(line.dropFirst("flags:".count).trimmingCharacters(in: .whitespaces), radix: 8)
  }

  @Test(
    "started at the first client on the sockets passed, IPv4 and IPv6; exits idle in standby",
    .enabled(
      if: FileManager.default.isExecutableFile(atPath: activator) || isCI,
      "systemd-socket-activate (Debian's systemd) is not installed"))
  func servesPassedSocketsAndExitsIdle() async throws {
    let simulator = try sleepingMediaTek()
    defer { simulator.stop() }
    let port = try freePort()
    let ipv6 = hasIPv6Loopback
    var listen = ["-l", "127.0.0.1:\(port)"]
    if ipv6 { listen += ["-l", "[::1]:\(port)"] }
    let serve = try CLIProcess(
      [
        "serve", simulator.devicePath, "--chipset", "mtk", "--baud", "9600", "--linger", "0",
        "--exit-idle", "2",
      ], launcher: [Self.activator] + listen)
    // The activator listens; serve is not running yet.
    #expect(await eventually { serve.standardError.contains("Listening on 127.0.0.1:\(port)") })
    #expect(!serve.standardError.contains("serialgps serve:"))
    #expect(simulator.powerState == .standby)

    // The first client starts serve, and each is served on the socket it connected to. Both
    // at once, so that the idle exit cannot come between them.
    // 40 lines: the TPVs of a cold start come after VERSION, DEVICES, WATCH, DEVICE and the
    // first epochs' reports.
    let overIPv4 = try gpspipe("127.0.0.1:\(port)", lines: 40)
    let overIPv6 = ipv6 ? try gpspipe("[::1]:\(port)", lines: 40) : nil
    #expect(
      await eventually { serve.standardError.contains("(sockets passed by systemd)") },
      "\(serve.standardError)")
    // Close-on-exec: the activator had to pass them without it; a child of serve must not get
    // them. 02000000 is O_CLOEXEC in fdinfo's flags.
    let pid = try #require(serve.launchedProcessIdentifier)
    let flags = descriptorFlags(pid: pid, descriptor: 3)
    #expect(flags.map { $0 & 0o2_000_000 != 0 } == true, "descriptor 3's flags: \(flags ?? -1)")
    #expect(flags.map { $0 & Int(O_NONBLOCK) != 0 } == true, "descriptor 3's flags: \(flags ?? -1)")
    let first = await overIPv4.finish()
    #expect(first.contains("\"class\":\"VERSION\""), "\(first)\n\(serve.standardError)")
    #expect(first.contains("\"class\":\"TPV\""), "\(first)\n\(serve.standardError)")
    if let overIPv6 {
      let second = await overIPv6.finish()
      #expect(second.contains("\"class\":\"TPV\""), "\(second)\n\(serve.standardError)")
    }

    // Nobody left: after --exit-idle, standby and a clean exit.
    #expect(await serve.exitStatus(timeout: .seconds(30)) == 0, "\(serve.standardError)")
    #expect(serve.standardError.contains("no client for 2 s: exiting"), "\(serve.standardError)")
    #expect(simulator.powerState == .standby)
    let standby = simulator.received.filter { $0.bytes == MediaTekCommandSet.standby.bytes }
    #expect(standby.count >= 1)
    #expect(!serve.standardError.contains("Backtracing"), "no crash report")
  }

  @Test(
    "a client connected while serve is still starting is served (the socket queued it)",
    .enabled(
      if: FileManager.default.isExecutableFile(atPath: activator) || isCI,
      "systemd-socket-activate (Debian's systemd) is not installed"))
  func theFirstConnectionWaitsInTheQueue() async throws {
    let port = try freePort()
    let serve = try CLIProcess(
      ["serve", "/nonexistent/gps0", "--exit-idle", "1"],
      launcher: [Self.activator, "-l", "127.0.0.1:\(port)"])
    #expect(await eventually { serve.standardError.contains("Listening on 127.0.0.1:\(port)") })
    // VERSION, DEVICES, WATCH.
    let reply = try await gpspipe("127.0.0.1:\(port)", lines: 3).finish()
    #expect(reply.contains("\"class\":\"VERSION\""), "\(reply)\n\(serve.standardError)")
    #expect(await serve.exitStatus(timeout: .seconds(30)) == 0, "\(serve.standardError)")
  }

  @Test("variables meant for another process are left alone: serve binds its own port")
  func inheritedVariablesAreIgnored() async throws {
    let port = try freePort()
    let serve = try CLIProcess(
      ["serve", "/nonexistent/gps0", "--listen", "127.0.0.1:\(port)"],
      environment: ["LISTEN_PID": "1", "LISTEN_FDS": "1"])
    #expect(
      await eventually { serve.standardError.contains("listening on 127.0.0.1:\(port) for") },
      "\(serve.standardError)")
    serve.signal(SIGTERM)
    #expect(await serve.exitStatus() == 0, "\(serve.standardError)")
  }

  @Test("variables that cannot be understood stop serve with a message")
  func invalidVariablesAreRefused() async throws {
    let serve = try CLIProcess(
      ["serve", "/nonexistent/gps0", "--listen", "127.0.0.1:0"],
      environment: ["LISTEN_FDS": "1"])
    #expect(await serve.exitStatus() == 2)
    #expect(
      serve.standardError.contains("socket activation: LISTEN_FDS=1 without a valid LISTEN_PID"),
      "\(serve.standardError)")
  }
}
