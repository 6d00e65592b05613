import Foundation
import NMEA
import POSIX
import SerialGPS
import Testing

@testable import NTRIP

/// The client against a test caster on loopback, with a receiver in memory whose writes are
/// recorded one call at a time.
@Suite("NTRIPClient: the client against a test caster", .serialized)
struct NTRIPClientTests {
  let frames = (0..<6).map { rtcmFrame(10 + $0 * 37, seed: UInt8($0)) }

  func configuration(_ caster: TestCaster, mountpoint: String = "MOUNT")
    -> NTRIPSession
    .Configuration
  {
    var configuration = NTRIPSession.Configuration(
      caster: NTRIPCaster(
        host: "127.0.0.1", port: Int(caster.port), mountpoint: mountpoint,
        credentials: NTRIPCredentials(user: "rover", password: "secret")))
    configuration.positionInterval = .milliseconds(300)
    configuration.reconnectDelay = .milliseconds(100)
    configuration.maximumReconnectDelay = .milliseconds(400)
    return configuration
  }

  /// The RTCM frames the receiver was written, one per write.
  func forwarded(_ connector: MemoryConnector) -> [[UInt8]] {
    connector.all.flatMap(\.written).filter { $0.first == 0xD3 }
  }

  /// Feeds a fix a tenth of a second while `running`.
  func feedFixes(_ connector: MemoryConnector, while running: Locked<Bool>) -> Task<Void, Never> {
    Task.detached {
      var second = 0
      while running.withLock({ $0 }) {
        if let connection = connector.latest, !connection.isClosed {
          connection.feed(cycle(second: second % 60))
          second += 1
        }
        try? await Task.sleep(for: .milliseconds(100))
      }
    }
  }

  @Test("no connection while nobody listens; opened at the first watcher, closed at standby")
  func followsPower() async throws {
    var corrupt = rtcmFrame(50, seed: 99)
    corrupt[30] ^= 0x04
    let caster = try TestCaster(answer: .ntrip1, frames: frames + [corrupt])
    defer { caster.stop() }
    let (receiver, connector) = makeReceiver()
    let logged = Locked<[String]>([])
    var options = NTRIPClient.Options()
    options.log = { line in logged.withLock { $0.append(line) } }
    let client = try NTRIPClient(
      receiver: receiver, configuration: configuration(caster), options: options)
    let running = Locked(true)
    let feeder = feedFixes(connector, while: running)

    // Nobody listens: the caster hears nothing.
    try await Task.sleep(for: .milliseconds(800))
    #expect(caster.requests.isEmpty)
    #expect(connector.opens == 0)

    for round in 1...2 {
      let subscription = receiver.subscribe { _ in }
      #expect(await eventually { caster.openConnections == 1 })
      #expect(await eventually { forwarded(connector).count >= 14 * round })
      #expect(await eventually { caster.positions.count >= 2 * round })
      subscription.cancel()
      #expect(await eventually { !connector.isOpen })
      #expect(await eventually { caster.openConnections == 0 })
      #expect(caster.requests.count == round)
    }
    running.withLock { $0 = false }
    await feeder.value
    await client.stop()
    await receiver.shutdown()

    // Every write of corrections was one whole, valid frame, in the caster's order; the
    // corrupt one was never written.
    let written = forwarded(connector)
    for frame in written {
      #expect(frames.contains(frame), "a write that is not one of the caster's frames")
    }
    #expect(!written.contains(corrupt))
    let statistics = client.statistics
    // Frames handed over while the port was being closed or opened are dropped by the
    // receiver's controller (counted there): none is written in part.
    #expect(written.count <= statistics.framesForwarded)
    #expect(written.count >= 14)
    #expect(statistics.framesRefused >= 2)
    #expect(statistics.connections == 2)
    #expect(statistics.failures == 0)
    // The GGA lines the caster got are the fix's, checksummed.
    for line in caster.positions {
      #expect(line.hasPrefix("$GPGGA,1200"))
      #expect(line.contains(",4656.78900,N,00726.12300,E,1,08,"))
    }
    let request = try #require(caster.requests.first)
    #expect(request.hasPrefix("GET /MOUNT HTTP/1.1\r\n"))
    #expect(request.contains("Ntrip-Version: Ntrip/2.0\r\n"))
    #expect(request.contains("Authorization: Basic cm92ZXI6c2VjcmV0\r\n"))
    // The log never shows the password.
    let log = logged.withLock { $0 }
    #expect(log.contains { $0.contains("receiving corrections") })
    #expect(!log.contains { $0.contains("secret") })
  }

