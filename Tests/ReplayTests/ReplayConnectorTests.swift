import Chipsets
import Foundation
import NMEA
import Replay
import SerialGPS
import Simulator
import Testing

// The in-process replay under the real gated receiver, with a virtual clock: what a clock
// advance makes due arrives (through the receiver's controller and reader, which run on their
// own, so tests wait for it with generous real-time bounds), and nothing else can.

/// A subscription's events, collected as they come.
final class EventLog: @unchecked Sendable {
  private let lock = NSLock()
  private var events: [ReceiverEvent] = []
  private var task: Task<Void, Never>?

  init(_ sequence: ReceiverEvents) {
    // Collected on the driver's executor, as a callback subscription is: the cooperative
    // pool may be held for seconds by other tests' synchronous work on a loaded machine.
    task = Task(executorPreference: DriverExecutor.shared) { [weak self] in
      for await event in sequence {
        guard let self else { return }
        self.lock.withLock { self.events.append(event) }
      }
    }
  }

  var all: [ReceiverEvent] { lock.withLock { events } }
  var updates: [FixUpdate] {
    all.compactMap { if case .fix(let update) = $0 { return update } else { return nil } }
  }
  var fixes: [Fix] { updates.map(\.fix) }
  var statuses: [ReceiverStatus] {
    all.compactMap { if case .status(let status) = $0 { return status } else { return nil } }
  }

  /// Ends the subscription.
  func stop() { task?.cancel() }
}

/// Every fix `serialgps decode` finds in a recording, in order.
func decodedFixes(_ recording: Recording) -> [Fix] {
  var decoder = NMEADecoder()
  var fixes: [Fix] = []
  decoder.decode(recording.body) { if case .epoch(let epoch) = $0 { fixes.append(epoch.fix) } }
  decoder.finish { if case .epoch(let epoch) = $0 { fixes.append(epoch.fix) } }
  return fixes
}

/// Expects the same fixes in the same order; on a difference says where, not both lists.
func expectSame(
  _ got: [Fix], _ expected: ArraySlice<Fix>, sourceLocation: SourceLocation = #_sourceLocation
) {
  #expect(got.count == expected.count, sourceLocation: sourceLocation)
  if let index = zip(got, expected).enumerated().first(where: { $0.element.0 != $0.element.1 })?
    .offset
  {
    Issue.record(
      "fix \(index) differs: got \(got[index]), expected \(expected[expected.startIndex + index])",
      sourceLocation: sourceLocation)
  }
}

func receiverOptions(linger: Duration = .seconds(5), chipset: ChipsetChoice = .automatic)
  -> GPSReceiver.Options
{
  var options = GPSReceiver.Options()
  options.linger = linger
  options.chipset = chipset
  options.reconnectDelay = .seconds(1)
  options.maximumReconnectDelay = .seconds(1)
  return options
}

/// The u-blox controlled GNSS start and stop (`UBX-CFG-RST` reset modes 0x09 and 0x08).
func isGNSSStart(_ command: ReceiverCommand) -> Bool {
  if case .ubxReset(_, 0x09) = command { return true }
  return false
}
func isGNSSStop(_ command: ReceiverCommand) -> Bool {
  if case .ubxReset(_, 0x08) = command { return true }
  return false
}

@Suite("in-process replay: ReplayConnector under GPSReceiver with a virtual clock")
struct ReplayConnectorTests {
  @Test("advancing 10 s gives exactly 10 fixes, identical to decoding the first 10 epochs")
  func tenSecondsTenFixes() async throws {
    let recording = try loadFixture("ublox-m8-drive")
    let expected = decodedFixes(recording)
    let clock = ManualClock()
    let replay = ReplayConnector(recording: recording, clock: clock)
    let receiver = GPSReceiver(connector: replay, options: receiverOptions(), clock: clock)
    let log = EventLog(receiver.subscribe())
    defer { log.stop() }

    // Right after subscribing, before the connection is even open: nothing is lost.
    clock.advance(by: .seconds(10))
    #expect(await eventually { log.fixes.count >= 10 })
    expectSame(log.fixes, expected.prefix(10))
    // The 11th epoch is due at 11 s: it cannot have been handed out.
    #expect(replay.counters.burstsSent == 10)

    clock.advance(by: .seconds(1))
    #expect(await eventually { log.fixes.count >= 11 })
    expectSame(log.fixes, expected.prefix(11))
    #expect(replay.counters.burstsSent == 11)
    await receiver.shutdown()
  }

