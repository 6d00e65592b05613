import Foundation
import NMEA
import Testing

// Conformance against gpsd for the u-blox logs (corpus/gpsd-ubx): every log is
// decoded whole (UBX and any NMEA beside it) into epochs, and gpsd's last TPV of each time is
// looked for among them. Positions must equal gpsd's to its nine printed decimals in at least
// 99 % of gpsd's positioned epochs per log, but where `explainedPositions` names a deliberate
// difference; the other fields are counted and each difference is explained per log in
// docs/conformance.md ("u-blox binary logs").

/// One u-blox log against gpsd.
struct UBXLogConformance {
  var log: String
  var epochs = 0
  /// gpsd TPVs with a position, and those we have an epoch of the same time for.
  var gpsdPositions = 0
  var matched = 0
  /// Per field: gpsd epochs compared (gpsd printed it), ours agreeing.
  var compared: [String: Int] = [:]
  var agreeing: [String: Int] = [:]
  var examples: [String: [String]] = [:]
  var duplicateTimes = 0
  /// gpsd SKYs with satellites (its first of each time: NAV-SAT's or NAV-SVINFO's, before
  /// NAV-SIG's), ours of the same time with a view, and those agreeing in `nSat` and `uSat`.
  var gpsdSkies = 0
  var skiesMatched = 0
  var skiesAgreeing = 0

  static func run(log: String, directory: URL) throws -> UBXLogConformance {
    let reference = try ReferenceLog(chk: directory.appendingPathComponent(log + ".chk"))
    let bytes = try GPSDCorpus.recording(directory.appendingPathComponent(log))
    var epochs: [Epoch] = []
    var decoder = NMEADecoder()
    decoder.decode(bytes) { if case .epoch(let epoch) = $0 { epochs.append(epoch) } }
    decoder.finish { if case .epoch(let epoch) = $0 { epochs.append(epoch) } }
    var result = UBXLogConformance(log: log, epochs: epochs.count)
    var ours: [Int64: Fix] = [:]
    var views: [Int64: SatelliteView] = [:]
    for epoch in epochs {
      guard let time = epoch.fix.time else { continue }
      // gpsd prints milliseconds; a time from UBX is whole milliseconds of iTOW already.
      let key = (time.nanosecondsOfDay + 500_000) / 1_000_000 % 86_400_000
      if ours.updateValue(epoch.fix, forKey: key) != nil { result.duplicateTimes += 1 }
      views[key] = epoch.satellites
    }
    for (key, sky) in try Self.firstSkies(chk: directory.appendingPathComponent(log + ".chk"))
      .sorted(by: { $0.key < $1.key })
    {
      result.gpsdSkies += 1
      guard let view = views[key], !view.satellites.isEmpty else {
        result.note("sky", "no view of ours at \(key) ms")
        continue
      }
      result.skiesMatched += 1
      let agrees = view.satellites.count == sky.count && view.usedCount == sky.used
      if agrees {
        result.skiesAgreeing += 1
      } else {
        result.note(
          "sky",
          "at \(key) ms ours \(view.satellites.count)/\(view.usedCount) gpsd \(sky.count)/\(sky.used)"
        )
      }
    }
    for (key, tpv) in reference.lastTPV.sorted(by: { $0.key < $1.key }) {
      guard let lat = tpv.latitude, let lon = tpv.longitude else { continue }
      result.gpsdPositions += 1
      guard let fix = ours[key] else {
        result.note("time", "no epoch of ours at \(key) ms")
        continue
      }
      result.matched += 1
      // Nine decimals: half a unit of the ninth, and a little for gpsd's binary rounding.
      let equal =
        fix.latitude.map { abs($0 - lat) <= 0.6e-9 } == true
        && fix.longitude.map { abs($0 - lon) <= 0.6e-9 } == true
      result.count(
        "position", equal, "ours \(fix.latitude as Any),\(fix.longitude as Any) gpsd \(lat),\(lon)")
      result.count("mode", Int(fix.mode.rawValue) == tpv.mode, "ours \(fix.mode) gpsd \(tpv.mode)")
      result.compare("altHAE", fix.altitudeHAE, tpv.altitudeHAE, 0.6e-4)
      result.compare("altMSL", fix.altitudeMSL, tpv.altitudeMSL, 0.6e-4)
      result.compare("speed", fix.speed, tpv.speed, 0.6e-3)
      result.compare("eph", fix.horizontalAccuracy, tpv.horizontalAccuracy, 0.6e-3)
      result.compare("epv", fix.verticalAccuracy, tpv.verticalAccuracy, 0.6e-3)
      result.compare("eps", fix.speedAccuracy, tpv.speedAccuracy, 0.6e-2)
      if let date = tpv.date {
        result.count("date", fix.date?.description == date, "ours \(fix.date as Any) gpsd \(date)")
      }
    }
    return result
  }

