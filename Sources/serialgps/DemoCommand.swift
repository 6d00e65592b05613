import Chipsets
import Glibc
import NMEA
import POSIX
import Replay
import SerialGPS
import SerialPort
import Simulator

// `serialgps demo`: the main job without a receiver, clearly labelled as a demo. A recorded
// drive is replayed on a virtual u-blox receiver (the simulator, on a pty) and watched
// through the whole stack, as `serialgps watch` watches a real one: SerialConnector →
// GPSReceiver with the u-blox commands. It shows the power-on (status lines and the commands
// the receiver got), live fixes as they arrive, then the power-off. See docs/replay.md.
let demoCommand = Command(
  name: "demo",
  usage: "demo [--speed X] [--fixes N] [--recording FILE] [--no-physics]",
  summary: "The bundled demo: a recorded drive on a virtual receiver, watched through the driver.",
  arguments: DemoOptions.self
) { options in
  await DemoSession(options: options).run()
}

struct DemoOptions: Equatable, CommandArguments {
  var speed: Double = 5
  var fixes = 15
  var recording: String?
  /// Whether the virtual receiver models its physics (starts, error, charge).
  var physics = true

  typealias Parsed = ParsedArguments<DemoOptions>

  static let defaultRecording = "fixtures/ublox-m8-drive.nmea"

  static let help = """
    usage: serialgps demo [options]

    Runs the bundled demo, which needs no GPS receiver: a recorded drive
    (\(defaultRecording)) is replayed on a virtual u-blox receiver on a pseudo-terminal,
    and serialgps drives it exactly as it drives a real one. You see the receiver woken (its
    commands acknowledged), fixes as they arrive, then the receiver put back to sleep.

    options:
      --speed X          play the drive X times as fast as recorded (default 5)
      --fixes N          stop after N position fixes (default 15)
      --recording FILE   another u-blox recording (default: \(defaultRecording), looked for
                         in the current directory, next to the serialgps executable
                         and in /usr/share/serialgps)
      --no-physics       play the recording as it is, without the receiver's physics (its
                         hot start, the error that shrinks after it, the charge drawn)

    Exit status: 0 when the demo ran to its end (or was stopped with Ctrl-C), 1 when the
    virtual receiver did not behave, 2 when the recording cannot be found or read.

    """

  static func parse(_ arguments: [String]) -> Parsed {
    var options = DemoOptions()
    return ArgumentReader.parse(arguments) { argument, reader throws(UsageMessage) in
      switch argument {
      case "--speed":
        options.speed = try reader.number(
          in: Double.leastNonzeroMagnitude...1000, "--speed needs a factor above 0, such as 5")
      case "--fixes":
        options.fixes = try reader.number(in: 1...Int.max, "--fixes needs a number above 0")
      case "--recording":
        options.recording = try reader.value("--recording needs a file")
      case "--no-physics":
        options.physics = false
      default:
        if isOption(argument) { throw .unknownOption(argument) }
        throw UsageMessage("unknown argument '\(argument)'")
      }
    } then: {
      options
    }
  }
}

