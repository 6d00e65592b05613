import Chipsets
import NMEA
import POSIX
import Testing

@testable import SerialGPS

/// A connector that reaches a receiver whose identity the test sets (as `.first` does when
/// one receiver is unplugged and another plugged in).
final class SwitchingConnector: ReceiverConnector, @unchecked Sendable {
  let memory = MemoryConnector()
  let identity = Locked<String?>(nil)
  var deviceName: String { "switching" }
  var receiverIdentity: String? { identity.withLock { $0 } }
  func connect() async throws -> any ReceiverConnection { try await memory.connect() }
}

/// A connector whose connection comes with the receiver's banner already in it (as the bytes
/// heard while `DiscoveringConnector` listened for the rate do), and which, once the driver
/// has counted the power-on (its reader is then running), holds any question the driver asks
/// it until the reader has identified the receiver from them: the order that load produces
/// now and then, made certain.
final class AlreadyIdentifiedConnector: ReceiverConnector, @unchecked Sendable {
  let memory = MemoryConnector()
  let core = Locked<ReceiverCore?>(nil)
  var deviceName: String { "bridge" }
  var chipsetHint: ChipsetHint? {
    if let core = core.withLock({ $0 }), core.statistics.powerOns > 0 {
      let deadline = ContinuousClock.now + .seconds(10)
      while core.knowledge.identification.withLock({ $0 }) == nil, ContinuousClock.now < deadline {
        sleepThread(for: .milliseconds(1))
      }
    }
    return ChipsetHint(family: nil, interface: .uart)
  }
  func connect() async throws -> any ReceiverConnection {
    let connection = try await memory.connect()
    memory.latest!.feed(ReceiverIdentityTests.banner)
    return connection
  }
}

@Suite struct ReceiverIdentityTests {
  static let banner = sentence("GPTXT,01,01,02,u-blox ag - www.u-blox.com")

  /// Subscribes, streams a few cycles (with `prefix` first), unsubscribes, and returns the
  /// connection once it is closed.
  func session(
    _ receiver: GPSReceiver, _ connector: SwitchingConnector, prefix: String = ""
  ) async throws -> MemoryConnection {
    let opens = connector.memory.opens
    let log = EventLog(receiver.subscribe())
    #expect(await eventually { connector.memory.opens == opens + 1 })
    let connection = try #require(connector.memory.latest)
    connection.feed(prefix + cycle(second: 1) + cycle(second: 2) + cycle(second: 3))
    #expect(await eventually { log.fixes.count >= 2 })
    log.stop()
    #expect(await eventually { connection.isClosed })
    return connection
  }

  @Test func whatOneReceiverSaidIsForgottenWhenTheConnectorReachesAnother() async throws {
    let connector = SwitchingConnector()
    var options = GPSReceiver.Options()
    options.linger = .zero
    options.acknowledgementTimeout = .milliseconds(20)
    options.commandAttempts = 1
    let receiver = GPSReceiver(connector: connector, options: options)

    // Receiver A says it is a u-blox: nothing is written before, standby after.
    connector.identity.withLock { $0 = "serial A" }
    let first = try await session(receiver, connector, prefix: Self.banner)
    let standby = try #require(first.writes.last)
    #expect(standby.starts(with: [0xB5, 0x62]))  // UBX

    // Powered on again, still A: woken with u-blox commands.
    let second = try await session(receiver, connector)
    #expect(second.writes.first?.starts(with: [0xFF]) == true)  // the wake burst

    // Now another receiver, that says nothing about itself: nothing is ever written to it.
    connector.identity.withLock { $0 = "067b:2303 /sys/devices/…/1-6/1-6:1.0" }
    let third = try await session(receiver, connector)
    #expect(third.writes.isEmpty, "\(third.writes)")
    await receiver.shutdown()
  }

  @Test func aReceiverThatSaysWhatItIsOnceOpenIsNotWokenWhileItStreams() async throws {
    let connector = AlreadyIdentifiedConnector()
    var options = GPSReceiver.Options()
    options.linger = .zero
    options.acknowledgementTimeout = .milliseconds(20)
    options.commandAttempts = 1
    let receiver = GPSReceiver(connector: connector, options: options)
    connector.core.withLock { $0 = receiver.core }

    let log = EventLog(receiver.subscribe())
    #expect(await eventually { connector.memory.opens == 1 })
    let connection = try #require(connector.memory.latest)
    connection.feed(cycle(second: 1) + cycle(second: 2) + cycle(second: 3))
    #expect(await eventually { log.fixes.count >= 2 })
    #expect(await eventually { receiver.core.knowledge.identification.withLock { $0 } != nil })
    // The power-on of this connection was decided before anything was heard: no wake burst,
    // no sentence selection, no GNSS start to a receiver that is streaming.
    #expect(connection.writes.isEmpty, "\(connection.writes)")
    #expect(receiver.statistics.commandsSent == 0)

    // What it said is used at the power-off already: the u-blox backup request, alone.
    log.stop()
    #expect(await eventually { connection.isClosed })
    #expect(connection.writes.count == 1, "\(connection.writes)")
    #expect(connection.writes.first?.starts(with: [0xB5, 0x62, 0x02, 0x41]) == true)  // RXM-PMREQ
    await receiver.shutdown()
  }
}
