import NMEA
import Testing

@testable import SerialGPS

/// How a wake is judged to have kept the receiver's backup power: by a time before its first
/// fix that agrees with UTC, else by how soon the first fix came.
@Suite struct WakeRecordTests {
  /// 2026-12-07 12:00:00.300 UTC.
  let utc = UTCTimestamp(secondsSinceUnixEpoch: 1_796_644_800, nanoseconds: 300_000_000)
  let began = DriverInstant.origin + .seconds(100)

  func at(_ seconds: Double) -> DriverInstant { began + .milliseconds(Int64(seconds * 1000)) }

  func time(_ hour: UInt8, _ minute: UInt8, _ second: UInt8) -> UTCTime {
    UTCTime(hour: hour, minute: minute, second: second)
  }

  func record(toldTheTime: Bool = false) -> WakeRecord {
    var record = WakeRecord()
    record.poweredOff(at: began - .seconds(600), commanded: true)
    record.wakeBegins(at: began)
    if toldTheTime { record.tellsTheTime() }
    return record
  }

  @Test func aTimeThatAgreesSoonAfterTheWakeShowsTheBackupKept() {
    var record = record()
    // Heard 1.5 s into the wake, read 0.2 s later with UTC 12:00:00.3: it was 12:00:00.1.
    record.timeHeard(time(12, 0, 0), at: at(1.5), utc: utc, now: at(1.7))
    #expect(record.keptBackup == true)
    // Judged: a slow first fix after it changes nothing (the ephemeris may just be old).
    record.fixArrived(at: at(30))
    #expect(record.keptBackup == true)
  }

  @Test func aTimeFarFromUTCProvesNothing() {
    var record = record()
    // A receiver that lost its clock: a sentinel counted from its boot.
    record.timeHeard(time(0, 0, 1), at: at(1), utc: utc, now: at(1))
    #expect(record.keptBackup == nil)
    // Three seconds off is not agreement either.
    record.timeHeard(time(11, 59, 57), at: at(1), utc: utc, now: at(1))
    #expect(record.keptBackup == nil)
    // The fix judges it: late, so lost.
    record.fixArrived(at: at(30))
    #expect(record.keptBackup == false)
  }

  @Test func aTimeHeardLateCouldComeFromTheSky() {
    var record = record()
    // 6 s in: a cold start may have decoded it from a satellite already.
    record.timeHeard(time(12, 0, 0), at: at(6), utc: utc, now: at(6))
    #expect(record.keptBackup == nil)
    record.fixArrived(at: at(32))
    #expect(record.keptBackup == false)
  }

  @Test func aTimeTheDriverToldItProvesNothing() {
    var record = record(toldTheTime: true)
    record.timeHeard(time(12, 0, 0), at: at(1), utc: utc, now: at(1))
    #expect(record.keptBackup == nil)
    // The next wake is judged afresh: told nothing, its time counts.
    record.poweredOff(at: at(40), commanded: true)
    #expect(record.keptBackup == false)
    record.wakeBegins(at: at(700))
    record.timeHeard(
      time(12, 11, 41), at: at(701), utc: UTCTimestamp(secondsSinceUnixEpoch: 1_796_645_501),
      now: at(701))
    #expect(record.keptBackup == true)
  }

  @Test func agreementHoldsAcrossMidnight() {
    let justAfter = UTCTimestamp(secondsSinceUnixEpoch: 1_796_688_000, nanoseconds: 500_000_000)
    #expect(WakeRecord.agrees(time(23, 59, 59), with: justAfter))
    #expect(WakeRecord.agrees(time(0, 0, 0), with: justAfter, before: .milliseconds(900)))
    #expect(!WakeRecord.agrees(time(23, 59, 57), with: justAfter))
    #expect(!WakeRecord.agrees(time(12, 0, 0), with: justAfter))
  }
}
