import Testing

@testable import Chipsets

@Suite("u-blox commands")
struct UbloxCommandTests {
  // u-blox 8 / u-blox M8 Receiver Description incl. Protocol Specification (UBX-13003221),
  // UBX-CFG-RST (0x06 0x04): navBbrMask 0x0000 (hot start), resetMode 0x08 controlled GNSS
  // stop / 0x09 controlled GNSS start. The frames are u-center's own output, quoted in the
  // ESP-IDF MJD NEO-M8N component README ("ucenter GNSS=stop/start").
  @Test("GNSS stop and start")
  func gnssStopStart() {
    #expect(UbloxCommandSet.gnssStop.bytes == hexBytes("B5 62 06 04 04 00 00 00 08 00 16 74"))
    #expect(UbloxCommandSet.gnssStart.bytes == hexBytes("B5 62 06 04 04 00 00 00 09 00 17 76"))
    #expect(UbloxCommandSet.gnssStop.acknowledgement == .none)  // CFG-RST is never acknowledged
    #expect(UbloxCommandSet.gnssStart.acknowledgement == .none)
  }

  // UBX-RXM-PMREQ (0x02 0x41), 8-byte form: duration 0 (infinite), flags backup (bit 1).
  // u-center output in the same README ("Version=0 Duration=0 Action=2").
  @Test("backup request, u-blox 8 and older")
  func backupM8() {
    let set = UbloxCommandSet(UbloxOptions(generation: .m8AndOlder, port: .uart1))
    #expect(set.powerOffSteps == [set.backupRequest])
    #expect(
      set.backupRequest.bytes == hexBytes("B5 62 02 41 08 00 00 00 00 00 02 00 00 00 4D 3B"))
  }

  // UBX-RXM-PMREQ 16-byte form (u-blox ZED-F9P Interface Description UBX-18010854 R04,
  // §5.15.2): version 0, reserved U1[3], duration U4 = 0, flags X4 = backup | force (0x06),
  // wakeupSources X4 = uartrx (0x08). Payload as meshtastic/firmware src/gps/ubx.h
  // `_message_PMREQ_10`; checksum by the independent Fletcher.
  @Test("backup request, u-blox 9 and later")
  func backupM9() {
    let set = UbloxCommandSet(UbloxOptions(generation: .m9AndLater, port: .uart1))
    let payload = hexBytes("00 00 00 00  00 00 00 00  06 00 00 00  08 00 00 00")
    #expect(set.backupRequest.bytes == referenceUBX(0x02, 0x41, payload))
    #expect(set.backupRequest.bytes.suffix(2) == [0x61, 0x6B])  // worked out by hand in Python too
  }

  // UBX-CFG-MSG (0x06 0x01), 3-byte "current port" form: msgClass 0xF0 (NMEA), msgID, rate.
  // Frames as a u-center session log lists them (blog.csdn.net, JohnnyTim, 124670594).
  @Test(
    "CFG-MSG enabling each sentence",
    arguments: [
      (NMEASentenceType.gga, "B5 62 06 01 03 00 F0 00 01 FB 10"),
      (.gll, "B5 62 06 01 03 00 F0 01 01 FC 12"), (.gsa, "B5 62 06 01 03 00 F0 02 01 FD 14"),
      (.gsv, "B5 62 06 01 03 00 F0 03 01 FE 16"), (.rmc, "B5 62 06 01 03 00 F0 04 01 FF 18"),
      (.vtg, "B5 62 06 01 03 00 F0 05 01 00 1A"), (.zda, "B5 62 06 01 03 00 F0 08 01 03 20"),
    ])
  func cfgMsg(sentence: NMEASentenceType, vector: String) throws {
    let set = UbloxCommandSet(UbloxOptions(sentences: NMEASelection([sentence])))
    let step = try #require(set.selectionSteps.first)
    #expect(set.selectionSteps.count == 1)
    #expect(step.bytes == hexBytes(vector))
    #expect(step.acknowledgement == .ubx(.cfgMsg))
  }

  // UBX-CFG-VALSET (0x06 0x8A), version 0, layers RAM (0x01), reserved; key U4 + value U1.
  // Keys CFG-MSGOUT-NMEA_ID_*_UART1 from the ZED-F9P Interface Description (UBX-18010854).
  // "GGA, RMC on, RAM layer" is u-center output quoted in meshtastic/firmware src/gps/ubx.h;
  // "GLL on" in a NEO-M9N how-to (u-center "Generation 9 Configuration View" commands).
  @Test("CFG-VALSET selecting sentences, published frames")
  func valsetPublished() throws {
    let ggaRmc = UbloxCommandSet(
      UbloxOptions(generation: .m9AndLater, port: .uart1, sentences: NMEASelection([.rmc, .gga])))
    #expect(
      ggaRmc.selectionSteps.map(\.bytes)
        == [hexBytes("b5 62 06 8a 0e 00 00 01 00 00 bb 00 91 20 01 ac 00 91 20 01 6a 8f")])
    let gll = UbloxCommandSet(
      UbloxOptions(generation: .m9AndLater, port: .uart1, sentences: NMEASelection([.gll])))
    #expect(
      gll.selectionSteps.map(\.bytes)
        == [hexBytes("b5 62 06 8a 09 00 00 01 00 00 ca 00 91 20 01 16 17")])
    #expect(gll.selectionSteps.first?.acknowledgement == .ubx(.cfgValset))
  }

  @Test("CFG-VALSET for the standard selection, UART1 and USB")
  func valsetStandard() {
    func payload(_ keys: [UInt32]) -> [UInt8] {
      var bytes: [UInt8] = [0x00, 0x01, 0x00, 0x00]
      for key in keys {
        bytes += [
          UInt8(key & 0xFF), UInt8(key >> 8 & 0xFF), UInt8(key >> 16 & 0xFF), UInt8(key >> 24),
        ]
        bytes.append(1)
      }
      return bytes
    }
    let uart = UbloxCommandSet(UbloxOptions(generation: .m9AndLater, port: .uart1))
    let usb = UbloxCommandSet(UbloxOptions(generation: .m9AndLater, port: .usb))
    // GGA, GSA, GSV, RMC: UART1 keys …BB, …C0, …C5, …AC; USB keys …BD, …C2, …C7, …AE.
    #expect(
      uart.selectionSteps.map(\.bytes)
        == [
          referenceUBX(0x06, 0x8A, payload([0x2091_00BB, 0x2091_00C0, 0x2091_00C5, 0x2091_00AC]))
        ])
    #expect(
      usb.selectionSteps.map(\.bytes)
        == [
          referenceUBX(0x06, 0x8A, payload([0x2091_00BD, 0x2091_00C2, 0x2091_00C7, 0x2091_00AE]))
        ])
  }

  // Every key, both ports, against SparkFun's u-blox_config_keys.h (generated from the
  // u-blox interface descriptions): UART1 and USB columns.
  @Test("CFG-MSGOUT keys for every sentence")
  func messageOutputKeys() {
    let expected: [(NMEASentenceType, UInt32, UInt32)] = [
      (.dtm, 0x2091_00A7, 0x2091_00A9), (.gbs, 0x2091_00DE, 0x2091_00E0),
      (.gga, 0x2091_00BB, 0x2091_00BD), (.gll, 0x2091_00CA, 0x2091_00CC),
      (.gns, 0x2091_00B6, 0x2091_00B8), (.grs, 0x2091_00CF, 0x2091_00D1),
      (.gsa, 0x2091_00C0, 0x2091_00C2), (.gst, 0x2091_00D4, 0x2091_00D6),
      (.gsv, 0x2091_00C5, 0x2091_00C7), (.rmc, 0x2091_00AC, 0x2091_00AE),
      (.vtg, 0x2091_00B1, 0x2091_00B3), (.zda, 0x2091_00D9, 0x2091_00DB),
    ]
    #expect(expected.count == NMEASentenceType.allCases.count)
    for (sentence, uart1, usb) in expected {
      #expect(UbloxCommandSet.messageOutputKey(sentence, port: .uart1) == uart1, "\(sentence)")
      #expect(UbloxCommandSet.messageOutputKey(sentence, port: .usb) == usb, "\(sentence)")
    }
  }

  @Test("USB: GNSS stop by default, no wake burst")
  func usbSequence() {
    let set = UbloxCommandSet(UbloxOptions(port: .usb))
    #expect(set.options.powerOffMode == .gnssStop)
    #expect(set.powerOffSteps == [UbloxCommandSet.gnssStop])
    #expect(set.powerOnSteps == set.selectionSteps + [UbloxCommandSet.gnssStart])
    #expect(set.powerOnSteps.count == 5)  // four CFG-MSG, then GNSS start
    #expect(set.powerProfile.offState == .gnssStopped)
    #expect(set.powerProfile.hotStartMilliseconds == 1000)
  }

  @Test("UART: backup by default, woken by a burst of 0xFF and a settle time")
  func uartSequence() throws {
    let set = UbloxCommandSet(UbloxOptions(generation: .m9AndLater, port: .uart1))
    #expect(set.options.powerOffMode == .backup)
    let wake = try #require(set.powerOnSteps.first)
    #expect(wake.bytes == [UInt8](repeating: 0xFF, count: 8))
    #expect(wake.acknowledgement == .none)
    #expect(wake.settleMilliseconds == 500)
    #expect(Array(set.powerOnSteps.dropFirst()) == set.selectionSteps + [UbloxCommandSet.gnssStart])
    #expect(set.powerProfile.offState == .backup)
    #expect(set.powerProfile.hotStartMilliseconds == 2000)
  }

  @Test("the wake burst is garbage to a framer and hides no frame after it")
  func wakeBurstIsHarmless() {
    let framed = Framed(UbloxCommandSet.wakeBurst + UbloxCommandSet.gnssStart.bytes)
    #expect(framed.ubx == [.cfgRst])
    #expect(framed.garbage == UbloxCommandSet.wakeBurst.count)
  }
}

