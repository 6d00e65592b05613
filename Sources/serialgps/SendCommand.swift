import Chipsets
import Glibc
import NMEA
import POSIX
import SerialGPS
import SerialPort

// `serialgps send DEVICE (standby|wake|RAW)`: writes a receiver's power commands, or one raw
// command framed for its chipset, waits for each acknowledgement the chipset gives (with a
// bounded number of attempts) and says what happened. Exit status: 0 acknowledged or sent,
// 1 rejected or unanswered, 2 usage or device errors. See docs/chipsets.md ("serialgps send").
let sendCommand = Command(
  name: "send",
  usage: "send DEVICE (standby|wake|RAW) [--chipset \(ChipsetRegistry.allNames)] [--baud N|auto] "
    + "[--timeout S]",
  summary: "Send a receiver its standby or wake commands, or a raw command, and report its answer.",
  arguments: SendRequest.self
) { request in
  // The session blocks on the port, on the driver's thread: `send` has the process to itself
  // (the signals come on a thread of their own), and its commands go through the driver's
  // async command loop (``CommandDriver``), shared with the gated receiver.
  await SendSession(request: request).run()
}

extension SendRequest: CommandArguments {
  static var help: String { sendHelp }
}

private let sendHelp = """
  usage: serialgps send DEVICE (standby|wake|RAW) [options]

  Sends a GPS receiver its chipset's standby or wake commands, or one raw command, and waits
  for the acknowledgement where the chipset gives one.

    standby          the chipset's power-off commands (u-blox: GNSS stop on USB, backup on a
                     UART; MediaTek: $PMTK161,0)
    wake             the chipset's power-on commands (wake, select RMC GGA GSA GSV, start)
    RAW              one command: an NMEA body such as PMTK220,1000 (the $, checksum and
                     CR LF are added; a stated checksum is checked), or for u-blox UBX as hex
                     bytes (06 04 00 00 08 00), a message name and payload (CFG-RST 00 00 08
                     00) or a whole frame (B5 62 …)

    --chipset NAME   \(ChipsetRegistry.namesInProse()). Without it the receiver is identified by
                     listening (never by writing); a silent or unidentified receiver needs it.
                     With nmea only RAW is possible: it is sent as an NMEA sentence and no
                     answer is awaited.
    --baud N|auto    the line speed (default 9600); auto listens for it
    --timeout S      seconds to wait for each acknowledgement (default 1); a command that is
                     not answered is sent 3 times in all

  Exit status: 0 acknowledged (or sent, where the chipset never acknowledges), 1 rejected or
  not answered, 2 usage or device errors.

  """

/// What the user asked for.
struct SendRequest {
  enum Action: Equatable {
    case standby
    case wake
    case raw(String)

    var name: String {
      switch self {
      case .standby: return "standby"
      case .wake: return "wake"
      case .raw(let text): return text
      }
    }
  }

  typealias Parsed = ParsedArguments<SendRequest>

  var device: String
  var action: Action
  var family: ChipsetFamily?
  /// `nil`: listen for the rate.
  var baud: BaudRate? = .b9600
  var timeout: Duration = .seconds(1)
  var attempts = 3

  static func parse(_ arguments: [String]) -> Parsed {
    var positional: [String] = []
    var receiver = ReceiverArguments.send
    var timeout = Duration.seconds(1)
    return ArgumentReader.parse(arguments) { argument, reader throws(UsageMessage) in
      if try receiver.take(argument, from: &reader) { return }
      switch argument {
      case "--timeout":
        timeout = try reader.seconds(
          in: 0...600, "--timeout needs a number of seconds between 0 and 600, such as 1.5")
      default:
        if argument.hasPrefix("--") { throw .unknownOption(argument) }
        positional.append(argument)
      }
    } then: { () throws(UsageMessage) in
      guard positional.count == 2 else {
        throw UsageMessage(
          positional.count < 2
            ? "give a device and what to send: standby, wake or a raw command"
            : "too many arguments (\(positional.joined(separator: " "))); quote a raw command "
              + "that holds spaces")
      }
      let action: Action
      switch positional[1] {
      case "standby": action = .standby
      case "wake": action = .wake
      default: action = .raw(positional[1])
      }
      return SendRequest(
        device: positional[0], action: action, family: receiver.family, baud: receiver.baud,
        timeout: timeout)
    }
  }
}

