import Foundation
import NMEA
import TimeService

// Helpers shared by the time service's tests.

/// The repository's `fixtures/` directory.
let fixturesDirectory: String = {
  var url = URL(fileURLWithPath: #filePath)
  for _ in 0..<3 { url.deleteLastPathComponent() }
  return url.appendingPathComponent("fixtures").path
}()

/// A sentence on the wire: `$body*HH\r\n`.
func wire(_ body: String) -> [UInt8] {
  let sum = NMEAChecksum.compute(body.utf8)
  let hex = String(sum, radix: 16, uppercase: true)
  return Array(("$" + body + "*" + (hex.count < 2 ? "0" : "") + hex + "\r\n").utf8)
}

/// Seconds and milliseconds as a POSIX time.
func posix(_ seconds: Int64, ms milliseconds: Int64 = 0) -> PosixTime {
  PosixTime(seconds: seconds, nanoseconds: milliseconds * 1_000_000)
}

/// 2026-12-02 00:00:00 UTC, after the release date, as POSIX seconds.
let december2: Int64 = 1_796_169_600

/// An epoch's evidence at `seconds` after `december2` (a valid fix with RMC's date unless
/// told otherwise).
func epochTime(
  _ seconds: Int64, ms milliseconds: UInt32 = 0, fix: EpochTime.FixValidity = .valid,
  date: UTCDate? = UTCDate(year: 2026, month: 12, day: 2), source: EpochTime.DateSource? = .rmc
) -> EpochTime {
  let time = UTCTime(
    hour: UInt8(seconds / 3600), minute: UInt8(seconds / 60 % 60), second: UInt8(seconds % 60),
    nanoseconds: milliseconds * 1_000_000)
  return EpochTime(time: time, date: date, dateSource: date == nil ? nil : source, fix: fix)
}

/// Runs `body` on a new thread and returns what it returned (or throws what it threw).
func onThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
  try await withCheckedThrowingContinuation { continuation in
    let thread = Thread { continuation.resume(with: Result { try body() }) }
    thread.stackSize = 1 << 20
    thread.start()
  }
}