@Suite("MediaTek commands")
struct MediaTekCommandTests {
  // MediaTek PMTK command packet manual, packet type 161 PMTK_CMD_STANDBY_MODE, and its
  // acknowledgement: "$PMTK161,0*28" and "$PMTK001,161,3*36" as Adafruit_GPS defines them.
  @Test("standby")
  func standby() {
    let set = MediaTekCommandSet()
    #expect(set.powerOffSteps.map(\.bytes) == [ascii("$PMTK161,0*28\r\n")])
    #expect(set.powerOffSteps.first?.acknowledgement == .mtk(command: 161))
    #expect(
      MediaTekCommandSet.acknowledgement(command: 161, result: .succeeded)
        == ascii("$PMTK001,161,3*36\r\n"))
    #expect(set.powerProfile.offState == .standby)
    #expect(set.powerProfile.hotStartMilliseconds == 1000)
  }

  // Packet type 314 PMTK_API_SET_NMEA_OUTPUT: fields GLL, RMC, VTG, GGA, GSA, GSV, GRS, GST,
  // 5 reserved, MALM, MEPH, MDGP, MDBG, ZDA, MCHN. Adafruit_GPS's published sentences:
  // RMCONLY …*29, RMCGGA …*28, ALLDATA (GLL through GSV) …*28.
  @Test(
    "sentence selection",
    arguments: [
      ([NMEASentenceType.rmc], "$PMTK314,0,1,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0*29"),
      ([.rmc, .gga], "$PMTK314,0,1,0,1,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0*28"),
      ([.gll, .rmc, .vtg, .gga, .gsa, .gsv], "$PMTK314,1,1,1,1,1,1,0,0,0,0,0,0,0,0,0,0,0,0,0*28"),
    ])
  func selection(sentences: [NMEASentenceType], expected: String) {
    let step = MediaTekCommandSet(sentences: NMEASelection(sentences)).sentenceSelection
    #expect(step.bytes == ascii(expected + "\r\n"))
    #expect(step.acknowledgement == .mtk(command: 314))
  }

  @Test("standard selection, with ZDA and GST fields; GNS has no field")
  func standardAndExtraFields() {
    #expect(
      MediaTekCommandSet().sentenceSelection.bytes
        == referenceNMEA("PMTK314,0,1,0,1,1,1,0,0,0,0,0,0,0,0,0,0,0,0,0"))
    let extra = MediaTekCommandSet(sentences: NMEASelection([.zda, .gst, .gns]))
    #expect(
      extra.sentenceSelection.bytes
        == referenceNMEA("PMTK314,0,0,0,0,0,0,0,1,0,0,0,0,0,0,0,0,0,1,0"))
    #expect(NMEASelection([.zda, .gst, .gns]).unsupported(by: .mediatek) == [.gns])
  }

  @Test("power on: a wake byte with a settle time, then the acknowledged selection")
  func powerOn() throws {
    let steps = MediaTekCommandSet().powerOnSteps
    #expect(steps.count == 2)
    let wake = try #require(steps.first)
    #expect(wake.bytes == [0x0D, 0x0A])
    #expect(wake.acknowledgement == .none)
    #expect(wake.settleMilliseconds == 200)
    #expect(steps.last == MediaTekCommandSet().sentenceSelection)
  }
}

