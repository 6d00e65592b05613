import Chipsets
import Glibc
import NMEA
import POSIX
import Replay
import SerialGPS
import SerialPort

// `serialgps record DEVICE -o FILE [--duration S] [--baud N|auto] [--chipset …] [--name NAME]`:
// every byte a receiver sends, binary frames and noise included, after a `# Key: value`
// header, until the duration is over or Ctrl-C. `serialgps replay` and `decode` read the
// file back; the fixes are the same. See docs/replay.md.
let recordCommand = Command(
  name: "record",
  usage:
    "record DEVICE -o FILE [--duration S] [--baud N|auto] [--chipset \(ChipsetRegistry.allNames)] "
    + "[--name NAME]",
  summary: "Record every byte a receiver sends, with a header, for replay and decode.",
  arguments: RecordOptions.self
) { options in
  let interruption = StopSignals()
  // The session blocks on the port, on the driver's thread: `record` has the process to
  // itself (the signals come on a thread of their own), and its commands go through the
  // driver's async command loop (``CommandDriver``), shared with the gated receiver.
  return await RecordSession(options: options).run(interruption)
}

/// What `serialgps record` was asked for.
struct RecordOptions: Equatable, CommandArguments {
  var device: String
  var output: String
  var duration: Duration?
  /// `nil`: listen for the rate.
  var baud: BaudRate?
  var chipset: ChipsetFamily?
  var name: String?

  typealias Parsed = ParsedArguments<RecordOptions>

  static let help = """
    usage: serialgps record DEVICE -o FILE [options]

    Records everything the GPS receiver on DEVICE sends, byte for byte (NMEA, binary UBX or
    SiRF frames, line noise), into FILE after a header of `# Key: value` lines (Name, Device,
    Baud, Date, Started, Recorder). `serialgps decode FILE`, `serialgps replay FILE` and
    `serialgps gpx FILE` read it back.

    options:
      -o, --output FILE   where to write (replaced if it exists)
      --duration S        stop after S seconds (default: until Ctrl-C)
      --baud N|auto       the line speed (4800 … 921600), or auto (default) to find it by
                          listening first; USB receivers (ttyACM) ignore it
      --chipset NAME      \(ChipsetRegistry.namesInProse(generic: false)): wake the receiver with its chipset's commands
                          before recording (their answers are recorded too) and put it back
                          to standby at the end; a sleeping receiver is silent, so unless
                          --baud names a rate it is opened at the chipset's factory rate and
                          woken at once, as watch does. Without it nothing is written to DEVICE.
      --name NAME         the recording's Name header (default: FILE without its extension)

    With --baud auto the bytes heard at the rate found are recorded; those heard at wrong
    rates while searching are noise and are not. FILE is made once the rate is known: Ctrl-C
    during the search records nothing, and says so.
    Exit status: 0 when the duration was reached or on Ctrl-C (as every command after a
    signal), 1 when the device went away while recording (what was recorded is kept), 2 for
    usage, device or file errors.

    """

  static func parse(_ arguments: [String]) -> Parsed {
    var positional: [String] = []
    var output: String?
    var duration: Duration?
    var receiver = ReceiverArguments.record
    var name: String?
    return ArgumentReader.parse(arguments) { argument, reader throws(UsageMessage) in
      if try receiver.take(argument, from: &reader) { return }
      switch argument {
      case "-o", "--output":
        output = try reader.value("-o needs a file name")
      case "--duration":
        duration = try reader.seconds(
          in: 0...1_000_000_000, "--duration needs a number of seconds from 0.001, such as 60")
      case "--name":
        name = try reader.value("--name needs a name")
      default:
        if argument.hasPrefix("-") { throw .unknownOption(argument) }
        positional.append(argument)
      }
    } then: { () throws(UsageMessage) in
      guard positional.count == 1 else {
        throw UsageMessage(
          positional.isEmpty
            ? "give the device to record, such as /dev/ttyACM0"
            : "records one device at a time, not \(positional.joined(separator: " and "))")
      }
      guard let output else { throw UsageMessage("give the file to write with -o FILE") }
      return RecordOptions(
        device: positional[0], output: output, duration: duration, baud: receiver.baud,
        chipset: receiver.family,
        name: name)
    }
  }
}

/// One run of `serialgps record`: open, header, commands, bytes, summary.
struct RecordSession {
  let options: RecordOptions

  /// How long a receiver woken at a guessed rate may stay unreadable before record says so
  /// (or the duration, when shorter).
  static let silenceAfterWaking: Duration = .seconds(5)

