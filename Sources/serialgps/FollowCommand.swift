import Fleet
import SerialGPS

// `serialgps follow --mqtt URL ID`: a receiver of the fleet, followed through the broker. It
// prints like `watch` (the same lines, the same code), and its demand powers the board's
// receiver; on exit, SIGINT and SIGTERM included, it withdraws the demand. See docs/fleet.md.
let followCommand = Command(
  name: "follow",
  usage:
    "follow --mqtt URL ID [--json] [--count N] [--consumer NAME] [--interval S] [--accuracy M]",
  summary: "Print a remote receiver's fixes from an MQTT broker, powering it while it follows.",
  arguments: FollowOptions.self
) { options in
  await Follow.run(options)
}

struct FollowOptions: Equatable, CommandArguments {
  var broker = BrokerOptions()
  var id: String?
  var json = false
  var count: Int?
  var consumer: String?
  /// `--interval`, `--accuracy`: the terms the demand carries.
  var request: LocationRequest?

  static let help = """
    usage: serialgps follow --mqtt URL ID [options]

    Follows the receiver a board publishes as ID (serialgps serve --mqtt …): publishes this
    consumer's demand on serialgps/ID/demand/CONSUMER, which powers the receiver on, and
    prints each fix as `watch` does, one line per fix on standard output:

      2026-03-30T12:00:00.000Z  3D  47.3769033  8.5417017  alt 408.3 m  speed 5.14 m/s  sats 8  acc 2.5 m

    Status changes (the board's, and the broker connection's) go to standard error. On exit
    the demand is withdrawn; if this process is killed, the broker withdraws it (the demand's
    Last Will), and the board powers the receiver off after its linger.

    options:
      --json                 print gpsd TPV reports, one JSON object per line, instead
      --count N              stop after N fixes
      --consumer NAME        this consumer's name in the demand topic (default: host name,
                             process ID and a random suffix)
      --interval S           demand one fix every S seconds ({"interval":S}): the board's
                             receiver sleeps between them unless others want more
      --accuracy M           demand fixes of M metres or better ({"accuracy":M})
    \(BrokerOptions.help)
      --help                 show this help

    Exit status: 0 after --count fixes or a signal, 1 when the broker cannot be reached or
    refuses the credentials, or the board is offline, 2 for a wrong command line.

    """

  static func parse(_ arguments: [String]) -> ParsedArguments<FollowOptions> {
    var options = FollowOptions()
    return ArgumentReader.parse(arguments) { argument, reader throws(UsageMessage) in
      switch argument {
      case "--json":
        options.json = true
      case "--count":
        options.count = try reader.fixCount()
      case "--interval":
        let interval = try reader.seconds(
          in: 0...604_800, "--interval needs a number of seconds from 0.001, such as 60")
        options.request = LocationRequest(
          interval: interval, accuracy: options.request?.accuracy)
      case "--accuracy":
        let accuracy: Double = try reader.number(
          in: 0.01...1_000_000, "--accuracy needs a number of metres above 0, such as 10")
        options.request = LocationRequest(
          interval: options.request?.interval, accuracy: accuracy)
      case "--consumer":
        let name = try reader.value("--consumer needs a name")
        guard FleetTopics.isValidName(name) else {
          throw UsageMessage("--consumer \(name): use 1 to 64 letters, digits, '-', '_' or '.'")
        }
        options.consumer = name
      default:
        if try options.broker.take(argument, from: &reader) { return }
        var id = options.id
        try takeOperand(argument, into: &id, "follows one receiver")
        guard let id, FleetTopics.isValidName(id) else {
          throw UsageMessage(
            "'\(argument)' cannot be a receiver's name in the fleet: 1 to 64 letters, digits, "
              + "'-', '_' or '.'")
        }
        options.id = id
      }
    } then: { () throws(UsageMessage) -> FollowOptions in
      guard options.broker.url != nil else { throw UsageMessage("follow needs --mqtt URL") }
      guard options.id != nil else {
        throw UsageMessage("follow needs the receiver's ID (its name in serialgps/ID/…)")
      }
      return options
    }
  }
}

enum Follow {
  static func run(_ options: FollowOptions) async -> Int32 {
    let receiver: RemoteReceiver
    do {
      var remoteOptions = RemoteReceiver.Options()
      remoteOptions.consumer = options.consumer
      remoteOptions.request = options.request
      receiver = try RemoteReceiver(
        broker: options.broker.configuration(), id: options.id!, options: remoteOptions)
    } catch {
      Output.error.line("serialgps follow: \(error)")
      return 2
    }
    let label = "\(receiver.id)"
    let stop = StopSignals()
    let events = receiver.subscribe()
    stop.onStop { reason in
      Output.error.line(
        "serialgps follow: \(reason): stopping; withdrawing the demand "
          + "(Ctrl-C again to quit at once)")
      events.cancel()
    }
    var watchOptions = Watch.Options()
    watchOptions.json = options.json
    watchOptions.count = options.count
    let ending = await Watch.printEvents(
      events, device: label, options: watchOptions, stop: stop, command: "follow",
      deviceName: { label })
    events.cancel()
    Output.standard.flush()
    // Withdraws the demand (acknowledged by the broker, or given up after two seconds) and
    // disconnects.
    await receiver.shutdown()
    if case .cannotOpen(let reason) = ending {
      Output.error.line("serialgps follow: " + reason)
      return 1
    }
    return 0
  }
}
