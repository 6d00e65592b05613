import Foundation
import NMEA
import Testing

@testable import Chipsets

/// What listening alone learns from each of gpsd's real captures (both corpora), and after how
/// many bytes: the figures of docs/chipsets.md, fixed here so that a change that identifies
/// less, later or wrongly fails.
@Suite("Identification of gpsd's real captures")
struct CorpusIdentificationTests {
  /// What each capture is, from its header (`# Chipset:`, `# Name:`): the family whose
  /// commands it takes, `.nmea` for makers the driver has none for.
  static let truth: [String: ChipsetFamily] = {
    var truth: [String: ChipsetFamily] = [:]
    for name in [
      "gr601-w", "jl-micro-jlt", "neo-m8n", "nl2008u", "nl402u", "rx210", "ublox-8",
      "ublox-lea-4h", "ublox-lea-5h", "ublox-neo-m8n", "ublox-zed-f9p-nmea",
    ] { truth[name + ".log"] = .ublox }
    for name in ["bt-q818", "mt3339", "mtk-3301", "mtk-3329", "quectel-L70", "tr737A+"] {
      truth[name + ".log"] = .mediatek
    }
    for name in [
      "bu353-glonass", "bu353s4", "gpslim236", "haicom-305N", "holux-gm-210", "nd-1005",
      "nokia-ld-4w", "sirfstarv-nmea", "sirfstarv",
    ] { truth[name + ".log"] = .sirf }
    return truth
  }()

  /// What listening learns: the family and how sure, the bytes read when the family was sure
  /// enough for commands, and when it was first hinted. Captures not listed identify nothing.
  struct Expected: Sendable {
    var family: ChipsetFamily
    var confidence: IdentificationConfidence
    /// Bytes of the capture read (its header left out) when commands could first be chosen.
    var bytesToCommands: Int?
    /// Bytes read when the family was first named, however weakly.
    var bytesToHint: Int
  }

  static let expected: [String: Expected] = [
    "bt-q818.log": Expected(
      family: .mediatek, confidence: .low, bytesToCommands: nil, bytesToHint: 911),
    "bu353-glonass.log": Expected(
      family: .mediatek, confidence: .low, bytesToCommands: nil, bytesToHint: 821),
    "bu353s4.log": Expected(
      family: .sirf, confidence: .low, bytesToCommands: nil, bytesToHint: 475),
    "gpslim236.log": Expected(
      family: .sirf, confidence: .low, bytesToCommands: nil, bytesToHint: 678),
    "mt3339.log": Expected(
      family: .mediatek, confidence: .low, bytesToCommands: nil, bytesToHint: 592),
    "mtk-3301.log": Expected(
      family: .mediatek, confidence: .high, bytesToCommands: 16, bytesToHint: 16),
    "mtk-3329.log": Expected(
      family: .mediatek, confidence: .high, bytesToCommands: 426, bytesToHint: 426),
    "nd-1005.log": Expected(
      family: .sirf, confidence: .low, bytesToCommands: nil, bytesToHint: 636),
    "nl2008u.log": Expected(
      family: .ublox, confidence: .high, bytesToCommands: 46, bytesToHint: 46),
    "nl402u.log": Expected(family: .ublox, confidence: .high, bytesToCommands: 46, bytesToHint: 46),
    "nokia-ld-4w.log": Expected(
      family: .sirf, confidence: .low, bytesToCommands: nil, bytesToHint: 670),
    "quectel-L70.log": Expected(
      family: .mediatek, confidence: .high, bytesToCommands: 775, bytesToHint: 775),
    "sirfstarv-nmea.log": Expected(
      family: .sirf, confidence: .low, bytesToCommands: nil, bytesToHint: 401),
    "sirfstarv.log": Expected(
      family: .sirf, confidence: .high, bytesToCommands: 206, bytesToHint: 206),
    "tr737A+.log": Expected(
      family: .mediatek, confidence: .low, bytesToCommands: nil, bytesToHint: 1221),
    "ublox-lea-5h.log": Expected(
      family: .ublox, confidence: .high, bytesToCommands: 46, bytesToHint: 46),
    "ublox-neo-m8n.log": Expected(
      family: .ublox, confidence: .high, bytesToCommands: 103, bytesToHint: 103),
    "u-blox-m8t-time.log": Expected(
      family: .ublox, confidence: .high, bytesToCommands: 481, bytesToHint: 481),
    "ublox-8-time.log": Expected(
      family: .ublox, confidence: .high, bytesToCommands: 61, bytesToHint: 61),
    "ublox-aek-4t.log": Expected(
      family: .ublox, confidence: .high, bytesToCommands: 34, bytesToHint: 34),
    "ublox-f9p-rtcm.log": Expected(
      family: .ublox, confidence: .high, bytesToCommands: 617, bytesToHint: 617),
    "ublox-lea-4t.log": Expected(
      family: .ublox, confidence: .high, bytesToCommands: 34, bytesToHint: 34),
    "ublox-lea-m8f.log": Expected(
      family: .ublox, confidence: .high, bytesToCommands: 228, bytesToHint: 228),
    "ublox-neo-f9v.log": Expected(
      family: .ublox, confidence: .high, bytesToCommands: 100, bytesToHint: 100),
    "ublox-neo-m8l.log": Expected(
      family: .ublox, confidence: .high, bytesToCommands: 42, bytesToHint: 42),
    "ublox-neo-m8p.log": Expected(
      family: .ublox, confidence: .high, bytesToCommands: 698, bytesToHint: 698),
    "ublox-neo-m8t.log": Expected(
      family: .ublox, confidence: .high, bytesToCommands: 440, bytesToHint: 440),
    "ublox-neo-m8u.log": Expected(
      family: .ublox, confidence: .high, bytesToCommands: 1208, bytesToHint: 1208),
    "ublox-zed-f9p-hp.log": Expected(
      family: .ublox, confidence: .high, bytesToCommands: 100, bytesToHint: 100),
    "ublox-zed-f9r.log": Expected(
      family: .ublox, confidence: .high, bytesToCommands: 1448, bytesToHint: 1448),
    "ublox-zoe-m8b-logbatch.log": Expected(
      family: .ublox, confidence: .high, bytesToCommands: 20, bytesToHint: 20),
    // The two L76K captures (corpus/gpsd-casic): the `$GPTXT,01,01,01,ANTENNA OK` line the
    // firmware writes unasked, first in the binary capture and after the first epoch's NMEA
    // in the dual one.
    "quectel-l76k-binary.log": Expected(
      family: .casic, confidence: .medium, bytesToCommands: 31, bytesToHint: 31),
    "quectel-l76k-dual.log": Expected(
      family: .casic, confidence: .medium, bytesToCommands: 914, bytesToHint: 914),

  ]

