import Chipsets
import Foundation
import Glibc
import Replay
import Simulator
import Testing

/// One owner per device, between processes: two `serialgps` on one receiver each got part of
/// its bytes, and one's standby powered off the other's receiver. Now the second opener fails
/// at once naming the first, the first keeps its stream, and a lock file left by a process
/// killed outright is taken over.
@Suite("one owner per device, between processes", .serialized)
struct OneOwnerTests {
  func isStandby(_ input: ReceivedInput) -> Bool {
    input.bytes == MediaTekCommandSet.standby.bytes
  }

  /// The UUCP lock file of the device behind `path`: `/run/lock/LCK..pts_N`.
  func lockFile(_ path: String) throws -> String {
    let node = try #require(realpath(path, nil).map { String(cString: $0) })
    return "/run/lock/LCK.." + node.dropFirst("/dev/".count).replacing("/", with: "_")
  }

  func lines(_ text: String, containing word: String) -> Int {
    text.split(separator: "\n").filter { $0.contains(word) }.count
  }

  @Test func theSecondOpenerFailsAtOnceNamingTheFirst() async throws {
    let markers = try TemporaryDirectory()
    let environment = ["SERIALGPS_RUNTIME_DIR": markers.path]
    let recording = try Recording.load(path: "\(fixturesDirectory)/mtk-cold-start.nmea")
    let simulator = try ReceiverSimulator(
      recording: recording,
      configuration: .init(profile: .mediatek, pace: .recorded(speed: 4)))
    defer { simulator.stop() }
    let device = simulator.devicePath
    let lock = try lockFile(device)
    let watchArguments = ["watch", device, "--chipset", "mtk", "--baud", "9600", "--json"]

    let first = try CLIProcess(watchArguments, environment: environment)
    #expect(
      await eventually { lines(first.standardOutput, containing: "\"TPV\"") >= 2 },
      "\(first.standardError)")
    let pid = first.process.processIdentifier
    #expect(FileManager.default.contents(atPath: lock) == Data(String(format: "%10d\n", pid).utf8))

    // A second watch, and a record: each fails at once, naming the first's PID and command.
    let output = try TemporaryDirectory()
    for arguments in [
      watchArguments,
      ["record", device, "-o", output.file("second.nmea"), "--baud", "9600", "--duration", "5"],
    ] {
      let second = try CLIProcess(arguments, environment: environment)
      let status = await second.exitStatus(timeout: .seconds(20))
      #expect(status != nil && status != 0, "\(arguments[0]): \(second.standardError)")
      #expect(
        second.standardError.contains("is in use by process \(pid) (serialgps watch \(device)"),
        "\(arguments[0]): \(second.standardError)")
      #expect(second.standardError.contains("kill \(pid)"))
    }
    #expect(!FileManager.default.fileExists(atPath: output.file("second.nmea")))

    // The first kept its stream, and nobody sent the receiver to standby under it.
    let before = lines(first.standardOutput, containing: "\"TPV\"")
    #expect(
      await eventually { lines(first.standardOutput, containing: "\"TPV\"") >= before + 3 },
      "\(first.standardError)")
    #expect(!simulator.received.contains(where: isStandby))
    #expect(simulator.powerState == .running)

    // Killed outright, the first leaves its lock file naming a dead process: stale, taken over.
    first.signal(SIGKILL)
    _ = await first.exitStatus(timeout: .seconds(30))
    LeftAwakeTests().releaseExclusivity(device)  // the pty keeps TIOCEXCL, a tty would not
    #expect(FileManager.default.contents(atPath: lock) == Data(String(format: "%10d\n", pid).utf8))
    let third = try CLIProcess(watchArguments + ["--count", "2"], environment: environment)
    #expect(await third.exitStatus(timeout: .seconds(30)) == 0, "\(third.standardError)")
    #expect(lines(third.standardOutput, containing: "\"TPV\"") == 2)
    #expect(!FileManager.default.fileExists(atPath: lock), "removed as the third closed the port")
  }
}
