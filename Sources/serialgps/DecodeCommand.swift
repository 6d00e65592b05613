import GPSDProtocol
import Glibc
import NMEA
import POSIX

// `serialgps decode [FILE|-] [--json [--device NAME]] [--stats]`: a recording (or standard input) to fixes.

let decodeCommand = Command(
  name: "decode", usage: "decode [FILE|-] [--json [--device NAME]] [--stats]",
  summary: "Decode a recording (or standard input) and print one line per fix.",
  arguments: DecodeCommand.self
) {
  DecodeCommand.decode($0)
}

enum DecodeCommand: CommandArguments {
  static let help = """
    usage: serialgps decode [FILE|-] [--json [--device NAME]] [--stats]

    Decodes a recording of what a GPS receiver sent (NMEA, with UBX, SiRF or CASIC binary
    frames mixed in) and prints one line per fix, as `serialgps watch` does: time, fix mode,
    latitude and longitude in degrees, altitude above mean sea level, speed, satellites used
    and horizontal accuracy, "-" for what the receiver did not say. Without FILE, or with -,
    it reads standard input.

    Lines that begin with # are comments. Binary frames may hold # and line feeds, so a # is
    taken for a comment only at the start of a line that follows a text line (one without
    control bytes), and only if its own line is text.

    options:
      --json          print gpsd JSON instead: a TPV report per epoch and a SKY report per
                      epoch with satellite data, one per line, with gpsd's field names and
                      units (the lines `serialgps watch --json` and `serve` send)
      --device NAME   with --json, name the device in each report (its device member), as
                      `watch --json` and `serve` do: the receiver the recording was made
                      from, say. Without it the reports name no device.
      --stats         print the framer's and fix builder's counters on standard error at
                      the end
      --help          show this help

    Exit status: 0 when the recording was read to its end, 2 when it could not be opened or
    read or the arguments are wrong.

    """

  struct Options: Equatable {
    var path = "-"
    var json = false
    var stats = false
    /// The `device` member of the JSON reports.
    var device: String?
  }

  typealias Parsed = ParsedArguments<Options>

  static func parse(_ arguments: [String]) -> Parsed {
    var options = Options()
    var path: String?
    return ArgumentReader.parse(arguments) { argument, reader throws(UsageMessage) in
      switch argument {
      case "--json": options.json = true
      case "--stats": options.stats = true
      case "--device":
        options.device = try reader.value("--device needs a name, such as /dev/ttyACM0")
      default:
        try takeOperand(argument, into: &path, "decodes one recording")
      }
    } then: {
      options.path = path ?? "-"
      return options
    }
  }

  /// Decodes the recording the options name; the exit status.
  static func decode(_ options: Options) -> Int32 {
    let name = options.path == "-" ? "standard input" : "'\(options.path)'"
    let descriptor: FileDescriptor
    if options.path == "-" {
      descriptor = .standardInput
    } else {
      do {
        descriptor = try FileDescriptor.open(options.path, O_RDONLY | O_CLOEXEC)
      } catch {
        Output.error.line(
          "serialgps decode: cannot open \(name): \(error); check the path, or give - to read "
            + "standard input")
        return 2
      }
    }
    defer { if descriptor != .standardInput { try? descriptor.close() } }

    var session = DecodeSession(json: options.json, device: options.device)
    var buffer = [UInt8](repeating: 0, count: 1 << 16)
    let write: ([UInt8]) -> Void = { Output.standard.write(bytes: $0) }
    while true {
      let count: Int
      switch buffer.withUnsafeMutableBytes({ raw in
        Result { () throws(Errno) in try descriptor.read(into: raw) }
      }) {
      case .success(let read): count = read
      case .failure(let error):
        Output.standard.flush()
        Output.error.line(
          "serialgps decode: cannot read \(name): \(error); give a recording file or -")
        return 2
      }
      if count == 0 { break }
      buffer.withUnsafeBytes {
        session.feed(UnsafeRawBufferPointer(rebasing: $0[0..<count]), write)
      }
      // Lines appear as soon as their epoch is complete, also when reading a live pipe.
      Output.standard.flush()
    }
    session.finish(write)
    Output.standard.flush()
    if options.stats {
      Output.error.write(session.statisticsReport(name: name))
    }
    if session.decoder.statistics.framer.sentences == 0 {
      Output.error.line("serialgps decode: no NMEA sentences found in \(name)")
    }
    return 0
  }
}