  func run(_ interruption: StopSignals) async -> Int32 {
    let device = options.device
    let opened: SerialConnector.OpenedPort
    var memory = BaudRateMemory()
    var baud =
      options.baud.map { .fixed($0) }
      ?? SerialConnector.BaudSetting.automatic(timePerRate: Autobaud.defaultTimePerRate)
    // A receiver its chipset's commands wake is woken first, as watch does: asleep it is
    // silent, and listening for its rate would only cost the whole search.
    if let family = options.chipset {
      baud = SerialConnector.baud(baud, wakingWith: family, path: device, memory: memory)
    }
    let wakesAtGuessedRate =
      options.baud == nil && options.chipset?.hasCommands == true
      && HostInterface(devicePath: device) != .usb
    do {
      opened = try SerialConnector.openPort(path: device, baud: baud, memory: &memory) {
        port, searching in
        interruption.onStop { _ in port.interrupt() }
        if searching {
          Output.error.line("serialgps record: listening to \(device) for its baud rate …")
        }
      }
    } catch let error as SerialPortError where error.reason == .interrupted {
      if interruption.isRequested {
        // Stopped while listening for the rate: the file is made only once the rate is known.
        Output.error.line(
          "serialgps record: stopped while listening for the baud rate of \(device): nothing "
            + "recorded, \(options.output) not written")
        return 0
      }
      Output.error.line("serialgps record: \(error)")
      return 2
    } catch {
      Output.error.line("serialgps record: \(error)")
      return 2
    }
    let port = opened.port
    defer { port.close() }
    let rate = opened.rate
    if opened.unrecognisedRates != nil {
      let wake =
        options.chipset == nil
        ? ", or --chipset \(ChipsetRegistry.commandableNames) to wake it"
        : " (--chipset nmea sends no wake commands)"
      Output.error.line(
        "serialgps record: heard no NMEA from \(device) at any rate (asleep, or not a GPS "
          + "receiver); recording at \(rate) baud. Pass --baud if you know the rate\(wake).")
    }
    // What the search heard at the rate it found: the receiver's first sentences, recorded.
    let heard = opened.heard

    let header = RecordingHeader(
      name: options.name ?? RecordingHeader.defaultName(forFile: options.output), device: device,
      baud: rate, chipset: options.chipset, recorder: "serialgps \(Version.serialgps)")
    let writer: RecordingWriter
    do {
      writer = try RecordingWriter(creating: options.output, header: header)
    } catch {
      Output.error.line("serialgps record: \(error)")
      return 2
    }
    defer { writer.close() }

    let commands = options.chipset.map {
      $0.commandSet(interface: HostInterface(devicePath: device))
    }
    let until = options.duration.map { "for \($0)" } ?? "until Ctrl-C"
    Output.error.line(
      "serialgps record: \(device) at \(rate) baud → \(options.output), \(until).")

    var capture = Capture(port: port, terminal: isatty(2) == 1)
    guard capture.record(heard, into: writer) else { return 2 }
    let deadline = options.duration.map { ContinuousClock.now + $0 }
    var outcome = Capture.Outcome.stopped
    if let commands, !commands.powerOnSteps.isEmpty {
      Output.error.line("serialgps record: waking the receiver (\(options.chipset!.displayName))")
      outcome = await capture.send(
        commands.powerOnSteps, retry: .always, into: writer, interruption: interruption)
    }
    if outcome.isStopped, wakesAtGuessedRate {
      // Woken at a rate guessed, not heard: say so if nothing readable comes back.
      let check = ContinuousClock.now + Self.silenceAfterWaking
      outcome = capture.run(
        into: writer, until: deadline.map { min($0, check) } ?? check, interruption: interruption)
      if outcome.isStopped, !interruption.isRequested,
        capture.decoder.statistics.framer.sentences == 0
      {
        capture.clearProgress()
        Output.error.line(
          "serialgps record: heard no NMEA from \(device) at \(rate) baud since waking it: if "
            + "it is set to another rate, pass --baud N, or leave --chipset out to listen for "
            + "its rate")
      }
    }
    if outcome.isStopped {
      outcome = capture.run(into: writer, until: deadline, interruption: interruption)
    }
    if outcome.isStopped, let commands, !commands.powerOffSteps.isEmpty {
      capture.clearProgress()
      Output.error.line("serialgps record: putting the receiver to standby")
      _ = await capture.send(
        commands.powerOffSteps, retry: .whileReceiverTalks, into: writer, interruption: nil)
    }
    capture.clearProgress()
    var synced = true
    do {
      try writer.finish()
    } catch  where error.operation == .save {
      Output.error.line("serialgps record: \(error)")
      synced = false
    } catch {
      synced = false  // a failed write, said when it happened
    }
    Output.error.line("serialgps record: " + capture.summary(path: options.output))
    switch outcome {
    case .deviceLost(let error):
      Output.error.line("serialgps record: \(error). What was recorded is kept.")
      return 1
    case .fileFailed:
      return 2
    case .stopped:
      return synced ? 0 : 2
    }
  }
}

