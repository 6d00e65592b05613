import GPSDProtocol
import Glibc
import NMEA
import POSIX

// `serialgps decode [FILE|-] [--json] [--stats]`: a recording (or standard input) to fixes.

let decodeCommand = Command(
  name: "decode", usage: "decode [FILE|-] [--json] [--stats]",
  summary: "Decode a recording (or standard input) and print one line per fix."
) { arguments in
  DecodeCommand.main(arguments)
}

enum DecodeCommand {
  static let help = """
    usage: serialgps decode [FILE|-] [--json] [--stats]

    Decodes a recording of what a GPS receiver sent (NMEA, with UBX or SiRF binary frames
    mixed in) and prints one line per fix: time, fix mode, latitude and longitude in degrees,
    altitude above mean sea level, speed and the satellites used. Without FILE, or with -,
    it reads standard input.

    Lines that begin with # are comments. Binary frames may hold # and line feeds, so a # is
    taken for a comment only at the start of a line that follows a text line (one without
    control bytes), and only if its own line is text.

    options:
      --json    print gpsd JSON instead: a TPV report per epoch and a SKY report per epoch
                with satellite data, one per line, with gpsd's field names and units
      --stats   print the framer's and fix builder's counters on standard error at the end
      --help    show this help

    Exit status: 0 when the recording was read to its end, 2 when it could not be opened or
    read or the arguments are wrong.

    """

  struct Options: Equatable {
    var path = "-"
    var json = false
    var stats = false
    var help = false
  }

  /// The options, or the one-line complaint for standard error.
  static func parse(_ arguments: [String]) -> Result<Options, UsageError> {
    var options = Options()
    var path: String?
    for argument in arguments {
      switch argument {
      case "--json": options.json = true
      case "--stats": options.stats = true
      case "--help", "-h": options.help = true
      case "-":
        guard path == nil else { return .failure(.twoInputs(path!, argument)) }
        path = argument
      default:
        if argument.hasPrefix("-") { return .failure(.unknownOption(argument)) }
        guard path == nil else { return .failure(.twoInputs(path!, argument)) }
        path = argument
      }
    }
    options.path = path ?? "-"
    return .success(options)
  }

  struct UsageError: Error, Equatable {
    let message: String
    static func unknownOption(_ option: String) -> UsageError {
      UsageError(
        message: "unknown option '\(option)'; run 'serialgps decode --help' for the options")
    }
    static func twoInputs(_ first: String, _ second: String) -> UsageError {
      UsageError(message: "decodes one recording at a time, not both '\(first)' and '\(second)'")
    }
  }

  static func main(_ arguments: [String]) -> Int32 {
    let options: Options
    switch parse(arguments) {
    case .success(let parsed): options = parsed
    case .failure(let error):
      Output.error.line("serialgps decode: " + error.message)
      return 2
    }
    if options.help {
      Output.standard.write(help)
      return 0
    }
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

    var session = DecodeSession(json: options.json)
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

  init(json: Bool) {
    formatter = Formatter(json: json)
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
    var writer = JSONWriter(capacity: 4096)
    /// Output not yet handed out.
    var pending: [UInt8] = []
    /// Leap seconds from `$PUBX,04`, once the receiver has them from the satellites.
    var leapSeconds: Int?

    init(json: Bool) {
      self.json = json
      pending.reserveCapacity(1 << 16)
    }

    mutating func handle(_ event: DecoderEvent) {
      switch event {
      case .sentence(.pubxTime(let time)):
        if let leap = time.leapSeconds, !time.leapSecondsAreDefault { leapSeconds = leap }
      case .epoch(let epoch):
        if json {
          writer.removeAll()
          writer.tpv(epoch.fix, leapSeconds: leapSeconds)
          writer.newline()
          if let view = epoch.satellites {
            writer.sky(view, time: epoch.fix.timestamp, satellitesUsed: epoch.fix.satellitesUsed)
            writer.newline()
          }
          pending.append(contentsOf: writer.bytes)
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
    return """
      serialgps decode: statistics for \(name)
        bytes read             \(bytesRead)
        comment lines          \(filter.commentLines)
        sentences accepted     \(framer.sentences)
        sentences rejected     \(framer.rejectedSentences) (bad checksum \(framer.badChecksum), \
      missing checksum \(framer.missingChecksum), too long \(framer.tooLong), \
      malformed \(framer.malformed))
        binary frames          UBX \(framer.ubxFrames), SiRF \(framer.sirfFrames), \
      bad \(framer.badBinaryFrames)
        garbage bytes          \(framer.garbageBytes)
        parse errors           \(statistics.parseErrors)
        unknown sentences      \(statistics.unknownSentences)
        epochs                 \(builder.epochs) (closed at the learned cycle end \
      \(builder.epochsClosedAtCycleEnd), late sentences \(builder.lateSentences), \
      cycle ends forgotten \(builder.cycleEndsForgotten))

      """
  }
}

/// The one-line description of a fix for people.
enum FixLine {
  /// `2026-03-17T23:40:00.000Z  3D  47.3769033 8.5417017  alt 408.3 m  speed 13.74 m/s  sats 18`
  static func describe(_ fix: Fix) -> String {
    var parts: [String] = []
    if let timestamp = fix.timestamp {
      parts.append(timestamp.description)
    } else if let time = fix.time {
      parts.append(time.description + " (no date)")
    } else {
      parts.append("(no time)")
    }
    parts.append(fix.mode == .noFix ? "no fix" : fix.mode.description)
    if fix.mode != .noFix, let position = fix.position {
      parts.append(
        DecimalText.degrees(position.latitude, decimals: 7) + " "
          + DecimalText.degrees(position.longitude, decimals: 7))
    }
    if fix.mode != .noFix, let altitude = fix.altitudeMSL ?? fix.altitudeHAE,
      let text = DecimalText.fixed(altitude, decimals: 1)
    {
      parts.append("alt \(text) m")
    }
    if let speed = fix.speed, let text = DecimalText.fixed(speed, decimals: 2) {
      parts.append("speed \(text) m/s")
    }
    if let used = fix.satellitesUsed { parts.append("sats \(used)") }
    return parts.joined(separator: "  ")
  }
}
