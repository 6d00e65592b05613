import Foundation
import Glibc
import POSIX
import Testing
import TimeService

/// Debian's chronyd, run without control of the clock (`-x`), with a SOCK and an SHM
/// refclock at test paths, both `noselect` (a selected source would be followed, and
/// `chronyc sources` would show only what is left after correcting for it).
final class Chronyd: @unchecked Sendable {
  let directory: ScratchDirectory
  let socketPath: String
  let unit: Int
  private let process = Locked<Process?>(nil)

  init(unit: Int) throws {
    directory = try ScratchDirectory("chronyd")
    socketPath = directory.path + "/clk.sock"
    self.unit = unit
    let configuration = """
      refclock SOCK \(socketPath) refid SOCK poll 0 filter 8 noselect
      refclock SHM \(unit) refid SHM poll 0 noselect
      pidfile \(directory.path)/chronyd.pid
      bindcmdaddress \(directory.path)/chronyd.sock
      cmdport 0
      port 0

      """
    try configuration.write(
      toFile: directory.path + "/chrony.conf", atomically: true, encoding: .utf8)
  }

  /// Starts chronyd and waits until its refclock socket exists.
  func start() async throws {
    let chronyd = try #require(Tools.chronyd)
    let process = Process()
    process.executableURL = URL(fileURLWithPath: chronyd)
    process.arguments = ["-x", "-u", "root", "-d", "-f", directory.path + "/chrony.conf"]
    process.standardOutput = FileHandle.nullDevice
    let logPath = directory.path + "/chronyd.log"
    if !FileManager.default.fileExists(atPath: logPath) {
      _ = FileManager.default.createFile(atPath: logPath, contents: nil)
    }
    let log = try #require(FileHandle(forWritingAtPath: logPath))
    log.seekToEndOfFile()
    process.standardError = log
    try await onThread { try startWithSignalsUnblocked(process) }
    self.process.withLock { $0 = process }
    for _ in 0..<200 where !FileManager.default.fileExists(atPath: socketPath) {
      try await Task.sleep(for: .milliseconds(10))
    }
    try #require(
      FileManager.default.fileExists(atPath: socketPath), "chronyd did not start: \(log)")
  }

  /// Stops chronyd and waits until it has gone.
  func stop() async {
    guard let process = process.withLock({ $0 }) else { return }
    process.terminate()
    _ = try? await onThread { process.waitUntilExit() }
    self.process.withLock { $0 = nil }
  }

  /// Kills chronyd with SIGKILL, as the OOM killer would: it cannot clean up, so its socket
  /// files stay behind. Waits until it has gone.
  func kill() async {
    guard let process = process.withLock({ $0 }) else { return }
    _ = Glibc.kill(process.processIdentifier, SIGKILL)
    _ = try? await onThread { process.waitUntilExit() }
    self.process.withLock { $0 = nil }
  }

  /// Starts chronyd again after ``kill()``: its old socket file is there until the new one
  /// replaces it, so this waits until chronyc gets an answer.
  func restart() async throws {
    try await start()
    for _ in 0..<200 {
      if let chronyc = Tools.chronyc,
        let run = try? await onThread({
          try Tools.run(
            chronyc, ["-n", "-c", "-h", self.directory.path + "/chronyd.sock", "tracking"])
        }), run.status == 0
      {
        return
      }
      try await Task.sleep(for: .milliseconds(10))
    }
    Issue.record("chronyd did not answer after its restart: \(log)")
  }

  var log: String {
    (try? String(contentsOfFile: directory.path + "/chronyd.log", encoding: .utf8)) ?? ""
  }

  /// chronyc's CSV answer to `command`, one array of fields per source.
  func chronyc(_ command: String) async throws -> [[String]] {
    let chronyc = try #require(Tools.chronyc)
    let arguments = ["-n", "-c", "-h", directory.path + "/chronyd.sock", command]
    let run = try await onThread { try Tools.run(chronyc, arguments) }
    try #require(run.status == 0, "chronyc \(command): \(run.error)")
    return run.output.split(separator: "\n").map {
      $0.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
    }
  }

  func remove() async {
    await stop()
    // The next unit too: serve takes it for PPS, and it is this test's (freeSharedMemoryUnit).
    removeSharedMemorySegment(unit)
    removeSharedMemorySegment(unit + 1)
    directory.remove()
  }
}

@Suite(
  "chronyd reads the samples", .serialized,
  .enabled(if: Tools.chrony, "chrony is not installed, or not running as root"))
struct ChronydTests {
  /// Samples our writers delivered to the socket, and those that found no chronyd.
  typealias Counts = (sent: Int, noListener: Int)

