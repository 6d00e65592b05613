import Foundation
import Glibc
import NMEA
import POSIX
import SerialPort
import Testing
import TimeService

/// A receiver on a pty that writes each epoch stamped with the current UTC second, its first
/// byte `delay` after the second begins: first `coldEpochs` epochs of an unsynchronised clock
/// (status V, GGA quality 0, a time 37 s off, as a MediaTek prints before its first fix), then
/// a valid fix every second until stopped.
final class ClockedReceiver: @unchecked Sendable {
  let pty: PseudoTerminal
  let delay: Duration
  let coldEpochs: Int
  private let stopped = Locked(false)
  private var thread: OwnThread?
  /// How late each valid epoch was written after its due time, in seconds (the thread's own
  /// wake-up: on a loaded machine a few milliseconds, which is the simulator's error, not
  /// serve's).
  private let lateness = Locked<[Int64: Double]>([:])

  var medianLateness: Double {
    let sorted = lateness.withLock { $0 }.values.sorted()
    return sorted.isEmpty ? 0 : sorted[sorted.count / 2]
  }

  /// How late the epoch stamped `second` was written.
  func lateness(ofEpochAt second: Int64) -> Double? { lateness.withLock { $0[second] } }

  init(delay: Duration, coldEpochs: Int) throws {
    pty = try PseudoTerminal()
    self.delay = delay
    self.coldEpochs = coldEpochs
  }

  /// Starts writing (once the port is open: what is written before may be flushed).
  func start() {
    let (pty, stopped, delay, coldEpochs) = (self.pty, self.stopped, self.delay, self.coldEpochs)
    let lateness = self.lateness
    thread = OwnThread.start(name: "test-receiver") {
      var second = PosixTime.now().seconds + 1
      var written = 0
      while !stopped.withLock({ $0 }) {
        let due = PosixTime(seconds: second, nanoseconds: 0) + delay
        let left = due - PosixTime.now()
        if left > .zero { sleepThread(for: left) }
        let cold = written < coldEpochs
        let bytes = simulatedEpoch(milliseconds: (cold ? second + 37 : second) * 1000, fix: !cold)
        let late = PosixTime.now() - due
        // Bounded: once serve has gone nobody reads, and a full pty would block for ever.
        try? pty.write(bytes, timeout: .milliseconds(500))
        if !cold { lateness.withLock { $0[second] = late.inSeconds } }
        written += 1
        second += 1
      }
    }
  }

  func stop() async {
    stopped.withLock { $0 = true }
    await thread?.join()
  }

}

/// GGA, GSA, RMC of the epoch due at `milliseconds` since 1970; without a fix as a receiver's
/// RTC prints them.
func simulatedEpoch(milliseconds: Int64, fix: Bool) -> [UInt8] {
  var value = time_t(milliseconds / 1000)
  var broken = tm()
  gmtime_r(&value, &broken)
  func two(_ n: Int32) -> String { n < 10 ? "0\(n)" : "\(n)" }
  let fraction = String(milliseconds % 1000 + 1000).dropFirst()
  let time = two(broken.tm_hour) + two(broken.tm_min) + two(broken.tm_sec) + "." + fraction
  let date = two(broken.tm_mday) + two(broken.tm_mon + 1) + two(broken.tm_year % 100)
  if fix {
    return wire("GPGGA,\(time),4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,")
      + wire("GPGSA,A,3,04,05,09,12,,,,,,,,,2.5,1.3,2.1")
      + wire("GPRMC,\(time),A,4807.038,N,01131.000,E,0.0,0.0,\(date),,,A")
  }
  return wire("GPGGA,\(time),,,,,0,00,99.99,,,,,,")
    + wire("GPGSA,A,1,,,,,,,,,,,,,99.99,99.99,99.99")
    + wire("GPRMC,\(time),V,,,,,0.00,0.00,\(date),,,N")
}

/// `serialgps serve --time` as users run it, against a real chronyd (docs/time.md).
@Suite(
  "serialgps serve --time", .serialized,
  .enabled(if: Tools.chrony, "chrony is not installed, or not running as root"))
