import Foundation
import NMEA
import Testing

// The UBX decoders over gpsd's 14 u-blox logs (corpus/gpsd-ubx), at the decoder's
// level: every frame of a class and ID the decoder knows decodes, except the refusals listed
// with their reasons in `expectedRejections`; and the positions and times of NAV-PVT,
// NAV-POSLLH and NAV-HPPOSLLH agree with gpsd's TPV of the same epoch (the last TPV of each
// time, read by the NMEA conformance test's `ReferenceLog`), to gpsd's nine printed decimals.
// These per-log figures are the floor of the fix-level conformance test that merges the
// messages into fixes.

extension GPSDCorpus {
  /// `corpus/gpsd-ubx`.
  static func requireUBX() throws -> URL {
    try require(family: "gpsd-ubx", sentinel: "ublox-neo-m8t.log")
  }
}

/// What decoding one log's UBX frames gave.
struct UBXLogDecoding {
  var log: String
  /// Decoded messages per class/ID (`01-07`).
  var decoded: [String: Int] = [:]
  var rejected: [String: [UBXRejection: Int]] = [:]
  var statistics = DecoderStatistics()

  /// Positions compared with gpsd, per message kind: gpsd epochs matched, agreeing.
  var compared: [String: Int] = [:]
  var agreeing: [String: Int] = [:]
  /// gpsd epochs with a position, and those our messages gave a position and time for.
  var gpsdPositions = 0
  var matchedEpochs = 0
  var disagreements: [String] = []
  /// The largest difference from gpsd's position, degrees, per message kind.
  var largestDifference: [String: Double] = [:]

  static func name(_ frame: UBXFrameView) -> String {
    String(format: "%02X-%02X", frame.messageClass, frame.messageID)
  }

  struct Timed {
    var kind: String
    var iTOW: UInt32
    var position: Position
    var time: UTCTime?
  }

  static func run(log: String, directory: URL) throws -> UBXLogDecoding {
    let reference = try ReferenceLog(chk: directory.appendingPathComponent(log + ".chk"))
    let bytes = try GPSDCorpus.recording(directory.appendingPathComponent(log))
    var result = UBXLogDecoding(log: log)
    var positions: [Timed] = []
    var utcByTOW: [UInt32: UTCTime] = [:]
    var lastFrame = ""
    var decoder = NMEADecoder()
    decoder.decode(bytes) { event in
      switch event {
      case .ubx(let frame):
        lastFrame = name(frame)
      case .ubxRejected(let frame, let reason):
        result.rejected[name(frame), default: [:]][reason, default: 0] += 1
      case .ubxMessage(let message):
        result.decoded[lastFrame, default: 0] += 1
        switch message {
        case .navPVT(let pvt):
          if let stamp = pvt.timestamp { utcByTOW[pvt.iTOW] = stamp.time }
          if let position = pvt.position, pvt.fixType.map({ $0 != .noFix }) ?? false {
            positions.append(Timed(kind: "NAV-PVT", iTOW: pvt.iTOW, position: position))
          }
        case .navPosLLH(let llh):
          if let position = llh.position {
            positions.append(Timed(kind: "NAV-POSLLH", iTOW: llh.iTOW, position: position))
          }
        case .navHPPosLLH(let hp):
          if let position = hp.position {
            positions.append(Timed(kind: "NAV-HPPOSLLH", iTOW: hp.iTOW, position: position))
          }
        case .navTimeUTC(let utc):
          if let stamp = utc.timestamp { utcByTOW[utc.iTOW] = stamp.time }
        default:
          break
        }
      default:
        break
      }
    }
    result.statistics = decoder.statistics
    result.gpsdPositions = reference.lastTPV.values.filter { $0.latitude != nil }.count
    var matched = Set<Int64>()
    for var timed in positions {
      // The epoch's UTC, from its own message or another of the same iTOW.
      timed.time = utcByTOW[timed.iTOW]
      guard let time = timed.time else { continue }
      // gpsd prints milliseconds: the epoch's time rounded to the nearest.
      let key = (time.nanosecondsOfDay + 500_000) / 1_000_000 % 86_400_000
      guard let tpv = reference.lastTPV[key], let lat = tpv.latitude, let lon = tpv.longitude
      else { continue }
      matched.insert(key)
      result.compared[timed.kind, default: 0] += 1
      let ours = (timed.position.latitude.decimalDegrees, timed.position.longitude.decimalDegrees)
      // Nine decimals as gpsd prints them: half a unit of the ninth decimal, and a little for
      // gpsd's own rounding of 1e-7 · n in binary.
      if abs(ours.0 - lat) <= 0.6e-9 && abs(ours.1 - lon) <= 0.6e-9 {
        result.agreeing[timed.kind, default: 0] += 1
      } else {
        let difference = max(abs(ours.0 - lat), abs(ours.1 - lon))
        result.largestDifference[timed.kind] = max(
          result.largestDifference[timed.kind, default: 0], difference)
        if result.disagreements.count < 5 {
          result.disagreements.append("\(timed.kind) \(time): ours \(ours), gpsd \(lat),\(lon)")
        }
      }
    }
    result.matchedEpochs = matched.count
    return result
  }