  /// Starts chronyd and a feeder thread that owns the writers and sends samples whose true
  /// time is the system time + 150 ms to both refclocks, ten a second; runs `body`; stops and
  /// removes everything whatever `body` did.
  static func withFeedChronyd(
    _ body: (Chronyd, Locked<Counts>) async throws -> Void
  ) async throws {
    let chronyd = try Chronyd(unit: freeSharedMemoryUnit())
    let stop = Locked(false)
    let counts = Locked<Counts>((0, 0))
    let socketPath = chronyd.socketPath
    let unit = chronyd.unit
    let feeder = Thread {
      let chrony = ChronySocket(path: socketPath)
      guard let shm = try? NTPSharedMemory(unit: unit, precision: -10) else { return }
      while !stop.withLock({ $0 }) {
        let now = PosixTime.now()
        chrony.send(real: now + .milliseconds(150), clock: now)
        shm.write(real: now + .milliseconds(150), clock: now)
        counts.withLock { $0 = (chrony.sent, chrony.noListener) }
        usleep(100_000)
      }
    }
    do {
      try await chronyd.start()
      feeder.start()
      try await body(chronyd, counts)
    } catch {
      stop.withLock { $0 = true }
      await chronyd.remove()
      throw error
    }
    stop.withLock { $0 = true }
    await chronyd.remove()
  }

  /// chronyc -c sourcestats: name, NP, NR, span, frequency, skew, offset (s), std dev (s).
  static func offsets(_ rows: [[String]]) -> [String: (
    samples: Int, offset: Double, deviation: Double
  )] {
    var result: [String: (Int, Double, Double)] = [:]
    for row in rows where row.count >= 8 {
      guard let samples = Int(row[1]), let offset = Double(row[6]), let deviation = Double(row[7])
      else { continue }
      result[row[0]] = (samples, offset, deviation)
    }
    return result
  }

  @Test func bothRefclocksShowTheOffsetPutIn() async throws {
    try await Self.withFeedChronyd { chronyd, counts in
      // chronyd takes a sample from each refclock every second (poll 0): wait for several.
      var stats: [String: (samples: Int, offset: Double, deviation: Double)] = [:]
      for _ in 0..<40 {
        try await Task.sleep(for: .milliseconds(250))
        stats = Self.offsets(try await chronyd.chronyc("sourcestats"))
        if (stats["SOCK"]?.samples ?? 0) >= 4 && (stats["SHM"]?.samples ?? 0) >= 4 { break }
      }
      let sources = try await chronyd.chronyc("sources")
      // chronyc reports how far the local clock is from the source: a source 150 ms ahead
      // of the system clock shows as −150 ms.
      for name in ["SOCK", "SHM"] {
        let figures = try #require(stats[name], "\(name) missing: \(stats) \(chronyd.log)")
        #expect(figures.samples >= 4, "\(name): \(figures)")
        #expect(abs(figures.offset + 0.150) < 0.0005, "\(name): \(figures)")
        #expect(figures.deviation < 0.001, "\(name): \(figures)")
        let row = try #require(sources.first { $0.count > 2 && $0[2] == name })
        let last = try #require(Double(row[7]))
        #expect(abs(last + 0.150) < 0.0005, "\(name) last sample: \(row)")
      }
      #expect(counts.withLock { $0.sent } > 0)
    }
  }

  /// chronyd killed and started again: the writer never fails, loses the samples while
  /// chronyd is away and reaches the new one.
  @Test func chronyKilledAndRestarted() async throws {
    try await Self.withFeedChronyd { chronyd, counts in
      #expect(await eventually { counts.withLock { $0.sent } >= 5 })
      await chronyd.stop()
      #expect(await eventually { counts.withLock { $0.noListener } >= 5 })
      let sentWhileAway = counts.withLock { $0.sent }
      try await chronyd.start()
      #expect(await eventually { counts.withLock { $0.sent } >= sentWhileAway + 10 })
      // The new chronyd took samples from the socket.
      var samples = 0
      for _ in 0..<40 {
        samples = Self.offsets(try await chronyd.chronyc("sourcestats"))["SOCK"]?.samples ?? 0
        if samples >= 2 { break }
        try await Task.sleep(for: .milliseconds(250))
      }
      #expect(samples >= 2, "\(chronyd.log)")
    }
  }
}

/// Polls `condition` every 20 ms for up to 10 s.
func eventually(_ condition: () -> Bool) async -> Bool {
  for _ in 0..<500 {
    if condition() { return true }
    try? await Task.sleep(for: .milliseconds(20))
  }
  return condition()
}
