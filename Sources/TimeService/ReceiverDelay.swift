/// Figures of the receiver's delay from the start of a second to the first byte of the epoch
/// that names it.
public struct DelayStatistics: Sendable, Hashable {
  /// Delays measured.
  public var count = 0
  /// The latest.
  public var last: Duration?
  /// The smallest and the largest.
  public var minimum: Duration?
  public var maximum: Duration?
  /// Mean of all.
  public var mean: Duration?
  /// Standard deviation of all (the jitter).
  public var standardDeviation: Duration?
  /// Median of the latest ``ReceiverDelay/window`` delays: the figure to set as the offset.
  public var median: Duration?

  public init() {}
}

/// Measures the receiver's own delay: how long after the start of a second the first byte of
/// the epoch naming that second arrives.
///
/// The delay is large (tens to hundreds of milliseconds) and differs by model, baud rate and
/// the sentences enabled, and it is the main error of time from NMEA: the user sets it as the
/// offset (`--time-offset MS`, chrony's `offset`, ntpd's `time1`). It is measured against the
/// system clock (right only if something else keeps that clock right, such as NTP servers) or,
/// exactly, against PPS pulses. Fixed size; nothing is allocated per sample.
public struct ReceiverDelay: Sendable {
  /// How many of the latest delays the median is taken over.
  public static let window = 64

  private var recent = [Int64](repeating: 0, count: ReceiverDelay.window)
  private var next = 0
  private var count = 0
  private var minimum = Int64.max
  private var maximum = Int64.min
  // Welford's running mean and sum of squared differences, in nanoseconds.
  private var mean = 0.0
  private var squares = 0.0
  private var last: Int64 = 0

  public init() {}

  /// Adds one measured delay.
  public mutating func add(_ delay: Duration) {
    let nanoseconds = delay.wholeNanoseconds
    recent[next] = nanoseconds
    next = (next + 1) % Self.window
    count += 1
    last = nanoseconds
    minimum = min(minimum, nanoseconds)
    maximum = max(maximum, nanoseconds)
    let value = Double(nanoseconds)
    let difference = value - mean
    mean += difference / Double(count)
    squares += difference * (value - mean)
  }

  /// The figures so far.
  public var statistics: DelayStatistics {
    var statistics = DelayStatistics()
    guard count > 0 else { return statistics }
    statistics.count = count
    statistics.last = .nanoseconds(last)
    statistics.minimum = .nanoseconds(minimum)
    statistics.maximum = .nanoseconds(maximum)
    statistics.mean = .nanoseconds(Int64(mean.rounded()))
    statistics.standardDeviation =
      count > 1 ? .nanoseconds(Int64((squares / Double(count - 1)).squareRoot().rounded())) : nil
    let kept = min(count, Self.window)
    statistics.median = recent.withUnsafeBufferPointer { all in
      withUnsafeTemporaryAllocation(of: Int64.self, capacity: kept) { buffer in
        var sorted = buffer
        _ = sorted.initialize(from: all[0..<kept])
        sorted.sort()
        let middle =
          kept % 2 == 1 ? sorted[kept / 2] : (sorted[kept / 2 - 1] + sorted[kept / 2]) / 2
        return .nanoseconds(middle)
      }
    }
    return statistics
  }
}
