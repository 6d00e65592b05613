/// How fast a recording is played.
public enum Pace: Sendable, Hashable {
  /// At the recording's own epoch intervals divided by `speed` (2 plays twice as fast).
  case recorded(speed: Double)
  /// One burst every `interval`, whatever the recording's times.
  case fixedInterval(Duration)
  /// Each burst as soon as the previous one is written: the reader's speed sets the pace.
  case asFastAsPossible

  /// The recording's own pace.
  public static let realTime = Pace.recorded(speed: 1)

  /// The wait before the next burst, for a burst whose recorded interval is `interval`.
  public func scaled(_ interval: Duration) -> Duration {
    switch self {
    case .recorded(let speed):
      return speed > 0 && speed.isFinite ? interval / speed : interval
    case .fixedInterval(let fixed):
      return max(.zero, fixed)
    case .asFastAsPossible:
      return .zero
    }
  }
}

/// A position in a ``Recording`` and what comes next: the bursts in order, each with the wait
/// after it, optionally looping. A value with no clock: the caller decides when "later" is,
/// with the real clock (the pty simulator) or a virtual one.
public struct Playback: Sendable {
  public let recording: Recording
  public var pace: Pace
  /// Whether to start again from the first burst after the last.
  public var loops: Bool
  /// The index of the next burst.
  public private(set) var position = 0
  /// Times the end was reached and playback started again from the first burst.
  public private(set) var loopsCompleted = 0

  public init(recording: Recording, pace: Pace = .realTime, loops: Bool = true) {
    self.recording = recording
    self.pace = pace
    self.loops = loops
  }

  /// Whether every burst has been played and playback does not loop.
  public var isFinished: Bool {
    recording.bursts.isEmpty || (!loops && position >= recording.bursts.count)
  }

  /// The usual wait between bursts at this pace.
  public var nominalDelay: Duration { pace.scaled(recording.nominalInterval) }

  /// Whether bursts go out as fast as they are read rather than on the clock.
  package var isReadPaced: Bool { pace == .asFastAsPossible || nominalDelay == .zero }

  /// Takes the next burst and the wait until the one after it; `nil` when finished.
  public mutating func next() -> (burst: Recording.Burst, delayAfter: Duration)? {
    guard !isFinished else { return nil }
    if position >= recording.bursts.count {
      position = 0
      loopsCompleted += 1
    }
    let burst = recording.bursts[position]
    position += 1
    return (burst, pace.scaled(burst.interval))
  }
}
