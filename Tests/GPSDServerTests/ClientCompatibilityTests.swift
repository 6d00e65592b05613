import Foundation
import Glibc
import Replay
import SerialGPS
import Simulator
import Testing

@testable import GPSDServer

/// gpsd's own clients, unchanged, against the server and the simulator: the Python `gps`
/// module, `gpspipe -w`, `gpspipe -r`, `gpxlogger`, `cgps`; and `serialgps serve` itself,
/// started as a process and stopped with SIGTERM.
@Suite(.serialized, .enabled(if: Tools.available, "gpsd-clients and python3-gps are not installed"))
struct ClientCompatibilityTests {
  func server(pace: Pace = .recorded(speed: 5)) throws -> (ReceiverSimulator, GPSDServer) {
    let simulator = try makeSimulator(
      "ublox-m8-drive", profile: .ublox(.m8), pace: pace, initialPowerState: .backup)
    var configuration = testConfiguration()
    configuration.receiverOptions.chipset = .family(.ublox)
    let server = try GPSDServer(
      configuration: configuration,
      devices: .fixed([
        GPSDServer.ServedDevice(
          path: simulator.devicePath,
          connector: SerialConnector(path: simulator.devicePath, baud: .fixed(.b115200)))
      ]))
    return (simulator, server)
  }

  @Test func pythonGPSModule() async throws {
    let (simulator, server) = try server()
    defer { simulator.stop() }
    let script = """
      import gps, math, signal, sys
      signal.alarm(60)
      session = gps.gps(host="127.0.0.1", port=\(server.listenAddress!.port),
                        mode=gps.WATCH_ENABLE | gps.WATCH_JSON)
      seen = {"TPV": 0, "SKY": 0, "DEVICES": 0, "WATCH": 0, "VERSION": 0, "DEVICE": 0}
      fixes = 0
      for report in session:
          seen[report["class"]] = seen.get(report["class"], 0) + 1
          if report["class"] == "TPV" and report.get("mode", 0) >= 2:
              assert -90 <= report["lat"] <= 90 and -180 <= report["lon"] <= 180
              assert report["device"] == "\(simulator.devicePath)"
              fixes += 1
          if fixes >= 3 and seen["SKY"] >= 1:
              break
      assert session.fix.mode >= 2 and math.isfinite(session.fix.latitude)
      assert session.satellites_used > 0, session.satellites_used
      session.send("?POLL;")
      while True:
          report = session.next()
          if report["class"] == "POLL":
              assert report["active"] == 1 and len(report["tpv"]) == 1, report
              break
      print("ok", fixes, seen["SKY"], session.fix.latitude)
      """
    let run = try await onOwnThread {
      try Tools.run("/usr/bin/timeout", ["-k", "5", "90", Tools.python, "-c", script])
    }
    #expect(run.status == 0, "\(run.output)\n\(run.error)")
    #expect(run.output.hasPrefix("ok 3"))
    await server.shutdown()
    #expect(await simulator.waitForPowerState(.backup, timeout: .seconds(30)))
  }

  @Test func gpspipeJSONAndRawNMEA() async throws {
    let (simulator, server) = try server()
    defer { simulator.stop() }
    let gpspipe = try #require(Tools.gpspipe)
    let address = "127.0.0.1:\(server.listenAddress!.port)"
    let json = try await onOwnThread {
      try Tools.run("/usr/bin/timeout", ["-k", "5", "60", gpspipe, "-w", "-n", "10", address])
    }
    #expect(json.status == 0, "\(json.error)")
    let lines = json.output.split(whereSeparator: \.isNewline).map(String.init)
    #expect(lines.count == 10)
    var classes: [String] = []
    for line in lines {
      let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
      classes.append(object?["class"] as? String ?? "?")
    }
    #expect(Array(classes.prefix(3)) == ["VERSION", "DEVICES", "WATCH"])
    #expect(classes.contains("TPV"))

    let raw = try await onOwnThread {
      try Tools.run("/usr/bin/timeout", ["-k", "5", "60", gpspipe, "-r", "-n", "20", address])
    }
    #expect(raw.status == 0, "\(raw.error)")
    let sentences = raw.output.split(whereSeparator: \.isNewline).map(String.init)
      .filter { $0.hasPrefix("$") }
    #expect(sentences.count >= 10)
    for sentence in sentences {
      // Each passed on whole, with a checksum that is right.
      let parts = sentence.dropFirst().split(separator: "*")
      #expect(parts.count == 2, "\(sentence)")
      let sum = parts[0].utf8.reduce(UInt8(0)) { $0 ^ $1 }
      #expect(UInt8(parts[1], radix: 16) == sum, "\(sentence)")
    }
    await server.shutdown()
  }

