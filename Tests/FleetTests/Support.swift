import Foundation
import Glibc
import Testing

// Fleet tests run against Debian's real mosquitto (no mock), on a free loopback port, with the
// real mosquitto_sub / mosquitto_pub as independent clients and the built `serialgps` where the
// process itself is under test. Every wait polls with a generous bound; nothing asserts how
// long anything took. Under CI=true a missing mosquitto fails (make test installs it);
// elsewhere those tests are skipped with the reason.

enum Mosquitto {
  static let broker = ["/usr/sbin/mosquitto", "/usr/local/sbin/mosquitto"].first {
    FileManager.default.isExecutableFile(atPath: $0)
  }
  static let subscriber = tool("mosquitto_sub")
  static let publisher = tool("mosquitto_pub")
  static let passwd = tool("mosquitto_passwd")
  static let openssl = tool("openssl")

  static func tool(_ name: String) -> String? {
    ["/usr/bin/", "/usr/local/bin/"].map { $0 + name }.first {
      FileManager.default.isExecutableFile(atPath: $0)
    }
  }

  static let required = ProcessInfo.processInfo.environment["CI"] == "true"
  static var installed: Bool {
    broker != nil && subscriber != nil && publisher != nil && passwd != nil && openssl != nil
  }
  /// Run where mosquitto is, and always under CI (where its absence must fail).
  static var shouldRun: Bool { required || installed }
  static let missing =
    "mosquitto, mosquitto-clients or openssl is not installed (apt-get install mosquitto "
    + "mosquitto-clients openssl; make test does it): the fleet tests against a real broker are "
    + "skipped. Under CI=true they fail instead."
}

