import Chipsets
import Foundation
import Glibc
import NMEA
import POSIX
import Replay
import SerialPort
import Simulator
import Testing

@testable import SerialGPS

/// The gated receiver on a node without termios, as a kernel GNSS device (`/dev/gnss0`) is.
/// A FIFO stands in for the gnss node (`tcgetattr` answers ENOTTY on both) and a relay thread
/// copies the receiver simulator's output from its pty into it. A FIFO carries one direction
/// only, and a port opened read-write on it would read back its own writes, so the receiver
/// here is plain NMEA (no commands); writing to such a node is tested in
/// SerialPortTests/GNSSNodeTests.
@Suite(.serialized) struct GNSSDeviceTests {
  static let fixtures: String = {
    var url = URL(fileURLWithPath: #filePath)
    for _ in 0..<3 { url.deleteLastPathComponent() }
    return url.appendingPathComponent("fixtures").path
  }()

  /// The simulator's bytes into a FIFO, on a thread of its own, until `stop()`.
  final class Relay: @unchecked Sendable {
    let directory: String
    let path: String
    private let end: Int32
    private let stopping = Locked(false)
    private var thread: OwnThread?

    init(from simulator: ReceiverSimulator) throws {
      var template = Array("/tmp/serialgps-gnss-relay-XXXXXX".utf8CString)
      directory = try #require(mkdtemp(&template).map { String(cString: $0) })
      // A name of its own: the driver writes its lock file, LCK..NAME, to /run/lock.
      path = directory + "/gnss\(getpid())"
      try #require(mkfifo(path, 0o600) == 0)
      // Read-write so that the open does not wait for a reader; this end only writes.
      end = open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC)
      try #require(end >= 0)
      let source = try SerialPort.open(
        path: simulator.devicePath, baudRate: 9600, lockDirectory: nil)
      let end = end
      let stopping = stopping
      thread = OwnThread.start(name: "gnss-relay") {
        defer { source.close() }
        var buffer = [UInt8](repeating: 0, count: 4096)
        while !stopping.withLock({ $0 }) {
          let result = try? buffer.withUnsafeMutableBytes {
            try source.read(into: $0, timeout: .milliseconds(100))
          }
          guard case .received(let count) = result else { continue }
          // A full FIFO (nobody reading) drops the bytes, as a receiver's unread output is lost.
          _ = buffer.withUnsafeBytes { write(end, $0.baseAddress, count) }
        }
      }
    }

    func stop() {
      stopping.withLock { $0 = true }
      thread?.joinBlocking()
      close(end)
      unlink(path)
      rmdir(directory)
    }
  }

  @Test func fixesArriveThroughANodeWithoutTermiosAndTheLastSubscriberClosesIt() async throws {
    let simulator = try ReceiverSimulator(
      recording: Recording.loadCached(path: Self.fixtures + "/midnight-rollover.nmea"),
      configuration: .init(profile: .generic, pace: .recorded(speed: 10)))
    defer { simulator.stop() }
    let relay = try Relay(from: simulator)
    defer { relay.stop() }

    var options = GPSReceiver.Options()
    options.linger = .zero
    options.chipset = .family(.nmea)
    options.reconnectDelay = .milliseconds(100)
    options.maximumReconnectDelay = .milliseconds(400)
    // Automatic baud: a tty would be searched; this node has no rate and is read at once.
    let receiver = GPSReceiver(
      connector: SerialConnector(path: relay.path, baud: .automatic()), options: options)

    let log = EventLog(receiver.subscribe())
    #expect(await eventually(timeout: .seconds(20)) { log.fixes.count >= 3 })
    #expect(receiver.statistics.powerOns == 1)
    #expect(
      !log.statuses.contains { if case .disconnected = $0 { true } else { false } },
      "\(log.statuses)")

    // The last subscriber gone (linger zero), the driver closes the node: for a kernel GNSS
    // device that is the power-off. Free again, it opens for another owner.
    log.stop()
    #expect(await eventually(timeout: .seconds(20)) { receiver.statistics.powerOffs == 1 })
    #expect(
      await eventually(timeout: .seconds(20)) {
        guard let port = try? SerialPort.open(path: relay.path, baudRate: 9600) else {
          return false
        }
        port.close()
        return true
      })

    let again = EventLog(receiver.subscribe())
    #expect(await eventually(timeout: .seconds(20)) { again.fixes.contains { !$0.isReplay } })
    again.stop()
    await receiver.shutdown()
  }
}