  @Test func gpxloggerWritesTrackPoints() async throws {
    let (simulator, server) = try server(pace: .recorded(speed: 20))
    defer { simulator.stop() }
    let run = try await onOwnThread {
      try Tools.run(
        "/usr/bin/timeout",
        ["-s", "INT", "-k", "5", "10", "gpxlogger", "127.0.0.1:\(server.listenAddress!.port)"])
    }
    #expect(run.output.contains("<trkpt lat=\"47."), "\(run.output)\n\(run.error)")
    #expect(run.output.contains("<fix>3d</fix>"))
    await server.shutdown()
  }

  /// cgps draws with curses, so it runs under `script` (a pty); what it drew must hold a 3D
  /// fix and a latitude, and no warning about the server's release.
  @Test func cgpsShowsTheFix() async throws {
    let (simulator, server) = try server(pace: .recorded(speed: 10))
    defer { simulator.stop() }
    let run = try await onOwnThread {
      // script passes an end of its input on to cgps, which then quits: keep it open. And a
      // tall terminal: cgps 3.22 crashes (SIGSEGV) on a 24-line one when the sky holds more
      // satellites than fit, behind gpsd 3.22 as well (35 in this recording).
      try Tools.run(
        "/usr/bin/env",
        [
          "TERM=xterm", "/usr/bin/timeout", "-s", "INT", "-k", "5", "8", "/bin/sh", "-c",
          "sleep 30 | script -qfc 'stty rows 60 cols 132; cgps 127.0.0.1:\(server.listenAddress!.port)' /dev/null",
        ])
    }
    // Drop the terminal's escape sequences, keep the text.
    let screen = run.output.replacingOccurrences(
      of: "\u{1B}(\\[[0-9;?]*[A-Za-z]|[()][0B])", with: "", options: .regularExpression)
    #expect(
      screen.range(of: "47\\.[0-9]{8} N", options: .regularExpression) != nil,
      "\(screen.suffix(2000))")
    #expect(screen.contains("3D"))
    #expect(!screen.contains("Segmentation fault"))
    #expect(
      !run.error.contains("WARNING") && !screen.contains("WARNING"),
      "cgps took us for another release")
    await server.shutdown()
  }

  /// The command: it prints where it listens, serves, and on SIGTERM puts the receiver to
  /// standby and exits 0.
  @Test func serveCommandEndToEnd() async throws {
    let binary = try #require(
      Self.binary, "serialgps is not built beside the tests; run `swift build --build-tests`")
    let simulator = try makeSimulator(
      "ublox-m8-drive", profile: .ublox(.m8), initialPowerState: .backup)
    defer { simulator.stop() }
    let process = Process()
    process.executableURL = URL(fileURLWithPath: binary)
    process.arguments = [
      "serve", "--listen", "127.0.0.1:0", "--linger", "0", "--baud", "115200", "--chipset", "ublox",
      simulator.devicePath,
    ]
    let errors = Pipe()
    process.standardError = errors
    process.standardOutput = FileHandle.nullDevice
    try await onOwnThread { try startWithSignalsUnblocked(process) }
    defer { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }
    // "serialgps serve: listening on 127.0.0.1:PORT for …"
    let port = try await onOwnThread { () -> UInt16? in
      var text = ""
      let handle = errors.fileHandleForReading
      while !text.contains("\n") {
        let data = handle.availableData
        if data.isEmpty { return nil }
        text += String(decoding: data, as: UTF8.self)
      }
      guard let range = text.range(of: "listening on 127.0.0.1:") else { return nil }
      return UInt16(text[range.upperBound...].prefix { $0.isNumber })
    }
    let listening = try #require(port)
    let client = try TestClient(port: listening)
    defer { client.close() }
    client.send("?WATCH={\"enable\":true,\"json\":true}\n")
    let fix = try await onOwnThread { () -> Report? in
      while let report = client.readReport() {
        if report.className == "TPV", (report["mode"] as? Int ?? 0) >= 2 { return report }
      }
      return nil
    }
    #expect(fix != nil)
    #expect(await simulator.waitForPowerState(.running))
    process.terminate()  // SIGTERM
    let status = try await onOwnThread { () -> Int32 in
      process.waitUntilExit()
      return process.terminationStatus
    }
    #expect(status == 0)
    #expect(
      await simulator.waitForPowerState(.backup, timeout: .seconds(30)), "standby on the way out")
  }

  static let binary: String? = {
    guard let test = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
    else { return nil }
    let path = URL(fileURLWithPath: test).deletingLastPathComponent()
      .appendingPathComponent("serialgps").path
    return FileManager.default.isExecutableFile(atPath: path) ? path : nil
  }()
}
