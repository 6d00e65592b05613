// The two reports gpsd sends about time to watchers that asked for `"pps":true` in ?WATCH:
// TOFF for each serial time sample and PPS for each pulse. Fields and their order are gpsd
// 3.22's (`{"class":"TOFF","device":…,"real_sec":…,"real_nsec":…,"clock_sec":…,
// "clock_nsec":…}` and PPS with `precision` and, when known, `qErr`). gpsd 3.22 writes a
// space after the comma before TOFF's `real_nsec`; JSON ignores it, and so does this writer.

/// A time as gpsd's reports split it: seconds since the Unix epoch and nanoseconds.
public struct GPSDTime: Sendable, Hashable {
  /// Seconds since 1970-01-01 UTC (POSIX time).
  public var seconds: Int64
  /// 0 ..< 1 000 000 000.
  public var nanoseconds: Int

  public init(seconds: Int64, nanoseconds: Int) {
    self.seconds = seconds
    self.nanoseconds = nanoseconds
  }
}

extension JSONWriter {
  /// A `TOFF` report: the receiver's time of an epoch (`real`) and the system time at which
  /// the epoch's first byte arrived (`clock`), raw, with no offset applied.
  public mutating func timeOffset(device: String, real: GPSDTime, clock: GPSDTime) {
    report("TOFF") { json in
      json.member("device", device)
      json.times(real: real, clock: clock)
    }
  }

  /// A `PPS` report: the UTC second a pulse started (`real`), the system time of its edge
  /// (`clock`), the precision as log₂ seconds (gpsd: −20, or −10 over USB) and, when the
  /// receiver reported one, the pulse's quantization error in picoseconds (`qErr`).
  public mutating func pulse(
    device: String, real: GPSDTime, clock: GPSDTime, precision: Int,
    quantizationError: Int? = nil
  ) {
    report("PPS") { json in
      json.member("device", device)
      json.times(real: real, clock: clock)
      json.member("precision", precision)
      json.member("qErr", quantizationError)
    }
  }

  private mutating func times(real: GPSDTime, clock: GPSDTime) {
    key("real_sec")
    integer(real.seconds)
    key("real_nsec")
    integer(real.nanoseconds)
    key("clock_sec")
    integer(clock.seconds)
    key("clock_nsec")
    integer(clock.nanoseconds)
  }
}
