import Chipsets
import Glibc
import NMEA
import POSIX
import Replay
import Simulator

// `serialgps replay FILE [--speed X | --fast] [--chipset …] [--loop] [--link PATH]`: a
// recording presented as a virtual receiver on a pty. The path to open goes to standard
// output; what the receiver is told and does goes to standard error, with a progress line on
// a terminal. See docs/replay.md.
let replayCommand = Command(
  name: "replay",
  usage:
    "replay FILE [--speed X | --fast] [--chipset \(ChipsetRegistry.allNames)] [--loop] [--link PATH] "
    + "[--physics [--start hot|warm|cold] [--no-backup] [--time-scale X] "
    + "[--ephemeris-validity S] [--hot-start S] [--first-error M] [--converged-error M] "
    + "[--convergence S] [--seed N] [--energy-file PATH] [--control FIFO]]",
  summary: "Present a recording as a virtual receiver on a pty (prints the device to open).",
  arguments: ReplayOptions.self
) { options in
  await ReplaySession(options: options).run()
}

/// What `serialgps replay` was asked for.
struct ReplayOptions: Equatable, CommandArguments {
  var path: String
  var pace: Pace = .realTime
  /// `nil`: the chip the recording came from.
  var chipset: ChipsetFamily?
  var loops = false
  var link: String?
  /// The physics: `nil` plays the recording as it is.
  var physics: PhysicsOptions?

  /// `--physics` and the options that go with it.
  struct PhysicsOptions: Equatable {
    /// `nil`: the pace's speed (1 with `--fast`).
    var timeScale: Double?
    /// Seconds of the receiver's own time; `nil`: the data sheet's 4 h.
    var ephemerisValidity: Double?
    var start = StartKind.hot
    /// The receiver's hot start and error convergence; each `nil`: the data sheet's.
    var hotStart: Double?
    var firstFixError: Double?
    var convergedError: Double?
    var convergence: Double?
    var backupPower = true
    var seed: UInt64 = 1
    var energyFile: String?
    var control: String?
  }

  typealias Parsed = ParsedArguments<ReplayOptions>

  static let help = """
    usage: serialgps replay FILE [options]

    Presents a recording (a fixture, a `serialgps record` file, an NMEA log) as a GPS receiver
    on a pseudo-terminal and prints the device's path on standard output: open it with any
    program that reads a serial GPS (serialgps watch, gpsd, your own). The virtual receiver
    behaves like the chipset: it acknowledges the commands that chipset acknowledges, falls
    silent in standby and resumes when woken. What it is sent, and what it does, is told on
    standard error, with a progress line when standard error is a terminal.

    options:
      --speed X        play X times as fast as recorded (default 1)
      --fast           play each epoch as soon as the reader has taken the previous one
      --chipset NAME   \(ChipsetRegistry.namesInProse()) (no commands); default: the chipset the
                       recording came from (its banner or binary frames, else its header)
      --loop           start again after the last epoch; otherwise replay ends there
      --link PATH      make the device appear at PATH (a symbolic link, kept for the whole
                       replay); default: gps0 in a new directory under /tmp

    physics (u-blox and MediaTek; docs/simulator.md):
      --physics        model the receiver's physics instead of playing the recording as it
                       is: time to first fix by kind of start, epochs without a fix while
                       acquiring, a position error that shrinks after the fix (GST), ephemeris
                       collected by tracking and expiring, data-sheet currents and the charge;
                       epoch times are the current UTC
      --start KIND     what the receiver kept before: hot (default), warm or cold
      --no-backup      no backup battery: a power cut loses everything (cold start)
      --time-scale X   run the receiver's own timings X times faster than the data sheet
                       (default: the --speed factor)
      --ephemeris-validity S
                       ephemeris valid for S seconds of the receiver's time (data sheet: 14400)
      --hot-start S    a hot start takes S seconds to the first fix (data sheet: 1 or 2)
      --first-error M  the first fix of a start is M metres off (default 25)
      --converged-error M
                       the error converges on M metres (data sheet: the chip's accuracy)
      --convergence S  time constant of that convergence after a hot start (default 3)
      --seed N         seed of the position errors (default 1)
      --energy-file PATH
                       keep PATH rewritten (whole, every 100 ms and at the end) with a JSON
                       summary: charge, time per state, starts and their times to first fix,
                       aiding received
      --control FIFO   make a FIFO at FIFO and take lines from it: 'backup on|off',
                       'pin force-on|extint high|low|pulse', 'power-cycle'

    Ctrl-C ends the replay; the device disappears, as an unplugged receiver does.
    Exit status: 0 at the end of the recording or on Ctrl-C, 2 when the recording cannot be
    read, the pty cannot be made, or the arguments are wrong.

    """

