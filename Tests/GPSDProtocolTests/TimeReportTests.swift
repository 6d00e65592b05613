import Foundation
import Testing

@testable import GPSDProtocol

@Suite("gpsd's TOFF and PPS reports")
struct TimeReportTests {
  func text(_ write: (inout JSONWriter) -> Void) -> String {
    var writer = JSONWriter()
    write(&writer)
    return writer.text
  }

  /// gpsd 3.22's format string for TOFF is
  /// `{"class":"TOFF","device":"%s","real_sec":%lld, "real_nsec":%ld,"clock_sec":%lld,"clock_nsec":%ld}`.
  @Test func toffAsGpsdWritesIt() throws {
    let line = text {
      $0.timeOffset(
        device: "/dev/ttyAMA0", real: GPSDTime(seconds: 1_796_169_601, nanoseconds: 0),
        clock: GPSDTime(seconds: 1_796_169_601, nanoseconds: 152_318_004))
    }
    #expect(
      line
        == #"{"class":"TOFF","device":"/dev/ttyAMA0","real_sec":1796169601,"real_nsec":0,"clock_sec":1796169601,"clock_nsec":152318004}"#
    )
    // The same object as gpsd's own line, space and all.
    let gpsd =
      #"{"class":"TOFF","device":"/dev/ttyAMA0","real_sec":1796169601, "real_nsec":0,"clock_sec":1796169601,"clock_nsec":152318004}"#
    #expect(try Self.object(line) == Self.object(gpsd))
  }

  /// gpsd 3.22: `{"class":"PPS","device":"%s","real_sec":%lld,"real_nsec":%ld,
  /// "clock_sec":%lld,"clock_nsec":%ld,"precision":%d` then `,"qErr":%ld` when known.
  @Test func ppsAsGpsdWritesIt() {
    let real = GPSDTime(seconds: 1_796_169_602, nanoseconds: 0)
    let clock = GPSDTime(seconds: 1_796_169_601, nanoseconds: 999_998_212)
    #expect(
      text { $0.pulse(device: "/dev/ttyS0", real: real, clock: clock, precision: -20) }
        == #"{"class":"PPS","device":"/dev/ttyS0","real_sec":1796169602,"real_nsec":0,"clock_sec":1796169601,"clock_nsec":999998212,"precision":-20}"#
    )
    #expect(
      text {
        $0.pulse(
          device: "/dev/ttyACM0", real: real, clock: clock, precision: -10, quantizationError: -1375
        )
      }
        == #"{"class":"PPS","device":"/dev/ttyACM0","real_sec":1796169602,"real_nsec":0,"clock_sec":1796169601,"clock_nsec":999998212,"precision":-10,"qErr":-1375}"#
    )
  }

  @Test func watchAsksForThemWithPPS() {
    // As ntpd's GPSD_JSON refclock (driver 46) asks.
    var reader = GPSDRequestReader()
    let commands = reader.read(
      Array(#"?WATCH={"device":"/dev/gps0","enable":true,"json":true,"pps":true};"#.utf8) + [10])
    #expect(
      commands == [.watch(WatchRequest(enable: true, json: true, pps: true, device: "/dev/gps0"))])
    var policy = WatchPolicy()
    policy.apply(WatchRequest(enable: true, json: true, pps: true))
    #expect(policy.pps)
    #expect(text { $0.watch(policy) }.contains(#""pps":true"#))
    // gpsd resets pps when a later ?WATCH leaves it out.
    policy.apply(WatchRequest(enable: true))
    #expect(!policy.pps)
  }

  static func object(_ line: String) throws -> NSDictionary {
    try JSONSerialization.jsonObject(with: Data(line.utf8)) as! NSDictionary
  }
}
