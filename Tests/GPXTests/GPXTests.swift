import Foundation
import GPX
import NMEA
import Testing

let fixtureNames = [
  "midnight-rollover", "mtk-cold-start", "noisy-ublox", "rtk-high-precision", "sirf-4800",
  "ublox-m8-drive",
]

/// Fixes one second apart from 12:00:`second`, with or without a position fix.
func cycles(_ seconds: [Int], fix: Bool) -> String {
  seconds.map { second in
    let time = "1200" + (second < 10 ? "0" : "") + "\(second).00"
    return fix
      ? sentence("GPGGA,\(time),4722.61420,N,00832.50210,E,1,08,0.90,408.3,M,47.4,M,,")
        + sentence("GPRMC,\(time),A,4722.61420,N,00832.50210,E,0.0,0.0,300326,,,A")
      : sentence("GPGGA,\(time),,,,,0,00,,,M,,M,,") + sentence("GPRMC,\(time),V,,,,,,,300326,,,N")
  }.joined()
}

/// Three fixes, one without, two more, and two 25 s later.
let gappedFixes: [Fix] = fixes(
  in: Array(
    (cycles([0, 1, 2], fix: true) + cycles([3], fix: false) + cycles([4, 5], fix: true)
      + cycles([30, 31], fix: true)).utf8))

@Suite("GPX: documents")
struct GPXDocumentTests {
  @Test("every fixture's track is valid GPX 1.1", arguments: fixtureNames)
  func validAgainstTheSchema(name: String) throws {
    guard let xmllint = xmllint() else { return }
    let (fixes, metadata) = try fixture(name)
    let document = GPXDocument.text(of: GPXTrack(fixes: fixes), metadata: metadata)
    let verdict = try validate(document, xmllint: xmllint)
    #expect(verdict.valid, "\(verdict.messages)")
  }

  @Test("the schema check can fail: a wrong fix type, elements out of order, longitude 180")
  func schemaRefusesInvalid() throws {
    guard let xmllint = xmllint() else { return }
    let (fixes, metadata) = try fixture("sirf-4800")
    let document = GPXDocument.text(of: GPXTrack(fixes: fixes), metadata: metadata)
    #expect(try validate(document, xmllint: xmllint).valid)
    let wrongFix = document.replacingOccurrences(of: "<fix>3d</fix>", with: "<fix>4d</fix>")
    #expect(try !validate(wrongFix, xmllint: xmllint).valid)
    let outOfOrder = document.replacingOccurrences(
      of: "<fix>3d</fix>\n        <sat>", with: "<sat>")
    #expect(
      try !validate(
        outOfOrder.replacingOccurrences(of: "</sat>", with: "</sat><fix>3d</fix>"), xmllint: xmllint
      ).valid)
    let antimeridian = "<trkpt lat=\"0.0\" lon=\"180.0\">"
    let withPoint = document.replacingOccurrences(
      of: "<trkseg>\n", with: "<trkseg>\n" + antimeridian + "</trkpt>\n")
    #expect(try !validate(withPoint, xmllint: xmllint).valid)
  }

  @Test("one track point per epoch with a fix, with the decoder's position, time and elements")
  func pointsMatchTheDecoder() throws {
    let (fixes, metadata) = try fixture("mtk-cold-start")
    let track = GPXTrack(fixes: fixes)
    let document = GPXDocument.text(of: track, metadata: metadata)
    let withFix = fixes.filter { $0.mode != .noFix }
    #expect(withFix.count == 67)  // 5 in 2D, 62 in 3D (the truth file's modes)
    #expect(track.pointCount == 67)
    #expect(occurrences(of: "<trkpt ", in: document) == withFix.count)
    #expect(occurrences(of: "<fix>2d</fix>", in: document) == 5)
    #expect(occurrences(of: "<fix>3d</fix>", in: document) == 62)
    // The 2D fixes have no altitude, so no <ele>.
    #expect(occurrences(of: "<ele>", in: document) == 62)
    #expect(track.segments.map(\.count) == [67])
    let first = try #require(withFix.first)
    #expect(
      document.contains(
        "<trkpt lat=\"-33.869025000\" lon=\"151.209403333\">\n"
          + "        <time>2026-02-03T22:10:38.000Z</time>\n"
          + "        <geoidheight>22.6</geoidheight>\n        <fix>2d</fix>\n"
          + "        <sat>3</sat>\n        <hdop>1.75</hdop>\n"))
    #expect(first.timestamp?.description == "2026-02-03T22:10:38.000Z")
    #expect(document.contains("<gpx version=\"1.1\" creator=\"serialgps tests\""))
    #expect(document.contains("<src>MediaTek MT3339 (PMTK), NMEA 3.01</src>"))
  }

  @Test("RTK and DGPS fixes are dgps, with the age and station of the corrections")
  func differential() throws {
    let (fixes, metadata) = try fixture("rtk-high-precision")
    let document = GPXDocument.text(of: GPXTrack(fixes: fixes), metadata: metadata)
    let differential = fixes.filter { ($0.quality?.rawValue ?? 0) >= 4 }.count
    #expect(differential == 290)  // quality 4 or 5 from 17:32:11.0 (epoch 10) on
    #expect(occurrences(of: "<fix>dgps</fix>", in: document) == differential)
    #expect(occurrences(of: "<dgpsid>217</dgpsid>", in: document) == differential)
    #expect(document.contains("<ageofdgpsdata>0.4</ageofdgpsdata>"))
    #expect(document.contains("<time>2025-09-15T17:32:10.100Z</time>"))
  }

  @Test("names are escaped; a track without any fix is an empty, valid track")
  func escapingAndEmpty() throws {
    let document = GPXDocument.text(
      of: GPXTrack(fixes: [Fix()]),
      metadata: GPXMetadata(name: "a <b> & \"c\"", description: "x\u{01}y", creator: "t'"))
    #expect(document.contains("<name>a &lt;b&gt; &amp; &quot;c&quot;</name>"))
    #expect(document.contains("<desc>x y</desc>"))
    #expect(document.contains("creator=\"t&apos;\""))
    #expect(!document.contains("<trkseg>"))
    #expect(!document.contains("<bounds"))
    if let xmllint = xmllint() {
      let verdict = try validate(document, xmllint: xmllint)
      #expect(verdict.valid, "\(verdict.messages)")
    }
  }

  @Test("180° E is written as -180 (GPX longitudes stop short of +180); decimals trimmed")
  func antimeridianAndDecimals() {
    var fix = Fix()
    fix.mode = .threeD
    fix.position = Position(
      latitude: Coordinate(degrees: 0, scaledMinutes: 0, fractionDigits: 4, isNegative: false),
      longitude: Coordinate(degrees: 180, scaledMinutes: 0, fractionDigits: 4, isNegative: false))
    fix.altitudeMSL = 439.2
    fix.geoidSeparation = -0.00001
    fix.hdop = .nan
    #expect(
      GPXDocument.trackPoint(fix)
        == "      <trkpt lat=\"0.000000000\" lon=\"-180.000000000\">\n"
        + "        <ele>439.2</ele>\n        <geoidheight>0</geoidheight>\n"
        + "        <fix>3d</fix>\n      </trkpt>\n")
    #expect(GPXDocument.trackPoint(Fix()).isEmpty)
  }
}