  static func parse(_ arguments: [String]) -> Parsed {
    var options = ReplayOptions(path: "")
    var path: String?
    var speed: Double?
    var fast = false
    var physics = PhysicsOptions()
    var physicsOn = false
    var physicsOptionGiven: String?
    var receiver = ReceiverArguments.replay
    return ArgumentReader.parse(arguments) { argument, reader throws(UsageMessage) in
      if try receiver.take(argument, from: &reader) { return }
      if argument.hasPrefix("--"), argument != "--physics",
        [
          "--start", "--no-backup", "--time-scale", "--ephemeris-validity", "--seed",
          "--energy-file", "--control", "--hot-start", "--first-error", "--converged-error",
          "--convergence",
        ].contains(argument)
      {
        physicsOptionGiven = argument
      }
      switch argument {
      case "--physics":
        physicsOn = true
      case "--start":
        let value = try reader.value("--start needs hot, warm or cold")
        guard let kind = StartKind(rawValue: value), kind != .aided else {
          throw UsageMessage("--start needs hot, warm or cold, not '\(value)'")
        }
        physics.start = kind
      case "--no-backup":
        physics.backupPower = false
      case "--time-scale":
        physics.timeScale = try reader.number(
          in: 0.001...100_000, "--time-scale needs a factor above 0, such as 60")
      case "--ephemeris-validity":
        physics.ephemerisValidity = try reader.number(
          in: 1...1_000_000, "--ephemeris-validity needs seconds, such as 300")
      case "--hot-start":
        physics.hotStart = try reader.number(
          in: 0.001...3600, "--hot-start needs seconds above 0, such as 2")
      case "--first-error":
        physics.firstFixError = try reader.number(
          in: 0.01...100_000, "--first-error needs metres above 0, such as 25")
      case "--converged-error":
        physics.convergedError = try reader.number(
          in: 0.01...100_000, "--converged-error needs metres above 0, such as 3")
      case "--convergence":
        physics.convergence = try reader.number(
          in: 0.001...3600, "--convergence needs seconds above 0, such as 2")
      case "--seed":
        physics.seed = UInt64(
          try reader.number(in: 0...Int.max, "--seed needs a whole number, such as 7") as Int)
      case "--energy-file":
        physics.energyFile = try reader.value("--energy-file needs a path")
      case "--control":
        physics.control = try reader.value("--control needs a path for the FIFO")
      case "--speed":
        speed = try reader.number(
          in: Double.leastNonzeroMagnitude...10_000,
          "--speed needs a factor above 0, such as 5 or 0.5")
      case "--fast":
        fast = true
      case "--loop":
        options.loops = true
      case "--link":
        options.link = try reader.value("--link needs a path")
      default:
        try takeOperand(argument, into: &path, "replays one recording")
      }
    } then: { () throws(UsageMessage) in
      guard let path else {
        throw UsageMessage("give the recording to replay, such as fixtures/ublox-m8-drive.nmea")
      }
      if fast && speed != nil { throw UsageMessage("--speed and --fast exclude each other") }
      if let given = physicsOptionGiven, !physicsOn {
        throw UsageMessage("\(given) belongs to --physics; add --physics")
      }
      if physicsOn { options.physics = physics }
      if let first = physics.firstFixError, let converged = physics.convergedError,
        converged >= first
      {
        throw UsageMessage(
          "--converged-error (\(converged) m) must be below --first-error (\(first) m): the "
            + "error shrinks after the first fix")
      }
      options.path = path
      options.chipset = receiver.family
      if fast { options.pace = .asFastAsPossible }
      if let speed { options.pace = .recorded(speed: speed) }
      return options
    }
  }
}

