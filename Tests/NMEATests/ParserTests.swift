import Foundation
import NMEA
import Testing

@Suite("Parser")
struct ParserTests {
  // MARK: Standard sentences

  @Test("GGA: time with fraction, exact position, quality, satellites, DOP, altitudes, DGPS")
  func gga() throws {
    let sentence = try parse(
      "$GNGGA,092725.00,4717.11399,N,00833.91590,E,4,08,1.01,499.6,M,48.0,M,1.5,0136")
    guard case .gga(let gga) = sentence else { Issue.record("not GGA: \(sentence)"); return }
    #expect(gga.talker == .gn)
    #expect(gga.time == UTCTime(hour: 9, minute: 27, second: 25))
    let position = try #require(gga.position)
    #expect(
      position.latitude
        == Coordinate(degrees: 47, scaledMinutes: 1_711_399, fractionDigits: 5, isNegative: false))
    #expect(
      position.longitude
        == Coordinate(degrees: 8, scaledMinutes: 3_391_590, fractionDigits: 5, isNegative: false))
    #expect(gga.quality == .rtkFixed)
    #expect(gga.satellitesUsed == 8)
    #expect(gga.hdop == 1.01)
    #expect(gga.altitudeMSL == 499.6)
    #expect(gga.geoidSeparation == 48.0)
    #expect(gga.differentialAge == 1.5)
    #expect(gga.differentialStation == 136)
  }

  @Test("GGA without a fix: every empty field is nil, never 0 (no fix at 0°,0°)")
  func ggaEmpty() throws {
    guard case .gga(let gga) = try parse("$GPGGA,,,,,,0,,,,,,,,") else { Issue.record(); return }
    #expect(gga.time == nil)
    #expect(gga.position == nil)
    #expect(gga.quality == .invalid)
    #expect(gga.satellitesUsed == nil && gga.hdop == nil && gga.altitudeMSL == nil)
    #expect(
      gga.geoidSeparation == nil && gga.differentialAge == nil && gga.differentialStation == nil)
  }

  @Test("a latitude without its hemisphere, or a longitude missing, gives no position")
  func halfPosition() throws {
    guard case .gga(let a) = try parse("$GPGGA,120000,4807.038,,01131.000,E,1,08,0.9,545.4,M,,M,,")
    else { Issue.record(); return }
    #expect(a.position == nil)
    guard case .rmc(let b) = try parse("$GPRMC,120000,A,4807.038,N,,,0.0,,230394,,,A") else {
      Issue.record(); return
    }
    #expect(b.position == nil)
  }

  @Test(
    "RMC: status, position, speed in knots, course, date, variation, NMEA 2.3 mode, 4.10 nav status"
  )
  func rmc() throws {
    let text = "$GNRMC,083559.00,A,4717.11437,S,00833.91522,W,0.004,77.52,091202,2.5,W,D,V"
    guard case .rmc(let rmc) = try parse(text) else { Issue.record(); return }
    #expect(rmc.talker == .gn)
    #expect(rmc.time == UTCTime(hour: 8, minute: 35, second: 59))
    #expect(rmc.isValid == true)
    #expect(rmc.position?.latitude.isNegative == true)
    #expect(rmc.position?.longitude.isNegative == true)
    #expect(rmc.speedKnots == 0.004)
    #expect(rmc.course == 77.52)
    #expect(rmc.date == UTCDate(year: 2002, month: 12, day: 9))
    #expect(rmc.magneticVariation == -2.5)
    #expect(rmc.mode == .differential)
    #expect(rmc.navigationalStatus == UInt8(ascii: "V"))
  }

  @Test("RMC from NMEA 2.0 (no mode) and an invalid one with empty fields")
  func rmcOlderAndInvalid() throws {
    guard
      case .rmc(let old) = try parse(
        "$GPRMC,225446,A,4916.45,N,12311.12,W,000.5,054.7,191194,020.3,E")
    else { Issue.record(); return }
    #expect(old.mode == nil && old.navigationalStatus == nil)
    #expect(old.magneticVariation == 20.3)
    #expect(old.date == UTCDate(year: 1994, month: 11, day: 19))
    guard case .rmc(let invalid) = try parse("$GPRMC,,V,,,,,,,,,,N") else { Issue.record(); return }
    #expect(invalid.isValid == false && invalid.time == nil && invalid.date == nil)
    #expect(invalid.position == nil && invalid.speedKnots == nil && invalid.mode == .notValid)
  }

  @Test("two-digit years are read as 1980–2079; the date is never shifted by GPS weeks")
  func twoDigitYears() throws {
    guard case .rmc(let a) = try parse("$GPRMC,000000,A,0000.000,N,00000.000,E,,,010180,,") else {
      Issue.record(); return
    }
    #expect(a.date?.year == 1980)
    guard case .rmc(let b) = try parse("$GPRMC,000000,A,0000.000,N,00000.000,E,,,311279,,") else {
      Issue.record(); return
    }
    #expect(b.date?.year == 2079)
    guard case .rmc(let c) = try parse("$GPRMC,000000,A,0000.000,N,00000.000,E,,,180315,,") else {
      Issue.record(); return
    }
    #expect(c.date == UTCDate(year: 2015, month: 3, day: 18))
  }

  @Test("GSA: selection, fix type, satellites, DOPs, and the NMEA 4.10 system ID")
  func gsa() throws {
    guard case .gsa(let old) = try parse("$GPGSA,A,3,17,28,06,01,30,20,26,13,,,,,1.8,1.1,1.5")
    else { Issue.record(); return }
    #expect(old.selectionMode == UInt8(ascii: "A"))
    #expect(old.fixMode == .threeD)
    #expect(Array(old.satellites) == [17, 28, 6, 1, 30, 20, 26, 13])
    #expect(old.pdop == 1.8 && old.hdop == 1.1 && old.vdop == 1.5)
    #expect(old.systemID == nil)

    guard case .gsa(let new) = try parse("$GNGSA,A,3,82,66,81,,,,,,,,,,1.05,0.64,0.83,2") else {
      Issue.record(); return
    }
    #expect(Array(new.satellites) == [82, 66, 81])
    #expect(new.systemID == 2)
    #expect(new.vdop == 0.83)

    guard case .gsa(let empty) = try parse("$GPGSA,A,1,,,,,,,,,,,,,,,") else {
      Issue.record(); return
    }
    #expect(empty.fixMode == .noFix && empty.satellites.isEmpty && empty.pdop == nil)
  }

  @Test("GSA with three-digit BeiDou IDs, and with more than twelve satellites")
  func gsaVariants() throws {
    guard case .gsa(let beidou) = try parse("$GNGSA,A,2,208,211,213,,,,,,,,,,1.6,1.3,0.9,4") else {
      Issue.record(); return
    }
    #expect(Array(beidou.satellites) == [208, 211, 213] && beidou.systemID == 4)
    let navior = "$GPGSA,A,3,27,23,13,07,25,,,,,,,,,,,,,,,,,,,,07.9,06.0,05.2"
    guard case .gsa(let many) = try parse(navior) else { Issue.record(); return }
    #expect(Array(many.satellites) == [27, 23, 13, 7, 25])
    #expect(many.pdop == 7.9 && many.hdop == 6.0 && many.vdop == 5.2)
  }

  @Test("GSV: message numbers, satellites with empty fields, and the NMEA 4.10 signal ID")
  func gsv() throws {
    guard
      case .gsv(let gsv) = try parse("$GPGSV,3,3,12,11,12,132,04,08,38,008,,02,35,348,,03,14,091,")
    else { Issue.record(); return }
    #expect(gsv.messageCount == 3 && gsv.messageNumber == 3 && gsv.satellitesInView == 12)
    #expect(gsv.count == 4)
    #expect(gsv[0] == SatelliteInView(id: 11, elevation: 12, azimuth: 132, snr: 4))
    #expect(gsv[1] == SatelliteInView(id: 8, elevation: 38, azimuth: 8, snr: nil))
    #expect(gsv.signalID == nil)

    guard
      case .gsv(let v410) = try parse(
        "$GAGSV,3,1,09,02,00,179,,04,09,321,,07,11,134,11,11,10,227,,7")
    else { Issue.record(); return }
    #expect(v410.talker == .ga && v410.count == 4 && v410.signalID == 7)
    // The header's optional values can be cleared and set again, each on its own; equality
    // follows the values.
    var cleared = v410
    cleared.signalID = nil
    cleared.systemID = 5
    #expect(cleared.signalID == nil && cleared.systemID == 5 && cleared.satellitesInView == 9)
    cleared.systemID = nil
    guard
      case .gsv(let without) = try parse(
        "$GAGSV,3,1,09,02,00,179,,04,09,321,,07,11,134,11,11,10,227,")
    else { Issue.record(); return }
    #expect(without.signalID == nil && cleared == without)
    #expect(cleared.hashValue == without.hashValue)
    cleared.satellitesInView = nil
    #expect(cleared.satellitesInView == nil && cleared != without)

    guard case .gsv(let short) = try parse("$GLGSV,3,3,09,88,07,028,") else {
      Issue.record(); return
    }
    #expect(Array(short) == [SatelliteInView(id: 88, elevation: 7, azimuth: 28, snr: nil)])

    guard case .gsv(let unknownPosition) = try parse("$GPGSV,3,3,11,24,,,,39,,,34,46,,,49,1") else {
      Issue.record(); return
    }
    #expect(unknownPosition[1] == SatelliteInView(id: 39, elevation: nil, azimuth: nil, snr: 34))
    #expect(unknownPosition.signalID == 1)

    guard case .gsv(let negative) = try parse("$GPGSV,1,1,01,07,-2,045,20") else {
      Issue.record(); return
    }
    #expect(negative[0].elevation == -2)
  }

  @Test("a GSV's optional fields can be set and cleared; equal values compare equal")
  func gsvSetters() throws {
    guard case .gsv(var gsv) = try parse("$GPGSV,3,3,12,11,12,132,04,08,,008,,1") else {
      Issue.record(); return
    }
    let parsed = gsv
    #expect(gsv.satellitesInView == 12 && gsv.signalID == 1 && gsv.systemID == nil)
    gsv.signalID = nil
    gsv.systemID = 0
    gsv.satellitesInView = -1
    #expect(gsv.signalID == nil && gsv.systemID == 0 && gsv.satellitesInView == -1)
    #expect(gsv != parsed && Array(gsv) == Array(parsed))
    gsv.signalID = 1
    gsv.systemID = nil
    gsv.satellitesInView = 12
    #expect(gsv == parsed && gsv.hashValue == parsed.hashValue)
    #expect(
      gsv.count == 2 && gsv[1] == SatelliteInView(id: 8, elevation: nil, azimuth: 8, snr: nil))
  }

  @Test("Quectel's $PQGSV and $PQGSA parse as GSV and GSA with their system ID")
  func quectelProprietary() throws {
    guard case .gsv(let gsv) = try parse("$PQGSV,2,1,08,02,20,116,,03,,,,05,34,137,,07,06,045,,0,4")
    else { Issue.record(); return }
    #expect(gsv.talker == .pq && gsv.count == 4 && gsv.signalID == 0 && gsv.systemID == 4)
    guard case .gsa(let gsa) = try parse("$PQGSA,A,3,12,,,,,,,,,,,,1.2,0.9,0.9,4") else {
      Issue.record(); return
    }
    #expect(gsa.talker == .pq && Array(gsa.satellites) == [12] && gsa.systemID == 4)
  }

  @Test("GLL, with and without the NMEA 2.3 mode; a GLL from before NMEA 3 has no time")
  func gll() throws {
    guard case .gll(let gll) = try parse("$GNGLL,4404.13387,N,12118.85628,W,000941.00,A,A") else {
      Issue.record(); return
    }
    #expect(gll.time == UTCTime(hour: 0, minute: 9, second: 41))
    #expect(gll.isValid == true && gll.mode == .autonomous)
    #expect(
      gll.position?.longitude
        == Coordinate(degrees: 121, scaledMinutes: 1_885_628, fractionDigits: 5, isNegative: true))
    guard case .gll(let old) = try parse("$GPGLL,4916.45,N,12311.12,W") else {
      Issue.record(); return
    }
    #expect(old.time == nil && old.isValid == nil && old.position != nil)
    guard case .gll(let invalid) = try parse("$GPGLL,,,,,031007.00,V,N") else {
      Issue.record(); return
    }
    #expect(invalid.position == nil && invalid.isValid == false && invalid.mode == .notValid)
  }

  @Test("VTG in the NMEA 2.3 layout, with empty fields, and the NMEA 1.x layout")
  func vtg() throws {
    guard case .vtg(let a) = try parse("$GPVTG,054.7,T,034.4,M,005.5,N,010.2,K,A") else {
      Issue.record(); return
    }
    #expect(a.courseTrue == 54.7 && a.courseMagnetic == 34.4)
    #expect(a.speedKnots == 5.5 && a.speedKilometresPerHour == 10.2 && a.mode == .autonomous)
    guard case .vtg(let b) = try parse("$GNVTG,,T,,M,0.029,N,0.053,K,A") else {
      Issue.record(); return
    }
    #expect(b.courseTrue == nil && b.speedKnots == 0.029)
    guard case .vtg(let c) = try parse("$GPVTG,,,,,,,,,N") else { Issue.record(); return }
    #expect(c.speedKnots == nil && c.mode == .notValid)
    guard case .vtg(let d) = try parse("$GPVTG,054.7,034.4,005.5,010.2") else {
      Issue.record(); return
    }
    #expect(
      d.courseTrue == 54.7 && d.courseMagnetic == 34.4 && d.speedKnots == 5.5
        && d.speedKilometresPerHour == 10.2)
  }

  @Test("ZDA: time, four-digit-year date, local zone")
  func zda() throws {
    guard case .zda(let zda) = try parse("$GPZDA,201530.00,04,07,2002,-05,30") else {
      Issue.record(); return
    }
    #expect(zda.time == UTCTime(hour: 20, minute: 15, second: 30))
    #expect(zda.date == UTCDate(year: 2002, month: 7, day: 4))
    #expect(zda.localZoneHours == -5 && zda.localZoneMinutes == 30)
    guard case .zda(let partial) = try parse("$GNZDA,091233.000,10,10,2015,,") else {
      Issue.record(); return
    }
    #expect(
      partial.date == UTCDate(year: 2015, month: 10, day: 10) && partial.localZoneHours == nil)
  }

  @Test("GST: error statistics in metres")
  func gst() throws {
    guard case .gst(let gst) = try parse("$GNGST,082356.00,1.8,,,,1.7,1.3,2.2") else {
      Issue.record(); return
    }
    #expect(gst.time == UTCTime(hour: 8, minute: 23, second: 56))
    #expect(gst.rangeRMS == 1.8 && gst.semiMajorError == nil && gst.orientation == nil)
    #expect(gst.latitudeError == 1.7 && gst.longitudeError == 1.3 && gst.altitudeError == 2.2)
  }

  @Test("GNS: per-system modes, satellites, altitudes, nav status")
  func gns() throws {
    let text = "$GNGNS,043539.00,4333.190206,N,00127.618380,E,AAAAN,14,1.3,250.8,50.0,,,V"
    guard case .gns(let gns) = try parse(text) else { Issue.record(); return }
    #expect(gns.modes == [.autonomous, .autonomous, .autonomous, .autonomous, .notValid])
    #expect(gns.bestMode == .autonomous)
    #expect(gns.satellitesUsed == 14 && gns.hdop == 1.3)
    #expect(gns.altitudeMSL == 250.8 && gns.geoidSeparation == 50.0)
    #expect(gns.differentialAge == nil && gns.navigationalStatus == UInt8(ascii: "V"))
    guard case .gns(let none) = try parse("$GNGNS,191435.96,,,,,NNN,,,,,,") else {
      Issue.record(); return
    }
    #expect(none.position == nil && none.bestMode == .notValid)
  }

  @Test("GBS, GRS and DTM")
  func gbsGrsDtm() throws {
    guard
      case .gbs(let gbs) = try parse("$GPGBS,112257.00,123.204,0.490,75.521,23,0.000,0.000,0.000")
    else { Issue.record(); return }
    #expect(gbs.latitudeError == 123.204 && gbs.failedSatellite == 23 && gbs.systemID == nil)
    guard case .gbs(let gbs411) = try parse("$GNGBS,170556.00,3.0,2.9,8.3,,,,,1,7") else {
      Issue.record(); return
    }
    #expect(gbs411.systemID == 1 && gbs411.signalID == 7 && gbs411.failedSatellite == nil)

    guard case .grs(let grs) = try parse("$GPGRS,112257.00,1,-0.1,-0.3,-0.1,,,,,,,,,") else {
      Issue.record(); return
    }
    #expect(grs.mode == 1)
    #expect(grs.residuals.count == 12)
    #expect(Array(grs.residuals.prefix(4)) == [-0.1, -0.3, -0.1, nil])
    #expect(grs.systemID == nil)

    guard case .dtm(let dtm) = try parse("$GPDTM,W84,,0.0,N,0.0,E,0.0,W84") else {
      Issue.record(); return
    }
    #expect(dtm.datum == "W84" && dtm.subDatum == nil && dtm.referenceDatum == "W84")
    #expect(dtm.latitudeOffset == 0 && dtm.altitudeOffset == 0)
    guard case .dtm(let offset) = try parse("$GPDTM,999,,0.08,S,0.07,W,-47.7,W84") else {
      Issue.record(); return
    }
    #expect(
      offset.latitudeOffset == -0.08 && offset.longitudeOffset == -0.07
        && offset.altitudeOffset == -47.7)
  }

  @Test("TXT keeps commas inside its text")
  func txt() throws {
    guard case .txt(let txt) = try parse("$GPTXT,01,01,02,ANTSTATUS=OK, short,open") else {
      Issue.record(); return
    }
    #expect(txt.messageCount == 1 && txt.messageNumber == 1 && txt.messageType == 2)
    #expect(txt.text == "ANTSTATUS=OK, short,open")
  }

  // MARK: Proprietary

  @Test("PUBX,00: u-blox position with HAE, accuracy, velocity")
  func pubxPosition() throws {
    let text =
      "$PUBX,00,081350.00,4717.113210,N,00833.915187,E,546.589,G3,2.1,2.0,0.007,77.52,0.007,,0.92,1.19,0.77,9,0,0"
    guard case .pubxPosition(let p) = try parse(text) else { Issue.record(); return }
    #expect(p.time == UTCTime(hour: 8, minute: 13, second: 50))
    #expect(
      p.position?.latitude
        == Coordinate(degrees: 47, scaledMinutes: 17_113_210, fractionDigits: 6, isNegative: false))
    #expect(p.altitudeHAE == 546.589)
    let g3: UInt16 = 0x4733  // "G3"
    #expect(p.navigationStatus == g3)
    #expect(p.horizontalAccuracy == 2.1 && p.verticalAccuracy == 2.0)
    #expect(
      p.speedKilometresPerHour == 0.007 && p.course == 77.52 && p.verticalVelocityDown == 0.007)
    #expect(p.differentialAge == nil && p.hdop == 0.92 && p.vdop == 1.19 && p.tdop == 0.77)
    #expect(p.satellitesUsed == 9 && p.deadReckoning == false)

    // Every optional value can be cleared and set again; equality follows the values.
    var changed = p
    changed.hdop = nil
    changed.satellitesUsed = nil
    changed.differentialAge = 1.5
    #expect(changed.hdop == nil && changed.satellitesUsed == nil && changed.differentialAge == 1.5)
    #expect(changed.vdop == 1.19 && changed.tdop == 0.77 && changed.course == 77.52)
    #expect(changed != p)
    changed.hdop = 0.92
    changed.satellitesUsed = 9
    changed.differentialAge = nil
    #expect(changed == p && changed.hashValue == p.hashValue)
  }

  @Test("PUBX,03: satellites with status and lock time")
  func pubxSatellites() throws {
    let text = "$PUBX,03,03,23,-,,,45,010,29,-,,,46,013,07,U,067,31,42,025"
    guard case .pubxSatellites(let s) = try parse(text) else { Issue.record(); return }
    #expect(s.satellites.count == 3)
    #expect(
      s.satellites[0]
        == PUBXSatellite(
          id: 23, status: UInt8(ascii: "-"), azimuth: nil, elevation: nil, snr: 45, lockTime: 10))
    #expect(
      s.satellites[2]
        == PUBXSatellite(
          id: 7, status: UInt8(ascii: "U"), azimuth: 67, elevation: 31, snr: 42, lockTime: 25))
  }

  @Test("PUBX,04: time, date, week, leap seconds (with the default marker)")
  func pubxTime() throws {
    guard
      case .pubxTime(let t) = try parse(
        "$PUBX,04,073731.00,091202,113851.00,1196,15D,1930035,-2660.664,43")
    else { Issue.record(); return }
    #expect(t.time == UTCTime(hour: 7, minute: 37, second: 31))
    #expect(t.date == UTCDate(year: 2002, month: 12, day: 9))
    #expect(t.timeOfWeek == 113_851 && t.week == 1196)
    #expect(t.leapSeconds == 15 && t.leapSecondsAreDefault)
    #expect(t.clockBias == 1_930_035 && t.clockDrift == -2660.664 && t.timePulseGranularity == 43)
    guard
      case .pubxTime(let known) = try parse(
        "$PUBX,04,073731.00,091202,113851.00,1196,18,1930035,-2660.664,43")
    else { Issue.record(); return }
    #expect(known.leapSeconds == 18 && !known.leapSecondsAreDefault)
  }

  @Test("PMTK001 acknowledgement and PMTK010/011 start-up messages")
  func mediatek() throws {
    #expect(
      try parse("$PMTK001,604,3")
        == .mtkAcknowledgement(MTKAcknowledgement(command: 604, result: .succeeded)))
    #expect(
      try parse("$PMTK001,220,1")
        == .mtkAcknowledgement(MTKAcknowledgement(command: 220, result: .unsupported)))
    #expect(try parse("$PMTK010,001") == .mtkSystemMessage(MTKSystemMessage(kind: .system(1))))
    #expect(
      try parse("$PMTK011,MTKGPS") == .mtkSystemMessage(MTKSystemMessage(kind: .text("MTKGPS"))))
    #expect(throws: NMEAParseError.badField(index: 2)) { try parse("$PMTK001,604,7") }
  }

  // MARK: Talkers and unknown sentences

  static let talkerCases: [(String, Constellation?)] = [
    ("GP", .gps), ("GL", .glonass), ("GA", .galileo), ("GB", .beidou), ("BD", .beidou),
    ("GQ", .qzss), ("QZ", .qzss), ("GI", .navic), ("GN", nil), ("II", nil), ("XY", nil),
  ]

  @Test("every talker is kept; known ones name their constellation", arguments: talkerCases)
  func talkers(talker: String, constellation: Constellation?) throws {
    guard case .gsv(let gsv) = try parse("$\(talker)GSV,1,1,01,05,40,083,46") else {
      Issue.record(); return
    }
    #expect(gsv.talker.description == talker)
    #expect(gsv.talker.constellation == constellation)
  }

  @Test("unknown sentences keep talker, address and raw fields")
  func unknown() throws {
    #expect(
      try parse("$GPHDT,274.07,T")
        == .unknown(UnknownSentence(talker: .gp, address: "GPHDT", fields: ["274.07", "T"])))
    #expect(
      try parse("$PGRMV,-2.5,-1.1,0.3")
        == .unknown(
          UnknownSentence(talker: .proprietary, address: "PGRMV", fields: ["-2.5", "-1.1", "0.3"])
        ))
    #expect(
      try parse("!AIVDM,1,1,,B,H3`lOl1<4iE@T00000000000000,2")
        == .unknown(
          UnknownSentence(
            talker: Talker(UInt8(ascii: "A"), UInt8(ascii: "I")), address: "AIVDM",
            fields: ["1", "1", "", "B", "H3`lOl1<4iE@T00000000000000", "2"])))
    #expect(
      try parse("$PUBX,41,1,0007,0003,19200,0")
        == .unknown(
          UnknownSentence(
            talker: .proprietary, address: "PUBX",
            fields: ["41", "1", "0007", "0003", "19200", "0"])))
    #expect(
      try parse("$GPXTE") == .unknown(UnknownSentence(talker: .gp, address: "GPXTE", fields: [])))
  }

  @Test(
    "a bad address throws badAddress", arguments: ["$", "$G", "$gpgga,1", "$GP GGA,1", "$GP-GA"])
  func badAddress(_ text: String) {
    #expect(throws: NMEAParseError.badAddress) { try parse(text) }
  }

  // MARK: Exact coordinates

  @Test("7–8 decimal minutes are kept exactly as scaled integers")
  func exactCoordinates() throws {
    guard
      case .gga(let gga) = try parse(
        "$GNGGA,000000,4404.12345678,N,12118.8472460,W,4,12,0.5,1000.0,M,-21.4,M,,")
    else { Issue.record(); return }
    let latitude = try #require(gga.position?.latitude)
    #expect(
      latitude.degrees == 44 && latitude.scaledMinutes == 412_345_678
        && latitude.fractionDigits == 8)
    let longitude = try #require(gga.position?.longitude)
    #expect(
      longitude.degrees == 121 && longitude.scaledMinutes == 188_472_460
        && longitude.fractionDigits == 7)
    #expect(longitude.isNegative)
    #expect(longitude.description == "-121°18.8472460'")
  }

  /// The correctly rounded `Double` of `degrees + minutes/60`, computed with Foundation's
  /// 38-digit `Decimal`, independently of the parser.
  static func reference(_ degrees: Int, _ minutes: String, negative: Bool = false) -> Double {
    let value = Decimal(degrees) + Decimal(string: minutes)! / Decimal(60)
    let double = Double(NSDecimalNumber(decimal: value).stringValue)!
    return negative ? -double : double
  }

  @Test(
    "the Double conversion is correctly rounded",
    arguments: [
      ("4404.12345678", 44, "4.12345678"), ("12118.8472460", 121, "18.8472460"),
      ("3747.0873", 37, "47.0873"), ("0000.00000001", 0, "0.00000001"),
      ("8959.99999999", 89, "59.99999999"),
      ("00833.915187", 8, "33.915187"), ("4807.038", 48, "7.038"), ("0100.5", 1, "0.5"),
    ])
  func doubleConversion(field: String, degrees: Int, minutes: String) throws {
    let isLongitude = field.split(separator: ".")[0].count == 5
    let text = isLongitude ? "$GPGLL,0000.0,N,\(field),E" : "$GPGLL,\(field),S,00000.0,E"
    guard case .gll(let gll) = try parse(text) else { Issue.record(); return }
    let coordinate = try #require(isLongitude ? gll.position?.longitude : gll.position?.latitude)
    #expect(coordinate.decimalDegrees == Self.reference(degrees, minutes, negative: !isLongitude))
  }

  @Test("eight decimal minutes tell apart what nanodegrees cannot")
  func finerThanNanodegrees() throws {
    guard case .gll(let a) = try parse("$GPGLL,4404.12345678,N,00000.0,E"),
      case .gll(let b) = try parse("$GPGLL,4404.12345679,N,00000.0,E")
    else { Issue.record(); return }
    let first = try #require(a.position?.latitude)
    let second = try #require(b.position?.latitude)
    #expect(first != second)
    #expect(first.decimalDegrees < second.decimalDegrees)
    // 1e-8 minutes is 1.67e-10 degrees: both round to the same nanodegree.
    #expect((first.decimalDegrees * 1e9).rounded() == (second.decimalDegrees * 1e9).rounded())
  }

  @Test("equal angles with different digit counts are equal and hash alike")
  func coordinateEquality() {
    let a = Coordinate(degrees: 48, scaledMinutes: 7038, fractionDigits: 3, isNegative: false)
    let b = Coordinate(degrees: 48, scaledMinutes: 70_380_000, fractionDigits: 7, isNegative: false)
    #expect(a == b && a.hashValue == b.hashValue)
    #expect(a != Coordinate(degrees: 48, scaledMinutes: 7038, fractionDigits: 3, isNegative: true))
  }

  @Test("MediaTek's no-fix latitude 89°60′ reads as the pole; more than 60 minutes is impossible")
  func sixtyMinutes() throws {
    guard
      case .gga(let gga) = try parse(
        "$GPGGA,235946.005,8960.000000,N,00000.000000,E,0,0,,137.000,M,13.000,M,,")
    else { Issue.record(); return }
    #expect(gga.position?.latitude.decimalDegrees == 90)
    for text in [
      "$GPGGA,235946.005,8960.000001,N,00000.000000,E,0,0,,137.000,M,,,,",
      "$GPGGA,235946.005,4761.0,N,00000.000000,E,0,0,,137.000,M,,,,",
    ] {
      guard case .gga(let impossible) = try parse(text) else { Issue.record(); return }
      #expect(impossible.position == nil, "\(text)")
      #expect(impossible.altitudeMSL == 137, "\(text): the rest of the sentence stands")
      #expect(impossibleValues(text).arcMinutes == 1, "\(text)")
    }
  }

  // MARK: Times

  @Test("fractional seconds are kept to the nanosecond")
  func fractionalSeconds() throws {
    let cases: [(String, UInt32)] = [
      ("092725", 0), ("092725.5", 500_000_000), ("092725.00", 0), ("092725.563", 563_000_000),
      ("092725.123456789", 123_456_789), ("092725.1234567891", 123_456_789),
    ]
    for (field, nanoseconds) in cases {
      guard case .gga(let gga) = try parse("$GPGGA,\(field),,,,,0,,,,,,,,") else {
        Issue.record(); continue
      }
      #expect(
        gga.time == UTCTime(hour: 9, minute: 27, second: 25, nanoseconds: nanoseconds), "\(field)")
    }
    guard case .gga(let leap) = try parse("$GPGGA,235960.00,,,,,0,,,,,,,,") else {
      Issue.record(); return
    }
    #expect(leap.time?.second == 60)
  }

  // MARK: Malformed fields

  @Test(
    "a malformed field throws badField with its index (1 = first field after the address)",
    arguments: [
      ("$GPGGA,12a519,4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,", 1),
      ("$GPGGA,123519,48O7.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,", 2),
      ("$GPGGA,123519,4807.038,X,01131.000,E,1,08,0.9,545.4,M,46.9,M,,", 3),
      ("$GPGGA,123519,4807.038,N,01131.000,N,1,08,0.9,545.4,M,46.9,M,,", 5),
      ("$GPGGA,123519,4807.038,N,01131.000,E,x,08,0.9,545.4,M,46.9,M,,", 6),
      ("$GPGGA,123519,4807.038,N,01131.000,E,1,-8,0.9,545.4,M,46.9,M,,", 7),
      ("$GPGGA,123519,4807.038,N,01131.000,E,1,08,0..9,545.4,M,46.9,M,,", 8),
      ("$GPGGA,123519,4807.038,N,01131.000,E,1,08,0.9,5-45.4,M,46.9,M,,", 9),
      ("$GPGGA,123519,4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,.,", 13),
      ("$GPRMC,123519,X,4807.038,N,01131.000,E,022.4,084.4,230394,003.1,W", 2),
      ("$GPRMC,123519,A,4807.038,N,01131.000,E,022.4,084.4,23039,003.1,W", 9),
      ("$GPRMC,123519,A,4807.038,N,01131.000,E,022.4,084.4,230394,003.1,W,AA", 12),
      ("$GPGSA,A,3,17,2x,06,,,,,,,,,,1.8,1.1,1.5", 4),
      ("$GPGSV,x,1,12,11,12,132,04", 1),
      ("$GPGSV,3,1,12,11,1x,132,04", 5),
      ("$GPVTG,054.7,x34.4,005.5,010.2", 2),
      // More than 19 fractional digits (here 20 and 21, leading zeros): not a number a
      // receiver writes, and 10^20 is beyond exact powers of ten.
      ("$GPGGA,123519,4807.038,N,01131.000,E,1,08,0.00000000000000000001,545.4,M,46.9,M,,", 8),
      ("$GPGGA,123519,4807.038,N,01131.000,E,1,08,0.9,0.000000000000000000000,M,46.9,M,,", 9),
    ] as [(String, Int)])
  func badField(text: String, index: Int) {
    #expect(throws: NMEAParseError.badField(index: index)) { try parse(text) }
  }

  // MARK: Impossible values

  static let rmcBody = "$GPRMC,123519,A,4807.038,N,01131.000,E"

  /// `text` with field `index` (1 is the first after the address) made empty.
  static func emptying(field index: Int, of text: String) -> String {
    var fields = text.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
    fields[index] = ""
    return fields.joined(separator: ",")
  }

  @Test(
    "a well-formed but impossible value, a receiver's sentinel included, drops that field alone",
    arguments: [
      (rmcBody + ",022.4,084.4,310299,003.1,W", .date, 9),
      (rmcBody + ",022.4,084.4,300299,003.1,W", .date, 9),
      (rmcBody + ",022.4,084.4,290299,003.1,W", .date, 9),
      (rmcBody + ",022.4,084.4,290201,003.1,W", .date, 9),
      (rmcBody + ",022.4,084.4,310426,003.1,W", .date, 9),
      (rmcBody + ",022.4,084.4,310926,003.1,W", .date, 9),
      (rmcBody + ",022.4,084.4,320394,003.1,W", .date, 9),
      (rmcBody + ",022.4,084.4,231394,003.1,W", .date, 9),
      (rmcBody + ",022.4,084.4,000394,003.1,W", .date, 9),
      (rmcBody + ",022.4,084.4,230094,003.1,W", .date, 9),
      ("$GPZDA,201530.00,32,07,2002,00,00", .date, 2),
      ("$GPZDA,201530.00,04,13,2002,00,00", .date, 3),
      ("$GPZDA,201530.00,04,07,1979,00,00", .date, 4),
      ("$GPZDA,201530.00,31,06,2002,00,00", .date, 2),
      ("$GPZDA,201530.00,29,02,2100,00,00", .date, 2),
      ("$GPZDA,201530.00,00,02,2024,00,00", .date, 2),
      ("$PUBX,04,073731.00,310226,113851.00,2400,18,-1362,-49.880,21", .date, 3),
      ("$GPGGA,123519,9000.001,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,", .latitude, 2),
      ("$GPGGA,123519,12345.0,S,01131.000,E,1,08,0.9,545.4,M,46.9,M,,", .latitude, 2),
      ("$GPGGA,123519,4807.038,N,18131.000,E,1,08,0.9,545.4,M,46.9,M,,", .longitude, 4),
      ("$GPGGA,123519,4807.038,N,18000.0001,W,1,08,0.9,545.4,M,46.9,M,,", .longitude, 4),
      ("$GPRMC,123519,A,4807.038,N,01160.5,E,022.4,084.4,230394,003.1,W", .arcMinutes, 5),
      (rmcBody + ",-2.572,084.4,230394,003.1,W", .speed, 7),
      (rmcBody + ",022.4,720.0,230394,003.1,W", .course, 8),
      (rmcBody + ",022.4,360.0,230394,003.1,W", .course, 8),
      (rmcBody + ",022.4,-0.5,230394,003.1,W", .course, 8),
      (rmcBody + ",022.4,084.4,230394,180.5,E", .magneticVariation, 10),
      ("$GPVTG,720.0,T,034.4,M,005.5,N,010.2,K,A", .course, 1),
      ("$GPVTG,054.7,T,360.0,M,005.5,N,010.2,K,A", .course, 3),
      ("$GPVTG,054.7,T,034.4,M,-005.5,N,010.2,K,A", .speed, 5),
      ("$GPVTG,054.7,T,034.4,M,005.5,N,-010.2,K,A", .speed, 7),
      (
        "$PUBX,00,081350.00,4717.113210,N,00833.915187,E,546.589,G3,2.1,2.0,-0.007,77.52,"
          + "0.007,,0.92,1.19,0.77,9,0,0", .speed, 11
      ),
      (
        "$PUBX,00,081350.00,4717.113210,N,00833.915187,E,546.589,G3,2.1,2.0,0.007,377.52,"
          + "0.007,,0.92,1.19,0.77,9,0,0", .course, 12
      ),
      ("$GPGGA,123519,4807.038,N,01131.000,E,1,08,-0.9,545.4,M,46.9,M,,", .accuracy, 8),
      ("$GPGSA,A,3,04,05,,09,12,,,24,,,,,-2.5,1.3,2.1", .accuracy, 15),
      ("$GPGST,172814.0,0.006,0.023,0.020,273.6,-0.023,0.020,0.031", .accuracy, 6),
      (
        "$PUBX,00,081350.00,4717.113210,N,00833.915187,E,546.589,G3,-2.1,2.0,0.007,77.52,"
          + "0.007,,0.92,1.19,0.77,9,0,0", .accuracy, 9
      ),
      (rmcBody + ",022.4,084.4,230394,999.9,E", .magneticVariation, 10),
      (rmcBody + ",999.99,084.4,230394,003.1,W", .speed, 7),
      ("$GPVTG,054.7,T,034.4,M,999.99,N,010.2,K,A", .speed, 5),
      ("$GPVTG,054.7,T,034.4,M,005.5,N,1851.9,K,A", .speed, 7),
      ("$GPGGA,123519,4807.038,N,01131.000,E,1,08,0.9,-9999.9,M,46.9,M,,", .altitude, 9),
      ("$GPGGA,123519,4807.038,N,01131.000,E,1,08,0.9,100000.1,M,46.9,M,,", .altitude, 9),
      ("$GPGGA,123519,4807.038,N,01131.000,E,1,08,0.9,545.4,M,999.9,M,,", .geoidSeparation, 11),
      ("$GPGNS,123519,4807.038,N,01131.000,E,AN,08,0.9,-9999.9,46.9,,", .altitude, 9),
      ("$GPGGA,123519,4807.038,N,01131.000,E,9,08,0.9,545.4,M,46.9,M,,", .fixQuality, 6),
      ("$GPGSA,A,4,04,05,,09,12,,,24,,,,,2.5,1.3,2.1", .fixMode, 2),
      ("$GPGSA,A,0,04,05,,09,12,,,24,,,,,2.5,1.3,2.1", .fixMode, 2),
      ("$PGRMZ,-99999,f,3", .altitude, 1),
      ("$PGRMZ,1577,f,4", .fixMode, 3),
      ("$GPGBS,123519,-1.2,0.5,1.0,,,,", .accuracy, 2),
      (
        "$PUBX,00,081350.00,4717.113210,N,00833.915187,E,-9999.9,G3,2.1,2.0,0.007,77.52,"
          + "0.007,,0.92,1.19,0.77,9,0,0", .altitude, 7
      ),
    ] as [(String, ImpossibleValue, Int)])
  func impossibleValueDropsTheField(text: String, reason: ImpossibleValue, index: Int) throws {
    // Exactly what the sentence says with the field empty: the value gone, nothing else.
    let parsed = try parse(text)
    #expect(parsed == (try parse(Self.emptying(field: index, of: text))))
    let counted = impossibleValues(text)
    #expect(counted[reason] == 1)
    #expect(counted.total == 1)
  }

  @Test("NMEA 1.x VTG: an impossible magnetic course or speed drops that value alone")
  func impossibleValueInOldVTG() throws {
    guard case .vtg(let course) = try parse("$GPVTG,054.7,400.0,005.5,010.2"),
      case .vtg(let speed) = try parse("$GPVTG,054.7,034.4,-005.5,010.2")
    else { Issue.record(); return }
    #expect(course.courseMagnetic == nil && course.courseTrue == 54.7 && course.speedKnots == 5.5)
    #expect(speed.speedKnots == nil && speed.courseMagnetic == 34.4)
    #expect(speed.speedKilometresPerHour == 10.2)
    #expect(impossibleValues("$GPVTG,054.7,400.0,005.5,010.2").course == 1)
    #expect(impossibleValues("$GPVTG,054.7,034.4,-005.5,010.2").speed == 1)
  }

  @Test(
    "an impossible time of day or GSV message number, which the sentence is about, refuses it",
    arguments: [
      ("$GPGGA,246000,4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,", .timeOfDay, 1),
      ("$GPGGA,236000,4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,", .timeOfDay, 1),
      ("$GPGGA,235961.5,4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,", .timeOfDay, 1),
      ("$GPGLL,4807.038,N,01131.000,E,990000,A,A", .timeOfDay, 5),
      ("$GPGSV,9,99,12,01,40,083,46", .messageNumber, 2),
      ("$GPGSV,3,4,12,01,40,083,46", .messageNumber, 2),
      ("$GPGSV,3,0,12,01,40,083,46", .messageNumber, 2),
      ("$GPGSV,0,0,00", .messageNumber, 1),
      ("$GPGSV,10,1,40,01,40,083,46", .messageNumber, 1),
      ("$PQGSV,3,5,11,01,40,083,46,1,4", .messageNumber, 2),
    ] as [(String, ImpossibleValue, Int)])
  func impossibleValueRefusesTheSentence(text: String, reason: ImpossibleValue, index: Int) {
    #expect(throws: NMEAParseError.impossibleValue(reason, index: index)) { try parse(text) }
  }

  @Test("a DOP of 99 or more is the receiver's \"unknown\": absent, and not counted")
  func unknownDOP() throws {
    for text in [
      "$GPGSA,A,1,,,,,,,,,,,,,99.99,99.99,99.99", "$GPGSA,A,1,,,,,,,,,,,,,99.0,99.0,99.0",
    ] {
      guard case .gsa(let gsa) = try parse(text) else { Issue.record(); return }
      #expect(gsa.pdop == nil && gsa.hdop == nil && gsa.vdop == nil, "\(text)")
      #expect(impossibleValues(text).total == 0, "\(text)")
    }
    guard case .gga(let gga) = try parse("$GPGGA,123519,4807.038,N,01131.000,E,1,08,98.9,,,,,,")
    else { Issue.record(); return }
    #expect(gga.hdop == 98.9)
  }

  @Test("the limits themselves are possible: leap days, the leap second, 0 and 359.9°, the pole")
  func possibleLimits() throws {
    guard case .rmc(let leapDay) = try parse(Self.rmcBody + ",0.0,359.9,290200,180.0,W"),
      case .rmc(let leapDay2024) = try parse(Self.rmcBody + ",,0.0,290224,,"),
      case .rmc(let endOfYear) = try parse(Self.rmcBody + ",,,311279,,"),
      case .gga(let leapSecond) = try parse("$GPGGA,235960,9000.000,S,18000.000,W,1,08,0,,,,,,"),
      case .zda(let zda) = try parse("$GPZDA,201530.00,29,02,2000,00,00"),
      case .gsv(let last) = try parse("$GPGSV,9,9,33,01,40,083,46")
    else { Issue.record("not the expected types"); return }
    #expect(leapDay.date == UTCDate(year: 2000, month: 2, day: 29))
    #expect(leapDay.speedKnots == 0 && leapDay.course == 359.9)
    #expect(leapDay.magneticVariation == -180)
    #expect(leapDay2024.date == UTCDate(year: 2024, month: 2, day: 29) && leapDay2024.course == 0)
    #expect(endOfYear.date == UTCDate(year: 2079, month: 12, day: 31))
    #expect(leapSecond.time?.second == 60)
    #expect(leapSecond.position?.latitude.decimalDegrees == -90)
    #expect(leapSecond.position?.longitude.decimalDegrees == -180)
    #expect(leapSecond.hdop == 0)
    #expect(zda.date == UTCDate(year: 2000, month: 2, day: 29))
    #expect(last.messageNumber == 9 && last.messageCount == 9)
  }

  @Test("a fraction of exactly 19 digits, leading zeros included, is still a number")
  func nineteenFractionDigits() throws {
    let text = "$GPGGA,123519,4807.038,N,01131.000,E,1,08,0.0000000000000000001,545.4,M,46.9,M,,"
    guard case .gga(let gga) = try parse(text) else { Issue.record(); return }
    #expect(gga.hdop == 1e-19)
  }

  @Test("sentences from older NMEA versions, short of trailing fields, parse with those nil")
  func shortSentences() throws {
    guard case .gga(let gga) = try parse("$GPGGA,123519,4807.038,N,01131.000,E,1,08") else {
      Issue.record(); return
    }
    #expect(gga.satellitesUsed == 8 && gga.hdop == nil && gga.altitudeMSL == nil)
    guard case .rmc(let rmc) = try parse("$GPRMC,123519,A,4807.038,N,01131.000,E") else {
      Issue.record(); return
    }
    #expect(rmc.position != nil && rmc.speedKnots == nil && rmc.date == nil)
  }

  @Test("time, date and position are reported by Sentence.time for the timed kinds only")
  func sentenceTime() throws {
    #expect(
      try parse("$GPGGA,123519,,,,,0,,,,,,,,").time == UTCTime(hour: 12, minute: 35, second: 19))
    #expect(try parse("$GPGLL,,,,,123519,V,N").time == UTCTime(hour: 12, minute: 35, second: 19))
    #expect(try parse("$GPGST,123519,1,,,,1,1,1").time != nil)
    #expect(try parse("$GPGSA,A,1,,,,,,,,,,,,,,,").time == nil)
    #expect(try parse("$GPVTG,,T,,M,,N,,K,N").time == nil)
    #expect(try parse("$GPHDT,1,T").time == nil)
  }
}

