import Foundation
import Glibc
import Replay
import Simulator
import Testing

/// A receiver configured for UBX output only, served by `serialgps serve`: its gpsd clients
/// get TPVs, and a watcher that asks for NMEA gets NMEA made from the binary fixes
/// (pseudo-NMEA, as gpsd makes it; docs/server.md), with valid checksums and the positions
/// gpsd decodes from the same capture.
@Suite("serialgps serve: pseudo-NMEA for a UBX-only receiver", .serialized)
struct PseudoNMEAServeTests {
  /// A capture of gpsd's that the repository carries in `corpus/` (corpus/README.md), or a
  /// failure that names it and says how to get it back.
  static func corpusFile(_ path: String) throws -> URL {
    let url = URL(fileURLWithPath: #filePath)
      .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
      .appendingPathComponent("corpus/\(path)")
    try #require(
      FileManager.default.fileExists(atPath: url.path),
      Comment(
        rawValue: "corpus/\(path) is missing: the repository carries it; restore it with "
          + "`git checkout -- corpus` or scripts/refresh-corpus.sh (corpus/README.md)"))
    return url
  }

  static var isCI: Bool { ProcessInfo.processInfo.environment["CI"] == "true" }

  /// A client that sent `?WATCH=watch;`, its lines read on a thread of their own.
  static func client(port: UInt16, watch: String) throws -> SocketLines {
    let descriptor = try loopbackConnection(port: port)
    let request = Array("?WATCH=\(watch);\n".utf8)
    _ = request.withUnsafeBytes { send(descriptor, $0.baseAddress, $0.count, 0) }
    return SocketLines(descriptor)
  }

  /// Whether `sentence` (`$…*HH`) carries the XOR of its characters between `$` and `*`.
  static func checksumIsValid(_ sentence: String) -> Bool {
    let bytes = Array(sentence.utf8)
    guard bytes.first == UInt8(ascii: "$"), bytes.count > 4,
      bytes[bytes.count - 3] == UInt8(ascii: "*"),
      let stated = UInt8(String(decoding: bytes.suffix(2), as: UTF8.self), radix: 16)
    else { return false }
    return bytes[1..<(bytes.count - 3)].reduce(0, ^) == stated
  }

  /// The latitude and longitude of a `$GPGGA`, in degrees.
  static func position(ofGGA sentence: String) -> (latitude: Double, longitude: Double)? {
    let fields = sentence.split(separator: ",", omittingEmptySubsequences: false)
    guard fields.count > 5, let lat = Double(fields[2]), let lon = Double(fields[4]) else {
      return nil
    }
    func degrees(_ value: Double) -> Double {
      (value / 100).rounded(.towardZero) + value.truncatingRemainder(dividingBy: 100) / 60
    }
    return (
      degrees(lat) * (fields[3] == "S" ? -1 : 1), degrees(lon) * (fields[5] == "W" ? -1 : 1)
    )
  }

  /// The positions of gpsd's TPVs in the capture's expected output.
  static func gpsdPositions(_ check: String) -> [(latitude: Double, longitude: Double)] {
    func number(_ key: String, in line: Substring) -> Double? {
      guard let range = line.range(of: "\"\(key)\":") else { return nil }
      return Double(line[range.upperBound...].prefix { $0 == "-" || $0 == "." || $0.isNumber })
    }
    return check.split(whereSeparator: \.isNewline).compactMap { line in
      guard line.contains("\"class\":\"TPV\""), let lat = number("lat", in: line),
        let lon = number("lon", in: line)
      else { return nil }
      return (lat, lon)
    }
  }

  @Test func anNMEAWatcherGetsNMEAFromBinaryFixes() async throws {
    let log = try Self.corpusFile("gpsd-ubx/ublox-neo-m8t.log")
    let bytes = try [UInt8](Data(contentsOf: log))
    // The capture holds no NMEA at all: every fix is made from UBX messages.
    #expect(!String(decoding: bytes, as: UTF8.self).contains("$GP"))
    let expected = Self.gpsdPositions(
      try String(contentsOf: Self.corpusFile("gpsd-ubx/ublox-neo-m8t.log.chk"), encoding: .utf8))
    try #require(expected.count > 10)

    let simulator = try ReceiverSimulator(
      recording: Recording(bytes: bytes, name: "ublox-neo-m8t.log"),
      configuration: .init(profile: .ublox(.m8), pace: .fixedInterval(.seconds(1)), loops: true))
    defer { simulator.stop() }
    let scratch = try TemporaryDirectory()
    let socketPath = scratch.file("nmea.sock")
    let serve = try CLIProcess([
      "serve", simulator.devicePath, "--chipset", "nmea", "--baud", "9600", "--listen",
      "127.0.0.1:0", "--linger", "0", "--nmea-socket", socketPath,
    ])
    defer { if serve.process.isRunning { serve.signal(SIGKILL) } }
    let port = try #require(
      await ServeSignalTests().listeningPort(serve), "\(serve.standardError)")
    let nmea = try Self.client(port: port, watch: #"{"enable":true,"nmea":true}"#)
    defer { close(nmea.descriptor) }
    let json = try Self.client(port: port, watch: #"{"enable":true,"json":true}"#)
    defer { close(json.descriptor) }

    let sentences = { nmea.lines.filter { $0.hasPrefix("$") } }
    #expect(
      await eventually {
        sentences().contains { $0.hasPrefix("$GPRMC") }
          && sentences().contains { $0.hasPrefix("$GPGGA") }
      },
      "NMEA watcher got \(nmea.lines.suffix(5)); \(serve.standardError)")
    let ggas = sentences().filter { $0.hasPrefix("$GPGGA") }
    #expect(!ggas.isEmpty)
    #expect(sentences().allSatisfy(Self.checksumIsValid), "\(sentences().prefix(8))")
    // NMEA watchers get no JSON reports, JSON watchers no NMEA.
    #expect(!nmea.lines.contains { $0.contains("\"class\":\"TPV\"") })
    #expect(await eventually { json.lines.contains { $0.contains("\"class\":\"TPV\"") } })
    #expect(!json.lines.contains { $0.hasPrefix("$") })
    // Each GGA's position is one gpsd decodes from the same capture, to the encoder's
    // precision (minutes to 6 decimals: under 2e-8 degrees).
    for gga in ggas {
      let position = try #require(Self.position(ofGGA: gga), "\(gga)")
      #expect(
        expected.contains {
          abs($0.latitude - position.latitude) < 1e-7
            && abs($0.longitude - position.longitude) < 1e-7
        }, "\(gga) is none of gpsd's positions")
    }
    // The NMEA socket gets the same sentences, and none of the UBX bytes.
    if FileManager.default.isExecutableFile(atPath: "/usr/bin/socat") || Self.isCI {
      let reader = try Tool("/usr/bin/socat", ["-u", "UNIX-CONNECT:\(socketPath)", "STDOUT"])
      #expect(
        await eventually { reader.output.contains("$GPGGA,") && reader.output.contains("$GPRMC,") },
        "\(reader.output.prefix(300))\n\(serve.standardError)")
      await reader.stop()
      let lines = reader.output.split(whereSeparator: { $0.isNewline }).filter { !$0.isEmpty }
      #expect(lines.allSatisfy { Self.checksumIsValid(String($0)) }, "\(lines.prefix(4))")
    }
    serve.signal(SIGTERM)
    #expect(await serve.exitStatus(timeout: .seconds(30)) == 0, "\(serve.standardError)")
  }
}
