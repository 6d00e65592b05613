import Foundation
import Glibc
import POSIX
import SerialPort
import Testing
import TimeService

/// A 1 Hz receiver on a pty whose clock can be set off the true time: each epoch is written
/// 200 ms after its true second, stamped with that second plus ``shift``. It records the stamp
/// of every epoch it wrote with the phase of the test it was written in.
final class ShiftedReceiver: @unchecked Sendable {
  let pty: PseudoTerminal
  /// Seconds added to the true second in each epoch's stamp.
  let shift = Locked<Int64>(0)
  /// The phase each epoch is written in (set by the test).
  let phase = Locked(0)
  /// Stamps written, in seconds since 1970, with their phase.
  let written = Locked<[Int64: Int]>([:])
  private let stopped = Locked(false)
  private var thread: OwnThread?

  init(shift: Int64) throws {
    pty = try PseudoTerminal()
    self.shift.withLock { $0 = shift }
  }

  func start() {
    let (pty, stopped, shift, phase, written) = (pty, stopped, shift, phase, written)
    thread = OwnThread.start(name: "test-receiver") {
      var second = PosixTime.now().seconds + 1
      while !stopped.withLock({ $0 }) {
        let left = PosixTime(seconds: second, nanoseconds: 200_000_000) - PosixTime.now()
        if left > .zero { sleepThread(for: left) }
        let stamp = second + shift.withLock { $0 }
        try? pty.write(
          simulatedEpoch(milliseconds: stamp * 1000, fix: true), timeout: .milliseconds(500))
        let current = phase.withLock { $0 }
        written.withLock { $0[stamp] = current }
        second += 1
      }
    }
  }

  func stop() async {
    stopped.withLock { $0 = true }
    await thread?.join()
  }
}

/// `serve --time` when the receiver's clock steps, against a real chronyd: a receiver that
/// was wrong and becomes right is followed, one that was right and becomes wrong is not, and
/// each step is said in the log when it happens (docs/time.md, "When the time steps").
@Suite(
  "serialgps serve --time through steps of the receiver's clock", .serialized,
  .enabled(if: Tools.chrony, "chrony is not installed, or not running as root"))
struct ServeTimeStepTests {
  /// Within 50 ms of the receiver's delay, except under ThreadSanitizer (whose serve was
  /// 70 ms late on two loaded cores); either tells 0.2 s from an hour.
  static let tolerance = ServeTimeTests.timingChecked ? 0.05 : 0.5

  /// A running `serve --time` against a chronyd, fed by a ``ShiftedReceiver``.
  struct Run {
    let chronyd: Chronyd
    let receiver: ShiftedReceiver
    let logPath: String
    let toffPath: String

    func output() -> String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    /// The stamps published as TOFF so far that the receiver wrote in `phase`, in seconds.
    func published(in phase: Int) -> [Int64] {
      let written = receiver.written.withLock { $0 }
      return ((try? String(contentsOfFile: toffPath, encoding: .utf8)) ?? "")
        .split(separator: "\n").compactMap { Int64($0) }.map { $0 / 1000 }
        .filter { written[$0] == phase }
    }

    func waitFor(_ what: String, seconds: Int = 15, _ condition: () -> Bool) async throws {
      for _ in 0..<(seconds * 10) where !condition() {
        try await Task.sleep(for: .milliseconds(100))
      }
      try #require(condition(), "\(what)\n\(output())")
    }

    /// Waits until chronyd's last SOCK sample is within `tolerance` of `offset` seconds
    /// (local clock minus source); returns the last one seen.
    func chronydSample(near offset: Double, tolerance: Double) async throws -> Double? {
      var last: Double?
      for _ in 0..<60 {
        let sources = try await chronyd.chronyc("sources")
        last = sources.first { $0.count > 7 && $0[2] == "SOCK" }.flatMap { Double($0[7]) }
        if let last, abs(last - offset) < tolerance { break }
        try await Task.sleep(for: .milliseconds(250))
      }
      return last
    }

    func says(_ text: String, withSeconds values: [String]) -> Bool {
      values.contains { output().contains(text.replacingOccurrences(of: "#", with: $0)) }
    }
  }

