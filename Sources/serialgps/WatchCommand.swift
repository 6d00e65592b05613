import Chipsets
import Discovery
import NMEA
import SerialGPS
import SerialPort

// `serialgps watch DEVICE`: subscribes to one receiver and prints its fixes, one line each on
// standard output (or gpsd TPV JSON), and its status changes on standard error. It ends its
// subscription after --count fixes, on a signal or when its output is closed, and exits only
// once the receiver has been sent its standby commands and the port is closed. See
// docs/watch.md.
let watchCommand = Command(
  name: "watch",
  usage:
    "watch [DEVICE] [--chipset auto|\(ChipsetFamily.cliNames)] [--baud N|auto] [--count N] "
    + "[--json] [--linger SECONDS]",
  summary: "Power a receiver on, print its fixes as they come, power it off on exit."
) { arguments in
  await Watch.run(arguments)
}

/// The `watch` subcommand: argument parsing, the event loop, output.
enum Watch {
  struct Options {
    var device: String?
    var chipset: ChipsetChoice = .automatic
    var baud: SerialConnector.BaudSetting = .automatic()
    var count: Int?
    var json = false
    /// Watch is the receiver's only subscriber, so by default nothing is kept warm for later.
    var linger: Duration = .zero
    var help = false
  }

  /// A wrong command line, with the one-line complaint for standard error.
  struct UsageError: Error, Equatable {
    let message: String
  }

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
      --chipset NAME     auto (default), ublox, mtk, sirf or nmea: which commands wake the
                         receiver and put it to standby. auto decides from the USB IDs or from
                         what the receiver says; nmea sends nothing.
      --baud N|auto      the serial rate (4800 … 921600), or auto (default): a receiver
                         woken with commands opens at the rate remembered, else its
                         chipset's factory rate (SiRF 4800, others 9600); one sending by
                         itself is found by listening. USB receivers (ttyACM) ignore it.
      --count N          stop after N fixes
      --json             print gpsd TPV reports, one JSON object per line, instead
      --linger SECONDS   keep the receiver powered this long after watch stops listening
                         (default 0: watch is its only subscriber; Ctrl-C cuts it short)
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

  static func parse(_ arguments: [String]) -> Result<Options, UsageError> {
    var options = Options()
    var index = arguments.startIndex
    func value(for option: String) -> Result<String, UsageError> {
      index += 1
      guard index < arguments.endIndex else {
        return .failure(UsageError(message: "\(option) needs a value"))
      }
      return .success(arguments[index])
    }
    while index < arguments.endIndex {
      let argument = arguments[index]
      switch argument {
      case "--help", "-h":
        options.help = true
      case "--json":
        options.json = true
      case "--chipset":
        switch value(for: argument) {
        case .failure(let error): return .failure(error)
        case .success(let name):
          guard let choice = ChipsetChoice(cliName: name) else {
            return .failure(
              UsageError(
                message: "unknown chipset '\(name)'; use auto, \(ChipsetFamily.cliNames)"))
          }
          options.chipset = choice
        }
      case "--baud":
        switch value(for: argument) {
        case .failure(let error): return .failure(error)
        case .success(let text):
          if text == "auto" {
            options.baud = .automatic()
          } else if let bits = Int(text), BaudRate(bits).isSupported {
            let rate = BaudRate(bits)
            options.baud = .fixed(rate)
          } else {
            let rates = BaudRate.supported.map(\.description).joined(separator: ", ")
            return .failure(
              UsageError(message: "--baud takes auto or one of \(rates), not '\(text)'"))
          }
        }
      case "--count":
        switch value(for: argument) {
        case .failure(let error): return .failure(error)
        case .success(let text):
          guard let count = Int(text), count > 0 else {
            return .failure(
              UsageError(message: "--count takes a positive whole number, not '\(text)'"))
          }
          options.count = count
        }
      case "--linger":
        switch value(for: argument) {
        case .failure(let error): return .failure(error)
        case .success(let text):
          // At most a day: longer is certainly a typo, and keeps the conversion exact.
          guard let seconds = Double(text), seconds >= 0, seconds <= 86_400 else {
            return .failure(
              UsageError(message: "--linger takes a number of seconds (0 or more), not '\(text)'"))
          }
          options.linger = .milliseconds(Int64((seconds * 1000).rounded()))
        }
      default:
        if argument.hasPrefix("-") && argument != "-" {
          return .failure(UsageError(message: "unknown option '\(argument)'"))
        }
        if let device = options.device {
          return .failure(
            UsageError(message: "one device at a time: got '\(device)' and '\(argument)'"))
        }
        options.device = argument
      }
      index += 1
    }
    return .success(options)
  }

