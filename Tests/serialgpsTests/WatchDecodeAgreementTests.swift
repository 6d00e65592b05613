import Chipsets
import Foundation
import Replay
import Simulator
import Testing

// `watch --json` and `decode --json` write their TPV reports with the one encoder, so the same
// epochs of the same recording give the same lines. Here a fixture plays on the receiver
// simulator and the built `serialgps watch` reads it from the pty, through the whole driver
// (serial port, framer, fix builder, subscription); `decode --json` reads the same file. The
// one input that legitimately differs, the device (watch reads one, a file is none), is given
// to decode explicitly with --device rather than edited out of the lines.

@Suite("watch --json and decode --json agree", .serialized)
struct WatchDecodeAgreementTests {
  /// The epochs compared: past the cold start's no-fix and 2D epochs, into RTK float and
  /// fixed, with time to spare.
  static let epochs = 60

  @Test(
    "the same TPV lines for the same epochs of a recording",
    arguments: ["ublox-m8-drive", "mtk-cold-start", "rtk-high-precision"])
  func sameLines(fixture: String) async throws {
    let path = "\(fixturesDirectory)/\(fixture).nmea"
    let recording = try Recording.load(path: path)
    let profile = ReceiverProfile.inferred(from: recording)
    // Asleep until watch's wake-up commands arrive, so that watch, whose port is open by then,
    // hears the recording from its first epoch. One epoch every 50 ms: far slower than watch
    // prints, so its subscription drops nothing.
    let simulator = try ReceiverSimulator(
      recording: recording,
      configuration: .init(
        profile: profile, pace: .fixedInterval(.milliseconds(50)), loops: false,
        initialPowerState: profile.family == .ublox ? .backup : .standby))
    defer { simulator.stop() }

    let watch = try CLIProcess([
      "watch", simulator.devicePath, "--json", "--count", "\(Self.epochs)",
      "--chipset", profile.family.cliName, "--baud", "\(recording.baud ?? 9600)",
    ])
    #expect(await watch.exitStatus() == 0, "\(watch.standardError)")
    let watched = watch.standardOutput.split(separator: "\n").map { String($0) }

    let decode = try CLIProcess(["decode", "--json", "--device", simulator.devicePath, path])
    #expect(await decode.exitStatus() == 0, "\(decode.standardError)")
    let decoded = decode.standardOutput.split(separator: "\n").map { String($0) }
      .filter { $0.hasPrefix("{\"class\":\"TPV\",") }

    #expect(watched.count == Self.epochs)
    #expect(decoded.count >= Self.epochs)
    // Line for line, in order. Watch may skip an epoch: one the reader found queued behind a
    // newer one (a loaded machine that cannot read within the simulator's 50 ms) is late, and
    // watch prints live fixes only (docs/receiver.md, "Late fixes").
    var next = decoded.startIndex
    for (index, live) in watched.enumerated() {
      guard let match = decoded[next...].firstIndex(of: live) else {
        let expected = next < decoded.endIndex ? decoded[next] : "(no more)"
        Issue.record(
          "watch's line \(index + 1) is not among decode's from \(next + 1) on:\n\(live)\ndecode: \(expected)"
        )
        break
      }
      next = match + 1
    }
    // What the comparison covers.
    let modes = Set(
      watched.compactMap { line in line.range(of: "\"mode\":").map { line[$0.upperBound] } })
    #expect(modes.contains("3"))
    if fixture == "mtk-cold-start" {
      #expect(modes == ["1", "2", "3"], "no fix, 2D and 3D")
    }
    if fixture == "rtk-high-precision" {
      for member in ["\"status\":3", "\"status\":4", "\"epx\":"] {
        #expect(watched.contains { $0.contains(member) }, "RTK fixed, float, epx: \(member)")
      }
    }
  }
}
