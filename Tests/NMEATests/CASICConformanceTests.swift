import Foundation
import NMEA
import Testing

// Conformance against gpsd for the CASIC logs (corpus/gpsd-casic: a Quectel L76K, CASIC binary
// alone and CASIC beside NMEA): decoded whole into epochs and compared with gpsd's last TPV of
// each time as the u-blox logs are (`UBXLogConformance`). Positions must equal gpsd's to its nine
// printed decimals in at least 99 % of gpsd's positioned epochs of each log; the other fields
// are counted and printed, and their agreement is in docs/casic.md.

extension GPSDCorpus {
  /// `corpus/gpsd-casic`.
  static func requireCASIC() throws -> URL {
    try require(family: "gpsd-casic", sentinel: "quectel-l76k-binary.log")
  }
}

@Suite("CASIC conformance with gpsd")
struct CASICConformanceTests {
  static let logs = ["quectel-l76k-binary.log", "quectel-l76k-dual.log"]

  @Test("each CASIC log's epochs agree with gpsd's TPVs", arguments: logs)
  func agreesWithGPSD(log: String) throws {
    let result = try UBXLogConformance.run(log: log, directory: try GPSDCorpus.requireCASIC())
    print(result.summary)
    for (field, examples) in result.examples.sorted(by: { $0.key < $1.key }) {
      print("  \(field): \(examples.joined(separator: "; "))")
    }
    #expect(result.duplicateTimes == 0, "\(log): two epochs of ours for one time")
    #expect(result.gpsdPositions >= 129, "\(log): gpsd's positioned epochs were read")
    let (agreeing, _) = result.agreement("position")
    #expect(
      Double(agreeing) >= 0.99 * Double(result.gpsdPositions),
      "\(log): \(agreeing) of gpsd's \(result.gpsdPositions) positions equal")
    // The mode, the heights and the receiver's spherical error come from NAV-PV alone: every
    // epoch.
    let sep = try Self.sphericalErrors(log: log, directory: try GPSDCorpus.requireCASIC())
    #expect(
      sep.compared >= 129 && sep.agreeing == sep.compared,
      "\(log): sep \(sep.agreeing) of \(sep.compared); \(sep.differing)")
    for field in ["mode", "altHAE", "altMSL"] {
      let (same, compared) = result.agreement(field)
      #expect(compared > 0 && same == compared, "\(log): \(field) \(same) of \(compared)")
    }
  }

  /// gpsd's `sep` of its last TPV of each time against our spherical accuracy, to its three
  /// printed decimals: epochs compared, agreeing.
  static func sphericalErrors(log: String, directory: URL) throws -> (
    compared: Int, agreeing: Int, differing: [String]
  ) {
    let bytes = try GPSDCorpus.recording(directory.appendingPathComponent(log))
    var ours: [Int64: Double] = [:]
    var decoder = NMEADecoder()
    let take: (DecoderEvent) -> Void = { event in
      guard case .epoch(let epoch) = event, let time = epoch.fix.time else { return }
      ours[time.nanosecondsOfDay / 1_000_000] = epoch.fix.sphericalAccuracy
    }
    decoder.decode(bytes, take)
    decoder.finish(take)
    // gpsd's last TPV of each time, an untimed one at the time of the sentence echoed before
    // it (`ReferenceLog`'s reading: the dual log's first CASIC TPV has no time).
    var gpsd: [Int64: Double] = [:]
    var current: Int64?
    let chk = try Data(contentsOf: directory.appendingPathComponent(log + ".chk"))
    for rawLine in chk.split(separator: 0x0A) {
      let line = String(decoding: rawLine, as: UTF8.self)
      if line.first == "$", let time = ReferenceLog.sentenceTime(line), let time { current = time }
      guard line.hasPrefix("{\"class\":\"TPV\""),
        let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
        let key = (object["time"] as? String).flatMap(ReferenceLog.isoTimeOfDay) ?? current
      else { continue }
      gpsd[key] = object["sep"] as? Double
    }
    var result = (compared: 0, agreeing: 0, differing: [String]())
    for (key, sep) in gpsd.sorted(by: { $0.key < $1.key }) {
      result.compared += 1
      if let mine = ours[key], abs(mine - sep) <= 0.6e-3 {
        result.agreeing += 1
      } else if result.differing.count < 3 {
        result.differing.append("at \(key) ms ours \(ours[key] as Any) gpsd \(sep)")
      }
    }
    return result
  }

  @Test("both logs: one epoch a second, all 130, every CASIC frame decoded or known")
  func everyFrame() throws {
    let directory = try GPSDCorpus.requireCASIC()
    for log in Self.logs {
      let bytes = try GPSDCorpus.recording(directory.appendingPathComponent(log))
      var decoder = NMEADecoder()
      var epochs: [Epoch] = []
      decoder.decode(bytes) { if case .epoch(let epoch) = $0 { epochs.append(epoch) } }
      decoder.finish { if case .epoch(let epoch) = $0 { epochs.append(epoch) } }
      let statistics = decoder.statistics
      // Seven messages an epoch, 130 epochs; NAV-STATUS (01 00) is not decoded.
      #expect(statistics.framer.casicFrames == 910, "\(log)")
      #expect(statistics.framer.badBinaryFrames == 0 && statistics.framer.garbageBytes == 0)
      #expect(statistics.casic.decoded == 780 && statistics.casic.notDecoded == 130, "\(log)")
      #expect(statistics.casic.rejected == 0 && statistics.casic.droppedFields == 0)
      #expect(epochs.count == 130, "\(log)")
      #expect(epochs.allSatisfy { $0.fix.mode == .threeD && $0.fix.time != nil }, "\(log)")
      #expect(statistics.builder.lateSentences == 0, "\(log)")
    }
  }
}
