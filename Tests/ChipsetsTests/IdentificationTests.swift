import NMEA
import Testing

@testable import Chipsets

/// Feeds `bytes` through a framer into a fresh identifier.
func identify(_ bytes: [UInt8]) -> ChipsetIdentification {
  var identifier = ChipsetIdentifier()
  var framer = NMEAFramer()
  framer.feed(bytes) { identifier.observe($0) }
  return identifier.identification
}

func sentences(_ bodies: String...) -> [UInt8] {
  bodies.flatMap(referenceNMEA)
}

@Suite("Passive identification")
struct IdentificationTests {
  @Test("nothing but standard sentences identifies nothing")
  func standardSentences() {
    let id = identify(
      sentences(
        "GPGGA,123519,4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,",
        "GPRMC,123519,A,4807.038,N,01131.000,E,022.4,084.4,230394,003.1,W"))
    #expect(id.family == .nmea)
    #expect(id.confidence == .none)
    #expect(id.evidence.isEmpty)
    #expect(id.familyForCommands() == .nmea)
  }

  @Test("a u-blox 8 start-up banner: family, hardware, firmware, protocol, generation")
  func ubloxBanner() {
    // nl2008u.log's banner, re-framed.
    let id = identify(
      sentences(
        "GNTXT,01,01,02,u-blox AG - www.u-blox.com", "GNTXT,01,01,02,HW UBX-M80xx 00080000 ",
        "GNTXT,01,01,02,ROM CORE 2.01 (75331) Oct 29 2013 13:28:17",
        "GNTXT,01,01,02,PROTVER 15.00"))
    #expect(id.family == .ublox)
    #expect(id.confidence == .high)
    #expect(id.hardware == "00080000")
    #expect(id.firmware == "ROM CORE 2.01 (75331)")
    #expect(id.ubloxProtocolVersion == UbloxProtocolVersion(major: 15, minor: 0))
    #expect(id.ubloxGeneration == .m8AndOlder)
    #expect(id.familyForCommands() == .ublox)
  }

  @Test("MON-VER decides M9/F9 over a banner-less stream")
  func monVerF9() {
    let bytes =
      sentences("GNGGA,,,,,,0,00,99.99,,,,,,")
      + UBX.monVer(
        software: "EXT CORE 1.00 (61b2dd)", hardware: "00190000",
        extensions: ["ROM BASE 0x118B2060", "FWVER=HPG 1.12", "PROTVER=27.11", "MOD=ZED-F9P"])
    let id = identify(bytes)
    #expect(id.family == .ublox)
    #expect(id.model == "ZED-F9P")
    #expect(id.firmware == "HPG 1.12")
    #expect(id.hardware == "00190000")
    #expect(id.ubloxGeneration == .m9AndLater)
    #expect(id.evidence.contains { $0.contains("UBX-MON-VER") })
  }

  @Test("MON-VER of a u-blox 8 without PROTVER falls back to the hardware version")
  func monVerHardwareOnly() {
    let id = identify(UBX.monVer(software: "2.01 (75350)", hardware: "00080000"))
    #expect(id.ubloxProtocolVersion == nil)
    #expect(id.ubloxGeneration == .m8AndOlder)
  }