/// The repository's `fixtures/` directory.
let fixturesDirectory: String = {
  var url = URL(fileURLWithPath: #filePath)
  for _ in 0..<3 { url.deleteLastPathComponent() }
  return url.appendingPathComponent("fixtures").path
}()

/// The repository's root.
let repositoryDirectory: String = {
  var url = URL(fileURLWithPath: #filePath)
  for _ in 0..<3 { url.deleteLastPathComponent() }
  return url.path
}()

/// Polls `condition` every 10 ms until it holds or `timeout` passes.
func eventually(timeout: Duration = .seconds(20), _ condition: () -> Bool) async -> Bool {
  let deadline = ContinuousClock.now + timeout
  while ContinuousClock.now < deadline {
    if condition() { return true }
    try? await Task.sleep(for: .milliseconds(10))
  }
  return condition()
}

/// Runs `body`, which blocks (a child process to its end, a port to open), on a thread of
/// its own: never on the few threads of Swift's cooperative pool, which other suites' tasks
/// need meanwhile.
func blocking<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
  try await withCheckedThrowingContinuation { continuation in
    let thread = Thread { continuation.resume(with: Result { try body() }) }
    thread.start()
  }
}

/// Runs `executable` to its end on a thread of its own; throws unless it exits 0.
func runToEnd(_ executable: String, _ arguments: [String], in directory: String? = nil)
  async throws
{
  try await blocking {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    if let directory { process.currentDirectoryURL = URL(fileURLWithPath: directory) }
    process.standardOutput = FileHandle.nullDevice
    process.standardError = FileHandle.nullDevice
    try process.run()
    process.waitUntilExit()
    guard process.terminationStatus == 0 else {
      throw TestFailure(
        "\(executable) \(arguments.joined(separator: " ")) exited \(process.terminationStatus)")
    }
  }
}

/// A scratch directory the broker (which drops to its own user when started as root) can
/// read; removed at the end.
final class ScratchDirectory: @unchecked Sendable {
  let path: String

  init() throws {
    var template = Array("/tmp/serialgps-fleet-XXXXXX".utf8CString)
    guard let made = mkdtemp(&template) else { throw TestFailure("mkdtemp failed") }
    path = String(cString: made)
    chmod(path, 0o755)
  }

  func file(_ name: String) -> String { path + "/" + name }

  func write(_ name: String, _ text: String) throws -> String {
    let target = file(name)
    try text.write(toFile: target, atomically: true, encoding: .utf8)
    chmod(target, 0o644)
    return target
  }

  deinit { try? FileManager.default.removeItem(atPath: path) }
}

struct TestFailure: Error, CustomStringConvertible {
  let description: String
  init(_ description: String) { self.description = description }
}

/// A child process whose output is collected as it comes.
final class Child: @unchecked Sendable {
  let process = Process()
  private let lock = NSLock()
  private var out = Data()
  private var err = Data()

  init(_ executable: String, _ arguments: [String], environment extra: [String: String] = [:])
    throws
  {
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    var environment = ProcessInfo.processInfo.environment
    environment["SWIFT_BACKTRACE"] = "enable=no"
    for (key, value) in extra { environment[key] = value }
    process.environment = environment
    process.standardInput = FileHandle.nullDevice
    let stdout = Pipe()
    let stderr = Pipe()
    process.standardOutput = stdout
    process.standardError = stderr
    try process.run()
    collect(stdout.fileHandleForReading) { $0.out.append($1) }
    collect(stderr.fileHandleForReading) { $0.err.append($1) }
  }

  private func collect(_ handle: FileHandle, into store: @escaping @Sendable (Child, Data) -> Void)
  {
    let thread = Thread { [self] in
      while true {
        let data = handle.availableData
        if data.isEmpty { break }
        lock.withLock { store(self, data) }
      }
    }
    thread.start()
  }

  var output: String { lock.withLock { String(decoding: out, as: UTF8.self) } }
  var errorOutput: String { lock.withLock { String(decoding: err, as: UTF8.self) } }
  var lines: [String] { output.split(separator: "\n").map(String.init) }
  var pid: Int32 { process.processIdentifier }
  var isRunning: Bool { process.isRunning }

  func signal(_ number: Int32) { kill(process.processIdentifier, number) }

  /// Waits for the end (killing it after `timeout`) and returns the exit status.
  @discardableResult
  func wait(timeout: Duration = .seconds(20)) async -> Int32 {
    if await !eventually(timeout: timeout, { !process.isRunning }) {
      signal(SIGKILL)
      _ = await eventually(timeout: .seconds(5)) { !process.isRunning }
    }
    return process.terminationStatus
  }

  deinit {
    if process.isRunning {
      kill(process.processIdentifier, SIGKILL)
      process.waitUntilExit()
    }
  }
}

/// A mosquitto of its own on a free loopback port.
final class TestBroker: @unchecked Sendable {
  let directory: ScratchDirectory
  private(set) var port: UInt16 = 0
  private let configurationText: @Sendable (UInt16) -> String
  private let persistence: Bool
  private var child: Child?

  /// `listener` gives the listener's lines for a port (TLS files, authentication); plain and
  /// anonymous by default. `persistence`: keep sessions and retained messages across a clean
  /// restart (``stop()``), in the scratch directory.
  init(
    directory: ScratchDirectory? = nil, persistence: Bool = false,
    listener: (@Sendable (UInt16) -> String)? = nil
  ) async throws {
    try #require(Mosquitto.installed, "\(Mosquitto.missing)")
    self.directory = try directory ?? ScratchDirectory()
    self.persistence = persistence
    configurationText =
      listener ?? { port in "listener \(port) 127.0.0.1\nallow_anonymous true\n" }
    try await start()
  }

  var url: String { "mqtt://127.0.0.1:\(port)" }

  /// Starts it (on a free port the first time, the same port after a kill or stop), and waits
  /// until it accepts connections.
  func start() async throws {
    for attempt in 0..<5 {
      if port == 0 { port = try Self.freePort() }
      // Root: stay root (the scratch files are ours); otherwise the line is ignored.
      let user = getuid() == 0 ? "user root\n" : ""
      let persisting =
        persistence
        ? "persistence true\npersistence_location \(directory.path)/\n" : "persistence false\n"
      let configuration = try directory.write(
        "mosquitto.conf", user + persisting + "log_dest stderr\n" + configurationText(port))
      // Test runners block SIGTERM and SIGINT in their threads, and a child inherits the
      // mask: exec the broker with them unblocked, so that stop() is a clean shutdown.
      let child = try Child(
        "/usr/bin/env",
        [
          "python3", "-c",
          "import os, signal, sys; signal.pthread_sigmask(signal.SIG_SETMASK, []); "
            + "[signal.signal(s, signal.SIG_DFL) for s in (signal.SIGTERM, signal.SIGINT)]; "
            + "os.execv(sys.argv[1], sys.argv[1:])",
          Mosquitto.broker!, "-c", configuration,
        ])
      let port = self.port
      if try await blocking({ Self.waitForPort(port, while: { child.isRunning }) }) {
        self.child = child
        return
      }
      // Someone else took the port between our probe and the broker's bind: another one
      // (only the first time: after a restart the clients expect the same port).
      child.signal(SIGKILL)
      await child.wait()
      if attempt == 0 && self.child == nil { self.port = try Self.freePort() }
    }
    throw TestFailure("mosquitto did not start on port \(port)")
  }

  /// SIGKILL: the broker vanishes as after a crash or power loss (nothing persisted).
  func kill() async {
    guard let child else { return }
    child.signal(SIGKILL)
    await child.wait()
    self.child = nil
  }

  /// SIGTERM: a clean shutdown (which saves what persistence keeps).
  func stop() async {
    guard let child else { return }
    child.signal(SIGTERM)
    await child.wait()
    self.child = nil
  }

  var log: String { child?.errorOutput ?? "" }

  deinit { child?.signal(SIGKILL) }

  static func freePort() throws -> UInt16 {
    let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(descriptor) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = 0
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        bind(descriptor, $0, length) == 0 && getsockname(descriptor, $0, &length) == 0
      }
    }
    guard bound else { throw TestFailure("no free port") }
    return UInt16(bigEndian: address.sin_port)
  }

  /// Blocks until something accepts on `port` (at most 5 s) or `alive` turns false.
  static func waitForPort(_ port: UInt16, while alive: () -> Bool) -> Bool {
    for _ in 0..<500 {
      guard alive() else { return false }
      let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
      var address = sockaddr_in()
      address.sin_family = sa_family_t(AF_INET)
      address.sin_addr.s_addr = inet_addr("127.0.0.1")
      address.sin_port = port.bigEndian
      let connected = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
          connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
        }
      }
      close(descriptor)
      if connected { return true }
      usleep(10_000)
    }
    return false
  }
}

