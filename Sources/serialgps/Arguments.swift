import Chipsets
import SerialGPS
import SerialPort

/// What a command made of its arguments.
enum ParsedArguments<Options> {
  case options(Options)
  case help
  case invalid(String)
}

extension ParsedArguments: Equatable where Options: Equatable {}

extension ParsedArguments {
  /// What every command does with its parsed arguments: `--help` prints `help` (exit 0), a
  /// mistake is said the same way by every command (exit 2), and options go to `body`.
  func run(command name: String, help: String, _ body: (Options) async -> Int32) async -> Int32 {
    switch self {
    case .help:
      Output.standard.write(help)
      Output.standard.flush()
      return 0
    case .invalid(let message):
      Output.error.line("serialgps \(name): " + message)
      Output.error.line("Run `serialgps \(name) --help` for the options.")
      return 2
    case .options(let options):
      return await body(options)
    }
  }
}

/// What a command reads its arguments with: its `--help` text and its parser.
protocol CommandArguments: SendableMetatype {
  associatedtype Options
  static var help: String { get }
  static func parse(_ arguments: [String]) -> ParsedArguments<Options>
}

extension Command {
  /// A command whose arguments `Arguments` reads: `--help` and mistakes are answered as by
  /// every command (``ParsedArguments/run(command:help:_:)``, under this command's `name`),
  /// and the options go to `body`.
  init<Arguments: CommandArguments>(
    name: String, usage: String, summary: String, arguments: Arguments.Type,
    _ body: @escaping @Sendable (Arguments.Options) async -> Int32
  ) {
    self.init(name: name, usage: usage, summary: summary) { words in
      await Arguments.parse(words).run(command: name, help: Arguments.help, body)
    }
  }
}

/// A mistake on the command line, said in words the user can act on.
struct UsageMessage: Error, Equatable {
  let text: String
  init(_ text: String) { self.text = text }

  /// An option the command does not have.
  static func unknownOption(_ option: String) -> UsageMessage {
    UsageMessage("unknown option '\(option)'")
  }
}

/// A command's arguments, read front to back, and the option values several commands share,
/// so that the same mistake gets the same message from every command.
struct ArgumentReader {
  private let arguments: [String]
  private var index = 0

  init(_ arguments: [String]) { self.arguments = arguments }

  /// Reads a command's arguments front to back, as every command does: `--help` or `-h`
  /// asks for the help; `take` handles each other argument, reading the value of an option
  /// from the reader, and throws a ``UsageMessage`` for a mistake; `make` then builds the
  /// options from what was read, or throws for what the arguments got wrong together (an
  /// operand missing, options that exclude each other).
  static func parse<Options>(
    _ arguments: [String],
    _ take: (_ argument: String, _ reader: inout ArgumentReader) throws(UsageMessage) -> Void,
    then make: () throws(UsageMessage) -> Options
  ) -> ParsedArguments<Options> {
    var reader = ArgumentReader(arguments)
    do throws(UsageMessage) {
      while let argument = reader.next() {
        if argument == "--help" || argument == "-h" { return .help }
        try take(argument, &reader)
      }
      return .options(try make())
    } catch {
      return .invalid(error.text)
    }
  }

  /// The next argument; `nil` after the last.
  mutating func next() -> String? {
    guard index < arguments.count else { return nil }
    defer { index += 1 }
    return arguments[index]
  }

  /// The value after an option; `missing` is the message when there is none (or it is empty
  /// and `allowingEmpty` is false).
  mutating func value(_ missing: String, allowingEmpty: Bool = false) throws(UsageMessage)
    -> String
  {
    guard let text = next(), allowingEmpty || !text.isEmpty else { throw UsageMessage(missing) }
    return text
  }

  /// A number of seconds in `range`, to the millisecond, as the library reads a request's
  /// durations (``LocationRequest/duration(seconds:)``: above 0 and at least a millisecond),
  /// or exactly 0 when `allowingZero`; `invalid` is the message otherwise.
  mutating func seconds(
    in range: ClosedRange<Double>, allowingZero: Bool = false, _ invalid: String
  ) throws(UsageMessage) -> Duration {
    guard let text = next(), let seconds = Double(text), range.contains(seconds) else {
      throw UsageMessage(invalid)
    }
    if allowingZero && seconds == 0 { return .zero }
    guard let duration = LocationRequest.duration(seconds: seconds) else {
      throw UsageMessage(invalid)
    }
    return duration
  }

  /// `--count N`: how many fixes to print before stopping, at least one.
  mutating func fixCount() throws(UsageMessage) -> Int {
    try number(in: 1...Int.max, "--count needs a number above 0")
  }

  /// A number in `range`; `invalid` is the message otherwise.
  mutating func number<Number: LosslessStringConvertible & Comparable>(
    in range: ClosedRange<Number>, _ invalid: String
  ) throws(UsageMessage) -> Number {
    guard let text = next(), let number = Number(text), range.contains(number) else {
      throw UsageMessage(invalid)
    }
    return number
  }
}

/// Whether `argument` looks like an option rather than an operand (`-` alone is standard
/// input).
func isOption(_ argument: String) -> Bool {
  argument.hasPrefix("-") && argument != "-"
}

/// A command's one operand (a file, a device): `argument` goes into `operand` unless it is
/// an option the command does not have or a second operand; `oneAtATime` says what the
/// command does with one, for the message (`decodes one recording`).
func takeOperand(
  _ argument: String, into operand: inout String?, _ oneAtATime: String
) throws(UsageMessage) {
  if isOption(argument) { throw .unknownOption(argument) }
  if let operand {
    throw UsageMessage("\(oneAtATime) at a time, not both '\(operand)' and '\(argument)'")
  }
  operand = argument
}
