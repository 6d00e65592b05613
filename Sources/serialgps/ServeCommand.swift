import Chipsets
import Discovery
import GPSDServer
import Glibc
import SerialGPS
import SerialPort

// `serialgps serve [--listen ADDR] [--linger S] [--max-clients N] [--allow-remote] [DEVICE …]`:
// a gpsd-compatible server (docs/server.md). Runs until SIGTERM, SIGINT, SIGHUP or SIGQUIT, then
// puts every receiver to standby and exits 0; exits 2 on usage errors or when it cannot listen.
let serveCommand = Command(
  name: "serve",
  usage: "serve [--listen ADDR] [--linger S] [--max-clients N] [--allow-remote] [DEVICE …]",
  summary: "Serve receivers to gpsd clients (port 2947), powered only while someone watches."
) { arguments in
  await ServeOptions.parse(arguments).run(command: "serve", help: ServeOptions.help) { options in
    await ServeCommand.run(options)
  }
}

struct ServeOptions: Equatable {
  var listen = "127.0.0.1:2947"
  var linger: Duration = .seconds(5)
  var maximumClients = 64
  var allowRemote = false
  var baud: BaudRate?
  var family: ChipsetFamily?
  var devices: [String] = []

  typealias Parsed = ParsedArguments<ServeOptions>

  static let help = """
    usage: serialgps serve [options] [DEVICE …]

    Serves GPS receivers with gpsd's JSON protocol, so gpsd's clients (gpspipe, cgps,
    gpxlogger, the Python gps module, navigation programs) read them unchanged. A receiver is
    powered on at the first client's ?WATCH and put to standby after the linger once the last
    watching client has left; clients that only ?POLL never power it. Without DEVICE, every
    receiver found (serialgps list) is served, and receivers plugged in later too.

    options:
      --listen ADDR       address and port (default 127.0.0.1:2947); [::1]:2947 for IPv6
      --allow-remote      permit an address other than loopback: the protocol has no
                          authentication, and any client can keep the receivers powered
      --linger S          seconds a receiver stays powered after its last watcher leaves
                          (default 5; 0 powers off at once)
      --max-clients N     clients served at once (default 64); further ones are told so and
                          disconnected
      --baud N|auto       line speed of the receivers (default auto: listen for it; USB
                          receivers ignore it)
      --chipset NAME      \(ChipsetFamily.cliNames): which power commands to send; by default
                          the receiver's USB IDs or its own output decide
      --help              show this help

    Stops on SIGTERM, SIGINT (Ctrl-C), SIGHUP or SIGQUIT, putting every receiver to standby
    first; a second Ctrl-C while stopping quits at once (status 130). SIGHUP stops rather than
    restarts, as the end of the terminal or session that started serve; under nohup it is
    ignored. Under systemd, `systemctl restart serialgps` is the restart.
    Exit status: 0 after a signal, 2 on usage errors or when the address cannot be used.

    """

  static func parse(_ arguments: [String]) -> Parsed {
    var options = ServeOptions()
    var reader = ArgumentReader(arguments)
    do throws(UsageMessage) {
      while let argument = reader.next() {
        switch argument {
        case "--help", "-h":
          return .help
        case "--listen":
          options.listen = try reader.value(
            "--listen needs an address such as 127.0.0.1:2947", allowingEmpty: true)
        case "--allow-remote":
          options.allowRemote = true
        case "--linger":
          options.linger = try reader.seconds(
            in: 0...86_400, allowingZero: true,
            "--linger needs a number of seconds from 0 to 86400, such as 5 or 0.5")
        case "--max-clients":
          options.maximumClients = try reader.number(
            in: 1...65_536, "--max-clients needs a number from 1 to 65536")
        case "--baud":
          options.baud = try reader.baud()
        case "--chipset":
          options.family = try reader.chipset(allowingAuto: true)
        default:
          if isOption(argument) { return .invalid("unknown option '\(argument)'") }
          options.devices.append(argument)
        }
      }
    } catch {
      return .invalid(error.text)
    }
    return .options(options)
  }

  /// The server's configuration, or why the options cannot make one.
  func configuration() -> Result<GPSDServer.Configuration, ServeUsageError> {
    var configuration = GPSDServer.Configuration()
    do {
      configuration.listenAddress = try ListenAddress(parsing: listen)
    } catch {
      return .failure(ServeUsageError(message: "--listen \(error)"))
    }
    configuration.allowRemote = allowRemote
    configuration.maximumClients = maximumClients
    configuration.receiverOptions.linger = linger
    if let family { configuration.receiverOptions.chipset = .family(family) }
    configuration.baud = baudSetting
    return .success(configuration)
  }

  var baudSetting: SerialConnector.BaudSetting { baud.map { .fixed($0) } ?? .automatic() }
}

struct ServeUsageError: Error, Equatable {
  let message: String
}

enum ServeCommand {
  static func run(_ options: ServeOptions) async -> Int32 {
    var configuration: GPSDServer.Configuration
    switch options.configuration() {
    case .success(let made): configuration = made
    case .failure(let error):
      Output.error.line("serialgps serve: " + error.message)
      return 2
    }
    configuration.log = { message in Output.error.line(message) }
    let devices: GPSDServer.Devices =
      options.devices.isEmpty
      ? .discovery(DeviceDiscovery())
      : .fixed(options.devices.map { .serialPort(path: $0, baud: options.baudSetting) })
    // Before the receivers exist: a signal from now on stops them cleanly.
    let stop = StopSignals()
    let server: GPSDServer
    do {
      server = try GPSDServer(configuration: configuration, devices: devices)
    } catch {
      Output.error.line("serialgps serve: \(error)")
      return 2
    }
    let served =
      options.devices.isEmpty ? "the receivers found" : options.devices.joined(separator: ", ")
    Output.error.line("serialgps serve: listening on \(server.listenAddress) for \(served)")
    let reason = await stop.requested()
    Output.error.line("serialgps serve: \(reason): putting the receivers to standby")
    await server.shutdown()
    return 0
  }
}
