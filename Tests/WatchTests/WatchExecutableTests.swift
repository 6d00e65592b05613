import Foundation
import Glibc
import Testing

/// `$PMTK161,0`, the MediaTek standby command, as the driver writes it.
let standby = sentence("PMTK161,0")

/// Runs `serialgps watch` against a fake receiver. Serialized: each test runs a child process
/// and two threads of its own, and the MediaTek ones wait on acknowledgement timeouts, which a
/// crowded two-core machine should not have to race.
@Suite("serialgps watch: the executable against a pty", .serialized)
struct WatchExecutableTests {
  /// The watch process and the fake receiver it talks to.
  func start(
    _ arguments: [String], acknowledging: Set<Int> = [], delay: Duration = .zero,
    signalDispositions: [String] = [], closingOutputAfter lines: Int? = nil
  ) throws -> (WatchProcess, FakeReceiver) {
    let receiver = try FakeReceiver(acknowledging: acknowledging, delay: delay)
    let watch = try WatchProcess(
      ["watch", receiver.devicePath] + arguments, signalDispositions: signalDispositions,
      closingOutputAfter: lines)
    receiver.isWatcherRunning = { [weak watch] in watch?.isRunning ?? false }
    receiver.start()
    return (watch, receiver)
  }

  /// The seconds after 12:00:00 of each line's time, or nil for a line without one.
  func seconds(_ lines: [String], prefix: String = "2026-03-30T12:") -> [Int?] {
    lines.map { line in
      guard let range = line.range(of: prefix) else { return nil }
      let digits = line[range.upperBound...].prefix(5)  // mm:ss
      let parts = digits.split(separator: ":")
      guard parts.count == 2, let minute = Int(parts[0]), let second = Int(parts[1]) else {
        return nil
      }
      return minute * 60 + second
    }
  }