  @Test("the pace divides the recorded intervals: at 5× ten epochs take two seconds")
  func paceOnTheClock() async throws {
    let recording = try loadFixture("rtk-high-precision")  // 10 Hz
    let expected = decodedFixes(recording)
    let clock = ManualClock()
    let replay = ReplayConnector(
      recording: recording, configuration: .init(pace: .recorded(speed: 5)), clock: clock)
    let receiver = GPSReceiver(connector: replay, options: receiverOptions(), clock: clock)
    let log = EventLog(receiver.subscribe())
    defer { log.stop() }
    // Epochs every 20 ms; the first one interval after the start.
    clock.advance(to: .origin + .milliseconds(200))
    #expect(await eventually { log.fixes.count >= 10 })
    expectSame(log.fixes, expected.prefix(10))
    #expect(replay.counters.burstsSent == 10)
    await receiver.shutdown()
  }

  @Test("as fast as possible: the whole recording without the clock moving")
  func asFastAsPossible() async throws {
    let recording = try loadFixture("noisy-ublox")
    let expected = decodedFixes(recording)
    let clock = ManualClock()
    let replay = ReplayConnector(
      recording: recording, configuration: .init(pace: .asFastAsPossible), clock: clock)
    let receiver = GPSReceiver(connector: replay, options: receiverOptions(), clock: clock)
    // A buffer for all of them: the epochs come faster than any subscriber takes them.
    let log = EventLog(receiver.subscribe(bufferSize: 1000))
    defer { log.stop() }
    // The last epoch is emitted at its cycle end, learned from the earlier ones.
    #expect(await eventually { log.fixes.count >= expected.count })
    expectSame(log.fixes, expected[...])
    #expect(replay.counters.burstsSent == recording.bursts.count)
    #expect(clock.now == .origin)
    await receiver.shutdown()
  }

  @Test(
    "linger on the virtual clock: the standby command arrives exactly 5 s after the last one leaves"
  )
  func lingerThenStandby() async throws {
    let clock = ManualClock()
    let replay = ReplayConnector(
      recording: try loadFixture("ublox-m8-drive"),
      configuration: .init(profile: .ublox(.m8), interface: .usb), clock: clock)
    let receiver = GPSReceiver(connector: replay, options: receiverOptions(), clock: clock)
    let log = EventLog(receiver.subscribe())

    // Powered on: the message selection acknowledged, then the GNSS start.
    let start = try #require(await replay.waitForCommand(matching: isGNSSStart))
    #expect(start.at == .zero)
    #expect(!log.statuses.contains { if case .commandFailed = $0 { true } else { false } })
    clock.advance(by: .seconds(3))
    #expect(await eventually { log.fixes.count >= 3 })

    log.stop()  // the last subscriber leaves at 3 s: the linger runs to 8 s
    // The linger timer is armed when the controller sleeps on the clock beside the replay.
    #expect(await eventually { clock.sleeperCount >= 2 })
    clock.advance(to: .origin + .milliseconds(7900))
    #expect(await replay.waitUntil { $0.counters.burstsSent == 7 })
    #expect(replay.powerState == .running)
    #expect(!replay.receivedCommands.contains(where: isGNSSStop))

    clock.advance(to: .origin + .seconds(8))
    let stop = try #require(await replay.waitForCommand(matching: isGNSSStop))
    #expect(stop.at == .seconds(8))
    #expect(replay.powerState == .gnssStopped)
    #expect(await eventually { receiver.statistics.powerOffs == 1 })
    #expect(await replay.waitUntil { !$0.isConnected })

    // The epoch due at 8 s went out before the command of the same instant; asleep and
    // closed, nothing more is handed out however long nobody listens.
    clock.advance(to: .origin + .seconds(60))
    try await Task.sleep(for: .milliseconds(100))
    #expect(replay.counters.burstsSent == 8)
    #expect(replay.counters.bytesDropped == 0)
    await receiver.shutdown()
  }

