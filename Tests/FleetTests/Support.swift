import Foundation
import Glibc
import POSIX
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

/// Runs `executable` to its end; throws unless it exits 0.
func runToEnd(_ executable: String, _ arguments: [String]) async throws {
  let child = try Child(executable, arguments)
  let status = await child.wait()
  guard status == 0 else {
    throw TestFailure(
      "\(executable) \(arguments.joined(separator: " ")) exited \(status): \(child.errorOutput)")
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

/// glibc's `posix_spawn_file_actions_addclosefrom_np` (2.34), which Glibc's Swift module
/// does not declare.
@_silgen_name("posix_spawn_file_actions_addclosefrom_np")
func spawnClosesFrom(_ actions: UnsafeMutablePointer<posix_spawn_file_actions_t>, _ from: Int32)
  -> Int32

/// A child process whose output is collected as it comes.
///
/// Spawned with posix_spawn, its output read on threads of the package's own (`OwnThread`),
/// reaped with waitpid: no Foundation `Process` or `Thread`, whose run loops' teardown at
/// thread exit crashes under ThreadSanitizer. The test runner blocks SIGINT and SIGTERM in
/// its threads; the child starts with them unblocked and at their defaults.
final class Child: @unchecked Sendable {
  let pid: pid_t
  private let collected = Locked<(out: [UInt8], err: [UInt8], status: Int32?, closed: Int)>(
    ([], [], nil, 0))

  init(_ executable: String, _ arguments: [String], environment extra: [String: String] = [:])
    throws
  {
    var outPipe: [Int32] = [-1, -1]
    var errPipe: [Int32] = [-1, -1]
    guard pipe(&outPipe) == 0, pipe(&errPipe) == 0 else { throw TestFailure("pipe failed") }
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
    posix_spawn_file_actions_adddup2(&actions, outPipe[1], 1)
    posix_spawn_file_actions_adddup2(&actions, errPipe[1], 2)
    // Nothing else of this process (other tests' ptys and sockets) leaks into the child.
    _ = spawnClosesFrom(&actions, 3)
    var attributes = posix_spawnattr_t()
    posix_spawnattr_init(&attributes)
    defer { posix_spawnattr_destroy(&attributes) }
    var none = sigset_t()
    sigemptyset(&none)
    posix_spawnattr_setsigmask(&attributes, &none)
    var defaults = sigset_t()
    sigemptyset(&defaults)
    for number in [SIGINT, SIGTERM, SIGPIPE, SIGQUIT] { sigaddset(&defaults, number) }
    posix_spawnattr_setsigdefault(&attributes, &defaults)
    posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

    var environment: [String] = []
    var index = 0
    while let entry = environ[index] {
      let text = String(cString: entry)
      let name = String(text.prefix { $0 != "=" })
      if extra[name] == nil && name != "SWIFT_BACKTRACE" { environment.append(text) }
      index += 1
    }
    environment.append("SWIFT_BACKTRACE=enable=no")
    for (name, value) in extra { environment.append("\(name)=\(value)") }
    let argv = ([executable] + arguments).map { strdup($0) } + [nil]
    let envp = environment.map { strdup($0) } + [nil]
    defer {
      for pointer in argv + envp { free(pointer) }
    }
    var pid: pid_t = 0
    let status = posix_spawn(&pid, executable, &actions, &attributes, argv, envp)
    close(outPipe[1])
    close(errPipe[1])
    guard status == 0 else {
      close(outPipe[0])
      close(errPipe[0])
      throw TestFailure("cannot start \(executable): \(Errno(rawValue: status))")
    }
    self.pid = pid
    let collected = self.collected
    for (descriptor, isError) in [(outPipe[0], false), (errPipe[0], true)] {
      _ = OwnThread.start(name: "fleet-test-pipe") {
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
          let count =
            (try? buffer.withUnsafeMutableBytes { raw throws(Errno) in
              try FileDescriptor(rawValue: descriptor).read(into: raw)
            }) ?? 0
          if count <= 0 { break }
          collected.withLock { collected in
            if isError {
              collected.err += buffer[0..<count]
            } else {
              collected.out += buffer[0..<count]
            }
          }
        }
        close(descriptor)
        collected.withLock { $0.closed += 1 }
      }
    }
  }

  var output: String { collected.withLock { String(decoding: $0.out, as: UTF8.self) } }
  var errorOutput: String { collected.withLock { String(decoding: $0.err, as: UTF8.self) } }
  var lines: [String] { output.split(separator: "\n").map(String.init) }

  /// Whether it still runs (reaps it once it has ended).
  var isRunning: Bool { exitStatus == nil }

  /// Its exit status, or the number of the signal that ended it; `nil` while it runs.
  var exitStatus: Int32? {
    collected.withLock { collected in
      if let status = collected.status { return status }
      var raw: Int32 = 0
      guard waitpid(pid, &raw, WNOHANG) == pid else { return nil }
      let signal = raw & 0x7F
      collected.status = signal == 0 ? (raw >> 8) & 0xFF : signal
      return collected.status
    }
  }

  func signal(_ number: Int32) {
    if isRunning { kill(pid, number) }
  }

  /// Waits for the end (killing it after `timeout`) and returns the exit status, once
  /// everything it wrote has been read: a process can exit before the readers reach the end
  /// of its pipes. (A grandchild holding the pipes open bounds the wait at 5 s.)
  @discardableResult
  func wait(timeout: Duration = .seconds(20)) async -> Int32 {
    if await !eventually(timeout: timeout, { !isRunning }) {
      signal(SIGKILL)
      _ = await eventually(timeout: .seconds(5)) { !isRunning }
    }
    _ = await eventually(timeout: .seconds(5)) { collected.withLock { $0.closed == 2 } }
    return exitStatus ?? -1
  }

  deinit {
    if isRunning {
      kill(pid, SIGKILL)
      var raw: Int32 = 0
      waitpid(pid, &raw, 0)
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
      let child = try Child(Mosquitto.broker!, ["-c", configuration])
      let port = self.port
      if await onOwnThread({ Self.waitForPort(port, while: { child.isRunning }) }) {
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
      try await runToEnd(Mosquitto.openssl!, arguments)
    }
    let file = directory.file
    for name in ["ca", "other-ca"] {
      try await run([
        "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", file("\(name).key"), "-out",
        file("\(name).crt"), "-days", "2", "-subj", "/CN=serialgps test \(name)",
      ])
    }
    _ = try directory.write("server.ext", "subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    for (name, subject) in [("server", "/CN=127.0.0.1"), ("client", "/CN=truck-17")] {
      try await run([
        "req", "-newkey", "rsa:2048", "-nodes", "-keyout", file("\(name).key"), "-out",
        file("\(name).csr"), "-subj", subject,
      ])
      try await run(
        [
          "x509", "-req", "-in", file("\(name).csr"), "-CA", file("ca.crt"), "-CAkey",
          file("ca.key"), "-CAcreateserial", "-out", file("\(name).crt"), "-days", "2",
        ] + (name == "server" ? ["-extfile", file("server.ext")] : []))
    }
    for name in ["ca.crt", "other-ca.crt", "server.crt", "server.key", "client.crt", "client.key"] {
      chmod(file(name), 0o644)
    }
    ca = file("ca.crt")
    otherCA = file("other-ca.crt")
    serverCertificate = file("server.crt")
    serverKey = file("server.key")
    clientCertificate = file("client.crt")
    clientKey = file("client.key")
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
