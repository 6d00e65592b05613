import NMEA
import Testing

// Sentences made from a fix of UBX messages alone (pseudo-NMEA), byte for byte, and read back
// by the parser.

@Suite("NMEA encoder")
struct EncoderTests {
  func sampleEpoch() throws -> Epoch {
    let emitted = epochs(UBXSamples.navPVT + UBXSkySamples.navSat + UBXEpochSamples.endOfEpoch)
    return try #require(emitted.first)
  }

  @Test("GGA, RMC, GSA and GSV of a NAV-PVT and NAV-SAT epoch, with checksums")
  func exactBytes() throws {
    let epoch = try sampleEpoch()
    #expect(epoch.fix.fromBinaryMessagesOnly)
    var out: [UInt8] = []
    NMEAEncoder.appendGGA(epoch.fix, to: &out)
    NMEAEncoder.appendRMC(epoch.fix, to: &out)
    NMEAEncoder.appendGSA(epoch.fix, satellites: epoch.satellites, to: &out)
    NMEAEncoder.appendGSV(try #require(epoch.satellites), to: &out)
    let text = String(decoding: out, as: UTF8.self)
    // The position is the receiver's own GGA of that second (UBXEpochSamples.gga) to 1e-5'.
    #expect(
      text
        == "$GPGGA,211920.00,4552.65172,S,17030.00784,E,1,16,,27.44,M,1.791,M,,*65\r\n"
        + "$GPRMC,211920.00,A,4552.65172,S,17030.00784,E,0.4937,217.876,220419,,,A*7D\r\n"
        + "$GPGSA,A,3,4,,,,,,,,,,,,1.2,,*05\r\n"
        + "$GPGSV,1,1,02,04,48,216,40,72,37,270,25*71\r\n")
    var decoder = NMEADecoder()
    var sentences = 0
    decoder.decode(out) { if case .sentence = $0 { sentences += 1 } }
    #expect(sentences == 4, "every sentence parses with its checksum")
  }
}
