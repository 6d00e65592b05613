/// How deeply the driver may put a receiver to sleep.
public enum SleepDepth: String, Sendable, Hashable, CaseIterable {
  /// The deepest sleep the chipset offers that the driver can certainly leave again over the
  /// connection it has (docs/chipsets.md, "Sleep depth"). The default.
  case deepest
  /// Always the chipset's quick-wake standby: the fastest wake, at a higher sleeping current.
  case standby
}

/// What the driver knows as it puts a receiver to sleep, from which the power-off is chosen
/// (``ReceiverCommandSet/sleep(for:)``): how long it expects the receiver to sleep, and what
/// it can wake the receiver with.
public struct SleepContext: Sendable, Hashable {
  /// How long the driver expects the receiver to sleep: until the next scheduled wake when
  /// only scheduled requests remain; `nil` when nobody knows (demand that may come back at
  /// any moment: a subscriber that left, a shutdown), which is taken as possibly short.
  public var expected: Duration?
  /// Whether the user declared a wake line wired to the receiver (MediaTek FORCE_ON) that
  /// the driver drives. Without it no sleep that only a pin ends is ever chosen.
  public var wakePin: Bool
  /// How deep the user allows.
  public var depth: SleepDepth

  public init(expected: Duration?, wakePin: Bool = false, depth: SleepDepth = .deepest) {
    self.expected = expected
    self.wakePin = wakePin
    self.depth = depth
  }
}

/// The sleep chosen for a power-off: the steps that enter it, the state they reach, and
/// what ends it.
public struct SleepChoice: Sendable, Hashable {
  /// The state the steps leave the receiver in.
  public var state: ReceiverPowerState
  /// What to write, in order.
  public var steps: [CommandStep]
  /// Whether only the wake line (FORCE_ON) ends this sleep: the driver releases the line
  /// before the steps and drives it at the next wake.
  public var needsWakePin: Bool

  public init(state: ReceiverPowerState, steps: [CommandStep], needsWakePin: Bool = false) {
    self.state = state
    self.steps = steps
    self.needsWakePin = needsWakePin
  }
}

extension ReceiverCommandSet {
  /// The family's one power-off, whatever the sleep: ``powerOffSteps`` into
  /// ``PowerProfile/offState``.
  public func sleep(for context: SleepContext) -> SleepChoice {
    SleepChoice(state: powerProfile.offState, steps: powerOffSteps)
  }

  /// The steps of ``sleep(for:)``.
  public func powerOffSteps(for context: SleepContext) -> [CommandStep] {
    sleep(for: context).steps
  }
}
