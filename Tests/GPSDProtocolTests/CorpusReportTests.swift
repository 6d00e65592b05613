import Foundation
import GPSDProtocol
import NMEA
import Testing

/// gpsd's NMEA captures, carried by the repository in `corpus/gpsd` (corpus/README.md).
enum GPSDCorpus {
  static let directory = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent()  // GPSDProtocolTests
    .deletingLastPathComponent()  // Tests
    .deletingLastPathComponent()  // the package
    .appendingPathComponent("corpus/gpsd")

  /// What a test says when a capture it needs is not there: which, and how to get it back.
  static func missingMessage(_ path: String) -> Comment {
    Comment(
      rawValue: "\(path) is missing: the repository carries it; restore it with "
        + "`git checkout -- corpus` or scripts/refresh-corpus.sh (corpus/README.md)")
  }

  /// The logs that have gpsd's output beside them, or a failure naming what is missing.
  static func logs() throws -> [URL] {
    try #require(
      FileManager.default.fileExists(atPath: directory.appendingPathComponent("bu353s4.log").path),
      missingMessage("corpus/gpsd/bu353s4.log"))
    let names = try FileManager.default.contentsOfDirectory(atPath: directory.path)
    return names.filter { $0.hasSuffix(".log") && names.contains($0 + ".chk") }.sorted()
      .map { directory.appendingPathComponent($0) }
  }
}

/// What this encoder writes for every epoch of a log.
func encodedReports(of log: URL) throws -> [String] {
  let bytes = try Data(contentsOf: log)
  var decoder = NMEADecoder()
  var writer = JSONWriter()
  var lines: [String] = []
  let body: (DecoderEvent) -> Void = { event in
    guard case .epoch(let epoch) = event else { return }
    writer.removeAll()
    writer.tpv(epoch.fix)
    lines.append(writer.text)
    if let view = epoch.satellites {
      writer.removeAll()
      writer.sky(view, time: epoch.fix.timestamp, satellitesUsed: epoch.fix.satellitesUsed)
      lines.append(writer.text)
    }
  }
  decoder.decode(bytes, body)
  decoder.finish(body)
  return lines
}

/// `"name":number` pairs of a report line, with the number as written.
func numericFields(_ line: String) -> [(name: String, text: String)] {
  let pattern = try! NSRegularExpression(pattern: "\"([A-Za-z]+)\":(-?[0-9]+(?:\\.[0-9]+)?)")
  let range = NSRange(line.startIndex..., in: line)
  return pattern.matches(in: line, range: range).map { match in
    (
      String(line[Range(match.range(at: 1), in: line)!]),
      String(line[Range(match.range(at: 2), in: line)!])
    )
  }
}

func decimals(_ number: String) -> Int {
  guard let dot = number.firstIndex(of: ".") else { return 0 }
  return number.distance(from: dot, to: number.endIndex) - 1
}

@Suite("reports compared with gpsd's on real receivers")
struct CorpusReportTests {
  /// Field names and the decimals gpsd writes them with, from every TPV and SKY of the corpus.
  struct Vocabulary {
    var names: [String: Set<String>] = [:]  // class or "satellite" -> names
    var decimals: [String: Set<Int>] = [:]  // class.name -> decimals seen
  }

  static func gpsdVocabulary() throws -> Vocabulary {
    var vocabulary = Vocabulary()
    for log in try GPSDCorpus.logs() {
      let text = try String(contentsOf: log.appendingPathExtension("chk"), encoding: .isoLatin1)
      for line in text.split(whereSeparator: \.isNewline) where line.hasPrefix("{\"class\":\"") {
        guard let object = parseJSON(String(line)) as? [String: Any],
          let kind = object["class"] as? String, kind == "TPV" || kind == "SKY"
        else { continue }
        vocabulary.names[kind, default: []].formUnion(object.keys)
        for satellite in object["satellites"] as? [[String: Any]] ?? [] {
          vocabulary.names["satellite", default: []].formUnion(satellite.keys)
        }
        for (name, number) in numericFields(String(line)) {
          vocabulary.decimals["\(kind).\(name)", default: []].insert(decimals(number))
        }
      }
    }
    return vocabulary
  }

  @Test("every report parses, uses only gpsd's field names, with gpsd's decimals")
  func namesAndDecimals() throws {
    let gpsd = try Self.gpsdVocabulary()
    #expect(gpsd.names["TPV"]?.contains("altHAE") == true, "the corpus was read")
    var reports = 0
    var problems: Set<String> = []
    for log in try GPSDCorpus.logs() {
      for line in try encodedReports(of: log) {
        reports += 1
        guard let object = parseJSON(line) as? [String: Any], let kind = object["class"] as? String
        else { continue }
        for name in object.keys where gpsd.names[kind]?.contains(name) != true {
          problems.insert("\(log.lastPathComponent): \(kind) field '\(name)' unknown to gpsd")
        }
        for satellite in object["satellites"] as? [[String: Any]] ?? [] {
          for name in satellite.keys where gpsd.names["satellite"]?.contains(name) != true {
            problems.insert("\(log.lastPathComponent): satellite field '\(name)' unknown to gpsd")
          }
        }
        // Satellite fields repeat names of the report's own (none do today); check the
        // report level, where units and decimals matter.
        let topLevel = line.replacingOccurrences(
          of: "\"satellites\":\\[.*\\]", with: "", options: .regularExpression)
        for (name, number) in numericFields(topLevel) {
          let expected = gpsd.decimals["\(kind).\(name)"] ?? []
          if !expected.contains(decimals(number)) {
            problems.insert("\(kind).\(name) written \(number), gpsd uses \(expected) decimals")
          }
        }
      }
    }
    #expect(reports > 1000, "reports written for the corpus")
    #expect(problems.isEmpty, "\(problems.sorted().prefix(10))")
  }

