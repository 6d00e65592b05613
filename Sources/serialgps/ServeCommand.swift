import Chipsets
import Discovery
import GPSDServer
import Glibc
import POSIX
import SerialGPS
import SerialPort
import TimeService

// `serialgps serve [--listen ADDR|none] [--linger S] [--max-clients N] [--allow-remote]
// [--mqtt URL …] [--time …] [DEVICE …]`: a gpsd-compatible server (docs/server.md), with
// --mqtt the fleet bridge beside it (docs/fleet.md), with --time time for chrony and ntpd
// (docs/time.md). Runs until SIGTERM, SIGINT, SIGHUP or SIGQUIT, then
// puts every receiver to standby and exits 0; exits 2 on usage errors or when it cannot listen
// or use the chrony socket, 1 when the broker refuses the credentials or certificates.
let serveCommand = Command(
  name: "serve",
  usage:
    "serve [--listen ADDR|none] [--chipset NAME] [--baud N|auto] [--linger S] [--max-clients N] "
    + "[--allow-remote] [--mqtt URL …] [--time …] [DEVICE …]",
  summary:
    "Serve receivers to gpsd clients (port 2947) and an MQTT fleet, powered only while someone "
    + "watches.",
  arguments: ServeOptions.self
) { options in
  await ServeCommand.run(options)
}

struct ServeOptions: Equatable, CommandArguments {
  var listen = "127.0.0.1:2947"
  /// `--chipset`, `--baud`, `--linger`, `--ubx`, `--wake-pin` (the wake line wired to the
  /// receiver: docs/chipsets.md, "Sleep depth"), `--sleep`.
  var receiver = ReceiverArguments.serve
  /// `--ephemeris-refresh S`: the longest time between two ephemeris collections.
  var ephemerisRefresh = GPSReceiver.Options().ephemerisRefresh
  /// `--exit-idle S`: end after S with no client and no receiver subscribed.
  var exitIdle: Duration?
  var maximumClients = 64
  /// `--client-send-buffer`: `SO_SNDBUF` of client sockets; `nil` leaves the kernel's.
  var clientSendBuffer: Int? = GPSDServer.Configuration().clientSendBufferSize
  var allowRemote = false
  /// `--raw-listen ADDR`: the raw port; `--raw-write`: one connection may write.
  var rawListen: String?
  var rawWrite = false
  /// `--nmea-socket PATH`, `--nmea-socket-mode OCTAL`: the NMEA socket for GeoClue.
  var nmeaSocket: String?
  var nmeaSocketMode: UInt32?
  /// `--state-dir DIR`: where the receivers' last positions are kept across restarts.
  var stateDirectory = "/var/lib/serialgps"
  /// `--no-aiding`: no time and position told to a receiver at a wake.
  var aiding = true
  var devices: [String] = []
  /// The MQTT bridge's options (`--mqtt …`).
  var fleet = ServeFleetOptions()
  /// RTK corrections from an NTRIP caster (`--ntrip …`).
  var ntrip = ServeNTRIPOptions()
  /// `--time`: serve time to chrony and ntpd, with `timeSettings`.
  var servesTime = false
  var timeSettings = GPSDServer.TimeOptions()
  /// The time options given (`--time-offset` …), which need `--time`.
  var timeOptionsGiven: [String] = []

  typealias Parsed = ParsedArguments<ServeOptions>

