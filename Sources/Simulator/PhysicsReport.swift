import Glibc
import NMEA
import POSIX
import Replay

extension ReceiverPhysics {
  /// The physics at `now` as one JSON object, for benchmarks and scripts that read a
  /// simulator from outside (`serialgps replay --energy-file`): the figures and scale, the
  /// charge and time per state, every start and every aiding message.
  ///
  /// ```json
  /// {"figures":"MediaTek MT3339 (GlobalTop PA6H)","time_scale":1,"ephemeris_validity_s":14400,
  ///  "backup_power":true,"clock_s":12.5,"charge_mAh":0.0803,
  ///  "states":{"acquisition":{"s":1.05,"mA":25,"mAh":0.0073},…},
  ///  "starts":[{"kind":"hot","began_s":0,"fix_due_s":1,"ttff_s":1.05}],
  ///  "aiding":[{"kind":"time","at_s":3.2,"utc_then":"…","given":"…","phase":"duringAcquisition","usable":true}]}
  /// ```
  public func jsonSummary(at now: Duration) -> String {
    let report = energy(at: now)
    var fields: [String] = []
    fields.append("\"figures\":\(Self.quoted(figures.name))")
    fields.append("\"time_scale\":\(Self.number(configuration.timeScale))")
    fields.append("\"ephemeris_validity_s\":\(Self.number(figures.ephemerisValidity.seconds))")
    fields.append("\"backup_power\":\(backupPowered)")
    fields.append("\"clock_s\":\(Self.number(now.seconds))")
    fields.append("\"charge_mAh\":\(Self.number(report.milliampHours, decimals: 6))")
    fields.append("\"on_s\":\(Self.number(report.onTime.seconds))")
    var states: [String] = []
    for state in EnergyState.allCases where report.timeInState[state] != nil {
      states.append(
        "\"\(state)\":{\"s\":\(Self.number(report.time(in: state).seconds)),"
          + "\"mA\":\(Self.number(report.currents.milliamperes(in: state), decimals: 4)),"
          + "\"mAh\":\(Self.number(report.milliampHours(in: state), decimals: 6))}")
    }
    fields.append("\"states\":{" + states.joined(separator: ",") + "}")
    let startList = starts.map { start -> String in
      var parts = [
        "\"kind\":\"\(start.kind)\"", "\"began_s\":\(Self.number(start.began.seconds))",
        "\"fix_due_s\":\(Self.number(start.fixDue.seconds))",
      ]
      if let ttff = start.timeToFirstFix { parts.append("\"ttff_s\":\(Self.number(ttff.seconds))") }
      if let abandoned = start.abandoned {
        parts.append("\"stopped_s\":\(Self.number(abandoned.seconds))")
      }
      return "{" + parts.joined(separator: ",") + "}"
    }
    fields.append("\"starts\":[" + startList.joined(separator: ",") + "]")
    let aidingList = aiding.map { aid -> String in
      var parts: [String] = []
      switch aid.content {
      case .time(let given, _):
        parts.append("\"kind\":\"time\"")
        parts.append("\"given\":\"\(given.iso8601(fractionDigits: 3))\"")
      case .position(let latitude, let longitude, let altitude, _):
        parts.append("\"kind\":\"position\"")
        parts.append("\"lat\":\(Self.number(latitude, decimals: 7))")
        parts.append("\"lon\":\(Self.number(longitude, decimals: 7))")
        if let altitude { parts.append("\"alt\":\(Self.number(altitude, decimals: 2))") }
      }
      parts.append("\"at_s\":\(Self.number(aid.at.seconds))")
      parts.append("\"utc_then\":\"\(aid.utcThen.iso8601(fractionDigits: 3))\"")
      parts.append("\"phase\":\"\(aid.phase.rawValue)\"")
      parts.append("\"usable\":\(aid.usable)")
      return "{" + parts.joined(separator: ",") + "}"
    }
    fields.append("\"aiding\":[" + aidingList.joined(separator: ",") + "]")
    return "{" + fields.joined(separator: ",") + "}"
  }

