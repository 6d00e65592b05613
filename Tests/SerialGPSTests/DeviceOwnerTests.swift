import Chipsets
import Discovery
import Foundation
import Glibc
import NMEA
import SerialPort
import Testing

@testable import SerialGPS

/// Another process holding a device: python3 with an exclusive `flock` on it (as a second
/// SerialGPS, or picocom, holds one), until `release()` closes its standard input.
final class FlockHolder: @unchecked Sendable {
  let process = Process()
  private let input = Pipe()

  init(_ path: String) throws {
    process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
    process.arguments = [
      "-c",
      "import fcntl, os, sys; fd = os.open(sys.argv[1], os.O_RDWR | os.O_NOCTTY | os.O_NONBLOCK);"
        + " fcntl.flock(fd, fcntl.LOCK_EX); print('locked', flush=True); sys.stdin.read()",
      path,
    ]
    let output = Pipe()
    process.standardInput = input
    process.standardOutput = output
    try process.run()
    let line = output.fileHandleForReading.readData(ofLength: 7)
    try #require(String(decoding: line, as: UTF8.self) == "locked\n", "the holder did not lock")
  }

  var pid: Int32 { process.processIdentifier }

  func release() {
    try? input.fileHandleForWriting.close()
    process.waitUntilExit()
  }

  deinit {
    if process.isRunning {
      kill(process.processIdentifier, SIGKILL)
      process.waitUntilExit()
    }
  }
}

/// One owner per device, as the driver sees it: the hotplug follower waits for a device
/// another process owns and takes it once free; a receiver some process owns is not "left
/// awake" whatever an old marker says.
@Suite struct DeviceOwnerTests {
  static func connector(pollInterval: Duration = .milliseconds(50)) -> (
    DiscoveringConnector, AsyncStream<HotplugEvent>.Continuation
  ) {
    let (events, sink) = AsyncStream.makeStream(of: HotplugEvent.self)
    let connector = DiscoveringConnector(
      selector: .first, baud: .fixed(.b9600), ownerPollInterval: pollInterval,
      events: { events })
    return (connector, sink)
  }

  @Test func theFollowerWaitsForAnOwnedDeviceWithoutOpeningItAndTakesItWhenFree() async throws {
    let pty = try PseudoTerminal()
    let sys = try DiscoveringConnectorTests.sysDirectory()
    defer { rmdir(sys) }
    let holder = try FlockHolder(pty.devicePath)
    let (connector, sink) = Self.connector()
    let appeared = DiscoveringConnectorTests.Appearances()
    connector.startWatching { appeared.record() }
    sink.yield(.added(DiscoveringConnectorTests.device(pty, sysPath: sys)))
    sink.yield(.enumerationComplete)

    let refusal = await #expect(throws: DiscoveringConnector.DeviceInUse.self) {
      _ = try await connector.connect(wakingWith: .nmea)
    }
    #expect(refusal?.owner.processID == holder.pid)
    let message = refusal.map(String.init(describing:)) ?? ""
    #expect(message.contains("is in use by process \(holder.pid) (python3 -c"), "\(message)")
    #expect(message.hasSuffix("Waiting for it to be free; it is taken as soon as it is."))
    // The attachment itself may have been announced, if udev's news came before the open.
    let announced = appeared.value
    // While it is held the receiver is told nothing new, and a retry fails at once with the
    // same news, without opening the device.
    try await Task.sleep(for: .milliseconds(200))
    #expect(appeared.value == announced)
    #expect(connector.deviceOwner?.processID == holder.pid)
    let again = await #expect(throws: DiscoveringConnector.DeviceInUse.self) {
      _ = try await connector.connect(wakingWith: .nmea)
    }
    #expect(again.map(String.init(describing:)) == message)

    holder.release()
    #expect(await eventually { appeared.value == announced + 1 }, "the freed device is announced")
    let connection = try await connector.connect(wakingWith: .nmea)
    #expect(SerialPort.owner(of: pty.devicePath)?.processID == getpid())
    connection.close()
    connector.stopWatching()
  }

  /// The receiver on top: subscribers are told who owns the device, and the receiver takes it
  /// once it is free, at once, although its backoff is ten minutes.
  @Test func aFollowedReceiverStreamsOnceTheOtherOwnerLetsGo() async throws {
    let pty = try PseudoTerminal()
    let sys = try DiscoveringConnectorTests.sysDirectory()
    defer { rmdir(sys) }
    let holder = try FlockHolder(pty.devicePath)
    let (events, sink) = AsyncStream.makeStream(of: HotplugEvent.self)
    let connector = DiscoveringConnector(selector: .first, baud: .fixed(.b9600), events: { events })
    var options = GPSReceiver.Options()
    options.chipset = .family(.nmea)
    options.reconnectDelay = .seconds(600)
    options.maximumReconnectDelay = .seconds(600)
    let receiver = GPSReceiver(connector: connector, options: options)
    sink.yield(
      .added(DiscoveringConnectorTests.device(pty, sysPath: sys, chipset: nil)))
    sink.yield(.enumerationComplete)
    let log = EventLog(receiver.subscribe())
    #expect(
      await eventually {
        log.statuses.contains {
          if case .disconnected(let reason) = $0 {
            return reason.kind == .busy
              && reason.message.contains("in use by process \(holder.pid)")
          }
          return false
        }
      }, "\(log.statuses)")
    #expect(receiver.statistics.powerOns == 0)

    holder.release()
    #expect(await eventually { receiver.statistics.powerOns == 1 }, "\(log.statuses)")
    try pty.write(Array(cycle(second: 1).utf8) + Array(cycle(second: 2).utf8))
    #expect(await eventually { !log.fixes.isEmpty }, "\(log.statuses)")
    log.stop()
    await receiver.shutdown()
  }

  /// A marker names a process that died, but another process owns the device now: the
  /// receiver is that owner's to put to sleep, so nothing is opened or sent, and the marker
  /// stays for when the device is free.
  @Test func aDeviceSomeoneOwnsIsNotLeftAwake() async throws {
    let pty = try PseudoTerminal()
    let connector = SerialConnector(path: pty.devicePath, baud: .fixed(.b9600))
    let identity = try #require(connector.markerIdentity)
    let directory = NSTemporaryDirectory() + "serialgps-markers-\(UUID().uuidString)"
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let markers = AwakeMarkers(directory: directory)
    let dead = Process()
    dead.executableURL = URL(fileURLWithPath: "/bin/true")
    try dead.run()
    dead.waitUntilExit()
    try "\(dead.processIdentifier)\n".write(
      toFile: markers.path(for: identity), atomically: true, encoding: .utf8)
    #expect(markers.wasLeftAwake(identity), "without an owner it would be put to standby")

    let holder = try FlockHolder(pty.devicePath)
    var options = GPSReceiver.Options()
    options.chipset = .family(.mediatek)
    options.awakeMarkers = markers
    let receiver = GPSReceiver(connector: connector, options: options)
    try await Task.sleep(for: .milliseconds(300))
    #expect(try pty.read(timeout: .zero).isEmpty, "nothing was written to the device")
    #expect(markers.owner(of: identity) == dead.processIdentifier, "the marker stays")
    await receiver.shutdown()
    holder.release()
  }
}