  static func run(_ arguments: [String]) async -> Int32 {
    let options: Options
    switch parse(arguments) {
    case .failure(let error):
      Output.error.line("serialgps watch: \(error.message)")
      Output.error.line("Run `serialgps watch --help` for the options.")
      return 2
    case .success(let parsed):
      options = parsed
    }
    if options.help {
      Output.standard.write(help)
      return 0
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
          selecting: .first, discovery: discovery, baud: options.baud, options: receiverOptions)
      })
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

  static func watch(
    device: String, options: Options,
    makeReceiver: ((GPSReceiver.Options) -> GPSReceiver)? = nil
  ) async -> Int32 {
    var receiverOptions = GPSReceiver.Options()
    receiverOptions.chipset = options.chipset
    receiverOptions.linger = options.linger
    let receiver =
      makeReceiver?(receiverOptions)
      ?? GPSReceiver(device: device, baud: options.baud, options: receiverOptions)
    let stop = StopSignals()
    let events = receiver.subscribe()
    stop.onStop { reason in
      Output.error.line(
        "serialgps watch: \(reason): stopping; powering \(device) off "
          + "(Ctrl-C again to quit at once)")
      events.cancel()
    }

    let ending = await printEvents(events, device: device, options: options, stop: stop)
    events.cancel()
    Output.standard.flush()

    if case .cannotOpen(let reason) = ending {
      Output.error.line("serialgps watch: " + reason)
    } else if options.linger > .zero && !stop.isRequested {
      // The receiver powers off by itself when the linger ends; a stop request ends the wait.
      await stop.sleep(for: options.linger)
    }
    // Powers off now if the linger is not over, and returns once the standby commands were
    // sent and the port closed. Their failures no longer reach the ended subscription.
    let failedBefore = receiver.statistics.commandsFailed
    await receiver.shutdown()
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
  static func printEvents(
    _ events: ReceiverEvents, device: String, options: Options, stop: StopSignals
  ) async -> Ending {
    var printed = 0
    // Whether the device ever opened and sent data: before that, a failure to open is a
    // mistake on the command line or a permission problem, not an unplug to wait out.
    var heardFrom = false
    for await event in events {
      switch event {
      case .fix(let update):
        heardFrom = true
        Output.standard.line(options.json ? tpvLine(update.fix) : fixLine(update.fix))
        Output.standard.flush()
        printed += 1
        if let count = options.count, printed >= count { return .countReached }
      case .status(let status):
        switch status {
        case .streaming, .noFix, .reconnected:
          heardFrom = true
        case .disconnected(let reason) where !heardFrom:
          return .cannotOpen(reason: reason)
        default:
          break
        }
        Output.error.line("serialgps watch: \(device): \(status)")
      case .satellites:
        break
      }
    }
    return stop.isRequested ? .stopRequested : .receiverEnded
  }

  // MARK: - The line for people

  /// `2026-03-30T12:00:00.000Z  3D  47.3769033  8.5417017  alt 408.3 m  speed 5.14 m/s  sats 8
  /// acc 2.5 m`: always the same fields in the same order, `-` for what is unknown.
  static func fixLine(_ fix: Fix) -> String {
    var parts: [String] = []
    if let timestamp = fix.timestamp {
      parts.append(timestamp.description)
    } else if let time = fix.time {
      parts.append(time.description + "Z")  // no date yet: the time of day alone
    } else {
      parts.append("-")
    }
    parts.append(fix.mode.description)
    let hasPosition = fix.mode >= .twoD
    parts.append(hasPosition ? decimal(fix.latitude, 7) : "-")
    parts.append(hasPosition ? decimal(fix.longitude, 7) : "-")
    parts.append("alt " + unit(fix.mode == .threeD ? fix.altitudeMSL : nil, 1, "m"))
    parts.append("speed " + unit(fix.speed, 2, "m/s"))
    parts.append("sats " + (fix.satellitesUsed.map(String.init) ?? "-"))
    parts.append("acc " + unit(fix.horizontalAccuracy, 1, "m"))
    return parts.joined(separator: "  ")
  }

  private static func decimal(_ value: Double?, _ decimals: Int) -> String {
    value.flatMap { fixedDecimal($0, decimals: decimals) } ?? "-"
  }

  private static func unit(_ value: Double?, _ decimals: Int, _ unit: String) -> String {
    guard let value, let text = fixedDecimal(value, decimals: decimals) else { return "-" }
    return text + " " + unit
  }
}

