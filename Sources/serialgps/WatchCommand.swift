import Chipsets
import Discovery
import NMEA
import Replay
import SerialGPS
import SerialPort
import Simulator

// `serialgps watch DEVICE`: subscribes to one receiver and prints its fixes, one line each on
// standard output (or gpsd TPV JSON), and its status changes on standard error. It ends its
// subscription after --count fixes, on a signal or when its output is closed, and exits only
// once the receiver has been sent its standby commands and the port is closed. See
// docs/watch.md.
let watchCommand = Command(
  name: "watch",
  usage:
    "watch [DEVICE] [--chipset auto|probe|\(ChipsetFamily.cliNames)|\(ChipsetRegistry.makerNames.joined(separator: "|"))] [--baud N|auto] [--count N] "
    + "[--json] [--linger SECONDS] [--interval S] [--accuracy M] [--ephemeris-refresh S] "
    + "[--ubx \(UBXMessageSelection.cliNames)]",
  summary: "Power a receiver on, print its fixes as they come, power it off on exit.",
  arguments: Watch.self
) { options in
  await Watch.run(options)
}

/// The `watch` subcommand: argument parsing, the event loop, output.
enum Watch: CommandArguments {
  struct Options {
    var device: String?
    /// `--chipset`, `--baud`, `--linger`, `--ubx`, `--wake-pin`, `--sleep`.
    var receiver = ReceiverArguments.watch
    var count: Int?
    var json = false
    /// One fix per interval (the receiver sleeps between them), of this accuracy.
    var interval: Duration?
    var accuracy: Double?
    /// `--ephemeris-refresh S`: the longest time between two ephemeris collections.
    var ephemerisRefresh = GPSReceiver.Options().ephemerisRefresh
    /// The wake line `--wake-pin` names, once made.
    var wakeLine: (any WakeLine)?
  }

  typealias Parsed = ParsedArguments<Options>

