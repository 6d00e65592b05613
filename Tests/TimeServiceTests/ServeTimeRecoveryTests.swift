import Foundation
import Glibc
import NMEA
import POSIX
import SerialPort
import Testing
import TimeService

/// A 5 Hz receiver on a pty behind a stable symbolic link, each epoch stamped with its due
/// time (a multiple of 200 ms) and written 100 ms after it: it can lose its fix (epochs with
/// the right time, RMC status V, GGA quality 0, as a receiver that lost its satellites prints
/// them) and be unplugged and plugged in again (a new pty at the same link). It records which
/// epochs it wrote with a fix, in milliseconds since the epoch, and whether to the first or a
/// later pty.
final class SteppedReceiver: @unchecked Sendable {
  let link: String
  private let pty: Locked<PseudoTerminal>
  let hasFix = Locked(true)
  private let stopped = Locked(false)
  private var thread: OwnThread?
  /// Epochs written, by due time in milliseconds: whether with a fix, and the plug count.
  let written = Locked<[Int64: (fix: Bool, plug: Int)]>([:])
  private let plugs = Locked(0)

  init(link: String) throws {
    self.link = link
    pty = Locked(try PseudoTerminal(symlink: link))
  }

  func start() {
    let (pty, stopped, hasFix, written, plugs) = (pty, stopped, hasFix, written, plugs)
    thread = OwnThread.start(name: "test-receiver") {
      let now = PosixTime.now()
      var due = now.seconds * 1000 + Int64(now.nanoseconds / 1_000_000) / 200 * 200 + 200
      while !stopped.withLock({ $0 }) {
        let write = PosixTime(seconds: due / 1000, nanoseconds: due % 1000 * 1_000_000)
        let left = write + .milliseconds(100) - PosixTime.now()
        if left > .zero { sleepThread(for: left) }
        let fix = hasFix.withLock { $0 }
        let port = pty.withLock { $0 }
        // Bounded: a pty nobody reads (serve reconnecting) must not block the receiver.
        try? port.write(simulatedEpoch(milliseconds: due, fix: fix), timeout: .milliseconds(100))
        written.withLock { $0[due] = (fix, plugs.withLock { $0 }) }
        due += 200
      }
    }
  }

  /// Unplugs the receiver (its port sees a hang-up) and plugs it in again at once: a new pty
  /// at the same link.
  func replug() throws {
    let old = pty.withLock { $0 }
    old.hangUp()
    let new = try PseudoTerminal(symlink: link)
    pty.withLock { $0 = new }
    plugs.withLock { $0 += 1 }
  }

  func stop() async {
    stopped.withLock { $0 = true }
    await thread?.join()
    pty.withLock { $0 }.hangUp()
  }

}

/// `serialgps serve --time` keeps serving through what happens to a time server: chronyd
/// killed and started again, the fix lost for a while, the receiver unplugged and back — all
/// in one serve process, against a real chronyd (issue 13, "Tests with the real clients").
@Suite(
  "serialgps serve --time recovers", .serialized,
  .enabled(if: Tools.chrony, "chrony is not installed, or not running as root"))
struct ServeTimeRecoveryTests {
  /// A gpsd client that asks for pps and prints each TOFF's real time in milliseconds, at once.
  static let toffWatcher = """
    import json, socket, sys
    s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
    s.sendall(b'?WATCH={"enable":true,"json":true,"pps":true};\\n')
    buffer = b""
    while True:
        data = s.recv(65536)
        if not data:
            break
        *lines, buffer = (buffer + data).split(b"\\r\\n")
        for line in lines:
            report = json.loads(line)
            if report.get("class") == "TOFF":
                print(report["real_sec"] * 1000 + report["real_nsec"] // 1000000, flush=True)
    """

  /// SOCK samples chronyd holds now.
  static func sockSamples(_ chronyd: Chronyd) async throws -> Int {
    ChronydTests.offsets(try await chronyd.chronyc("sourcestats"))["SOCK"]?.samples ?? 0
  }