@Suite("SiRF commands")
struct SiRFCommandTests {
  // SiRF NMEA Reference Manual (1050-0042), input message 103 Query/Rate Control:
  // $PSRF103,<msg>,<mode 0 set>,<rate s>,<cksumEnable 1>. Published sentences: GGA, GSA, GSV,
  // RMC on at 1 s in a SiRFstarIII command list (blog.csdn.net, ztl0013, 23551457); VTG on
  // in serialcs's psrf103 documentation ("$PSRF103,05,00,01,01*20").
  @Test("message rates")
  func rates() {
    let set = SiRFCommandSet(sentences: NMEASelection([.gga, .gsa, .gsv, .rmc, .vtg]))
    #expect(
      set.powerOnSteps.map(\.bytes) == [
        ascii("$PSRF103,00,00,01,01*25\r\n"), ascii("$PSRF103,02,00,01,01*27\r\n"),
        ascii("$PSRF103,03,00,01,01*26\r\n"), ascii("$PSRF103,04,00,01,01*21\r\n"),
        ascii("$PSRF103,05,00,01,01*20\r\n"),
      ])
    #expect(set.powerOnSteps.allSatisfy { $0.acknowledgement == .none })
    #expect(NMEASelection([.gns, .zda]).unsupported(by: .sirf) == [.gns])
  }

  // Input message 117 System Turn Off: "$PSRF117,16*0B" (Linx RXM-GPS-F4 manual p. 25, as
  // quoted in several drivers).
  @Test("power off does nothing unless hibernate is chosen")
  func powerOff() {
    #expect(SiRFCommandSet().powerOffSteps.isEmpty)
    #expect(SiRFCommandSet().powerProfile.offState == .running)
    let hibernate = SiRFCommandSet(powerOffMode: .hibernate)
    #expect(hibernate.powerOffSteps.map(\.bytes) == [ascii("$PSRF117,16*0B\r\n")])
    #expect(hibernate.powerProfile.offState == .hibernate)
    #expect(hibernate.powerProfile.wakesOverSerial == false)
  }
}