  var summary: String {
    let kinds = compared.keys.sorted().map { "\($0) \(agreeing[$0] ?? 0)/\(compared[$0]!)" }
    return
      "\(log): \(statistics.ubx.decoded) decoded, \(statistics.ubx.rejected) refused, "
      + "\(statistics.ubx.notDecoded) not decoded; gpsd epochs with a position "
      + "\(gpsdPositions), matched \(matchedEpochs); " + kinds.joined(separator: ", ")
  }
}

@Suite("UBX corpus")
struct UBXCorpusTests {
  /// Refusals that the logs hold on purpose, with why.
  static let expectedRejections: [String: [String: [UBXRejection: Int]]] = [
    // "compact" MON-RF of the ZED-F9R HPS 1.30 (the log's own note): 2 blocks of 20 bytes in a
    // 44-byte payload, where version 0 has 24-byte blocks; gpsd refuses it too (no jam or
    // antPwr in its output).
    "ublox-zed-f9r.log": ["0A-38": [.blockCountMismatch: 7]]
  ]

  /// Where gpsd's TPV of an epoch holds another source's position than a message of ours,
  /// by log and message: how far apart they may be, how many epochs, and why.
  struct Explained {
    var tolerance: Double
    var epochs: Int
    var reason: String
  }

  static let explainedPositions: [String: [String: Explained]] = [
    "ublox-zed-f9p-hp.log": [
      "NAV-PVT": Explained(
        tolerance: 1e-7, epochs: 28,
        reason: "gpsd's TPV holds the NAV-HPPOSLLH position of the epoch (1e-9°, which agrees "
          + "28/28); NAV-PVT's 1e-7° is its rounding")
    ],
    "ublox-zed-f9r.log": [
      "NAV-PVT": Explained(
        tolerance: 2e-7, epochs: 29,
        reason: "the log mixes NMEA with UBX and gpsd's TPV holds the position of the epoch's "
          + "last sentence, GGA/RMC with 5 decimals of minutes (1.7e-7°): the last writer wins "
          + "in gpsd, where the 1e-7° binary solution ranks above NMEA here")
    ],
    "ublox-neo-m8l.log": [
      "NAV-PVT": Explained(
        tolerance: 1e-5, epochs: 1,
        reason: "the dead-reckoning NEO-M8L also sends UBX-HNR-PVT at 10 Hz, which the decoder "
          + "does not decode; gpsd's last TPV of 15:31:59.999 is HNR-PVT's, 40 cm from NAV-PVT")
    ],
  ]

  /// The logs with positions from NAV-PVT, NAV-POSLLH or NAV-HPPOSLLH and gpsd TPVs of the same
  /// epochs; the others give positions only in ECEF (NAV-SOL, NAV-POSECEF: u-blox 4 and the
  /// u-blox 8 timing logs), which the fix builder turns into latitude and longitude, or none
  /// at all (ublox-zoe-m8b-logbatch: UBX-LOG-BATCH only).
  static let logsWithGeodeticPositions: Set<String> = [
    "u-blox-m8t-time.log", "ublox-f9p-rtcm.log", "ublox-lea-m8f.log", "ublox-neo-f9v.log",
    "ublox-neo-m8l.log", "ublox-neo-m8p.log", "ublox-neo-m8u.log", "ublox-zed-f9p-hp.log",
    "ublox-zed-f9r.log",
  ]

