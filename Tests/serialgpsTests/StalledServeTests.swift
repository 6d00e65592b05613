import Foundation
import Glibc
import Replay
import Testing

/// `serialgps serve` stopped (SIGSTOP) while its receiver streams, then continued: the epochs
/// queued in the kernel meanwhile are not sent to gpsd clients as a burst of live fixes; the
/// newest is (docs/server.md, "After a stall").
@Suite("serialgps serve after a stall", .serialized)
struct StalledServeTests {
  /// A gpsd client's lines with when each arrived, read on a thread of its own.
  final class Client: @unchecked Sendable {
    private let lock = NSLock()
    private var received: [(at: ContinuousClock.Instant, line: String)] = []
    let descriptor: Int32

    init(_ descriptor: Int32) {
      self.descriptor = descriptor
      let thread = Thread { [self] in
        var pending: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
          let count = buffer.withUnsafeMutableBytes {
            recv(descriptor, $0.baseAddress, $0.count, 0)
          }
          if count <= 0 { return }
          let now = ContinuousClock.now
          pending += buffer[..<count]
          while let end = pending.firstIndex(of: UInt8(ascii: "\n")) {
            let line = String(decoding: pending[..<end], as: UTF8.self)
            pending.removeSubrange(...end)
            lock.withLock { received.append((now, line)) }
          }
        }
      }
      thread.start()
    }

    var reports: [(at: ContinuousClock.Instant, line: String)] {
      lock.withLock { received.filter { $0.line.contains("\"class\":\"TPV\"") } }
    }
  }

  @Test func theNewestEpochGoesOutNotTheBacklog() async throws {
    let recording = try Recording.load(path: "\(fixturesDirectory)/ublox-m8-drive.nmea")
    let simulator = try ReceiverSimulator(
      recording: recording, configuration: .init(profile: .ublox(.m8), pace: .recorded(speed: 4)))
    defer { simulator.stop() }
    let serve = try CLIProcess([
      "serve", simulator.devicePath, "--chipset", "nmea", "--baud", "9600", "--listen",
      "127.0.0.1:0", "--linger", "0",
    ])
    defer { serve.signal(SIGKILL) }
    let signals = ServeSignalTests()
    let port = try #require(await signals.listeningPort(serve), "\(serve.standardError)")
    let client = Client(try signals.watch(port: port))
    defer { close(client.descriptor) }
    #expect(await eventually { client.reports.count >= 6 }, "\(serve.standardError)")

    // Four epochs a second queue in the pty while serve is stopped for three seconds.
    serve.signal(SIGSTOP)
    try await Task.sleep(for: .seconds(3))
    let resumed = ContinuousClock.now
    serve.signal(SIGCONT)
    try await Task.sleep(for: .seconds(2))

    let after = client.reports.filter { $0.at > resumed }
    let first = try #require(after.first, "\(serve.standardError)")
    let burst = after.filter { $0.at < first.at + .milliseconds(200) }
    // Without the check the twelve queued epochs came in one burst, each as live; now the
    // newest does, and the next come at the receiver's own pace.
    #expect(burst.count <= 2, "\(burst.map(\.line))")
    #expect(after.count >= 3, "streaming goes on")
  }
}
