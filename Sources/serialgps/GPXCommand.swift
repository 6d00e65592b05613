import GPSDProtocol
import Glibc
import NMEA
import POSIX

// `serialgps gpx FILE [-o track.gpx] [--gap S] [--name NAME]`: a GPX 1.1 track from a
// recording. One track point per epoch with a fix; epochs without one are skipped and end the
// track segment, as does a gap in time. Only GPX 1.1's own elements are written (ele, time,
// geoidheight, fix, sat, hdop, vdop, pdop, ageofdgpsdata, dgpsid), so any GPX 1.1 reader and
// the schema accept the file. See docs/replay.md.
let gpxCommand = Command(
  name: "gpx",
  usage: "gpx FILE [-o track.gpx] [--gap S] [--name NAME]",
  summary: "Write a GPX 1.1 track from a recording."
) { arguments in
  await GPXOptions.parse(arguments).run(command: "gpx", help: GPXOptions.help) { options in
    GPXSession(options: options).run()
  }
}

/// What `serialgps gpx` was asked for.
struct GPXOptions: Equatable {
  var input: String
  /// `-` (the default): standard output.
  var output = "-"
  /// A longer time between two fixes starts a new segment.
  var gap: Duration = .seconds(10)
  var name: String?

  typealias Parsed = ParsedArguments<GPXOptions>

  static let help = """
    usage: serialgps gpx FILE [-o track.gpx] [options]

    Decodes a recording (a fixture, a `serialgps record` file, an NMEA log; - reads standard
    input) and writes a GPX 1.1 track: one track point per epoch with a position fix, with its
    elevation above mean sea level, UTC time, geoid height, fix type (2d, 3d, dgps), satellites
    used, HDOP, VDOP, PDOP and DGPS age and station when the receiver gave them. Epochs without
    a fix are left out and end the track segment; so does a gap in time.

    options:
      -o, --output FILE   where to write (default: standard output)
      --gap S             start a new segment when two fixes are more than S seconds apart
                          (default 10)
      --name NAME         the track's name (default: the recording's Name header or file name)

    Exit status: 0 when the track was written (a recording without any fix gives an empty
    track and a note on standard error), 2 when the recording cannot be read, the file
    cannot be written, or the arguments are wrong.

    """

  static func parse(_ arguments: [String]) -> Parsed {
    var options = GPXOptions(input: "")
    var input: String?
    var reader = ArgumentReader(arguments)
    do throws(UsageMessage) {
      while let argument = reader.next() {
        switch argument {
        case "--help", "-h":
          return .help
        case "-o", "--output":
          options.output = try reader.value("-o needs a file name")
        case "--gap":
          options.gap = try reader.seconds(
            in: 0...1_000_000_000, "--gap needs a number of seconds above 0, such as 10")
        case "--name":
          options.name = try reader.value("--name needs a name", allowingEmpty: true)
        default:
          if isOption(argument) { return .invalid("unknown option '\(argument)'") }
          guard input == nil else {
            return .invalid(
              "converts one recording at a time, not both '\(input!)' and '\(argument)'")
          }
          input = argument
        }
      }
    } catch {
      return .invalid(error.text)
    }
    guard let input else {
      return .invalid("give the recording to convert, such as fixtures/ublox-m8-drive.nmea")
    }
    options.input = input
    return .options(options)
  }
}

/// One run of `serialgps gpx`.
struct GPXSession {
  let options: GPXOptions

  func run() -> Int32 {
    let name = options.input == "-" ? "standard input" : "'\(options.input)'"
    let bytes: [UInt8]
    switch readAll(options.input) {
    case .success(let read): bytes = read
    case .failure(let reason):
      Output.error.line(
        "serialgps gpx: cannot read \(name): \(reason); check the path, or give - for standard "
          + "input")
      return 2
    }
    let header = Self.headerFields(bytes)
    let fixes = Self.fixes(in: bytes)
    let track = GPXTrack(fixes: fixes, gap: options.gap)
    let trackName =
      options.name ?? header["Name"]
      ?? (options.input == "-" ? "recording" : RecordSession.defaultName(options.input))
    let document = GPXWriter.document(
      track: track, name: trackName, description: header["Description"],
      source: header["Chipset"])

    if options.output == "-" {
      Output.standard.write(document)
      Output.standard.flush()
    } else {
      let file: FileDescriptor
      do {
        file = try FileDescriptor.open(options.output, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC)
      } catch {
        Output.error.line(
          "serialgps gpx: cannot write \(options.output): \(error). "
            + "Check the directory exists and is writable.")
        return 2
      }
      var sink = RecordingSink(descriptor: file, path: options.output)
      guard sink.write(Array(document.utf8)), sink.finish() else { return 2 }
    }
    let points = track.segments.reduce(0) { $0 + $1.count }
    if points == 0 {
      Output.error.line(
        "serialgps gpx: \(name) holds no epoch with a position fix (\(fixes.count) epochs in "
          + "all): the track is empty.")
    } else if options.output != "-" {
      Output.error.line(
        "serialgps gpx: \(points) track points in \(track.segments.count) "
          + "segment\(track.segments.count == 1 ? "" : "s") → \(options.output) "
          + "(\(fixes.count - points) epochs without a fix left out)")
    }
    return 0
  }

