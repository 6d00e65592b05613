import NMEA
import Testing

// The substring search that lets `make deb` leave `_StringProcessing` out of `serialgps`
// (docs/packaging.md), checked against `_StringProcessing`'s own `firstRange(of:)`, which
// tests may import.

@Suite struct SubstringSearchTests {
  static let cases: [(String, String)] = [
    ("u-blox ag - www.u-blox.com", "u-blox"),
    ("PROTVER=18.00", "PROTVER"),
    ("ROM CORE 3.01 PROTVER 15.00", "PROTVER"),
    ("/dev/ttyACM0", "ttyACM"),
    ("/dev/ttyUSB0", "ttyACM"),
    ("", ""),
    ("abc", ""),
    ("", "a"),
    ("ab", "abc"),
    ("aaab", "aab"),
    ("abababc", "ababc"),
    ("mtk", "mtk"),
    ("xmt", "mtk"),
    ("Caf\u{E9} mtk", "e\u{301} mtk"),  // é written two ways: the same character
    ("👩‍👩‍👧 GPS", "GPS"),
  ]

  @Test(arguments: cases)
  func findsWhatStringProcessingFinds(text: String, wanted: String) {
    let expected = text.firstRange(of: wanted)
    #expect(text.firstRange(ofSubstring: wanted) == expected)
    #expect(text.contains(substring: wanted) == (expected != nil))
  }

  @Test func searchesSubstringsInPlace() {
    let line = "$GPTXT,01,01,02,PROTVER=18.00*0F"
    let body = line.dropFirst(16)
    let range = body.firstRange(ofSubstring: "18.00")
    #expect(range.map { String(body[$0]) } == "18.00")
    #expect(range?.lowerBound == line.index(line.startIndex, offsetBy: 24))
  }
}