  /// Starts chronyd, `serve --time` and a TOFF watcher, then the receiver; runs `body`; stops
  /// `serve` (checking it exits 0) and removes everything. Returns what serve logged.
  @discardableResult
  static func withServe(receiver: ShiftedReceiver, _ body: (Run) async throws -> Void)
    async throws -> String
  {
    let chronyd = try Chronyd(unit: freeSharedMemoryUnit())
    let run = Run(
      chronyd: chronyd, receiver: receiver, logPath: chronyd.directory.path + "/serve.log",
      toffPath: chronyd.directory.path + "/toff.txt")
    for path in [run.logPath, run.toffPath] {
      _ = FileManager.default.createFile(atPath: path, contents: nil)
    }
    let serve = Process()
    let watcher = Process()
    defer {
      if serve.isRunning { serve.terminate() }
      if watcher.isRunning { watcher.terminate() }
    }
    do {
      try await chronyd.start()
      serve.executableURL = URL(fileURLWithPath: try ServeTimeTests.binary())
      serve.arguments = [
        "serve", "--listen", "127.0.0.1:0", "--time", "--chrony-socket", chronyd.socketPath,
        "--ntp-shm", String(chronyd.unit), "--pps", "none", "--baud", "9600", "--chipset",
        "nmea", receiver.pty.devicePath,
      ]
      serve.standardInput = FileHandle.nullDevice
      serve.standardOutput = FileHandle.nullDevice
      let log = try #require(FileHandle(forWritingAtPath: run.logPath))
      serve.standardError = log
      try await onThread { try startWithSignalsUnblocked(serve) }
      // The receiver's time service is made first, then serve says where it listens.
      try await run.waitFor("serve did not start") {
        run.output().contains("serving time to") && run.output().contains(" and serving time for ")
      }
      let port = try #require(
        run.output().split(separator: "listening on 127.0.0.1:").dropFirst().first?.prefix {
          $0.isNumber
        }, "\(run.output())")
      watcher.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
      watcher.arguments = ["-c", ServeTimeRecoveryTests.toffWatcher, String(port)]
      let toffLog = try #require(FileHandle(forWritingAtPath: run.toffPath))
      watcher.standardOutput = toffLog
      try watcher.run()
      try await Task.sleep(for: .milliseconds(300))
      receiver.start()
      try await body(run)
      serve.terminate()
      _ = try await onThread { serve.waitUntilExit() }
      #expect(serve.terminationStatus == 0, "\(run.output())")
    } catch {
      await receiver.stop()
      await chronyd.remove()
      throw error
    }
    let output = run.output()
    await receiver.stop()
    await chronyd.remove()
    return output
  }

  /// chronyc shows a source late by 200 ms (the receiver's delay; no offset set) as +0.2 s,
  /// one an hour ahead as about −3600 s.
  @Test("wrong, then right: a receiver an hour ahead that steps back to the true time is followed")
  func aReceiverThatBecomesRightIsFollowed() async throws {
    let receiver = try ShiftedReceiver(shift: 3600)
    receiver.phase.withLock { $0 = 1 }
    try await Self.withServe(receiver: receiver) { run in
      // Nothing to compare it with: the receiver's time is served as it is.
      try await run.waitFor("no sample of the wrong clock") { run.published(in: 1).count >= 2 }
      let wrong = try await run.chronydSample(near: -3600, tolerance: 1)
      #expect(wrong.map { abs($0 + 3600) < 1 } == true, "\(String(describing: wrong))")

      // It decodes the satellites' time and steps back an hour, to the system clock's:
      // served after settling, not an hour later.
      receiver.phase.withLock { $0 = 2 }
      receiver.shift.withLock { $0 = 0 }
      try await run.waitFor("no sample after the step back", seconds: 10) {
        run.published(in: 2).count >= 2
      }
      // An hour, give or take the reader's jitter in the millisecond printed.
      #expect(
        run.says("the receiver's time stepped by #", withSeconds: ["-3599.9", "-3600.0"]),
        "\(run.output())")
      #expect(run.output().contains("now agrees with the system clock"), "\(run.output())")
      let right = try await run.chronydSample(near: 0.2, tolerance: Self.tolerance)
      #expect(right.map { abs($0 - 0.2) < Self.tolerance } == true, "\(String(describing: right))")
    }
  }

  @Test(
    "right, then wrong: a receiver that steps an hour away from the system clock is not followed, is said at once, and is served again when it returns"
  )
  func aReceiverThatBecomesWrongIsNotFollowed() async throws {
    let receiver = try ShiftedReceiver(shift: 0)
    receiver.phase.withLock { $0 = 1 }
    let output = try await Self.withServe(receiver: receiver) { run in
      try await run.waitFor("no sample") { run.published(in: 1).count >= 2 }
      let right = try await run.chronydSample(near: 0.2, tolerance: Self.tolerance)
      #expect(right.map { abs($0 - 0.2) < Self.tolerance } == true, "\(String(describing: right))")

      // A defect steps it an hour ahead: not followed, and said loudly when it happens.
      receiver.phase.withLock { $0 = 2 }
      receiver.shift.withLock { $0 = 3600 }
      try await run.waitFor("no warning of the step away", seconds: 10) {
        run.says("WARNING: the receiver's time stepped by #", withSeconds: ["+3599.9", "+3600.0"])
          || !run.published(in: 2).isEmpty
      }
      try await Task.sleep(for: .seconds(3))
      #expect(run.published(in: 2).isEmpty, "served the wrong time: \(run.published(in: 2))")
      #expect(
        run.says("WARNING: the receiver's time stepped by #", withSeconds: ["+3599.9", "+3600.0"]),
        "\(run.output())")
      let still = try await run.chronydSample(near: 0.2, tolerance: Self.tolerance)
      #expect(still.map { abs($0 - 0.2) < Self.tolerance } == true, "\(String(describing: still))")

      // Back to the true time: served again after settling.
      receiver.phase.withLock { $0 = 3 }
      receiver.shift.withLock { $0 = 0 }
      try await run.waitFor("no sample after the receiver returned", seconds: 10) {
        run.published(in: 3).count >= 2
      }
      #expect(
        run.output().contains("agrees with the system clock again"), "\(run.output())")
      #expect(run.published(in: 2).isEmpty, "served the wrong time: \(run.published(in: 2))")
    }
    // The refusals are in the figures serve prints at the end.
    let summary = try #require(
      output.split(separator: "\n").last { $0.contains(": time: ") }, "\(output)")
    #expect(summary.contains("away from the system clock "), "\(summary)")
  }
}
