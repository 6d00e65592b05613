import Foundation
import NMEA
import Testing

@testable import GPSDProtocol

/// The fixtures' expected `decode --json` lines.
func goldenLines() throws -> [String] {
  let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("fixtures")
  let names = try FileManager.default.contentsOfDirectory(atPath: directory.path)
    .filter { $0.hasSuffix(".golden.jsonl") }.sorted()
  return try names.flatMap { name in
    try String(contentsOf: directory.appendingPathComponent(name), encoding: .utf8)
      .split(separator: "\n").map(String.init)
  }
}

/// Writes a report read back, as the writer writes it.
func rewritten(_ report: GPSDReport) -> String {
  var writer = JSONWriter()
  switch report {
  case .tpv(let fix, let device):
    writer.tpv(fix, device: device)
  case .sky(let view, let time, let used, let device):
    writer.sky(view, time: time, satellitesUsed: used, device: device)
  }
  return writer.text
}

@Suite("gpsd reports read back (GPSDReport)")
struct ReportReadingTests {
  @Test("every TPV and SKY line of the fixtures reads back into values that write the same bytes")
  func fixturesRoundTrip() throws {
    let lines = try goldenLines()
    #expect(lines.count > 1000)
    var mismatches: [String] = []
    for line in lines {
      guard let report = GPSDReport(json: Array(line.utf8)) else {
        mismatches.append("unread: \(line)")
        continue
      }
      let again = rewritten(report)
      if again != line { mismatches.append("\(line)\n  became \(again)") }
    }
    #expect(mismatches.isEmpty, "\(mismatches.count) lines: \(mismatches.prefix(3))")
  }

  @Test("the reports written for 48 real receivers' captures read back to the same bytes")
  func corpusRoundTrip() throws {
    var checked = 0
    var mismatches: [String] = []
    for log in try GPSDCorpus.logs() {
      for line in try encodedReports(of: log) {
        checked += 1
        guard let report = GPSDReport(json: Array(line.utf8)) else {
          mismatches.append("\(log.lastPathComponent) unread: \(line)")
          continue
        }
        let again = rewritten(report)
        // A TPV's altHAE alone ($PUBX,00 without an MSL altitude) has no public home in Fix.
        if again != line && !(line.contains("altHAE") && !line.contains("altMSL")) {
          mismatches.append("\(log.lastPathComponent): \(line)\n  became \(again)")
        }
      }
    }
    #expect(checked > 1000)
    #expect(mismatches.isEmpty, "\(mismatches.count): \(mismatches.prefix(3))")
  }

  @Test("a fix read back has the exact position, time and values written")
  func valuesAreExact() throws {
    let fix = ReportTests.threeDFix()
    var writer = JSONWriter()
    writer.tpv(fix, device: "/dev/ttyACM0")
    guard case .tpv(let read, let device)? = GPSDReport(json: writer.bytes) else {
      Issue.record("not read: \(writer.text)")
      return
    }
    #expect(device == "/dev/ttyACM0")
    #expect(read.timestamp == fix.timestamp)
    #expect(read.mode == .threeD)
    #expect(read.quality == .differential)
    // 44°04.14063' N is 44.0690105 degrees exactly: nine decimals carry it. 121°18.85478' W
    // is -121.314246333… : TPV carries nine decimals, the nearest billionth.
    #expect(read.latitude == fix.latitude)
    #expect(read.longitude == -121.314246333)
    #expect(abs((read.longitude ?? 0) - (fix.longitude ?? 0)) <= 5e-10)
    #expect(read.altitudeMSL == 1147.2)
    #expect(abs((read.altitudeHAE ?? 0) - 1125.9) < 1e-9)
    #expect(read.differentialStation == 133)
    #expect(read.course == 37.5)
  }

  @Test(
    "anything else is refused, not guessed",
    arguments: [
      "", "{}", "[1]", "{\"class\":\"TPV\"}", "{\"class\":\"TPV\",\"mode\":4}",
      "{\"class\":\"TPV\",\"mode\":\"3\"}", "{\"class\":\"TPV\",\"mode\":2,\"time\":\"yesterday\"}",
      "{\"class\":\"TPV\",\"mode\":2,\"time\":\"2026-13-01T00:00:00.000Z\"}",
      "{\"class\":\"TPV\",\"mode\":3,\"lat\":91.0,\"lon\":0.0}",
      "{\"class\":\"TPV\",\"mode\":3,\"lat\":1.0,\"lon\":-181.0}",
      "{\"class\":\"TPV\",\"mode\":3} trailing", "{\"class\":\"VERSION\",\"release\":\"3.22\"}",
      "{\"class\":\"SKY\",\"satellites\":[{\"gnssid\":0}]}",
      "{\"class\":\"SKY\",\"satellites\":[{\"PRN\":1,\"gnssid\":9}]}",
      "{\"class\":\"SKY\",\"satellites\":3}", "{\"class\":\"TPV\",\"mode\":3,\"status\":true}",
      "\u{00}\u{ff}garbage",
    ])
  func refusesMalformed(_ text: String) {
    #expect(GPSDReport(json: Array(text.utf8)) == nil)
  }
}