extension ParserTests {
  static let samples = [
    "$GNGGA,092725.00,4717.11399,N,00833.91590,E,4,08,1.01,499.6,M,48.0,M,1.5,0136",
    "$GNRMC,083559.00,A,4717.11437,S,00833.91522,W,0.004,77.52,091202,2.5,W,D,V",
    "$GNGSA,A,3,82,66,81,,,,,,,,,,1.05,0.64,0.83,2",
    "$GAGSV,3,1,09,02,00,179,,04,09,321,,07,11,134,11,11,10,227,,7",
    "$GNGLL,4404.13387,N,12118.85628,W,000941.00,A,A", "$GPVTG,054.7,T,034.4,M,005.5,N,010.2,K,A",
    "$GPZDA,201530.00,04,07,2002,-05,30", "$GNGST,082356.00,1.8,,,,1.7,1.3,2.2",
    "$GNGNS,043539.00,4333.190206,N,00127.618380,E,AAAAN,14,1.3,250.8,50.0,,,V",
    "$GNGBS,170556.00,3.0,2.9,8.3,,,,,1,7", "$GPGRS,112257.00,1,-0.1,-0.3,-0.1,,,,,,,,,",
    "$GPDTM,999,,0.08,S,0.07,W,-47.7,W84", "$GPTXT,01,01,02,ANTSTATUS=OK",
    "$PUBX,00,081350.00,4717.113210,N,00833.915187,E,546.589,G3,2.1,2.0,0.007,77.52,0.007,,0.92,1.19,0.77,9,0,0",
    "$PUBX,03,03,23,-,,,45,010,29,-,,,46,013,07,U,067,31,42,025",
    "$PUBX,04,073731.00,091202,113851.00,1196,15D,1930035,-2660.664,43", "$PMTK001,604,3",
    "$PMTK010,001", "$PMTK011,MTKGPS", "$PQGSV,2,1,08,02,20,116,,03,,,,05,34,137,,07,06,045,,0,4",
  ]

