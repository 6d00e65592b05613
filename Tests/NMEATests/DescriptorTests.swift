import NMEA
import Testing

// What the descriptors and the registry promise: every type is found by its address (aliases
// included), error estimates are ranked by source whatever the order, and GBS reaches the fix.

@Suite("Descriptors and the registry")
struct DescriptorTests {
  static let gga = "GPGGA,120000,4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,"
  static let rmc = "GPRMC,120000,A,4807.038,N,01131.000,E,022.4,084.4,230394,003.1,W,A"
  static let gst = "GPGST,120000,0.6,3.1,2.1,12.0,2.0,1.5,3.5"
  static let gbs = "GPGBS,120000,4.0,3.0,9.0,,,,"

  static func fix(_ bodies: [String]) throws -> Fix {
    let epochs = feed(bodies)
    #expect(epochs.count == 1)
    return try #require(epochs.first?.epoch.fix)
  }

  @Test("GBS alone gives epx, epy, epv and the horizontal accuracy they make")
  func gbsReachesTheFix() throws {
    let fix = try Self.fix([Self.gga, Self.rmc, Self.gbs])
    #expect(fix.latitudeError == 4.0 && fix.longitudeError == 3.0)
    #expect(fix.verticalAccuracy == 9.0)
    #expect(fix.horizontalAccuracy == 5.0)
  }

  @Test("the receiver's GST outranks GBS's fault detection, whichever comes first")
  func gstOutranksGBS() throws {
    for bodies in [
      [Self.gga, Self.rmc, Self.gst, Self.gbs], [Self.gga, Self.rmc, Self.gbs, Self.gst],
    ] {
      let fix = try Self.fix(bodies)
      #expect(fix.latitudeError == 2.0 && fix.longitudeError == 1.5, "\(bodies)")
      #expect(fix.verticalAccuracy == 3.5, "\(bodies)")
      #expect(fix.horizontalAccuracy == 2.5, "\(bodies)")
    }
  }

  @Test("each estimate is ranked on its own: PUBX's accuracy over GBS's, GBS's errors kept")
  func estimatesRankedEachOnItsOwn() throws {
    let pubx =
      "PUBX,00,120000.00,4807.038,N,01131.000,E,545.4,G3,7.0,8.0,0.0,0.0,0.0,,0.9,1.1,0.8,8,0,0"
    for bodies in [[Self.gga, Self.gbs, pubx], [Self.gga, pubx, Self.gbs]] {
      let fix = try Self.fix(bodies)
      #expect(fix.horizontalAccuracy == 7.0 && fix.verticalAccuracy == 8.0, "\(bodies)")
      #expect(fix.latitudeError == 4.0 && fix.longitudeError == 3.0, "\(bodies)")
    }
  }

  @Test(
    "every address the registry has a row for parses to its type",
    arguments: [
      ("$GPGGA,120000,4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,", "gga"),
      ("$GNRMC,120000,A,4807.038,N,01131.000,E,022.4,084.4,230394,,,A", "rmc"),
      ("$GPGSA,A,3,04,05,,,,,,,,,,,2.5,1.3,2.1", "gsa"),
      ("$GLGSV,1,1,01,65,40,083,46", "gsv"),
      ("$GPGLL,4807.038,N,01131.000,E,120000,A,A", "gll"),
      ("$GPVTG,054.7,T,034.4,M,005.5,N,010.2,K,A", "vtg"),
      ("$GPZDA,120000,23,03,1994,00,00", "zda"),
      ("$GPGST,120000,0.6,3.1,2.1,12.0,2.0,1.5,3.5", "gst"),
      ("$GNGNS,120000,4807.038,N,01131.000,E,AN,08,0.9,545.4,46.9,,", "gns"),
      ("$GPGBS,120000,4.0,3.0,9.0,,,,", "gbs"),
      ("$GPGRS,120000,1,-0.1,0.3,,,,,,,,,,", "grs"),
      ("$GPDTM,W84,,0.0,N,0.0,E,0.0,W84", "dtm"),
      ("$GNTXT,01,01,02,ANTSTATUS=OK", "txt"),
      (
        "$PUBX,00,120000.00,4807.038,N,01131.000,E,545.4,G3,7.0,8.0,0.0,0.0,0.0,,0.9,1.1,0.8,8,0,0",
        "pubxPosition"
      ),
      ("$PUBX,03,01,23,-,,,45,010", "pubxSatellites"),
      ("$PUBX,04,073731.00,091202,113851.00,1196,15D,1930035,-2660.664,43,", "pubxTime"),
      ("$PQGSV,1,1,01,04,40,083,46,0,4", "gsv"),
      ("$PQGSA,A,3,12,,,,,,,,,,,,1.2,0.9,0.9,4", "gsa"),
      ("$PMTK001,604,3", "mtkAcknowledgement"),
      ("$PMTK010,001", "mtkSystemMessage"),
      ("$PMTK011,MTKGPS", "mtkSystemMessage"),
      ("$PGRME,7.6,M,41.7,M,42.4,M", "garminErrorEstimates"),
      ("$PGRMZ,93,f,3", "garminAltitude"),
      ("$PGRMM,WGS 84", "garminDatum"),
      ("$GPXTE,A,A,0.67,L,N", "unknown"),
      ("$PUBX,41,1,0007,0003,19200,0", "unknown"),
      ("$PGRMEX,1", "unknown"),
    ])
  func registryRows(text: String, kind: String) throws {
    let sentence = try parse(text)
    // The case's name, as the enum prints it (`gga(NMEA.GGA(...))`).
    let printed = String(describing: sentence)
    #expect(printed.hasPrefix(kind + "("), "\(text): \(printed.prefix(60))")
  }

  @Test("aliases keep what tells them apart: Quectel's talker, MediaTek's text")
  func aliases() throws {
    guard case .gsv(let gsv) = try parse("$PQGSV,1,1,01,04,40,083,46,0,4"),
      case .gsa(let gsa) = try parse("$PQGSA,A,3,12,,,,,,,,,,,,1.2,0.9,0.9,4"),
      case .mtkSystemMessage(let text) = try parse("$PMTK011,MTKGPS"),
      case .mtkSystemMessage(let system) = try parse("$PMTK010,002")
    else { Issue.record(); return }
    #expect(gsv.talker == .pq && gsv.systemID == 4)
    #expect(gsa.talker == .pq && gsa.systemID == 4)
    #expect(text.kind == .text("MTKGPS"))
    #expect(system.kind == .system(2))
  }

  @Test("a malformed address is refused, a short or odd one is unknown")
  func addresses() throws {
    #expect(throws: NMEAParseError.badAddress) { try parse("$GP-GA,1") }
    #expect(throws: NMEAParseError.badAddress) { try parse("$G,1") }
    guard case .unknown(let long) = try parse("$GPGGAX,1"),
      case .unknown(let pubx) = try parse("$PUBX")
    else { Issue.record(); return }
    #expect(long.address == "GPGGAX")
    #expect(pubx.address == "PUBX")
  }
}
