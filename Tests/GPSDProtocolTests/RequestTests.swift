import Foundation
import Testing

@testable import GPSDProtocol

@Suite("gpsd requests")
struct RequestTests {
  func commands(_ text: String, maximumLength: Int = 1024) -> [GPSDCommand] {
    var reader = GPSDRequestReader(maximumLength: maximumLength)
    return reader.read(Array(text.utf8))
  }

  func message(_ command: GPSDCommand?) -> String? {
    if case .invalid(let message)? = command { return message }
    return nil
  }

  @Test func whatTheRealClientsSend() {
    // gpspipe, cgps and gpxlogger (libgps) end with ";\n"; the Python module sends no ';'.
    #expect(
      commands("?WATCH={\"enable\":true,\"json\":true};\n")
        == [.watch(WatchRequest(enable: true, json: true))])
    #expect(
      commands("?WATCH={\"enable\":true,\"json\":true}\n?POLL;\n")
        == [.watch(WatchRequest(enable: true, json: true)), .poll])
    #expect(
      commands("?WATCH={\"enable\":true,\"raw\":2};\n") == [
        .watch(WatchRequest(enable: true, raw: 2))
      ])
    #expect(
      commands("?WATCH={\"enable\":true,\"nmea\":true,\"device\":\"/dev/ttyACM0\"}\n")
        == [.watch(WatchRequest(enable: true, nmea: true, device: "/dev/ttyACM0"))])
  }

  @Test func severalCommandsOnALineAndBareNames() {
    #expect(
      commands("?VERSION;?DEVICES;?WATCH;?POLL;?DEVICE;") == [
        .version, .devices, .watch(nil), .poll, .device(nil),
      ])
    // gpsd wants the ';'; a line end is accepted as well.
    #expect(commands("?POLL\r\n?VERSION\n") == [.poll, .version])
    #expect(commands(" \r\n;;?VERSION;") == [.version])
  }

  @Test func commandsArriveInPieces() {
    var reader = GPSDRequestReader()
    let text = Array("?WATCH={\"enable\":true,\"json\":true};\n?POLL;\n".utf8)
    var got: [GPSDCommand] = []
    for byte in text { got += reader.read([byte]) }
    #expect(got == [.watch(WatchRequest(enable: true, json: true)), .poll])
    #expect(reader.bufferedCount == 0)
    // Without any line end: each command completes at its ';' or closing brace.
    var bare = GPSDRequestReader()
    #expect(bare.read(Array("?WATCH={\"enable\":tr".utf8)) == [])
    #expect(bare.read(Array("ue}".utf8)) == [.watch(WatchRequest(enable: true))])
    #expect(bare.read(Array("?VERS".utf8)) == [])
    #expect(bare.read(Array("ION;".utf8)) == [.version])
  }

  @Test func unknownCommandsAreQuotedInTheError() {
    let got = commands("?FOO;\n?VERSION;\n")
    #expect(got.count == 2)
    #expect(message(got.first) == "Unrecognized request '?FOO;'")
    #expect(got.last == .version)
    // gpsd is case-sensitive, and ?POLL takes no argument.
    #expect(message(commands("?watch;\n").first) == "Unrecognized request '?watch;'")
    #expect(message(commands("?POLL={}\n").first) == "Unrecognized request '?POLL={}'")
    // A line that is not a request is ignored, as gpsd ignores it.
    #expect(commands("hello\nw+\n?VERSION;\n") == [.version])
  }

  @Test func malformedArgumentsSayWhy() {
    #expect(message(commands("?WATCH=xyz\n").first)?.hasPrefix("Invalid WATCH: ") == true)
    #expect(
      message(commands("?WATCH=[1]\n").first)
        == "Invalid WATCH: non-whitespace when expecting object start")
    #expect(
      message(commands("?WATCH={\"enable\":\"yes\"}\n").first)?.contains("saw quoted value") == true
    )
    #expect(
      message(commands("?WATCH={\"enable\":tru}\n").first)?.hasPrefix("Invalid WATCH:") == true)
    #expect(message(commands("?WATCH={\"enable\":true\n").first)?.contains("not closed") == true)
    #expect(
      message(commands("?WATCH={\"class\":\"POLL\"}\n").first)
        == "Invalid WATCH: check attribute not matched")
    #expect(
      message(commands("?WATCH={\"device\":5}\n").first)?.contains("expecting string") == true)
    #expect(message(commands("?WATCH={\"a\" 1}\n").first)?.hasPrefix("Invalid WATCH:") == true)
    // The connection goes on: what follows the bad command is read.
    let after = commands("?WATCH={\"json\":nope}\n?VERSION;\n")
    #expect(after.count == 2)
    #expect(after.last == .version)
  }

  @Test func argumentsAsGpsdReadsThem() {
    // Unknown attributes ignored, whatever their type; raw's integer part; escapes decoded.
    #expect(
      commands("?WATCH={\"future\":{\"x\":[1,2]},\"raw\":2.5,\"device\":\"/dev/gps\\u0030\"};")
        == [.watch(WatchRequest(raw: 2, device: "/dev/gps0"))])
    #expect(
      commands("?DEVICE={\"path\":\"/dev/ttyACM0\"};") == [
        .device(DeviceRequest(path: "/dev/ttyACM0"))
      ])
    #expect(
      commands("?DEVICE={\"path\":\"/dev/ttyACM0\",\"bps\":4800};")
        == [.device(DeviceRequest(path: "/dev/ttyACM0", changesSettings: true))])
  }

  @Test func overlongRequestsAreBoundedAndAnswered() {
    var reader = GPSDRequestReader(maximumLength: 64)
    let long = "?WATCH={\"device\":\"" + String(repeating: "x", count: 200)
    let first = reader.read(Array(long.utf8))
    #expect(first.count == 1)
    #expect(message(first.first)?.hasPrefix("Request too long") == true)
    #expect(reader.bufferedCount == 0)
    // The rest of that line is dropped as it arrives; the next line is read.
    #expect(reader.read(Array((String(repeating: "y", count: 500) + "\"}\n").utf8)) == [])
    #expect(reader.read(Array("?VERSION;\n".utf8)) == [.version])
    // A line over the limit is refused even when it arrives whole.
    var whole = GPSDRequestReader(maximumLength: 64)
    let over = whole.read(
      Array(("?WATCH={\"device\":\"" + String(repeating: "x", count: 100) + "\"}\n?POLL;\n").utf8))
    #expect(over.count == 2)
    #expect(message(over.first)?.hasPrefix("Request too long") == true)
    #expect(over.last == .poll)
    // Garbage without any line end never grows the buffer past the limit.
    var flood = GPSDRequestReader(maximumLength: 64)
    for _ in 0..<100 { _ = flood.read(Array(repeating: UInt8(ascii: "a"), count: 1000)) }
    #expect(flood.bufferedCount <= 64)
    var noise = GPSDRequestReader(maximumLength: 64)
    for _ in 0..<100 { _ = noise.read(Array(repeating: UInt8(ascii: "?"), count: 1000)) }
    #expect(noise.bufferedCount <= 64)
  }

  @Test func deeplyNestedArgumentsAreRefusedNotRecursed() {
    let deep = "?WATCH=" + String(repeating: "[", count: 10_000) + "\n"
    let got = commands(deep, maximumLength: 20_000)
    #expect(message(got.first)?.contains("nesting") == true)
  }

  @Test func policyFollowsGpsdRules() {
    var policy = WatchPolicy()
    policy.apply(WatchRequest(json: true, device: "/dev/a"))
    #expect(policy.enable && policy.json && policy.device == "/dev/a")  // enable defaults true
    policy.apply(WatchRequest(enable: false))
    #expect(!policy.enable && policy.json && policy.device == nil)  // json kept, device reset
    #expect(!policy.wantsReports)
    policy.apply(WatchRequest(nmea: true, scaled: true))
    #expect(policy.enable && policy.nmea && policy.json && policy.scaled)
    policy.apply(WatchRequest(raw: 2))
    #expect(!policy.scaled && policy.wantsVerbatim && policy.wantsSentences)
  }

  @Test func jsonReaderDecodesWhatItAccepts() {
    let text = Array(
      #"{"s":"a\"b\\c\u00e9\ud83d\ude00","n":-1.5e2,"t":true,"f":false,"z":null,"a":[]} tail"#.utf8)
    guard case .value(let value, let end) = JSONReader.read(text) else {
      Issue.record("not read")
      return
    }
    #expect(String(decoding: text[end...], as: UTF8.self) == " tail")
    #expect(value.member("s") == .string("a\"b\\c\u{E9}\u{1F600}"))
    #expect(value.member("n") == .number(-150))
    #expect(value.member("t") == .bool(true))
    #expect(value.member("z") == .null)
    #expect(value.member("a") == .array([]))
    #expect(JSONReader.read(Array(#"{"s":"abc"#.utf8)) == .incomplete)
    #expect(JSONReader.read(Array(#"{"n":12"#.utf8)) == .incomplete)
    if case .invalid = JSONReader.read(Array("{\"s\":\"a\u{1}\"}".utf8)) {
    } else {
      Issue.record("a raw control character in a string was accepted")
    }
  }
}