/// One run of `serialgps send`: open, identify if needed, send, report.
struct SendSession {
  let request: SendRequest
  /// How long to listen for the chipset when none was named.
  let identificationTime = Duration.seconds(3)

  func run() async -> Int32 {
    let device = request.device
    // Refuse what cannot be sent before touching the device.
    if let family = request.family, case .failure(let message) = steps(family: family, nil) {
      Output.error.line("serialgps send: \(message)")
      return 2
    }

    let opened: SerialConnector.OpenedPort
    var memory = BaudRateMemory()
    do {
      opened = try SerialConnector.openPort(
        path: device,
        baud: request.baud.map { .fixed($0) }
          ?? .automatic(timePerRate: Autobaud.defaultTimePerRate),
        memory: &memory)
    } catch {
      Output.error.line("serialgps send: \(error)")
      return 2
    }
    let port = opened.port
    defer { port.close() }
    var reader = AnswerPort(port: port)
    let rate = opened.rate
    if opened.unrecognisedRates != nil {
      Output.standard.line(
        "\(device): heard nothing at any rate (the receiver may be asleep); sending at "
          + "\(rate) baud. Pass --baud if that is wrong.")
    }

    var identification: ChipsetIdentification?
    let family: ChipsetFamily
    if let given = request.family {
      family = given
      Output.standard.line("\(device): \(given.displayName) (--chipset), \(rate) baud")
    } else {
      let heard: ChipsetIdentification
      do {
        heard = try reader.identify(within: identificationTime)
      } catch {
        Output.error.line("serialgps send: \(error)")
        return 2
      }
      identification = heard
      family = heard.familyForCommands()
      guard family.hasCommands else {
        let what =
          reader.sentences == 0
          ? "it sent nothing (asleep, or the wrong --baud)"
          : "it sent \(reader.sentences) sentences, none naming its chipset"
        Output.error.line(
          "serialgps send: could not tell the chipset of \(device) by listening for "
            + "\(identificationTime) (\(what)). serialgps writes only to receivers it knows: "
            + "pass --chipset \(ChipsetRegistry.commandableNames), or --chipset nmea to send a raw NMEA sentence "
            + "as it is.")
        return 2
      }
      let clue = heard.evidence.first.map { " (\($0))" } ?? ""
      Output.standard.line(
        "\(device): \(family.displayName), identified by listening\(clue), \(rate) baud")
    }

    let planned: [CommandStep]
    switch steps(family: family, identification) {
    case .success(let list): planned = list
    case .failure(let message):
      Output.error.line("serialgps send: \(message)")
      return 2
    }

    var failures = 0
    var unanswered = false
    for step in planned {
      let result: CommandOutcome
      do {
        result = try await send(step, on: &reader)
      } catch {
        Output.error.line("serialgps send: \(error)")
        return 2
      }
      Output.standard.line("→ \(step.summary): " + describe(result, family: family))
      switch result {
      case .acknowledged, .sent, .silent: break
      case .rejected, .keptTalking: failures += 1
      case .unanswered:
        failures += 1
        unanswered = true
      }
    }

    let name = request.action.name
    if failures == 0 {
      Output.standard.line("\(name): done.")
      return 0
    }
    var summary =
      "\(name): \(failures) of \(planned.count) command\(planned.count == 1 ? "" : "s") "
      + "failed."
    if unanswered {
      summary +=
        " No answer usually means the wrong baud rate (\(rate) now; try --baud auto), the wrong "
        + "chipset, or a receiver that is asleep (serialgps send \(device) wake)."
    }
    Output.standard.line(summary)
    return 1
  }