struct ServeTimeTests {
  /// Whether to hold serve to a bound in milliseconds: not in `make test-tsan` (which sets
  /// TSAN_OPTIONS), where the instrumented serve on two shared cores at load 10 was 70 ms off.
  static let timingChecked = getenv("TSAN_OPTIONS") == nil

  /// The built `serialgps`, next to the test bundle.
  static func binary() throws -> String {
    let bundle = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
    let candidates = [bundle, bundle.deletingLastPathComponent()].map {
      $0.appendingPathComponent("serialgps").path
    }
    return try #require(
      candidates.first { FileManager.default.isExecutableFile(atPath: $0) },
      "serialgps not built next to the tests; run swift build --build-tests")
  }

  /// Two watchers for three seconds, one with pps and one without; each line printed with
  /// its watcher's name.
  static let watcherScript = """
    import select, socket, sys, time
    port = int(sys.argv[1])
    watchers = {}
    for name, watch in (("pps", '{"enable":true,"json":true,"pps":true}'),
                        ("plain", '{"enable":true,"json":true}')):
        s = socket.create_connection(("127.0.0.1", port))
        s.sendall(("?WATCH=" + watch + ";\\n").encode())
        watchers[s] = (name, b"")
    end = time.time() + 3.5
    while time.time() < end:
        ready, _, _ = select.select(list(watchers), [], [], 0.2)
        for s in ready:
            name, buffer = watchers[s]
            buffer += s.recv(65536)
            *lines, buffer = buffer.split(b"\\r\\n")
            watchers[s] = (name, buffer)
            for line in lines:
                print(name, line.decode())
    """

  @Test(
    "chronyd sees the receiver's delay less --time-offset on SOCK and SHM; no sample from the clock before the fix"
  )
  func chronydSeesTheServedTime() async throws {
    let chronyd = try Chronyd(unit: freeSharedMemoryUnit())
    // Epochs 200 ms after their second; serve told the receiver is 50 ms late: the samples
    // are 150 ms late, which chronyd reports as the local clock 150 ms ahead.
    let receiver = try ClockedReceiver(delay: .milliseconds(200), coldEpochs: 5)
    do {
      try await chronyd.start()
      try await Self.serveTime(to: chronyd, from: receiver)
    } catch {
      await receiver.stop()
      await chronyd.remove()
      throw error
    }
    await receiver.stop()
    await chronyd.remove()
  }

  static func serveTime(to chronyd: Chronyd, from receiver: ClockedReceiver) async throws {
    let logPath = chronyd.directory.path + "/serve.log"
    _ = FileManager.default.createFile(atPath: logPath, contents: nil)
    let log = try #require(FileHandle(forWritingAtPath: logPath))
    let serve = Process()
    serve.executableURL = URL(fileURLWithPath: try binary())
    serve.arguments = [
      "serve", "--listen", "127.0.0.1:0", "--time", "--time-offset", "50", "--chrony-socket",
      chronyd.socketPath, "--ntp-shm", String(chronyd.unit), "--baud", "9600", "--chipset",
      "nmea", receiver.pty.devicePath,
    ]
    serve.standardInput = FileHandle.nullDevice
    serve.standardOutput = FileHandle.nullDevice
    serve.standardError = log
    try await onThread { try startWithSignalsUnblocked(serve) }
    defer { if serve.isRunning { serve.terminate() } }
    func output() -> String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }
    // The receiver is subscribed (its port opened) as soon as serve serves time from it.
    for _ in 0..<500 where !output().contains("serving time to") {
      try await Task.sleep(for: .milliseconds(20))
    }
    try #require(output().contains("serving time to"), "\(output())")
    try await Task.sleep(for: .milliseconds(500))
    receiver.start()

    var stats: [String: (samples: Int, offset: Double, deviation: Double)] = [:]
    for _ in 0..<120 {
      try await Task.sleep(for: .milliseconds(250))
      stats = ChronydTests.offsets(try await chronyd.chronyc("sourcestats"))
      if (stats["SOCK"]?.samples ?? 0) >= 4 && (stats["SHM"]?.samples ?? 0) >= 4 { break }
    }
    // A raw gpsd client that asks for pps gets a TOFF per sample: the receiver's second and
    // the raw arrival of its first byte (no offset applied), 200 ms later; one that does not
    // ask gets none.
    let port = try #require(
      output().split(separator: "listening on 127.0.0.1:").dropFirst().first?.prefix {
        $0.isNumber
      }, "\(output())")
    let watchers = try await onThread {
      try Tools.run("/usr/bin/python3", ["-c", watcherScript, String(port)])
    }
    serve.terminate()
    _ = try await onThread { serve.waitUntilExit() }
    let lateness = receiver.medianLateness
    let toffs = watchers.output.split(separator: "\n").filter { $0.hasPrefix("pps ") }
      .compactMap { line -> [String: Any]? in
        try? JSONSerialization.jsonObject(with: Data(line.dropFirst(4).utf8)) as? [String: Any]
      }.filter { $0["class"] as? String == "TOFF" }
    try #require(toffs.count >= 2, "\(watchers.output) \(watchers.error)")
    // Each TOFF against the write of its own epoch: the median within 10 ms, as chronyd's
    // figures below (one sample alone carries the reader's scheduling, seen 15 ms late under
    // the full parallel test run on two shared cores).
    var errors: [Double] = []
    for toff in toffs {
      #expect(toff["device"] as? String == receiver.pty.devicePath)
      #expect(toff["real_nsec"] as? Int == 0)
      let real = toff["real_sec"] as? Int ?? 0
      let clock =
        Double(toff["clock_sec"] as? Int ?? 0) + Double(toff["clock_nsec"] as? Int ?? 0) / 1e9
      let late = try #require(receiver.lateness(ofEpochAt: Int64(real)), "\(toff)")
      errors.append(clock - Double(real) - 0.200 - late)
    }
    errors.sort()
    #expect(errors.allSatisfy { $0 > -0.001 }, "TOFF clock − write: \(errors)")
    if timingChecked {
      #expect(abs(errors[errors.count / 2]) < 0.010, "TOFF clock − write: \(errors)")
      #expect(errors.allSatisfy { $0 < 0.050 }, "TOFF clock − write: \(errors)")
    }
    #expect(!watchers.output.contains("plain {\"class\":\"TOFF\""), "\(watchers.output)")
    #expect(watchers.output.contains("plain {\"class\":\"TPV\""), "\(watchers.output)")
    let output = output()
    #expect(serve.terminationStatus == 0, "\(output)")
    // Within 10 ms: a debug build on an idle core is within a millisecond (scripts/
    // bench-time.py: 0.2 ms at the median), but `make test-tsan` runs this with the
    // ThreadSanitizer build of serve, whose reader was 5.1 ms late on two shared cores at load
    // 8. 10 ms still tells 150 ms (offset applied) from 200 (not applied) and 250 (sign wrong).
    for name in ["SOCK", "SHM"] {
      let figures = try #require(stats[name], "\(name) missing: \(stats)\n\(output)")
      #expect(figures.samples >= 4, "\(name): \(figures)")
      #expect(
        !timingChecked || abs(figures.offset - 0.150 - lateness) < 0.010,
        "\(name): \(figures), writer \(lateness) s late\n\(output)")
    }
    // The five epochs of the receiver's own clock were refused for want of a fix; had one
    // been taken, its 37 s would have wrecked chronyd's figures above.
    let summary = try #require(
      output.split(separator: "\n").first { $0.contains(": time: ") }, "\(output)")
    // Exactly the five, first in the list; under heavy load (12 on two cores) an epoch read
    // over 500 ms late also counts as a jump and trust settles again, so what follows varies.
    #expect(summary.contains("(refused: no fix 5, "), "\(summary)")
    #expect(summary.contains("settling "), "\(summary)")
    #expect(summary.contains(chronyd.socketPath + ": "), "\(summary)")
    #expect(summary.contains("NTP\(chronyd.unit): "), "\(summary)")
  }
}
