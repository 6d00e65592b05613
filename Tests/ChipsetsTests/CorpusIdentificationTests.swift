import Testing

@testable import Chipsets

@Suite("Identification of gpsd's real captures")
struct CorpusIdentificationTests {
  /// What listening alone learns from each capture. Every capture not listed must identify
  /// as nothing (generic NMEA): most receivers, u-blox and MediaTek included, send only
  /// standard sentences once they are running, and nothing in those names a chipset.
  static let expected: [String: (ChipsetFamily, IdentificationConfidence)] = [
    "mt3339.log": (.nmea, .none),  // MediaTek, NMEA only: nothing to go on
    "mtk-3301.log": (.mediatek, .high),  // $PMTK010,001 ($PMTKCHN is over 128 bytes: dropped)
    "mtk-3329.log": (.mediatek, .high),  // $PMTK705 Fastrax IT500, $PMTK001
    "nl2008u.log": (.ublox, .high),  // $GNTXT banner, PROTVER 15.00
    "nl402u.log": (.ublox, .high),  // $GPTXT banner, MOD LEA-5H-0
    "quectel-L70.log": (.mediatek, .high),  // $PMTK705 QUECTEL-L70, $PQVERNO, $PMTK001
    "sirfstarv.log": (.sirf, .high),  // SiRF binary
    "ublox-8.log": (.nmea, .none),  // its binary part is line noise, not UBX
    "ublox-lea-5h.log": (.ublox, .high),  // $GPTXT banner
    "ublox-neo-m8n.log": (.ublox, .high),  // UBX NAV-PVT, NAV-TIMEGPS, NAV-SAT
  ]

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

  @Test("every capture", .enabled(if: Corpus.shouldRun, "no corpus at /work/shared/corpus/gpsd"))
  func everyCapture() throws {
    let logs = try Corpus.logs()
    #expect(logs.count == 48)
    var identified = 0
    for log in logs {
      let id = identify(try Corpus.bytes(log))
      let (family, confidence) = Self.expected[log] ?? (.nmea, .none)
      #expect(id.family == family, "\(log): \(id)")
      #expect(id.confidence == confidence, "\(log): \(id)")
      if family != .nmea { identified += 1 }
      if let detail = Self.details[log] {
        #expect(id.model == detail.model, "\(log)")
        #expect(id.firmware == detail.firmware, "\(log)")
        #expect(id.hardware == detail.hardware, "\(log)")
        #expect(id.ubloxGeneration == detail.generation, "\(log)")
      }
      if let vendor = Self.vendors[log] {
        #expect(id.vendor == vendor, "\(log)")
        #expect(id.familyForCommands() == .nmea, "\(log)")
      }
    }
    #expect(identified == 8)
  }
}
