import Chipsets
import Discovery
import Foundation
import Glibc
import NMEA
import Replay
import SerialGPS
import SerialPort
import Simulator
import Testing

@testable import GPSDServer

/// The server over real sockets, against the receiver simulator on a pty (real time: bytes
/// move in real time) or an in-memory receiver with a manual clock (linger). Every wait is a
/// generous bound, never a measurement.
@Suite(.serialized) struct ServerTests {
  /// A server for a simulated u-blox M8 on a UART that starts asleep (backup): nothing
  /// streams until the driver wakes it.
  func ubloxServer(
    linger: Duration = .zero, pace: Pace = .recorded(speed: 10),
    configure: (inout GPSDServer.Configuration) -> Void = { _ in }
  ) throws -> (ReceiverSimulator, GPSDServer) {
    let simulator = try makeSimulator(
      "ublox-m8-drive", profile: .ublox(.m8), pace: pace, initialPowerState: .backup)
    var configuration = testConfiguration(linger: linger)
    configuration.receiverOptions.chipset = .family(.ublox)
    configure(&configuration)
    let server = try GPSDServer(
      configuration: configuration,
      devices: .fixed([
        GPSDServer.ServedDevice(
          path: simulator.devicePath,
          connector: SerialConnector(path: simulator.devicePath, baud: .fixed(.b115200)))
      ]))
    return (simulator, server)
  }

  func port(_ server: GPSDServer) -> UInt16 { server.listenAddress!.port }

  /// Whether the driver has let go of the device: the tty opens exclusively again.
  func deviceIsFree(_ simulator: ReceiverSimulator) -> Bool {
    guard let port = try? SerialPort.open(path: simulator.devicePath, baudRate: .b115200) else {
      return false
    }
    port.close()
    return true
  }

  /// Reads until a TPV with a position; the reports read on the way come back too.
  func readFix(_ client: TestClient) async throws -> Report? {
    try await onOwnThread {
      for _ in 0..<200 {
        let (tpv, _) = client.read(until: "TPV")
        guard let tpv else { return nil }
        if (tpv["mode"] as? Int ?? 0) >= 2 { return tpv }
      }
      return nil
    }
  }

  // MARK: - Power follows the watchers

  @Test func nothingIsPoweredBeforeTheFirstWatchAndAllIsReleasedAfterTheLast() async throws {
    let (simulator, server) = try ubloxServer()
    defer { simulator.stop() }
    let a = try TestClient(port: port(server))
    defer { a.close() }
    let greeting = try await onOwnThread { a.readReport() }
    #expect(greeting?.className == "VERSION")
    #expect(greeting?["proto_major"] as? Int == 3)
    #expect(greeting?["release"] as? String == "3.22", "gpsd's clients compare it with their own")

    // Asking is not watching: nothing is opened or written.
    a.send("?DEVICES;\n?POLL;\n?VERSION;\n?WATCH;\n?DEVICE;\n")
    let answers = try await onOwnThread { (0..<6).compactMap { _ in a.readReport()?.className } }
    #expect(answers == ["DEVICES", "POLL", "VERSION", "DEVICES", "WATCH", "DEVICE"])
    try await Task.sleep(for: .milliseconds(300))
    #expect(simulator.received.isEmpty)
    #expect(simulator.powerState == .backup)
    #expect(server.statistics.subscribedDevices == 0)
    #expect(deviceIsFree(simulator))

    // The first WATCH wakes it; fixes arrive.
    a.send("?WATCH={\"enable\":true,\"json\":true}\n")
    let fix = try await readFix(a)
    #expect(fix?["device"] as? String == simulator.devicePath)
    #expect(await simulator.waitForPowerState(.running))
    #expect(!simulator.received.isEmpty, "the wake-up was written")

    // A second watcher; the first leaving changes nothing while the second watches.
    let b = try TestClient(port: port(server))
    defer { b.close() }
    b.send("?WATCH={\"enable\":true,\"json\":true};\n")
    #expect(try await readFix(b) != nil)
    a.close()
    #expect(await eventually { server.statistics.clients == 1 })
    #expect(try await readFix(b) != nil)
    #expect(simulator.powerState == .running)

    // The last one disables its watch: standby (linger zero), port closed, and it stays so.
    let commandsBefore = simulator.receivedCommands.count
    b.send("?WATCH={\"enable\":false}\n")
    #expect(await simulator.waitForPowerState(.backup, timeout: .seconds(30)))
    #expect(simulator.receivedCommands.count > commandsBefore, "the standby command was sent")
    #expect(await eventually { deviceIsFree(simulator) })
    let afterOff = simulator.received.count
    try await Task.sleep(for: .milliseconds(300))
    #expect(simulator.received.count == afterOff)
    #expect(server.statistics.subscribedDevices == 0)

    // A poll now answers from the cache (the last fix, however old) and wakes nothing.
    b.send("?POLL;\n")
    let poll = try await onOwnThread { b.read(until: "POLL").0 }
    let polled = (poll?["tpv"] as? [[String: Any]])?.first
    #expect((polled?["mode"] as? Int ?? 0) >= 2, "\(String(describing: poll))")
    try await Task.sleep(for: .milliseconds(300))
    #expect(simulator.received.count == afterOff)
    #expect(simulator.powerState == .backup)

    // Watching again wakes it again; a disconnect releases it like a disabled watch.
    b.send("?WATCH={\"enable\":true,\"json\":true}\n")
    #expect(try await readFix(b) != nil)  // at once: the latest fix, replayed with its time
    #expect(await simulator.waitForPowerState(.running))
    b.close()
    #expect(await simulator.waitForPowerState(.backup, timeout: .seconds(30)))
    await server.shutdown()
  }