  @Test("prints one line per fix, --count of them, consecutive; writes nothing for nmea")
  func printsFixes() async throws {
    let (watch, receiver) = try start(["--baud", "9600", "--chipset", "nmea", "--count", "3"])
    defer { receiver.stop() }
    let status = await watch.exitStatus()
    #expect(status == 0, "stderr: \(watch.stderr)")
    let lines = watch.lines
    #expect(lines.count == 3, "\(lines)")
    for line in lines {
      #expect(
        line.hasSuffix(
          "  3D  47.3769033  8.5417017  alt 408.3 m  speed 5.14 m/s  sats 8  acc 2.0 m"),
        "\(line)")
    }
    let times = seconds(lines)
    #expect(!times.contains(nil))
    let known = times.compactMap { $0 }
    #expect(zip(known, known.dropFirst()).allSatisfy { $1 == $0 + 1 }, "\(times)")
    #expect(watch.stderr.contains("\(receiver.devicePath): powering on"))
    #expect(watch.stderr.contains("\(receiver.devicePath): streaming"))
    #expect(receiver.received.isEmpty, "nmea sends no commands")
  }

  @Test("--json: gpsd TPV objects, one per line, naming the device")
  func json() async throws {
    let (watch, receiver) = try start(["--baud", "9600", "--count", "2", "--json"])
    defer { receiver.stop() }
    #expect(await watch.exitStatus() == 0, "stderr: \(watch.stderr)")
    let lines = watch.lines
    #expect(lines.count == 2)
    for line in lines {
      let object = try #require(
        try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "\(line)")
      #expect(object["class"] as? String == "TPV")
      #expect(object["device"] as? String == receiver.devicePath)
      #expect(object["mode"] as? Int == 3)
      #expect(object["lat"] as? Double == 47.376903333)
      #expect(object["lon"] as? Double == 8.541701667)
      #expect(object["altMSL"] as? Double == 408.3)
      #expect(object["speed"] as? Double == 5.144)
      #expect((object["time"] as? String)?.hasPrefix("2026-03-30T12:") == true)
    }
  }

  @Test("--chipset mtk: wakes the receiver, and $PMTK161,0 arrives after --count, before exit")
  func mediatekStandbyAfterCount() async throws {
    // The receiver takes 300 ms to answer: a driver that did not wait for the standby to be
    // acknowledged would be gone by then.
    let (watch, receiver) = try start(
      ["--baud", "9600", "--chipset", "mtk", "--count", "2"], acknowledging: [740, 314, 161],
      delay: .milliseconds(300))
    defer { receiver.stop() }
    #expect(await watch.exitStatus() == 0, "stderr: \(watch.stderr)")
    #expect(watch.lines.count == 2)
    let commands = receiver.commands
    // A first start, nothing known of its backup: told the time first ($PMTK740; no
    // position is known yet). The sentence selection follows it, unless the two fixes this
    // streaming fake sends meanwhile ended the wake first (a shutdown abandons the rest).
    #expect(commands.first?.number == 740, "the time goes first: \(commands)")
    #expect(!commands.contains { $0.number == 314 } || commands[1].number == 314, "\(commands)")
    let standbys = commands.filter { $0.number == 161 }
    #expect(standbys.first?.line == standby)
    // The process was still there when the standby arrived, and when its answer went.
    #expect(standbys.first?.whileRunning == true)
    #expect(receiver.answers.contains { $0.number == 161 && $0.whileRunning })
    #expect(!watch.stderr.contains("not acknowledged"), "\(watch.stderr)")
    #expect(commands.last?.number == 161, "nothing after the standby: \(commands)")
    let text = String(decoding: receiver.received, as: UTF8.self)
    #expect(text.hasPrefix("\r\n"), "CR LF wakes a MediaTek chip first")
  }

  @Test("an unanswered standby is retried; watch exits 0 once the attempts are over")
  func unansweredStandby() async throws {
    let (watch, receiver) = try start(
      ["--baud", "9600", "--chipset", "mtk", "--count", "1"], acknowledging: [314])
    defer { receiver.stop() }
    #expect(await watch.exitStatus() == 0, "stderr: \(watch.stderr)")
    let standbys = receiver.commands.filter { $0.number == 161 }
    #expect(standbys.count == 3, "\(receiver.commands)")
    #expect(standbys.allSatisfy { $0.whileRunning })
    #expect(watch.stderr.contains("not acknowledged"), "\(watch.stderr)")
  }

  @Test(
    "SIGINT, SIGTERM, SIGHUP and SIGQUIT: standby sent, exit 0",
    arguments: [SIGINT, SIGTERM, SIGHUP, SIGQUIT])
  func stopSignal(_ signal: Int32) async throws {
    // Whatever this test process ignores (nohup, a background job), the child starts with
    // the default actions: what it does with them is its own.
    let (watch, receiver) = try start(
      ["--baud", "9600", "--chipset", "mtk"], acknowledging: [314, 161],
      delay: .milliseconds(300), signalDispositions: ["--default-signal=HUP,INT,QUIT,TERM"])
    defer { receiver.stop() }
    // Signal once the receiver is awake and streaming.
    #expect(
      await eventually { watch.lines.count >= 2 && receiver.commands.contains { $0.number == 314 } }
    )
    #expect(!receiver.commands.contains { $0.number == 161 }, "no standby while watching")
    watch.send(signal)
    #expect(await watch.exitStatus() == 0, "stderr: \(watch.stderr)")
    #expect(watch.exited, "ended by a signal, not by exit")
    let standbys = receiver.commands.filter { $0.number == 161 }
    #expect(standbys.first?.whileRunning == true, "\(receiver.commands)")
    // Once: a second $PMTK161,0 would wake the chip the first one put to sleep.
    #expect(standbys.count == 1, "\(receiver.commands.map(\.number))")
    #expect(receiver.answers.contains { $0.number == 161 && $0.whileRunning })
    #expect(watch.stderr.contains("stopping"))
    #expect(!watch.stderr.contains("Backtracing"), "no crash report")
  }

  @Test("standard output closed (watch | head -2): standby sent, exit 0, no SIGPIPE death")
  func outputClosed() async throws {
    let (watch, receiver) = try start(
      ["--baud", "9600", "--chipset", "mtk"], acknowledging: [314, 161],
      delay: .milliseconds(300), closingOutputAfter: 2)
    defer { receiver.stop() }
    #expect(await watch.exitStatus() == 0, "stderr: \(watch.stderr)")
    #expect(watch.exited, "ended by a signal (SIGPIPE), not by exit")
    #expect(watch.lines.count >= 2)
    let standbys = receiver.commands.filter { $0.number == 161 }
    #expect(standbys.first?.whileRunning == true, "\(receiver.commands)")
    #expect(receiver.answers.contains { $0.number == 161 && $0.whileRunning })
    #expect(watch.stderr.contains("standard output closed: stopping"), "\(watch.stderr)")
  }

  @Test("under nohup (SIGHUP ignored from the start) SIGHUP changes nothing; SIGTERM still stops")
  func hangUpIgnoredUnderNohup() async throws {
    let (watch, receiver) = try start(
      ["--baud", "9600", "--chipset", "mtk"], acknowledging: [314, 161],
      signalDispositions: ["--ignore-signal=HUP"])
    defer { receiver.stop() }
    #expect(await eventually { watch.lines.count >= 1 })
    watch.send(SIGHUP)
    let linesBefore = watch.lines.count
    #expect(await eventually { watch.lines.count >= linesBefore + 2 }, "still printing fixes")
    #expect(watch.isRunning)
    #expect(!receiver.commands.contains { $0.number == 161 }, "no standby on SIGHUP")
    watch.send(SIGTERM)
    #expect(await watch.exitStatus() == 0, "stderr: \(watch.stderr)")
    #expect(receiver.commands.filter { $0.number == 161 }.first?.whileRunning == true)
  }

  @Test("SIGINT while stopping exits at once, status 130")
  func secondSignal() async throws {
    // The standby is never answered: a graceful stop would wait out three attempts.
    let (watch, receiver) = try start(
      ["--baud", "9600", "--chipset", "mtk"], acknowledging: [314])
    defer { receiver.stop() }
    #expect(await eventually { watch.lines.count >= 1 })
    watch.send(SIGINT)
    #expect(await eventually { receiver.commands.contains { $0.number == 161 } })
    watch.send(SIGINT)
    #expect(await watch.exitStatus() == 130, "stderr: \(watch.stderr)")
    #expect(watch.stderr.contains("without powering the receiver off"))
  }

  @Test("a second SIGTERM (timeout(1) sends two) does not cut the stop short: exit 0")
  func doubleTerm() async throws {
    // The standby is answered late: a watch that quit on the second SIGTERM would be gone.
    let (watch, receiver) = try start(
      ["--baud", "9600", "--chipset", "mtk"], acknowledging: [314, 161],
      delay: .milliseconds(300))
    defer { receiver.stop() }
    #expect(await eventually { watch.lines.count >= 1 })
    watch.send(SIGTERM)
    #expect(await eventually { watch.stderr.contains("stopping") })
    watch.send(SIGTERM)
    #expect(await watch.exitStatus() == 0, "stderr: \(watch.stderr)")
    #expect(receiver.answers.contains { $0.number == 161 && $0.whileRunning })
    #expect(!watch.stderr.contains("without powering"))
  }

  @Test("--linger: no standby while lingering; SIGINT cuts the linger short")
  func linger() async throws {
    let (watch, receiver) = try start(
      ["--baud", "9600", "--chipset", "mtk", "--count", "1", "--linger", "600"],
      acknowledging: [314, 161])
    defer { receiver.stop() }
    #expect(await eventually { watch.lines.count == 1 })
    try await Task.sleep(for: .milliseconds(500))
    #expect(watch.isRunning)
    #expect(!receiver.commands.contains { $0.number == 161 }, "powered off during the linger")
    watch.send(SIGINT)
    #expect(await watch.exitStatus(within: .seconds(60)) == 0, "stderr: \(watch.stderr)")
    #expect(receiver.commands.filter { $0.number == 161 }.first?.whileRunning == true)
  }

  @Test("a missing device: the port's message naming it, exit 1")
  func missingDevice() async throws {
    let path = "/dev/serialgps-test-missing-\(UInt32.random(in: 0...UInt32.max))"
    let watch = try WatchProcess(["watch", path, "--baud", "9600"])
    #expect(await watch.exitStatus() == 1)
    #expect(watch.stdout.isEmpty)
    #expect(watch.stderr.contains("\(path) does not exist"), "\(watch.stderr)")
    #expect(watch.stderr.contains("/dev/serial/by-id"), "says where to look")
  }

  @Test("not a serial port: the port's message, exit 1")
  func notATerminal() async throws {
    let path = FileManager.default.temporaryDirectory
      .appendingPathComponent("serialgps-watch-\(UInt32.random(in: 0...UInt32.max))").path
    #expect(FileManager.default.createFile(atPath: path, contents: Data()))
    defer { try? FileManager.default.removeItem(atPath: path) }
    let watch = try WatchProcess(["watch", path, "--baud", "9600"])
    #expect(await watch.exitStatus() == 1)
    #expect(watch.stderr.contains("\(path) is not a serial port"), "\(watch.stderr)")
  }

  // Without a DEVICE, watch asks discovery: tested with mock devices in
  // DiscoveryTests ("watch with no DEVICE …"), where the ports present are known.
  @Test("--help")
  func helpText() async throws {
    let help = try WatchProcess(["watch", "--help"])
    #expect(await help.exitStatus() == 0)
    #expect(help.stdout.contains("--linger"))
    #expect(help.stdout.contains("Without DEVICE it uses the first receiver found"))
  }
}
