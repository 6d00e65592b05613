import Foundation
import Testing

@testable import GPSDProtocol
@testable import NMEA

@Suite("gpsd server reports")
struct ServerReportTests {
  func text(_ write: (inout JSONWriter) -> Void) -> String {
    var writer = JSONWriter()
    write(&writer)
    return writer.text
  }

  /// The WATCH reply gpsd 3.22 sent to `?WATCH={"enable":true,"json":true}`, byte for byte.
  @Test func watchAsGpsdWritesIt() {
    var policy = WatchPolicy()
    policy.apply(WatchRequest(enable: true, json: true))
    #expect(
      text { $0.watch(policy) }
        == #"{"class":"WATCH","enable":true,"json":true,"nmea":false,"raw":0,"scaled":false,"timing":false,"split24":false,"pps":false}"#
    )
    policy.apply(WatchRequest(nmea: true, device: "/dev/ttyACM0"))
    #expect(text { $0.watch(policy) }.hasSuffix(#""pps":false,"device":"/dev/ttyACM0"}"#))
  }

  @Test func deviceWhileActiveAndWhileOff() {
    let activated = UTCTimestamp(secondsSinceUnixEpoch: 1_796_025_478, nanoseconds: 669_000_000)
    #expect(
      text {
        $0.device(
          GPSDDevice(
            path: "/dev/pts/1", driver: "NMEA0183", activated: activated, flags: GPSDDevice.seenGPS,
            bitsPerSecond: 38400, cycle: 1))
      }
        == #"{"class":"DEVICE","path":"/dev/pts/1","driver":"NMEA0183","activated":"2026-11-30T07:57:58.669Z","flags":1,"native":0,"bps":38400,"parity":"N","stopbits":1,"cycle":1.00}"#
    )
    // Off: only what does not depend on the device being open.
    #expect(
      text { $0.device(GPSDDevice(path: "/dev/ttyACM0", driver: "NMEA0183", flags: 1)) }
        == #"{"class":"DEVICE","path":"/dev/ttyACM0","driver":"NMEA0183"}"#)
    #expect(
      text { $0.deviceDeactivated(path: "/dev/ttyACM0") }
        == #"{"class":"DEVICE","path":"/dev/ttyACM0","activated":0}"#)
  }

  @Test func devicesAndPollAreValidJSON() throws {
    let devices = text {
      $0.devices([GPSDDevice(path: "/dev/a\"b"), GPSDDevice(path: "/dev/c", driver: "u-blox")])
    }
    let object = try JSONSerialization.jsonObject(with: Data(devices.utf8)) as! [String: Any]
    let list = object["devices"] as! [[String: Any]]
    #expect(list.map { $0["path"] as! String } == ["/dev/a\"b", "/dev/c"])
    #expect(list.allSatisfy { $0["class"] as? String == "DEVICE" })

    var tpv = JSONWriter()
    var fix = Fix()
    fix.mode = .noFix
    tpv.tpv(fix, device: "/dev/c")
    let time = UTCTimestamp(secondsSinceUnixEpoch: 0)
    let poll = text { $0.poll(time: time, active: 1, tpv: [tpv.bytes], sky: []) }
    #expect(
      poll
        == #"{"class":"POLL","time":"1970-01-01T00:00:00.000Z","active":1,"tpv":[{"class":"TPV","device":"/dev/c","mode":1}],"gst":[],"sky":[]}"#
    )
    let empty = text { $0.poll(time: time, active: 0, tpv: [], sky: []) }
    #expect(empty.hasSuffix(#""active":0,"tpv":[],"gst":[],"sky":[]}"#))
  }

  @Test func wallClockTimestamps() {
    let cases: [(Int64, UInt32, String)] = [
      (0, 0, "1970-01-01T00:00:00.000Z"),
      (951_782_400, 0, "2000-02-29T00:00:00.000Z"),
      (1_796_025_478, 669_999_999, "2026-11-30T07:57:58.669Z"),
      (-1, 0, "1969-12-31T23:59:59.000Z"),
    ]
    for (seconds, nanoseconds, expected) in cases {
      let time = UTCTimestamp(secondsSinceUnixEpoch: seconds, nanoseconds: nanoseconds)
      #expect(text { $0.timestamp(time) } == "\"" + expected + "\"")
      #expect(time.secondsSinceUnixEpoch == seconds)
    }
  }
}
