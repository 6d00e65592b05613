import Chipsets
import Foundation
import Glibc
import Replay
import Simulator
import Testing

@testable import serialgps

/// `serialgps serve --raw-listen` with the tools it is for as its clients: socat, and
/// RTKLIB's str2str (Debian's rtklib). Each connection is a subscription: the simulated
/// MediaTek receiver is woken when the first connects and put to standby when the last
/// leaves; with `--raw-write` the first to send writes to it, and the others are told.
@Suite("serialgps serve --raw-listen: the receiver's bytes to socat and str2str", .serialized)
struct RawPortTests {
  static let isCI = ProcessInfo.processInfo.environment["CI"] == "true"
  static func installed(_ path: String) -> Bool {
    FileManager.default.isExecutableFile(atPath: path)
  }

  /// The raw port serve says it listens on.
  func rawPort(_ serve: CLIProcess) async -> UInt16? {
    let marker = "with the raw stream on 127.0.0.1:"
    guard await eventually({ serve.standardError.contains(marker) }) else { return nil }
    let text = serve.standardError
    guard let range = text.range(of: marker) else { return nil }
    return UInt16(text[range.upperBound...].prefix { $0.isNumber })
  }

  func serve(_ simulator: ReceiverSimulator, _ extra: [String] = []) throws -> CLIProcess {
    try CLIProcess(
      [
        "serve", simulator.devicePath, "--chipset", "mtk", "--baud", "9600", "--linger", "0",
        "--listen", "127.0.0.1:0", "--raw-listen", "127.0.0.1:0",
      ] + extra)
  }

  /// Checksum-valid NMEA sentences in `text`.
  func validSentences(_ text: String) -> [Substring] {
    text.split(whereSeparator: \.isNewline).filter { line in
      guard line.hasPrefix("$"), let star = line.lastIndex(of: "*") else { return false }
      let body = line[line.index(after: line.startIndex)..<star].utf8
      let sum = body.reduce(UInt8(0)) { $0 ^ $1 }
      let given = line[line.index(after: star)...].prefix(2)
      return UInt8(given, radix: 16) == sum
    }
  }

  @Test(
    "socat reads the stream while connected; one socat writes, another is told it is taken",
    .enabled(if: installed("/usr/bin/socat") || isCI, "socat is not installed"))
  func socatReadsAndOneWrites() async throws {
    let simulator = try sleepingMediaTek()
    defer { simulator.stop() }
    let serve = try serve(simulator, ["--raw-write"])
    let port = try #require(await rawPort(serve), "\(serve.standardError)")
    #expect(simulator.powerState == .standby, "nobody connected: nothing woken")

    let reader = try Tool("/usr/bin/socat", ["-u", "TCP:127.0.0.1:\(port)", "STDOUT"])
    #expect(
      await eventually { validSentences(reader.output).count >= 10 },
      "\(reader.output)\n\(serve.standardError)")
    #expect(simulator.powerState == .running)
    // The receiver's bytes as they are: sentences of the recording, with their CR LF.
    #expect(reader.output.contains("$GPRMC,"))
    #expect(reader.output.contains("\r\n"))

