import GPX
import Glibc
import NMEA
import POSIX
import Replay

// `serialgps gpx FILE [-o track.gpx] [--gap S] [--name NAME]`: a GPX 1.1 track from a
// recording. One track point per epoch with a fix; epochs without one are skipped and end the
// track segment, as does a gap in time. Only GPX 1.1's own elements are written (ele, time,
// geoidheight, fix, sat, hdop, vdop, pdop, ageofdgpsdata, dgpsid), so any GPX 1.1 reader and
// the schema accept the file. See docs/replay.md.
let gpxCommand = Command(
  name: "gpx",
  usage: "gpx FILE [-o track.gpx] [--gap S] [--name NAME]",
  summary: "Write a GPX 1.1 track from a recording.",
  arguments: GPXOptions.self
) { options in
  GPXSession(options: options).run()
}

/// What `serialgps gpx` was asked for.
struct GPXOptions: Equatable, CommandArguments {
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
    return ArgumentReader.parse(arguments) { argument, reader throws(UsageMessage) in
      switch argument {
      case "-o", "--output":
        options.output = try reader.value("-o needs a file name")
      case "--gap":
        options.gap = try reader.seconds(
          in: 0...1_000_000_000, "--gap needs a number of seconds from 0.001, such as 10")
      case "--name":
        options.name = try reader.value("--name needs a name", allowingEmpty: true)
      default:
        try takeOperand(argument, into: &input, "converts one recording")
      }
    } then: { () throws(UsageMessage) in
      guard let input else {
        throw UsageMessage("give the recording to convert, such as fixtures/ublox-m8-drive.nmea")
      }
      options.input = input
      return options
    }
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
    let header = Recording.header(of: bytes).fields
    func headerValue(_ key: String) -> String? { header.first { $0.key == key }?.value }
    let fixes = Self.fixes(in: bytes)
    let track = GPXTrack(fixes: fixes, gap: options.gap)
    let trackName =
      options.name ?? headerValue("Name")
      ?? (options.input == "-" ? "recording" : RecordingHeader.defaultName(forFile: options.input))
    let document = GPXDocument.text(
      of: track,
      metadata: GPXMetadata(
        name: trackName, description: headerValue("Description"), source: headerValue("Chipset"),
        creator: "serialgps \(Version.serialgps)"))

    if options.output == "-" {
      Output.standard.write(document)
      Output.standard.flush()
    } else {
      do {
        let file = try RecordingWriter(creating: options.output)
        try file.append(document.utf8)
        try file.finish()
      } catch {
        Output.error.line("serialgps gpx: \(error)")
        return 2
      }
    }
    let points = track.pointCount
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

  /// The whole file, or standard input for `-`; the reason on failure.
  func readAll(_ path: String) -> Result<[UInt8], Errno> {
    Result { () throws(Errno) in
      path == "-"
        ? try FileDescriptor.standardInput.readToEnd() : try FileDescriptor.contents(of: path)
    }
  }
}
