import Foundation
import Glibc
import NMEA
import Replay
import SerialGPS
import Simulator
import Testing

@testable import GPSDServer

// Sockets and processes block their thread, so they run on threads of their own (never the
// two-thread cooperative pool) and tests await them. Waits are generous bounds; nothing
// asserts a duration.

/// The repository's `fixtures/` directory.
let fixturesDirectory: String = {
  var url = URL(fileURLWithPath: #filePath)
  for _ in 0..<3 { url.deleteLastPathComponent() }
  return url.appendingPathComponent("fixtures").path
}()

/// Runs `body` on a new thread and returns what it returned (or throws what it threw).
func onOwnThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
  try await withCheckedThrowingContinuation { continuation in
    let thread = Thread { continuation.resume(with: Result { try body() }) }
    thread.stackSize = 1 << 20
    thread.start()
  }
}

/// Polls `condition` until it holds or `timeout` passes.
func eventually(timeout: Duration = .seconds(30), _ condition: () -> Bool) async -> Bool {
  let deadline = ContinuousClock.now + timeout
  while ContinuousClock.now < deadline {
    if condition() { return true }
    try? await Task.sleep(for: .milliseconds(5))
  }
  return condition()
}

/// Whether the gpsd client tools are here. Under `CI=true` they must be (`make test` installs
/// gpsd-clients and python3-gps); elsewhere the tests that need them are skipped.
enum Tools {
  static let python = "/usr/bin/python3"
  static let required = ProcessInfo.processInfo.environment["CI"] == "true"

  static let gpspipe: String? = ["/usr/bin/gpspipe", "/usr/local/bin/gpspipe"].first {
    FileManager.default.isExecutableFile(atPath: $0)
  }

  static let pythonGPS: Bool = {
    guard FileManager.default.isExecutableFile(atPath: python) else { return false }
    return (try? run(python, ["-c", "import gps"]).status) == 0
  }()

  static var available: Bool { required || (gpspipe != nil && pythonGPS) }

  struct Run: Sendable {
    var status: Int32
    var output: String
    var error: String
  }

  /// Runs a program to completion (on the calling thread).
  static func run(_ path: String, _ arguments: [String], input: String? = nil) throws -> Run {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: path)
    process.arguments = arguments
    let output = Pipe()
    let error = Pipe()
    process.standardOutput = output
    process.standardError = error
    let stdin = Pipe()
    process.standardInput = stdin
    try startWithSignalsUnblocked(process)
    if let input { stdin.fileHandleForWriting.write(Data(input.utf8)) }
    try? stdin.fileHandleForWriting.close()
    // Both pipes are drained concurrently, so a chatty child never blocks on a full pipe.
    let errorData = Locked(Data())
    let errorDone = DispatchSemaphore(value: 0)
    let errorReader = Thread {
      errorData.withLock { $0 = error.fileHandleForReading.readDataToEndOfFile() }
      errorDone.signal()
    }
    errorReader.start()
    let out = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    errorDone.wait()
    return Run(
      status: process.terminationStatus, output: String(decoding: out, as: UTF8.self),
      error: String(decoding: errorData.withLock { $0 }, as: UTF8.self))
  }
}

/// One parsed report line. JSON objects are not `Sendable`; a report is only read.
struct Report: @unchecked Sendable {
  let fields: [String: Any]
  let line: String

  subscript(key: String) -> Any? { fields[key] }
  var className: String? { fields["class"] as? String }
}

/// Starts `process` with no signal blocked. A child inherits the signal mask of the thread
/// that spawns it, and the test runner's threads block most signals: without this, `timeout`
/// could not interrupt gpxlogger and SIGTERM would not reach `serialgps serve`. Call it from a
/// thread of its own (``onOwnThread``): the calling thread's mask is cleared.
func startWithSignalsUnblocked(_ process: Process) throws {
  var none = sigset_t()
  sigemptyset(&none)
  pthread_sigmask(SIG_SETMASK, &none, nil)
  try process.run()
}

/// A plain TCP client speaking the protocol by hand, with blocking calls bounded by timeouts.
final class TestClient: @unchecked Sendable {
  let descriptor: Int32
  private var buffer: [UInt8] = []