  static let help = """
    usage: serialgps watch [DEVICE] [options]

    Opens the GPS receiver on DEVICE (/dev/ttyACM0, /dev/ttyUSB0, /dev/serial/by-id/…), wakes
    it with its chipset's commands and prints each fix as it arrives, one line per fix on
    standard output. Without DEVICE it uses the first receiver found (as `serialgps list`
    shows them, known receivers first) and follows it across unplug and replug; with none
    attached it lists the serial ports it saw and exits 1.

      2026-03-30T12:00:00.000Z  3D  47.3769033  8.5417017  alt 408.3 m  speed 5.14 m/s  sats 8  acc 2.5 m

    (UTC time, fix mode, latitude and longitude in degrees, altitude above mean sea level,
    speed over ground, satellites used, horizontal accuracy; "-" for what the receiver did not
    say). Status changes (powering on, streaming, no fix, disconnected …) go to standard error.

    options:
      --chipset NAME     auto (default), probe, a family (\(ChipsetRegistry.namesInProse()))
                         or a maker (quectel: identified among its families, never written
                         to before): which commands wake the receiver and put it to
                         standby. auto decides from the USB IDs or
                         from what the receiver says, and sends nothing until one of them names
                         the chipset; probe does the same, and when nothing names it asks the
                         receiver (writes the families' firmware queries to DEVICE:
                         \(ChipsetProbe.polls)); nmea sends nothing.
      --ubx SET          navigation, legacy or off (default): UBX messages a u-blox
                         receiver sends beside its NMEA once per epoch (RAM only; the fix
                         takes its position and accuracies from them). navigation for u-blox
                         8 and later (NAV-PVT, DOP, SAT, TIMEGPS, STATUS, EOE), legacy for
                         u-blox 6 (NAV-SOL, POSLLH …). It adds 400–780 bytes an epoch to the
                         NMEA: a u-blox 8 at 9600 baud has no room for both (docs/ubx.md)
      --baud N|auto      the serial rate (4800 … 921600), or auto (default): a receiver
                         woken with commands opens at the rate remembered, else its
                         chipset's factory rate (SiRF 4800, others 9600); one sending by
                         itself is found by listening. USB receivers (ttyACM) ignore it.
      --count N          stop after N fixes
      --json             print gpsd TPV reports, one JSON object per line, instead
      --linger SECONDS   keep the receiver powered this long after watch stops listening
                         (default 0: watch is its only subscriber; Ctrl-C cuts it short)
      --interval S       one fix every S seconds; the receiver is put to standby between
                         them and woken early enough for the fix to be ready (docs/requests.md);
                         fixes only, no status lines
      --accuracy M       only fixes whose horizontal error reaches M metres (a receiver that
                         gives no estimate has every fix taken)
      --ephemeris-refresh S  with --interval: the longest time between two wakes extended
                         to 30 s of tracking to refresh the receiver's ephemeris (default
                         7200; half of how long an ephemeris serves)
      --wake-pin CHIP:LINE  the GPIO line wired to the receiver's FORCE_ON (gpiochip0:17),
                         driven through /dev/gpiochipN; only then may a MediaTek sleep in
                         backup ($PMTK225,4) between scheduled fixes. control:FIFO drives a
                         simulator's FORCE_ON (serialgps replay --control FIFO)
      --sleep D          deepest (default): the deepest sleep the receiver can certainly be
                         woken from; standby: always the quick-wake standby
      --help             show this help

    Stopping: after --count fixes, on Ctrl-C (SIGINT), SIGTERM, SIGHUP (the terminal or ssh
    session closed; ignored under nohup) or SIGQUIT, or when standard output is closed
    (serialgps watch | head -2), watch ends its subscription, sends the receiver its standby
    commands, closes the port and exits. Ctrl-C while stopping exits at once (status 130)
    without waiting for the receiver; other signals do not.

    Exit status: 0 after a clean stop (--count reached, a signal, standard output closed),
    1 when the device cannot be opened (the message says why and what to do) or standard
    output cannot be written (a full disk), 2 for a wrong command line, 130 after Ctrl-C while
    stopping.

    """

  static func parse(_ arguments: [String]) -> Parsed {
    var options = Options()
    return ArgumentReader.parse(arguments) { argument, reader throws(UsageMessage) in
      if try options.receiver.take(argument, from: &reader) { return }
      switch argument {
      case "--json":
        options.json = true
      case "--count":
        options.count = try reader.fixCount()
      case "--interval":
        options.interval = try reader.seconds(
          in: 0...86_400, "--interval needs a number of seconds from 0.001, such as 30")
      case "--accuracy":
        options.accuracy = try reader.number(
          in: 0.01...1_000_000, "--accuracy needs a number of metres above 0, such as 10")
      case "--ephemeris-refresh":
        options.ephemerisRefresh = try reader.seconds(
          in: 0...604_800,
          "--ephemeris-refresh needs a number of seconds from 0.001 up to a week, such as 7200")
      default:
        try takeOperand(argument, into: &options.device, "watches one device")
      }
    } then: {
      options
    }
  }

  static func run(_ options: Options) async -> Int32 {
    var options = options
    if let specification = options.receiver.wakePin {
      do {
        options.wakeLine = try wakeLine(specification)
      } catch {
        Output.error.line("serialgps watch: \(error)")
        return 1
      }
    }
    if let device = options.device {
      return await watch(device: device, options: options)
    }
    return await watchFirstReceiver(options: options)
  }