/// `mosquitto_sub` on a topic filter, printing `topic retain payload` per message.
final class Subscriber: @unchecked Sendable {
  let child: Child

  init(
    port: UInt16, _ filters: String..., extra: [String] = []
  ) throws {
    child = try Child(
      Mosquitto.subscriber!,
      ["-h", "127.0.0.1", "-p", String(port), "-V", "mqttv5", "-q", "1"]
        + (filters + [Self.readyTopic]).flatMap { ["-t", $0] } + ["-F", "%t %r %p"] + extra)
  }

  /// Messages so far: topic, retain flag, payload.
  var messages: [(topic: String, retained: Bool, payload: String)] {
    child.lines.compactMap { line in
      let parts = line.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: false)
      guard parts.count >= 2 else { return nil }
      return (String(parts[0]), parts[1] == "1", parts.count > 2 ? String(parts[2]) : "")
    }
  }

  func payloads(on topic: String) -> [String] {
    messages.filter { $0.topic == topic }.map(\.payload)
  }

  /// Waits until the subscription is in place (a message published after this is seen).
  func ready(port: UInt16) async {
    // mosquitto_sub has no "subscribed" signal: publish markers until one comes through.
    for _ in 0..<500 {
      try? await publish(port: port, topic: Self.readyTopic, payload: "ready", qos: 0)
      if child.output.contains(Self.readyTopic) { return }
      try? await Task.sleep(for: .milliseconds(20))
    }
  }

  static let readyTopic = "serialgps-test/ready"
}

/// `mosquitto_pub` once; throws when it fails.
func publish(
  port: UInt16, topic: String, payload: String?, retain: Bool = false, qos: Int = 1,
  file: String? = nil, extra: [String] = []
) async throws {
  var arguments = [
    "-h", "127.0.0.1", "-p", String(port), "-V", "mqttv5", "-q", String(qos), "-t", topic,
  ]
  if let file {
    arguments += ["-f", file]
  } else if let payload {
    arguments += ["-m", payload]
  } else {
    arguments += ["-n"]
  }
  if retain { arguments.append("-r") }
  try await runToEnd(Mosquitto.publisher!, arguments + extra)
}

/// The built `serialgps`, next to the test bundle.
func serialgpsBinary() throws -> String {
  let bundle = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
  for candidate in [bundle, bundle.deletingLastPathComponent()] {
    let binary = candidate.appendingPathComponent("serialgps").path
    if FileManager.default.isExecutableFile(atPath: binary) { return binary }
  }
  throw TestFailure("serialgps is not built next to the tests; run swift build --build-tests")
}

/// Certificates made with openssl for one test: a CA, a server certificate for 127.0.0.1 and
/// a client certificate, all signed by it; and a second CA that signed nothing of them.
struct TestCertificates {
  let ca: String
  let serverCertificate: String
  let serverKey: String
  let clientCertificate: String
  let clientKey: String
  let otherCA: String

  init(in directory: ScratchDirectory) async throws {
    func run(_ arguments: [String]) async throws {
      try await runToEnd(Mosquitto.openssl!, arguments, in: directory.path)
    }
    for name in ["ca", "other-ca"] {
      try await run([
        "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "\(name).key", "-out",
        "\(name).crt", "-days", "2", "-subj", "/CN=serialgps test \(name)",
      ])
    }
    _ = try directory.write("server.ext", "subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    for (name, subject) in [("server", "/CN=127.0.0.1"), ("client", "/CN=truck-17")] {
      try await run([
        "req", "-newkey", "rsa:2048", "-nodes", "-keyout", "\(name).key", "-out", "\(name).csr",
        "-subj", subject,
      ])
      try await run(
        [
          "x509", "-req", "-in", "\(name).csr", "-CA", "ca.crt", "-CAkey", "ca.key",
          "-CAcreateserial", "-out", "\(name).crt", "-days", "2",
        ] + (name == "server" ? ["-extfile", "server.ext"] : []))
    }
    for file in ["ca.crt", "other-ca.crt", "server.crt", "server.key", "client.crt", "client.key"] {
      chmod(directory.file(file), 0o644)
    }
    ca = directory.file("ca.crt")
    otherCA = directory.file("other-ca.crt")
    serverCertificate = directory.file("server.crt")
    serverKey = directory.file("server.key")
    clientCertificate = directory.file("client.crt")
    clientKey = directory.file("client.key")
  }
}

/// Adds users to a mosquitto password file with mosquitto_passwd.
func makePasswordFile(_ path: String, users: [String: String]) async throws {
  var first = true
  for (user, password) in users.sorted(by: { $0.key < $1.key }) {
    try await runToEnd(
      Mosquitto.passwd!, (first ? ["-c", "-b"] : ["-b"]) + [path, user, password])
    first = false
  }
  chmod(path, 0o644)
}
