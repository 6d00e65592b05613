import Foundation
import NMEA
import Testing

// Conformance against gpsd: every NMEA log of gpsd's captures in corpus/gpsd is decoded, and
// each of our epochs is compared with gpsd's last TPV of the same time. corpus/README.md says
// where the captures come from; docs/conformance.md explains the method and every difference
// listed in `knownDifferences` below.

// MARK: - Finding the corpus

/// gpsd's captures, carried by the repository in `corpus/` (corpus/README.md): `gpsd/` (NMEA),
/// `gpsd-ubx/` (u-blox binary) and `gpsd-casic/`.
enum GPSDCorpus {
  /// The package's top directory.
  static let package = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent()  // NMEATests
    .deletingLastPathComponent()  // Tests
    .deletingLastPathComponent()  // the package

  /// What a test says when a capture it needs is not there: which, and how to get it back.
  static func missingMessage(_ path: String) -> Comment {
    Comment(
      rawValue: "\(path) is missing: the repository carries it; restore it with "
        + "`git checkout -- corpus` or scripts/refresh-corpus.sh (corpus/README.md)")
  }

  /// `corpus/FAMILY`, or a failure naming `corpus/FAMILY/SENTINEL` (a log every copy holds).
  static func require(family: String, sentinel: String) throws -> URL {
    let directory = package.appendingPathComponent("corpus/\(family)")
    try #require(
      FileManager.default.fileExists(atPath: directory.appendingPathComponent(sentinel).path),
      missingMessage("corpus/\(family)/\(sentinel)"))
    return directory
  }

  /// `corpus/gpsd`.
  static func require() throws -> URL { try require(family: "gpsd", sentinel: "bu353s4.log") }

  /// A capture or gpsd's output for it, or a failure naming it.
  static func requireFile(_ url: URL) throws -> URL {
    let path = url.standardized.path
    let relative =
      path.hasPrefix(package.path + "/") ? String(path.dropFirst(package.path.count + 1)) : path
    try #require(FileManager.default.fileExists(atPath: path), missingMessage(relative))
    return url
  }

  /// Logs that hold only binary frames (UBX, SiRF): no NMEA to compare.
  static let binaryOnlyLogs: Set<String> = ["ublox-neo-m8n.log", "sirfstarv.log"]
  /// Logs that mix binary data with NMEA.
  static let binaryMixedLogs: Set<String> = ["ublox-8.log"]

  static func logs(in directory: URL) throws -> [String] {
    try FileManager.default.contentsOfDirectory(atPath: directory.path)
      .filter { $0.hasSuffix(".log") }
      .sorted()
  }

  /// The log as the receiver sent it, without the `#` comment lines the corpus adds (a line
  /// is a comment when it starts with `#` and holds only text, so binary data that happens
  /// to contain `\n#` is kept).
  static func recording(_ url: URL) throws -> [UInt8] {
    let data = [UInt8](try Data(contentsOf: requireFile(url)))
    var out: [UInt8] = []
    out.reserveCapacity(data.count)
    var start = 0
    while start < data.count {
      var end = start
      while end < data.count && data[end] != 0x0A { end += 1 }
      let lineEnd = min(end + 1, data.count)
      let line = data[start..<lineEnd]
      let isComment =
        data[start] == 0x23
        && line.allSatisfy { $0 == 0x09 || $0 == 0x0A || $0 == 0x0D || (0x20...0x7E).contains($0) }
      if !isComment { out.append(contentsOf: line) }
      start = lineEnd
    }
    return out
  }
}

// MARK: - gpsd's reports

/// The fields of a gpsd TPV report that the comparison uses.
struct ReferenceTPV {
  var mode: Int
  /// `yyyy-mm-dd` when gpsd printed a time.
  var date: String?
  var latitude: Double?
  var longitude: Double?
  var altitudeMSL: Double?
  var altitudeHAE: Double?
  var speed: Double?
  /// Horizontal, vertical and speed accuracies (`eph`, `epv`, `eps`), for the UBX logs.
  var horizontalAccuracy: Double?
  var verticalAccuracy: Double?
  var speedAccuracy: Double?
}

/// gpsd's output for one log: the last TPV of each time of day.
struct ReferenceLog {
  var lastTPV: [Int64: ReferenceTPV] = [:]
  /// TPVs that could not be given a time (no time field and no timed sentence before them).
  var unattributed = 0