  /// Where the hint disagrees with the header, and why it is left so.
  static let explainedDisagreements: [String: String] = [
    // A hint, never commands: the header says SiRF-III, which tracks no GLONASS; the capture
    // tracks GLONASS and writes GGA and its talkers (GPGGA, GNRMC, GNGSA) as MediaTek's
    // MT3333 does. Either the header or the habit is wrong; a hint is all it gives.
    "bu353-glonass.log": "GGA written as MediaTek firmware writes it, header says SiRF-III"
  ]

  struct Measured: Sendable {
    var identification: ChipsetIdentification
    var bytesToCommands: Int?
    var bytesToHint: Int?
  }

  /// Feeds the capture a byte at a time, as a reader might get it, noting when the
  /// identification first allows commands and first names a family.
  static func measure(_ bytes: [UInt8]) -> Measured {
    var identifier = ChipsetIdentifier()
    var framer = NMEAFramer()
    var revision = identifier.revision
    var commands: Int?
    var hint: Int?
    for (index, byte) in bytes.enumerated() {
      framer.feed(CollectionOfOne(byte)) { identifier.observe($0) }
      guard identifier.revision != revision else { continue }
      revision = identifier.revision
      let id = identifier.identification
      if hint == nil, id.confidence > .none { hint = index + 1 }
      if commands == nil, id.familyForCommands().hasCommands { commands = index + 1 }
    }
    return Measured(
      identification: identifier.identification, bytesToCommands: commands, bytesToHint: hint)
  }

  static func captures() throws -> [(corpus: String, name: String, bytes: [UInt8])] {
    var all: [(String, String, [UInt8])] = []
    for (corpus, directory) in [
      ("gpsd", Corpus.directory), ("gpsd-ubx", Corpus.ubxDirectory),
      ("gpsd-casic", Corpus.casicDirectory),
    ] {
      for name in try Corpus.logs(in: directory) {
        all.append((corpus, name, try Corpus.bytes(name, in: directory)))
      }
    }
    return all
  }

  /// What a decoder's user learns through ``ChipsetIdentifier/observe(event:)`` (`serialgps
  /// send`, which reads decoded events, not frames).
  static func identifiedFromEvents(_ bytes: [UInt8]) -> ChipsetIdentification {
    var identifier = ChipsetIdentifier()
    var decoder = NMEADecoder()
    decoder.decode(bytes) { identifier.observe(event: $0) }
    decoder.finish { identifier.observe(event: $0) }
    return identifier.identification
  }

