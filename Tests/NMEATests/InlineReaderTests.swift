import NMEA
import Testing

/// The usual forms of a decimal, a DOP and a coordinate are read inline, every other form by
/// the general reader: both must give what the general reader alone gave.
@Suite("Inline field readers")
struct InlineReaderTests {
  /// A GSA with twelve empty satellite fields, the three DOPs given and system ID 1.
  func gsa(_ pdop: String, _ hdop: String, _ vdop: String) throws(NMEAParseError) -> GSA? {
    let satellites = String(repeating: ",", count: 11)
    guard case .gsa(let gsa) = try parse("$GNGSA,A,3,\(satellites),\(pdop),\(hdop),\(vdop),1")
    else { return nil }
    return gsa
  }

  @Test("DOPs: the usual form, 99 and over as unknown, without a point, signed, long")
  func dops() throws {
    let usual = try #require(try gsa("1.50", "0.95", "12.5"))
    #expect(usual.pdop == 1.5 && usual.hdop == 0.95 && usual.vdop == 12.5)
    #expect(usual.systemID == 1)
    let unknown = try #require(try gsa("99.0", "99.99", "98.99"))
    #expect(unknown.pdop == nil && unknown.hdop == nil && unknown.vdop == 98.99)
    let other = try #require(try gsa("12", "+0.95", "0012.50000000000"))
    #expect(other.pdop == 12 && other.hdop == 0.95 && other.vdop == 12.5)
    let ninetyNine = try #require(try gsa("99", "1234567890.5", "1."))
    #expect(ninetyNine.pdop == nil && ninetyNine.hdop == nil && ninetyNine.vdop == 1)
  }

  @Test("a DOP that is not a number is a bad field; a negative one is dropped and counted")
  func badDOPs() throws {
    #expect(throws: NMEAParseError.badField(index: 16)) { try gsa("1.5", "1.5x", "1.5") }
    #expect(throws: NMEAParseError.badField(index: 15)) { try gsa("1.5.5", "1.5", "1.5") }
    #expect(throws: NMEAParseError.badField(index: 17)) {
      try gsa("1.5", "1.5", "1.1234567890123456789012")
    }
    let negative = try #require(try gsa("-1.5", "1.5", "1.5"))
    #expect(negative.pdop == nil && negative.hdop == 1.5)
    let satellites = String(repeating: ",", count: 11)
    #expect(impossibleValues("$GNGSA,A,3,\(satellites),-1.5,1.5,1.5,1").accuracy == 1)
  }

  @Test("decimals: the usual form, signed, without a point, long, and not a number")
  func decimals() throws {
    let text = "$GPGGA,120000,4807.038,N,01131.000,E,1,08,0.9,-12.5,M,48,M,1234567890.25,"
    guard case .gga(let gga) = try parse(text) else {
      Issue.record("not GGA")
      return
    }
    #expect(gga.altitudeMSL == -12.5 && gga.geoidSeparation == 48)
    #expect(gga.differentialAge == 1_234_567_890.25)
    #expect(throws: NMEAParseError.badField(index: 9)) {
      try parse("$GPGGA,120000,4807.038,N,01131.000,E,1,08,0.9,545.4x,M,48,M,,")
    }
  }

  @Test("coordinates ending the sentence, with their hemisphere and without")
  func coordinatesAtTheEnd() throws {
    guard case .gll(let whole) = try parse("$GPGLL,4717.11399,N,00833.91590,E") else {
      Issue.record("not GLL")
      return
    }
    let position = try #require(whole.position)
    #expect(
      position.longitude
        == Coordinate(degrees: 8, scaledMinutes: 3_391_590, fractionDigits: 5, isNegative: false))
    guard case .gll(let cut) = try parse("$GPGLL,4717.11399,N,00833.91590") else {
      Issue.record("not GLL")
      return
    }
    #expect(cut.position == nil)
  }

  @Test("coordinates: the pole as MediaTek writes it, no point, dropped, and bad ones")
  func coordinateForms() throws {
    guard case .gll(let pole) = try parse("$GPGLL,8960.000000,S,00000.0000,W") else {
      Issue.record("not GLL")
      return
    }
    #expect(
      pole.position?.latitude
        == Coordinate(degrees: 90, scaledMinutes: 0, fractionDigits: 6, isNegative: true))
    guard case .gll(let noPoint) = try parse("$GPGLL,4717,N,00833,E") else {
      Issue.record("not GLL")
      return
    }
    #expect(
      noPoint.position?.latitude
        == Coordinate(degrees: 47, scaledMinutes: 17, fractionDigits: 0, isNegative: false))
    guard case .gll(let beyond) = try parse("$GPGLL,9000.0001,N,00833.1,E") else {
      Issue.record("not GLL")
      return
    }
    #expect(beyond.position == nil)
    #expect(impossibleValues("$GPGLL,9000.0001,N,00833.1,E").latitude == 1)
    #expect(impossibleValues("$GPGLL,4760.5,N,00833.1,E").arcMinutes == 1)
    // A bad hemisphere is reported before a bad angle, each with its own index.
    #expect(throws: NMEAParseError.badField(index: 2)) { try parse("$GPGLL,47x7.1,X,00833.1,E") }
    #expect(throws: NMEAParseError.badField(index: 4)) { try parse("$GPGLL,4717.1,N,00833.1,EW") }
    #expect(throws: NMEAParseError.badField(index: 1)) {
      try parse("$GPGLL,4717.1234567890123,N,00833.1,E")
    }
    #expect(throws: NMEAParseError.badField(index: 3)) { try parse("$GPGLL,4717.1,N,33.1,E") }
  }
}