  /// Reads a `.chk` file: input sentences echoed, each followed by the JSON gpsd emitted.
  ///
  /// A TPV with a `time` belongs to that time. A TPV without one (gpsd prints no time without
  /// a valid fix) belongs to the time of the last timed sentence echoed before it, which is
  /// the epoch gpsd was building when it printed the report.
  init(chk url: URL) throws {
    let data = try Data(contentsOf: GPSDCorpus.requireFile(url))
    var currentTime: Int64?
    // Split bytes, not Characters: Swift reads "\r\n" as one Character.
    for rawLine in data.split(separator: 0x0A) {
      let bytes = rawLine.last == 0x0D ? rawLine.dropLast() : rawLine
      let line = String(decoding: bytes, as: UTF8.self)
      if line.first == "$" || line.first == "!" {
        // An empty time field (a receiver without a fix) leaves the epoch as it was.
        if let time = Self.sentenceTime(line), let time { currentTime = time }
        continue
      }
      guard line.hasPrefix("{\"class\":\"TPV\"") else { continue }
      let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as! [String: Any]
      var tpv = ReferenceTPV(mode: object["mode"] as? Int ?? 0)
      var key = currentTime
      if let time = object["time"] as? String {
        tpv.date = String(time.prefix(10))
        key = Self.isoTimeOfDay(time)
      }
      tpv.latitude = object["lat"] as? Double
      tpv.longitude = object["lon"] as? Double
      tpv.altitudeMSL = object["altMSL"] as? Double
      tpv.altitudeHAE = object["altHAE"] as? Double
      tpv.speed = object["speed"] as? Double
      tpv.horizontalAccuracy = object["eph"] as? Double
      tpv.verticalAccuracy = object["epv"] as? Double
      tpv.speedAccuracy = object["eps"] as? Double
      guard let key else {
        unattributed += 1
        continue
      }
      lastTPV[key] = tpv
    }
  }

  /// The time of day (milliseconds) of a sentence that carries one. The outer optional is
  /// `nil` for sentence types without a time; the inner one is `nil` when the field is empty.
  static func sentenceTime(_ sentence: String) -> Int64?? {
    let body = sentence.split(separator: "*", maxSplits: 1).first ?? ""
    let fields = body.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
    guard let address = fields.first, address.count >= 4 else { return nil }
    let index: Int
    if address == "$PUBX" {
      guard fields.count > 2, fields[1] == "00" || fields[1] == "04" else { return nil }
      index = 2
    } else {
      switch address.suffix(3) {
      case "GGA", "RMC", "GNS", "ZDA", "GST", "GBS", "GRS": index = 1
      case "GLL": index = 5
      default: return nil
      }
    }
    guard fields.count > index else { return .some(nil) }
    return .some(nmeaTimeOfDay(fields[index]))
  }

  static func nmeaTimeOfDay(_ field: String) -> Int64? {
    let digits = Array(field.utf8)
    guard digits.count >= 6 else { return nil }
    func number(_ range: Range<Int>) -> Int64? {
      var value: Int64 = 0
      for byte in digits[range] {
        guard (0x30...0x39).contains(byte) else { return nil }
        value = value * 10 + Int64(byte - 0x30)
      }
      return value
    }
    guard let h = number(0..<2), let m = number(2..<4), let s = number(4..<6) else { return nil }
    var milliseconds: Int64 = 0
    if digits.count > 7 {
      var scale: Int64 = 100
      for byte in digits[7...] where scale > 0 {
        guard (0x30...0x39).contains(byte) else { return nil }
        milliseconds += Int64(byte - 0x30) * scale
        scale /= 10
      }
    }
    return ((h * 60 + m) * 60 + s) * 1000 + milliseconds
  }

  /// `2014-12-31T03:07:19.000Z` → milliseconds of the day.
  static func isoTimeOfDay(_ time: String) -> Int64? {
    guard let t = time.firstIndex(of: "T") else { return nil }
    let clock = time[time.index(after: t)...].filter { $0 != ":" && $0 != "Z" }
    return nmeaTimeOfDay(String(clock))
  }
}

// MARK: - The comparison

/// What can differ between one of our epochs and gpsd's TPV of the same time.
enum ConformanceField: String, CaseIterable, Sendable {
  case mode, date, weekRollover, position, altitudeMSL, altitudeHAE, speed
}