  static let help = """
    usage: serialgps serve [options] [DEVICE …]

    Serves GPS receivers with gpsd's JSON protocol, so gpsd's clients (gpspipe, cgps,
    gpxlogger, the Python gps module, navigation programs) read them unchanged. A receiver is
    powered on at the first client's ?WATCH and put to standby after the linger once the last
    watching client has left; clients that only ?POLL never power it. Without DEVICE, every
    receiver found (serialgps list) is served, and receivers plugged in later too.

    With --mqtt it also publishes the receivers to an MQTT broker for a fleet (docs/fleet.md):
    serialgps/ID/tpv, /sky and /status, powered while some consumer's retained demand on
    serialgps/ID/demand/CONSUMER stands (serialgps follow is such a consumer).

    options:
      --listen ADDR       address and port (default 127.0.0.1:2947); [::1]:2947 for IPv6;
                          none: no gpsd port (a board that only publishes to MQTT,
                          keeps time, or serves --nmea-socket or --raw-listen alone)
      --allow-remote      permit an address other than loopback: the protocol has no
                          authentication, and any client can keep the receivers powered
      --linger S          seconds a receiver stays powered after its last watcher leaves
                          (default 5; 0 powers off at once)
      --ephemeris-refresh S  the longest time between two 30-s wakes that refresh a
                          receiver's ephemeris when only interval requests wake it
                          (default 7200; docs/requests.md)
      --wake-pin CHIP:LINE  the GPIO line wired to the receiver's FORCE_ON (gpiochip0:17):
                          only then may a MediaTek sleep in backup ($PMTK225,4) between
                          scheduled fixes (docs/chipsets.md, "Sleep depth")
      --sleep D           deepest (default) or standby: always the quick-wake standby
      --raw-listen ADDR   also serve the first receiver's bytes as they are (NMEA, UBX, RTCM)
                          on ADDR (PORT, HOST:PORT or [::1]:PORT; loopback unless
                          --allow-remote) to each connection, for u-center, RTKLIB's
                          str2str (tcpcli://), pygpsclient: the receiver is powered while
                          any is connected
      --raw-write         let one raw connection at a time write to the receiver (the first
                          that sends, until it leaves); others are told it is taken. Whole
                          NMEA sentences and UBX/SiRF/RTCM 3 frames only, never inside
                          serve's own wake-up and standby exchanges
      --nmea-socket PATH  also serve the first receiver's NMEA sentences on a Unix socket at
                          PATH to each connection, for GeoClue's network-nmea source
                          (docs/geoclue.md): the receiver is powered while any is connected
      --nmea-socket-mode OCTAL
                          the NMEA socket's permissions (default 0666, any local user, as
                          the gpsd port on loopback; 0660: serve's group only)
      --exit-idle S       exit (status 0, receivers in standby) after S seconds with no client
                          connected and no receiver watched: for serialgps.socket, which
                          starts serve again at the next client. Not with --time or --mqtt
      --max-clients N     clients served at once (default 64); when all are taken, the
                          longest-idle client that does not watch makes room, else the
                          newcomer is told so and disconnected
      --client-send-buffer BYTES|kernel
                          the kernel's send buffer per client (default 32768); a client
                          that stops reading is dropped once this and 256 KiB queued by
                          serve are full; kernel: the kernel's own size (up to megabytes)
      --baud N|auto       line speed of the receivers (default auto: listen for it; USB
                          receivers ignore it)
      --chipset NAME      \(ChipsetFamily.cliNames): which power commands to send; by default
                          the receiver's USB IDs or its own output decide
      --ubx SET           navigation, legacy or off (default): UBX messages a u-blox
                          receiver sends beside its NMEA once per epoch (RAM only), from which
                          TPV takes position and accuracies; NMEA watchers still get the
                          receiver's NMEA. navigation for u-blox 8 and later, legacy for
                          u-blox 6. It adds 400–780 bytes an epoch to the NMEA: a u-blox 8
                          at 9600 baud has no room for both (docs/ubx.md)
      --state-dir DIR     where each receiver's last position is kept across restarts, to
                          tell a receiver that lost its backup power where it was, with the
                          time (default /var/lib/serialgps, the unit's StateDirectory=); one
                          that cannot be written is warned of, and nothing is kept
      --no-aiding         never tell a receiver the time and its last position at a wake
                          (by default a u-blox or MediaTek receiver that lost its backup
                          power, or slept past its ephemeris, is told them; docs/chipsets.md)
      --help              show this help

    MQTT options:
    \(ServeFleetOptions.help)

    NTRIP options (docs/ntrip.md):
    \(ServeNTRIPOptions.help)

    Time options (docs/time.md):
      --time              serve GPS time to chrony and ntpd from every receiver: chrony's SOCK
                          refclock and NTP shared memory where gpsd puts them
                          (/run/chrony.clk.TTY.sock, units 0 and 1 as root), and its PPS:
                          the kernel's PPS device for its tty, else the DCD line of a UART,
                          as gpsd (a device that fails is tried again). Each receiver stays
                          powered for as long as serve runs: a time consumer never stops
                          listening.
                          Watchers whose ?WATCH asks for "pps":true get TOFF and PPS reports.
      --time-offset MS    the receiver's delay from the second to its first byte, subtracted
                          from serial time (default 0): set the median of the delay that the
                          time report shows (in the log every 10 minutes and at the end)
      --chrony-socket PATH  chrony SOCK path for serial time (default gpsd's); one that
                          cannot be chronyd's socket is refused at start
      --ntp-shm UNIT      NTP shared-memory unit for serial time, PPS on UNIT+1 (default 0,
                          or 2 when not root; two more per further receiver)
      --pps /dev/ppsN     kernel PPS device of the receiver (a pps-gpio overlay); default: the
                          one the kernel ties to its tty, else the DCD line of a UART
      --pps none          no PPS: serial time only (nothing listens to DCD, no PPS socket
                          or SHM unit)

    Stops on SIGTERM, SIGINT (Ctrl-C), SIGHUP or SIGQUIT, putting every receiver to standby
    first (and saying offline on its MQTT status); a second Ctrl-C while stopping quits at once
    (status 130). SIGHUP stops rather than restarts, as the end of the terminal or session that
    started serve; under nohup it is ignored. Under systemd, `systemctl restart serialgps` is
    the restart.
    Exit status: 0 after a signal, 2 on usage errors or when the address or the chrony socket
    cannot be used, 1 when the MQTT broker refuses the credentials or certificates.

    """

