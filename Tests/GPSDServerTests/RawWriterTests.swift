import Chipsets
import NMEA
import Replay
import SerialGPS
import Simulator
import Testing

@testable import GPSDServer

/// The raw port's writer over real sockets, against the simulated u-blox on a pty: what it
/// leaves unfinished never reaches the receiver, and the driver's standby arrives whole.
@Suite(.serialized) struct RawWriterTests {
  /// What the server logged.
  let log = Locked<[String]>([])

  func rawServer(mediatek: Bool = false) throws -> (ReceiverSimulator, GPSDServer) {
    let simulator =
      mediatek
      ? try makeSimulator("mtk-cold-start", profile: .mediatek, initialPowerState: .standby)
      : try makeSimulator("ublox-m8-drive", profile: .ublox(.m8), initialPowerState: .backup)
    var configuration = testConfiguration()
    let log = self.log
    configuration.log = { line in log.withLock { $0.append(line) } }
    configuration.receiverOptions.chipset = .family(mediatek ? .mediatek : .ublox)
    configuration.listenAddress = nil
    configuration.rawListenAddress = .loopback(port: 0)
    configuration.rawWrite = true
    let server = try GPSDServer(
      configuration: configuration,
      devices: .fixed([
        GPSDServer.ServedDevice(
          path: simulator.devicePath,
          connector: SerialConnector(
            path: simulator.devicePath, baud: .fixed(mediatek ? .b9600 : .b115200)))
      ]))
    return (simulator, server)
  }

  /// UBX-RXM-PMREQ, the u-blox standby.
  func isStandby(_ input: ReceivedInput) -> Bool {
    input.bytes.starts(with: [0xB5, 0x62, 0x02, 0x41])
  }

  @Test func aHalfFrameLeftByAWriterDoesNotSwallowTheStandby() async throws {
    let (simulator, server) = try rawServer()
    defer { simulator.stop() }
    let port = try #require(server.rawListenAddress?.port)
    let writer = try TestClient(port: port)
    #expect(await simulator.waitForPowerState(.running, timeout: .seconds(30)))
    // A UBX header announcing 1 024 bytes (65 535 would do on a real receiver; the
    // simulator's framer gives up on a frame over 4 KiB at once), and the writer leaves.
    writer.send(bytes: [0xB5, 0x62, 0x06, 0x04, 0x00, 0x04])
    writer.close()
    #expect(await eventually { server.statistics.rawWriteBytesDropped == 6 })
    // Nobody left: the standby reaches the receiver whole, and it sleeps.
    #expect(
      await simulator.waitForPowerState(.backup, timeout: .seconds(30)),
      "\(simulator.received)")
    #expect(simulator.received.contains(where: isStandby), "\(simulator.received)")
    #expect(server.statistics.rawBytesWritten == 0)
    await server.shutdown()
  }

  @Test func aWholeCommandGoesAndAWritersUnsentBytesAreDroppedWhenItLeaves() async throws {
    let (simulator, server) = try rawServer()
    defer { simulator.stop() }
    let port = try #require(server.rawListenAddress?.port)
    let writer = try TestClient(port: port)
    #expect(await simulator.waitForPowerState(.running, timeout: .seconds(30)))
    // UBX-MON-VER polls: one whole frame reaches the receiver as it was sent.
    let poll = try UBX.frame(UBXMessageID(0x0A, 0x04))
    writer.send(bytes: poll)
    #expect(await eventually { simulator.received.contains { $0.bytes == poll } })
    // Far more than may wait (the receiver takes 11 KiB a second), and the writer goes:
    // nothing more is handed to the receiver once it left, and the receiver never gets more
    // than was handed on (what waited in the queue is dropped, not written later).
    let many = Array(repeating: poll, count: 40_000).flatMap { $0 }
    writer.send(bytes: many)
    writer.close()
    #expect(await eventually { server.statistics.rawClients == 0 })
    let statistics = server.statistics
    #expect(statistics.rawBytesWritten <= poll.count + 64 * 1024 + 16 * 1024)
    #expect(statistics.rawWriteBytesDropped > 0)
    try await Task.sleep(for: .seconds(1))
    #expect(server.statistics.rawBytesWritten == statistics.rawBytesWritten)
    #expect(
      simulator.received.count { $0.bytes == poll } * poll.count <= statistics.rawBytesWritten)
    #expect(await simulator.waitForPowerState(.backup, timeout: .seconds(30)))
    await server.shutdown()
  }

  @Test func rtcm3CorrectionsReachTheReceiverAsWholeFrames() async throws {
    let (simulator, server) = try rawServer()
    defer { simulator.stop() }
    let port = try #require(server.rawListenAddress?.port)
    let writer = try TestClient(port: port)
    #expect(await simulator.waitForPowerState(.running, timeout: .seconds(30)))
    // Two frames as str2str pushes them, cut anywhere, with a corrupt one between them.
    let first = RTCM3.frame(message: (0..<120).map { UInt8(truncatingIfNeeded: $0 * 7) })
    let second = RTCM3.frame(message: (0..<300).map { UInt8(truncatingIfNeeded: $0 * 3) })
    var corrupt = RTCM3.frame(message: Array(repeating: 0x42, count: 50))
    corrupt[20] ^= 0x01
    let bytes = first + corrupt + second
    writer.send(bytes: Array(bytes[..<50]))
    try await Task.sleep(for: .milliseconds(50))
    writer.send(bytes: Array(bytes[50..<200]))
    try await Task.sleep(for: .milliseconds(50))
    writer.send(bytes: Array(bytes[200...]))
    #expect(
      await eventually { simulator.received.contains { $0.bytes == second } },
      "\(simulator.received)")
    #expect(simulator.received.contains { $0.bytes == first })
    #expect(!simulator.received.contains { $0.bytes.contains(0x42) && $0.bytes.count <= 60 })
    #expect(server.statistics.rawBytesWritten == first.count + second.count)
    #expect(server.statistics.rawWriteBytesDropped == corrupt.count)
    writer.close()
    #expect(await simulator.waitForPowerState(.backup, timeout: .seconds(30)))
    await server.shutdown()
  }

  @Test func aSentenceLeftWithoutItsLineEndNeverReachesTheReceiver() async throws {
    let (simulator, server) = try rawServer(mediatek: true)
    defer { simulator.stop() }
    let port = try #require(server.rawListenAddress?.port)
    let writer = try TestClient(port: port)
    #expect(await simulator.waitForPowerState(.running, timeout: .seconds(30)))
    writer.send("$PMTK220,1000")
    writer.close()
    #expect(await eventually { server.statistics.rawWriteBytesDropped == 13 })
    #expect(
      await eventually {
        log.withLock { $0.contains { $0.contains("left; 13 bytes it sent were not written") } }
      }, "\(log.withLock { $0 })")
    #expect(
      await simulator.waitForPowerState(.standby, timeout: .seconds(30)), "\(simulator.received)")
    // Every byte the receiver got was a whole sentence: the standby's first $PMTK161 too.
    let standby = Array("$PMTK161,0*28\r\n".utf8)
    #expect(
      simulator.received.first { $0.bytes.starts(with: Array("$PMTK161".utf8)) }?.bytes == standby)
    #expect(simulator.inputStatistics.malformed == 0, "\(simulator.inputStatistics)")
    await server.shutdown()
  }
}