  init(port: UInt16, receiveBufferSize: Int32? = nil) throws {
    descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard descriptor >= 0 else { throw POSIXError(.EMFILE) }
    if var size = receiveBufferSize {
      // Before connecting, so the window advertised is small from the start.
      setsockopt(descriptor, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
    }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = port.bigEndian
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    let result = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
      }
    }
    guard result == 0 else {
      let code = errno
      Glibc.close(descriptor)
      throw POSIXError(POSIXErrorCode(rawValue: code) ?? .ECONNREFUSED)
    }
  }

  func send(_ text: String) { send(bytes: Array(text.utf8)) }

  func send(bytes: [UInt8]) {
    var offset = 0
    while offset < bytes.count {
      let count = bytes[offset...].withUnsafeBytes {
        Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
      }
      if count <= 0 { return }
      offset += count
    }
  }

  /// The next line (without CR LF), or `nil` at end of stream or after `timeout`.
  func readLine(timeout: Duration = .seconds(30)) -> String? {
    let deadline = ContinuousClock.now + timeout
    while true {
      if let newline = buffer.firstIndex(of: 0x0A) {
        var line = Array(buffer[..<newline])
        buffer.removeFirst(newline + 1)
        if line.last == 0x0D { line.removeLast() }
        return String(decoding: line, as: UTF8.self)
      }
      let remaining = deadline - ContinuousClock.now
      guard remaining > .zero else { return nil }
      var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
      let milliseconds = Int32(min(remaining.components.seconds * 1000 + 1, 1000))
      if poll(&poller, 1, milliseconds) <= 0 { continue }
      var chunk = [UInt8](repeating: 0, count: 65536)
      let count = chunk.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
      if count <= 0 { return nil }
      buffer += chunk[..<count]
    }
  }

  /// The next report (a parsed JSON line; class `UNPARSEABLE` if it is not JSON); `nil` at
  /// end or timeout.
  func readReport(timeout: Duration = .seconds(30)) -> Report? {
    guard let line = readLine(timeout: timeout) else { return nil }
    let fields =
      (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any]
      ?? ["class": "UNPARSEABLE"]
    return Report(fields: fields, line: line)
  }

  /// Reads reports until one of class `name` arrives; returns it and those before it.
  func read(until name: String, timeout: Duration = .seconds(30)) -> (
    report: Report?, skipped: [Report]
  ) {
    let deadline = ContinuousClock.now + timeout
    var skipped: [Report] = []
    while ContinuousClock.now < deadline {
      guard let report = readReport(timeout: deadline - ContinuousClock.now) else { break }
      if report.className == name { return (report, skipped) }
      skipped.append(report)
    }
    return (nil, skipped)
  }

  /// Whether the server closed the connection (reads drain what is left first).
  func isClosedByPeer(timeout: Duration = .seconds(30)) -> Bool {
    let deadline = ContinuousClock.now + timeout
    var chunk = [UInt8](repeating: 0, count: 65536)
    while ContinuousClock.now < deadline {
      var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
      if poll(&poller, 1, 200) <= 0 { continue }
      let count = chunk.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
      if count <= 0 { return true }
    }
    return false
  }

  private let closed = Locked(false)

  /// Closes the socket once. A second `close` of a descriptor number could close whatever
  /// another test, running in parallel, has opened under that number since.
  func close() {
    let first = closed.withLock { closed -> Bool in
      defer { closed = true }
      return !closed
    }
    if first { Glibc.close(descriptor) }
  }
}

/// A value behind a pthread mutex, for tests.
final class Locked<Value>: @unchecked Sendable {
  private var mutex = pthread_mutex_t()
  private var value: Value
  init(_ value: Value) {
    self.value = value
    pthread_mutex_init(&mutex, nil)
  }
  func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
    pthread_mutex_lock(&mutex)
    defer { pthread_mutex_unlock(&mutex) }
    return try body(&value)
  }
}

/// An in-memory receiver: the test feeds sentences; opens and closes are counted (power).
final class MemoryConnection: ReceiverConnection, @unchecked Sendable {
  private var mutex = pthread_mutex_t()
  private var condition = pthread_cond_t()
  private var pending: [UInt8] = []
  private var interrupted = false
  private var closed = false