  static func parse(_ arguments: [String]) -> Parsed {
    var options = ServeOptions()
    return ArgumentReader.parse(arguments) { argument, reader throws(UsageMessage) in
      if try options.receiver.take(argument, from: &reader) { return }
      switch argument {
      case "--listen":
        options.listen = try reader.value(
          "--listen needs an address such as 127.0.0.1:2947", allowingEmpty: true)
      case "--allow-remote":
        options.allowRemote = true
      case "--raw-listen":
        options.rawListen = try reader.value(
          "--raw-listen needs a port or an address such as 127.0.0.1:2948")
      case "--raw-write":
        options.rawWrite = true
      case "--nmea-socket":
        options.nmeaSocket = try reader.value(
          "--nmea-socket needs a path such as /run/serialgps/nmea.sock")
      case "--nmea-socket-mode":
        let text = try reader.value("--nmea-socket-mode needs octal permissions such as 0660")
        guard let mode = UInt32(text, radix: 8), mode <= 0o777 else {
          throw UsageMessage(
            "--nmea-socket-mode \(text): give octal permissions from 0 to 0777, such as 0660")
        }
        options.nmeaSocketMode = mode
      case "--exit-idle":
        options.exitIdle = try reader.seconds(
          in: 1...86_400, allowingZero: false,
          "--exit-idle needs a number of seconds from 1 to 86400, such as 60")
      case "--ephemeris-refresh":
        options.ephemerisRefresh = try reader.seconds(
          in: 0...604_800,
          "--ephemeris-refresh needs a number of seconds from 0.001 up to a week, such as 7200")
      case "--max-clients":
        options.maximumClients = try reader.number(
          in: 1...65_536, "--max-clients needs a number from 1 to 65536")
      case "--client-send-buffer":
        let message =
          "--client-send-buffer needs a number of bytes from 1024 to 16777216, or kernel"
        let text = try reader.value(message, allowingEmpty: true)
        guard text != "kernel" else {
          options.clientSendBuffer = nil
          break
        }
        guard let bytes = Int(text), (1024...16_777_216).contains(bytes) else {
          throw UsageMessage(message)
        }
        options.clientSendBuffer = bytes
      case "--state-dir":
        options.stateDirectory = try reader.value("--state-dir needs a directory")
      case "--no-aiding":
        options.aiding = false
      case "--time":
        options.servesTime = true
      case "--time-offset":
        let invalid =
          "--time-offset needs milliseconds from -1000 to 1000, such as 152 or 152.5 (the "
          + "median delay of serve --time's report)"
        let milliseconds = try reader.number(in: -1000.0...1000.0, invalid)
        guard milliseconds.isFinite else { throw UsageMessage(invalid) }
        options.timeSettings.offset = .nanoseconds(Int64((milliseconds * 1e6).rounded()))
        options.timeOptionsGiven.append(argument)
      case "--chrony-socket":
        let path = try reader.value("--chrony-socket needs the path of chrony's SOCK refclock")
        guard path.hasPrefix("/") else {
          throw UsageMessage(
            "--chrony-socket \(path): give the absolute path chrony's refclock SOCK line names")
        }
        options.timeSettings.chronySocket = path
        options.timeOptionsGiven.append(argument)
      case "--ntp-shm":
        options.timeSettings.ntpUnit = try reader.number(
          in: 0...99,
          "--ntp-shm needs a unit from 0 to 99 (ntpd's 127.127.28.UNIT, chrony's SHM UNIT)")
        options.timeOptionsGiven.append(argument)
      case "--pps":
        let path = try reader.value("--pps needs a kernel PPS device such as /dev/pps0, or none")
        if path == "none" {
          options.timeSettings.pps = false
          options.timeOptionsGiven.append("--pps none")
          break
        }
        guard path.hasPrefix("/") else {
          throw UsageMessage(
            "--pps \(path): give the device's path, such as /dev/pps0, or none for no PPS")
        }
        options.timeSettings.ppsDevice = path
        options.timeOptionsGiven.append(argument)
      case let option where option.hasPrefix("--mqtt"):
        guard try options.fleet.take(option, from: &reader) else { throw .unknownOption(option) }
      case let option where option.hasPrefix("--ntrip"):
        guard try options.ntrip.take(option, from: &reader) else { throw .unknownOption(option) }
      default:
        if isOption(argument) { throw .unknownOption(argument) }
        options.devices.append(argument)
      }
    } then: { () throws(UsageMessage) -> ServeOptions in
      if let mistake = options.fleet.mistake(devices: options.devices) {
        throw UsageMessage(mistake)
      }
      if let mistake = options.ntrip.mistake { throw UsageMessage(mistake) }
      if let option = options.timeOptionsGiven.first, !options.servesTime {
        throw UsageMessage("\(option) is a time option: add --time")
      }
      if options.devices.count > 1,
        let option = options.timeOptionsGiven.first(where: {
          $0 == "--chrony-socket" || $0 == "--pps"
        })
      {
        throw UsageMessage(
          "\(option) names one receiver's: serve that one DEVICE (the others get gpsd's defaults "
            + "when discovered), or leave \(option) out")
      }
      if options.rawWrite, options.rawListen == nil {
        throw UsageMessage("--raw-write writes through the raw port: add --raw-listen ADDR")
      }
      if options.nmeaSocketMode != nil, options.nmeaSocket == nil {
        throw UsageMessage(
          "--nmea-socket-mode sets the NMEA socket's permissions: add --nmea-socket PATH")
      }
      if options.exitIdle != nil, options.servesTime || options.fleet.isEnabled {
        throw UsageMessage(
          "--exit-idle cannot go with \(options.servesTime ? "--time" : "--mqtt"): "
            + (options.servesTime
              ? "chrony and ntpd never stop listening, so serve is never idle"
              : "MQTT consumers cannot start serve again once it exited")
            + "; leave one of them out")
      }
      if options.exitIdle != nil, options.listen == "none" {
        throw UsageMessage(
          "--exit-idle with --listen none: no client could ever start serve again; listen")
      }
      // A board that serves only GeoClue (--nmea-socket) or a raw port needs no gpsd port.
      if options.listen == "none" && !options.fleet.isEnabled && !options.servesTime
        && options.nmeaSocket == nil && options.rawListen == nil
      {
        throw UsageMessage(
          "--listen none leaves nobody to serve: add --mqtt URL, --time, --nmea-socket PATH "
            + "or --raw-listen ADDR, or listen")
      }
      return options
    }
  }