  /// Without a DEVICE: the first receiver discovery finds (known ones first), followed across
  /// unplug and replug. With none, says so, lists the serial ports it did see, and fails.
  static func watchFirstReceiver(options: Options) async -> Int32 {
    let discovery = DeviceDiscovery()
    let ports: [SerialDevice]
    do {
      ports = try await discovery.serialPorts()
    } catch {
      Output.error.line("serialgps watch: \(error)")
      Output.error.line("Name the receiver's device instead: serialgps watch /dev/ttyACM0")
      return 1
    }
    guard let chosen = ReceiverSelector.first.candidates(in: ports).first else {
      discovery.shutdown()
      Output.error.write(noReceiverMessage(ports: ports))
      return 1
    }
    let kind =
      chosen.classification.kind == .known
      ? "a known receiver" : "a possible receiver, only listened to until it speaks NMEA"
    Output.error.line(
      "serialgps watch: using \(chosen.path)"
        + (chosen.classification.model.map { " (\($0))" } ?? "") + ", \(kind)")
    return await watch(
      device: chosen.path, options: options,
      makeReceiver: { receiverOptions in
        GPSReceiver(
          selecting: .first, discovery: discovery, baud: options.receiver.baudSetting,
          options: receiverOptions)
      })
  }

  /// The wake line `--wake-pin` names: `control:FIFO` for a simulator's FORCE_ON
  /// (`serialgps replay --control FIFO`), else a GPIO line `CHIP:LINE`.
  static func wakeLine(_ specification: String) throws -> any WakeLine {
    if specification.hasPrefix("control:") {
      return SimulatorWakeLine(fifo: String(specification.dropFirst("control:".count)))
    }
    return try GPIOWakeLine(specification: specification)
  }

  /// What `watch` says when no receiver is attached: the ports it saw, and what to do.
  static func noReceiverMessage(ports: [SerialDevice]) -> String {
    var text = "serialgps watch: no GPS receiver found.\n"
    if ports.isEmpty {
      text += "No serial ports at all: is the receiver plugged in? (`dmesg` shows USB devices.)\n"
    } else {
      text += "Serial ports seen (none of them known to be a GPS receiver):\n"
      for port in ports {
        var line = "  " + port.path
        if let usb = port.usb {
          line += "  \(usb.id)"
          if let product = usb.product { line += "  \(product)" }
        }
        if let driver = port.driver { line += "  [\(driver)]" }
        text += line + "\n"
      }
      text += "If one of them is your receiver, name it: serialgps watch /dev/ttyUSB0\n"
      text += "or declare it with a udev rule (docs/discovery.md, SERIALGPS_CHIPSET).\n"
    }
    return text
  }

  /// Why the event loop ended.
  enum Ending {
    case countReached
    case stopRequested
    case cannotOpen(reason: String)
    case receiverEnded
  }

  /// How the receiver is driven, from the command line.
  static func receiverOptions(_ options: Options) -> GPSReceiver.Options {
    var receiverOptions = GPSReceiver.Options()
    options.receiver.apply(to: &receiverOptions)
    receiverOptions.ephemerisRefresh = options.ephemerisRefresh
    receiverOptions.wakePin = options.wakeLine
    receiverOptions.awakeMarkers = SerialGPSPaths.awakeMarkers
    // What the receiver says with nobody subscribed (a standby that failed, a receiver left
    // running) comes after the last fix was printed: to stderr, as it happens.
    receiverOptions.notices = { device, notice in
      Output.error.line("serialgps watch: \(device): \(notice)")
    }
    return receiverOptions
  }