/// One run of `serialgps replay`.
struct ReplaySession {
  let options: ReplayOptions

  func run() async -> Int32 {
    let recording: Recording
    do {
      recording = try Recording.load(path: options.path)
    } catch {
      Output.error.line("serialgps replay: \(error)")
      return 2
    }
    guard !recording.bursts.isEmpty else {
      Output.error.line(
        "serialgps replay: \(options.path) holds no receiver data after its header; give a "
          + "recording such as fixtures/ublox-m8-drive.nmea")
      return 2
    }
    let profile = ReceiverProfile.chosen(options.chipset, for: recording)
    var physics: PhysicsConfiguration?
    if let chosen = options.physics {
      guard var figures = profile.figures else {
        Output.error.line(
          "serialgps replay: --physics models u-blox and MediaTek receivers; this is a "
            + "\(profile) one. Give --chipset ublox or --chipset mtk, or leave out --physics.")
        return 2
      }
      if let validity = chosen.ephemerisValidity { figures.ephemerisValidity = .seconds(validity) }
      guard
        let adjusted = figures.adjusted(
          hotStart: chosen.hotStart.map { .seconds($0) }, firstFixError: chosen.firstFixError,
          convergedError: chosen.convergedError,
          hotConvergence: chosen.convergence.map { .seconds($0) })
      else {
        Output.error.line(
          "serialgps replay: the error cannot converge on \(chosen.convergedError ?? figures.convergedError) m "
            + "from a first fix \(chosen.firstFixError ?? figures.firstFixError) m off; give a "
            + "--converged-error below --first-error.")
        return 2
      }
      figures = adjusted
      physics = PhysicsConfiguration(
        figures: figures, timeScale: chosen.timeScale ?? Self.speed(of: options.pace),
        seed: chosen.seed, backupPower: chosen.backupPower,
        initialKnowledge: Self.knowledge(chosen.start),
        // A receiver's epochs carry the time it is now, which aiding is checked against.
        utcAtStart: Self.wallClockUTC())
    }
    let simulator: ReceiverSimulator
    do {
      simulator = try ReceiverSimulator(
        recording: recording,
        configuration: .init(
          profile: profile, pace: options.pace, loops: options.loops, devicePath: options.link,
          // A replay can run for days; what it was sent only feeds the messages below.
          receivedLimit: 64, physics: physics))
    } catch {
      Output.error.line("serialgps replay: \(error)")
      return 2
    }
    defer { simulator.stop() }
    var control: ControlChannel?
    if let path = options.physics?.control {
      do {
        control = try ControlChannel(path: path)
      } catch {
        Output.error.line("serialgps replay: \(error)")
        return 2
      }
    }
    defer { control?.close() }
    let energyFile = options.physics?.energyFile.map(ReplacedFile.init(path:))
    func writeEnergy() -> Bool {
      guard let energyFile, let summary = simulator.physicsSummary else { return true }
      do {
        try energyFile.replace(with: summary)
        return true
      } catch {
        Output.error.line("serialgps replay: \(error)")
        return false
      }
    }
    guard writeEnergy() else { return 2 }

    // The path first and alone on standard output, for scripts: dev=$(serialgps replay … | head -1)
    Output.standard.line(simulator.devicePath)
    Output.standard.flush()
    let baud = recording.baud.map { ", recorded at \($0) baud" } ?? ""
    Output.error.line(
      "serialgps replay: \(recording.name) (\(recording.bursts.count) epochs\(baud)) as a "
        + "virtual \(profile) receiver, \(ReplayProgress.describe(options.pace))"
        + (options.loops ? ", looping" : "") + ". Ctrl-C stops.")
    if let physics {
      Output.error.line(
        "serialgps replay: physics: \(physics); starting \(options.physics!.start)"
          + (options.physics!.energyFile.map { "; charge in \($0)" } ?? ""))
    }

    let interruption = StopSignals()
    // With physics the receiver plays the recording's fix epochs and makes the others itself.
    let played = physics != nil ? recording.fixEpochs : recording
    var progress = ReplayProgress(
      total: played.bursts.count, family: profile.family,
      terminal: isatty(2) == 1)
    func finish() {
      _ = writeEnergy()
      if let energy = simulator.energy {
        Output.error.line("serialgps replay: charge \(energy)")
        let starts = simulator.starts.map(\.description).joined(separator: "; ")
        if !starts.isEmpty { Output.error.line("serialgps replay: starts: \(starts)") }
      }
    }
    while !interruption.isRequested {
      progress.report(simulator)
      for line in control?.lines() ?? [] {
        progress.clear()
        switch SimulatorControl.parse(line) {
        case .success(let command):
          command.apply(to: simulator)
          Output.error.line("serialgps replay: control: \(command)")
        case .failure(let error):
          Output.error.line("serialgps replay: control: \(error)")
        }
      }
      _ = writeEnergy()
      if !options.loops, simulator.isPlaybackFinished {
        // A moment for the last epoch to be written and read before the device disappears.
        await interruption.sleep(for: .seconds(1))
        progress.report(simulator)
        progress.clear()
        Output.error.line(
          "serialgps replay: end of the recording (\(Self.sent(simulator.counters))).")
        finish()
        return 0
      }
      await interruption.sleep(for: .milliseconds(100))
    }
    progress.clear()
    Output.error.line(
      "serialgps replay: stopped after \(Self.sent(simulator.counters)) of "
        + "\(played.bursts.count); the device is gone.")
    finish()
    return 0
  }