  /// The steps for the request, or why there are none.
  func steps(family: ChipsetFamily, _ identification: ChipsetIdentification?)
    -> Swift.Result<[CommandStep], SendUsageError>
  {
    let set = family.commandSet(interface: interface, identification: identification)
    switch request.action {
    case .standby, .wake:
      if !family.hasCommands {
        return .failure(
          SendUsageError(
            "a generic NMEA receiver has no \(request.action.name) command: there is nothing "
              + "to send. serialgps gates such receivers by opening and closing the port; if "
              + "you know the chipset, name it with --chipset \(ChipsetRegistry.commandableNames).")
        )
      }
      let steps = request.action == .standby ? set.powerOffSteps : set.powerOnSteps
      if steps.isEmpty {
        return .failure(
          SendUsageError(
            "\(family.displayName) has no standby that the serial line can undo, so serialgps "
              + "leaves it running."
              + (family.driver.pinOnlySleepCommand.map {
                " To sleep it anyway (only its wake pin ends that), send the raw command: "
                  + "serialgps send \(request.device) \($0) --chipset \(family.cliName)"
              } ?? "")))
      }
      return .success(steps)
    case .raw(let text):
      do throws(ChipsetCommandError) {
        if !family.hasCommands {
          // The user named the device and the chipset: sending is allowed, as a plain
          // sentence; a generic receiver acknowledges nothing.
          let body = try NMEACommand.body(of: text)
          return .success([CommandStep(bytes: try NMEACommand.frame(body), summary: "$" + body)])
        }
        return .success([try RawCommand.step(text, family: family)])
      } catch {
        return .failure(SendUsageError("\(error)"))
      }
    }
  }

  /// How the receiver is attached: a u-blox receiver's own USB port takes other commands.
  var interface: HostInterface { HostInterface(devicePath: request.device) }

  /// Runs `step` through the one command driver (``CommandDriver``): written, its answer
  /// awaited, retried up to the attempts allowed (a standby only while the receiver still
  /// talks: a second one would wake a chip the first put to sleep); then its settle time.
  func send(_ step: CommandStep, on port: inout AnswerPort) async throws -> CommandOutcome {
    let driver = CommandDriver(
      attempts: request.attempts, timeout: request.timeout, retriesRejected: false)
    var outcome = CommandOutcome.sent
    try await driver.run(
      [step], retry: request.action == .standby ? .whileReceiverTalks : .always, on: &port
    ) { outcome = $0.outcome }
    return outcome
  }

  func describe(_ result: CommandOutcome, family: ChipsetFamily) -> String {
    switch result {
    case .acknowledged(let answer, let attempt, let written, let late):
      guard let late else { return "acknowledged (\(answer))" }
      let sent = written == 1 ? "" : " (the answer to attempt \(attempt) of \(written) sent)"
      let milliseconds = Int((late / .milliseconds(1)).rounded(.up))
      return "acknowledged (\(answer)), \(milliseconds) ms after the \(request.timeout) "
        + "timeout\(sent); warning: a slower answer would have been missed, raise --timeout"
    case .sent:
      return !family.driver.acknowledgesCommands
        ? "sent; \(family.displayName) receivers acknowledge nothing"
        : "sent; \(family.displayName) receivers do not acknowledge this command"
    case .rejected(let answer, _, _):
      // u-blox's reason already names the NAK; a sentence's answer is worth its fields.
      if case .reply = answer { return "rejected: \(answer.failureReason ?? "") (\(answer))" }
      return "rejected: \(answer.failureReason ?? "\(answer)")"
    case .unanswered(let written, let quiet):
      if quiet {
        return "no answer within \(request.timeout) after \(written) attempt"
          + "\(written == 1 ? "" : "s"), nor in as long again; not sent again because the "
          + "receiver fell silent (asleep, as a standby leaves it: another standby would wake "
          + "it)"
      }
      return "no answer within \(request.timeout) after \(written) attempts"
    case .silent:
      return "sent; the receiver fell silent after it, as it does when the command takes"
    case .keptTalking(let written):
      return "the receiver kept sending after \(written) attempt\(written == 1 ? "" : "s"), "
        + "so the command did not take and the receiver is awake"
        + (family.driver.keptTalkingReason.map { " (\($0))" } ?? "")
    }
  }
}