@Suite("Families and the safety rule")
struct FamilyTests {
  @Test("command-line names")
  func cliNames() {
    for family in ChipsetFamily.allCases {
      #expect(ChipsetFamily(cliName: family.cliName) == family)
    }
    #expect(ChipsetFamily(cliName: "MTK") == .mediatek)
    #expect(ChipsetFamily(cliName: "u-blox") == .ublox)
    #expect(ChipsetFamily(cliName: "garmin") == nil)
    #expect(ChipsetFamily.cliNames == "nmea|ublox|mtk|sirf|casic|airoha")
  }

  @Test("generic NMEA writes nothing, whatever it is asked")
  func genericSendsNothing() {
    let set = ChipsetFamily.nmea.commandSet(interface: .uart)
    #expect(set.family == .nmea)
    #expect(set.powerOnSteps.isEmpty)
    #expect(set.powerOffSteps.isEmpty)
    #expect(!ChipsetFamily.nmea.hasCommands)
    #expect(throws: ChipsetCommandError.noCommands(.nmea)) {
      try RawCommand.step("PMTK161,0", family: .nmea)
    }
  }

  @Test("the factory picks options from the connection and the identification")
  func factory() throws {
    let usb = try #require(ChipsetFamily.ublox.commandSet(interface: .usb) as? UbloxCommandSet)
    #expect(
      usb.options == UbloxOptions(generation: .m8AndOlder, port: .usb, powerOffMode: .gnssStop))
    let f9 = ChipsetIdentification(family: .ublox, confidence: .high, ubloxGeneration: .m9AndLater)
    let uart = try #require(
      ChipsetFamily.ublox.commandSet(interface: .uart, identification: f9) as? UbloxCommandSet)
    #expect(
      uart.options == UbloxOptions(generation: .m9AndLater, port: .uart1, powerOffMode: .backup))
    #expect(ChipsetFamily.mediatek.commandSet(interface: .usb) is MediaTekCommandSet)
    #expect(ChipsetFamily.sirf.commandSet(interface: .usb) is SiRFCommandSet)
  }

  @Test("selections are ordered and free of repeats")
  func selection() {
    let selection = NMEASelection([.rmc, .gga, .rmc, .gsv])
    #expect(selection.sentences == [.gga, .gsv, .rmc])
    #expect("\(selection)" == "GGA,GSV,RMC")
    #expect(NMEASelection.standard.sentences == [.gga, .gsa, .gsv, .rmc])
  }
}
