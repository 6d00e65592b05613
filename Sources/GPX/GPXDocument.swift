import GPSDProtocol
import NMEA

/// What a GPX document says about itself and its track.
public struct GPXMetadata: Sendable, Hashable {
  /// The name of the document and of its track.
  public var name: String
  /// A description (`desc`), such as a recording's `Description` header.
  public var description: String?
  /// Where the data came from (the track's `src`), such as the receiver's chipset.
  public var source: String?
  /// The program that wrote the file (`creator`, required by GPX).
  public var creator: String

  /// Metadata naming the document and its track; `creator` names the writing program.
  public init(
    name: String, description: String? = nil, source: String? = nil, creator: String = "SerialGPS"
  ) {
    self.name = name
    self.description = description
    self.source = source
    self.creator = creator
  }
}

/// GPX 1.1 text (http://www.topografix.com/GPX/1/1/gpx.xsd) for tracks of fixes, without
/// Foundation.
///
/// Only GPX 1.1's own elements are written, so any GPX reader and the schema accept the
/// file: a track point per fix with its latitude and longitude (9 decimals, from the
/// receiver's exact minutes), and `ele` (above mean sea level), `time`, `geoidheight`, `fix`
/// (`2d`, `3d`, `dgps`, `pps`), `sat`, `hdop`, `vdop`, `pdop`, `ageofdgpsdata` and `dgpsid`
/// when the receiver gave them, in the order the schema requires. Speed and course have no
/// place in GPX 1.1's track points and are left out.
public enum GPXDocument {
  /// A whole document: metadata (with the track's bounds), one track, its segments.
  public static func text(of track: GPXTrack, metadata: GPXMetadata) -> String {
    var text = start(metadata, bounds: bounds(track))
    for segment in track.segments {
      text += segmentStart
      for fix in segment { text += trackPoint(fix) }
      text += segmentEnd
    }
    return text + end
  }

  /// One `trkpt` element (with its line end) for a fix with a position; empty for one
  /// without.
  public static func trackPoint(_ fix: Fix) -> String {
    guard let position = fix.position else { return "" }
    var text =
      "      <trkpt lat=\"\(latitude(position.latitude))\" lon=\"\(longitude(position.longitude))\">\n"
    func element(_ name: String, _ value: String?) {
      guard let value else { return }
      text += "        <\(name)>\(value)</\(name)>\n"
    }
    element("ele", fix.altitudeMSL.flatMap { decimal($0, digits: 4) })
    element("time", fix.timestamp.map { $0.iso8601(fractionDigits: 3) })
    element("geoidheight", fix.geoidSeparation.flatMap { decimal($0, digits: 4) })
    element("fix", fixType(fix))
    element("sat", fix.satellitesUsed.flatMap { $0 >= 0 ? String($0) : nil })
    element("hdop", fix.hdop.flatMap { decimal($0, digits: 2) })
    element("vdop", fix.vdop.flatMap { decimal($0, digits: 2) })
    element("pdop", fix.pdop.flatMap { decimal($0, digits: 2) })
    element("ageofdgpsdata", fix.differentialAge.flatMap { decimal($0, digits: 1) })
    element(
      "dgpsid", fix.differentialStation.flatMap { (0...1023).contains($0) ? String($0) : nil })
    return text + "      </trkpt>\n"
  }

  // MARK: - Pieces, shared with GPXStreamWriter

  /// The XML declaration, the metadata (bounds only when known in advance) and the opening
  /// of the track.
  static func start(_ metadata: GPXMetadata, bounds: String?) -> String {
    var text = """
      <?xml version="1.0" encoding="UTF-8"?>
      <gpx version="1.1" creator="\(escaped(metadata.creator))" \
      xmlns="http://www.topografix.com/GPX/1/1" \
      xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" \
      xsi:schemaLocation="http://www.topografix.com/GPX/1/1 \
      http://www.topografix.com/GPX/1/1/gpx.xsd">
        <metadata>
          <name>\(escaped(metadata.name))</name>

      """
    if let description = metadata.description, !description.isEmpty {
      text += "    <desc>\(escaped(description))</desc>\n"
    }
    if let bounds { text += "    " + bounds + "\n" }
    text += "  </metadata>\n  <trk>\n    <name>\(escaped(metadata.name))</name>\n"
    if let source = metadata.source, !source.isEmpty {
      text += "    <src>\(escaped(source))</src>\n"
    }
    return text
  }

  static let segmentStart = "    <trkseg>\n"
  static let segmentEnd = "    </trkseg>\n"
  static let end = "  </trk>\n</gpx>\n"

  /// GPX's fix type: `dgps` for differential and RTK solutions, `pps` for GGA quality 3,
  /// else the fix's dimension.
  static func fixType(_ fix: Fix) -> String? {
    switch fix.quality {
    case .differential?, .rtkFixed?, .rtkFloat?: return "dgps"
    case .pps?: return "pps"
    default: break
    }
    switch fix.mode {
    case .twoD: return "2d"
    case .threeD: return "3d"
    default: return nil
    }
  }