  @Test("hold keeps it powered with nobody subscribed; then the linger; a newcomer wakes it")
  func holdThenWake() async throws {
    let recording = try loadFixture("ublox-m8-drive")
    let expected = decodedFixes(recording)
    let clock = ManualClock()
    let replay = ReplayConnector(
      recording: recording, configuration: .init(profile: .ublox(.m8)), clock: clock)
    let receiver = GPSReceiver(connector: replay, options: receiverOptions(), clock: clock)

    // Hold to 10.5 s, linger to 15.5 s: half-way between epochs, so which epochs the driver
    // read before it let go does not depend on how fast its reader thread is.
    receiver.hold(for: .milliseconds(10_500))
    #expect(await replay.waitForCommand(matching: isGNSSStart) != nil)
    // A manual clock moves in one jump, so the linger (armed when the hold ends, from the
    // clock's time then) is waited for before moving on: the hold timer leaves the clock's
    // sleepers as the clock passes it; the replay's and the linger's remain.
    clock.advance(to: .origin + .milliseconds(10_500))
    #expect(await eventually { clock.sleeperCount == 2 })
    clock.advance(to: .origin + .seconds(15))
    #expect(await replay.waitUntil { $0.counters.burstsSent == 15 })
    #expect(await eventually { receiver.statistics.fixes == 15 })
    #expect(replay.powerState == .running)
    #expect(!replay.receivedCommands.contains(where: isGNSSStop))

    clock.advance(to: .origin + .milliseconds(15_500))
    let stop = try #require(await replay.waitForCommand(matching: isGNSSStop))
    #expect(stop.at == .milliseconds(15_500))
    #expect(await replay.waitUntil { !$0.isConnected })

    // A subscriber at 20.5 s: GNSS start again; the recording resumes where it stopped, its
    // first epoch one interval after the start.
    clock.advance(to: .origin + .milliseconds(20_500))
    replay.clearReceived()
    let log = EventLog(receiver.subscribe())
    defer { log.stop() }
    let start = try #require(await replay.waitForCommand(matching: isGNSSStart))
    #expect(start.at == .milliseconds(20_500))
    #expect(replay.powerState == .running)
    clock.advance(to: .origin + .milliseconds(23_500))
    #expect(await eventually { log.updates.count >= 4 })
    // First the newest fix, replayed to the newcomer with its age; then epochs 15 to 17.
    let updates = log.updates
    #expect(updates.first?.isReplay == true)
    #expect(updates.first?.fix == expected[14])
    #expect(updates.first?.age == .milliseconds(5500))
    #expect(updates.dropFirst().allSatisfy { !$0.isReplay })
    // A new connection decodes afresh: its first fix has no earlier altitude to derive a climb
    // from; otherwise the fixes are the recording's.
    var afterWake = Array(expected[15..<18])
    afterWake[0].climb = nil
    expectSame(updates.dropFirst().map(\.fix), afterWake[...])
    await receiver.shutdown()
  }

  @Test(
    "MediaTek in-process: wake bytes, settle on the clock, \\$PMTK314 acknowledged; standby silences it"
  )
  func mediaTekStandbyAndWake() async throws {
    let clock = ManualClock()
    let replay = ReplayConnector(
      recording: try loadFixture("mtk-cold-start"),
      configuration: .init(
        profile: .mediatek, initialPowerState: .standby, wakeDelay: .milliseconds(100)),
      clock: clock)
    let receiver = GPSReceiver(
      connector: replay, options: receiverOptions(linger: .zero), clock: clock)
    let log = EventLog(receiver.subscribe())

    // CR LF wakes the chip (and is lost); the driver settles 200 ms on the clock, during
    // which the chip boots for 100 ms; then $PMTK314, acknowledged.
    #expect(await replay.waitUntil { !$0.received.isEmpty })
    #expect(replay.received.first?.outcome == .wokeReceiver)
    #expect(replay.powerState == .booting)
    clock.advance(by: .milliseconds(200))
    let selection = try #require(
      await replay.waitForCommand {
        if case .mtkSetNMEAOutput = $0 { return true } else { return false }
      })
    #expect(selection.at == .milliseconds(200))
    #expect(selection.outcome == .acknowledged)
    #expect(replay.powerState == .running)
    // Running since 100 ms: epochs at 1.1 s, 2.1 s, 3.1 s.
    clock.advance(to: .origin + .milliseconds(3100))
    #expect(await replay.waitUntil { $0.counters.burstsSent == 3 })
    #expect(await eventually { log.fixes.count >= 2 })

