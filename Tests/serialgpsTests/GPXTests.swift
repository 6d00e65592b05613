import Foundation
import NMEA
import Testing

@testable import serialgps

// GPX output checked against the GPX 1.1 schema (Tests/serialgpsTests/gpx.xsd) with xmllint
// from Debian's libxml2-utils, and against what the decoder found.

let gpxSchema: String = {
  var url = URL(fileURLWithPath: #filePath)
  url.deleteLastPathComponent()
  return url.appendingPathComponent("gpx.xsd").path
}()

/// The xmllint executable, or `nil` (the test then skips, except under CI=true).
func xmllint() throws -> String? {
  let path = "/usr/bin/xmllint"
  if FileManager.default.isExecutableFile(atPath: path) { return path }
  if ProcessInfo.processInfo.environment["CI"] == "true" {
    Issue.record("xmllint is missing; install libxml2-utils (make test-deps)")
  }
  return nil
}

/// Validates `document` against the GPX 1.1 schema: xmllint's verdict and messages.
func validate(_ document: String, xmllint: String) throws -> (valid: Bool, messages: String) {
  let directory = try TemporaryDirectory()
  let file = directory.file("track.gpx")
  try document.write(toFile: file, atomically: true, encoding: .utf8)
  let process = Process()
  process.executableURL = URL(fileURLWithPath: xmllint)
  process.arguments = ["--noout", "--schema", gpxSchema, file]
  let errors = Pipe()
  process.standardError = errors
  process.standardOutput = FileHandle.nullDevice
  try process.run()
  let messages = String(
    decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
  process.waitUntilExit()
  return (process.terminationStatus == 0, messages)
}

func gpx(forFixture name: String) throws -> (document: String, track: GPXTrack, fixes: [Fix]) {
  let bytes = [UInt8](
    try Data(contentsOf: URL(fileURLWithPath: "\(fixturesDirectory)/\(name).nmea")))
  let header = GPXSession.headerFields(bytes)
  let fixes = GPXSession.fixes(in: bytes)
  let track = GPXTrack(fixes: fixes, gap: .seconds(10))
  let document = GPXWriter.document(
    track: track, name: header["Name"] ?? name, description: header["Description"],
    source: header["Chipset"])
  return (document, track, fixes)
}

/// How many times `needle` occurs in `text`.
func occurrences(of needle: String, in text: String) -> Int {
  text.components(separatedBy: needle).count - 1
}

@Suite("serialgps gpx")
struct GPXTests {
  @Test("every fixture's track is valid GPX 1.1", arguments: goldenFixtures)
  func validAgainstTheSchema(name: String) throws {
    guard let xmllint = try xmllint() else { return }
    let (document, _, _) = try gpx(forFixture: name)
    let verdict = try validate(document, xmllint: xmllint)
    #expect(verdict.valid, "\(verdict.messages)")
  }

  @Test("the schema check can fail: a wrong fix type and longitude 180 are refused")
  func schemaRefusesInvalid() throws {
    guard let xmllint = try xmllint() else { return }
    let (document, _, _) = try gpx(forFixture: "sirf-4800")
    let wrongFix = document.replacingOccurrences(of: "<fix>3d</fix>", with: "<fix>4d</fix>")
    #expect(try !validate(wrongFix, xmllint: xmllint).valid)
    let outOfOrder = document.replacingOccurrences(
      of: "<fix>3d</fix>\n        <sat>", with: "<sat>")
    #expect(
      try !validate(
        outOfOrder.replacingOccurrences(of: "</sat>", with: "</sat><fix>3d</fix>"), xmllint: xmllint
      ).valid)
    let antimeridian = "<trkpt lat=\"0.0\" lon=\"180.0\">"
    let withPoint = document.replacingOccurrences(
      of: "<trkseg>\n", with: "<trkseg>\n" + antimeridian + "</trkpt>\n")
    #expect(try !validate(withPoint, xmllint: xmllint).valid)
  }

  @Test("one track point per epoch with a fix, with the decoder's position, time and elements")
  func pointsMatchTheDecoder() throws {
    let (document, track, fixes) = try gpx(forFixture: "mtk-cold-start")
    let withFix = fixes.filter { $0.mode != .noFix }
    #expect(withFix.count == 67)  // 5 in 2D, 62 in 3D (the truth file's modes)
    #expect(occurrences(of: "<trkpt ", in: document) == withFix.count)
    #expect(occurrences(of: "<fix>2d</fix>", in: document) == 5)
    #expect(occurrences(of: "<fix>3d</fix>", in: document) == 62)
    // The 2D fixes have no altitude, so no <ele>.
    #expect(occurrences(of: "<ele>", in: document) == 62)
    #expect(track.segments.map(\.count) == [67])
    let first = try #require(withFix.first)
    #expect(
      document.contains(
        "<trkpt lat=\"-33.869025000\" lon=\"151.209403333\">\n"
          + "        <time>2026-02-03T22:10:38.000Z</time>\n"
          + "        <geoidheight>22.6</geoidheight>\n        <fix>2d</fix>\n"
          + "        <sat>3</sat>\n        <hdop>1.75</hdop>\n"))
    #expect(first.timestamp?.description == "2026-02-03T22:10:38.000Z")
  }

  @Test("RTK and DGPS fixes are dgps, with the age and station of the corrections")
  func differential() throws {
    let (document, _, fixes) = try gpx(forFixture: "rtk-high-precision")
    let differential = fixes.filter { ($0.quality?.rawValue ?? 0) >= 4 }.count
    #expect(differential == 290)  // quality 4 or 5 from 17:32:11.0 (epoch 10) on
    #expect(occurrences(of: "<fix>dgps</fix>", in: document) == differential)
    #expect(occurrences(of: "<dgpsid>217</dgpsid>", in: document) == differential)
    #expect(document.contains("<ageofdgpsdata>0.4</ageofdgpsdata>"))
    #expect(document.contains("<time>2025-09-15T17:32:10.100Z</time>"))
  }

  @Test("a new segment after epochs without a fix and after a gap in time; no-fix epochs left out")
  func segments() throws {
    func cycle(_ second: Int, fix: Bool) -> String {
      let time = "1200" + (second < 10 ? "0" : "") + "\(second).00"
      return fix
        ? sentence("GPGGA,\(time),4722.61420,N,00832.50210,E,1,08,0.90,408.3,M,47.4,M,,")
          + sentence("GPRMC,\(time),A,4722.61420,N,00832.50210,E,0.0,0.0,300326,,,A")
        : sentence("GPGGA,\(time),,,,,0,00,,,M,,M,,")
          + sentence("GPRMC,\(time),V,,,,,,,300326,,,N")
    }
    var text = ""
    for second in [0, 1, 2] { text += cycle(second, fix: true) }
    text += cycle(3, fix: false)
    for second in [4, 5] { text += cycle(second, fix: true) }
    for second in [30, 31] { text += cycle(second, fix: true) }  // 25 s later
    let fixes = GPXSession.fixes(in: Array(text.utf8))
    #expect(fixes.count == 8)
    let track = GPXTrack(fixes: fixes, gap: .seconds(10))
    #expect(track.segments.map(\.count) == [3, 2, 2])
    #expect(GPXTrack(fixes: fixes, gap: .seconds(30)).segments.map(\.count) == [3, 4])
    let document = GPXWriter.document(track: track, name: "gaps", description: nil, source: nil)
    #expect(occurrences(of: "<trkseg>", in: document) == 3)
    #expect(occurrences(of: "<trkpt ", in: document) == 7)
    if let xmllint = try xmllint() {
      #expect(try validate(document, xmllint: xmllint).valid)
    }
  }

  @Test("across midnight the track goes on: no gap between 23:59:59 and 00:00:00")
  func midnight() throws {
    let (_, track, _) = try gpx(forFixture: "midnight-rollover")
    #expect(track.segments.map(\.count) == [61])
  }

  @Test("names are escaped; a track without any fix is an empty, valid track")
  func escapingAndEmpty() throws {
    let document = GPXWriter.document(
      track: GPXTrack(fixes: [Fix()], gap: .seconds(10)), name: "a <b> & \"c\"",
      description: "x\u{01}y", source: nil)
    #expect(document.contains("<name>a &lt;b&gt; &amp; &quot;c&quot;</name>"))
    #expect(document.contains("<desc>x y</desc>"))
    #expect(!document.contains("<trkseg>"))
    #expect(!document.contains("<bounds"))
    if let xmllint = try xmllint() {
      let verdict = try validate(document, xmllint: xmllint)
      #expect(verdict.valid, "\(verdict.messages)")
    }
  }

  @Test("180° E is written as -180: GPX longitudes stop short of +180")
  func antimeridian() {
    let east = Coordinate(degrees: 180, scaledMinutes: 0, fractionDigits: 4, isNegative: false)
    #expect(GPXWriter.longitude(east) == "-180.000000000")
    #expect(GPXWriter.decimal(439.2, digits: 4) == "439.2")
    #expect(GPXWriter.decimal(-0.00001, digits: 2) == "0")
    #expect(GPXWriter.decimal(.nan, digits: 2) == nil)
  }

  @Test("the command writes the file, or names what is wrong")
  func command() async throws {
    let directory = try TemporaryDirectory()
    let output = directory.file("drive.gpx")
    let run = try CLIProcess(["gpx", "\(fixturesDirectory)/ublox-m8-drive.nmea", "-o", output])
    #expect(await run.exitStatus() == 0)
    #expect(run.standardError.contains("298 track points in 1 segment"))
    let written = try String(contentsOfFile: output, encoding: .utf8)
    #expect(occurrences(of: "<trkpt ", in: written) == 298)

    let missing = try CLIProcess(["gpx", directory.file("none.nmea")])
    #expect(await missing.exitStatus() == 2)
    #expect(missing.standardError.contains("cannot read '\(directory.file("none.nmea"))'"))
    #expect(
      GPXOptions.parse(["a", "b"])
        == .invalid("converts one recording at a time, not both 'a' and 'b'"))
    #expect(
      GPXOptions.parse(["a", "--gap", "0"])
        == .invalid("--gap needs a number of seconds above 0, such as 10"))
    // Too large for a Duration in milliseconds: refused, not a crash.
    #expect(
      GPXOptions.parse(["a", "--gap", "1e300"])
        == .invalid("--gap needs a number of seconds above 0, such as 10"))
  }
}
