/// The charge a simulated receiver drew from its supply: the time spent in each
/// ``EnergyState`` times that state's current. Pure: times are the model's, given by the
/// caller.
///
/// Charge is kept as exact times per state and computed from them, so a test that scripts a
/// sequence of states can compute the same sum: Σ current(state) × time(state).
public struct EnergyMeter: Sendable, Hashable {
  /// Milliamperes per state.
  public let currents: ReceiverFigures.Currents
  /// The state now, and since when.
  public private(set) var state: EnergyState
  public private(set) var since: Duration
  /// Time spent in each state before ``since`` (the current state's time runs on).
  public private(set) var closedTime: [EnergyState: Duration] = [:]
  /// Transitions into each state.
  public private(set) var entries: [EnergyState: Int] = [:]

  public init(currents: ReceiverFigures.Currents, state: EnergyState, at start: Duration) {
    self.currents = currents
    self.state = state
    self.since = start
    entries[state] = 1
  }

  /// Starts the meter again in `state` at its start time: for a meter made before its
  /// owner knew the first state.
  mutating func restart(in state: EnergyState) {
    guard closedTime.isEmpty else { return enter(state, at: since) }
    self.state = state
    entries = [state: 1]
  }

  /// The receiver is in `new` from `now` on. Times earlier than the last change count as
  /// that change's time (the meter never runs backwards).
  public mutating func enter(_ new: EnergyState, at now: Duration) {
    guard new != state else { return }
    let now = max(now, since)
    closedTime[state, default: .zero] += now - since
    state = new
    since = now
    entries[new, default: 0] += 1
  }

  /// The meter read at `now`.
  public func report(at now: Duration) -> EnergyReport {
    var time = closedTime
    time[state, default: .zero] += max(.zero, now - since)
    return EnergyReport(timeInState: time, entries: entries, currents: currents)
  }
}

/// A reading of an ``EnergyMeter``.
public struct EnergyReport: Sendable, Hashable, CustomStringConvertible {
  /// Time spent in each state (states never entered are absent).
  public let timeInState: [EnergyState: Duration]
  /// Transitions into each state (the first state counts once).
  public let entries: [EnergyState: Int]
  public let currents: ReceiverFigures.Currents

  /// Time in `state`.
  public func time(in state: EnergyState) -> Duration { timeInState[state] ?? .zero }

  /// Charge drawn in `state`, milliampere-hours.
  public func milliampHours(in state: EnergyState) -> Double {
    currents.milliamperes(in: state) * time(in: state).seconds / 3600
  }

  /// Charge drawn in all states, milliampere-hours.
  public var milliampHours: Double {
    EnergyState.allCases.reduce(0) { $0 + milliampHours(in: $1) }
  }

  /// The time the meter covers.
  public var total: Duration { timeInState.values.reduce(.zero, +) }

  /// Time with the receiver powered and navigating or searching (acquisition and tracking).
  public var onTime: Duration {
    time(in: .acquisition) + time(in: .tracking) + time(in: .powerSaveTracking)
  }

  public var description: String {
    var parts: [String] = []
    for state in EnergyState.allCases where timeInState[state] != nil {
      parts.append("\(state) \(Self.seconds(time(in: state))) s")
    }
    return "\(Self.fixed(milliampHours, 4)) mAh over \(Self.seconds(total)) s ("
      + parts.joined(separator: ", ") + ")"
  }

  static func seconds(_ duration: Duration) -> String { fixed(duration.seconds, 1) }

  /// `value` with `decimals` digits after the point, without Foundation.
  static func fixed(_ value: Double, _ decimals: Int) -> String {
    formatFixed(value, decimals: decimals)
  }
}

extension Duration {
  /// The duration in seconds, as a floating-point number.
  var seconds: Double {
    let (seconds, attoseconds) = components
    return Double(seconds) + Double(attoseconds) / 1e18
  }
}

/// `value` with exactly `decimals` digits after the point, rounded half away from zero
/// (`formatFixed(2.125, decimals: 2)` is `2.13`); no Foundation.
func formatFixed(_ value: Double, decimals: Int) -> String {
  guard value.isFinite else { return "0" }
  var scale: Double = 1
  for _ in 0..<decimals { scale *= 10 }
  let negative = value < 0
  let scaled = (abs(value) * scale).rounded(.toNearestOrAwayFromZero)
  guard scaled < 9e18 else { return String(value) }
  let units = UInt64(scaled)
  let power = UInt64(scale)
  var text = String(units / power)
  if decimals > 0 {
    var fraction = String(units % power)
    while fraction.count < decimals { fraction = "0" + fraction }
    text += "." + fraction
  }
  return (negative && units != 0 ? "-" : "") + text
}
