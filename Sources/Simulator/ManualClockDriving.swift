import POSIX
import SerialGPS

// Driving a ManualClock in a test of an app: virtual time advanced only once the receiver's
// reader has read what came due, so that a step never outruns a reader that is behind.

extension ManualClock {
  /// Advances the clock a `step` at a time, up to `limit` of virtual time, until `condition`
  /// holds; `true` when it did. Each step waits until the receiver has read every byte
  /// `replay` has given it (``ReplayConnector/waitUntilRead(timeout:)``), then a moment of
  /// real time so that the driver's threads arm the timers they arm after an event: one jump
  /// made before such a timer exists would pass it by, and the timer would wait for a time
  /// that never comes.
  ///
  /// ```swift
  /// let clock = ManualClock()
  /// let replay = try ReplayConnector(recordingAt: path, profile: .generic, clock: clock)
  /// let receiver = GPSReceiver(connector: replay, clock: clock)
  /// let log = …  // what the app under test saw
  /// let arrived = await clock.advance(upTo: .seconds(30), reading: replay) { log.fixes >= 5 }
  /// ```
  ///
  /// - Parameters:
  ///   - step: virtual time per step; 100 ms by default (a receiver's epochs are 1 s apart).
  ///   - limit: the virtual time after which it gives up.
  ///   - replay: the connector the receiver reads, whose bytes must be read before each step.
  ///   - realTimeLimit: the real time after which it gives up, against a hang.
  public func advance(
    by step: Duration = .milliseconds(100), upTo limit: Duration, reading replay: ReplayConnector?,
    realTimeLimit: Duration = .seconds(600), until condition: () -> Bool
  ) async -> Bool {
    var advanced = Duration.zero
    let deadline = ContinuousClock.now + realTimeLimit
    while true {
      try? await Task.sleep(for: .milliseconds(5))
      if condition() { return true }
      guard advanced < limit, ContinuousClock.now < deadline else { return false }
      if let replay { await replay.waitUntilRead() }
      advance(by: step)
      advanced += step
    }
  }
}

extension ReplayConnector {
  /// Waits, at most `timeout` of real time, until the receiver's reader has read every byte
  /// this replay has given it (``hasUnreadBytes``): a step of a ``ManualClock`` taken while
  /// a reader starved of CPU is behind would end a listening window before the bytes in it
  /// were read (a receiver that talked would look silent).
  public func waitUntilRead(timeout: Duration = .seconds(10)) async {
    let deadline = ContinuousClock.now + timeout
    while hasUnreadBytes, ContinuousClock.now < deadline {
      try? await Task.sleep(for: .milliseconds(1))
    }
  }
}
