import Chipsets
import Foundation
import Glibc
import NMEA
import Replay
import Simulator
import Testing

/// `serialgps watch DEVICE --chipset airoha` (and `casic`) twice in a row on the same device,
/// a simulated receiver on a pty: each run wakes it, streams and puts it to sleep at the end.
@Suite("watch --chipset airoha|casic, twice on one device", .serialized)
struct FamilyWatchTests {
  func simulator(_ profile: ReceiverProfile) throws -> ReceiverSimulator {
    try ReceiverSimulator(
      recording: Recording.load(path: "\(fixturesDirectory)/midnight-rollover.nmea"),
      configuration: .init(
        profile: profile, pace: .recorded(speed: 4), initialPowerState: .running,
        wakeDelay: .milliseconds(10)))
  }

  /// One `watch … --count 2` to its end: its exit status and standard error.
  func watch(_ arguments: [String]) async throws -> (Int32?, String) {
    let process = try CLIProcess(["watch"] + arguments + ["--count", "2", "--linger", "0"])
    let status = await process.exitStatus(timeout: .seconds(60))
    return (status, process.standardError)
  }

  @Test func airohaIsWokenAndPutToSleepTwice() async throws {
    let simulator = try simulator(.airoha)
    defer { simulator.stop() }
    let set = AirohaCommandSet()
    let on = set.powerOnSteps.map(\.bytes)
    let off = set.powerOffSteps.map(\.bytes)
    for run in 1...2 {
      let (status, errors) = try await watch([
        simulator.devicePath, "--chipset", "airoha", "--baud", "115200",
      ])
      #expect(status == 0, "run \(run): \(errors)")
      #expect(await simulator.waitForPowerState(.gnssStopped), "run \(run): \(errors)")
      // Each run wakes with $PAIR002, may tell the time ($PAIR590: aiding), selects, and
      // ends with $PAIR003.
      let aiding = [NMEAChecksum.frame("PAIR590"), NMEAChecksum.frame("PAIR600")].map {
        Array($0.prefix(8))
      }
      let plain = simulator.received.map(\.bytes).filter { !aiding.contains(Array($0.prefix(8))) }
      let expected = Array(repeating: on + off, count: run).flatMap { $0 }
      #expect(plain == expected, "run \(run): \(errors)")
      #expect(simulator.received.allSatisfy { $0.outcome == .acknowledged }, "run \(run)")
    }
  }

  /// The wake line through a FIFO (`--wake-pin control:FIFO`, as `serialgps replay
  /// --control` takes it), read here and applied to the in-process simulator's pin.
  @Test func casicIsWokenAndPutToStandbyByTheLineTwice() async throws {
    let simulator = try simulator(.casic)
    defer { simulator.stop() }
    let directory = try TemporaryDirectory()
    let fifo = directory.file("control")
    try #require(mkfifo(fifo, 0o600) == 0)
    let reader = FIFOPinReader(path: fifo, simulator: simulator)
    defer { reader.stop() }
    let on = CASICCommandSet().powerOnSteps.map(\.bytes)
    for run in 1...2 {
      let (status, errors) = try await watch([
        simulator.devicePath, "--chipset", "casic", "--baud", "9600", "--wake-pin",
        "control:" + fifo,
      ])
      #expect(status == 0, "run \(run): \(errors)")
      #expect(await simulator.waitForPowerState(.standby), "run \(run): \(errors)")
      #expect(simulator.received.map(\.bytes) == Array(repeating: on, count: run).flatMap { $0 })
      #expect(!errors.contains("did not"), "run \(run): \(errors)")
    }
    #expect(reader.lines == ["high", "low", "high", "low"])
  }
}

/// Reads `pin force-on high|low` lines from a FIFO on a thread of its own and drives the
/// simulator's pin as each arrives.
final class FIFOPinReader: @unchecked Sendable {  // `seen` and `stopping` under `lock`
  private let lock = NSLock()
  private var seen: [String] = []
  private var stopping = false
  private let thread: Thread

  init(path: String, simulator: ReceiverSimulator) {
    let box = Box()
    thread = Thread {
      // Read-write, so that the FIFO always has a writer and reads block instead of ending.
      let descriptor = open(path, O_RDWR | O_CLOEXEC)
      guard descriptor >= 0 else { return }
      defer { close(descriptor) }
      var pending: [UInt8] = []
      var buffer = [UInt8](repeating: 0, count: 256)
      while !(box.owner?.isStopping ?? true) {
        var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        guard poll(&poller, 1, 100) > 0 else { continue }
        let count = read(descriptor, &buffer, buffer.count)
        guard count > 0 else { continue }
        pending += buffer[..<count]
        while let end = pending.firstIndex(of: 0x0A) {
          let line = String(decoding: pending[..<end], as: UTF8.self)
          pending.removeSubrange(...end)
          let level = line.hasSuffix(" high") ? "high" : "low"
          simulator.drivePin(.forceOn, high: level == "high")
          box.owner?.record(level)
        }
      }
    }
    box.owner = self
    thread.start()
  }

  final class Box: @unchecked Sendable {  // set once, before the thread starts
    weak var owner: FIFOPinReader?
  }

  var lines: [String] { lock.withLock { seen } }
  var isStopping: Bool { lock.withLock { stopping } }
  func record(_ level: String) { lock.withLock { seen.append(level) } }
  func stop() { lock.withLock { stopping = true } }
}
