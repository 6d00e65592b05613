import Testing

@testable import SerialGPS

/// The one backoff of the package, as the power policy and the MQTT session use it.
@Suite struct BackoffTests {
  let backoff = Backoff(initial: .milliseconds(500), maximum: .seconds(4))

  @Test func doublesPerAttemptAndIsCapped() {
    #expect(
      (1...6).map { backoff.delay(attempt: $0) } == [
        .milliseconds(500), .seconds(1), .seconds(2), .seconds(4), .seconds(4), .seconds(4),
      ])
    // Attempt 0 (no failure counted yet) waits as the first.
    #expect(backoff.delay(attempt: 0) == .milliseconds(500))
  }

  /// A generator whose every value makes `random(in:)` draw the lowest of its range (1: the
  /// high word of 1 × the range's size is 0, and the low word, the size, is not rejected).
  struct Lowest: RandomNumberGenerator {
    mutating func next() -> UInt64 { 1 }
  }

  @Test func jitterStaysInTheUpperHalf() {
    var random = SystemRandomNumberGenerator()
    for attempt in 1...8 {
      let full = backoff.delay(attempt: attempt)
      for _ in 0..<200 {
        let drawn = backoff.delay(attempt: attempt, jitteredBy: &random)
        #expect(drawn >= full / 2 && drawn <= full, "\(drawn) for \(full)")
      }
    }
    // The smallest draw is half the delay: with the generator's lowest value.
    var lowest = Lowest()
    #expect(backoff.delay(attempt: 1, jitteredBy: &lowest) == .milliseconds(250))
    // Never zero, however small the delay.
    var tiny = Lowest()
    #expect(
      Backoff(initial: .microseconds(10), maximum: .seconds(1)).delay(
        attempt: 1, jitteredBy: &tiny) == .milliseconds(1))
  }
}