  /// Linger semantics with a manual clock: the linger starts when the last watcher leaves,
  /// a returning watcher cancels it, and it starts afresh when that one leaves.
  @Test func theLingerRestartsWhenAWatcherReturns() async throws {
    let memory = MemoryConnector()
    let clock = ManualClock()
    let server = try GPSDServer(
      configuration: testConfiguration(linger: .seconds(5)),
      devices: .fixed([GPSDServer.ServedDevice(path: "/dev/memory0", connector: memory)]),
      clock: clock)
    let a = try TestClient(port: port(server))
    a.send("?WATCH={\"enable\":true,\"json\":true}\n")
    #expect(await eventually { memory.opens == 1 })
    memory.latest!.feed(cycle(second: 1) + cycle(second: 2) + cycle(second: 3))
    #expect(try await readFix(a) != nil)

    a.close()
    #expect(await eventually { clock.sleeperCount == 1 })  // the linger is armed
    clock.advance(by: .seconds(3))
    try await Task.sleep(for: .milliseconds(50))
    #expect(memory.isOpen)

    let b = try TestClient(port: port(server))
    b.send("?WATCH={\"enable\":true,\"json\":true}\n")
    #expect(await eventually { clock.sleeperCount == 0 })  // cancelled by the returning watcher
    clock.advance(by: .seconds(10))
    try await Task.sleep(for: .milliseconds(50))
    #expect(memory.isOpen)
    #expect(memory.opens == 1, "no power cycle")

    b.close()
    #expect(await eventually { clock.sleeperCount == 1 })
    clock.advance(by: .seconds(4))  // 7 s after the first watcher left: a stale linger would fire
    try await Task.sleep(for: .milliseconds(50))
    #expect(memory.isOpen)
    clock.advance(by: .seconds(1))
    #expect(await eventually { !memory.isOpen })
    #expect(memory.opens == 1)
    await server.shutdown()
  }

  /// A receiver that never sent anything valid is released all the same (gpsd 3.22 keeps a
  /// device it never identified open).
  @Test func aDeviceThatNeverSentValidDataIsReleased() async throws {
    let memory = MemoryConnector()
    let clock = ManualClock()
    let server = try GPSDServer(
      configuration: testConfiguration(linger: .seconds(2)),
      devices: .fixed([GPSDServer.ServedDevice(path: "/dev/memory0", connector: memory)]),
      clock: clock)
    let a = try TestClient(port: port(server))
    a.send("?WATCH={\"enable\":true,\"json\":true}\n")
    #expect(await eventually { memory.opens == 1 })
    memory.latest!.feed("\u{0}\u{1}garbage that is no NMEA\r\n$GPGGA,bad*00\r\n")
    try await Task.sleep(for: .milliseconds(50))
    a.close()
    #expect(await eventually { clock.sleeperCount == 1 })
    clock.advance(by: .seconds(2))
    #expect(await eventually { !memory.isOpen })
    await server.shutdown()
  }

