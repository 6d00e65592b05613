import Foundation
import Glibc
import SerialGPS
import Testing

@testable import GPSDServer

/// What one client, or a crowd of them, may cost the server: the inbox
/// between the receivers and the server thread is bounded, client sockets have a small send
/// buffer, and idle clients that do not watch give their slot to a newcomer.
@Suite struct ClientLimitTests {
  // MARK: - The inbox

  private func report(_ device: DeviceID, _ byte: UInt8) -> ServerMessage {
    .receiver(device, generation: 1, .rawData([byte]))
  }

  private func rawByte(_ message: ServerMessage) -> UInt8? {
    if case .receiver(_, _, .rawData(let bytes)) = message { return bytes.first }
    return nil
  }

  /// A server thread that falls behind a receiver keeps only that receiver's newest reports;
  /// status events, hotplug events and the other receivers' reports are all kept.
  @Test func theInboxKeepsTheNewestReportsOfEachDeviceAndEverythingElse() {
    var inbox = Inbox(reportLimit: 4)
    inbox.post(.receiver(1, generation: 1, .event(.status(.reconnected))))
    for byte in UInt8(0)..<10 { inbox.post(report(1, byte)) }
    inbox.post(.hotplug(.enumerationComplete))
    inbox.post(report(2, 100))
    inbox.post(.receiver(1, generation: 1, .event(.status(.streaming))))
    inbox.post(report(1, 10))
    let (messages, dropped) = inbox.take()
    #expect(dropped == 7)
    let ofDevice1 = messages.compactMap { message -> UInt8? in
      guard case .receiver(1, _, _) = message else { return nil }
      return rawByte(message)
    }
    #expect(ofDevice1 == [7, 8, 9, 10])
    #expect(messages.contains { rawByte($0) == 100 })
    #expect(
      messages.filter {
        if case .receiver(_, _, .event(.status)) = $0 { return true }
        return false
      }.count == 2)
    #expect(
      messages.contains {
        if case .hotplug(.enumerationComplete) = $0 { return true }
        return false
      })
    // Emptied by take(): the limit counts afresh.
    for byte in UInt8(0)..<4 { inbox.post(report(1, byte)) }
    #expect(inbox.take().dropped == 0)
  }

  // MARK: - Sockets

  private func server(_ configure: (inout GPSDServer.Configuration) -> Void = { _ in }) throws
    -> GPSDServer
  {
    var configuration = testConfiguration()
    configure(&configuration)
    return try GPSDServer(configuration: configuration, devices: .fixed([]))
  }

  private func localPort(_ descriptor: Int32, peer: Bool = false) -> UInt16? {
    var address = sockaddr_in()
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let result = withUnsafeMutablePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        peer ? getpeername(descriptor, $0, &length) : getsockname(descriptor, $0, &length)
      }
    }
    guard result == 0, address.sin_family == sa_family_t(AF_INET) else { return nil }
    return UInt16(bigEndian: address.sin_port)
  }

  /// The server's end of `client`'s connection, found among this process's descriptors.
  private func serverEnd(of client: TestClient, server: GPSDServer) -> Int32? {
    guard let clientPort = localPort(client.descriptor),
      let names = try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")
    else { return nil }
    return names.compactMap { Int32($0) }.first { descriptor in
      descriptor != client.descriptor && localPort(descriptor) == port(server)
        && localPort(descriptor, peer: true) == clientPort
    }
  }

  private func sendBufferSize(_ descriptor: Int32) -> Int32 {
    var size: Int32 = 0
    var length = socklen_t(MemoryLayout<Int32>.size)
    getsockopt(descriptor, SOL_SOCKET, SO_SNDBUF, &size, &length)
    return size
  }

  private func port(_ server: GPSDServer) -> UInt16 { server.listenAddress!.port }

  /// A client that stops reading is found by its backlog, not after the kernel has buffered
  /// megabytes for it: the server's end of each connection has a small, fixed send buffer
  /// (Linux reports twice the size asked, for its bookkeeping).
  @Test(arguments: [nil, 8192])
  func clientSocketsHaveASmallSendBuffer(asked: Int?) async throws {
    let expected = asked ?? GPSDServer.Configuration().clientSendBufferSize
    let server = try server { configuration in
      configuration.clientSendBufferSize = expected
    }
    #expect(expected != nil && expected! <= 64 * 1024, "small by default")
    let client = try TestClient(port: port(server))
    defer { client.close() }
    #expect(try await onOwnThread { client.readReport()?.className } == "VERSION")
    let end = try #require(serverEnd(of: client, server: server))
    #expect(sendBufferSize(end) == Int32(2 * expected!))
    await server.shutdown()
  }

  // MARK: - Eviction

  /// Connects a client and reads its VERSION banner, so that the server has accepted it.
  private func connect(_ server: GPSDServer) async throws -> TestClient {
    let client = try TestClient(port: port(server))
    let banner = try await onOwnThread { client.readReport()?.className }
    #expect(banner == "VERSION")
    return client
  }

  private func answers(_ client: TestClient) async throws -> Bool {
    client.send("?VERSION;\n")
    return try await onOwnThread { client.readReport()?.className } == "VERSION"
  }

  /// When every slot is taken, a newcomer takes the slot of the client that has gone longest
  /// without a request among those that do not watch; watchers keep theirs, and when only
  /// watchers are left the newcomer is refused. The evicted client is told why.
  @Test func aNewcomerTakesTheSlotOfTheLongestIdleClientThatDoesNotWatch() async throws {
    let logged = Locked<[String]>([])
    let server = try server { configuration in
      configuration.maximumClients = 3
      configuration.evictionIdleTime = .zero
      configuration.log = { message in logged.withLock { $0.append(message) } }
    }
    let a = try await connect(server)
    defer { a.close() }
    let watcher = try await connect(server)
    defer { watcher.close() }
    watcher.send("?WATCH={\"enable\":true,\"json\":true};\n")
    #expect(try await onOwnThread { watcher.read(until: "WATCH").report } != nil)
    let c = try await connect(server)
    defer { c.close() }
    // a asks something after c connected: c is now the longest idle.
    #expect(try await answers(a))

    let d = try await connect(server)
    defer { d.close() }
    let notice = try await onOwnThread { c.readReport() }
    #expect(notice?.className == "ERROR")
    #expect((notice?["message"] as? String)?.contains("idle") == true)
    #expect(try await onOwnThread { c.isClosedByPeer() })
    #expect(try await answers(a))
    #expect(server.statistics.clientsEvicted == 1)
    #expect(server.statistics.watchers == 1)
    #expect(
      logged.withLock { $0 }.contains {
        $0.contains("closed idle client") && $0.contains("make room")
      },
      "\(logged.withLock { $0 })")

    // a asked again after d connected: d goes next.
    let e = try await connect(server)
    defer { e.close() }
    #expect(try await onOwnThread { d.isClosedByPeer() })
    #expect(try await answers(a))
    a.send("?WATCH={\"enable\":true};\n")
    e.send("?WATCH={\"enable\":true};\n")
    #expect(try await onOwnThread { a.read(until: "WATCH").report } != nil)
    #expect(try await onOwnThread { e.read(until: "WATCH").report } != nil)

    // Only watchers now: the newcomer is refused, nobody is closed.
    let f = try TestClient(port: port(server))
    defer { f.close() }
    let refusal = try await onOwnThread { f.readReport() }
    #expect(refusal?.className == "ERROR")
    #expect((refusal?["message"] as? String)?.hasPrefix("Too many clients") == true)
    #expect(try await onOwnThread { f.isClosedByPeer() })
    #expect(server.statistics.clientsEvicted == 2)
    #expect(server.statistics.clientsRefused == 1)
    #expect(server.statistics.clients == 3)
    await server.shutdown()
  }

  /// A refused newcomer that had already sent its request still reads why it was refused:
  /// closing a socket with unread input makes the kernel reset the connection, and the client
  /// then gets ECONNRESET instead of the `ERROR` written just before (seen in a burst of
  /// clients that connect and send `?WATCH` at once).
  @Test func aRefusalIsReadEvenWhenTheClientHadAlreadySentARequest() async throws {
    let listener = try ListeningSocket(address: .loopback(port: 0))
    defer { listener.close() }
    let client = try TestClient(port: listener.address.port)
    defer { client.close() }
    client.send("?WATCH={\"enable\":true};\n")
    var accepted: Int32?
    #expect(
      await eventually {
        accepted = accepted ?? ((try? listener.accept()) ?? nil)
        return accepted != nil
      })
    let socket = ClientSocket(descriptor: try #require(accepted))
    // The request has arrived, unread.
    var poller = pollfd(fd: socket.descriptor, events: Int16(POLLIN), revents: 0)
    #expect(poll(&poller, 1, 10_000) == 1)
    _ = Array("{\"class\":\"ERROR\"}\r\n".utf8).withUnsafeBytes { socket.write($0) }
    socket.closeAfterDiscardingInput()
    #expect(try await onOwnThread { client.readLine() } == "{\"class\":\"ERROR\"}")
    #expect(try await onOwnThread { client.isClosedByPeer() })
  }

  /// With no descriptor left for a new connection (`--max-clients` above the process's
  /// limit), the server neither spins on its readable listener nor floods its log: it says so
  /// once, waits for a client to leave, and then serves the connections that waited.
  @Test func runningOutOfDescriptorsIsSaidOnceAndWaitedOut() async throws {
    let binary = try #require(
      ClientCompatibilityTests.binary,
      "serialgps is not built beside the tests; run `swift build --build-tests`")
    let logPath = FileManager.default.temporaryDirectory
      .appendingPathComponent("serve-emfile-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).log")
      .path
    try #require(FileManager.default.createFile(atPath: logPath, contents: nil))
    defer { try? FileManager.default.removeItem(atPath: logPath) }
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/bin/sh")
    process.arguments = [
      "-c",
      "ulimit -n 40 && exec \"$0\" serve --listen 127.0.0.1:0 --max-clients 4000 /dev/nonexistent-gps",
      binary,
    ]
    process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: logPath))
    process.standardOutput = FileHandle.nullDevice
    try await onOwnThread { try startWithSignalsUnblocked(process) }
    defer { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }
    func logged() -> String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }
    #expect(await eventually { logged().contains("listening on 127.0.0.1:") })
    let text = logged()
    let range = try #require(text.range(of: "listening on 127.0.0.1:"))
    let port = try #require(UInt16(text[range.upperBound...].prefix { $0.isNumber }))

    // More connections than descriptors: the kernel queues them, the server cannot take them.
    let began = ContinuousClock.now
    var clients: [TestClient] = []
    for _ in 0..<60 { clients.append(try TestClient(port: port)) }
    #expect(await eventually { logged().contains("cannot accept clients") })
    try await Task.sleep(for: .seconds(1))
    for client in clients { client.close() }
    let late = try TestClient(port: port)
    defer { late.close() }
    #expect(
      try await onOwnThread { late.readReport(timeout: .seconds(30))?.className } == "VERSION")
    process.terminate()
    try await onOwnThread { process.waitUntilExit() }
    let elapsed = ContinuousClock.now - began
    let failures = logged().components(separatedBy: "\n").filter { $0.contains("cannot accept") }
    // Said when it first ran out; after the first clients leave, those queued behind take the
    // freed descriptors and it runs out again, as often as the machine is slow: those times
    // are counted into a message at most every 10 s, never one per poll or per time.
    let allowed = 1 + Int((elapsed / .seconds(10)).rounded(.down))
    #expect((1...allowed).contains(failures.count), "\(failures.count) lines in \(elapsed)")
  }

  /// A client that has just connected is not closed for a newcomer: in a burst of
  /// connections its first request may not have been read yet.
  @Test func aClientIdleForLessThanTheEvictionTimeKeepsItsSlot() async throws {
    let server = try server { configuration in
      configuration.maximumClients = 1
      configuration.evictionIdleTime = .seconds(600)
    }
    let first = try await connect(server)
    defer { first.close() }
    let second = try TestClient(port: port(server))
    defer { second.close() }
    let refusal = try await onOwnThread { second.readReport() }
    #expect((refusal?["message"] as? String)?.hasPrefix("Too many clients") == true)
    #expect(try await answers(first))
    #expect(server.statistics.clientsEvicted == 0)
    await server.shutdown()
  }
}
