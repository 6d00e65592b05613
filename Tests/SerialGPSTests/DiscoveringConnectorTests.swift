import Chipsets
import Discovery
import Foundation
import Glibc
import NMEA
import POSIX
import SerialPort
import Testing

@testable import SerialGPS

/// `DiscoveringConnector` fed scripted hotplug events, with ptys as device nodes: the parts of
/// following a receiver that need no udev (the end-to-end runs are in DiscoveryTests, under
/// umockdev).
@Suite struct DiscoveringConnectorTests {
  /// A device whose node is `pty`'s device side and whose "sysfs" directory is a real
  /// directory (the connector checks that it still exists before opening).
  static func device(
    _ pty: PseudoTerminal, sysPath: String, kind: ReceiverKind = .known,
    chipset: ChipsetFamily? = .ublox, serial: String? = nil, driver: String = "cdc_acm"
  ) -> SerialDevice {
    SerialDevice(
      path: pty.devicePath, sysPath: sysPath, stablePath: nil,
      usb: USBDeviceInfo(id: USBID(vendor: 0x1546, product: 0x01a7), serialNumber: serial),
      driver: driver,
      classification: Classification(kind: kind, chipset: chipset, source: .catalogue))
  }

  /// A directory standing in for a device's sysfs directory.
  static func sysDirectory() throws -> String {
    var template = Array("/tmp/serialgps-sys-XXXXXX".utf8CString)
    return try #require(mkdtemp(&template).map { String(cString: $0) })
  }

  /// Counts the connector's "a device appeared" calls.
  final class Appearances: @unchecked Sendable {
    private let count = Locked(0)
    func record() { count.withLock { $0 += 1 } }
    var value: Int { count.withLock { $0 } }
  }

  static func connector(
    _ selector: ReceiverSelector = .first,
    baud: SerialConnector.BaudSetting = .fixed(.b9600)
  ) -> (DiscoveringConnector, AsyncStream<HotplugEvent>.Continuation) {
    let (events, sink) = AsyncStream.makeStream(of: HotplugEvent.self)
    let connector = DiscoveringConnector(selector: selector, baud: baud, events: { events })
    return (connector, sink)
  }

  @Test func theFirstOpenWaitsForTheDevicesPresentToBeListed() async throws {
    let pty = try PseudoTerminal()
    let sys = try Self.sysDirectory()
    defer { rmdir(sys) }
    let (connector, sink) = Self.connector()
    let appeared = Appearances()
    connector.startWatching { appeared.record() }
    // Opened before discovery has said anything: without waiting it would find no receiver.
    let opening = Task { try await connector.connect(wakingWith: .ublox) }
    #expect(await eventually { connector.isOpening })
    sink.yield(.added(Self.device(pty, sysPath: sys)))
    sink.yield(.enumerationComplete)
    let connection = try await opening.value
    defer { connection.close() }
    #expect(connector.currentDevice?.path == pty.devicePath)
    #expect(connector.deviceName == pty.devicePath)
    // The open took the device itself: the receiver is not told it appeared.
    #expect(appeared.value == 0)
    connector.stopWatching()
  }