  @Test func chronydKilledAFixLostAndAReceiverReplugged() async throws {
    let chronyd = try Chronyd(unit: freeSharedMemoryUnit())
    let receiver = try SteppedReceiver(link: chronyd.directory.path + "/gps0")
    let logPath = chronyd.directory.path + "/serve.log"
    _ = FileManager.default.createFile(atPath: logPath, contents: nil)
    let serve = Process()
    let watcher = Process()
    defer {
      if serve.isRunning { serve.terminate() }
      if watcher.isRunning { watcher.terminate() }
    }
    func output() -> String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }
    do {
      try await chronyd.start()
      serve.executableURL = URL(fileURLWithPath: try ServeTimeTests.binary())
      serve.arguments = [
        "serve", "--listen", "127.0.0.1:0", "--time", "--chrony-socket", chronyd.socketPath,
        "--ntp-shm", String(chronyd.unit), "--baud", "9600", "--chipset", "nmea", receiver.link,
      ]
      serve.standardInput = FileHandle.nullDevice
      serve.standardOutput = FileHandle.nullDevice
      let log = try #require(FileHandle(forWritingAtPath: logPath))
      serve.standardError = log
      try await onThread { try startWithSignalsUnblocked(serve) }
      // The time service is made while the server starts; serve says where it listens after.
      for _ in 0..<500
      where !(output().contains("serving time to") && output().contains(" and serving time for ")) {
        try await Task.sleep(for: .milliseconds(20))
      }
      let port = try #require(
        output().split(separator: "listening on 127.0.0.1:").dropFirst().first?.prefix {
          $0.isNumber
        }, "\(output())")
      let toffs = Pipe()
      watcher.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
      watcher.arguments = ["-c", Self.toffWatcher, String(port)]
      watcher.standardOutput = toffs
      try watcher.run()
      receiver.start()

      // chronyd takes samples, is killed (no goodbye: its socket file stays) and started
      // again at the same path: the new one gets samples from the same serve.
      var samples = 0
      for _ in 0..<60 where samples < 2 {
        try await Task.sleep(for: .milliseconds(250))
        samples = try await Self.sockSamples(chronyd)
      }
      try #require(samples >= 2, "no samples before the kill\n\(output())\n\(chronyd.log)")
      await chronyd.kill()
      try await Task.sleep(for: .milliseconds(500))
      try await chronyd.restart()
      samples = 0
      for _ in 0..<60 where samples < 2 {
        try await Task.sleep(for: .milliseconds(250))
        samples = try await Self.sockSamples(chronyd)
      }
      #expect(samples >= 2, "no samples after the restart\n\(output())\n\(chronyd.log)")

      // The fix lost for a second, then back.
      receiver.hasFix.withLock { $0 = false }
      try await Task.sleep(for: .seconds(1))
      receiver.hasFix.withLock { $0 = true }
      try await Task.sleep(for: .seconds(1))

      // Unplugged and back at once: serve reopens the link and serves time again.
      try receiver.replug()
      try await Task.sleep(for: .milliseconds(2500))
      #expect(serve.isRunning, "\(output())")
      serve.terminate()
      _ = try await onThread { serve.waitUntilExit() }
      _ = try await onThread { watcher.waitUntilExit() }
      #expect(serve.terminationStatus == 0, "\(output())")

      let published = Set(
        String(decoding: toffs.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
          .split(separator: "\n").compactMap { Int64($0) })
      let written = receiver.written.withLock { $0 }
      // The samples sent while chronyd was away found no listener, and serve went on.
      let summary = try #require(
        output().split(separator: "\n").first { $0.contains(": time: ") }, "\(output())")
      #expect(summary.contains(" without chronyd"), "\(summary)")
      // Never a sample of an epoch without a fix.
      let lost = written.filter { !$0.value.fix }.keys.sorted()
      #expect(lost.count >= 4, "\(lost)")
      #expect(
        published.isDisjoint(with: lost),
        "samples while the fix was lost: \(published.intersection(lost).sorted())")
      // Samples resume after the fix returns (trust settles over three epochs) …
      let afterFix = written.filter { $0.value.fix && $0.key > lost.last! && $0.value.plug == 0 }
      #expect(
        published.intersection(afterFix.keys).count >= 2, "\(published.sorted())\n\(output())")
      // … and after the replug, on the new pty.
      let afterReplug = written.filter { $0.value.plug == 1 }.keys
      #expect(published.intersection(afterReplug).count >= 2, "\(published.sorted())\n\(output())")
    } catch {
      await receiver.stop()
      await chronyd.remove()
      throw error
    }
    await receiver.stop()
    await chronyd.remove()
  }
}