  @Test("Garmin's PGRME: epv and sep are gpsd's, unscaled (gpsd multiplies them by 2.45 / 1.18)")
  func garminErrors() throws {
    // gpsd takes Garmin's figures for 50 % errors and scales them to its 95 %
    // (GPSD_CONFIDENCE / CEP50_SIGMA); we report Garmin's own.
    let scale = 2.45 / 1.18
    var compared = 0
    for name in ["garmin15x.log", "garmin17n.log"] {
      let log = try #require(GPSDCorpus.logs().first { $0.lastPathComponent == name })
      // gpsd's last TPV of each time printed after that epoch's PGRME (before it, gpsd's
      // figures come from its DOP model: the first epoch of each log, whose PGRME gpsd
      // reported on with the next time).
      var theirs: [String: [String: Any]] = [:]
      var sawPGRME = false
      let check = try String(contentsOf: log.appendingPathExtension("chk"), encoding: .isoLatin1)
      for line in check.split(whereSeparator: \.isNewline) {
        if line.hasPrefix("$GPRMC") || line.hasPrefix("$GPGGA") { sawPGRME = false }
        if line.hasPrefix("$PGRME") { sawPGRME = true }
        guard sawPGRME, line.hasPrefix("{\"class\":\"TPV\""),
          let object = parseJSON(String(line)) as? [String: Any],
          let time = object["time"] as? String
        else { continue }
        theirs[time] = object
      }
      for line in try encodedReports(of: log) where line.hasPrefix("{\"class\":\"TPV\"") {
        guard let ours = parseJSON(line) as? [String: Any], let time = ours["time"] as? String,
          let gpsd = theirs[time], let theirSep = gpsd["sep"] as? Double,
          let theirEpv = gpsd["epv"] as? Double
        else { continue }
        let sep = try #require(ours["sep"] as? Double, "\(name) \(time)")
        let epv = try #require(ours["epv"] as? Double, "\(name) \(time)")
        #expect(
          abs(sep * scale - theirSep) <= 1e-3, "\(name) \(time): sep \(sep), gpsd \(theirSep)")
        #expect(
          abs(epv * scale - theirEpv) <= 1e-3, "\(name) \(time): epv \(epv), gpsd \(theirEpv)")
        compared += 1
      }
    }
    // Garmin 15x: 6 epochs of 7 (see above); 17N: 2.
    #expect(compared == 8, "Garmin epochs compared: \(compared)")
  }

  @Test("values agree with gpsd's TPV of the same time: units are gpsd's")
  func unitsAgree() throws {
    // Fields whose units a mistake would change (knots for m/s, feet, radians, minutes),
    // with the tolerance gpsd's own rounding allows.
    let tolerances: [String: Double] = [
      "lat": 2e-9, "lon": 2e-9, "altHAE": 1e-4, "altMSL": 1e-4, "alt": 1e-4, "speed": 1e-3,
      "track": 1e-4, "geoidSep": 1e-3,
    ]
    var compared: [String: Int] = [:]
    var agreed: [String: Int] = [:]
    for log in try GPSDCorpus.logs() {
      // gpsd's last TPV of each time is its complete view of that epoch.
      var theirs: [String: [String: Any]] = [:]
      let check = try String(contentsOf: log.appendingPathExtension("chk"), encoding: .isoLatin1)
      for line in check.split(whereSeparator: \.isNewline)
      where line.hasPrefix("{\"class\":\"TPV\"") {
        if let object = parseJSON(String(line)) as? [String: Any],
          let time = object["time"] as? String
        {
          theirs[time] = object
        }
      }
      for line in try encodedReports(of: log) where line.hasPrefix("{\"class\":\"TPV\"") {
        guard let ours = parseJSON(line) as? [String: Any], let time = ours["time"] as? String,
          let gpsd = theirs[time]
        else { continue }
        for (name, tolerance) in tolerances {
          guard let mine = ours[name] as? Double, let other = gpsd[name] as? Double else {
            continue
          }
          compared[name, default: 0] += 1
          if abs(mine - other) <= tolerance { agreed[name, default: 0] += 1 }
        }
      }
    }
    for name in tolerances.keys.sorted() {
      let total = compared[name] ?? 0
      let rate = total == 0 ? 0 : Double(agreed[name] ?? 0) / Double(total)
      print("\(name): \(agreed[name] ?? 0) of \(total) agree")
      #expect(total >= 100, "\(name) compared on enough epochs")
      // Not every epoch agrees (gpsd's quirks, fix builder decisions that are not the
      // encoder's); a wrong unit or decimal scale would agree on almost none.
      #expect(rate >= 0.9, "\(name): \(agreed[name] ?? 0) of \(total) agree with gpsd")
    }
  }
}
