import Chipsets
import NMEA
import POSIX
import Replay
import SerialPort
import Simulator
import Testing

@testable import SerialGPS

/// A reader that falls behind (here its own subscriber blocks it for three seconds) finds
/// twelve epochs queued in the pty: the newest goes out live, the others as late, to the
/// subscriptions that asked for them, and are counted.
@Suite struct LateFixTests {
  final class Recorder: @unchecked Sendable {
    private let lock = Lock()
    private var fixes: [(at: ContinuousClock.Instant, update: FixUpdate)] = []
    private var stalled = false
    private(set) var stallEnded: ContinuousClock.Instant?

    /// On the reader's thread: the fourth fix stalls it.
    func take(_ item: ReceiverEventOrRawData) {
      guard case .event(.fix(let update)) = item else { return }
      let now = ContinuousClock.now
      let stall = lock.withLock {
        fixes.append((now, update))
        defer { if fixes.count == 4 { stalled = true } }
        return fixes.count == 4 && !stalled
      }
      if stall {
        sleepThread(for: .seconds(3))
        lock.withLock { stallEnded = ContinuousClock.now }
      }
    }

    var all: [(at: ContinuousClock.Instant, update: FixUpdate)] { lock.withLock { fixes } }
    var ended: ContinuousClock.Instant? { lock.withLock { stallEnded } }
  }

  static func seconds(_ fix: Fix) -> Double? {
    fix.timestamp.map { Double($0.secondsSinceUnixEpoch) }
  }

  @Test func afterAStallTheNewestIsLiveAndTheQueuedOnesLate() async throws {
    let recording = try Recording.loadCached(
      path: SimulatedReceiverTests.fixtures + "/ublox-m8-drive.nmea")
    let simulator = try ReceiverSimulator(
      recording: recording, configuration: .init(profile: .ublox(.m8), pace: .recorded(speed: 4)))
    defer { simulator.stop() }
    var options = GPSReceiver.Options()
    options.chipset = .family(.nmea)
    let receiver = GPSReceiver(
      connector: SerialConnector(path: simulator.devicePath, baud: .fixed(.b9600)),
      options: options)
    let recorder = Recorder()
    let live = receiver.subscribeOnReaderThread { recorder.take($0) }
    let withLate = EventLog(receiver.subscribe(bufferSize: 64, includingLateFixes: true))
    #expect(await eventually(timeout: .seconds(30)) { recorder.ended != nil })
    try await Task.sleep(for: .seconds(1))
    live.cancel()
    withLate.stop()
    await receiver.shutdown()

    let ended = try #require(recorder.ended)
    let afterStall = recorder.all.filter { $0.at >= ended }
    let first = try #require(afterStall.first)
    #expect(!first.update.isLate && !first.update.isReplay)
    // The first live fix after the stall is the newest: about twelve receiver seconds (three
    // seconds at four epochs a second) after the one that stalled, not one.
    let stalledAt = try #require(
      recorder.all.dropFirst(3).first.flatMap { Self.seconds($0.update.fix) })
    let newest = try #require(Self.seconds(first.update.fix))
    #expect(newest - stalledAt >= 8, "the first fix after the stall is \(newest - stalledAt) s on")
    // None of the epochs queued during the stall went out live, and what followed the newest
    // came in the receiver's order. (Told by the receiver's times, not by how fast they came:
    // on a loaded machine the next epoch may follow the newest within milliseconds.)
    let liveTimes = recorder.all.compactMap { Self.seconds($0.update.fix) }
    #expect(!liveTimes.contains { $0 > stalledAt && $0 < newest }, "\(liveTimes)")
    let liveAfter = afterStall.compactMap { Self.seconds($0.update.fix) }
    #expect(liveAfter == liveAfter.sorted())

    // The queued ones went out as late, only to the subscription that asked, oldest first,
    // each older than the live fix that followed. (On a loaded machine the reader may fall a
    // period behind at other times too: those are late as well, and counted.)
    let late = withLate.fixes.filter(\.isLate)
    #expect(receiver.statistics.lateFixes == late.count)
    let queued = late.compactMap { Self.seconds($0.fix) }.filter { $0 > stalledAt && $0 < newest }
    #expect(
      queued.count >= 8, "\(queued.map { $0 - stalledAt }) late, newest \(newest - stalledAt)")
    #expect(queued == queued.sorted())
    #expect(late.allSatisfy { $0.age >= .seconds(1) }, "at least one receiver period old")
    #expect(recorder.all.allSatisfy { !$0.update.isLate })
    // The latest fix is the newest, not a late one.
    #expect(receiver.latestFix.flatMap { Self.seconds($0.fix) } ?? 0 >= newest)
  }
}