  @Test("property: damaged sentences parse or throw, never crash", arguments: 0..<4)
  func damagedSentences(seed: UInt64) {
    var generator = SeededGenerator(seed: seed)
    let alphabet = Array("0123456789,.-+*$!ABCDEFGNPSVWXZ ".utf8)
    var parsed = 0
    var thrown = 0
    for _ in 0..<5000 {
      var bytes = Array(Self.samples.randomElement(using: &generator)!.utf8)
      for _ in 0..<Int.random(in: 1...4, using: &generator) {
        let index = Int.random(in: 1..<bytes.count, using: &generator)
        switch Int.random(in: 0..<3, using: &generator) {
        case 0: bytes[index] = alphabet.randomElement(using: &generator)!
        case 1: bytes.remove(at: index)
        default: bytes.insert(alphabet.randomElement(using: &generator)!, at: index)
        }
      }
      let result = bytes.withUnsafeBufferPointer { buffer in
        Result { () throws(NMEAParseError) -> Sentence in
          try Sentence(parsing: RawSentence(bytes: buffer, hadChecksum: true))
        }
      }
      switch result {
      case .success: parsed += 1
      case .failure: thrown += 1
      }
    }
    #expect(parsed > 0 && thrown > 0)
  }
}

extension ParserTests {
  /// Runs `body` with a scanner over `text` (without checksum), positioned at the address.
  func withScanner<R>(_ text: String, _ body: (inout FieldScanner) throws -> R) rethrows -> R {
    let bytes = Array(text.utf8)
    return try bytes.withUnsafeBufferPointer { buffer in
      var scanner = FieldScanner(RawSentence(bytes: buffer, hadChecksum: true))
      _ = scanner.next()
      return try body(&scanner)
    }
  }