/// Bytes of a recording in, output lines out: comment filter, decoder and formatting, with
/// no I/O of its own (so tests drive it directly).
struct DecodeSession {
  var filter = CommentFilter()
  var decoder = NMEADecoder()
  var formatter: Formatter
  var bytesRead = 0

  /// - Parameter device: the `device` member of the JSON reports (none by default).
  init(json: Bool, device: String? = nil) {
    formatter = Formatter(json: json, device: device)
  }

  /// Decodes a chunk; `write` receives the lines it completed.
  mutating func feed(_ chunk: UnsafeRawBufferPointer, _ write: ([UInt8]) -> Void) {
    bytesRead += chunk.count
    Self.decode(chunk, filter: &filter, decoder: &decoder, formatter: &formatter)
    formatter.flush(write)
  }

  /// Ends the recording: the epoch in progress is emitted.
  mutating func finish(_ write: ([UInt8]) -> Void) {
    filter.finish()
    decoder.finish { formatter.handle($0) }
    formatter.flush(write)
  }

  private static func decode(
    _ chunk: UnsafeRawBufferPointer, filter: inout CommentFilter, decoder: inout NMEADecoder,
    formatter: inout Formatter
  ) {
    filter.filter(chunk) { data in
      decoder.decode(data) { formatter.handle($0) }
    }
  }

  /// Turns decoder events into output lines.
  struct Formatter {
    let json: Bool
    var reports: ReportLines
    /// Output not yet handed out.
    var pending: [UInt8] = []

    init(json: Bool, device: String? = nil) {
      self.json = json
      reports = ReportLines(device: device)
      pending.reserveCapacity(1 << 16)
    }

    mutating func handle(_ event: DecoderEvent) {
      switch event {
      case .sentence(.pubxTime(let time)):
        if let leap = time.leapSeconds, !time.leapSecondsAreDefault { reports.leapSeconds = leap }
      case .epoch(let epoch):
        if json {
          pending.append(contentsOf: reports.tpv(epoch.fix))
          if let view = epoch.satellites {
            pending.append(contentsOf: reports.sky(view, of: epoch.fix))
          }
        } else {
          pending.append(contentsOf: FixLine.describe(epoch.fix).utf8)
          pending.append(0x0A)
        }
      default:
        break
      }
    }

    mutating func flush(_ write: ([UInt8]) -> Void) {
      guard !pending.isEmpty else { return }
      write(pending)
      pending.removeAll(keepingCapacity: true)
    }
  }

  /// The counters, for `--stats`.
  func statisticsReport(name: String) -> String {
    let statistics = decoder.statistics
    let framer = statistics.framer
    let builder = statistics.builder
    let reasons = statistics.impossibleValues.counts.map { "\($0.reason) \($0.count)" }
    let impossible =
      reasons.isEmpty
      ? "0" : "\(statistics.impossibleValues.total) (" + reasons.joined(separator: ", ") + ")"
    return """
      serialgps decode: statistics for \(name)
        bytes read             \(bytesRead)
        comment lines          \(filter.commentLines)
        sentences accepted     \(framer.sentences)
        sentences rejected     \(framer.rejectedSentences) (bad checksum \(framer.badChecksum), \
      missing checksum \(framer.missingChecksum), too long \(framer.tooLong), \
      malformed \(framer.malformed))
        binary frames          UBX \(framer.ubxFrames), SiRF \(framer.sirfFrames), \
      RTCM 3 \(framer.rtcm3Frames), CASIC \(framer.casicFrames), bad \(framer.badBinaryFrames), \
      unfinished at the end \(framer.unfinishedBinaryFrames)
        garbage bytes          \(framer.garbageBytes)
        parse errors           \(statistics.parseErrors)
        impossible values      \(impossible), each field dropped alone (an impossible time \
      or message number refuses its sentence, a parse error)
        unknown sentences      \(statistics.unknownSentences)
        CASIC messages         decoded \(statistics.casic.decoded), not decoded \
      \(statistics.casic.notDecoded), refused \(statistics.casic.rejected), fields dropped \
      \(statistics.casic.droppedFields)
        epochs                 \(builder.epochs) (closed at the learned cycle end \
      \(builder.epochsClosedAtCycleEnd), late sentences \(builder.lateSentences), \
      cycle ends forgotten \(builder.cycleEndsForgotten), dated by the next epoch \
      \(builder.epochsDatedByTheNext))

      """
  }
}
