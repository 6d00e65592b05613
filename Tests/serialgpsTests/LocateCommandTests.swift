import Chipsets
import Foundation
import Replay
import Simulator
import Testing

/// `serialgps locate` on the receiver simulator: one fix of the accuracy asked, or the best
/// seen and exit 1 on timeout; the receiver back in standby either way.
@Suite("serialgps locate", .serialized)
struct LocateCommandTests {
  /// A u-blox M8 in GNSS stop playing a drive whose GST gives errors of about 1 m.
  func simulator() throws -> ReceiverSimulator {
    let recording = try Recording.load(path: "\(fixturesDirectory)/ublox-m8-drive.nmea")
    return try ReceiverSimulator(
      recording: recording,
      configuration: .init(
        profile: .ublox(.m8), pace: .fixedInterval(.milliseconds(50)), loops: true,
        initialPowerState: .gnssStopped))
  }

  func arguments(_ simulator: ReceiverSimulator, _ extra: [String]) -> [String] {
    ["locate", simulator.devicePath, "--chipset", "ublox", "--baud", "115200"] + extra
  }

  @Test("one fix of the accuracy asked, exit 0, the receiver back in backup")
  func oneFix() async throws {
    let simulator = try simulator()
    defer { simulator.stop() }
    let locate = try CLIProcess(arguments(simulator, ["--accuracy", "5", "--timeout", "30"]))
    #expect(await locate.exitStatus() == 0, "\(locate.standardError)")
    let lines = locate.standardOutput.split(separator: "\n")
    #expect(lines.count == 1, "\(locate.standardOutput)")
    #expect(lines.first?.contains("  3D  ") == true, "\(locate.standardOutput)")
    let accuracy = lines.first.flatMap { line in
      line.components(separatedBy: "acc ").last.flatMap { Double($0.split(separator: " ")[0]) }
    }
    #expect(accuracy.map { $0 <= 5 } == true, "\(locate.standardOutput)")
    #expect(simulator.powerState == .backup)  // the standby: RXM-PMREQ
    #expect(simulator.counters.powerOns == 1 && simulator.counters.powerOffs == 1)
  }

  @Test("--json prints one TPV")
  func json() async throws {
    let simulator = try simulator()
    defer { simulator.stop() }
    let locate = try CLIProcess(arguments(simulator, ["--json", "--timeout", "30"]))
    #expect(await locate.exitStatus() == 0, "\(locate.standardError)")
    let lines = locate.standardOutput.split(separator: "\n")
    #expect(lines.count == 1)
    #expect(lines.first?.hasPrefix("{\"class\":\"TPV\"") == true, "\(locate.standardOutput)")
    #expect(simulator.powerState == .backup)  // the standby: RXM-PMREQ
  }

  @Test("on timeout: the best fix seen, a message, exit 1, the receiver back in backup")
  func timeout() async throws {
    let simulator = try simulator()
    defer { simulator.stop() }
    let locate = try CLIProcess(arguments(simulator, ["--accuracy", "0.1", "--timeout", "3"]))
    #expect(await locate.exitStatus() == 1)
    #expect(
      locate.standardError.contains("no fix of 0.1 m or better within"), "\(locate.standardError)")
    #expect(locate.standardError.contains("the best seen had"))
    let lines = locate.standardOutput.split(separator: "\n")
    #expect(lines.count == 1 && lines.first?.contains("  3D  ") == true, "\(locate.standardOutput)")
    #expect(simulator.powerState == .backup)  // the standby: RXM-PMREQ
  }

  @Test("watch --interval: one fix per interval, not every epoch")
  func watchInterval() async throws {
    let simulator = try simulator()
    defer { simulator.stop() }
    let started = ContinuousClock.now
    // Epochs every 50 ms: two fixes without --interval take a tenth of a second.
    let watch = try CLIProcess(
      ["watch", simulator.devicePath, "--chipset", "ublox", "--baud", "115200", "--count", "3"]
        + ["--interval", "1", "--accuracy", "5"])
    #expect(await watch.exitStatus() == 0, "\(watch.standardError)")
    let elapsed = ContinuousClock.now - started
    let lines = watch.standardOutput.split(separator: "\n")
    #expect(lines.count == 3, "\(watch.standardOutput)")
    #expect(elapsed >= .seconds(2), "\(elapsed)")
    #expect(simulator.powerState == .backup)
  }

  @Test("wrong command lines are refused with a message")
  func usage() async throws {
    let locate = try CLIProcess(["locate", "/dev/null", "--accuracy", "-3"])
    #expect(await locate.exitStatus() == 2)
    #expect(locate.standardError.contains("--accuracy needs a number of metres above 0"))
  }
}
