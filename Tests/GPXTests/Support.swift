import Foundation
import GPX
import NMEA
import Replay
import Testing

// GPX documents checked against the GPX 1.1 schema (Tests/GPXTests/gpx.xsd, TopoGrafix's
// published gpx.xsd) with xmllint from Debian's libxml2-utils, and against what the decoder
// found in the fixtures.

/// The repository's `fixtures/` directory.
let fixturesDirectory: String = {
  var url = URL(fileURLWithPath: #filePath)
  for _ in 0..<3 { url.deleteLastPathComponent() }
  return url.appendingPathComponent("fixtures").path
}()

let gpxSchema: String = {
  var url = URL(fileURLWithPath: #filePath)
  url.deleteLastPathComponent()
  return url.appendingPathComponent("gpx.xsd").path
}()

/// The xmllint executable, or `nil` (the test then skips, except under CI=true).
func xmllint() -> String? {
  let path = "/usr/bin/xmllint"
  if FileManager.default.isExecutableFile(atPath: path) { return path }
  if ProcessInfo.processInfo.environment["CI"] == "true" {
    Issue.record("xmllint is missing; install libxml2-utils (make test-deps)")
  }
  return nil
}

/// Validates `document` against the GPX 1.1 schema: xmllint's verdict and messages.
func validate(_ document: String, xmllint: String) throws -> (valid: Bool, messages: String) {
  let file = FileManager.default.temporaryDirectory
    .appendingPathComponent("serialgps-gpx-\(UInt64.random(in: 0...UInt64.max)).gpx")
  try document.write(to: file, atomically: true, encoding: .utf8)
  defer { try? FileManager.default.removeItem(at: file) }
  let process = Process()
  process.executableURL = URL(fileURLWithPath: xmllint)
  process.arguments = ["--noout", "--schema", gpxSchema, file.path]
  let errors = Pipe()
  process.standardError = errors
  process.standardOutput = FileHandle.nullDevice
  try process.run()
  let messages = String(
    decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
  process.waitUntilExit()
  return (process.terminationStatus == 0, messages)
}

/// Every epoch's fix in `bytes`, in order.
func fixes(in bytes: [UInt8]) -> [Fix] {
  var decoder = NMEADecoder()
  var fixes: [Fix] = []
  decoder.decode(bytes) { if case .epoch(let epoch) = $0 { fixes.append(epoch.fix) } }
  decoder.finish { if case .epoch(let epoch) = $0 { fixes.append(epoch.fix) } }
  return fixes
}

/// A fixture's fixes, and the metadata its header gives.
func fixture(_ name: String) throws -> (fixes: [Fix], metadata: GPXMetadata) {
  let recording = try Recording.load(path: "\(fixturesDirectory)/\(name).nmea")
  let metadata = GPXMetadata(
    name: recording.name, description: recording.headerValue("Description"),
    source: recording.headerValue("Chipset"), creator: "serialgps tests")
  return (fixes(in: recording.body), metadata)
}

/// A sentence with its checksum and CR LF.
func sentence(_ body: String) -> String {
  var sum: UInt8 = 0
  for byte in body.utf8 { sum ^= byte }
  let hex = String(sum, radix: 16, uppercase: true)
  return "$" + body + "*" + (hex.count == 1 ? "0" + hex : hex) + "\r\n"
}

/// How many times `needle` occurs in `text`.
func occurrences(of needle: String, in text: String) -> Int {
  text.components(separatedBy: needle).count - 1
}