  static let logs = [
    "u-blox-m8t-time.log", "ublox-8-time.log", "ublox-aek-4t.log", "ublox-f9p-rtcm.log",
    "ublox-lea-4t.log", "ublox-lea-m8f.log", "ublox-neo-f9v.log", "ublox-neo-m8l.log",
    "ublox-neo-m8p.log", "ublox-neo-m8t.log", "ublox-neo-m8u.log", "ublox-zed-f9p-hp.log",
    "ublox-zed-f9r.log", "ublox-zoe-m8b-logbatch.log",
  ]

  @Test("all 14 logs are there")
  func corpusComplete() throws {
    let directory = try GPSDCorpus.requireUBX()
    let found = try GPSDCorpus.logs(in: directory)
    #expect(found == Self.logs)
  }

  @Test("ublox-f9p-rtcm.log's RTCM 3 corrections are frames, neither garbage nor sentences")
  func rtcm3Frames() throws {
    let directory = try GPSDCorpus.requireUBX()
    let result = try UBXLogDecoding.run(log: "ublox-f9p-rtcm.log", directory: directory)
    let framer = result.statistics.framer
    // 15 RTCM 3 frames among 16 UBX ones; unframed, their bytes were garbage (1 758 bytes by
    // `serialgps decode --stats`) and the `$` inside some began 15 malformed sentences.
    #expect(framer.rtcm3Frames == 15 && framer.ubxFrames == 16)
    #expect(framer.malformed == 0 && framer.badBinaryFrames == 0)
    #expect(framer.garbageBytes <= 1)
  }

  @Test("every frame of a known message decodes, but the refusals explained", arguments: logs)
  func decodes(log: String) throws {
    let directory = try GPSDCorpus.requireUBX()
    let result = try UBXLogDecoding.run(log: log, directory: directory)
    print(result.summary)
    #expect(result.rejected == (Self.expectedRejections[log] ?? [:]), "\(log)")
    #expect(result.statistics.framer.badBinaryFrames == 0, "\(log)")
    #expect(result.statistics.ubx.droppedFields == 0, "\(log)")
  }

  @Test("NAV-PVT, NAV-POSLLH and NAV-HPPOSLLH positions agree with gpsd's TPV", arguments: logs)
  func positions(log: String) throws {
    let directory = try GPSDCorpus.requireUBX()
    let result = try UBXLogDecoding.run(log: log, directory: directory)
    print(result.summary)
    // Times: a message's UTC (its own, or NAV-TIMEUTC's of the same iTOW) finds gpsd's TPV of
    // the epoch. Every positioned epoch of gpsd's is found, but in the NEO-M8L's log, whose
    // 10 Hz HNR-PVT epochs between the 1 Hz navigation epochs no NAV message gives.
    if Self.logsWithGeodeticPositions.contains(log) && log != "ublox-neo-m8l.log" {
      #expect(result.matchedEpochs == result.gpsdPositions, "\(result.summary)")
    }
    let explained = Self.explainedPositions[log] ?? [:]
    #expect(
      (result.compared.values.reduce(0, +) > 0) == Self.logsWithGeodeticPositions.contains(log))
    for (kind, compared) in result.compared {
      let agreeing = result.agreeing[kind] ?? 0
      guard let known = explained[kind] else {
        #expect(agreeing == compared, "\(log) \(kind): \(result.disagreements)")
        continue
      }
      // Each explained difference is what its reason says: that many epochs, that close.
      #expect(compared - agreeing == known.epochs, "\(log) \(kind): \(known.reason)")
      #expect(result.largestDifference[kind, default: 0] <= known.tolerance, "\(log) \(kind)")
    }
  }
}