    // The first to send writes; its bytes reach the receiver whole, as one command.
    let writer = try Tool("/usr/bin/socat", ["-", "TCP:127.0.0.1:\(port)"])
    let query = "$PMTK605*31\r\n"
    writer.send(query)
    #expect(
      await eventually { simulator.received.contains { $0.bytes == Array(query.utf8) } },
      "\(simulator.received)")
    // Another is told, and its bytes never reach the receiver.
    let other = try Tool("/usr/bin/socat", ["-", "TCP:127.0.0.1:\(port)"])
    let refused = "$PMTK000*32\r\n"
    other.send(refused)
    #expect(
      await eventually { other.output.contains("the receiver is taken") }, "\(other.output)")
    // Writers get the stream too.
    #expect(await eventually { validSentences(writer.output).count >= 3 })
    #expect(!simulator.received.contains { $0.bytes == Array(refused.utf8) })

    // Once the writer leaves, the next to send may write.
    await writer.stop()
    // Bytes that come before serve saw the writer leave are dropped (it was told already).
    try await Task.sleep(for: .milliseconds(500))
    other.send(refused)
    #expect(
      await eventually { simulator.received.contains { $0.bytes == Array(refused.utf8) } },
      "\(simulator.received)")

    // Everyone gone: standby.
    await other.stop()
    await reader.stop()
    #expect(await simulator.waitForPowerState(.standby, timeout: .seconds(30)))
    serve.signal(SIGTERM)
    #expect(await serve.exitStatus() == 0, "\(serve.standardError)")
  }

  @Test(
    "without --raw-write a client's bytes are dropped and it is told the port is read-only",
    .enabled(if: installed("/usr/bin/socat") || isCI, "socat is not installed"))
  func readOnlyByDefault() async throws {
    let simulator = try sleepingMediaTek()
    defer { simulator.stop() }
    let serve = try serve(simulator)
    let port = try #require(await rawPort(serve), "\(serve.standardError)")
    let client = try Tool("/usr/bin/socat", ["-", "TCP:127.0.0.1:\(port)"])
    #expect(await eventually { validSentences(client.output).count >= 3 }, "\(client.output)")
    let command = "$PMTK000*32\r\n"
    client.send(command)
    #expect(await eventually { client.output.contains("read-only") }, "\(client.output)")
    #expect(!simulator.received.contains { $0.bytes == Array(command.utf8) })
    await client.stop()
    #expect(await simulator.waitForPowerState(.standby, timeout: .seconds(30)))
    serve.signal(SIGTERM)
    #expect(await serve.exitStatus() == 0, "\(serve.standardError)")
  }

  @Test(
    "RTKLIB's str2str records the stream from tcpcli://",
    .enabled(if: installed("/usr/bin/str2str") || isCI, "str2str (rtklib) is not installed"))
  func str2strRecordsTheStream() async throws {
    let simulator = try sleepingMediaTek()
    defer { simulator.stop() }
    let serve = try serve(simulator)
    let port = try #require(await rawPort(serve), "\(serve.standardError)")
    let directory = try TemporaryDirectory()
    let file = directory.file("stream.nmea")
    let str2str = try Tool(
      "/usr/bin/str2str", ["-in", "tcpcli://127.0.0.1:\(port)", "-out", "file://\(file)"])
    #expect(
      await eventually {
        validSentences((try? String(contentsOfFile: file, encoding: .utf8)) ?? "").count >= 10
      }, "\(str2str.output)\n\(serve.standardError)")
    #expect(simulator.powerState == .running)
    await str2str.stop()
    #expect(await simulator.waitForPowerState(.standby, timeout: .seconds(30)))
    let recorded = try String(contentsOfFile: file, encoding: .utf8)
    #expect(recorded.contains("$GPGGA,"))
    serve.signal(SIGTERM)
    #expect(await serve.exitStatus() == 0, "\(serve.standardError)")
  }

  @Test(
    "a connection that never reads loses bytes, counted; the others keep theirs",
    .enabled(if: installed("/usr/bin/socat") || isCI, "socat is not installed"))
  func aClientThatNeverReadsStallsNobody() async throws {
    let recording = try Recording.load(path: "\(fixturesDirectory)/mtk-cold-start.nmea")
    let simulator = try ReceiverSimulator(
      recording: recording,
      configuration: .init(
        profile: .mediatek, pace: .asFastAsPossible, loops: true, initialPowerState: .standby))
    defer { simulator.stop() }
    let serve = try serve(simulator)
    let port = try #require(await rawPort(serve), "\(serve.standardError)")
    // Connected, and never reads: a small receive buffer, so that serve's queue for it fills.
    let stalled = try loopbackConnection(port: port, receiveBuffer: 4096)
    defer { close(stalled) }
    let reader = try Tool("/usr/bin/socat", ["-u", "TCP:127.0.0.1:\(port)", "STDOUT"])
    #expect(
      await eventually { serve.standardError.contains("is not reading:") },
      "\(serve.standardError)")
    // The reader still gets the stream after the other's queue was full.
    let before = reader.byteCount
    #expect(
      await eventually { reader.byteCount > before + 100_000 },
      "\(reader.byteCount) bytes\n\(serve.standardError)")
    #expect(validSentences(reader.output).count > 1000)
    await reader.stop()
    serve.signal(SIGTERM)
    #expect(await serve.exitStatus() == 0, "\(serve.standardError)")
    #expect(simulator.powerState == .standby)
  }
}
