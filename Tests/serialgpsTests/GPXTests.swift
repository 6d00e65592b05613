import Foundation
import GPX
import NMEA
import Replay
import Testing

@testable import serialgps

// `serialgps gpx` as the built executable: the file it writes is the GPX library's document
// of what `decode` finds (the document itself, against the GPX 1.1 schema, is tested in
// Tests/GPXTests), and its errors.

/// How many times `needle` occurs in `text`.
func occurrences(of needle: String, in text: String) -> Int {
  text.components(separatedBy: needle).count - 1
}

@Suite("serialgps gpx")
struct GPXCommandTests {
  @Test("standard output: the library's document of the decoded fixes, named by the header")
  func libraryDocument() async throws {
    let path = "\(fixturesDirectory)/mtk-cold-start.nmea"
    let run = try CLIProcess(["gpx", path, "--gap", "5"])
    #expect(await run.exitStatus() == 0)
    let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
    let recording = Recording(bytes: bytes)
    let expected = GPXDocument.text(
      of: GPXTrack(fixes: GPXSession.fixes(in: bytes), gap: .seconds(5)),
      metadata: GPXMetadata(
        name: "mtk-cold-start", description: recording.headerValue("Description"),
        source: "MediaTek MT3339 (PMTK), NMEA 3.01", creator: "serialgps \(Version.serialgps)"))
    #expect(run.standardOutput == expected)
    #expect(occurrences(of: "<trkpt ", in: expected) == 67)
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
        == .invalid("--gap needs a number of seconds from 0.001, such as 10"))
    // Too large for a Duration in milliseconds: refused, not a crash.
    #expect(
      GPXOptions.parse(["a", "--gap", "1e300"])
        == .invalid("--gap needs a number of seconds from 0.001, such as 10"))
  }
}
