import Foundation
import Glibc
import SerialPort
import Testing

// The executable tests run the built `serialgps watch` against a pty whose controller side
// this process drives: a small MediaTek-like receiver that streams epochs, records what the
// driver writes and acknowledges `$PMTK` commands when told to. All waits poll with generous
// deadlines; nothing asserts how long anything took.

/// A sentence with its checksum and CR LF.
func sentence(_ body: String) -> String {
  var sum: UInt8 = 0
  for byte in body.utf8 { sum ^= byte }
  let hex = String(sum, radix: 16, uppercase: true)
  return "$" + body + "*" + (hex.count == 1 ? "0" + hex : hex) + "\r\n"
}

/// `hhmmss.00` for the epoch `index` seconds after 12:00:00.
func epochTime(_ index: Int) -> String {
  func two(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }
  return "12" + two(index / 60 % 60) + two(index % 60) + ".00"
}

/// One second of a receiver at rest in Zurich: RMC, GGA, GSA, GST.
func epoch(_ index: Int) -> String {
  let time = epochTime(index)
  return sentence("GNRMC,\(time),A,4722.61420,N,00832.50210,E,10.000,90.00,300326,,,A,V")
    + sentence("GNGGA,\(time),4722.61420,N,00832.50210,E,1,08,0.90,408.3,M,47.4,M,,")
    + sentence("GNGSA,A,3,01,03,,,,,,,,,,,1.50,0.90,1.20,1")
    + sentence("GNGST,\(time),1.0,2.0,1.5,45.0,1.2,1.6,2.5")
}

/// Polls `condition` every 20 ms until it holds or `timeout` passes; for waiting on the child
/// process and the fake receiver's threads, never for asserting durations.
func eventually(timeout: Duration = .seconds(30), _ condition: () -> Bool) async -> Bool {
  let deadline = ContinuousClock.now + timeout
  while ContinuousClock.now < deadline {
    if condition() { return true }
    try? await Task.sleep(for: .milliseconds(20))
  }
  return condition()
}

/// The same, blocking the calling thread (for the fake receiver's own threads).
func eventuallyBlocking(timeout: Duration, _ condition: () -> Bool) -> Bool {
  let deadline = ContinuousClock.now + timeout
  while ContinuousClock.now < deadline {
    if condition() { return true }
    usleep(20_000)
  }
  return condition()
}

/// The controller side of a pty playing a receiver.
final class FakeReceiver: @unchecked Sendable {
  /// A `$PMTK` command the driver wrote, and whether the watch process was still running
  /// when it arrived.
  struct Command {
    let line: String
    let number: Int
    let whileRunning: Bool
  }

  let pty: PseudoTerminal
  var devicePath: String { pty.devicePath }

  private let lock = NSLock()
  private var bytes: [UInt8] = []
  private var lineBuffer: [UInt8] = []
  private var commandLog: [Command] = []
  private var acknowledged: Set<Int>
  private var acknowledgementDelay: Duration
  private var answersWhileRunning: [(number: Int, whileRunning: Bool)] = []
  private var stopped = false
  private var threads = 0
  /// Asked when a command arrives: whether the process under test is still running.
  var isWatcherRunning: @Sendable () -> Bool = { true }

  /// - Parameters:
  ///   - acknowledging: the `$PMTK` command numbers answered with `$PMTK001,N,3`.
  ///   - delay: how long the receiver takes to answer (well within the driver's 1 s timeout).
  init(acknowledging: Set<Int> = [], delay: Duration = .zero) throws {
    pty = try PseudoTerminal()
    acknowledged = acknowledging
    acknowledgementDelay = delay
  }

  /// Starts streaming an epoch every `interval` and reading what the driver writes.
  func start(interval: Duration = .milliseconds(100)) {
    threads = 2
    Thread { [self] in stream(interval: interval) }.start()
    Thread { [self] in readCommands() }.start()
  }

  func stop() {
    lock.withLock { stopped = true }
    pty.interrupt()
    _ = eventuallyBlocking(timeout: .seconds(10)) { lock.withLock { threads == 0 } }
    pty.hangUp()
  }

  /// Everything the driver wrote.
  var received: [UInt8] { lock.withLock { bytes } }
  var commands: [Command] { lock.withLock { commandLog } }
  /// The acknowledgements sent, and whether the watch process was running when each went.
  var answers: [(number: Int, whileRunning: Bool)] { lock.withLock { answersWhileRunning } }

  func setAcknowledging(_ numbers: Set<Int>) { lock.withLock { acknowledged = numbers } }

  private var isStopped: Bool { lock.withLock { stopped } }

  private func stream(interval: Duration) {
    defer { lock.withLock { threads -= 1 } }
    var index = 0
    while !isStopped {
      // Nobody reads while the port is closed; a full pty buffer just skips epochs.
      try? pty.write(Array(epoch(index).utf8), timeout: .milliseconds(200))
      index += 1
      let (seconds, attoseconds) = interval.components
      usleep(UInt32(seconds * 1_000_000 + attoseconds / 1_000_000_000_000))
    }
  }