  @Test func withNoReceiverTheOpenSaysItWaits() async throws {
    let (connector, sink) = Self.connector(.serialNumber("A1"))
    connector.startWatching {}
    sink.yield(.enumerationComplete)
    await #expect(throws: DiscoveringConnector.NoReceiver.self) {
      _ = try await connector.connect()
    }
    #expect(
      String(describing: DiscoveringConnector.NoReceiver(selector: .serialNumber("A1")))
        .hasPrefix("the receiver with serial number A1 is not attached; waiting"))
    #expect(
      String(describing: DiscoveringConnector.NoReceiver(selector: .first))
        .hasPrefix("no GPS receiver is attached; waiting"))
    connector.stopWatching()
  }

  @Test func anUnplugEndsTheConnectionWithoutAHangUp() async throws {
    let pty = try PseudoTerminal()
    let sys = try Self.sysDirectory()
    defer { rmdir(sys) }
    let (connector, sink) = Self.connector()
    connector.startWatching {}
    let device = Self.device(pty, sysPath: sys)
    sink.yield(.added(device))
    sink.yield(.enumerationComplete)
    let connection = try await connector.connect(wakingWith: .nmea)
    // A reader blocked on the port (the pty stays open: no hang-up) ends when udev says so.
    let reading = Task.detached { () -> String in
      var buffer = [UInt8](repeating: 0, count: 64)
      do {
        while true {
          _ = try buffer.withUnsafeMutableBytes { try connection.read(into: $0) }
        }
      } catch {
        return String(describing: error)
      }
    }
    sink.yield(.removed(device))
    let reason = await reading.value
    #expect(reason == "\(pty.devicePath) was unplugged; waiting for a receiver to be plugged in")
    connection.close()
    #expect(connector.currentDevice == nil)

    // Retries while nothing is attached fail for the same reason: subscribers, told once
    // already, are not told again.
    for _ in 0..<2 {
      let again = await #expect(throws: DiscoveringConnector.DeviceGone.self) {
        _ = try await connector.connect()
      }
      #expect(again.map(String.init(describing:)) == reason)
    }
    // Something attached and gone again since: the news is that no receiver is attached.
    sink.yield(.added(device))
    #expect(await eventually { connector.currentDevice == device })
    sink.yield(.removed(device))
    #expect(await eventually { connector.currentDevice == nil })
    await #expect(throws: DiscoveringConnector.NoReceiver.self) {
      _ = try await connector.connect()
    }
    connector.stopWatching()
  }

  @Test func aDeviceAttachedWhileConnectedIsAnnouncedWhenTheConnectionCloses() async throws {
    let first = try PseudoTerminal()
    let second = try PseudoTerminal()
    let sysA = try Self.sysDirectory()
    let sysB = try Self.sysDirectory()
    defer {
      rmdir(sysA)
      rmdir(sysB)
    }
    let (connector, sink) = Self.connector()
    let appeared = Appearances()
    connector.startWatching { appeared.record() }
    let a = Self.device(first, sysPath: sysA)
    sink.yield(.added(a))
    sink.yield(.enumerationComplete)
    #expect(await eventually { connector.currentDevice == a })
    let before = appeared.value  // 1 (attached while nobody was opening)
    let connection = try await connector.connect(wakingWith: .nmea)
    // Unplugged and another receiver plugged in before the receiver has noticed the loss: it
    // ignores the news then (it is still connected), so it is told again on the close.
    sink.yield(.removed(a))
    sink.yield(.added(Self.device(second, sysPath: sysB)))
    #expect(await eventually { appeared.value == before + 1 })
    connection.close()
    #expect(appeared.value == before + 2)
    #expect(connector.currentDevice?.path == second.devicePath)
    connector.stopWatching()
  }

  @Test func aSilentBridgeIsRejectedAndTheNextCandidateAnnouncedAfterTheFailedOpen() async throws {
    let bridge = try PseudoTerminal()
    let receiver = try PseudoTerminal()
    let sysBridge = try Self.sysDirectory()
    let sysReceiver = try Self.sysDirectory()
    defer {
      rmdir(sysBridge)
      rmdir(sysReceiver)
    }
    // Listened to long enough that the receiver's arrival is handled while it is.
    let (connector, sink) = Self.connector(
      baud: .automatic(candidates: [.b9600], timePerRate: .seconds(3)))
    let appeared = Appearances()
    connector.startWatching { appeared.record() }
    let silent = Self.device(
      bridge, sysPath: sysBridge, kind: .possible, chipset: nil, driver: "pl2303")
    sink.yield(.added(silent))
    sink.yield(.enumerationComplete)
    // Attached while nobody was opening: that was announced.
    #expect(await eventually { connector.currentDevice == silent })
    #expect(appeared.value == 1)
    let opening = Task { try await connector.connect(wakingWith: .ublox) }
    #expect(await eventually { connector.isOpening })
    // A known receiver arrives while the bridge is being listened to: the tracker stays with
    // the bridge until it is rejected.
    sink.yield(.added(Self.device(receiver, sysPath: sysReceiver)))
    #expect(await eventually { connector.eventsHandled == 3 })
    #expect(connector.isOpening)
    let failure = await #expect(throws: DiscoveringConnector.NotAReceiver.self) {
      _ = try await opening.value
    }
    #expect(failure?.device.path == bridge.devicePath)
    // Told once more, after the failed open, so that the receiver tries the next one at once.
    #expect(appeared.value == 2)
    #expect(connector.currentDevice?.path == receiver.devicePath)
    // Listened to, never written to.
    #expect(try bridge.read(upTo: 64, timeout: .milliseconds(100)).isEmpty)
    connector.stopWatching()
  }

  /// A shutdown ends a baud search at once (Ctrl-C during it): listening to a possible
  /// receiver, or searching a known one's rate on a UART.
  @Test(arguments: [ReceiverKind.possible, .known])
  func aShutdownEndsTheSearch(kind: ReceiverKind) async throws {
    let pty = try PseudoTerminal()  // says nothing
    let sys = try Self.sysDirectory()
    defer { rmdir(sys) }
    let (connector, sink) = Self.connector(
      baud: .automatic(candidates: [.b9600, .b4800], timePerRate: .seconds(10)))
    connector.startWatching {}
    let device = Self.device(
      pty, sysPath: sys, kind: kind, chipset: kind == .known ? .mediatek : nil,
      driver: "pl2303")
    sink.yield(.added(device))
    sink.yield(.enumerationComplete)
    #expect(await eventually { connector.currentDevice == device })
    let opening = Task { try await connector.connect(wakingWith: .nmea) }
    #expect(await eventually { connector.isOpening })
    try await Task.sleep(for: .milliseconds(300))  // listening
    let interrupted = ContinuousClock.now
    connector.interruptConnect()
    await #expect(throws: (any Error).self) { _ = try await opening.value }
    let took = ContinuousClock.now - interrupted
    // Not interrupted, the search would take 20 s. Under ThreadSanitizer (make test-tsan sets
    // TSAN_OPTIONS) instrumented code on two shared cores was seen to take 1.08 s.
    let bound: Duration = getenv("TSAN_OPTIONS") == nil ? .seconds(1) : .seconds(5)
    #expect(took < bound, "\(took)")
    connector.stopWatching()
  }

  @Test func aBridgeThatSpeaksNMEAIsUsedAndThenMayBeWrittenTo() async throws {
    let bridge = try PseudoTerminal()
    let sys = try Self.sysDirectory()
    defer { rmdir(sys) }
    let (connector, sink) = Self.connector(
      baud: .automatic(candidates: [.b4800, .b9600], timePerRate: .seconds(5)))
    connector.startWatching {}
    sink.yield(
      .added(
        Self.device(bridge, sysPath: sys, kind: .possible, chipset: nil, driver: "pl2303")))
    sink.yield(.enumerationComplete)
    let opening = Task { try await connector.connect(wakingWith: .nmea) }
    // Fed until the connection is open, not for a fixed few seconds (on loaded cores the
    // search may start listening after a short feed has ended), and from a thread of its
    // own: the cooperative pool may be busy with other tests for longer than a listen lasts.
    let fed = Locked(false)
    Thread.detachNewThread {
      for second in 0..<600 where !fed.withLock({ $0 }) {
        try? bridge.write(Array(cycle(second: second % 60).utf8), timeout: .milliseconds(200))
        sleepThread(for: .milliseconds(100))
      }
    }
    let connection = try await opening.value
    fed.withLock { $0 = true }
    // Heard: the port may now be written to (the receiver's commands decide what).
    try connection.write(Array("$PUBX,40,GSV,0,0,0,0,0,0*59\r\n".utf8))
    let written = try bridge.read(upTo: 64, timeout: .seconds(10))
    #expect(String(decoding: written, as: UTF8.self).hasPrefix("$PUBX,40"))
    connection.close()
    connector.stopWatching()
  }

  @Test func identityIsTheSerialNumberElseTheIDsAndUSBPort() async throws {
    let pty = try PseudoTerminal()
    let port = "/sys/devices/pci0000:00/0000:00:14.0/usb1/1-4/1-4:1.0"
    for (serial, expected) in [(nil, "1546:01a7 " + port), ("A1", "serial A1")] {
      let (connector, sink) = Self.connector()
      connector.startWatching {}
      #expect(connector.receiverIdentity == nil)
      sink.yield(
        .added(Self.device(pty, sysPath: port + "/ttyUSB0/tty/ttyUSB0", serial: serial)))
      sink.yield(.enumerationComplete)
      #expect(await eventually { connector.currentDevice != nil })
      #expect(connector.receiverIdentity == expected)
      connector.stopWatching()
    }
    // The node's name, which a replug may change, is not part of it.
    #expect(DiscoveringConnector.portPath(of: port + "/ttyUSB0/tty/ttyUSB0") == port)
    #expect(DiscoveringConnector.portPath(of: port + "/tty/ttyACM3") == port)
    #expect(DiscoveringConnector.portPath(of: "/sys/devices/virtual/x") == "/sys/devices/virtual/x")
  }
}