  /// The factor a pace plays at (1 for a fixed interval or as fast as read).
  static func speed(of pace: Pace) -> Double {
    if case .recorded(let speed) = pace { return speed }
    return 1
  }

  static func knowledge(_ start: StartKind) -> PhysicsConfiguration.InitialKnowledge {
    switch start {
    case .hot: return .ephemeris(age: .zero)
    case .warm: return .almanac
    case .cold, .aided: return .nothing
    }
  }

  /// UTC now, from the system's real-time clock.
  static func wallClockUTC() -> UTCTimestamp {
    let (seconds, nanoseconds) = SystemWallClock().now().secondsAndNanoseconds
    return UTCTimestamp(secondsSinceUnixEpoch: seconds, nanoseconds: UInt32(nanoseconds))
  }

  /// Epochs written, and those lost because nobody read them.
  static func sent(_ counters: SimulatorCounters) -> String {
    var text = "\(counters.burstsSent) epochs"
    if counters.burstsDropped > 0 {
      text += ", \(counters.burstsDropped) lost while nobody read the device"
    }
    return text
  }
}

/// A FIFO whose lines control the virtual receiver (`--control`), read without blocking.
final class ControlChannel {
  let path: String
  private let descriptor: CInt
  private var pending: [UInt8] = []

  init(path: String) throws(UsageMessage) {
    self.path = path
    var status = stat()
    if stat(path, &status) == 0 {
      guard status.st_mode & S_IFMT == S_IFIFO else {
        throw UsageMessage("--control \(path) exists and is not a FIFO; give a new path")
      }
    } else if mkfifo(path, 0o600) != 0 {
      throw UsageMessage(
        "cannot make the FIFO \(path) for --control: \(String(cString: strerror(errno)))")
    }
    // Non-blocking: opening the read side needs no writer, and a read finds what is there.
    descriptor = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
    guard descriptor >= 0 else {
      throw UsageMessage(
        "cannot open the FIFO \(path) for --control: \(String(cString: strerror(errno)))")
    }
  }

  /// The complete lines written since the last call.
  func lines() -> [String] {
    var buffer = [UInt8](repeating: 0, count: 4096)
    while true {
      let count = read(descriptor, &buffer, buffer.count)
      guard count > 0 else { break }
      pending += buffer[..<count]
    }
    var lines: [String] = []
    while let end = pending.firstIndex(of: 0x0A) {
      let line = String(decoding: pending[..<end], as: UTF8.self)
      pending.removeSubrange(...end)
      if !line.allSatisfy({ $0 == " " || $0 == "\r" }) { lines.append(line) }
    }
    return lines
  }

  func close() {
    Glibc.close(descriptor)
    unlink(path)
  }
}