/// A difference from gpsd that the project makes on purpose, with the reason.
struct KnownDifference: Sendable, CustomStringConvertible {
  var log: String
  var field: ConformanceField
  /// Times of day (`hh:mm:ss.sss`) where it applies; empty means every time in the log.
  var times: [String] = []
  var reason: String

  func covers(_ mismatch: Mismatch) -> Bool {
    mismatch.log == log && mismatch.field == field
      && (times.isEmpty || times.contains(mismatch.time))
  }

  var description: String {
    "\(log) \(field) \(times.isEmpty ? "*" : times.joined(separator: ","))"
  }
}

struct Mismatch: CustomStringConvertible {
  var log: String
  var time: String
  var field: ConformanceField
  var detail: String
  var description: String { "\(log) \(time) \(field): \(detail)" }
}

/// One log's comparison.
struct LogComparison {
  var log: String
  var epochs = 0
  var compared = 0
  var agreeing = 0
  /// Our epochs without a time (nothing to match them by).
  var untimed = 0
  /// Our epochs whose time gpsd never reported on.
  var withoutReference = 0
  var unreferencedTimes: [String] = []
  var mismatches: [Mismatch] = []
  var duplicateTimes: [String] = []

  static func run(log: String, directory: URL) throws -> LogComparison {
    let reference = try ReferenceLog(chk: directory.appendingPathComponent(log + ".chk"))
    let bytes = try GPSDCorpus.recording(directory.appendingPathComponent(log))
    var epochs: [Epoch] = []
    var decoder = NMEADecoder()
    decoder.decode(bytes) { if case .epoch(let epoch) = $0 { epochs.append(epoch) } }
    decoder.finish { if case .epoch(let epoch) = $0 { epochs.append(epoch) } }

    var result = LogComparison(log: log)
    result.epochs = epochs.count
    var seen = Set<Int64>()
    for epoch in epochs {
      let fix = epoch.fix
      guard let time = fix.time else {
        result.untimed += 1
        continue
      }
      let key = time.nanosecondsOfDay / 1_000_000
      let label = time.description
      if !seen.insert(key).inserted { result.duplicateTimes.append(label) }
      guard let tpv = reference.lastTPV[key] else {
        result.withoutReference += 1
        result.unreferencedTimes.append(label)
        continue
      }
      result.compared += 1
      let found = compare(fix, tpv)
      if found.isEmpty { result.agreeing += 1 }
      for (field, detail) in found {
        result.mismatches.append(Mismatch(log: log, time: label, field: field, detail: detail))
      }
    }
    return result
  }

  static func compare(_ fix: Fix, _ tpv: ReferenceTPV) -> [(ConformanceField, String)] {
    var found: [(ConformanceField, String)] = []
    func differ(_ ours: Double?, _ theirs: Double?, _ tolerance: Double) -> Bool {
      guard let theirs else { return false }
      guard let ours else { return true }
      return abs(ours - theirs) > tolerance
    }
    func show(_ value: Double?) -> String { value.map { String($0) } ?? "nil" }

    if Int(fix.mode.rawValue) != tpv.mode {
      found.append((.mode, "ours \(fix.mode.rawValue), gpsd \(tpv.mode)"))
    }
    if let theirs = tpv.date {
      if let ours = fix.date {
        if ours.description != theirs {
          let days = daysBetween(ours.description, theirs)
          let field: ConformanceField = days != nil && days! % 7168 == 0 ? .weekRollover : .date
          found.append((field, "ours \(ours), gpsd \(theirs)"))
        }
      } else if fix.mode != .noFix {
        found.append((.date, "ours nil, gpsd \(theirs)"))
      }
    }
    let positionPresenceDiffers = (fix.position == nil) != (tpv.latitude == nil)
    if positionPresenceDiffers || differ(fix.latitude, tpv.latitude, 1e-7)
      || differ(fix.longitude, tpv.longitude, 1e-7)
    {
      found.append(
        (
          .position,
          "ours \(show(fix.latitude)),\(show(fix.longitude)), gpsd \(show(tpv.latitude)),\(show(tpv.longitude))"
        ))
    }
    if differ(fix.altitudeMSL, tpv.altitudeMSL, 1e-3) {
      found.append((.altitudeMSL, "ours \(show(fix.altitudeMSL)), gpsd \(show(tpv.altitudeMSL))"))
    }
    if differ(fix.altitudeHAE, tpv.altitudeHAE, 1e-3) {
      found.append((.altitudeHAE, "ours \(show(fix.altitudeHAE)), gpsd \(show(tpv.altitudeHAE))"))
    }
    if differ(fix.speed, tpv.speed, 1e-3) {
      found.append((.speed, "ours \(show(fix.speed)), gpsd \(show(tpv.speed))"))
    }
    return found
  }