  @Test("decoded events identify each capture's family as its frames do")
  func eventsAsFrames() throws {
    let captures = try Self.captures()
    var checked = 0
    for capture in captures {
      let framed = Self.measure(capture.bytes).identification
      guard framed.confidence >= .medium else { continue }
      let decoded = Self.identifiedFromEvents(capture.bytes)
      #expect(decoded.family == framed.family, "\(capture.corpus)/\(capture.name)")
      #expect(decoded.confidence >= .medium, "\(capture.corpus)/\(capture.name)")
      checked += 1
    }
    // u-blox, MediaTek and SiRF from sentences, u-blox from UBX and SiRF from its binary
    // frames; the L76K from its text (its binary frames carry no evidence of their own).
    #expect(checked >= 20)
    #expect(
      captures.contains {
        $0.corpus == "gpsd-casic" && Self.identifiedFromEvents($0.bytes).family == .casic
      })
  }

  @Test("every capture")
  func everyCapture() throws {
    let captures = try Self.captures()
    #expect(captures.filter { $0.corpus == "gpsd" }.count == 48)
    #expect(captures.filter { $0.corpus == "gpsd-ubx" }.count == 14)
    #expect(captures.filter { $0.corpus == "gpsd-casic" }.count == 2)
    var report: [String] = []
    for capture in captures {
      let measured = Self.measure(capture.bytes)
      let id = measured.identification
      let truth =
        capture.corpus == "gpsd-ubx"
        ? ChipsetFamily.ublox
        : capture.corpus == "gpsd-casic" ? ChipsetFamily.casic : Self.truth[capture.name] ?? .nmea
      report.append(
        "\(capture.corpus)/\(capture.name) truth=\(truth.cliName) id=\(id.family.cliName) "
          + "\(id.confidence) commands=\(measured.bytesToCommands.map(String.init) ?? "-") "
          + "hint=\(measured.bytesToHint.map(String.init) ?? "-") size=\(capture.bytes.count) "
          + "model=\(id.model ?? "-") firmware=\(id.firmware ?? "-") vendor=\(id.vendor ?? "-")")
      guard let expected = Self.expected[capture.name] else {
        #expect(id.confidence == .none, "\(capture.name): \(id)")
        #expect(id.family == .nmea, "\(capture.name): \(id)")
        continue
      }
      #expect(id.family == expected.family, "\(capture.name): \(id)")
      #expect(id.confidence == expected.confidence, "\(capture.name): \(id)")
      #expect(measured.bytesToCommands == expected.bytesToCommands, "\(capture.name)")
      #expect(measured.bytesToHint == expected.bytesToHint, "\(capture.name)")
      // Never wrong, or wrong for a reason written down.
      if id.family != truth {
        #expect(Self.explainedDisagreements[capture.name] != nil, "\(capture.name): \(id)")
      }
      // Commands only where the family is right.
      if id.familyForCommands().hasCommands { #expect(id.family == truth, "\(capture.name)") }
    }
    print(report.joined(separator: "\n"))
  }

  static let details:
    [String: (model: String?, firmware: String?, hardware: String?, generation: UbloxGeneration?)] =
      [
        "mtk-3329.log": ("Fastrax IT500", "AXN_1.30 build 0145", nil, nil),
        "nl2008u.log": (nil, "ROM CORE 2.01 (75331)", "00080000", .m8AndOlder),
        "nl402u.log": ("LEA-5H-0", "EXT CORE 5.00 (28483)", "00040005", .m8AndOlder),
        "quectel-L70.log": ("QUECTEL-L70", "AXN_2.51_3339_19071200 build 0002", nil, nil),
        "ublox-lea-5h.log": ("LEA-5H-0", "EXT CORE 6.00 (33247)", "00040005", .m8AndOlder),
        "ublox-neo-m8n.log": (nil, nil, nil, nil),
      ]

  static let vendors: [String: String] = [
    "garmin15x.log": "Garmin", "garmin17n.log": "Garmin", "skytraq.log": "SkyTraq",
    "skytraq-fix.log": "SkyTraq", "st-teseo-liv3f.log": "STMicroelectronics",
    "quectel-eg25-g.log": "Quectel", "quectel-eg25-g-2.log": "Quectel",
  ]

  @Test(
    "what the banners and version answers name")
  func details() throws {
    for (log, detail) in Self.details {
      let id = identify(try Corpus.bytes(log))
      #expect(id.model == detail.model, "\(log)")
      #expect(id.firmware == detail.firmware, "\(log)")
      #expect(id.hardware == detail.hardware, "\(log)")
      #expect(id.ubloxGeneration == detail.generation, "\(log)")
    }
    for (log, vendor) in Self.vendors {
      let id = identify(try Corpus.bytes(log))
      #expect(id.vendor == vendor, "\(log)")
      #expect(id.familyForCommands() == .nmea, "\(log)")
    }
  }
}
