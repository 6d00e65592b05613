import NMEA
import Testing
import TimeService

@Suite("Back-dating bytes to their arrival")
struct ArrivalTests {
  @Test func posixTimeArithmeticIsExact() {
    let t = PosixTime(seconds: 10, nanoseconds: 999_999_999)
    #expect(t + .nanoseconds(1) == PosixTime(seconds: 11))
    #expect(PosixTime(seconds: 11) - .nanoseconds(1) == t)
    #expect(
      PosixTime(seconds: 5, nanoseconds: -1) == PosixTime(seconds: 4, nanoseconds: 999_999_999))
    #expect(
      PosixTime(seconds: 5, nanoseconds: 2_500_000_000)
        == PosixTime(seconds: 7, nanoseconds: 500_000_000))
    #expect(
      PosixTime(seconds: 3) - PosixTime(seconds: 2, nanoseconds: 750_000_000) == .milliseconds(250))
    #expect(
      PosixTime(seconds: 2) - PosixTime(seconds: 3, nanoseconds: 1) == .nanoseconds(-1_000_000_001))
    #expect(
      PosixTime(seconds: 7, nanoseconds: 1_234_567).truncatedToMicroseconds
        == PosixTime(seconds: 7, nanoseconds: 1_234_000))
    #expect(PosixTime(seconds: 1_796_169_600, nanoseconds: 5).description == "1796169600.000000005")
  }

  @Test func posixTimeOfAReceiverTimestamp() {
    let noon = UTCTimestamp(
      date: UTCDate(year: 2026, month: 12, day: 2),
      time: UTCTime(hour: 12, minute: 0, second: 1, nanoseconds: 200_000_000))
    #expect(PosixTime(noon) == PosixTime(seconds: 1_796_169_600 + 43_201, nanoseconds: 200_000_000))
    let leap = UTCTimestamp(
      date: UTCDate(year: 2016, month: 12, day: 31), time: UTCTime(hour: 23, minute: 59, second: 60)
    )
    #expect(PosixTime(leap) == nil)
  }

  /// Byte i of a read of N bytes arrived (N − 1 − i) × 10 bits / baud before the read
  /// returned; without a line rate, at the read's time.
  @Test(arguments: [
    // (index, count, baud, nanoseconds before the read)
    (0, 10, 9600, 9_375_000),  // 9 bytes × 10 bits / 9600
    (9, 10, 9600, 0),  // the last byte: the read's own time
    (0, 1, 9600, 0),
    (0, 10, 115_200, 781_250),  // 90 bits / 115200
    (3, 100, 4800, 200_000_000),  // 96 bytes × 10 / 4800 = 0.2 s
    (0, 4096, 921_600, 44_433_594),  // 40950 bits / 921600 = 44.4335937… ms, rounded
  ])
  func backdatingRule(index: Int, count: Int, baud: Int, before: Int64) {
    let read = PosixTime(seconds: 1_000, nanoseconds: 500_000_000)
    let arrived = LineTiming.arrival(
      ofByteAt: index, inReadOf: count, returnedAt: read, timing: .uart(baud: baud))
    #expect(read - arrived == .nanoseconds(before))
    #expect(
      LineTiming.arrival(ofByteAt: index, inReadOf: count, returnedAt: read, timing: .unpaced)
        == read)
  }

  @Test func timelineDatesAnyRecentByte() {
    var timeline = ReadTimeline(timing: .uart(baud: 9600), capacity: 4)
    #expect(timeline.arrival(ofByteAt: 0) == nil)
    timeline.recordRead(count: 8, at: posix(100, ms: 10))  // bytes 0…7
    timeline.recordRead(count: 0, at: posix(100, ms: 11))  // nothing read: not a read
    timeline.recordRead(count: 16, at: posix(100, ms: 30))  // bytes 8…23
    #expect(timeline.streamOffset == 24)
    // Byte 8 is the first of the second read: 15 character times (15.625 ms) before it.
    let first = timeline.arrival(ofByteAt: 8)
    #expect(first?.time == posix(100, ms: 30) - .nanoseconds(15_625_000))
    #expect(first?.backdating == .nanoseconds(15_625_000))
    #expect(timeline.arrival(ofByteAt: 23)?.time == posix(100, ms: 30))
    #expect(timeline.arrival(ofByteAt: 7)?.time == posix(100, ms: 10))
    #expect(timeline.arrival(ofByteAt: 0)?.time == posix(100, ms: 10) - .nanoseconds(7_291_667))
    #expect(timeline.arrival(ofByteAt: 24) == nil)  // not read yet
    // Four reads are kept: after three more, the first is forgotten.
    for read in 0..<3 { timeline.recordRead(count: 1, at: posix(101, ms: Int64(read))) }
    #expect(timeline.arrival(ofByteAt: 7) == nil)
    #expect(timeline.arrival(ofByteAt: 8) != nil)
    #expect(timeline.arrival(ofByteAt: 26)?.time == posix(101, ms: 2))
    timeline.reset()
    #expect(timeline.streamOffset == 0)
    #expect(timeline.arrival(ofByteAt: 0) == nil)
  }

  /// The outlier of the 9600 baud benchmark: the read that carries an epoch's first bytes
  /// wakes a reader that slept for most of a second and can return milliseconds after its last
  /// byte arrived; the next read of the same burst returns at once, and a byte cannot have
  /// arrived later than that read's bytes less their character times.
  @Test func aLateReadIsDatedByTheReadsAfterIt() {
    let characters = { (n: Int64) in Duration.nanoseconds((n * 10 * 1_000_000_000 + 4800) / 9600) }
    let start = posix(200, ms: 100)  // the first byte's stop bit
    var timeline = ReadTimeline(timing: .uart(baud: 9600))
    // Bytes 0…15: their last arrived at start + 15 characters, the read returned 2.6 ms later.
    timeline.recordRead(count: 16, at: start + characters(15) + .microseconds(2600))
    #expect(timeline.arrival(ofByteAt: 0)?.time == start + .microseconds(2600))
    // Bytes 16…31, read as the 32nd byte arrived: byte 0 came 31 characters before it.
    timeline.recordRead(count: 16, at: start + characters(31))
    // A later read that came late too (bytes 32…47, 4 ms after) bounds nothing earlier.
    timeline.recordRead(count: 16, at: start + characters(47) + .milliseconds(4))
    let first = timeline.arrival(ofByteAt: 0)
    #expect(first?.time == start)
    // Dated back from the read that carried it by 15 characters and the 2.6 ms.
    #expect(first?.backdating == characters(15) + .microseconds(2600))
    // Every byte of the late read gains the same: byte 15 arrived 15 characters after byte 0.
    #expect(timeline.arrival(ofByteAt: 15)?.time == start + characters(15))
    // The prompt read's first byte is dated by that read, as before.
    #expect(timeline.arrival(ofByteAt: 16)?.time == start + characters(16))
  }

  /// A later read can only bound a byte when the line has a rate: without one (a pty, native
  /// USB) bytes may come together in any burst, and each is dated by its own read.
  @Test func unpacedBytesAreDatedByTheirOwnRead() {
    var timeline = ReadTimeline(timing: .unpaced)
    timeline.recordRead(count: 16, at: posix(300, ms: 5))
    timeline.recordRead(count: 16, at: posix(300, ms: 1))  // the clock stepped back
    #expect(timeline.arrival(ofByteAt: 0)?.time == posix(300, ms: 5))
    #expect(timeline.arrival(ofByteAt: 0)?.backdating == .zero)
  }
}
