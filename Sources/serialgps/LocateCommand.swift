import Chipsets
import NMEA
import SerialGPS
import SerialPort

// `serialgps locate DEVICE`: one fix, as `GPSReceiver.location(accuracy:timeout:maxAge:)`
// gives it: printed as `watch` prints a fix (or a TPV report), exit 0; on timeout the best
// fix seen, a message saying what to do, exit 1. The receiver is left in standby either way.
let locateCommand = Command(
  name: "locate",
  usage:
    "locate [DEVICE] [--chipset auto|probe|\(ChipsetFamily.cliNames)|\(ChipsetRegistry.makerNames.joined(separator: "|"))] [--baud N|auto] "
    + "[--accuracy M] [--timeout S] [--max-age S] [--json]",
  summary: "Wake a receiver for one fix (of an accuracy), print it, put it back to standby.",
  arguments: Locate.self
) { options in
  await Locate.run(options)
}

/// The `locate` subcommand: argument parsing and output; the one-shot is the library's.
enum Locate: CommandArguments {
  struct Options {
    var device: String?
    /// `--chipset`, `--baud`.
    var receiver = ReceiverArguments.locate
    var accuracy: Double?
    var timeout: Duration = .seconds(60)
    var maxAge: Duration?
    var json = false
  }

  typealias Parsed = ParsedArguments<Options>

  static let help = """
    usage: serialgps locate [DEVICE] [options]

    Wakes the GPS receiver on DEVICE (without DEVICE, the first receiver found), waits for
    the first fix that is good enough, prints it as `serialgps watch` does and puts the
    receiver back to standby at once. A receiver that gives no error estimate (no GST or
    PGRME) cannot be judged: its first fix is taken, and locate says so.

    options:
      --chipset NAME     auto (default), probe, \(ChipsetRegistry.namesInProse()) (as for watch)
      --baud N|auto      the serial rate, or auto (default), as for watch
      --accuracy M       the horizontal error, in metres, the fix must reach (default: any)
      --timeout S        how long to wait for it, in seconds (default 60; a cold start takes
                         about 30 s under open sky)
      --max-age S        a fix this recent that this process heard answers at once
      --json             print a gpsd TPV report instead
      --help             show this help

    Exit status: 0 with the fix printed; 1 when none good enough came within the timeout
    (the best seen is printed, and a message says what to do) or the device cannot be
    opened; 2 for a wrong command line; 130 after Ctrl-C.

    """

  static func parse(_ arguments: [String]) -> Parsed {
    var options = Options()
    return ArgumentReader.parse(arguments) { argument, reader throws(UsageMessage) in
      if try options.receiver.take(argument, from: &reader) { return }
      switch argument {
      case "--json":
        options.json = true
      case "--accuracy":
        options.accuracy = try reader.number(
          in: 0.01...1_000_000, "--accuracy needs a number of metres above 0, such as 10")
      case "--timeout":
        options.timeout = try reader.seconds(
          in: 0...86_400, "--timeout needs a number of seconds from 0.001, such as 60")
      case "--max-age":
        options.maxAge = try reader.seconds(
          in: 0...86_400, allowingZero: true,
          "--max-age needs a number of seconds from 0 to 86400, such as 30")
      default:
        try takeOperand(argument, into: &options.device, "locates with one device")
      }
    } then: {
      options
    }
  }

  static func run(_ options: Options) async -> Int32 {
    var receiverOptions = GPSReceiver.Options()
    options.receiver.apply(to: &receiverOptions)
    receiverOptions.linger = .zero
    receiverOptions.awakeMarkers = SerialGPSPaths.awakeMarkers
    let receiver =
      options.device.map {
        GPSReceiver(device: $0, baud: options.receiver.baudSetting, options: receiverOptions)
      }
      ?? GPSReceiver(
        selecting: .first, baud: options.receiver.baudSetting, options: receiverOptions)
    let stop = StopSignals()
    // Watched beside the request, which delivers fixes only: why none can come, said at once.
    let observer = receiver.observe()
    let asking = DriverExecutor.task {
      try await receiver.location(
        accuracy: options.accuracy, timeout: options.timeout, maxAge: options.maxAge)
    }
    let blocked = DriverExecutor.task { () -> String? in
      let reason = await NoFixCanCome.reason(observer, device: receiver.deviceName)
      if reason != nil { asking.cancel() }
      return reason
    }
    stop.onStop { reason in
      Output.error.line("serialgps locate: \(reason): stopping; powering the receiver off")
      asking.cancel()
    }
    let status: Int32
    let result = await asking.result
    observer.cancel()
    if let reason = await blocked.value, !stop.isRequested {
      Output.error.line("serialgps locate: " + reason)
      Output.standard.flush()
      await receiver.shutdown()
      return 1
    }
    switch result {
    case .success(let update):
      print(update.fix, options: options, device: receiver.deviceName)
      if options.accuracy != nil, update.fix.horizontalAccuracy == nil {
        Output.error.line(
          "serialgps locate: \(receiver.deviceName) gives no error estimate (no GST or PGRME): "
            + "took its first fix without knowing its accuracy")
      }
      status = 0
    case .failure(let error as LocationTimeout):
      if let best = error.best { print(best.fix, options: options, device: receiver.deviceName) }
      if case .disconnected(let reason) = receiver.status {
        Output.error.line("serialgps locate: " + reason.message(in: .commandLine))
      } else {
        Output.error.line("serialgps locate: \(receiver.deviceName): \(error)")
      }
      status = 1
    case .failure:
      status = stop.isRequested ? 130 : 1
    }
    Output.standard.flush()
    await receiver.shutdown()
    return status
  }

  static func print(_ fix: Fix, options: Options, device: String) {
    if options.json {
      var reports = ReportLines()
      reports.device = device
      Output.standard.write(bytes: reports.tpv(fix))
    } else {
      Output.standard.line(FixLine.describe(fix))
    }
  }
}