    log.stop()
    let standby = try #require(await replay.waitForCommand { $0 == .mtkStandby(mode: 0) })
    #expect(standby.outcome == .acknowledged)
    #expect(replay.powerState == .standby)
    clock.advance(to: .origin + .seconds(30))
    try await Task.sleep(for: .milliseconds(100))
    #expect(replay.counters.burstsSent == 3)
    #expect(!log.statuses.contains { if case .commandFailed = $0 { true } else { false } })
    await receiver.shutdown()
  }

  @Test("unplugged: the driver reports it; plugged back in, it reconnects at once")
  func unplugAndReplug() async throws {
    let clock = ManualClock()
    let replay = ReplayConnector(recording: try loadFixture("sirf-4800"), clock: clock)
    let receiver = GPSReceiver(connector: replay, options: receiverOptions(), clock: clock)
    let log = EventLog(receiver.subscribe())
    defer { log.stop() }
    // Three epochs, three fixes: the first closes when the second begins, the second when the
    // third begins (the cycle's end is learned), the third at its last sentence.
    clock.advance(by: .seconds(3))
    #expect(await eventually { log.fixes.count >= 3 })

    replay.hangUp()
    #expect(
      await eventually {
        log.statuses.contains { if case .disconnected = $0 { true } else { false } }
      })
    let reason = log.statuses.compactMap {
      if case .disconnected(let reason) = $0 { return reason } else { return nil }
    }.first
    #expect(reason?.kind == .unplugged)
    #expect(reason?.message.contains("replay:sirf-4800 is unplugged") == true)
    #expect(replay.powerState == .off)

    // Back in: the driver is told it appeared and reconnects without waiting for its backoff
    // (the clock does not move); epochs follow one interval after the chip starts.
    replay.replug()
    #expect(await eventually { log.statuses.contains(.reconnected) })
    #expect(await replay.waitUntil { $0.isConnected })
    clock.advance(by: .seconds(3))  // a new connection's decoder learns the cycle again
    #expect(await eventually { log.fixes.count >= 6 })
    await receiver.shutdown()
  }

  @Test("one connection at a time; none while unplugged; errors name the device")
  func connectionErrors() async throws {
    let replay = ReplayConnector(
      recording: try loadFixture("midnight-rollover"), clock: ManualClock())
    let first = try await replay.connect()
    await #expect(throws: ReplayError(device: "replay:midnight-rollover", reason: .busy)) {
      try await Task.sleep(for: .zero)
      _ = try await replay.connect()
    }
    first.close()
    replay.hangUp()
    do {
      _ = try await replay.connect()
      Issue.record("connected while unplugged")
    } catch {
      #expect("\(error)".contains("replay:midnight-rollover is unplugged"))
    }
    replay.replug()
    let second = try await replay.connect()
    second.close()
  }

  @Test("a read blocks until bytes are due; interrupt wakes it with 0")
  func readAndInterrupt() async throws {
    let clock = ManualClock()
    let recording = try loadFixture("midnight-rollover")
    let replay = ReplayConnector(recording: recording, clock: clock)
    let connection = try await replay.connect()
    let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 16, alignment: 1)
    defer { buffer.deallocate() }
    let address = UInt(bitPattern: buffer.baseAddress)
    let pending = Task.detached {
      try await onOwnThread {
        let buffer = UnsafeMutableRawBufferPointer(
          start: UnsafeMutableRawPointer(bitPattern: address), count: 1 << 16)
        return try connection.read(into: buffer)
      }
    }
    try await Task.sleep(for: .milliseconds(50))
    connection.interrupt()
    #expect(try await pending.value == 0)

    clock.advance(by: .seconds(1))
    #expect(await replay.waitUntil { $0.counters.burstsSent == 1 })
    let count = try connection.read(into: buffer)
    #expect(
      Array(UnsafeRawBufferPointer(rebasing: buffer[..<count]))
        == Array(recording.bytes(of: recording.bursts[0])))
    connection.close()
  }

  @Test("bytes due by the clock are unread input until a read takes them")
  func unreadInput() async throws {
    let clock = ManualClock()
    let replay = ReplayConnector(recording: try loadFixture("midnight-rollover"), clock: clock)
    #expect(!replay.hasUnreadBytes)  // no connection open
    let connection = try await replay.connect()
    defer { connection.close() }
    #expect(!connection.hasUnreadInput())
    clock.advance(by: .seconds(1))
    // Asked at once, whether or not the replay's own pump has run yet.
    #expect(connection.hasUnreadInput())
    #expect(replay.hasUnreadBytes)
    let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 16, alignment: 1)
    defer { buffer.deallocate() }
    #expect(try connection.read(into: buffer) > 0)
    #expect(!connection.hasUnreadInput())
    #expect(!replay.hasUnreadBytes)
  }

  @Test("an app's test steps the clock with the public helper until what it waits for came")
  func publicClockHelper() async throws {
    // As docs/replay.md shows it: no hand-written stepping, no real sleeps in the test.
    let clock = ManualClock()
    let replay = try ReplayConnector(
      recordingAt: fixturePath("ublox-m8-drive"), profile: .ublox(.m8), clock: clock)
    let receiver = GPSReceiver(connector: replay, clock: clock)
    let log = EventLog(receiver.subscribe(bufferSize: 64))
    let started = clock.now
    let arrived = await clock.advance(upTo: .seconds(60), reading: replay) { log.fixes.count >= 5 }
    #expect(arrived, "\(log.statuses)")
    // Stepped, not jumped: the five fixes came within a few 100-ms steps of the fifth epoch.
    #expect(clock.now - started >= .seconds(5))
    #expect(clock.now - started < .seconds(10), "\(clock.now - started)")
    #expect(!replay.hasUnreadBytes)
    expectSame(Array(log.fixes.prefix(5)), decodedFixes(replay.recording).prefix(5))
    // What never comes gives up at the virtual limit, with no real wait for it.
    let never = await clock.advance(upTo: .seconds(2), reading: replay) { false }
    #expect(!never)
    log.stop()
    #expect(await shutDown(receiver, advancing: clock, reading: replay))
  }

  @Test("the README example compiles and does what it says")
  func readmeExample() async throws {
    // Kept word for word in README.md and docs/replay.md.
    let clock = ManualClock()
    let replay = try ReplayConnector(
      recordingAt: fixturePath("ublox-m8-drive"), profile: .ublox(.m8), clock: clock)
    let receiver = GPSReceiver(connector: replay, clock: clock)

    var events = receiver.subscribe().makeAsyncIterator()
    clock.advance(by: .seconds(10))  // ten epochs come due
    var fixes: [Fix] = []
    while fixes.count < 10, let event = await events.next() {
      if case .fix(let update) = event { fixes.append(update.fix) }
    }
    #expect(fixes.last?.mode == .threeD)
    // -- end of the example
    expectSame(fixes, decodedFixes(replay.recording).prefix(10))
    // Woken with the u-blox commands (UBX-CFG-MSG, then UBX-CFG-RST GNSS start).
    #expect(await replay.waitForCommand(matching: isGNSSStart) != nil)
    await receiver.shutdown()
  }
}