  /// gpsd's first SKY with satellites of each time: satellites listed and used.
  static func firstSkies(chk url: URL) throws -> [Int64: (count: Int, used: Int)] {
    var skies: [Int64: (count: Int, used: Int)] = [:]
    for rawLine in try Data(contentsOf: GPSDCorpus.requireFile(url)).split(separator: 0x0A) {
      let line = String(decoding: rawLine, as: UTF8.self)
      guard line.hasPrefix("{\"class\":\"SKY\""), line.contains("\"satellites\":[{\"PRN\"")
      else { continue }
      let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as! [String: Any]
      guard let time = object["time"] as? String, let key = ReferenceLog.isoTimeOfDay(time),
        skies[key] == nil, let satellites = object["satellites"] as? [[String: Any]]
      else { continue }
      let used = satellites.filter { $0["used"] as? Bool == true }.count
      skies[key] = (satellites.count, used)
    }
    return skies
  }

  mutating func count(_ field: String, _ agrees: Bool, _ detail: @autoclosure () -> String) {
    compared[field, default: 0] += 1
    if agrees {
      agreeing[field, default: 0] += 1
    } else if examples[field, default: []].count < 3 {
      examples[field, default: []].append(detail())
    }
  }

  mutating func note(_ field: String, _ detail: String) {
    if examples[field, default: []].count < 3 { examples[field, default: []].append(detail) }
  }

  mutating func compare(_ field: String, _ ours: Double?, _ theirs: Double?, _ tolerance: Double) {
    guard let theirs else { return }
    count(
      field, ours.map { abs($0 - theirs) <= tolerance } ?? false,
      "ours \(ours.map { String($0) } ?? "nil") gpsd \(theirs)")
  }

  func agreement(_ field: String) -> (agreeing: Int, compared: Int) {
    (agreeing[field] ?? 0, compared[field] ?? 0)
  }

  var summary: String {
    let fields = compared.keys.sorted().map { "\($0) \(agreeing[$0] ?? 0)/\(compared[$0]!)" }
    return "\(log): \(epochs) epochs; gpsd positions \(gpsdPositions), matched \(matched); "
      + fields.joined(separator: ", ")
      + "; gpsd skies \(gpsdSkies), ours \(skiesMatched), nSat/uSat agreeing \(skiesAgreeing)"
  }
}

@Suite("UBX conformance with gpsd")
struct UBXConformanceTests {
  /// Logs whose positions differ from gpsd's on purpose in more than 1 % of its epochs: how
  /// many of gpsd's positioned epochs agree, and why the others do not (docs/conformance.md).
  static let explainedPositions: [String: (agreeing: Int, reason: String)] = [
    "ublox-aek-4t.log": (
      3,
      "gpsd's first TPV is stamped with its built-in 18 leap seconds before the receiver "
        + "states them (14 in 2007): 4 s early; we have that epoch untimed, no fix"
    ),
    "ublox-lea-4t.log": (
      1,
      "gpsd's first TPV is stamped with its built-in 18 leap seconds before the receiver "
        + "states them (15 in 2009): 3 s early; we have that epoch untimed, no fix"
    ),
    "ublox-zed-f9r.log": (
      0,
      "the log mixes NMEA with UBX and gpsd's TPV holds the position of the epoch's last "
        + "sentence, GGA with five decimals of minutes (1.7e-7°); we rank NAV-PVT's 1e-7° "
        + "above it"
    ),
  ]

  /// Logs where fewer of gpsd's SKYs than all agree with ours in satellites listed and used:
  /// how many agree, and why the others do not (docs/conformance.md).
  static let skyAgreement: [String: (agreeing: Int, reason: String)] = [:]

  /// The logs of receivers that give only the ellipsoidal height (NAV-SOL's ECEF): gpsd's
  /// `altMSL` there is from its geoid model, and so is ours.
  @Test(
    "heights above sea level from gpsd's geoid model where the receiver gives none",
    arguments: ["ublox-8-time.log", "ublox-neo-m8t.log", "ublox-aek-4t.log", "ublox-lea-4t.log"])
  func geoidHeights(log: String) throws {
    let result = try UBXLogConformance.run(log: log, directory: try GPSDCorpus.requireUBX())
    let (agreeing, compared) = result.agreement("altMSL")
    #expect(compared > 0 && agreeing == compared, "\(log): altMSL \(agreeing) of \(compared)")
  }

  @Test("each u-blox log's epochs agree with gpsd's TPVs", arguments: UBXCorpusTests.logs)
  func agreesWithGPSD(log: String) throws {
    let directory = try GPSDCorpus.requireUBX()
    let result = try UBXLogConformance.run(log: log, directory: directory)
    print(result.summary)
    for (field, examples) in result.examples.sorted(by: { $0.key < $1.key }) {
      print("  \(field): \(examples.joined(separator: "; "))")
    }
    #expect(result.duplicateTimes == 0, "\(log): two epochs of ours for one time")
    let (agreeing, _) = result.agreement("position")
    if let explained = Self.explainedPositions[log] {
      #expect(agreeing == explained.agreeing, "\(log): \(explained.reason)")
    } else {
      #expect(
        Double(agreeing) >= 0.99 * Double(result.gpsdPositions),
        "\(log): \(agreeing) of gpsd's \(result.gpsdPositions) positions equal")
    }
    let skies = Self.skyAgreement[log] ?? (agreeing: result.gpsdSkies, reason: "")
    #expect(
      result.skiesAgreeing == skies.agreeing,
      "\(log): \(result.skiesAgreeing) of gpsd's \(result.gpsdSkies) SKYs agree. \(skies.reason)")
  }
}