  @Test("asleep and unwatched, the client never wakes; a power-on connects at once, no timer")
  func noWakeUpsWhileAsleep() async throws {
    let caster = try TestCaster(answer: .ntrip1, frames: frames)
    defer { caster.stop() }
    let (receiver, connector) = makeReceiver()
    // No GGA: while connected, the one deadline is the 30 s silence check.
    var configuration = configuration(caster)
    configuration.positionInterval = nil
    let client = try NTRIPClient(receiver: receiver, configuration: configuration)

    // A second with the receiver asleep and nobody listening: the thread sleeps throughout.
    try await Task.sleep(for: .seconds(1))
    #expect(client.statistics.wakeUps == 0)
    #expect(client.statistics.timedWakeUps == 0)

    // The power-on is an event: the connection follows it without any timer firing.
    let subscription = receiver.subscribe { _ in }
    #expect(await eventually { client.statistics.connections == 1 })
    #expect(await eventually { forwarded(connector).count >= 6 })
    #expect(client.statistics.timedWakeUps == 0)

    // Standby closes it, and the thread sleeps again.
    subscription.cancel()
    #expect(await eventually { caster.openConnections == 0 })
    #expect(await eventually { client.statistics.connectedTime > .zero })
    let settled = client.statistics.wakeUps
    try await Task.sleep(for: .seconds(1))
    #expect(client.statistics.wakeUps == settled)
    #expect(client.statistics.timedWakeUps == 0)
    await client.stop()
    await receiver.shutdown()
  }

  @Test("NTRIP 2 chunked, cut inside size lines and frames, gives the frames whole and in order")
  func chunkedAwkwardCuts() async throws {
    let caster = try TestCaster(
      answer: .ntrip2Chunked(chunkSize: 37, cuts: [1, 2, 3, 5, 7, 11, 13, 64]), frames: frames,
      interval: .milliseconds(10))
    defer { caster.stop() }
    let (receiver, connector) = makeReceiver()
    let client = try NTRIPClient(receiver: receiver, configuration: configuration(caster))
    let subscription = receiver.subscribe { _ in }
    #expect(await eventually { forwarded(connector).count >= 30 })
    subscription.cancel()
    await client.stop()
    await receiver.shutdown()
    let written = forwarded(connector)
    // The caster sends the frames in turn; the chunking holds back at most a chunk, so the
    // receiver got them in the same turn from the first.
    for (index, frame) in written.enumerated() {
      #expect(frame == frames[index % frames.count], "frame \(index)")
    }
    #expect(client.statistics.framesRefused == 0)
    #expect(client.statistics.bytesSkipped == 0)
  }

  @Test("a receiver that stops draining: whole frames dropped and counted, nothing piles up")
  func stalledReceiver() async throws {
    let frame = rtcmFrame(200, seed: 1)
    let caster = try TestCaster(answer: .ntrip1, frames: [frame], interval: .milliseconds(1))
    defer { caster.stop() }
    let (receiver, connector) = makeReceiver()
    var options = NTRIPClient.Options()
    options.maximumPendingBytes = 4096
    let client = try NTRIPClient(
      receiver: receiver, configuration: configuration(caster), options: options)
    let subscription = receiver.subscribe { _ in }
    #expect(await eventually { client.statistics.framesForwarded >= 1 })
    let connection = try #require(connector.latest)
    connection.stalled = true
    let before = client.statistics.framesForwarded
    #expect(await eventually { client.statistics.framesDropped >= 50 })
    // Handed over while stalled: at most what the bound holds, whole frames (one more may
    // have been in the write that stalled).
    let during = client.statistics.framesForwarded - before
    #expect(during <= 4096 / frame.count + 1)
    connection.stalled = false
    #expect(await eventually { client.statistics.framesForwarded > before + during })
    subscription.cancel()
    await client.stop()
    await receiver.shutdown()
    for written in connection.written where written.first == 0xD3 { #expect(written == frame) }
  }

  @Test("a wrong password is a clear error, and not tried again while powered")
  func wrongPassword() async throws {
    let caster = try TestCaster(answer: .unauthorized, frames: [])
    defer { caster.stop() }
    let (receiver, _) = makeReceiver()
    let logged = Locked<[String]>([])
    var options = NTRIPClient.Options()
    options.log = { line in logged.withLock { $0.append(line) } }
    let client = try NTRIPClient(
      receiver: receiver, configuration: configuration(caster), options: options)
    let subscription = receiver.subscribe { _ in }
    #expect(await eventually { client.stoppedBy != nil })
    #expect(client.stoppedBy == .unauthorized(mountpoint: "MOUNT"))
    try await Task.sleep(for: .seconds(1))
    #expect(caster.requests.count == 1)
    subscription.cancel()
    await client.stop()
    await receiver.shutdown()
    let log = logged.withLock { $0 }
    #expect(
      log.contains {
        $0.contains("refused the user name or password for MOUNT (HTTP 401)")
          && $0.contains("not trying again until the receiver is next powered")
      })
  }

  @Test("a wrong mountpoint names the mountpoints offered")
  func wrongMountpoint() async throws {
    let caster = try TestCaster(answer: .sourceTable(["NEAR", "FAR"]), frames: [])
    defer { caster.stop() }
    let (receiver, _) = makeReceiver()
    let client = try NTRIPClient(
      receiver: receiver, configuration: configuration(caster, mountpoint: "WRONG"))
    let subscription = receiver.subscribe { _ in }
    #expect(await eventually { client.stoppedBy != nil })
    #expect(
      client.stoppedBy?.description
        == "the caster does not offer the mountpoint WRONG; it offers: NEAR, FAR")
    subscription.cancel()
    await client.stop()
    await receiver.shutdown()
  }
}
