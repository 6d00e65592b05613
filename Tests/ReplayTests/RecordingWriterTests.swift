import Chipsets
import Foundation
import Glibc
import NMEA
import POSIX
import Replay
import SerialPort
import Testing

@Suite("RecordingWriter: recordings written as Recording reads them")
struct RecordingWriterTests {
  /// A path in a new temporary directory.
  func temporaryPath(_ name: String) throws -> String {
    var template = Array("/tmp/serialgps-writer-XXXXXX".utf8CString)
    let directory = try #require(mkdtemp(&template).map { String(cString: $0) })
    return directory + "/" + name
  }

  @Test("the header and every byte, read back by Recording")
  func roundTrip() throws {
    let path = try temporaryPath("drive.nmea")
    let started = UTCTimestamp(
      date: UTCDate(year: 2026, month: 3, day: 30), time: UTCTime(hour: 7, minute: 5, second: 9))
    let header = RecordingHeader(
      name: "drive #1", device: "/dev/ttyACM0", baud: .b115200, chipset: .ublox,
      started: started, recorder: "test $1")
    let body = try loadFixture("noisy-ublox").body
    let writer = try RecordingWriter(creating: path, header: header)
    for start in stride(from: 0, to: body.count, by: 1000) {
      try writer.append(body[start..<min(body.count, start + 1000)])
    }
    try writer.finish()
    try writer.finish()  // later calls do nothing
    #expect(writer.bytesWritten == header.text.utf8.count + body.count)

    let recording = try Recording.load(path: path)
    #expect(recording.body == body)
    #expect(
      recording.header.map { "\($0.key)=\($0.value)" } == [
        "Name=drive _1", "Device=/dev/ttyACM0", "Baud=115200",
        "Chipset=\(ChipsetFamily.ublox.displayName)", "Date=2026-03-30",
        "Started=2026-03-30T07:05:09Z", "Recorder=test _1",
      ])
    #expect(recording.name == "drive _1")
    #expect(recording.baud == 115_200)
    #expect(
      Recording.header(of: Array(header.text.utf8) + body).bodyStart == header.text.utf8.count)
  }

  @Test("the start time is the wall clock's, to the second")
  func startTime() {
    // 2025-11-30T12:05:11.999999999Z: the fraction is dropped, not rounded.
    let clock = FixedWallClock(unixSeconds: 1_764_504_311, nanoseconds: 999_999_999)
    #expect(
      RecordingHeader.time(on: clock)
        == UTCTimestamp(
          date: UTCDate(year: 2025, month: 11, day: 30),
          time: UTCTime(hour: 12, minute: 5, second: 11)))
  }

  @Test("header values keep to printable ASCII without $ ! #; names from file names")
  func cleaningAndNames() {
    #expect(RecordingHeader.clean("a$b!c#d\u{1}é") == "a_b_c_d__")
    #expect(RecordingHeader.defaultName(forFile: "/tmp/drive.2026.nmea") == "drive.2026")
    #expect(RecordingHeader.defaultName(forFile: ".hidden") == ".hidden")
    let header = RecordingHeader(name: "x", device: "/dev/ttyUSB0", baud: .b9600)
    #expect(!header.fields.contains { $0.key == "Chipset" })
    #expect(header.started.date.year >= 2025)  // the system clock, not a zero date
  }

  @Test("a file that cannot be created: the path, the reason, what to do")
  func cannotCreate() throws {
    let path = try temporaryPath("no/such/dir.nmea")
    do {
      _ = try RecordingWriter(creating: path)
      Issue.record("created \(path)")
    } catch {
      #expect(error.operation == .create)
      #expect(error.errno == .noSuchFileOrDirectory)
      #expect(
        error.description
          == "cannot write \(path): No such file or directory. Check the directory exists and "
          + "is writable.")
    }
  }

  @Test("a full disk: the write fails, and every later one, and finish, with the same error")
  func fullDisk() throws {
    let writer = try RecordingWriter(creating: "/dev/full")
    var first: RecordingWriteError?
    do { try writer.append([UInt8](repeating: 0x24, count: 100)) } catch { first = error }
    let failure = try #require(first)
    #expect(failure.operation == .write && failure.errno == Errno(rawValue: ENOSPC))
    #expect(failure.description.contains("Free some space"))
    #expect(writer.bytesWritten == 0)
    #expect(throws: failure) { try writer.append([0x0A]) }
    #expect(throws: failure) { try writer.finish() }
  }
}
