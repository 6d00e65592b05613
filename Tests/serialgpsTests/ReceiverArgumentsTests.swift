import Chipsets
import SerialGPS
import SerialPort
import Testing

@testable import serialgps

/// The receiver options (`--chipset`, `--baud`, `--linger`, `--ubx`, `--wake-pin`, `--sleep`)
/// are read by one parser for every command that takes them.
@Suite("serialgps: receiver options")
struct ReceiverArgumentsTests {
  /// The commands that drive a receiver, their operands, and the receiver options each takes.
  static let commands: [(name: String, operands: [String], takes: ReceiverArguments.Accepted)] = [
    ("watch", ["d"], [.chipset, .baud, .linger, .ubx, .wakePin, .sleep]),
    ("serve", ["d"], [.chipset, .baud, .linger, .ubx, .wakePin, .sleep]),
    ("locate", ["d"], [.chipset, .baud]),
    ("record", ["d", "-o", "f"], [.chipset, .baud]),
    ("send", ["d", "standby"], [.chipset, .baud]),
    ("replay", ["f"], [.chipset]),
  ]

  /// Each option with a wrong value, and what every command that takes it says.
  static let mistakes:
    [(option: ReceiverArguments.Accepted, arguments: [String], message: String)] =
      [
        (
          .baud, ["--baud", "12345"],
          "--baud 12345 is not a rate serialgps can set; use "
            + BaudRate.supported.map(\.description).joined(separator: ", ") + " or auto"
        ),
        (.baud, ["--baud"], "--baud needs a rate or auto"),
        (
          .linger, ["--linger", "-1"],
          "--linger needs a number of seconds from 0 to 86400, such as 5 or 0.5"
        ),
        (
          .linger, ["--linger", "86401"],
          "--linger needs a number of seconds from 0 to 86400, such as 5 or 0.5"
        ),
        (
          .ubx, ["--ubx", "all"],
          "unknown --ubx 'all'; use \(UBXMessageSelection.cliNames) (navigation for u-blox 8 and "
            + "later, legacy for u-blox 6 and older)"
        ),
        (.sleep, ["--sleep", "deep"], "--sleep takes deepest or standby, not deep"),
        (
          .wakePin, ["--wake-pin"],
          "--wake-pin needs CHIP:LINE (the GPIO line wired to FORCE_ON, such as gpiochip0:17)"
        ),
        (.chipset, ["--chipset"], "--chipset needs a name"),
      ]

  @Test("a wrong value gets the same message from every command that takes the option")
  func sameMistakeSameMessage() throws {
    for command in Self.commands {
      let parse = try #require(parsers[command.name])
      for mistake in Self.mistakes where command.takes.contains(mistake.option) {
        let said = parse(command.operands + mistake.arguments)
        let expected = "\(ParsedArguments<Int>.invalid(mistake.message))"
        #expect(said == expected, "\(command.name) \(mistake.arguments)")
      }
    }
  }