/// Reads the port and appends what arrives to the recording, decoding it on the side for the
/// progress line and the summary.
struct Capture {
  enum Outcome {
    /// The duration passed or a stop was asked for.
    case stopped
    case deviceLost(SerialPortError)
    case fileFailed

    var isStopped: Bool {
      if case .stopped = self { return true }
      return false
    }
  }

  let port: SerialPort
  let terminal: Bool
  var decoder = NMEADecoder()
  var bytes = 0
  var epochs = 0
  var fixes = 0
  var lastFix: Fix?
  /// Acknowledgements read since the last command was written, for the command driver.
  fileprivate var answers: [ReceiverAcknowledgement] = []
  /// Whether anything arrived since the last command was written.
  fileprivate var heard = false
  let started = ContinuousClock.now
  private var lastProgress = ContinuousClock.now - .seconds(1)
  private var progressShown = false
  private var buffer = [UInt8](repeating: 0, count: 1 << 14)

  init(port: SerialPort, terminal: Bool) {
    self.port = port
    self.terminal = terminal
  }

  /// Records until `deadline` or a stop.
  mutating func run(
    into writer: RecordingWriter, until deadline: ContinuousClock.Instant?,
    interruption: StopSignals?
  ) -> Outcome {
    while interruption?.isRequested != true {
      if let deadline, ContinuousClock.now >= deadline { return .stopped }
      switch readOnce(into: writer, until: deadline) {
      case .stopped: continue
      case let other: return other
      }
    }
    return .stopped
  }

  /// Sends the steps through the one command driver (``CommandDriver``), recording what
  /// arrives meanwhile: each acknowledged step waits for its answer (up to 3 attempts of 1 s),
  /// the others for 100 ms, so that whatever the receiver says lands in the recording next to
  /// its command; then each step's settle time. A step that fails is said and the next is still
  /// sent. `interruption`: a stop abandons the steps (a wake-up's; `nil` for a standby).
  mutating func send(
    _ steps: [CommandStep], retry: CommandRetryRule, into writer: RecordingWriter,
    interruption: StopSignals?
  ) async -> Outcome {
    var port = RecordingCommandPort(capture: self, writer: writer, interruption: interruption)
    defer { self = port.capture }
    let driver = CommandDriver(attempts: 3, timeout: .seconds(1))
    var failed: [CommandDriver.Ran] = []
    defer {
      if !failed.isEmpty { port.capture.clearProgress() }
      for ran in failed {
        Output.error.line("serialgps record: \(ran.step.summary): \(Self.describe(ran))")
      }
    }
    do {
      try await driver.run(steps, retry: retry, on: &port) { ran in
        if !ran.outcome.succeeded { failed.append(ran) }
      }
    } catch let failure as RecordingCommandPort.Failure {
      return failure.outcome
    } catch {
      return .fileFailed
    }
    return .stopped
  }

  /// What went wrong with a step that failed.
  static func describe(_ ran: CommandDriver.Ran) -> String {
    switch ran.outcome {
    case .sent, .acknowledged, .silent:
      return "done"
    case .rejected(let answer, _, _):
      return "rejected: \(answer.failureReason ?? "\(answer)")"
    case .unanswered(let written, _):
      return "no answer within \(ran.timeout) after \(written) attempt\(written == 1 ? "" : "s")"
        + (ran.heard ? "" : " (the receiver sent nothing meanwhile)")
    case .keptTalking(let written):
      return "the receiver kept sending after \(written) attempt\(written == 1 ? "" : "s"): "
        + "the command did not take"
    }
  }

  fileprivate mutating func readOnce(
    into writer: RecordingWriter, until deadline: ContinuousClock.Instant?
  ) -> Outcome {
    let port = port
    let result = buffer.withUnsafeMutableBytes { raw in
      Result { () throws(SerialPortError) in try port.read(into: raw, deadline: deadline) }
    }
    switch result {
    case .failure(let error):
      return .deviceLost(error)
    case .success(.received(let count)):
      return record(buffer[..<count], into: writer) ? .stopped : .fileFailed
    case .success(.timedOut), .success(.interrupted):
      return .stopped
    }
  }