  /// The server's configuration, or why the options cannot make one.
  func configuration() -> Result<GPSDServer.Configuration, ServeUsageError> {
    var configuration = GPSDServer.Configuration()
    do {
      configuration.listenAddress = listen == "none" ? nil : try ListenAddress(parsing: listen)
    } catch {
      return .failure(ServeUsageError(message: "--listen \(error)"))
    }
    if let rawListen {
      // A bare port is one on loopback: the raw stream has no default port of its own.
      let text = rawListen.allSatisfy(\.isNumber) ? ":" + rawListen : rawListen
      do {
        configuration.rawListenAddress = try ListenAddress(parsing: text)
      } catch {
        return .failure(ServeUsageError(message: "--raw-listen \(error)"))
      }
      configuration.rawWrite = rawWrite
    }
    if let nmeaSocket {
      configuration.nmeaSocket = NMEASocket(path: nmeaSocket)
      if let nmeaSocketMode { configuration.nmeaSocket?.mode = nmeaSocketMode }
    }
    configuration.allowRemote = allowRemote
    configuration.maximumClients = maximumClients
    configuration.clientSendBufferSize = clientSendBuffer
    receiver.apply(to: &configuration.receiverOptions)
    configuration.receiverOptions.ephemerisRefresh = ephemerisRefresh
    if let wakePin = receiver.wakePin {
      do {
        configuration.receiverOptions.wakePin = try Watch.wakeLine(wakePin)
      } catch {
        return .failure(ServeUsageError(message: "--wake-pin: \(error)"))
      }
    }
    configuration.receiverOptions.awakeMarkers = SerialGPSPaths.awakeMarkers
    configuration.receiverOptions.aiding = aiding
    configuration.baud = receiver.baudSetting
    if servesTime {
      var time = timeSettings
      if let family = receiver.family { time.family = family }
      configuration.time = time
    }
    return .success(configuration)
  }
}

struct ServeUsageError: Error, Equatable {
  let message: String
}