  // MARK: - Robustness

  @Test func malformedCommandsGetAnErrorAndTheConnectionStays() async throws {
    let (simulator, server) = try ubloxServer()
    defer { simulator.stop() }
    let client = try TestClient(port: port(server))
    defer { client.close() }
    _ = try await onOwnThread { client.readReport() }
    client.send("?FOO;\n")
    client.send("?WATCH={\"enable\":tru}\n")
    client.send("?WATCH={\"device\":\"" + String(repeating: "x", count: 5000) + "\n")
    client.send("not a request\n\u{0}\u{1}\u{2}\n")
    client.send("?WATCH={\"enable\":\"yes\"}\n")
    client.send("?VERSION;\n")
    let reports = try await onOwnThread { (0..<5).compactMap { _ in client.readReport() } }
    #expect(reports.map(\.className) == ["ERROR", "ERROR", "ERROR", "ERROR", "VERSION"])
    #expect(reports.first?["message"] as? String == "Unrecognized request '?FOO;'")
    #expect(
      (reports[2]["message"] as? String)?.hasPrefix("Request too long") == true,
      "\(reports.map(\.line))")
    #expect(server.statistics.clients == 1)
    #expect(simulator.received.isEmpty, "no malformed WATCH powered the receiver")
    await server.shutdown()
  }

  /// A client that stops reading is dropped once its backlog passes the limit; a client that
  /// reads keeps receiving throughout.
  @Test func aClientThatNeverReadsIsDroppedAndOthersAreUnaffected() async throws {
    let (simulator, server) = try ubloxServer(pace: .recorded(speed: 50)) {
      $0.maximumBacklog = 64 * 1024
      $0.clientSendBufferSize = 8 * 1024
    }
    defer { simulator.stop() }
    let reader = try TestClient(port: port(server))
    defer { reader.close() }
    reader.send("?WATCH={\"enable\":true,\"json\":true}\n")
    #expect(try await readFix(reader) != nil)

    let stalled = try TestClient(port: port(server), receiveBufferSize: 4096)
    defer { stalled.close() }
    stalled.send("?WATCH={\"enable\":true,\"json\":true}\n")
    // The reader goes on reading while the stalled client's backlog grows: on a thread
    // started here, since a task could wait for a busy cooperative pool until the reader too
    // fell behind and was dropped.
    let received = Locked(0)
    let stop = Locked(false)
    let stopped = Locked(false)
    let reading = Thread {
      while !stop.withLock({ $0 }) {
        guard let report = reader.readReport(timeout: .seconds(1)) else { continue }
        if report.className == "TPV" { received.withLock { $0 += 1 } }
      }
      stopped.withLock { $0 = true }
    }
    reading.start()
    #expect(await eventually(timeout: .seconds(60)) { server.statistics.clientsDropped == 1 })
    let atDrop = received.withLock { $0 }
    #expect(atDrop > 0)
    #expect(await eventually { received.withLock { $0 } >= atDrop + 20 })
    #expect(server.statistics.clientsDropped == 1)
    #expect(server.statistics.clients == 1)
    #expect(try await onOwnThread { stalled.isClosedByPeer() })
    // The reading thread is done with the socket before it is closed.
    stop.withLock { $0 = true }
    #expect(await eventually { stopped.withLock { $0 } })
    await server.shutdown()
  }

  @Test func fiftyClientsAtOnceAndTheFiftyFirstIsToldToComeBack() async throws {
    let (simulator, server) = try ubloxServer { $0.maximumClients = 50 }
    defer { simulator.stop() }
    var clients: [TestClient] = []
    for _ in 0..<50 { clients.append(try TestClient(port: port(server))) }
    defer { for client in clients { client.close() } }
    for client in clients { client.send("?WATCH={\"enable\":true,\"json\":true}\n") }
    let results = try await withThrowingTaskGroup(of: Int.self) { group in
      for client in clients {
        group.addTask {
          try await onOwnThread {
            var fixes = 0
            for _ in 0..<400 where fixes < 3 {
              guard let report = client.readReport() else { break }
              if report.className == "TPV" { fixes += 1 }
            }
            return fixes
          }
        }
      }
      return try await group.reduce(into: []) { $0.append($1) }
    }
    #expect(results.count == 50)
    #expect(results.allSatisfy { $0 == 3 }, "\(results)")
    #expect(server.statistics.clients == 50)
    #expect(server.statistics.watchers == 50)

    let extra = try TestClient(port: port(server))
    let refusal = try await onOwnThread { extra.readReport() }
    #expect(refusal?.className == "ERROR")
    #expect((refusal?["message"] as? String)?.contains("Too many clients") == true)
    #expect(try await onOwnThread { extra.isClosedByPeer() })
    extra.close()
    #expect(await eventually { server.statistics.clientsRefused == 1 })

    // One leaves; a newcomer is served.
    clients.removeLast().close()
    #expect(await eventually { server.statistics.clients == 49 })
    let newcomer = try TestClient(port: port(server))
    defer { newcomer.close() }
    #expect(try await onOwnThread { newcomer.readReport()?.className } == "VERSION")

    for client in clients { client.close() }
    clients.removeAll()
    #expect(await simulator.waitForPowerState(.backup, timeout: .seconds(30)))
    await server.shutdown()
  }

  /// A client that neither watches nor asks anything is closed after the idle timeout; a
  /// watcher is not, however quiet.
  @Test func idleClientsAreClosedWatchersAreNot() async throws {
    var configuration = testConfiguration()
    configuration.idleTimeout = .milliseconds(300)
    let memory = MemoryConnector()
    let server = try GPSDServer(
      configuration: configuration,
      devices: .fixed([GPSDServer.ServedDevice(path: "/dev/memory0", connector: memory)]))
    let idle = try TestClient(port: port(server))
    defer { idle.close() }
    let watcher = try TestClient(port: port(server))
    defer { watcher.close() }
    watcher.send("?WATCH={\"enable\":true,\"json\":true}\n")
    #expect(try await onOwnThread { watcher.read(until: "WATCH").report } != nil)
    #expect(try await onOwnThread { idle.isClosedByPeer() })
    #expect(await eventually { server.statistics.clients == 1 })
    try await Task.sleep(for: .milliseconds(600))
    #expect(server.statistics.clients == 1)
    watcher.send("?VERSION;\n")
    #expect(try await onOwnThread { watcher.read(until: "VERSION").report } != nil)
    await server.shutdown()
  }

  // MARK: - Hotplug

  /// Devices found by discovery come and go (the events are injected here; discovery itself
  /// is tested in DiscoveryTests): watchers of every device are told, start receiving, and
  /// are told again when it goes; the receiver is put to standby.
  @Test func hotpluggedReceiversAreServedAndReleased() async throws {
    let simulator = try makeSimulator(
      "ublox-m8-drive", profile: .ublox(.m8), initialPowerState: .backup)
    defer { simulator.stop() }
    var configuration = testConfiguration()
    configuration.baud = .fixed(.b115200)
    let server = try GPSDServer(configuration: configuration, devices: .fixed([]))
    let watcher = try TestClient(port: port(server))
    defer { watcher.close() }
    watcher.send("?WATCH={\"enable\":true,\"json\":true}\n")
    let watch = try await onOwnThread { watcher.read(until: "WATCH") }
    #expect((watch.skipped.last?["devices"] as? [Any])?.isEmpty == true)

    // The receiver's connector checks that the device is still in sysfs before opening it:
    // a directory stands in for its sysfs entry.
    let sysPath = FileManager.default.temporaryDirectory
      .appendingPathComponent("serve-hotplug-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
      .appendingPathComponent("tty/gps0").path
    try FileManager.default.createDirectory(atPath: sysPath, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: sysPath) }
    let device = SerialDevice(
      path: simulator.devicePath, sysPath: sysPath,
      stablePath: "/dev/serial/by-id/usb-u-blox_test-if00", usb: nil, driver: nil,
      classification: Classification(kind: .known, chipset: .ublox, source: .catalogue))
    server.inbox.post(.hotplug(.added(device)))
    let added = try await onOwnThread { watcher.read(until: "DEVICE") }
    #expect(added.report?["path"] as? String == simulator.devicePath)
    #expect(added.report?["activated"] is String)
    #expect(try await readFix(watcher)?["device"] as? String == simulator.devicePath)
    #expect(await simulator.waitForPowerState(.running))

    // It answers to its by-id name too.
    let named = try TestClient(port: port(server))
    defer { named.close() }
    named.send(
      "?WATCH={\"enable\":true,\"json\":true,\"device\":\"/dev/serial/by-id/usb-u-blox_test-if00\"}\n"
    )
    #expect(
      try await onOwnThread { named.read(until: "WATCH").report?["device"] as? String } != nil)

    server.inbox.post(.hotplug(.removed(device)))
    let removed = try await onOwnThread { () -> Report? in
      while let report = watcher.readReport() {
        if report.className == "DEVICE", report["activated"] as? Int == 0 { return report }
      }
      return nil
    }
    #expect(removed?["path"] as? String == simulator.devicePath)
    #expect(await simulator.waitForPowerState(.backup, timeout: .seconds(30)))
    #expect(await eventually { server.statistics.subscribedDevices == 0 })
    watcher.send("?DEVICES;\n")
    let devices = try await onOwnThread { watcher.read(until: "DEVICES").report }
    #expect((devices?["devices"] as? [Any])?.isEmpty == true)
    await server.shutdown()
  }

  // MARK: - Security defaults

  @Test func remoteAddressesNeedTheirFlag() async throws {
    var configuration = testConfiguration()
    configuration.listenAddress = try ListenAddress(host: "0.0.0.0", port: 0)
    #expect(throws: GPSDServerError.self) {
      try GPSDServer(configuration: configuration, devices: .fixed([]))
    }
    configuration.allowRemote = true
    let server = try GPSDServer(configuration: configuration, devices: .fixed([]))
    #expect(server.listenAddress!.port != 0)
    await server.shutdown()

    #expect(try ListenAddress(parsing: "127.0.0.1:2947").isLoopback)
    #expect(try ListenAddress(parsing: "[::1]:2947").isLoopback)
    #expect(try ListenAddress(parsing: "localhost").port == 2947)
    #expect(try ListenAddress(parsing: ":3000").host == "127.0.0.1")
    #expect(try !ListenAddress(parsing: "192.168.1.5:2947").isLoopback)
    #expect(try !ListenAddress(parsing: "[::]:2947").isLoopback)
    #expect(throws: ListenAddressError.self) { try ListenAddress(parsing: "example.org:2947") }
    #expect(throws: ListenAddressError.self) { try ListenAddress(parsing: "127.0.0.1:99999") }
  }

  @Test func aTakenPortIsReportedWithWhatToDo() throws {
    let first = try GPSDServer(configuration: testConfiguration(), devices: .fixed([]))
    var configuration = testConfiguration()
    configuration.listenAddress = .loopback(port: first.listenAddress!.port)
    do {
      _ = try GPSDServer(configuration: configuration, devices: .fixed([]))
      Issue.record("a second server bound the same port")
    } catch {
      #expect(error.description.contains("is gpsd running?"))
    }
    Task { await first.shutdown() }
  }

  /// A socket whose bind fails is closed there, once: none is left open, and none closed
  /// twice (a debug build stops at OwnedDescriptor's assertion).
  @Test func aFailedBindClosesItsSocket() throws {
    let first = try ListeningSocket(address: .loopback(port: 0))
    defer { first.close() }
    func openDescriptors() -> Int {
      (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd"))?.count ?? 0
    }
    let before = openDescriptors()
    for _ in 0..<1000 {
      #expect(throws: SocketError.self) {
        _ = try ListeningSocket(address: .loopback(port: first.address.port))
      }
    }
    // Other tests open descriptors meanwhile, but not hundreds.
    #expect(openDescriptors() - before < 200)
  }
}