  /// Every epoch's fix, decoded as `serialgps decode` does (comment lines dropped).
  static func fixes(in bytes: [UInt8]) -> [Fix] {
    var filter = CommentFilter()
    var decoder = NMEADecoder()
    var fixes: [Fix] = []
    bytes.withUnsafeBytes { raw in
      filter.filter(raw) { data in
        decoder.decode(data) { if case .epoch(let epoch) = $0 { fixes.append(epoch.fix) } }
      }
    }
    filter.finish()
    decoder.finish { if case .epoch(let epoch) = $0 { fixes.append(epoch.fix) } }
    return fixes
  }

  /// The leading `# Key: value` lines.
  static func headerFields(_ bytes: [UInt8]) -> [String: String] {
    var fields: [String: String] = [:]
    var offset = 0
    while offset < bytes.count, bytes[offset] == UInt8(ascii: "#") {
      let end = bytes[offset...].firstIndex(of: 0x0A) ?? bytes.count
      let line = String(decoding: bytes[(offset + 1)..<end], as: UTF8.self)
      if let colon = line.firstIndex(of: ":") {
        let key = line[..<colon].trimmed(of: " \t\r")
        let value = line[line.index(after: colon)...].trimmed(of: " \t\r")
        if !key.isEmpty, !key.contains(" "), fields[key] == nil { fields[key] = value }
      }
      offset = end + 1
    }
    return fields
  }

  /// The whole file, or standard input for `-`; the reason on failure.
  func readAll(_ path: String) -> Result<[UInt8], Errno> {
    Result { () throws(Errno) in
      path == "-"
        ? try FileDescriptor.standardInput.readToEnd() : try FileDescriptor.contents(of: path)
    }
  }
}

extension StringProtocol {
  func trimmed(of set: String) -> String {
    let blanks = Set(set.unicodeScalars)
    let scalars = unicodeScalars.drop { blanks.contains($0) }.reversed().drop {
      blanks.contains($0)
    }.reversed()
    return String(String.UnicodeScalarView(scalars))
  }
}

/// The fixes of a recording as track segments: epochs without a position fix are left out and
/// end the segment; a time gap longer than `gap` (or a step back in time) starts a new one.
struct GPXTrack {
  var segments: [[Fix]] = []

  init(fixes: [Fix], gap: Duration) {
    var current: [Fix] = []
    for fix in fixes {
      guard fix.mode != .noFix, fix.position != nil else {
        if !current.isEmpty { segments.append(current) }
        current = []
        continue
      }
      if let last = current.last, let step = Self.interval(from: last, to: fix),
        step <= .zero || step > gap
      {
        segments.append(current)
        current = []
      }
      current.append(fix)
    }
    if !current.isEmpty { segments.append(current) }
  }

  /// The time from one fix to the next: by date and time when both have them, else by time of
  /// day (a day ahead at most, so across midnight too); `nil` without times.
  static func interval(from first: Fix, to second: Fix) -> Duration? {
    if let a = first.timestamp, let b = second.timestamp {
      let seconds = b.secondsSinceUnixEpoch - a.secondsSinceUnixEpoch
      return .seconds(seconds)
        + .nanoseconds(Int64(b.time.nanoseconds) - Int64(a.time.nanoseconds))
    }
    guard let a = first.time, let b = second.time else { return nil }
    var nanoseconds = b.nanosecondsOfDay - a.nanosecondsOfDay
    if nanoseconds < 0 { nanoseconds += 86_400 * 1_000_000_000 }
    return .nanoseconds(nanoseconds)
  }
}

/// GPX 1.1 text for a track (http://www.topografix.com/GPX/1/1/gpx.xsd).
enum GPXWriter {
  static func document(track: GPXTrack, name: String, description: String?, source: String?)
    -> String
  {
    var text = """
      <?xml version="1.0" encoding="UTF-8"?>
      <gpx version="1.1" creator="serialgps \(Version.serialgps)" \
      xmlns="http://www.topografix.com/GPX/1/1" \
      xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" \
      xsi:schemaLocation="http://www.topografix.com/GPX/1/1 \
      http://www.topografix.com/GPX/1/1/gpx.xsd">
        <metadata>
          <name>\(escaped(name))</name>

      """
    if let description, !description.isEmpty {
      text += "    <desc>\(escaped(description))</desc>\n"
    }
    if let bounds = bounds(track) { text += "    " + bounds + "\n" }
    text += "  </metadata>\n  <trk>\n    <name>\(escaped(name))</name>\n"
    if let source, !source.isEmpty { text += "    <src>\(escaped(source))</src>\n" }
    for segment in track.segments {
      text += "    <trkseg>\n"
      for fix in segment { text += point(fix) }
      text += "    </trkseg>\n"
    }
    text += "  </trk>\n</gpx>\n"
    return text
  }

  /// One `trkpt`, its elements in the order the schema's `wptType` demands.
  static func point(_ fix: Fix) -> String {
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
  /// XML 1.0 forbids) replaced.
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