/// What the replay tells: each command the virtual receiver got, and on a terminal a progress
/// line updated in place.
struct ReplayProgress {
  let total: Int
  let family: ChipsetFamily
  let terminal: Bool
  /// Inputs already told (the simulator forgets old ones: `receivedForgotten` counts them).
  var told = 0
  var lineShown = false
  var lastLine = ""
  var lastPower: SimulatedPowerState?

  init(total: Int, family: ChipsetFamily, terminal: Bool) {
    self.total = total
    self.family = family
    self.terminal = terminal
  }

  mutating func report(_ simulator: ReceiverSimulator) {
    let received = simulator.received
    let forgotten = simulator.receivedForgotten
    let newInputs = received.dropFirst(max(0, told - forgotten))
    if !newInputs.isEmpty {
      clear()
      for input in newInputs {
        Output.error.line(
          "serialgps replay: ← " + CommandNames.describe(input, family: family))
      }
      told = forgotten + received.count
    }
    let power = simulator.powerState
    if let lastPower, power != lastPower {
      clear()
      Output.error.line("serialgps replay: the receiver is now \(Self.describe(power))")
    }
    lastPower = power
    guard terminal else { return }
    let counters = simulator.counters
    let loop = counters.loopsCompleted > 0 ? " (loop \(counters.loopsCompleted + 1))" : ""
    let played = counters.burstsSent + counters.burstsDropped - counters.loopsCompleted * total
    var line = "epoch \(max(0, min(played, total)))/\(total)" + loop
    line += " · receiver \(simulator.powerState)"
    if counters.burstsDropped > 0 { line += " · \(counters.burstsDropped) unread" }
    if line != lastLine || !lineShown {
      Output.error.write("\r\u{1B}[K" + line)
      lineShown = true
      lastLine = line
    }
  }

  /// Removes the progress line so that a message can take its place.
  mutating func clear() {
    guard terminal, lineShown else { return }
    Output.error.write("\r\u{1B}[K")
    lineShown = false
  }

  static func describe(_ power: SimulatedPowerState) -> String {
    switch power {
    case .running: return "running (streaming)"
    case .gnssStopped: return "in GNSS stop (silent, still answering)"
    case .backup: return "in backup (silent until a byte arrives)"
    case .standby: return "in standby (silent until a byte arrives)"
    case .hibernate: return "hibernating (silent until power-cycled)"
    case .booting: return "booting"
    case .off: return "off"
    }
  }

  static func describe(_ pace: Pace) -> String {
    switch pace {
    case .recorded(let speed) where speed == 1: return "in real time"
    case .recorded(let speed):
      let text = speed == speed.rounded() ? String(Int(speed)) : String(speed)
      return "at \(text)× speed"
    case .fixedInterval(let interval): return "one epoch every \(interval)"
    case .asFastAsPossible: return "as fast as the reader takes it"
    }
  }
}

/// Names for what a receiver was sent, for people: the driver's own summary of a known command
/// (`UBX-CFG-RST controlled GNSS stop`), else the decoded command, else the byte count.
enum CommandNames {
  static func describe(_ input: ReceivedInput, family: ChipsetFamily) -> String {
    let what: String
    if let step = knownSteps(family).first(where: { $0.bytes == input.bytes }) {
      what = step.summary
    } else if let command = input.command {
      what = command.name
    } else {
      what = "\(input.bytes.count) bytes that form no command"
    }
    return "\(what): \(outcome(input.outcome))"
  }

  static func outcome(_ outcome: InputOutcome) -> String {
    switch outcome {
    case .ignored: return "ignored"
    case .lost: return "lost (the receiver was asleep or booting)"
    case .wokeReceiver: return "woke the receiver"
    case .acknowledged: return "acknowledged"
    case .rejected: return "rejected"
    case .answered: return "answered"
    case .carriedOut: return "carried out"
    }
  }

  /// Every command the driver sends a chipset of `family`, over either interface.
  static func knownSteps(_ family: ChipsetFamily) -> [CommandStep] {
    var steps: [CommandStep] = []
    for interface in [HostInterface.uart, .usb] {
      let set = family.commandSet(interface: interface)
      steps += set.powerOnSteps + set.powerOffSteps
    }
    return steps
  }
}
