import Foundation
import Glibc
import Replay
import Simulator
import Testing

// The built `serialgps` as a child process, for the commands whose job is the process itself:
// replay (a device for other programs), record and demo (signals, exit status, output). All
// waits poll with generous deadlines; nothing asserts how long anything took.

/// The executable next to the test bundle in the build directory.
func serialgpsBinary() throws -> URL {
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

/// Polls `condition` every 20 ms until it holds or `timeout` passes.
func eventually(timeout: Duration = .seconds(30), _ condition: () -> Bool) async -> Bool {
  let deadline = ContinuousClock.now + timeout
  while ContinuousClock.now < deadline {
    if condition() { return true }
    try? await Task.sleep(for: .milliseconds(20))
  }
  return condition()
}

/// `serialgps ARGUMENTS` running, its output collected as it comes.
final class CLIProcess: @unchecked Sendable {
  let process = Process()
  private let lock = NSLock()
  private var out = Data()
  private var err = Data()
  private var openStreams = 2

  /// - Parameters:
  ///   - standardError: where standard error goes instead of a pipe (a pty, to be a
  ///     terminal); its output is then not collected.
  ///   - signalDispositions: `env(1)` options that set the child's signal dispositions before
  ///     it starts (`--default-signal=HUP`), whatever this process has.
  ///   - launcher: a program and its arguments that start serialgps (given last) themselves,
  ///     such as `systemd-socket-activate -l ADDRESS`.
  init(
    _ arguments: [String], standardError: FileHandle? = nil, signalDispositions: [String] = [],
    environment extra: [String: String] = [:], launcher: [String] = []
  ) throws {
    var wrapper =
      launcher + (signalDispositions.isEmpty ? [] : ["/usr/bin/env"] + signalDispositions)
    if !launcher.isEmpty {
      // Under a parent that stays: a launcher that closes every descriptor it inherited
      // (systemd-socket-activate does) closes the one by which Foundation's Process learns
      // that its child ended; Foundation then waits for that child with a blocking waitpid on
      // its one monitoring thread, and no other process of the test run is ever reaped. The
      // parent keeps the descriptor, passes signals on and exits as the launcher did. Not a
      // shell: the child inherits this process's signal mask, with SIGCHLD blocked, and a
      // shell's `wait` then sleeps for ever; the parent clears the mask and the dispositions
      // a launcher started by systemd would not have.
      let parent = """
        import os, signal, sys
        signal.pthread_sigmask(signal.SIG_SETMASK, [])
        child = os.fork()
        if child == 0:
            for number in (signal.SIGINT, signal.SIGQUIT, signal.SIGPIPE):
                signal.signal(number, signal.SIG_DFL)
            os.execv(sys.argv[1], sys.argv[1:])
        for number in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(number, lambda received, frame: os.kill(child, received))
        _, status = os.waitpid(child, 0)
        code = os.waitstatus_to_exitcode(status)
        sys.exit(code if code >= 0 else 128 - code)
        """
      wrapper = ["/usr/bin/python3", "-c", parent] + wrapper
    }
    if wrapper.isEmpty {
      process.executableURL = try serialgpsBinary()
      process.arguments = arguments
    } else {
      process.executableURL = URL(fileURLWithPath: wrapper[0])
      process.arguments = wrapper.dropFirst() + [try serialgpsBinary().path] + arguments
    }
    var environment = ProcessInfo.processInfo.environment
    environment["SWIFT_BACKTRACE"] = "enable=no"
    environment.merge(extra) { $1 }
    process.environment = environment
    process.standardInput = FileHandle.nullDevice
    let stdout = Pipe()
    process.standardOutput = stdout
    let stderr = Pipe()
    if let standardError {
      process.standardError = standardError
    } else {
      process.standardError = stderr
    }
    try process.run()
    collect(stdout.fileHandleForReading) { $0.out.append($1) }
    if standardError == nil {
      collect(stderr.fileHandleForReading) { $0.err.append($1) }
    } else {
      lock.withLock { openStreams -= 1 }
    }
  }

  private func collect(
    _ handle: FileHandle, into store: @escaping @Sendable (CLIProcess, Data) -> Void
  ) {
    let thread = Thread { [self] in
      while true {
        let data = handle.availableData
        if data.isEmpty { break }
        lock.withLock { store(self, data) }
      }
      lock.withLock { openStreams -= 1 }
    }
    thread.start()
  }

  var standardOutput: String { lock.withLock { String(decoding: out, as: UTF8.self) } }
  var standardError: String { lock.withLock { String(decoding: err, as: UTF8.self) } }

  func signal(_ number: Int32) { kill(process.processIdentifier, number) }

  /// The process the launcher became (for a `launcher`: the parent's one child, which the
  /// launcher's exec makes serialgps), else the process itself; `nil` when the parent has no
  /// child (any more).
  var launchedProcessIdentifier: pid_t? {
    let pid = process.processIdentifier
    guard process.executableURL?.path == "/usr/bin/python3" else { return pid }
    guard
      let text = try? String(contentsOfFile: "/proc/\(pid)/task/\(pid)/children", encoding: .utf8)
    else { return nil }
    return text.split(separator: " ").first.flatMap { pid_t($0) }
  }

  /// Waits for the exit and for both streams to be read to their end; the exit status, or
  /// `nil` (after killing it) when it does not end within `timeout`.
  func exitStatus(timeout: Duration = .seconds(60)) async -> Int32? {
    let ended = await eventually(timeout: timeout) {
      !process.isRunning && lock.withLock { openStreams == 0 }
    }
    guard ended else {
      kill(process.processIdentifier, SIGKILL)
      return nil
    }
    return process.terminationStatus
  }

  deinit {
    if process.isRunning { kill(process.processIdentifier, SIGKILL) }
  }
}

/// A temporary directory, removed at the end of the test.
/// The lines a socket brings (a gpsd client's reports, NMEA), each with when it arrived and
/// without its CR LF, read on a thread of its own until the peer closes or the descriptor is
/// closed.
final class SocketLines: @unchecked Sendable {
  private let lock = NSLock()
  private var received: [(at: ContinuousClock.Instant, line: String)] = []
  let descriptor: Int32

  init(_ descriptor: Int32) {
    self.descriptor = descriptor
    let thread = Thread { [self] in
      var pending: [UInt8] = []
      var buffer = [UInt8](repeating: 0, count: 65536)
      while true {
        let count = buffer.withUnsafeMutableBytes {
          recv(descriptor, $0.baseAddress, $0.count, 0)
        }
        if count <= 0 { return }
        let now = ContinuousClock.now
        pending += buffer[..<count]
        while let end = pending.firstIndex(of: UInt8(ascii: "\n")) {
          var line = pending[..<end]
          if line.last == UInt8(ascii: "\r") { line = line.dropLast() }
          let text = String(decoding: line, as: UTF8.self)
          pending.removeSubrange(...end)
          lock.withLock { received.append((now, text)) }
        }
      }
    }
    thread.start()
  }

  /// Every line so far, with when it arrived.
  var timed: [(at: ContinuousClock.Instant, line: String)] { lock.withLock { received } }
  /// Every line so far.
  var lines: [String] { timed.map(\.line) }
}

final class TemporaryDirectory {
  let path: String

  init() throws {
    var template = Array("/tmp/serialgps-test-XXXXXX".utf8CString)
    guard let made = mkdtemp(&template) else { throw POSIXError(.EIO) }
    path = String(cString: made)
  }

  func file(_ name: String) -> String { path + "/" + name }

  deinit { try? FileManager.default.removeItem(atPath: path) }
}

/// A simulated MediaTek receiver in standby on a pty, playing the MediaTek cold start four
/// times as fast as recorded once woken: the receiver of the tests of processes that must
/// leave it in standby. Stop it at the end of the test.
func sleepingMediaTek() throws -> ReceiverSimulator {
  let recording = try Recording.load(path: "\(fixturesDirectory)/mtk-cold-start.nmea")
  return try ReceiverSimulator(
    recording: recording,
    configuration: .init(
      profile: .mediatek, pace: .recorded(speed: 4), initialPowerState: .standby))
}

/// A TCP connection to 127.0.0.1:`port`, blocking; `receiveBuffer` sets `SO_RCVBUF` before it
/// connects (a small one makes a client that never reads fill up soon). Close it at the end.
func loopbackConnection(port: UInt16, receiveBuffer: Int32? = nil) throws -> Int32 {
  let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
  guard descriptor >= 0 else { throw POSIXError(.EMFILE) }
  if var size = receiveBuffer {
    setsockopt(descriptor, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
  }
  var address = sockaddr_in()
  address.sin_family = sa_family_t(AF_INET)
  address.sin_port = port.bigEndian
  address.sin_addr.s_addr = inet_addr("127.0.0.1")
  let connected = withUnsafePointer(to: &address) {
    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
      connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
    }
  }
  guard connected == 0 else {
    close(descriptor)
    throw POSIXError(.ECONNREFUSED)
  }
  return descriptor
}

/// Another program (socat, gpspipe, str2str) run with its standard output and error
/// collected on a thread of its own, so that no test task blocks on a read.
final class Tool: @unchecked Sendable {
  let process = Process()
  let input = Pipe()
  private let lock = NSLock()
  private var collected = Data()
  private var ended = false

  init(_ path: String, _ arguments: [String]) throws {
    process.executableURL = URL(fileURLWithPath: path)
    process.arguments = arguments
    process.standardInput = input
    let output = Pipe()
    process.standardOutput = output
    process.standardError = output
    try process.run()
    let handle = output.fileHandleForReading
    Thread { [self] in
      while true {
        let data = handle.availableData
        if data.isEmpty { break }
        lock.withLock { collected.append(data) }
      }
      lock.withLock { ended = true }
    }.start()
  }

  var output: String { lock.withLock { String(decoding: collected, as: UTF8.self) } }
  var byteCount: Int { lock.withLock { collected.count } }

  /// Waits (without blocking a thread) until it has exited and its output was read to the
  /// end, at most `timeout`; what it printed.
  func finish(timeout: Duration = .seconds(90)) async -> String {
    _ = await eventually(timeout: timeout) {
      !process.isRunning && lock.withLock { ended }
    }
    return output
  }

  func send(_ text: String) { input.fileHandleForWriting.write(Data(text.utf8)) }

  /// Ends it and waits for the exit, so that its connection is closed. SIGKILL: a child
  /// of the test runner may inherit SIGTERM blocked. Polls: `waitUntilExit` needs a run
  /// loop that a test's task does not have.
  func stop() async {
    if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    _ = await eventually(timeout: .seconds(10)) { !process.isRunning }
  }

  deinit { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }
}

/// Runs `body`, which blocks (a child process's pipes, `waitUntilExit`), on a thread of its
/// own: on a test task it would hold one of the few threads of the pool, which Foundation's
/// `Process` also needs to notice its children's exits; with them all held, nothing ends.
func onOwnThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
  try await withCheckedThrowingContinuation { continuation in
    let thread = Thread { continuation.resume(with: Result { try body() }) }
    thread.stackSize = 1 << 20
    thread.start()
  }
}
