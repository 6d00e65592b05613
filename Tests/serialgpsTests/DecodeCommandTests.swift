import Foundation
import NMEA
import Testing

@testable import serialgps

/// A sentence with its checksum and CR LF.
func sentence(_ body: String) -> String {
  var sum: UInt8 = 0
  for byte in body.utf8 { sum ^= byte }
  let hex = String(sum, radix: 16, uppercase: true)
  return "$" + body + "*" + (hex.count == 1 ? "0" + hex : hex) + "\r\n"
}

/// Two seconds of a u-blox receiver, with a header comment.
let recording =
  "# Name: test receiver\n"
  + sentence("GNRMC,120000.00,A,4722.61420,N,00832.50210,E,10.000,90.00,300326,,,A,V")
  + sentence("GNGGA,120000.00,4722.61420,N,00832.50210,E,1,08,0.90,408.3,M,47.4,M,,")
  + sentence("GNGSA,A,3,01,03,,,,,,,,,,,1.50,0.90,1.20,1")
  + sentence("GPGSV,1,1,02,01,40,120,38,03,20,300,,1")
  + sentence("GNRMC,120001.00,A,4722.61500,N,00832.50300,E,10.000,90.00,300326,,,A,V")
  + sentence("GNGGA,120001.00,4722.61500,N,00832.50300,E,1,08,0.90,408.5,M,47.4,M,,")
  + sentence("GNGSA,A,3,01,03,,,,,,,,,,,1.50,0.90,1.20,1")
  + sentence("GPGSV,1,1,02,01,40,120,38,03,20,300,,1")

/// Decodes `input` in chunks of `chunk` bytes with a fresh session; the output as text.
func decode(_ input: [UInt8], json: Bool, device: String? = nil, chunk: Int = 4096) -> (
  output: String, session: DecodeSession
) {
  var session = DecodeSession(json: json, device: device)
  var output: [UInt8] = []
  input.withUnsafeBytes { raw in
    var offset = 0
    while offset < raw.count {
      let end = min(raw.count, offset + chunk)
      session.feed(UnsafeRawBufferPointer(rebasing: raw[offset..<end])) { output += $0 }
      offset = end
    }
  }
  session.finish { output += $0 }
  return (String(decoding: output, as: UTF8.self), session)
}