enum ServeCommand {
  static func run(_ options: ServeOptions) async -> Int32 {
    // First: the variables must be gone before anything could start a child that inherits them.
    let activation = SocketActivation.take()
    var configuration: GPSDServer.Configuration
    switch options.configuration() {
    case .success(let made): configuration = made
    case .failure(let error):
      Output.error.line("serialgps serve: " + error.message)
      return 2
    }
    switch activation {
    case .none, .otherProcess:
      break
    case .passed(let sockets):
      configuration.listenDescriptors = sockets.map(\.descriptor)
    case .invalid(let problem):
      Output.error.line("serialgps serve: socket activation: \(problem)")
      return 2
    }
    configuration.log = { message in Output.error.line(message) }
    configuration.messageVocabulary = .commandLine
    configuration.receiverOptions.positionMemory = PositionMemory.writable(
      directory: options.stateDirectory)
    if configuration.receiverOptions.positionMemory == nil {
      Output.error.line(
        "serialgps serve: warning: cannot write to \(options.stateDirectory) (--state-dir): "
          + "receivers' positions are not kept across restarts")
    }
    var fleet: ServeFleet?
    if options.fleet.isEnabled {
      switch await ServeFleet.start(
        options.fleet, devices: options.devices,
        replayExpiry: configuration.receiverOptions.replayExpiry)
      {
      case .success(let started):
        fleet = started
        configuration.receiverChanges = { change in started.change(change) }
      case .failure(let failure):
        Output.error.line("serialgps serve: " + failure.message)
        return failure.status
      }
    }
    var ntrip: ServeNTRIP?
    if options.ntrip.isEnabled {
      switch options.ntrip.configuration(
        environmentCredentials: getenv(ServeNTRIPOptions.environmentVariable).map {
          String(cString: $0)
        })
      {
      case .success(let (settings, warning)):
        if let warning { Output.error.line("serialgps serve: warning: \(warning)") }
        let started = ServeNTRIP(configuration: settings)
        ntrip = started
        let fleetChanges = configuration.receiverChanges
        configuration.receiverChanges = { change in
          fleetChanges?(change)
          started.change(change)
        }
      case .failure(let error):
        Output.error.line("serialgps serve: " + error.message)
        await fleet?.shutdown()
        return 2
      }
    }
    let devices: GPSDServer.Devices =
      options.devices.isEmpty
      ? .discovery(DeviceDiscovery())
      : .fixed(options.devices.map { .serialPort(path: $0, baud: options.receiver.baudSetting) })
    // Before the receivers exist: a signal from now on stops them cleanly.
    let stop = StopSignals()
    if let after = options.exitIdle {
      configuration.whenIdle = GPSDServer.IdleNotice(after: after) { stop.request(.idle) }
    }
    let server: GPSDServer
    do {
      server = try GPSDServer(configuration: configuration, devices: devices)
    } catch {
      Output.error.line("serialgps serve: \(error)")
      await fleet?.shutdown()
      return 2
    }
    let served =
      options.devices.isEmpty ? "the receivers found" : options.devices.joined(separator: ", ")
    let passed = configuration.listenDescriptors.isEmpty ? "" : " (sockets passed by systemd)"
    let listening =
      server.listenAddresses.isEmpty
      ? "no gpsd port"
      : "listening on "
        + server.listenAddresses.map(\.description).joined(separator: " and ") + passed
    let publishing = fleet.map { " and publishing to \($0.bridge.brokerURL)" } ?? ""
    let raw = server.rawListenAddress.map {
      " with the raw stream on \($0)\(options.rawWrite ? " (writable)" : "")"
    }
    let nmea = server.nmeaSocketPath.map { " with NMEA on \($0)" }
    let time = (raw ?? "") + (nmea ?? "") + (options.servesTime ? " and serving time" : "")
    Output.error.line("serialgps serve: \(listening)\(publishing)\(time) for \(served)")
    // Started: the code only start-up ran leaves the resident set (docs/posix.md, Memory).
    _ = try? ResidentMemory.releaseExecutableCode()
    let reason = await stop.requested()
    Output.error.line("serialgps serve: \(reason): putting the receivers to standby")
    await fleet?.shutdown()
    // The corrections stop first: none is written to a receiver going to standby.
    if let ntrip { Output.error.line("serialgps serve: " + (await ntrip.shutdown())) }
    await server.shutdown()
    let failed = server.statistics.standbysFailed
    if failed > 0 {
      Output.error.line(
        "serialgps serve: warning: \(failed) power-off\(failed == 1 ? "" : "s") may have left "
          + "a receiver powered (see above): check --chipset")
    }
    // The delay's median is the --time-offset to set.
    for (device, figures) in server.timeStatistics {
      Output.error.line("serialgps serve: \(device): time: \(figures.summary)")
    }
    return 0
  }
}