  @Test("FieldScanner reads typed fields with the parser's rules, past the end as nil")
  func fieldScanner() throws {
    try withScanner("$GPGGA,123519.25,4807.038,N,01131.000,W,1,08,-0.9,,M") {
      (f: inout FieldScanner) throws in
      #expect(try f.time() == UTCTime(hour: 12, minute: 35, second: 19, nanoseconds: 250_000_000))
      let latitude = try f.coordinate(isLongitude: false)
      #expect(
        latitude?.degrees == 48 && latitude?.scaledMinutes == 7038 && latitude?.isNegative == false)
      let longitude = try f.coordinate(isLongitude: true)
      #expect(longitude?.degrees == 11 && longitude?.isNegative == true)
      #expect(try f.uint() == 1)
      #expect(try f.uint() == 8)
      #expect(try f.decimal() == -0.9)
      #expect(try f.decimal() == nil)
      #expect(try f.character() == 0x4D)
      #expect(f.index == 10 && !f.hasMore)
      #expect(try f.uint() == nil && f.date() == nil && f.text() == nil)
      #expect(f.index == 13)
    }
    try withScanner("$GPRMC,230394,x,1.2.3,12345678901234567890,4807.038,Q") {
      (f: inout FieldScanner) throws in
      #expect(try f.date() == UTCDate(year: 1994, month: 3, day: 23))
      #expect(throws: NMEAParseError.badField(index: 2)) { try f.uint() }
      #expect(throws: NMEAParseError.badField(index: 3)) { try f.decimal() }
      // Twenty digits are a well-formed integer, past what 32 bits hold.
      #expect(throws: NMEAParseError.impossibleValue(.integerRange, index: 4)) { try f.uint() }
      // A bad hemisphere is reported with its own index.
      #expect(throws: NMEAParseError.badField(index: 6)) { try f.coordinate(isLongitude: false) }
    }
  }
}