  static func bounds(_ track: GPXTrack) -> String? {
    let positions = track.segments.joined().compactMap(\.position)
    guard !positions.isEmpty else { return nil }
    let latitudes = positions.map { $0.latitude.decimalDegrees }
    let longitudes = positions.map { $0.longitude.decimalDegrees }
    func value(_ degrees: Double) -> String { decimal(degrees, digits: 9) ?? "0" }
    var maximumLongitude = value(longitudes.max()!)
    if longitudes.max()! >= 180 { maximumLongitude = "179.999999999" }
    return "<bounds minlat=\"\(value(latitudes.min()!))\" minlon=\"\(value(longitudes.min()!))\" "
      + "maxlat=\"\(value(latitudes.max()!))\" maxlon=\"\(maximumLongitude)\"/>"
  }

  /// Degrees with nine decimals (about 0.1 mm), from the receiver's exact minutes.
  static func latitude(_ coordinate: Coordinate) -> String {
    DecimalText.degrees(coordinate, decimals: 9)
  }

  /// As ``latitude(_:)``; 180° E is written as 180° W, the same meridian, because GPX's
  /// longitude stops short of +180.
  static func longitude(_ coordinate: Coordinate) -> String {
    let text = DecimalText.degrees(coordinate, decimals: 9)
    return text.hasPrefix("180") ? "-" + text : text
  }

  /// At most `digits` decimals, trailing zeros dropped; `nil` for NaN and the infinities.
  static func decimal(_ value: Double, digits: Int) -> String? {
    guard var text = DecimalText.fixed(value, decimals: digits) else { return nil }
    if text.contains(".") {
      while text.hasSuffix("0") { text.removeLast() }
      if text.hasSuffix(".") { text.removeLast() }
    }
    return text == "-0" ? "0" : text
  }

  /// `text` with the five XML special characters escaped, and control characters (which
  /// XML 1.0 forbids) replaced by spaces.
  static func escaped(_ text: String) -> String {
    var out = ""
    for scalar in text.unicodeScalars {
      switch scalar {
      case "&": out += "&amp;"
      case "<": out += "&lt;"
      case ">": out += "&gt;"
      case "\"": out += "&quot;"
      case "'": out += "&apos;"
      default:
        if scalar.value < 0x20 && scalar != "\t" && scalar != "\n" {
          out += " "
        } else {
          out.unicodeScalars.append(scalar)
        }
      }
    }
    return out
  }
}

/// Writes a GPX 1.1 track as fixes arrive, for a program that logs for hours: only the last
/// point is kept, and each call returns the text to append to the file.
///
/// ```swift
/// var gpx = GPXStreamWriter(metadata: GPXMetadata(name: "Fleet 12"))
/// file.write(gpx.start())
/// for await event in receiver.subscribe() {
///   if case .fix(let update) = event { file.write(gpx.append(update.fix)) }
/// }
/// file.write(gpx.finish())
/// ```
///
/// The text is what ``GPXDocument/text(of:metadata:)`` writes for the same fixes, except that
/// the metadata has no `bounds` (they are not known when the file begins; GPX makes them
/// optional). A file cut short before ``finish()`` lacks only its closing tags.
public struct GPXStreamWriter: Sendable {
  /// What the document says about itself and its track.
  public let metadata: GPXMetadata
  private var segmenter: GPXSegmenter
  private var finished = false

  /// - Parameter gap: a longer time between two fixes starts a new segment.
  public init(metadata: GPXMetadata, gap: Duration = .seconds(10)) {
    self.metadata = metadata
    segmenter = GPXSegmenter(gap: gap)
  }

  /// The document's beginning: the XML declaration, the metadata, the track's name.
  public func start() -> String {
    GPXDocument.start(metadata, bounds: nil)
  }

  /// The text for the next epoch's fix: its track point, after the end of the segment before
  /// it and the start of a new one as needed. A fix without a position gives the end of the
  /// open segment, if any, and otherwise nothing.
  public mutating func append(_ fix: Fix) -> String {
    guard !finished else { return "" }
    let wasOpen = segmenter.isSegmentOpen
    switch segmenter.place(fix) {
    case .leftOut:
      return wasOpen ? GPXDocument.segmentEnd : ""
    case .startsSegment:
      return (wasOpen ? GPXDocument.segmentEnd : "") + GPXDocument.segmentStart
        + GPXDocument.trackPoint(fix)
    case .continuesSegment:
      return GPXDocument.trackPoint(fix)
    }
  }

  /// The document's end: closes the open segment, the track and the document. Later calls
  /// return nothing.
  public mutating func finish() -> String {
    guard !finished else { return "" }
    finished = true
    return (segmenter.isSegmentOpen ? GPXDocument.segmentEnd : "") + GPXDocument.end
  }
}