  static func daysBetween(_ a: String, _ b: String) -> Int? {
    func days(_ text: String) -> Int? {
      let parts = text.split(separator: "-").compactMap { Int($0) }
      guard parts.count == 3 else { return nil }
      return UTCDate(year: parts[0], month: UInt8(parts[1]), day: UInt8(parts[2]))
        .daysSinceUnixEpoch
    }
    guard let x = days(a), let y = days(b) else { return nil }
    return abs(x - y)
  }
}

// MARK: - Deliberate differences

/// Where we differ from gpsd on purpose. Each entry must match at least one mismatch (so the
/// table cannot go stale), and every mismatch must be covered by an entry.
let knownDifferences: [KnownDifference] = {
  let noReportAfterRMC =
    "the log's first fix: gpsd prints no TPV after the epoch's RMC, so its last TPV of that "
    + "time is the one before RMC raised the mode to 3D (gpsd's rule, which we follow, gives "
    + "3D once RMC is in)"
  let timeCarriedOver =
    "the next cycle has no valid time (RMC status V, or empty time fields) and gpsd stamps "
    + "its no-fix report with the previous epoch's time, overwriting its last TPV of that time"
  let derivedSpeed =
    "the epoch has no RMC or VTG speed; gpsd derives a speed from successive positions, we "
    + "report only what the receiver measured"
  return [
    KnownDifference(
      log: "ac12.log", field: .position,
      reason: "AC12 writes five decimal minutes in GGA and four in RMC; we keep GGA's position "
        + "(the one that goes with the altitude), gpsd the last sentence's"),
    KnownDifference(
      log: "haicom-305N.log", field: .mode, times: ["09:53:04.802"], reason: noReportAfterRMC),
    KnownDifference(
      log: "mtk-3301.log", field: .mode, times: ["08:14:36.000"], reason: noReportAfterRMC),
    KnownDifference(
      log: "neo-m8n.log", field: .weekRollover,
      reason: "gpsd adds 1024 weeks to the RMC date 2015-03-18 (the log's own header date) and "
        + "reports 2034-11-01; we never shift a receiver's date on our own"),
    KnownDifference(
      log: "quectel.log", field: .mode, times: ["02:20:38.000"], reason: timeCarriedOver),
    KnownDifference(
      log: "quectel.log", field: .position, times: ["02:20:38.000"], reason: timeCarriedOver),
    KnownDifference(
      log: "tr737A+.log", field: .speed, times: ["07:17:43.000"], reason: derivedSpeed),
    KnownDifference(
      log: "ublox-lea-4h.log", field: .mode, times: ["03:09:01.000"], reason: timeCarriedOver),
    KnownDifference(
      log: "ublox-lea-4h.log", field: .position, times: ["03:09:01.000"],
      reason: timeCarriedOver),
    KnownDifference(
      log: "ublox-lea-5h.log", field: .speed, times: ["08:55:15.000"], reason: derivedSpeed),
  ]
}()

// MARK: - Tests