@Suite("the chip a recording came from")
struct InferredProfileTests {
  @Test(
    "from the stream's own clues, else the Chipset header",
    arguments: [
      ("ublox-m8-drive", ReceiverProfile.ublox(.m8)),  // $GPTXT PROTVER=18.00
      ("noisy-ublox", .ublox(.m8)),  // UBX frames
      ("rtk-high-precision", .ublox(.m9)),  // header: ZED-F9P
      ("mtk-cold-start", .mediatek),  // $PMTK010
      ("sirf-4800", .sirf),  // header: SiRFstarIII
      ("midnight-rollover", .generic),
    ])
  func inferred(fixture: String, profile: ReceiverProfile) throws {
    #expect(ReceiverProfile.inferred(from: try loadFixture(fixture)) == profile)
  }
}

@Suite("the received log is bounded")
struct ReceivedLimitTests {
  @Test("a model keeps the newest inputs up to its limit and counts the rest")
  func modelLimit() {
    var model = ReceiverModel(profile: .mediatek, receivedLimit: 3)
    for number in 0..<5 {
      _ = model.receive(NMEAChecksum.frame("PMTK220,\(1000 + number)"), at: .seconds(number))
    }
    #expect(model.received.count == 3)
    #expect(model.receivedForgotten == 2)
    #expect(model.received.map(\.at) == [.seconds(2), .seconds(3), .seconds(4)])
    model.receivedLimit = 1
    #expect(model.received.map(\.at) == [.seconds(4)])
    #expect(model.receivedForgotten == 4)
  }
}
