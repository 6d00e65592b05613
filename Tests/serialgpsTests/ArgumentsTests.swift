import Testing

@testable import serialgps

// Every command reads its arguments with ArgumentReader.parse, so the same mistake is said
// the same way whichever command it is made to.

/// Each command's parser, as the text of what it made of `arguments`.
let parsers: [String: @Sendable ([String]) -> String] = [
  "decode": { "\(DecodeCommand.parse($0))" },
  "list": { "\(ListOptions.parse($0))" },
  "watch": { "\(Watch.parse($0))" },
  "serve": { "\(ServeOptions.parse($0))" },
  "send": { "\(SendRequest.parse($0))" },
  "replay": { "\(ReplayOptions.parse($0))" },
  "record": { "\(RecordOptions.parse($0))" },
  "gpx": { "\(GPXOptions.parse($0))" },
  "demo": { "\(DemoOptions.parse($0))" },
  "follow": { "\(FollowOptions.parse($0))" },
  "locate": { "\(Locate.parse($0))" },
]

@Suite("serialgps: arguments")
struct ArgumentsTests {
  @Test(
    "an unknown option, and --help, the same in every command", arguments: parsers.keys.sorted())
  func sameEverywhere(command: String) throws {
    let parse = try #require(parsers[command])
    #expect(parse(["--frobnicate"]) == "invalid(\"unknown option \\'--frobnicate\\'\")")
    #expect(parse(["--help"]) == "help")
    #expect(parse(["-h", "--frobnicate"]) == "help", "read front to back")
  }

  @Test("one operand: a second one is refused, naming both")
  func oneOperand() {
    #expect(
      DecodeCommand.parse(["a", "b"])
        == .invalid("decodes one recording at a time, not both 'a' and 'b'"))
    #expect(
      GPXOptions.parse(["a", "b"])
        == .invalid("converts one recording at a time, not both 'a' and 'b'"))
    guard case .invalid(let watch) = Watch.parse(["a", "b"]) else {
      Issue.record("two devices accepted")
      return
    }
    #expect(watch == "watches one device at a time, not both 'a' and 'b'")
  }

  @Test("list and demo take no operands")
  func noOperands() {
    #expect(ListOptions.parse(["--json", "-a"]) == .options(ListOptions(json: true, all: true)))
    #expect(ListOptions.parse(["extra"]) == .invalid("unknown argument 'extra'"))
    #expect(DemoOptions.parse(["extra"]) == .invalid("unknown argument 'extra'"))
  }

  @Test("watch --ephemeris-refresh reaches the receiver's options")
  func watchEphemerisRefresh() throws {
    guard
      case .options(let options) = Watch.parse(["--interval", "30", "--ephemeris-refresh", "150"])
    else {
      Issue.record("refused")
      return
    }
    #expect(Watch.receiverOptions(options).ephemerisRefresh == .seconds(150))
    guard case .invalid(let message) = Watch.parse(["--ephemeris-refresh", "0"]) else {
      Issue.record("a zero refresh accepted")
      return
    }
    #expect(message.contains("--ephemeris-refresh needs"))
  }

  @Test("durations below the millisecond are refused as 0 is, by watch, locate and follow")
  func durationsBelowTheResolution() {
    for tiny in ["0.0001", "1e-9", "0", "-1", "nan", "inf"] {
      guard case .invalid(let watch) = Watch.parse(["--interval", tiny]) else {
        Issue.record("watch --interval \(tiny) accepted")
        continue
      }
      #expect(watch.contains("--interval needs a number of seconds from 0.001"), "\(watch)")
      guard case .invalid(let locate) = Locate.parse(["--timeout", tiny]) else {
        Issue.record("locate --timeout \(tiny) accepted")
        continue
      }
      #expect(locate.contains("--timeout needs a number of seconds from 0.001"), "\(locate)")
      guard
        case .invalid(let follow) = FollowOptions.parse(
          ["--mqtt", "mqtt://127.0.0.1", "truck-17", "--interval", tiny])
      else {
        Issue.record("follow --interval \(tiny) accepted")
        continue
      }
      #expect(follow.contains("--interval needs"), "\(follow)")
    }
    // A millisecond is the shortest the driver counts, and is taken.
    guard case .options(let options) = Watch.parse(["--interval", "0.001"]) else {
      Issue.record("watch --interval 0.001 refused")
      return
    }
    #expect(options.interval == .milliseconds(1))
  }
}