@Suite("Conformance with gpsd")
struct ConformanceTests {
  @Test("every NMEA log agrees with gpsd's last TPV of each epoch, or the table says why")
  func agreesWithGPSD() throws {
    let directory = try GPSDCorpus.require()
    let logs = try GPSDCorpus.logs(in: directory).filter { !GPSDCorpus.binaryOnlyLogs.contains($0) }
    #expect(logs.count >= 45, "expected the 45 NMEA logs and ublox-8.log, found \(logs.count)")

    var results: [LogComparison] = []
    for log in logs { results.append(try LogComparison.run(log: log, directory: directory)) }

    let verbose = ProcessInfo.processInfo.environment["SERIALGPS_CONFORMANCE_VERBOSE"] != nil
    var report = "log                                 epochs compared agree   rate  explained\n"
    var totalCompared = 0
    var totalAgreeing = 0
    var used = Set<String>()
    for result in results {
      totalCompared += result.compared
      totalAgreeing += result.agreeing
      var explained = 0
      for mismatch in result.mismatches {
        if let entry = knownDifferences.first(where: { $0.covers(mismatch) }) {
          used.insert(entry.description)
          explained += 1
        } else {
          Issue.record("unexplained difference from gpsd: \(mismatch)")
        }
        if verbose { print("  \(mismatch)") }
      }
      if verbose && !result.unreferencedTimes.isEmpty {
        print("  \(result.log) no gpsd report for: \(result.unreferencedTimes)")
      }
      #expect(
        result.duplicateTimes.isEmpty, "\(result.log): two epochs for \(result.duplicateTimes)")
      let rate = result.compared == 0 ? 1 : Double(result.agreeing) / Double(result.compared)
      report += result.log.padding(toLength: 36, withPad: " ", startingAt: 0)
      report += String(
        format: "%6d %8d %5d %6.1f%% %5d/%d\n",
        result.epochs, result.compared, result.agreeing, rate * 100, explained,
        result.mismatches.count)
    }
    for entry in knownDifferences where !used.contains(entry.description) {
      Issue.record("known difference no longer occurs, remove it from the table: \(entry)")
    }
    let overall = totalCompared == 0 ? 0 : Double(totalAgreeing) / Double(totalCompared)
    report += String(
      format: "overall: %d of %d epochs agree within tolerance (%.2f%%)\n", totalAgreeing,
      totalCompared, overall * 100)
    print(report)
    #expect(totalCompared >= 1250, "too few epochs compared: \(totalCompared)")
    // docs/conformance.md gives the figure; every difference left is in the table above.
    #expect(totalAgreeing >= 1257, "fewer epochs agree than docs/conformance.md says")
  }
}

// MARK: - Nothing lost around binary data

/// An independent, deliberately naive count of what a log holds: NMEA lines found by looking
/// for `$`/`!` … `*hh` line by line, UBX and SiRF frames found by their sync bytes, length
/// and checksum. The framer must find the same.
struct CorpusCensus {
  var sentences = 0
  var longSentences = 0
  var ubxFrames = 0
  var sirfFrames = 0

  init(_ bytes: [UInt8], maximumSentenceLength: Int = 128) {
    var i = 0
    let n = bytes.count
    while i < n {
      let byte = bytes[i]
      if byte == 0xB5, i + 7 < n, bytes[i + 1] == 0x62 {
        let length = Int(bytes[i + 4]) | Int(bytes[i + 5]) << 8
        let end = i + 6 + length + 2
        if end <= n {
          var a: UInt8 = 0
          var b: UInt8 = 0
          for k in (i + 2)..<(end - 2) {
            a = a &+ bytes[k]
            b = b &+ a
          }
          if a == bytes[end - 2] && b == bytes[end - 1] {
            ubxFrames += 1
            i = end
            continue
          }
        }
      }
      if byte == 0xA0, i + 8 < n, bytes[i + 1] == 0xA2 {
        let length = Int(bytes[i + 2]) << 8 | Int(bytes[i + 3])
        let end = i + 4 + length + 4
        if end <= n, bytes[end - 2] == 0xB0, bytes[end - 1] == 0xB3 {
          var sum = 0
          for k in (i + 4)..<(end - 4) { sum += Int(bytes[k]) }
          if sum & 0x7FFF == Int(bytes[end - 4]) << 8 | Int(bytes[end - 3]) {
            sirfFrames += 1
            i = end
            continue
          }
        }
      }
      if byte == 0x24 || byte == 0x21 {
        // A sentence: printable text up to `*hh`, then LF after any number of CRs.
        var j = i + 1
        var sum: UInt8 = 0
        while j < n, bytes[j] != 0x2A, (0x20...0x7E).contains(bytes[j]), bytes[j] != 0x24 {
          sum ^= bytes[j]
          j += 1
        }
        if j + 2 < n, bytes[j] == 0x2A,
          let stated = UInt8(String(decoding: bytes[(j + 1)...(j + 2)], as: UTF8.self), radix: 16),
          stated == sum
        {
          var k = j + 3
          while k < n, bytes[k] == 0x0D { k += 1 }
          if k < n, bytes[k] == 0x0A {
            if j + 3 - i > maximumSentenceLength { longSentences += 1 } else { sentences += 1 }
            i = k + 1
            continue
          }
        }
      }
      i += 1
    }
  }
}