  private func readCommands() {
    defer { lock.withLock { threads -= 1 } }
    while !isStopped {
      guard let chunk = try? pty.read(upTo: 4096, timeout: .milliseconds(200)) else { return }
      guard !chunk.isEmpty else { continue }
      let running = isWatcherRunning()
      var answers: [Int] = []
      lock.withLock {
        bytes += chunk
        lineBuffer += chunk
        while let end = lineBuffer.firstIndex(of: UInt8(ascii: "\n")) {
          let line = String(decoding: lineBuffer[...end], as: UTF8.self)
          lineBuffer.removeSubrange(...end)
          guard line.hasPrefix("$PMTK") else { continue }
          let digits = line.dropFirst(5).prefix { $0.isNumber }
          guard let number = Int(digits) else { continue }
          commandLog.append(Command(line: line, number: number, whileRunning: running))
          if acknowledged.contains(number) { answers.append(number) }
        }
      }
      guard !answers.isEmpty else { continue }
      let due = answers
      let delay = lock.withLock { acknowledgementDelay }
      Thread { [self] in
        if delay > .zero { usleep(UInt32(delay / .microseconds(1))) }
        for number in due {
          let running = isWatcherRunning()
          try? pty.write(Array(sentence("PMTK001,\(number),3").utf8), timeout: .seconds(1))
          lock.withLock { answersWhileRunning.append((number, running)) }
        }
      }.start()
    }
  }
}

/// The built `serialgps` running as a child process, its output collected as it comes.
final class WatchProcess: @unchecked Sendable {
  let process = Process()
  private let lock = NSLock()
  private var out = Data()
  private var err = Data()
  private var openStreams = 2

  /// The executable next to the test bundle in the build directory.
  static func binary() throws -> URL {
    let bundle = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
    var binary = bundle.appendingPathComponent("serialgps")
    if !FileManager.default.isExecutableFile(atPath: binary.path) {
      binary = bundle.deletingLastPathComponent().appendingPathComponent("serialgps")
    }
    try #require(
      FileManager.default.isExecutableFile(atPath: binary.path),
      "serialgps not built next to the tests (\(binary.path)); run swift build --build-tests")
    return binary
  }

  /// - Parameters:
  ///   - signalDispositions: `env(1)` options that set the child's signal dispositions before
  ///     it starts (`--default-signal=HUP`, `--ignore-signal=HUP`), whatever this process has.
  ///   - closingOutputAfter: close the reading end of standard output once this many lines
  ///     arrived, as `head -N` does.
  init(
    _ arguments: [String], signalDispositions: [String] = [], closingOutputAfter lines: Int? = nil
  ) throws {
    if signalDispositions.isEmpty {
      process.executableURL = try Self.binary()
      process.arguments = arguments
    } else {
      process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
      process.arguments = signalDispositions + [try Self.binary().path] + arguments
    }
    var environment = ProcessInfo.processInfo.environment
    environment["SWIFT_BACKTRACE"] = "enable=no"
    process.environment = environment
    process.standardInput = FileHandle.nullDevice
    let stdout = Pipe()
    let stderr = Pipe()
    process.standardOutput = stdout
    process.standardError = stderr
    try process.run()
    collect(stdout.fileHandleForReading, closingAfter: lines) { $0.out.append($1) }
    collect(stderr.fileHandleForReading) { $0.err.append($1) }
  }

  /// Reads `handle` on a thread of its own until end of file (the child exited), or until
  /// `lines` lines arrived, when it closes it.
  private func collect(
    _ handle: FileHandle, closingAfter lines: Int? = nil,
    into store: @escaping @Sendable (WatchProcess, Data) -> Void
  ) {
    Thread { [self] in
      var seen = 0
      while true {
        let data = handle.availableData
        if data.isEmpty { break }
        lock.withLock { store(self, data) }
        seen += data.filter { $0 == 10 }.count
        if let lines, seen >= lines {
          try? handle.close()
          break
        }
      }
      lock.withLock { openStreams -= 1 }
    }.start()
  }

  var stdout: String { lock.withLock { String(decoding: out, as: UTF8.self) } }
  var stderr: String { lock.withLock { String(decoding: err, as: UTF8.self) } }
  var lines: [String] { stdout.split(separator: "\n").map(String.init) }
  var isRunning: Bool { process.isRunning }
  /// Whether the process ended by `exit` (rather than killed by a signal).
  var exited: Bool { process.terminationReason == .exit }

  func send(_ signal: Int32) { kill(process.processIdentifier, signal) }

  /// The exit status once the process has ended and its output is collected, or nil if it is
  /// still running at `timeout` (it is then killed, so that no test leaves a process behind).
  func exitStatus(within timeout: Duration = .seconds(30)) async -> Int32? {
    guard await eventually(timeout: timeout, { !process.isRunning }) else {
      process.terminate()
      return nil
    }
    _ = await eventually(timeout: .seconds(10)) { lock.withLock { openStreams == 0 } }
    return process.terminationStatus
  }

  deinit {
    if process.isRunning { process.terminate() }
  }
}