  /// Writes bytes received from the device and counts what they hold; false when the file
  /// could not be written.
  mutating func record(_ bytes: some Collection<UInt8>, into writer: RecordingWriter) -> Bool {
    guard !bytes.isEmpty else { return true }
    do {
      try writer.append(bytes)
    } catch {
      Output.error.line("serialgps record: \(error)")
      return false
    }
    self.bytes += bytes.count
    heard = true
    decoder.decode(bytes) { event in
      switch event {
      case .epoch(let epoch):
        epochs += 1
        if epoch.fix.mode != .noFix {
          fixes += 1
          lastFix = epoch.fix
        }
      default:
        if let answer = ReceiverAcknowledgement(event) { answers.append(answer) }
      }
    }
    showProgress()
    return true
  }

  private mutating func showProgress() {
    guard terminal, ContinuousClock.now - lastProgress >= .milliseconds(250) else { return }
    lastProgress = ContinuousClock.now
    var line = "recording: \(seconds(ContinuousClock.now - started)) s, \(bytes) bytes, "
    line += "\(epochs) epochs, \(fixes) with a fix"
    if let fix = lastFix { line += " · " + FixLine.describe(fix) }
    Output.error.write("\r\u{1B}[K" + line)
    progressShown = true
  }

  mutating func clearProgress() {
    guard progressShown else { return }
    Output.error.write("\r\u{1B}[K")
    progressShown = false
  }

  func summary(path: String) -> String {
    let framer = decoder.statistics.framer
    return "\(bytes) bytes in \(seconds(ContinuousClock.now - started)) s → \(path): "
      + "\(framer.sentences) sentences, \(framer.ubxFrames + framer.sirfFrames) binary frames, "
      + "\(epochs) epochs, \(fixes) with a fix."
  }

  private func seconds(_ duration: Duration) -> String {
    let tenths =
      duration.components.seconds * 10 + duration.components.attoseconds / 100_000_000_000_000_000
    return "\(tenths / 10).\(tenths % 10)"
  }
}

/// The line `record`'s commands go through (``CommandPort``): what arrives while the driver
/// waits is recorded as ever, and its acknowledgements answer the step. Its waits block the
/// calling thread.
struct RecordingCommandPort: CommandPort {
  /// Why the steps cannot go on: the device went, or the recording could not be written.
  struct Failure: Error { let outcome: Capture.Outcome }

  var capture: Capture
  let writer: RecordingWriter
  let interruption: StopSignals?

  var now: ContinuousClock.Instant { .now }
  /// The command sets' fixed bytes: none that `record` sends carries the time.
  var utc: UTCTimestamp? { nil }
  var isAbandoned: Bool { interruption?.isRequested == true }

  mutating func write(_ bytes: [UInt8], of step: CommandStep) throws(Failure) {
    capture.answers.removeAll()
    capture.heard = false
    do {
      try capture.port.write(bytes, timeout: .seconds(5))
    } catch {
      throw Failure(outcome: .deviceLost(error))
    }
    // A command with no acknowledgement: what the receiver says to it is still recorded
    // next to it.
    if step.acknowledgement == .none { try record(until: .now + .milliseconds(100)) }
  }

  mutating func answer(to step: CommandStep, until deadline: ContinuousClock.Instant)
    throws(Failure) -> CommandWait
  {
    while true {
      if let index = capture.answers.firstIndex(where: { step.isAcknowledged(by: $0) != nil }) {
        let answer = capture.answers[index]
        capture.answers.removeSubrange(...index)
        return .answer(answer)
      }
      capture.answers.removeAll()
      guard ContinuousClock.now < deadline, !isAbandoned else {
        return .timedOut(heard: capture.heard)
      }
      if case let failed = capture.readOnce(into: writer, until: deadline), !failed.isStopped {
        throw Failure(outcome: failed)
      }
    }
  }

  mutating func settle(for duration: Duration) throws(Failure) {
    try record(until: .now + duration)
  }

  mutating func startListening() { capture.heard = false }

  private mutating func record(until deadline: ContinuousClock.Instant) throws(Failure) {
    let outcome = capture.run(into: writer, until: deadline, interruption: interruption)
    if !outcome.isStopped { throw Failure(outcome: outcome) }
  }
}
