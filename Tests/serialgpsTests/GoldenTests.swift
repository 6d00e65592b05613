import Foundation
import Testing

@testable import serialgps

// Each fixture's `serialgps decode --json` output is committed as fixtures/NAME.golden.jsonl
// (written by `make goldens`, checked against the truth files by scripts/check-goldens.py).
// A decoder change that moves any field shows up here as a readable difference.

/// The repository's `fixtures/` directory.
let fixturesDirectory: String = {
  var url = URL(fileURLWithPath: #filePath)
  for _ in 0..<3 { url.deleteLastPathComponent() }
  return url.appendingPathComponent("fixtures").path
}()

/// The fixtures that have golden files.
let goldenFixtures = [
  "midnight-rollover", "mtk-cold-start", "noisy-ublox", "rtk-high-precision", "sirf-4800",
  "ublox-m8-drive",
]

/// Where two texts first differ, told for people: the line, context before it, both versions
/// of the differing lines (cut around the first differing column when long), and how many
/// lines differ in all. `nil` when they are equal.
enum GoldenDiff {
  static func describe(
    expected: String, actual: String, expectedName: String, actualName: String,
    context: Int = 2, shown: Int = 3, width: Int = 160
  ) -> String? {
    guard expected != actual else { return nil }
    let old = lines(expected)
    let new = lines(actual)
    let first =
      (0..<min(old.count, new.count)).first { old[$0] != new[$0] } ?? min(old.count, new.count)
    var differing = 0
    for index in 0..<max(old.count, new.count) where line(old, index) != line(new, index) {
      differing += 1
    }
    var text =
      "\(actualName) differs from \(expectedName) at line \(first + 1) "
      + "(\(differing) differing line\(differing == 1 ? "" : "s"); "
      + "\(old.count) lines expected, \(new.count) now):\n"
    let number = { (index: Int) -> String in
      let digits = String(index + 1)
      return String(repeating: " ", count: max(0, 6 - digits.count)) + digits
    }
    for index in max(0, first - context)..<first {
      text += "  \(number(index))  \(cut(old[index], around: 0, width: width))\n"
    }
    for index in first..<min(first + shown, max(old.count, new.count)) {
      let before = line(old, index)
      let after = line(new, index)
      if before == after {
        text += "  \(number(index))  \(cut(before ?? "", around: 0, width: width))\n"
        continue
      }
      let column = firstDifference(before ?? "", after ?? "")
      text +=
        "- \(number(index))  "
        + (before.map { cut($0, around: column, width: width) }
          ?? "(no line)") + "\n"
      text +=
        "+ \(number(index))  "
        + (after.map { cut($0, around: column, width: width) }
          ?? "(no line)") + "\n"
      if before != nil && after != nil {
        text += "          first difference at column \(column + 1)\n"
      }
    }
    return text
  }

  static func lines(_ text: String) -> [String] {
    var lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
    if lines.last == "" { lines.removeLast() }
    return lines
  }

  static func line(_ lines: [String], _ index: Int) -> String? {
    index < lines.count ? lines[index] : nil
  }

  static func firstDifference(_ a: String, _ b: String) -> Int {
    let a = Array(a.unicodeScalars)
    let b = Array(b.unicodeScalars)
    return (0..<min(a.count, b.count)).first { a[$0] != b[$0] } ?? min(a.count, b.count)
  }

  /// `line`, or the `width` characters of it around `column` with … where it was cut.
  static func cut(_ line: String, around column: Int, width: Int) -> String {
    let scalars = Array(line.unicodeScalars)
    guard scalars.count > width else { return line }
    let start = max(0, min(column - width / 3, scalars.count - width))
    let end = min(scalars.count, start + width)
    var text = start > 0 ? "…" : ""
    text.unicodeScalars.append(contentsOf: scalars[start..<end])
    return text + (end < scalars.count ? "…" : "")
  }
}

@Suite("golden files: serialgps decode --json of every fixture")
struct GoldenTests {
  @Test("each fixture decodes to exactly its golden file", arguments: goldenFixtures)
  func matchesGolden(name: String) throws {
    let input = try Data(contentsOf: URL(fileURLWithPath: "\(fixturesDirectory)/\(name).nmea"))
    let goldenPath = "\(fixturesDirectory)/\(name).golden.jsonl"
    let golden = try String(contentsOfFile: goldenPath, encoding: .utf8)
    let output = decode([UInt8](input), json: true).output
    if let difference = GoldenDiff.describe(
      expected: golden, actual: output, expectedName: "fixtures/\(name).golden.jsonl",
      actualName: "serialgps decode --json fixtures/\(name).nmea")
    {
      Issue.record(
        Comment(
          rawValue: difference
            + "If the change is intended, run `make goldens` (it also checks the new files "
            + "against the truth files), review `git diff fixtures/` and commit."))
    }
  }

  @Test("every fixture has a golden file and every golden file a fixture")
  func everyFixtureHasOne() throws {
    let files = try FileManager.default.contentsOfDirectory(atPath: fixturesDirectory)
    let recordings = Set(files.filter { $0.hasSuffix(".nmea") }.map { String($0.dropLast(5)) })
    let goldens = Set(
      files.filter { $0.hasSuffix(".golden.jsonl") }.map { String($0.dropLast(13)) })
    #expect(recordings == Set(goldenFixtures))
    #expect(goldens == Set(goldenFixtures))
  }

  @Test("a difference is shown with its line, context and both versions, cut around it")
  func diffIsReadable() throws {
    let long = String(repeating: "x", count: 300)
    let expected = "one\ntwo\nthree\n\(long)A\(long)\nfive\n"
    let actual = "one\ntwo\nthree\n\(long)B\(long)\nfive\nsix\n"
    let text = try #require(
      GoldenDiff.describe(
        expected: expected, actual: actual, expectedName: "golden", actualName: "now"))
    let lines = text.split(separator: "\n").map(String.init)
    #expect(
      lines[0] == "now differs from golden at line 4 (2 differing lines; 5 lines expected, 6 now):")
    #expect(lines[1] == "       2  two")
    #expect(lines[2] == "       3  three")
    #expect(
      lines[3].hasPrefix("-      4  …x") && lines[3].contains("xAx") && lines[3].hasSuffix("x…"))
    #expect(lines[4].hasPrefix("+      4  …x") && lines[4].contains("xBx"))
    #expect(lines[3].count < 200)
    #expect(lines[5].contains("first difference at column 301"))
    #expect(lines[6] == "       5  five")
    #expect(lines[7] == "-      6  (no line)")
    #expect(lines[8] == "+      6  six")
    #expect(
      GoldenDiff.describe(expected: "a\n", actual: "a\n", expectedName: "", actualName: "") == nil)
  }
}