  init() {
    pthread_mutex_init(&mutex, nil)
    pthread_cond_init(&condition, nil)
  }

  func feed(_ text: String) {
    pthread_mutex_lock(&mutex)
    pending += Array(text.utf8)
    pthread_cond_broadcast(&condition)
    pthread_mutex_unlock(&mutex)
  }

  var isClosed: Bool {
    pthread_mutex_lock(&mutex)
    defer { pthread_mutex_unlock(&mutex) }
    return closed
  }

  func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
    pthread_mutex_lock(&mutex)
    defer { pthread_mutex_unlock(&mutex) }
    while pending.isEmpty && !interrupted { pthread_cond_wait(&condition, &mutex) }
    if interrupted {
      interrupted = false
      return 0
    }
    let count = min(buffer.count, pending.count)
    for index in 0..<count { buffer[index] = pending[index] }
    pending.removeFirst(count)
    return count
  }

  func write(_ bytes: [UInt8]) throws {}

  func interrupt() {
    pthread_mutex_lock(&mutex)
    interrupted = true
    pthread_cond_broadcast(&condition)
    pthread_mutex_unlock(&mutex)
  }

  func close() {
    pthread_mutex_lock(&mutex)
    closed = true
    pthread_mutex_unlock(&mutex)
  }
}

final class MemoryConnector: ReceiverConnector, @unchecked Sendable {
  private let connections = Locked<[MemoryConnection]>([])
  var deviceName: String { "memory" }

  func connect() async throws -> any ReceiverConnection {
    let connection = MemoryConnection()
    connections.withLock { $0.append(connection) }
    return connection
  }

  var opens: Int { connections.withLock { $0.count } }
  var latest: MemoryConnection? { connections.withLock { $0.last } }
  /// Whether the receiver is powered: its latest connection is open.
  var isOpen: Bool { latest.map { !$0.isClosed } ?? false }
}

/// A checksummed sentence with CR LF.
func sentence(_ body: String) -> String {
  String(decoding: NMEAChecksum.frame(body), as: UTF8.self)
}

/// One 1 Hz cycle (RMC, GGA) at `second` past 12:00:00, a 3D fix.
func cycle(second: Int) -> String {
  let time = "1200" + (second < 10 ? "0" : "") + String(second) + ".00"
  return sentence("GPRMC,\(time),A,4656.789,N,00726.123,E,1.5,90.0,301126,,,A")
    + sentence("GPGGA,\(time),4656.789,N,00726.123,E,1,08,0.9,540.2,M,48.0,M,,")
}

/// Starts a simulator for a fixture.
func makeSimulator(
  _ fixture: String, profile: ReceiverProfile, pace: Pace = .recorded(speed: 10),
  initialPowerState: SimulatedPowerState = .running
) throws -> ReceiverSimulator {
  try ReceiverSimulator(
    recording: Recording.loadCached(path: fixturesDirectory + "/\(fixture).nmea"),
    configuration: .init(
      profile: profile, pace: pace, loops: true, initialPowerState: initialPowerState,
      wakeDelay: .milliseconds(10)))
}

/// Server settings for tests: a free port, no linger unless asked.
func testConfiguration(linger: Duration = .zero) -> GPSDServer.Configuration {
  var configuration = GPSDServer.Configuration()
  configuration.listenAddress = .loopback(port: 0)
  configuration.receiverOptions.linger = linger
  configuration.receiverOptions.acknowledgementTimeout = .seconds(5)
  configuration.receiverOptions.reconnectDelay = .milliseconds(100)
  configuration.receiverOptions.maximumReconnectDelay = .milliseconds(400)
  // The kernel's own send buffers (megabytes): these tests' clients read in bursts, and under
  // TSan on a loaded machine a pause between two reads can last tens of seconds, which at 10
  // epochs a second would pass the 32 KiB default and the backlog limit and drop the client.
  // The tests of slow clients and of the default set their own (ClientLimitTests, ServerTests).
  configuration.clientSendBufferSize = nil
  return configuration
}