  static func watch(
    device: String, options: Options,
    makeReceiver: ((GPSReceiver.Options) -> GPSReceiver)? = nil
  ) async -> Int32 {
    let receiverOptions = receiverOptions(options)
    let receiver =
      makeReceiver?(receiverOptions)
      ?? GPSReceiver(device: device, baud: options.receiver.baudSetting, options: receiverOptions)
    let stop = StopSignals()
    let isRequest = options.interval != nil || options.accuracy != nil
    let events: ReceiverEvents
    do {
      events =
        isRequest
        ? try receiver.subscribe(
          LocationRequest(interval: options.interval, accuracy: options.accuracy))
        : receiver.subscribe()
    } catch {
      // The options were read as the library reads them: this is its word for what slipped by.
      Output.error.line("serialgps watch: \(error)")
      return 2
    }
    stop.onStop { reason in
      Output.error.line(
        "serialgps watch: \(reason): stopping; powering \(device) off "
          + "(Ctrl-C again to quit at once)")
      events.cancel()
    }
    // A request delivers fixes only: an observer beside it prints the statuses, as plain watch
    // does, and says at once why no fix can come.
    let observer = isRequest ? receiver.observe() : nil
    let blocked = observer.map { observer in
      DriverExecutor.task { () -> String? in
        let reason = await NoFixCanCome.reason(observer, device: device) { status in
          Output.error.line("serialgps watch: \(device): \(status.description(in: .commandLine))")
        }
        if reason != nil { events.cancel() }
        return reason
      }
    }

    var ending = await printEvents(
      events, device: device, options: options, stop: stop, deviceName: { receiver.deviceName })
    events.cancel()
    observer?.cancel()
    if let reason = await blocked?.value, !stop.isRequested { ending = .cannotOpen(reason: reason) }
    Output.standard.flush()

    if case .cannotOpen(let reason) = ending {
      Output.error.line("serialgps watch: " + reason)
    } else if options.receiver.linger > .zero && !stop.isRequested {
      // The receiver powers off by itself when the linger ends; a stop request ends the wait.
      await stop.sleep(for: options.receiver.linger)
    }
    // Powers off now if the linger is not over, and returns once the standby commands were
    // sent and the port closed. Their failures no longer reach the ended subscription.
    let failedBefore = receiver.statistics.commandsFailed
    let withheldBefore = receiver.statistics.powerCommandsWithheld
    await receiver.shutdown()
    if receiver.statistics.powerCommandsWithheld > withheldBefore,
      let withheld = receiver.commandsWithheld(at: .powerOff)
    {
      Output.error.line("serialgps watch: \(device): \(withheld.description(in: .commandLine))")
    }
    let failed = receiver.statistics.commandsFailed - failedBefore
    if failed > 0 {
      Output.error.line(
        "serialgps watch: \(device): \(failed == 1 ? "a command was" : "\(failed) commands were") "
          + "not acknowledged while stopping; the receiver may not be in standby")
    }
    if case .cannotOpen = ending { return 1 }
    if case .outputFailed = stop.reason { return 1 }
    return 0
  }

  /// Prints fixes and status changes until the count is reached, a stop is asked for, or the
  /// device cannot be opened at all.
  ///
  /// - Parameters:
  ///   - command: names the command in status lines (`follow` prints them too).
  ///   - deviceName: the path of the device in use, for the TPV reports' `device` (the one
  ///     found now, when following a receiver across replugs).
  static func printEvents(
    _ events: ReceiverEvents, device: String, options: Options, stop: StopSignals,
    command: String = "watch", deviceName: () -> String
  ) async -> Ending {
    var printed = 0
    var reports = ReportLines()
    // Whether the device ever opened and sent data: before that, a failure to open is a
    // mistake on the command line or a permission problem, not an unplug to wait out.
    var heardFrom = false
    for await event in events {
      switch event {
      case .fix(let update):
        heardFrom = true
        if options.json {
          reports.device = deviceName()
          Output.standard.write(bytes: reports.tpv(update.fix))
        } else {
          Output.standard.line(FixLine.describe(update.fix))
        }
        Output.standard.flush()
        printed += 1
        if let count = options.count, printed >= count { return .countReached }
      case .status(let status):
        switch status {
        case .streaming, .noFix, .reconnected:
          heardFrom = true
        case .disconnected(let reason) where !heardFrom:
          return .cannotOpen(reason: reason.message(in: .commandLine))
        default:
          break
        }
        Output.error.line(
          "serialgps \(command): \(device): \(status.description(in: .commandLine))")
      case .satellites:
        break
      }
    }
    return stop.isRequested ? .stopRequested : .receiverEnded
  }
}
