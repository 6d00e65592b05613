import Chipsets
import Foundation
import Glibc
import Replay
import Simulator
import Testing

@testable import serialgps

/// `serialgps serve` as a process over a simulated MediaTek receiver on a pty, stopped by each
/// signal a process can be sent and handle: the receiver must be in standby, and the process
/// must have exited, not died.
@Suite("serialgps serve: every signal ends with the receiver in standby", .serialized)
struct ServeSignalTests {
  /// The port `serve` says it listens on.
  func listeningPort(_ serve: CLIProcess) async -> UInt16? {
    guard await eventually({ serve.standardError.contains("listening on 127.0.0.1:") }) else {
      return nil
    }
    let text = serve.standardError
    guard let range = text.range(of: "listening on 127.0.0.1:") else { return nil }
    return UInt16(text[range.upperBound...].prefix { $0.isNumber })
  }

  /// A client that asks to watch, kept open until the end of the test.
  func watch(port: UInt16) throws -> Int32 {
    let descriptor = try loopbackConnection(port: port)
    let request = Array("?WATCH={\"enable\":true,\"json\":true};\n".utf8)
    _ = request.withUnsafeBytes { send(descriptor, $0.baseAddress, $0.count, 0) }
    return descriptor
  }

  func isStandby(_ input: ReceivedInput) -> Bool {
    input.bytes == MediaTekCommandSet.standby.bytes
  }

  @Test(
    "SIGTERM, SIGINT, SIGHUP and SIGQUIT: standby reaches the receiver, exit 0",
    arguments: [SIGTERM, SIGINT, SIGHUP, SIGQUIT])
  func stopsWithStandby(_ signal: Int32) async throws {
    let simulator = try sleepingMediaTek()
    defer { simulator.stop() }
    let serve = try CLIProcess(
      [
        "serve", simulator.devicePath, "--chipset", "mtk", "--baud", "9600",
        "--listen", "127.0.0.1:0", "--linger", "0",
      ], signalDispositions: ["--default-signal=HUP,INT,QUIT,TERM"])
    let port = try #require(await listeningPort(serve), "stderr: \(serve.standardError)")
    let client = try watch(port: port)
    defer { close(client) }

    // Awake and streaming for the watcher before the signal.
    #expect(await simulator.waitForPowerState(.running, timeout: .seconds(30)))
    #expect(!simulator.received.contains(where: isStandby))
    serve.signal(signal)

    #expect(await serve.exitStatus(timeout: .seconds(30)) == 0, "stderr: \(serve.standardError)")
    #expect(serve.process.terminationReason == .exit, "ended by the signal, not by exit")
    let standby = simulator.received.first(where: isStandby)
    #expect(standby?.outcome == .acknowledged, "\(simulator.received.map(\.bytes.count))")
    // In standby, and by one $PMTK161,0: a second one (a byte on RX) would wake the chip the
    // first put to sleep. It happened when the server's shutdown cut the standby's wait for its
    // acknowledgement short, as it does a wake-up's, and the standby was sent again at once.
    #expect(
      simulator.powerState == .standby,
      "\(simulator.received.map { "\($0.at): " + CommandNames.describe($0, family: .mediatek) })")
    #expect(simulator.received.filter(isStandby).count == 1)
    #expect(serve.standardError.contains("putting the receivers to standby"))
    #expect(!serve.standardError.contains("Backtracing"), "no crash report")
  }

  /// A MediaTek receiver served as a u-blox one ignores the u-blox sleep and the GNSS stop and
  /// stays powered; the standby runs once the last watcher has gone, where no subscriber hears
  /// a failure: serve logs it all the same, once, and counts it in its summary.
  @Test func aStandbyThatFailsIsLoggedAndCounted() async throws {
    let simulator = try sleepingMediaTek()
    defer { simulator.stop() }
    let serve = try CLIProcess([
      "serve", simulator.devicePath, "--chipset", "ublox", "--baud", "9600",
      "--listen", "127.0.0.1:0", "--linger", "0",
    ])
    let port = try #require(await listeningPort(serve), "stderr: \(serve.standardError)")
    let client = try watch(port: port)
    #expect(await simulator.waitForPowerState(.running, timeout: .seconds(30)))
    close(client)
    #expect(
      await eventually(timeout: .seconds(60)) {
        serve.standardError.contains("was not put to sleep and may stay powered")
      }, "\(serve.standardError)")
    #expect(simulator.powerState == .running)
    serve.signal(SIGTERM)
    #expect(await serve.exitStatus(timeout: .seconds(30)) == 0, "\(serve.standardError)")
    #expect(
      serve.standardError.contains("1 power-off may have left a receiver powered"),
      "\(serve.standardError)")
    let said = serve.standardError.components(separatedBy: "may stay powered").count - 1
    #expect(said == 1, "\(serve.standardError)")
  }
}