extension ConformanceTests {
  @Test("no sentence is lost: the framer accepts every well-formed sentence of every log")
  func everySentenceAccepted() throws {
    let directory = try GPSDCorpus.require()
    var totalSentences = 0
    for log in try GPSDCorpus.logs(in: directory) {
      let bytes = try GPSDCorpus.recording(directory.appendingPathComponent(log))
      let census = CorpusCensus(bytes)
      var decoder = NMEADecoder()
      decoder.decode(bytes) { _ in }
      decoder.finish { _ in }
      let framer = decoder.statistics.framer
      #expect(framer.sentences == census.sentences, "\(log): sentences \(framer) vs \(census)")
      #expect(framer.tooLong == census.longSentences, "\(log): too long \(framer) vs \(census)")
      #expect(framer.ubxFrames == census.ubxFrames, "\(log): UBX \(framer) vs \(census)")
      #expect(framer.sirfFrames == census.sirfFrames, "\(log): SiRF \(framer) vs \(census)")
      #expect(decoder.statistics.parseErrors == 0, "\(log): \(decoder.statistics)")
      totalSentences += framer.sentences
      if ProcessInfo.processInfo.environment["SERIALGPS_CONFORMANCE_VERBOSE"] != nil {
        print("\(log): \(decoder.statistics)")
      }
    }
    #expect(totalSentences > 10_000)
  }

  @Test("the binary logs: every frame found, and the NMEA around them intact")
  func binaryLogs() throws {
    let directory = try GPSDCorpus.require()
    var results: [String: (FramerStatistics, CorpusCensus)] = [:]
    for log in GPSDCorpus.binaryOnlyLogs.union(GPSDCorpus.binaryMixedLogs) {
      let bytes = try GPSDCorpus.recording(directory.appendingPathComponent(log))
      var framer = NMEAFramer()
      framer.feed(bytes) { _ in }
      results[log] = (framer.statistics, CorpusCensus(bytes))
    }
    let neo = try #require(results["ublox-neo-m8n.log"])
    // 53 `B5 62` pairs, one of them inside another frame's payload.
    #expect(neo.0.ubxFrames == 52 && neo.1.ubxFrames == 52)
    #expect(neo.0.sentences == 0 && neo.0.rejectedSentences == 0)
    let sirf = try #require(results["sirfstarv.log"])
    #expect(sirf.0.sirfFrames == 495 && sirf.1.sirfFrames == 495)
    #expect(sirf.0.sentences == 0)
    let mixed = try #require(results["ublox-8.log"])
    // 1009 sentences; the last is cut short by the end of the capture (no checksum).
    #expect(mixed.0.sentences == 1008 && mixed.1.sentences == 1008)
    #expect(mixed.0.missingChecksum == 1 && mixed.0.rejectedSentences == 1)
    #expect(mixed.0.garbageBytes > 100, "the line noise at the start is counted")
  }
}

extension ConformanceTests {
  @Test("every log, split at random and with bytes flipped, decodes the same as when whole")
  func splitAndDamagedLogs() throws {
    let directory = try GPSDCorpus.require()
    var generator = SeededGenerator(seed: 0xC0FFEE)
    for log in try GPSDCorpus.logs(in: directory) {
      var bytes = try GPSDCorpus.recording(directory.appendingPathComponent(log))
      for pass in 0..<2 {
        if pass == 1 {
          // Damage: flip one byte in about every 200.
          for _ in 0..<(bytes.count / 200) {
            let index = Int.random(in: 0..<bytes.count, using: &generator)
            bytes[index] ^= UInt8.random(in: 1...255, using: &generator)
          }
        }
        let whole = Self.decodeAll([bytes])
        let split = Self.decodeAll(randomSplit(bytes, using: &generator, maximumChunk: 97))
        #expect(split.epochs == whole.epochs, "\(log) pass \(pass)")
        #expect(split.statistics == whole.statistics, "\(log) pass \(pass)")
        let times = whole.epochs.compactMap(\.fix.time)
        #expect(Set(times).count == times.count, "\(log) pass \(pass): two fixes for one time")
      }
    }
  }

  static func decodeAll(_ chunks: [[UInt8]]) -> (epochs: [Epoch], statistics: DecoderStatistics) {
    var decoder = NMEADecoder()
    var epochs: [Epoch] = []
    for chunk in chunks {
      decoder.decode(chunk) { if case .epoch(let epoch) = $0 { epochs.append(epoch) } }
    }
    decoder.finish { if case .epoch(let epoch) = $0 { epochs.append(epoch) } }
    return (epochs, decoder.statistics)
  }
}