  @Test("$PUBX alone is u-blox; any UBX frame is u-blox")
  func pubxAndFrames() {
    #expect(
      identify(
        sentences(
          "PUBX,00,081350.00,4717.113210,N,00833.915187,E,546.589,G3,2.1,2.0,0.007,77.52,"
            + "0.007,,0.92,1.19,0.77,9,0,0"
        )
      ).family == .ublox)
    let navPvt = referenceUBX(0x01, 0x07, [UInt8](repeating: 0, count: 92))
    let id = identify(navPvt)
    #expect(id.family == .ublox)
    #expect(id.confidence == .high)
    #expect(id.ubloxGeneration == nil)  // a NAV frame says nothing about the generation
  }

  @Test("$PMTK705 names a MediaTek module and its firmware")
  func pmtk705() {
    let id = identify(sentences("PMTK705,AXN_2.51_3339_19071200,0002,QUECTEL-L70,1.0"))
    #expect(id.family == .mediatek)
    #expect(id.confidence == .high)
    #expect(id.model == "QUECTEL-L70")
    #expect(id.vendor == "Quectel")
    #expect(id.firmware == "AXN_2.51_3339_19071200 build 0002")
  }

  @Test("$PMTK010 and $PMTK001 are MediaTek")
  func pmtkMessages() {
    #expect(identify(sentences("PMTK010,001")).family == .mediatek)
    #expect(identify(sentences("PMTK001,604,1")).family == .mediatek)
  }

  @Test("Quectel's own sentences are a low-confidence hint, not enough to send commands")
  func quectelHints() {
    let pqtm = identify(sentences("PQTMVERNO,LC29HDANR01A03S,2022/06/10,18:23:45"))
    #expect(pqtm.family == .mediatek)
    #expect(pqtm.confidence == .low)
    #expect(pqtm.familyForCommands() == .nmea)
    let verno = identify(sentences("PQVERNO,R,L70BGR03A05S,2019/10/09,21:12"))
    #expect(verno.model == "L70")
    #expect(verno.confidence == .low)
    // The EG25-G cellular modem's $PQGSV is Quectel, but not MediaTek.
    let modem = identify(sentences("PQGSV,1,1,01,11,,,27,1"))
    #expect(modem.family == .nmea)
    #expect(modem.vendor == "Quectel")
  }

  @Test("$PSRF and SiRF binary are SiRF; message 6 names the firmware")
  func sirf() {
    #expect(identify(sentences("PSRF150,1")).family == .sirf)
    let payload: [UInt8] = [0x06] + ascii("GSD4e_4.1.2-P1_RPATCH.04") + [0x00]
    var frame: [UInt8] = [0xA0, 0xA2, 0x00, UInt8(payload.count)] + payload
    let sum = payload.reduce(0) { $0 + Int($1) } & 0x7FFF
    frame += [UInt8(sum >> 8), UInt8(sum & 0xFF), 0xB0, 0xB3]
    let id = identify(frame)
    #expect(id.family == .sirf)
    #expect(id.firmware == "GSD4e_4.1.2-P1_RPATCH.04")
  }

  @Test("conflicting high evidence identifies nothing")
  func conflict() {
    let id = identify(sentences("PMTK010,001", "PSRF150,1"))
    #expect(id.family == .nmea)
    #expect(id.confidence == .none)
    #expect(id.evidence.last?.contains("conflicting") == true)
  }

  @Test("a strong family wins over a weak hint for another")
  func strongBeatsWeak() {
    let id = identify(sentences("PQTMVERNO,X", "GPTXT,01,01,02,u-blox ag - www.u-blox.com"))
    #expect(id.family == .ublox)
  }

  @Test("other makers are named without a family")
  func otherVendors() {
    #expect(identify(sentences("PGRMT,GPS 15x-W software ver. 4.20,,,,,,,")).vendor == "Garmin")
    // Garmin sentences the parser types (error estimates, altitude, datum) name it too.
    #expect(identify(sentences("PGRME,7.6,M,41.9,M,42.6,M")).vendor == "Garmin")
    #expect(identify(sentences("PGRMZ,1577,f,3")).vendor == "Garmin")
    #expect(identify(sentences("PGRMM,WGS 84")).vendor == "Garmin")
    #expect(identify(sentences("PSTMCPU,39.30,-1,49")).vendor == "STMicroelectronics")
    #expect(identify(sentences("PSTI,030,,V,,,,,,,,,,,,,,")).family == .nmea)
  }

  @Test("evidence stays bounded however long the stream")
  func boundedEvidence() {
    var identifier = ChipsetIdentifier()
    var framer = NMEAFramer()
    for index in 0..<500 {
      framer.feed(referenceNMEA("PMTK\(100 + index % 300)")) { identifier.observe($0) }
    }
    #expect(identifier.identification.evidence.count <= ChipsetIdentifier.evidenceLimit)
    #expect(identifier.identification.family == .mediatek)
  }

  @Test("how GGA is written hints at MediaTek or SiRF, never more, and only when consistent")
  func formatHabits() {
    let mediatek = (1...3).map {
      "GPGGA,10212\($0).000,5129.0623,N,00632.2911,E,1,4,1.31,29.7,M,47.4,M,,"
    }
    let hinted = identify(sentences(mediatek[0], mediatek[1], mediatek[2]))
    #expect(hinted.family == .mediatek)
    #expect(hinted.confidence == .low)
    #expect(hinted.familyForCommands() == .nmea)  // a hint chooses no commands
    #expect(identify(sentences(mediatek[0], mediatek[1])).confidence == .none)  // too few
    let sirf = (1...3).map {
      "GPGGA,03071\($0).000,3747.0873,S,17518.8938,E,1,08,1.1,59.9,M,23.7,M,,0000"
    }
    #expect(identify(sentences(sirf[0], sirf[1], sirf[2])).family == .sirf)
    // SkyTraq writes GGA as SiRF does, and RMC's speed with one decimal: no hint.
    let skytraq = "GPRMC,170958.972,A,5200.8499,N,00421.7860,E,000.0,000.0,120610,,,A"
    #expect(identify(sentences(skytraq, sirf[0], sirf[1], sirf[2])).confidence == .none)
    // Both styles seen: no hint. Epochs without a fix do not count.
    #expect(identify(sentences(mediatek[0], sirf[0], mediatek[1], mediatek[2])).confidence == .none)
    let noFix = "GPGGA,102121.000,5129.0623,N,00632.2911,E,0,4,1.31,29.7,M,47.4,M,,"
    #expect(identify(sentences(noFix, noFix, noFix)).confidence == .none)
    // u-blox's own format names nothing (SkyTraq's Venus 6 copies it).
    let ublox = "GPGGA,143252.00,4002.10513,N,07531.20562,W,1,07,1.72,183.8,M,-34.4,M,,"
    #expect(identify(sentences(ublox, ublox, ublox, ublox)).confidence == .none)
    // A banner outranks the habit.
    let banner = "GPTXT,01,01,02,u-blox ag - www.u-blox.com"
    #expect(identify(sentences(sirf[0], sirf[1], sirf[2], banner)).family == .ublox)
  }
}