/// One run of the demo.
struct DemoSession {
  let options: DemoOptions
  /// How long anything in the demo may take before it counts as broken: generous, for a
  /// loaded machine.
  let patience: Duration = .seconds(30)
  func run() async -> Int32 {
    guard let path = options.recording ?? Self.findRecording() else {
      Output.error.line(
        "serialgps demo: cannot find \(DemoOptions.defaultRecording). Run the demo from the "
          + "serialgps repository (make run does), or give a recording with --recording FILE.")
      return 2
    }
    let recording: Recording
    do {
      recording = try Recording.load(path: path)
    } catch {
      Output.error.line("serialgps demo: \(error)")
      return 2
    }
    // The receiver the recording came from (the default one is a u-blox M8's), identified
    // from what it says, as the driver would.
    let profile = ReceiverProfile.inferred(from: recording)
    let family = profile.family
    guard family.hasCommands else {
      Output.error.line(
        "serialgps demo: \(path) does not say which chipset recorded it, so the demo has no "
          + "commands to show; use a recording of a u-blox, MediaTek or other commandable "
          + "receiver, such as \(DemoOptions.defaultRecording)")
      return 2
    }
    // Asleep, as serialgps leaves a receiver that nobody listens to.
    let simulator: ReceiverSimulator
    do {
      simulator = try ReceiverSimulator(
        recording: recording,
        configuration: .init(
          profile: profile, pace: .recorded(speed: options.speed), loops: true,
          initialPowerState: .backup, receivedLimit: 256,
          // The data sheet's timings at the demo's speed: a hot start, the error shrinking.
          physics: options.physics
            ? profile.figures.map { PhysicsConfiguration(figures: $0, timeScale: options.speed) }
            : nil))
    } catch {
      Output.error.line("serialgps demo: \(error)")
      return 2
    }
    defer { simulator.stop() }

    let out = Output.standard
    let speed = ReplayProgress.describe(.recorded(speed: options.speed))
    out.line(
      """
      ┌─ serialgps demo ── no receiver needed; this is a DEMO, not a real receiver ─┐
        A recorded drive (\(path), \(recording.bursts.count) epochs) is replayed
        \(speed) on a virtual \(profile) receiver at \(simulator.devicePath),
        and serialgps drives it exactly as it drives a real one: the serial port,
        the gated receiver, the u-blox commands, the fixes as they arrive.
      └──────────────────────────────────────────────────────────────────────────────┘
      """)
    out.line("[demo] The virtual receiver is asleep (u-blox backup), as serialgps leaves a")
    out.line("       receiver nobody listens to. Subscribing powers it on:")
    out.line("       (In plain words: backup is the receiver's deepest sleep, keeping only its")
    out.line("       clock and the ephemeris, the satellites' orbits, so that it fixes again in")
    out.line("       seconds; acc is a fix's estimated error in metres; charge is what the")
    out.line("       receiver drew from its supply, in milliamp-hours.)")
    out.flush()

    var receiverOptions = GPSReceiver.Options()
    receiverOptions.chipset = .family(family)
    receiverOptions.linger = .zero
    let receiver = GPSReceiver(
      connector: SerialConnector(path: simulator.devicePath, baud: .fixed(.b115200)),
      options: receiverOptions)

    // What the receiver is sent, told as it arrives, and before any event printed after it:
    // an acknowledgement comes before the fix that followed it.
    let told = Locked(0)
    @Sendable func tellCommands() {
      let inputs = told.withLock { told -> [ReceivedInput] in
        let total = simulator.receivedForgotten + simulator.received.count
        defer { told = total }
        return total > told ? Array(simulator.received.suffix(total - told)) : []
      }
      for input in inputs {
        out.line("  → receiver got " + CommandNames.describe(input, family: family))
      }
      if !inputs.isEmpty { out.flush() }
    }
    let commandLog = DriverExecutor.task {
      while !Task.isCancelled {
        tellCommands()
        try? await SystemClock().sleep(for: .milliseconds(10))
      }
    }

    let interruption = StopSignals()
    let events = receiver.subscribe()
    interruption.onStop { _ in events.cancel() }
    let watchdog = DriverExecutor.task {
      try await SystemClock().sleep(for: patience)
      events.cancel()
    }
    var positions = 0
    var epochs = 0
    var lastStatus: ReceiverStatus?
    for await event in events {
      tellCommands()
      switch event {
      case .status(let status):
        guard status != lastStatus else { continue }
        lastStatus = status
        out.line("  status: \(status.description(in: .commandLine))")
      case .fix(let update):
        epochs += 1
        if update.fix.mode != .noFix { positions += 1 }
        let number = String(epochs)
        let label = String(repeating: " ", count: max(0, 3 - number.count)) + number
        out.line("  fix \(label)  " + FixLine.describe(update.fix))
      case .satellites:
        continue
      }
      out.flush()
      if positions >= options.fixes { break }
    }
    watchdog.cancel()
    let stoppedByUser = interruption.isRequested
    events.cancel()

    if positions < options.fixes && !stoppedByUser {
      out.flush()
      Output.error.line(
        "serialgps demo: the virtual receiver gave \(positions) fixes in \(patience), not "
          + "\(options.fixes); the machine may be overloaded. Try again, or run "
          + "`make test` to see what fails.")
    }
    out.line(
      stoppedByUser
        ? "[demo] Stopped (Ctrl-C). Unsubscribing powers the receiver off:"
        : "[demo] \(positions) fixes. The last subscriber leaving powers the receiver off:")
    out.flush()

    let asleep = await simulator.waitForPowerState(.backup, timeout: patience)
    await receiver.shutdown()
    try? await SystemClock().sleep(for: .milliseconds(50))  // the last command's line
    commandLog.cancel()
    _ = await commandLog.value
    if !asleep {
      Output.error.line(
        "serialgps demo: the virtual receiver was not put to sleep (it is \(simulator.powerState));"
          + " this is a bug worth reporting.")
      return 1
    }
    out.line("  powered off: the receiver was put to backup and the port closed")
    if let energy = simulator.energy, let physics = simulator.physics {
      out.line("  physics: \(physics.configuration)")
      out.line("  starts: " + simulator.starts.map(\.description).joined(separator: "; "))
      out.line("  charge drawn: \(energy)")
    }
    out.line("[demo] The virtual receiver is in backup again: silent, drawing almost nothing.")
    out.line("       Demo over. With a receiver attached, `make run` watches it instead")
    out.line("       (serialgps watch DEVICE); `serialgps list` shows what is attached.")
    out.line(Self.installAdvice(executable: Self.executablePath()))
    out.flush()
    return positions >= options.fixes || stoppedByUser ? 0 : 1
  }

  /// Where this serialgps is, and how to install it, for the demo's last lines.
  static func installAdvice(executable: String?) -> String {
    guard let executable else {
      return
        "       Install serialgps with `sudo make install`, or as a Debian package: `make deb`."
    }
    if executable.hasPrefix("/usr/bin/") || executable.hasPrefix("/usr/local/bin/") {
      return "       serialgps is installed: \(executable) (`man serialgps`)."
    }
    return "       This serialgps is \(executable).\n"
      + "       Install it with `sudo make install` (the program, man page, udev rules and\n"
      + "       systemd units under /usr/local), or make the Debian package with `make deb`."
  }

  /// The path of the running executable (`/proc/self/exe`), `nil` if it cannot be read.
  static func executablePath() -> String? {
    var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
    let count = readlink("/proc/self/exe", &buffer, buffer.count - 1)
    guard count > 0 else { return nil }
    return String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
  }

  /// The bundled recording: in the current directory, next to the executable
  /// (`.build/release/serialgps` is three levels below the repository), or in
  /// `share/serialgps` beside the executable's `bin` (`/usr/share/serialgps` from the Debian
  /// package).
  static func findRecording() -> String? {
    var candidates = [DemoOptions.defaultRecording]
    var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
    let length = readlink("/proc/self/exe", &buffer, buffer.count - 1)
    if length > 0 {
      var directory = String(
        decoding: buffer[..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
      for _ in 0..<5 {
        guard let slash = directory.lastIndex(of: "/") else { break }
        directory = String(directory[..<slash])
        candidates.append(directory + "/" + DemoOptions.defaultRecording)
        candidates.append(directory + "/share/serialgps/ublox-m8-drive.nmea")
      }
    }
    return candidates.first { access($0, R_OK) == 0 }
  }
}