  @Test("a receiver option a command does not take is an unknown option to it")
  func notTakenIsUnknown() throws {
    let values: [(ReceiverArguments.Accepted, [String])] = [
      (.chipset, ["--chipset", "ublox"]), (.baud, ["--baud", "9600"]),
      (.linger, ["--linger", "1"]), (.ubx, ["--ubx", "navigation"]),
      (.wakePin, ["--wake-pin", "gpiochip0:17"]), (.sleep, ["--sleep", "standby"]),
    ]
    for command in Self.commands {
      let parse = try #require(parsers[command.name])
      for (option, arguments) in values where !command.takes.contains(option) {
        let said = parse(command.operands + arguments)
        #expect(
          said == "\(ParsedArguments<Int>.invalid("unknown option '\(arguments[0])'"))",
          "\(command.name) \(arguments)")
      }
    }
  }

  /// `arguments` read by `preset`, or the message.
  func read(_ preset: ReceiverArguments, _ arguments: [String]) -> Result<
    ReceiverArguments, UsageMessage
  > {
    var receiver = preset
    let parsed = ArgumentReader.parse(arguments) { argument, reader throws(UsageMessage) in
      guard try receiver.take(argument, from: &reader) else { throw .unknownOption(argument) }
    } then: {
      receiver
    }
    switch parsed {
    case .options(let options): return .success(options)
    case .invalid(let message): return .failure(UsageMessage(message))
    case .help: return .failure(UsageMessage("help"))
    }
  }

  @Test(
    "--chipset: a family everywhere; auto where the receiver can be identified; probe for watch and locate"
  )
  func chipsetNames() throws {
    for preset in [
      ReceiverArguments.watch, .serve, .locate, .record, .send, .replay,
    ] {
      let named = try read(preset, ["--chipset", "mtk"]).get()
      #expect(named.family == .mediatek)
      guard case .family(.mediatek) = named.chipset else {
        Issue.record("chipset \(named.chipset)")
        continue
      }
    }
    let families = ChipsetFamily.cliNames
    for preset in [ReceiverArguments.record, .send, .replay] {
      #expect(
        read(preset, ["--chipset", "auto"])
          == .failure(UsageMessage("unknown chipset 'auto'; use \(families)")))
    }
    let served = try read(.serve, ["--chipset", "ublox", "--chipset", "auto"]).get()
    #expect(served.family == nil)
    #expect(
      read(.serve, ["--chipset", "probe"])
        == .failure(UsageMessage("unknown chipset 'probe'; use \(families) or auto")))
    for preset in [ReceiverArguments.watch, .locate] {
      let probing = try read(preset, ["--chipset", "probe"]).get()
      guard case .probe = probing.chipset else {
        Issue.record("chipset \(probing.chipset)")
        continue
      }
      let automatic = try read(preset, ["--chipset", "probe", "--chipset", "auto"]).get()
      guard case .automatic = automatic.chipset else {
        Issue.record("chipset \(automatic.chipset)")
        continue
      }
      #expect(
        read(preset, ["--chipset", "garmin"])
          == .failure(UsageMessage("unknown chipset 'garmin'; use \(families), auto or probe")))
    }
  }

  @Test("--baud: a rate, or auto; send's default is 9600, the others listen for the rate")
  func baud() throws {
    for preset in [ReceiverArguments.watch, .serve, .locate, .record, .send] {
      #expect(try read(preset, ["--baud", "115200"]).get().baudSetting == .fixed(.b115200))
      #expect(try read(preset, ["--baud", "4800", "--baud", "auto"]).get().baud == nil)
    }
    #expect(ReceiverArguments.send.baud == .b9600)
    for preset in [ReceiverArguments.watch, .serve, .locate, .record] {
      #expect(preset.baudSetting == .automatic())
    }
    guard case .options(let request) = SendRequest.parse(["d", "standby"]) else {
      Issue.record("send refused")
      return
    }
    #expect(request.baud == .b9600)
  }

  @Test("what reaches the driver's options: only what the command takes")
  func applied() throws {
    let watched = try read(
      .watch,
      ["--chipset", "ublox", "--linger", "2.5", "--ubx", "navigation", "--sleep", "standby"]
    ).get()
    var options = GPSReceiver.Options()
    watched.apply(to: &options)
    guard case .family(.ublox) = options.chipset else {
      Issue.record("chipset \(options.chipset)")
      return
    }
    #expect(options.linger == .milliseconds(2500))
    #expect(options.ubxMessages == .navigation)
    #expect(options.sleepDepth == .standby)

    // watch's receiver is its only subscriber: nothing kept warm unless asked; serve keeps
    // the library's linger.
    var defaults = GPSReceiver.Options()
    ReceiverArguments.watch.apply(to: &defaults)
    #expect(defaults.linger == .zero)
    var served = GPSReceiver.Options()
    ReceiverArguments.serve.apply(to: &served)
    #expect(served.linger == GPSReceiver.Options().linger)

    // locate takes no --linger: what the driver had stays.
    var located = GPSReceiver.Options()
    located.linger = .seconds(7)
    try read(.locate, ["--chipset", "probe"]).get().apply(to: &located)
    #expect(located.linger == .seconds(7))
    guard case .probe = located.chipset else {
      Issue.record("chipset \(located.chipset)")
      return
    }
  }
}
