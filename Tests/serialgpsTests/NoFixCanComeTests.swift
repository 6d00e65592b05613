import Foundation
import Glibc
import Replay
import Simulator
import Testing

/// What `serialgps` tells a person at a terminal about a receiver it cannot get a fix from:
/// said at once and in serialgps's own words (`--chipset mtk`, never the Swift API's
/// `chipset: .family(…)`), by `locate` and `watch --interval` as by plain `watch`.
@Suite("serialgps: why no fix can come, in the terminal's words", .serialized)
struct NoFixCanComeTests {
  /// A receiver whose bytes name no maker: the midnight drive on a MediaTek in `power`
  /// (silent in standby until a `$PMTK` command wakes it).
  func unknownReceiver(_ power: SimulatedPowerState) throws -> ReceiverSimulator {
    let recording = try Recording.load(path: "\(fixturesDirectory)/midnight-rollover.nmea")
    return try ReceiverSimulator(
      recording: recording,
      configuration: .init(
        profile: .mediatek, pace: .fixedInterval(.milliseconds(100)), loops: true,
        initialPowerState: power))
  }

  @Test("watch on a receiver nothing names: what to give, as command-line options")
  func watchSaysWhatToGive() async throws {
    let simulator = try unknownReceiver(.running)
    defer { simulator.stop() }
    let watch = try CLIProcess(["watch", simulator.devicePath, "--baud", "9600", "--count", "2"])
    #expect(await watch.exitStatus() == 0, "\(watch.standardError)")
    #expect(
      watch.standardError.contains("give --chipset ublox|mtk|sirf|casic|airoha to name its family"),
      "\(watch.standardError)")
    #expect(watch.standardError.contains("or --chipset probe to ask it"))
    #expect(!watch.standardError.contains("chipset: ."), "\(watch.standardError)")
    #expect(!watch.standardError.contains(".family("), "\(watch.standardError)")
  }

  @Test(
    "locate and watch --interval: a receiver asleep whose chipset is unknown, said at once",
    arguments: [
      ["locate", "--timeout", "60"], ["watch", "--interval", "30"],
    ])
  func asleepAndUnknown(command: [String]) async throws {
    let simulator = try unknownReceiver(.standby)
    defer { simulator.stop() }
    let started = ContinuousClock.now
    let process = try CLIProcess(
      [command[0], simulator.devicePath, "--baud", "9600"] + command.dropFirst())
    #expect(await process.exitStatus(timeout: .seconds(45)) == 1, "\(process.standardError)")
    let elapsed = ContinuousClock.now - started
    #expect(elapsed < .seconds(20), "\(elapsed): it waited instead of saying why")
    let said = process.standardError
    #expect(said.contains("sent nothing in 3 s: it is asleep"), "\(said)")
    #expect(said.contains("--chipset"), "\(said)")
    #expect(!said.contains("sky"), "\(said)")
    #expect(!said.contains("chipset: ."), "\(said)")
    #expect(simulator.received.isEmpty, "nothing is written to a receiver of unknown chipset")
  }

  @Test(
    "locate and watch --interval: a device that cannot be opened, said at once",
    arguments: [
      (["locate", "--timeout", "60"], "/dev/serialgps-no-such-device"),
      (["locate", "--timeout", "60"], "/dev/null"),
      (["locate", "--timeout", "60"], "/"),
      (["watch", "--interval", "30"], "/dev/serialgps-no-such-device"),
      (["watch", "--interval", "30"], "/dev/null"),
      (["watch", "--accuracy", "10"], "/"),
    ])
  func cannotOpen(command: [String], device: String) async throws {
    let started = ContinuousClock.now
    let process = try CLIProcess(
      [command[0], device, "--baud", "9600"] + command.dropFirst())
    #expect(await process.exitStatus(timeout: .seconds(45)) == 1, "\(process.standardError)")
    let elapsed = ContinuousClock.now - started
    #expect(elapsed < .seconds(15), "\(elapsed): it waited out the timeout")
    #expect(process.standardError.contains(device), "\(process.standardError)")
    #expect(!process.standardError.contains("sky"), "\(process.standardError)")
  }

  @Test("locate: a device another serialgps holds is busy, said at once")
  func busy() async throws {
    let simulator = try unknownReceiver(.running)
    defer { simulator.stop() }
    let markers = try TemporaryDirectory()
    let environment = ["SERIALGPS_RUNTIME_DIR": markers.path]
    let holder = try CLIProcess(
      ["watch", simulator.devicePath, "--chipset", "nmea", "--baud", "9600"],
      environment: environment)
    defer { if holder.process.isRunning { holder.signal(SIGKILL) } }
    #expect(await eventually { holder.standardOutput.contains("\n") }, "\(holder.standardError)")
    let started = ContinuousClock.now
    let locate = try CLIProcess(
      ["locate", simulator.devicePath, "--chipset", "nmea", "--baud", "9600", "--timeout", "60"],
      environment: environment)
    #expect(await locate.exitStatus(timeout: .seconds(45)) == 1, "\(locate.standardError)")
    #expect(ContinuousClock.now - started < .seconds(15))
    let pid = holder.process.processIdentifier
    #expect(locate.standardError.contains("is in use by process \(pid)"), "\(locate.standardError)")
    #expect(!locate.standardError.contains("sky"), "\(locate.standardError)")
    holder.signal(SIGINT)
    _ = await holder.exitStatus()
  }
}
