/// How long to wait before trying again after consecutive failures: `initial`, doubled per
/// attempt, at most `maximum`. The one backoff of the package: the power policy's reopening of
/// a lost device and the MQTT session's reconnecting both use it.
///
/// ```swift
/// let backoff = Backoff(initial: .milliseconds(500), maximum: .seconds(30))
/// backoff.delay(attempt: 3)  // 2 s
/// ```
package struct Backoff: Sendable, Hashable {
  /// The delay before the first retry.
  package var initial: Duration
  /// The longest delay.
  package var maximum: Duration

  package init(initial: Duration, maximum: Duration) {
    self.initial = initial
    self.maximum = maximum
  }

  /// The delay after `attempt` consecutive failures (1: the first).
  package func delay(attempt: Int) -> Duration {
    var delay = initial
    for _ in 1..<max(1, attempt) {
      delay = delay * 2
      if delay >= maximum { return maximum }
    }
    return min(delay, maximum)
  }

  /// ``delay(attempt:)`` drawn at random from its upper half, to the millisecond (at least
  /// 1 ms): many clients that lost the same server at once (a broker restart) then come back
  /// spread over half the delay instead of all in the same instant, and none sooner than half.
  package func delay(attempt: Int, jitteredBy random: inout some RandomNumberGenerator)
    -> Duration
  {
    let full = delay(attempt: attempt)
    let milliseconds = max(
      1, full.components.seconds * 1000 + full.components.attoseconds / 1_000_000_000_000_000)
    let lowest = max(1, milliseconds / 2)
    return .milliseconds(Int64.random(in: lowest...milliseconds, using: &random))
  }
}