@Suite("GPX: segments")
struct GPXSegmentTests {
  @Test("a new segment after epochs without a fix and after a gap in time; no-fix epochs left out")
  func segments() throws {
    #expect(gappedFixes.count == 8)
    let track = GPXTrack(fixes: gappedFixes, gap: .seconds(10))
    #expect(track.segments.map(\.count) == [3, 2, 2])
    #expect(GPXTrack(fixes: gappedFixes, gap: .seconds(30)).segments.map(\.count) == [3, 4])
    var segmenter = GPXSegmenter(gap: .seconds(10))
    #expect(
      gappedFixes.map { segmenter.place($0) } == [
        .startsSegment, .continuesSegment, .continuesSegment, .leftOut, .startsSegment,
        .continuesSegment, .startsSegment, .continuesSegment,
      ])
    let document = GPXDocument.text(of: track, metadata: GPXMetadata(name: "gaps"))
    #expect(occurrences(of: "<trkseg>", in: document) == 3)
    #expect(occurrences(of: "<trkpt ", in: document) == 7)
    if let xmllint = xmllint() {
      #expect(try validate(document, xmllint: xmllint).valid)
    }
  }

  @Test("a step back in time starts a new segment")
  func stepBack() {
    let backwards = fixes(in: Array((cycles([5, 6], fix: true) + cycles([2], fix: true)).utf8))
    #expect(GPXTrack(fixes: backwards).segments.map(\.count) == [2, 1])
  }

  @Test("across midnight the track goes on: no gap between 23:59:59 and 00:00:00")
  func midnight() throws {
    let (fixes, _) = try fixture("midnight-rollover")
    #expect(GPXTrack(fixes: fixes).segments.map(\.count) == [61])
  }
}

@Suite("GPX: streaming")
struct GPXStreamTests {
  /// The document `GPXDocument` writes for `fixes`, and what the stream writer writes.
  func both(_ fixes: [Fix], gap: Duration = .seconds(10)) -> (document: String, stream: String) {
    let metadata = GPXMetadata(name: "stream", description: "d", source: "s")
    var writer = GPXStreamWriter(metadata: metadata, gap: gap)
    var stream = writer.start()
    for fix in fixes { stream += writer.append(fix) }
    stream += writer.finish()
    let afterFinish = writer.finish() + writer.append(fixes.last ?? Fix())
    #expect(afterFinish.isEmpty)
    let document = GPXDocument.text(of: GPXTrack(fixes: fixes, gap: gap), metadata: metadata)
    return (document, stream)
  }

  /// `document` without its metadata's bounds line, which a stream cannot know in advance.
  func withoutBounds(_ document: String) -> String {
    document.split(separator: "\n", omittingEmptySubsequences: false)
      .filter { !$0.contains("<bounds ") }.joined(separator: "\n")
  }

  @Test("the stream writes the document's segments and points, without bounds")
  func sameAsDocument() throws {
    for gap in [Duration.seconds(10), .seconds(30)] {
      let (document, stream) = both(gappedFixes, gap: gap)
      #expect(document.contains("<bounds "))
      #expect(stream == withoutBounds(document))
    }
    // Ending on an epoch without a fix, and a stream of no fix at all.
    let trailing = gappedFixes + fixes(in: Array(cycles([32], fix: false).utf8))
    #expect(both(trailing).stream == withoutBounds(both(trailing).document))
    #expect(both([Fix(), Fix()]).stream == both([Fix(), Fix()]).document)
  }

  @Test("a streamed fixture is valid GPX 1.1", arguments: ["mtk-cold-start", "ublox-m8-drive"])
  func streamedFixture(name: String) throws {
    let (fixes, _) = try fixture(name)
    let (document, stream) = both(fixes)
    #expect(stream == withoutBounds(document))
    if let xmllint = xmllint() {
      let verdict = try validate(stream, xmllint: xmllint)
      #expect(verdict.valid, "\(verdict.messages)")
    }
  }
}