  static func number(_ value: Double, decimals: Int = 3) -> String {
    var text = formatFixed(value, decimals: decimals)
    if text.contains(".") {
      while text.hasSuffix("0") { text.removeLast() }
      if text.hasSuffix(".") { text.removeLast() }
    }
    return text
  }

  static func quoted(_ text: String) -> String {
    var out = "\""
    for scalar in text.unicodeScalars {
      switch scalar {
      case "\"": out += "\\\""
      case "\\": out += "\\\\"
      default:
        if scalar.value < 0x20 { out += "?" } else { out.unicodeScalars.append(scalar) }
      }
    }
    return out + "\""
  }
}

/// Writes a file whole under a temporary name and renames it into place, so a reader never
/// sees half of it: the physics summary that `serialgps replay --energy-file` keeps current.
public struct ReplacedFile: Sendable {
  public let path: String

  public init(path: String) { self.path = path }

  /// Replaces the file's contents with `text` and a line feed.
  ///
  /// - Throws: ``RecordingError``-style text naming the file and what to do.
  public func replace(with text: String) throws(SimulatorError) {
    let partial = "\(path).\(getpid()).partial"
    do {
      try FileDescriptor.withOpened(partial, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC) {
        descriptor throws(Errno) in try descriptor.writeAll(Array((text + "\n").utf8))
      }
    } catch {
      unlink(partial)
      throw SimulatorError(
        description: "Could not write \(path): \(error). Check that its directory exists and "
          + "is writable.")
    }
    guard rename(partial, path) == 0 else {
      let reason = Errno.current
      unlink(partial)
      throw SimulatorError(description: "Could not replace \(path): \(reason).")
    }
  }
}

/// A line of a simulator's control channel (`serialgps replay --control FIFO`): what a test
/// harness or benchmark outside the process does to the virtual receiver, as a test in the
/// process does with ``SimulatedReceiver``'s methods.
///
/// `backup on|off`, `pin force-on|extint high|low|pulse`, `power-cycle`.
public enum SimulatorControl: Sendable, Hashable, CustomStringConvertible {
  case backupPower(Bool)
  case pin(ReceiverPin, PinAction)
  case powerCycle

  public enum PinAction: String, Sendable, Hashable {
    case high, low, pulse
  }

  /// Parses one line; `nil` for a line that is no control (it says what is wrong).
  public static func parse(_ line: String) -> Result<SimulatorControl, SimulatorError> {
    let words = line.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\r" }).map(
      String.init)
    let usage = "say 'backup on|off', 'pin force-on|extint high|low|pulse' or 'power-cycle'"
    switch words.first {
    case "backup" where words.count == 2 && (words[1] == "on" || words[1] == "off"):
      return .success(.backupPower(words[1] == "on"))
    case "pin" where words.count == 3:
      guard let pin = ReceiverPin(rawValue: words[1]), let action = PinAction(rawValue: words[2])
      else { return .failure(SimulatorError(description: "'\(line)': \(usage)")) }
      return .success(.pin(pin, action))
    case "power-cycle" where words.count == 1:
      return .success(.powerCycle)
    default:
      return .failure(SimulatorError(description: "'\(line)': \(usage)"))
    }
  }

  /// Does it to `receiver`.
  public func apply(to receiver: SimulatedReceiver) {
    switch self {
    case .backupPower(let on): receiver.setBackupPower(on)
    case .pin(let pin, .high): receiver.drivePin(pin, high: true)
    case .pin(let pin, .low): receiver.drivePin(pin, high: false)
    case .pin(let pin, .pulse): receiver.pulsePin(pin)
    case .powerCycle: receiver.powerCycle()
    }
  }

  public var description: String {
    switch self {
    case .backupPower(let on): return on ? "backup power connected" : "backup power removed"
    case .pin(let pin, let action): return "pin \(pin) \(action.rawValue)"
    case .powerCycle: return "main power cut and restored"
    }
  }
}

extension SimulatedReceiver {
  /// The physics summary now (``ReceiverPhysics/jsonSummary(at:)``); `nil` without physics.
  public var physicsSummary: String? {
    var text: String?
    chip.changingModel { model, now in text = model.physics?.jsonSummary(at: now) }
    return text
  }
}
