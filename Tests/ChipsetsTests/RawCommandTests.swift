import Testing

@testable import Chipsets

@Suite("Raw commands")
struct RawCommandTests {
  @Test(
    "NMEA commands gain $, checksum and CR LF",
    arguments: ["PMTK161,0", "$PMTK161,0", "$PMTK161,0*28", "$PMTK161,0*28\r\n", "  PMTK161,0\n"])
  func nmeaFraming(text: String) throws {
    #expect(try NMEACommand.frame(text) == ascii("$PMTK161,0*28\r\n"))
  }

  @Test("a lower-case stated checksum is accepted")
  func lowerCaseChecksum() throws {
    #expect(try NMEACommand.frame("$PSRF117,16*0b") == ascii("$PSRF117,16*0B\r\n"))
  }

  @Test("bad NMEA commands are refused with reasons")
  func nmeaErrors() {
    #expect(throws: ChipsetCommandError.checksumMismatch(stated: "29", computed: "28")) {
      try NMEACommand.frame("$PMTK161,0*29")
    }
    #expect(throws: ChipsetCommandError.checksumMismatch(stated: "2", computed: "28")) {
      try NMEACommand.frame("$PMTK161,0*2")
    }
    #expect(throws: ChipsetCommandError.empty) { try NMEACommand.frame("  $ \r\n") }
    #expect(throws: ChipsetCommandError.invalidNMEACharacter("PMTK\u{1}")) {
      try NMEACommand.frame("PMTK\u{1}")
    }
    #expect(throws: ChipsetCommandError.invalidNMEACharacter("PMTK$161")) {
      try NMEACommand.frame("PMTK$161")
    }
    #expect(throws: ChipsetCommandError.invalidNMEACharacter("PMTKé")) {
      try NMEACommand.frame("PMTKé")
    }
    #expect(throws: ChipsetCommandError.sentenceTooLong(205)) {
      try NMEACommand.frame("P" + String(repeating: "X", count: 200))
    }
  }

  @Test("MediaTek set commands expect $PMTK001, queries do not")
  func mediatekExpectations() throws {
    let standby = try RawCommand.step("PMTK161,0", family: .mediatek)
    #expect(standby.bytes == ascii("$PMTK161,0*28\r\n"))
    #expect(standby.acknowledgement == .mtk(command: 161))
    let release = try RawCommand.step("$PMTK605*31", family: .mediatek)  // Q_RELEASE → PMTK705
    #expect(release.acknowledgement == .none)
    let test = try RawCommand.step("PMTK000", family: .mediatek)
    #expect(test.bytes == ascii("$PMTK000*32\r\n"))
    #expect(test.acknowledgement == .mtk(command: 0))
  }

  @Test("SiRF commands are never acknowledged")
  func sirf() throws {
    let step = try RawCommand.step("PSRF103,00,00,01,01", family: .sirf)
    #expect(step.bytes == ascii("$PSRF103,00,00,01,01*25\r\n"))
    #expect(step.acknowledgement == .none)
  }

  @Test(
    "u-blox hex, names and whole frames",
    arguments: [
      "06 04 00 00 08 00", "0x06,0x04,0x00,0x00,0x08,0x00", "CFG-RST 00 00 08 00",
      "UBX-CFG-RST 00:00:08:00", "B5 62 06 04 04 00 00 00 08 00 16 74",
    ])
  func ubxForms(text: String) throws {
    let step = try RawCommand.step(text, family: .ublox)
    #expect(step.bytes == UbloxCommandSet.gnssStop.bytes)
    #expect(step.acknowledgement == .none)  // CFG-RST resets before it could answer
  }

  @Test("u-blox CFG messages expect UBX-ACK-ACK; PUBX goes as NMEA")
  func ubxExpectations() throws {
    let cfgMsg = try RawCommand.step("CFG-MSG F0 00 01", family: .ublox)
    #expect(cfgMsg.bytes == hexBytes("B5 62 06 01 03 00 F0 00 01 FB 10"))
    #expect(cfgMsg.acknowledgement == .ubx(.cfgMsg))
    let poll = try RawCommand.step("0A 04", family: .ublox)
    #expect(poll.bytes == UbloxCommandSet.versionQuery.bytes)
    #expect(poll.acknowledgement == .none)
    // "$PUBX,40,GLL,0,0,0,0*5C": u-blox NEO-6M command list (gist laroo/3466748…).
    let pubx = try RawCommand.step("PUBX,40,GLL,0,0,0,0", family: .ublox)
    #expect(pubx.bytes == ascii("$PUBX,40,GLL,0,0,0,0*5C\r\n"))
  }

  @Test("bad u-blox commands are refused with reasons")
  func ubxErrors() {
    #expect(throws: ChipsetCommandError.invalidUBX("06")) {
      try RawCommand.step("06", family: .ublox)
    }
    #expect(throws: ChipsetCommandError.invalidUBX("CFG-NOPE 00")) {
      try RawCommand.step("CFG-NOPE 00", family: .ublox)
    }
    #expect(throws: ChipsetCommandError.invalidUBX("06 04 zz")) {
      try RawCommand.step("06 04 zz", family: .ublox)
    }
    #expect(throws: ChipsetCommandError.checksumMismatch(stated: "16 75", computed: "16 74")) {
      try RawCommand.step("B5 62 06 04 04 00 00 00 08 00 16 75", family: .ublox)
    }
    #expect(throws: ChipsetCommandError.invalidUBX("B5 62 06 04 05 00 00 00 08 00 16 74")) {
      try RawCommand.step("B5 62 06 04 05 00 00 00 08 00 16 74", family: .ublox)
    }
    #expect(throws: ChipsetCommandError.empty) { try RawCommand.step("   ", family: .ublox) }
  }

  @Test("error messages say what to write instead")
  func messages() {
    #expect("\(ChipsetCommandError.invalidUBX("x"))".contains("CFG-RST 00 00 08 00"))
    #expect(
      "\(ChipsetCommandError.noCommands(.nmea))".contains("--chipset ublox|mtk|sirf|casic|airoha"))
    #expect("\(ChipsetCommandError.checksumMismatch(stated: "29", computed: "28"))".contains("*28"))
  }
}
