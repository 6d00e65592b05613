import Chipsets

/// What tests watch on a simulated receiver, on a pty (``ReceiverSimulator``) or in-process
/// (``ReplayConnector``): what the driver sent it and the power state it is in.
public protocol ObservableSimulatedReceiver: AnyObject, Sendable {
  /// Everything received so far, decoded into commands where it could be.
  var received: [ReceivedInput] { get }
  /// The simulated chip's power state now.
  var powerState: SimulatedPowerState { get }
}

extension ObservableSimulatedReceiver {
  /// Waits until `condition` holds, checking every few milliseconds of real time, at most
  /// `timeout`. Returns whether it held. For tests: never use it to measure time. (The
  /// driver's controller and reader run on their own, so what a clock advance causes happens
  /// shortly after it.)
  public func waitUntil(
    timeout: Duration = .seconds(10), _ condition: (Self) -> Bool
  ) async -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
      if condition(self) { return true }
      try? await Task.sleep(for: .milliseconds(2))
    }
    return condition(self)
  }

  /// Waits for a received command that matches, among everything received so far and from
  /// now on; the first match, or `nil` after `timeout`.
  public func waitForCommand(
    timeout: Duration = .seconds(10), matching predicate: (ReceiverCommand) -> Bool
  ) async -> ReceivedInput? {
    var match: ReceivedInput?
    _ = await waitUntil(timeout: timeout) { receiver in
      match = receiver.received.first { $0.command.map(predicate) ?? false }
      return match != nil
    }
    return match
  }

  /// Waits until the chip is in `state`; returns whether it got there within `timeout`.
  public func waitForPowerState(_ state: SimulatedPowerState, timeout: Duration = .seconds(10))
    async -> Bool
  {
    await waitUntil(timeout: timeout) { $0.powerState == state }
  }
}
