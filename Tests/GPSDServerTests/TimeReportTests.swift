import GPSDProtocol
import Testing
import TimeService

@testable import GPSDServer

/// TOFF and PPS to the watchers that asked for them (`serve --time`), as exact actions.
@Suite struct TimeReportTests {
  typealias Harness = ServerStateTests.Harness

  static let toff = DeviceTimeReport.offset(
    real: GPSDTime(seconds: 1_796_169_601, nanoseconds: 0),
    clock: GPSDTime(seconds: 1_796_169_601, nanoseconds: 152_318_004))
  static let pps = DeviceTimeReport.pulse(
    real: GPSDTime(seconds: 1_796_169_602, nanoseconds: 0),
    clock: GPSDTime(seconds: 1_796_169_601, nanoseconds: 999_998_212), precision: -20)

  static func line(_ text: String) -> [UInt8] { Array((text + "\r\n").utf8) }

  @Test("TOFF and PPS go to enabled JSON watchers with pps, of that device only")
  func onlyWatchersThatAskedGetThem() {
    var harness = Harness()
    _ = harness.add(1, "/dev/ttyAMA0")
    _ = harness.add(2, "/dev/ttyS1")
    for client in 1...6 { _ = harness.connect(client) }
    _ = harness.say(1, "?WATCH={\"enable\":true,\"json\":true,\"pps\":true};\n")
    _ = harness.say(2, "?WATCH={\"enable\":true,\"json\":true};\n")  // no pps
    _ = harness.say(3, "?WATCH={\"enable\":true,\"pps\":true};\n")  // no json
    _ = harness.say(
      4, "?WATCH={\"enable\":true,\"json\":true,\"pps\":true,\"device\":\"/dev/ttyS1\"};\n")
    _ = harness.say(5, "?WATCH={\"enable\":true,\"nmea\":true,\"pps\":true};\n")  // NMEA only
    // Client 6 only connected.

    #expect(
      harness.state.timeReport(1, Self.toff) == [
        .send(
          1,
          Self.line(
            "{\"class\":\"TOFF\",\"device\":\"/dev/ttyAMA0\",\"real_sec\":1796169601,"
              + "\"real_nsec\":0,\"clock_sec\":1796169601,\"clock_nsec\":152318004}"))
      ])
    let pulse = Self.line(
      "{\"class\":\"PPS\",\"device\":\"/dev/ttyS1\",\"real_sec\":1796169602,\"real_nsec\":0,"
        + "\"clock_sec\":1796169601,\"clock_nsec\":999998212,\"precision\":-20}")
    #expect(harness.state.timeReport(2, Self.pps) == [.send(1, pulse), .send(4, pulse)])
    // An unknown device reports nothing.
    #expect(harness.state.timeReport(9, Self.toff).isEmpty)
  }

  @Test("a new WATCH without pps stops them; disabling the watch too")
  func ppsIsResetByTheNextWatch() {
    var harness = Harness()
    _ = harness.add(1, "/dev/ttyAMA0")
    _ = harness.connect(1)
    _ = harness.connect(2)
    _ = harness.say(1, "?WATCH={\"enable\":true,\"json\":true,\"pps\":true};\n")
    _ = harness.say(2, "?WATCH={\"enable\":true,\"json\":true,\"pps\":true};\n")
    #expect(harness.state.timeReport(1, Self.toff).count == 2)
    // gpsd resets pps unless a WATCH gives it again.
    _ = harness.say(1, "?WATCH={\"enable\":true};\n")
    _ = harness.say(2, "?WATCH={\"enable\":false};\n")
    #expect(harness.state.timeReport(1, Self.toff).isEmpty)
    _ = harness.say(2, "?WATCH={\"enable\":true,\"pps\":true};\n")  // json kept from before
    #expect(
      harness.state.timeReport(1, Self.pps).map { if case .send(let id, _) = $0 { id } else { 0 } }
        == [2])
  }

  @Test("a pulse's quantisation error is PPS's qErr, in picoseconds, the edge as timestamped")
  func quantisationErrorIsReported() {
    var harness = Harness()
    _ = harness.add(1, "/dev/ttyACM0")
    _ = harness.connect(1)
    _ = harness.say(1, "?WATCH={\"enable\":true,\"json\":true,\"pps\":true};\n")
    let sample = PPSSample(
      second: PosixTime(seconds: 1_796_169_602),
      pulse: PosixTime(seconds: 1_796_169_601, nanoseconds: 999_998_212), sequence: 7,
      quantisationError: Duration(secondsComponent: 0, attosecondsComponent: -1_375_000_000))
    let report = DeviceTimeReport(.pulse(sample, precision: -20))
    #expect(
      harness.state.timeReport(1, report) == [
        .send(
          1,
          Self.line(
            #"{"class":"PPS","device":"/dev/ttyACM0","real_sec":1796169602,"real_nsec":0,"#
              + #""clock_sec":1796169601,"clock_nsec":999998212,"precision":-20,"qErr":-1375}"#))
      ])
  }
}