@Suite("serialgps decode")
struct DecodeCommandTests {
  @Test("one readable line per fix, the one watch and demo print")
  func humanLines() {
    let (output, session) = decode(Array(recording.utf8), json: false)
    let lines = output.split(separator: "\n").map(String.init)
    #expect(
      lines == [
        "2026-03-30T12:00:00.000Z  3D  47.3769033  8.5417017  alt 408.3 m  speed 5.14 m/s  sats 8"
          + "  acc -",
        "2026-03-30T12:00:01.000Z  3D  47.3769167  8.5417167  alt 408.5 m  speed 5.14 m/s  sats 8"
          + "  acc -",
      ])
    #expect(session.filter.commentLines == 1)
  }

  @Test("--json: a TPV per epoch and a SKY per epoch with satellites, valid JSON")
  func jsonLines() throws {
    let (output, _) = decode(Array(recording.utf8), json: true)
    let lines = output.split(separator: "\n").map(String.init)
    #expect(lines.count == 4)
    let objects = try lines.map {
      try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
    }
    #expect(objects.map { $0["class"] as? String } == ["TPV", "SKY", "TPV", "SKY"])
    #expect(objects[0]["time"] as? String == "2026-03-30T12:00:00.000Z")
    #expect(objects[0]["speed"] as? Double == 5.144)  // 10 knots in metres per second
    #expect(objects[1]["nSat"] as? Int == 2)
    #expect(objects[1]["uSat"] as? Int == 2)
    #expect(lines[0].contains("\"lat\":47.376903333,\"lon\":8.541701667"))
  }

  @Test("--device names the device in every report; without it none is named")
  func device() {
    let lines = decode(Array(recording.utf8), json: true, device: "/dev/ttyACM0").output
      .split(separator: "\n")
    #expect(lines.count == 4)
    for line in lines {
      #expect(
        line.hasPrefix("{\"class\":\"TPV\",\"device\":\"/dev/ttyACM0\",")
          || line.hasPrefix("{\"class\":\"SKY\",\"device\":\"/dev/ttyACM0\","), "\(line)")
    }
    #expect(!decode(Array(recording.utf8), json: true).output.contains("device"))
    #expect(
      DecodeCommand.parse(["--json", "--device", "/dev/ttyACM0"])
        == .options(DecodeCommand.Options(json: true, device: "/dev/ttyACM0")))
    #expect(
      DecodeCommand.parse(["--json", "--device"])
        == .invalid("--device needs a name, such as /dev/ttyACM0"))
  }

  @Test("output does not depend on how the input arrives")
  func chunkIndependent() {
    let input = Array(recording.utf8)
    let whole = decode(input, json: true).output
    for chunk in [1, 2, 3, 7, 64] {
      #expect(decode(input, json: true, chunk: chunk).output == whole, "chunks of \(chunk)")
    }
  }

  @Test("binary garbage: no crash, no output, everything counted")
  func garbage() {
    var generator = SystemRandomNumberGenerator()
    let noise = (0..<200_000).map { _ in UInt8.random(in: 0...255, using: &generator) }
    let (output, session) = decode(noise, json: true, chunk: 999)
    #expect(output.isEmpty || output.hasSuffix("\n"))
    let statistics = session.decoder.statistics.framer
    #expect(statistics.garbageBytes > 0)
    #expect(session.bytesRead == noise.count)
    #expect(session.statisticsReport(name: "noise").contains("garbage bytes"))
  }

  @Test("a UBX header whose length lies near the end swallows nothing, and is counted")
  func unfinishedFrameAtTheEnd() {
    // NAV-PVT's header announcing 1 000 bytes, then two more epochs (under 1 000 bytes): the
    // frame never completes, and what it took in is read again at the end of the input.
    let first =
      sentence("GNRMC,120000.00,A,4722.61420,N,00832.50210,E,10.000,90.00,300326,,,A,V")
      + sentence("GNGGA,120000.00,4722.61420,N,00832.50210,E,1,08,0.90,408.3,M,47.4,M,,")
    let rest =
      sentence("GNRMC,120001.00,A,4722.61500,N,00832.50300,E,10.000,90.00,300326,,,A,V")
      + sentence("GNGGA,120001.00,4722.61500,N,00832.50300,E,1,08,0.90,408.5,M,47.4,M,,")
      + sentence("GNRMC,120002.00,A,4722.61580,N,00832.50390,E,10.000,90.00,300326,,,A,V")
      + sentence("GNGGA,120002.00,4722.61580,N,00832.50390,E,1,08,0.90,408.7,M,47.4,M,,")
    let input = Array(first.utf8) + [0xB5, 0x62, 0x01, 0x07, 0xE8, 0x03] + Array(rest.utf8)
    for chunk in [1, 7, 4096] {
      let (output, session) = decode(input, json: false, chunk: chunk)
      let times = output.split(separator: "\n").map { $0.prefix(24) }
      #expect(
        times == [
          "2026-03-30T12:00:00.000Z", "2026-03-30T12:00:01.000Z", "2026-03-30T12:00:02.000Z",
        ], "chunks of \(chunk)")
      let framer = session.decoder.statistics.framer
      #expect(framer.unfinishedBinaryFrames == 1 && framer.sentences == 6)
      #expect(
        session.statisticsReport(name: "lying").contains("unfinished at the end 1"))
    }
  }

  @Test("--stats counts impossible values by reason, apart from the sentences refused")
  func impossibleValuesCounted() {
    // Valid checksums, impossible contents: 31 February, a negative speed, GSV message 99 of 9.
    let input = Array(
      ("$GPRMC,123519,A,4807.038,N,01131.000,E,022.4,084.4,310299,003.1,W*65\r\n"
        + "$GPRMC,123520,A,4807.038,N,01131.000,E,-2.572,084.4,230394,003.1,W*4B\r\n"
        + "$GPGSV,9,99,08,01,40,083,46*74\r\n").utf8)
    let (_, session) = decode(input, json: true, chunk: 7)
    let report = session.statisticsReport(name: "impossible")
    #expect(report.contains("parse errors           1\n"), "\(report)")
    #expect(
      report.contains("impossible values      3 (date 1, speed 1, message number 1)"),
      "\(report)")
  }

  @Test("arguments: file, -, flags, and clear complaints")
  func arguments() throws {
    typealias Options = DecodeCommand.Options
    #expect(DecodeCommand.parse([]) == .options(Options()))
    #expect(DecodeCommand.parse(["-", "--json"]) == .options(Options(path: "-", json: true)))
    #expect(
      DecodeCommand.parse(["--stats", "a.nmea"]) == .options(Options(path: "a.nmea", stats: true)))
    #expect(DecodeCommand.parse(["--help"]) == .help)
    #expect(DecodeCommand.parse(["--jsn"]) == .invalid("unknown option '--jsn'"))
    guard case .invalid(let two) = DecodeCommand.parse(["a", "b"]) else {
      Issue.record("two files accepted")
      return
    }
    #expect(two.contains("'a'") && two.contains("'b'"))
  }
}