// MARK: - gpsd TPV: until GPSDProtocol's encoder is on main
//
// `watch --json` prints every TPV through `tpvLine(_:)` alone. When GPSDProtocol's encoder
// lands, replace the body of `tpvLine` (and `fixedDecimal`, if nothing else uses it) with it;
// the command needs nothing else changed.

/// The gpsd TPV report for `fix`, one JSON object without the newline, with gpsd 3.22's field
/// names, units and decimals: `class`, `mode` (1 no fix, 2 2D, 3 3D), `time` (ISO 8601 UTC
/// with milliseconds), `lat`/`lon` (degrees, 9 decimals), `altHAE`/`altMSL`/`alt` (metres, 4),
/// `epv` (metres, 3), `track` (degrees from true north, 4), `speed` (m/s, 3), `climb` (m/s,
/// 3), `eph` (metres, 3). Like gpsd, position only from 2D, altitude, climb and `epv` only in
/// 3D; unknown values are left out.
func tpvLine(_ fix: Fix) -> String {
  var members: [String] = ["\"class\":\"TPV\"", "\"mode\":\(fix.mode.rawValue)"]
  func add(_ name: String, _ value: Double?, _ decimals: Int) {
    guard let value, let text = fixedDecimal(value, decimals: decimals) else { return }
    members.append("\"\(name)\":\(text)")
  }
  if let timestamp = fix.timestamp {
    members.append("\"time\":\"\(timestamp.iso8601(fractionDigits: 3))\"")
  }
  let threeD = fix.mode == .threeD
  if fix.mode >= .twoD {
    add("lat", fix.latitude, 9)
    add("lon", fix.longitude, 9)
  }
  if threeD {
    add("altHAE", fix.altitudeHAE, 4)
    add("altMSL", fix.altitudeMSL, 4)
    add("alt", fix.altitudeMSL, 4)  // gpsd 3.22 still sends the deprecated name
    add("epv", fix.verticalAccuracy, 3)
  }
  add("track", fix.course, 4)
  add("speed", fix.speed, 3)
  if threeD { add("climb", fix.climb, 3) }
  add("eph", fix.horizontalAccuracy, 3)
  return "{" + members.joined(separator: ",") + "}"
}

/// `value` with exactly `decimals` digits after the point, rounded as C's `printf("%.*f")`
/// rounds (to nearest, ties to even, on the exact binary value); `nil` for NaN and infinities,
/// which JSON cannot carry. Magnitudes must stay below 2^53 / 10^decimals (any coordinate,
/// altitude or speed does).
func fixedDecimal(_ value: Double, decimals: Int) -> String? {
  guard value.isFinite, (0...9).contains(decimals) else { return nil }
  var scale = 1.0
  for _ in 0..<decimals { scale *= 10 }
  let product = value * scale
  guard abs(product) < 9.0e15 else { return nil }
  // `product` is the correctly rounded value * scale; `error` is what rounding lost, exactly.
  // Only an exact tie of `product` can round differently from the exact value.
  let error = (-product).addingProduct(value, scale)
  var rounded = product.rounded(.toNearestOrEven)
  if abs(product - product.rounded(.towardZero)) == 0.5 && error != 0 {
    rounded = error > 0 ? product.rounded(.up) : product.rounded(.down)
  }
  let negative = value.sign == .minus  // printf keeps the sign of what rounds to zero
  let magnitude = UInt64(abs(rounded))
  var divisor: UInt64 = 1
  for _ in 0..<decimals { divisor *= 10 }
  var text = negative ? "-" : ""
  text += String(magnitude / divisor)
  if decimals > 0 {
    let fraction = String(magnitude % divisor)
    text += "." + String(repeating: "0", count: decimals - fraction.count) + fraction
  }
  return text
}