struct SendUsageError: Error, CustomStringConvertible {
  let description: String
  init(_ description: String) { self.description = description }
}

/// Reads the port and decodes what arrives: acknowledgements, and what identifies the chipset;
/// the line `send`'s commands go through (``CommandPort``). Its waits block the calling thread.
struct AnswerPort: CommandPort {
  let port: SerialPort
  var decoder = NMEADecoder()
  var identifier = ChipsetIdentifier()
  /// Sentences seen so far.
  var sentences = 0
  /// Whether any bytes arrived since this was last set to false (after a write).
  var heard = false
  private var buffer = [UInt8](repeating: 0, count: 4096)
  private var acknowledgements: [ReceiverAcknowledgement] = []

  init(port: SerialPort) { self.port = port }

  var now: ContinuousClock.Instant { .now }
  /// `send`'s steps are the command set's fixed bytes: none carries the time.
  var utc: UTCTimestamp? { nil }
  var isAbandoned: Bool { false }

  mutating func write(_ bytes: [UInt8], of step: CommandStep) throws(SerialPortError) {
    try port.write(bytes, timeout: .seconds(5))
    heard = false
  }

  mutating func answer(to step: CommandStep, until deadline: ContinuousClock.Instant)
    throws(SerialPortError) -> CommandWait
  {
    guard let answer = try answer(for: step, until: deadline) else {
      return .timedOut(heard: heard)
    }
    return .answer(answer)
  }

  mutating func settle(for duration: Duration) throws(SerialPortError) { try drain(for: duration) }

  mutating func startListening() { heard = false }

  /// Reads once, until `deadline`; false when the deadline passed with nothing.
  private mutating func readOnce(until deadline: ContinuousClock.Instant) throws(SerialPortError)
    -> Bool
  {
    let port = port
    let result = buffer.withUnsafeMutableBytes { raw in
      Swift.Result { () throws(SerialPortError) in try port.read(into: raw, deadline: deadline) }
    }
    guard case .received(let count) = try result.get() else { return false }
    if count > 0 { heard = true }
    decoder.decode(buffer[..<count]) { event in
      if case .sentence = event { sentences += 1 }
      identifier.observe(event: event)
      if let answer = ReceiverAcknowledgement(event) { acknowledgements.append(answer) }
    }
    return true
  }

  /// The acknowledgement of `step` that arrives by `deadline`, if any.
  mutating func answer(for step: CommandStep, until deadline: ContinuousClock.Instant)
    throws(SerialPortError) -> ReceiverAcknowledgement?
  {
    while true {
      if let index = acknowledgements.firstIndex(where: { step.isAcknowledged(by: $0) != nil }) {
        let answer = acknowledgements[index]
        acknowledgements.removeSubrange(...index)
        return answer
      }
      acknowledgements.removeAll()
      guard ContinuousClock.now < deadline, try readOnce(until: deadline) else { return nil }
    }
  }

  /// Listens until the chipset is known with high confidence, or `time` has passed.
  mutating func identify(within time: Duration) throws(SerialPortError) -> ChipsetIdentification {
    let deadline = ContinuousClock.now + time
    while identifier.identification.confidence < .high, ContinuousClock.now < deadline {
      _ = try readOnce(until: deadline)
    }
    acknowledgements.removeAll()
    return identifier.identification
  }

  /// Keeps reading (so the line does not overflow) for `time`, discarding answers.
  mutating func drain(for time: Duration) throws(SerialPortError) {
    let deadline = ContinuousClock.now + time
    while ContinuousClock.now < deadline { _ = try readOnce(until: deadline) }
    acknowledgements.removeAll()
  }
}