/// Runs the built `serialgps` with `arguments` and `input` on standard input.
func runSerialgps(_ arguments: [String], input: Data = Data()) async throws -> (
  status: Int32, stdout: String, stderr: String
) {
  try await onOwnThread { try runSerialgpsWaiting(arguments, input: input) }
}

private func runSerialgpsWaiting(_ arguments: [String], input: Data) throws -> (
  status: Int32, stdout: String, stderr: String
) {
  // The test bundle sits next to the products in the build directory.
  let bundle = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
  var binary = bundle.appendingPathComponent("serialgps")
  if !FileManager.default.isExecutableFile(atPath: binary.path) {
    binary = bundle.deletingLastPathComponent().appendingPathComponent("serialgps")
  }
  try #require(
    FileManager.default.isExecutableFile(atPath: binary.path),
    "serialgps not built next to the tests (\(binary.path)); run swift build --build-tests")
  let process = Process()
  process.executableURL = binary
  process.arguments = arguments
  var environment = ProcessInfo.processInfo.environment
  environment["SWIFT_BACKTRACE"] = "enable=no"
  process.environment = environment
  let stdin = Pipe()
  let stdout = Pipe()
  let stderr = Pipe()
  process.standardInput = stdin
  process.standardOutput = stdout
  process.standardError = stderr
  try process.run()
  // Write and read concurrently so that a large input or output cannot deadlock on pipes.
  let writer = Thread {
    stdin.fileHandleForWriting.write(input)
    try? stdin.fileHandleForWriting.close()
  }
  writer.start()
  let output = stdout.fileHandleForReading.readDataToEndOfFile()
  let errors = stderr.fileHandleForReading.readDataToEndOfFile()
  process.waitUntilExit()
  return (
    process.terminationStatus, String(decoding: output, as: UTF8.self),
    String(decoding: errors, as: UTF8.self)
  )
}

@Suite("the serialgps executable")
struct DecodeExecutableTests {
  @Test("a missing file: one line on stderr naming it, exit code 2")
  func missingFile() async throws {
    let path = "/nonexistent/recording-\(UInt32.random(in: 0...UInt32.max)).nmea"
    let result = try await runSerialgps(["decode", path])
    #expect(result.status == 2)
    #expect(result.stdout.isEmpty)
    let lines = result.stderr.split(separator: "\n")
    #expect(lines.count == 1)
    #expect(result.stderr.contains(path) && result.stderr.contains("No such file"))
  }

  @Test("a directory: cannot be read, exit code 2")
  func directory() async throws {
    let result = try await runSerialgps(["decode", NSTemporaryDirectory()])
    #expect(result.status == 2)
    #expect(result.stderr.split(separator: "\n").count == 1)
  }

  @Test("standard input, --json and --stats")
  func standardInput() async throws {
    let result = try await runSerialgps(
      ["decode", "--json", "--stats", "-"], input: Data(recording.utf8))
    #expect(result.status == 0)
    #expect(result.stdout.split(separator: "\n").count == 4)
    #expect(result.stderr.contains("sentences accepted     8"))
    #expect(result.stderr.contains("comment lines          1"))
  }

  @Test("binary garbage on standard input: exit 0, a note that nothing was found")
  func garbage() async throws {
    var generator = SystemRandomNumberGenerator()
    let noise = Data((0..<300_000).map { _ in UInt8.random(in: 0...255, using: &generator) })
    let result = try await runSerialgps(["decode"], input: noise)
    #expect(result.status == 0)
    #expect(result.stderr.contains("no NMEA sentences found") || !result.stdout.isEmpty)
  }

  @Test("--help and unknown options")
  func help() async throws {
    let help = try await runSerialgps(["decode", "--help"])
    #expect(help.status == 0)
    #expect(help.stdout.contains("usage: serialgps decode"))
    let wrong = try await runSerialgps(["decode", "--nope"])
    #expect(wrong.status == 2)
    #expect(wrong.stderr.contains("--nope"))
  }
}
