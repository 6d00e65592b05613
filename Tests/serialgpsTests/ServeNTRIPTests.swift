import Foundation
import Glibc
import NMEA
import NTRIP
import Replay
import Simulator
import Testing

@testable import serialgps

/// `serialgps serve --ntrip` with RTKLIB's str2str as the caster and a simulated MediaTek as
/// the receiver: the caster hears from serve only while someone watches, and the receiver gets
/// whole valid RTCM 3 frames.
@Suite("serialgps serve --ntrip: corrections while watched", .serialized)
struct ServeNTRIPTests {
  static let str2str = "/usr/bin/str2str"
  static let isCI = ProcessInfo.processInfo.environment["CI"] == "true"

  /// A free loopback port (bound and released).
  func freePort() throws -> UInt16 {
    let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(descriptor) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
        bind(descriptor, pointer, length) == 0 && getsockname(descriptor, pointer, &length) == 0
      }
    }
    try #require(bound)
    return UInt16(bigEndian: address.sin_port)
  }

  /// The caster's established connections to NTRIP clients, as the kernel lists them.
  func established(_ port: UInt16) -> Int {
    let ss = Process()
    ss.executableURL = URL(fileURLWithPath: "/usr/bin/ss")
    ss.arguments = ["-Htn", "state", "established", "( sport = :\(port) )"]
    let pipe = Pipe()
    ss.standardOutput = pipe
    guard (try? ss.run()) != nil else { return -1 }
    let data = pipe.fileHandleForReading.readDataToEndOfFile()
    while ss.isRunning { Thread.sleep(forTimeInterval: 0.01) }
    return String(decoding: data, as: UTF8.self).split(separator: "\n").count
  }

  /// Whether something accepts connections on 127.0.0.1:`port`.
  func listens(_ port: UInt16) -> Bool {
    guard let descriptor = try? loopbackConnection(port: port) else { return false }
    close(descriptor)
    return true
  }

  @Test(
    "the caster is connected only while a watcher is; the receiver gets whole valid frames",
    .enabled(
      if: FileManager.default.isExecutableFile(atPath: str2str) || isCI,
      "str2str (rtklib) is not installed"))
  func gatedByWatcher() async throws {
    let input = try freePort()
    let output = try freePort()
    let caster = try Tool(
      Self.str2str, ["-in", "tcpsvr://:\(input)", "-out", "ntripc://user:pass@:\(output)/MOUNT"])
    #expect(await eventually { listens(output) }, "str2str's caster port")
    // The base: valid frames into str2str's input, one every 10 ms, until the test ends.
    let feed = try loopbackConnection(port: input)
    let frames = (0..<5).map {
      RTCM3.frame(message: Array(repeating: UInt8($0), count: 100 + $0))
    }
    let feeding = FeedSwitch()
    let feeder = Thread {
      var index = 0
      while feeding.on {
        let frame = frames[index % frames.count]
        index += 1
        _ = frame.withUnsafeBytes { send(feed, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        Thread.sleep(forTimeInterval: 0.01)
      }
      close(feed)
    }
    feeder.start()
    defer { feeding.stop() }

    let simulator = try sleepingMediaTek()
    defer { simulator.stop() }
    let serve = try CLIProcess(
      [
        "serve", simulator.devicePath, "--chipset", "mtk", "--baud", "9600", "--linger", "0",
        "--listen", "127.0.0.1:0", "--raw-listen", "127.0.0.1:0",
        "--ntrip", "ntrip://user@127.0.0.1:\(output)/MOUNT", "--ntrip-gga", "0",
      ], environment: ["SERIALGPS_NTRIP_CREDENTIALS": "user:pass"])
    let marker = "with the raw stream on 127.0.0.1:"
    #expect(await eventually { serve.standardError.contains(marker) }, "\(serve.standardError)")
    let text = serve.standardError
    let range = try #require(text.range(of: marker))
    let rawPort = try #require(UInt16(text[range.upperBound...].prefix { $0.isNumber }))

    // Nobody watches: the receiver sleeps, the caster hears nothing.
    try await Task.sleep(for: .seconds(1))
    #expect(simulator.powerState == .standby)
    #expect(established(output) == 0)

    // A watcher (the raw port is a subscription): powered, connected, corrections written.
    let watcher = try loopbackConnection(port: rawPort)
    #expect(await eventually { established(output) == 1 }, "\(serve.standardError)")
    func correctionBytes() -> [UInt8] {
      simulator.received.filter { $0.command == nil && $0.outcome != .wokeReceiver }
        .flatMap(\.bytes)
    }
    #expect(await eventually { correctionBytes().count >= 2000 }, "\(serve.standardError)")
    close(watcher)
    #expect(await simulator.waitForPowerState(.standby, timeout: .seconds(30)))
    #expect(await eventually { established(output) == 0 }, "\(serve.standardError)")

    serve.signal(SIGTERM)
    #expect(await serve.exitStatus() == 0, "\(serve.standardError)")
    await caster.stop()
    // What the receiver got, in order, is whole frames of the base's, and nothing else.
    var framer = NMEAFramer()
    var received: [[UInt8]] = []
    framer.feed(correctionBytes()) { frame in
      if case .rtcm3 = frame { received.append(frame.bytes) }
    }
    #expect(received.count >= 15)
    #expect(received.allSatisfy { frames.contains($0) })
    #expect(framer.statistics.badBinaryFrames == 0)
    let log = serve.standardError
    #expect(log.contains("NTRIP: receiving corrections from ntrip://user:***@127.0.0.1:"))
    #expect(log.contains("NTRIP: disconnected: the receiver sleeps"))
    #expect(log.contains("NTRIP: 1 connections (0 failed)"))
    #expect(!log.contains("pass@") && !log.contains("user:pass"))
  }
}

/// Whether the feeder still feeds, set from the test and read on the feeder's thread.
final class FeedSwitch: @unchecked Sendable {
  private let lock = NSLock()
  private var running = true
  var on: Bool { lock.withLock { running } }
  func stop() { lock.withLock { running = false } }
}
