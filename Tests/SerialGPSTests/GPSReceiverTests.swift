import Chipsets
import NMEA
import POSIX
import Testing

@testable import SerialGPS

@Suite struct GPSReceiverTests {
  func makeReceiver(
    linger: Duration = .seconds(5), replayExpiry: Duration = .seconds(10),
    chipset: ChipsetChoice = .automatic, connector: MemoryConnector = MemoryConnector(),
    clock: ManualClock = ManualClock()
  ) -> (GPSReceiver, MemoryConnector, ManualClock) {
    var options = GPSReceiver.Options()
    options.linger = linger
    options.replayExpiry = replayExpiry
    options.chipset = chipset
    options.reconnectDelay = .milliseconds(500)
    options.acknowledgementTimeout = .milliseconds(200)
    return (GPSReceiver(connector: connector, options: options, clock: clock), connector, clock)
  }

  @Test func nothingOpensWithoutSubscribers() async throws {
    let (receiver, connector, _) = makeReceiver()
    receiver.hold(for: .zero)  // a hold that has already ended powers nothing
    try await Task.sleep(for: .milliseconds(50))
    #expect(connector.opens == 0)
    await receiver.shutdown()
    #expect(connector.opens == 0)
  }

  @Test func firstSubscriberPowersOnAndFixesStream() async throws {
    let (receiver, connector, _) = makeReceiver()
    let log = EventLog(receiver.subscribe())
    #expect(await eventually { connector.opens == 1 })
    connector.latest!.feed(cycle(second: 1) + cycle(second: 2))
    #expect(await eventually { log.fixes.count >= 1 })
    let first = log.fixes[0]
    #expect(first.fix.time == UTCTime(hour: 12, minute: 0, second: 1))
    #expect(first.fix.mode == .threeD)
    #expect(first.isReplay == false)
    #expect(log.statuses.prefix(2) == [.poweringOn, .streaming])
    log.stop()
    await receiver.shutdown()
    #expect(connector.latest!.isClosed)
  }

  @Test func lingerThenPowerOffAfterTheLastSubscription() async throws {
    let (receiver, connector, clock) = makeReceiver(linger: .seconds(5))
    let events = receiver.subscribe()
    #expect(await eventually { connector.opens == 1 })
    events.cancel()
    #expect(await eventually { clock.sleeperCount == 1 })  // the linger timer
    #expect(!connector.latest!.isClosed)
    clock.advance(by: .seconds(4))
    try await Task.sleep(for: .milliseconds(20))
    #expect(!connector.latest!.isClosed)
    clock.advance(by: .seconds(1))
    #expect(await eventually { connector.latest!.isClosed })
    #expect(receiver.statistics.powerOffs == 1)
    await receiver.shutdown()
  }

  @Test func returningSubscriberCancelsTheLingerAndRestartsNothing() async throws {
    let (receiver, connector, clock) = makeReceiver(linger: .seconds(5))
    let first = receiver.subscribe()
    #expect(await eventually { connector.opens == 1 })
    first.cancel()
    #expect(await eventually { clock.sleeperCount == 1 })
    clock.advance(by: .seconds(3))
    let second = receiver.subscribe()
    #expect(await eventually { clock.sleeperCount == 0 })  // the linger was cancelled
    clock.advance(by: .seconds(10))
    try await Task.sleep(for: .milliseconds(20))
    #expect(connector.opens == 1)
    #expect(!connector.latest!.isClosed)
    second.cancel()
    #expect(await eventually { clock.sleeperCount == 1 })
    clock.advance(by: .seconds(5))
    #expect(await eventually { connector.latest!.isClosed })
    await receiver.shutdown()
  }

  @Test func newcomerGetsTheLatestFixWithItsAge() async throws {
    let (receiver, connector, clock) = makeReceiver(replayExpiry: .seconds(10))
    let first = EventLog(receiver.subscribe())
    #expect(await eventually { connector.opens == 1 })
    connector.latest!.feed(cycle(second: 1) + cycle(second: 2))
    #expect(await eventually { first.fixes.count == 1 })
    clock.advance(by: .seconds(3))
    let second = EventLog(receiver.subscribe())
    #expect(await eventually { second.fixes.count == 1 })
    let replay = second.fixes[0]
    #expect(replay.isReplay)
    #expect(replay.age == .seconds(3))
    #expect(replay.fix.time == UTCTime(hour: 12, minute: 0, second: 1))
    first.stop()
    second.stop()
    await receiver.shutdown()
  }

  @Test func anExpiredFixIsNotReplayed() async throws {
    let (receiver, connector, clock) = makeReceiver(replayExpiry: .seconds(10))
    let first = EventLog(receiver.subscribe())
    #expect(await eventually { connector.opens == 1 })
    connector.latest!.feed(cycle(second: 1) + cycle(second: 2))
    #expect(await eventually { first.fixes.count == 1 })
    clock.advance(by: .seconds(11))
    let second = EventLog(receiver.subscribe())
    // The status and any replayed fix are queued together when subscribe() returns: once the
    // collector has the first, a replayed fix would be right behind it.
    #expect(await eventually { !second.statuses.isEmpty })
    try await Task.sleep(for: .milliseconds(50))
    #expect(second.fixes.isEmpty)
    #expect(second.statuses == [.streaming])  // the current status, at once
    first.stop()
    second.stop()
    await receiver.shutdown()
  }

  /// A suspend, modelled as one jump of the clock (docs/receiver.md, *Time and suspend*): the
  /// linger that was running has ended by the resume, and the fix from before the suspend has
  /// aged by all of it: replayed with that age while younger than the expiry, not at all after
  /// a longer suspend.
  @Test func aSuspendCountsForTheLingerAndTheAgeOfTheReplayedFix() async throws {
    let (receiver, connector, clock) = makeReceiver(
      linger: .seconds(5), replayExpiry: .seconds(600))
    let first = EventLog(receiver.subscribe())
    #expect(await eventually { connector.opens == 1 })
    connector.latest!.feed(cycle(second: 1) + cycle(second: 2))
    #expect(await eventually { first.fixes.count == 1 })
    first.stop()
    #expect(await eventually { clock.sleeperCount == 1 })  // the linger
    clock.advance(by: .seconds(120))  // suspended for two minutes
    #expect(await eventually { connector.latest!.isClosed })
    #expect(receiver.statistics.powerOffs == 1)

    let second = EventLog(receiver.subscribe())
    #expect(await eventually { second.fixes.count == 1 })
    #expect(second.fixes[0].isReplay)
    #expect(second.fixes[0].age == .seconds(120))
    #expect(second.fixes[0].fix.time == UTCTime(hour: 12, minute: 0, second: 1))
    #expect(await eventually { connector.opens == 2 })
    second.stop()
    #expect(await eventually { clock.sleeperCount == 1 })
    clock.advance(by: .seconds(3600))  // an hour: longer than the replay expiry
    #expect(await eventually { receiver.statistics.powerOffs == 2 })

    let third = EventLog(receiver.subscribe())
    #expect(await eventually { !third.statuses.isEmpty })
    try await Task.sleep(for: .milliseconds(50))
    #expect(third.fixes.isEmpty)
    third.stop()
    await receiver.shutdown()
  }

  /// The system clock and the driver's timer agree: a sleep on `SystemClock` ends at its
  /// deadline as `ContinuousClock` (`CLOCK_BOOTTIME`, the clock that counts a suspend) tells
  /// it, never before.
  @Test func theSystemClockSleepsOnTheClockItReads() async throws {
    let clock = SystemClock()
    for length in [Duration.milliseconds(1), .milliseconds(15), .milliseconds(40)] {
      let continuousDeadline = ContinuousClock.now + length
      let deadline = clock.now + length  // read after: not earlier than continuousDeadline
      try await clock.sleep(until: deadline)
      #expect(clock.now >= deadline)
      #expect(ContinuousClock.now >= continuousDeadline)
    }
  }

  /// One origin per process: instants read from two `SystemClock`s made at different times
  /// compare, so an app can age a fix with a clock of its own.
  @Test func everySystemClockReadsTheSameTime() async throws {
    let first = SystemClock()
    try await first.sleep(for: .milliseconds(30))
    let second = SystemClock()
    let before = first.now
    let between = second.now
    let after = first.now
    #expect(before <= between && between <= after, "\(before) \(between) \(after)")
    // A deadline read from one clock is kept by a sleep on the other.
    let deadline = first.now + .milliseconds(10)
    try await second.sleep(until: deadline)
    #expect(first.now >= deadline)
    #expect(first.now - deadline < .seconds(1), "woke at the deadline, not 30 ms late or early")
  }

  /// A fix kept by the app ages: `age` stays what it was at delivery, `age(at:)` is how old
  /// the fix is now on the receiver's clock, and the replay of the same fix agrees.
  @Test func aKeptFixAges() async throws {
    let (receiver, connector, clock) = makeReceiver(replayExpiry: .seconds(10))
    clock.advance(by: .seconds(100))
    let log = EventLog(receiver.subscribe())
    #expect(await eventually { connector.opens == 1 })
    connector.latest!.feed(cycle(second: 1) + cycle(second: 2))
    #expect(await eventually { log.fixes.count == 1 })
    let kept = log.fixes[0]
    #expect(kept.arrival == .origin + .seconds(100))
    clock.advance(by: .seconds(5))
    #expect(kept.age == .zero)
    #expect(kept.age(at: clock.now) == .seconds(5))
    let replay = try #require(receiver.replay)
    #expect(replay.arrival == kept.arrival)
    #expect(replay.age == replay.age(at: clock.now))
    log.stop()
    await receiver.shutdown()
  }

  /// `replay` is what a new subscriber would be replayed (the hub's one rule: the latest fix
  /// with its age, until the replay expiry); `latestFix` is that fix whatever its age.
  @Test func replayAndLatestFixAnswerAsTheHubReplays() async throws {
    let (receiver, connector, clock) = makeReceiver(replayExpiry: .seconds(10))
    #expect(receiver.replay == nil)
    #expect(receiver.latestFix == nil)
    let first = EventLog(receiver.subscribe())
    #expect(await eventually { connector.opens == 1 })
    connector.latest!.feed(cycle(second: 1) + cycle(second: 2))
    #expect(await eventually { first.fixes.count == 1 })
    let fix = try #require(first.fixes.first?.fix)
    clock.advance(by: .seconds(4))
    let arrival = DriverInstant.origin
    #expect(
      receiver.replay == FixUpdate(fix: fix, age: .seconds(4), isReplay: true, arrival: arrival))
    #expect(
      receiver.latestFix
        == FixUpdate(fix: fix, age: .seconds(4), isReplay: true, arrival: arrival))
    clock.advance(by: .seconds(7))
    #expect(receiver.replay == nil, "older than the replay expiry")
    #expect(
      receiver.latestFix
        == FixUpdate(fix: fix, age: .seconds(11), isReplay: true, arrival: arrival))
    first.stop()
    await receiver.shutdown()
  }

  @Test func holdPowersOnWithoutSubscribersAndEnds() async throws {
    let (receiver, connector, clock) = makeReceiver(linger: .zero)
    receiver.hold(for: .seconds(30))
    #expect(await eventually { connector.opens == 1 })
    #expect(await eventually { clock.sleeperCount == 1 })
    clock.advance(by: .seconds(29))
    try await Task.sleep(for: .milliseconds(20))
    #expect(!connector.latest!.isClosed)
    clock.advance(by: .seconds(1))
    #expect(await eventually { connector.latest!.isClosed })
    await receiver.shutdown()
  }

  @Test func unplugDuringStreamingReconnectsWhileSubscribed() async throws {
    let (receiver, connector, clock) = makeReceiver()
    let log = EventLog(receiver.subscribe())
    #expect(await eventually { connector.opens == 1 })
    connector.latest!.feed(cycle(second: 1) + cycle(second: 2))
    #expect(await eventually { log.fixes.count == 1 })
    connector.failNextOpen("still unplugged")
    connector.latest!.hangUp()
    #expect(
      await eventually {
        log.statuses.contains { if case .disconnected = $0 { true } else { false } }
      })
    #expect(await eventually { connector.latest!.isClosed })
    #expect(await eventually { clock.sleeperCount == 1 })
    clock.advance(by: .milliseconds(500))  // first retry: fails
    #expect(await eventually { clock.sleeperCount == 1 && connector.opens == 1 })
    try await Task.sleep(for: .milliseconds(20))
    clock.advance(by: .seconds(1))  // second retry (doubled backoff): the device is back
    #expect(await eventually { connector.opens == 2 })
    #expect(await eventually { log.statuses.contains(.reconnected) })
    connector.latest!.feed(cycle(second: 5) + cycle(second: 6))
    // The cycle end suspected before the unplug is confirmed at 5→6, so the 6th epoch is out
    // at its last sentence, without waiting for a 7th.
    #expect(await eventually { log.fixes.count == 3 })
    #expect(log.fixes.map { $0.fix.time?.second } == [1, 5, 6])
    #expect(receiver.statistics.connectionsLost == 1)
    log.stop()
    await receiver.shutdown()
    #expect(connector.overlaps == 0)
  }

  @Test func aReceiverThatNeverSendsIsStillClosedAfterTheLastSubscription() async throws {
    let (receiver, connector, clock) = makeReceiver(linger: .seconds(1))
    let events = receiver.subscribe()
    #expect(await eventually { connector.opens == 1 })
    events.cancel()
    #expect(await eventually { clock.sleeperCount == 1 })
    clock.advance(by: .seconds(1))
    #expect(await eventually { connector.latest!.isClosed })
    await receiver.shutdown()
  }

  @Test func droppingTheSequenceEndsTheSubscription() async throws {
    let (receiver, connector, clock) = makeReceiver(linger: .zero)
    do {
      let events = receiver.subscribe()
      // Held until the port is open: a subscription dropped before the power-on starts
      // opens nothing at all (the controller converges on the demand left).
      #expect(await eventually { connector.opens == 1 })
      _ = events
    }
    #expect(await eventually { connector.latest?.isClosed == true })
    _ = clock
    await receiver.shutdown()
  }

  @Test func taskCancellationEndsTheSubscription() async throws {
    let (receiver, connector, _) = makeReceiver(linger: .zero)
    let events = receiver.subscribe()
    let task = Task {
      var count = 0
      for await _ in events { count += 1 }
      return count
    }
    #expect(await eventually { connector.opens == 1 })
    task.cancel()
    _ = await task.value
    #expect(await eventually { connector.latest!.isClosed })
    await receiver.shutdown()
  }

  @Test func callbackSubscriptionEndsWhenReleased() async throws {
    let (receiver, connector, _) = makeReceiver(linger: .zero)
    let count = Locked(0)
    var subscription: Subscription? = receiver.subscribe { event in
      if case .fix = event { count.withLock { $0 += 1 } }
    }
    #expect(await eventually { connector.opens == 1 })
    connector.latest!.feed(cycle(second: 1) + cycle(second: 2))
    #expect(await eventually { count.withLock { $0 } == 1 })
    _ = subscription
    subscription = nil
    #expect(await eventually { connector.latest!.isClosed })
    await receiver.shutdown()
  }

  @Test func aSlowSubscriberLosesOldFixesNotTheOthers() async throws {
    let (receiver, connector, _) = makeReceiver()
    let slow = receiver.subscribe(bufferSize: 2)
    let fast = EventLog(receiver.subscribe())
    #expect(await eventually { connector.opens == 1 })
    var text = ""
    for second in 1...21 { text += cycle(second: second) }
    connector.latest!.feed(text)
    // Once the builder has learned that GGA ends each cycle, the 21st epoch is out at once.
    #expect(await eventually { fast.fixes.count == 21 })
    #expect(slow.droppedEvents > 0)
    // The newest events won: the slow subscriber still gets the latest fix, and the status.
    var iterator = slow.makeAsyncIterator()
    var received: [ReceiverEvent] = []
    while received.count < 2, let event = await iterator.next() { received.append(event) }
    #expect(received.first == .status(.streaming))
    guard case .fix(let last) = received.last else {
      Issue.record("expected the newest fix, got \(received)")
      return
    }
    #expect(last.fix.time?.second == 21)
    fast.stop()
    slow.cancel()
    await receiver.shutdown()
  }

  @Test func shutdownEndsSubscriptions() async throws {
    let (receiver, connector, _) = makeReceiver()
    let events = receiver.subscribe()
    #expect(await eventually { connector.opens == 1 })
    await receiver.shutdown()
    var iterator = events.makeAsyncIterator()
    while await iterator.next() != nil {}
    #expect(connector.latest!.isClosed)
    // After shutdown nothing powers on again.
    _ = receiver.subscribe()
    try await Task.sleep(for: .milliseconds(20))
    #expect(connector.opens == 1)
  }
}

/// A command set whose wake-up needs an acknowledgement that never comes.
struct UnansweredWakeUp: ReceiverCommandSet {
  var family: ChipsetFamily { .mediatek }
  var powerOnSteps: [CommandStep] {
    [
      CommandStep(
        bytes: Array("$PMTK314,0*00\r\n".utf8), summary: "select",
        acknowledgement: .mtk(command: 314))
    ]
  }
  var powerOffSteps: [CommandStep] {
    [CommandStep(bytes: Array("$PMTK161,0*28\r\n".utf8), summary: "standby")]
  }
  var powerProfile: PowerProfile {
    PowerProfile(offState: .standby, wakesOverSerial: true, hotStartMilliseconds: nil)
  }
}

@Suite struct ShutdownDuringPowerOnTests {
  @Test(.timeLimit(.minutes(1))) func shutdownAbandonsAnUnansweredWakeUpAndSendsTheStandby()
    async throws
  {
    let connector = MemoryConnector()
    var options = GPSReceiver.Options()
    options.chipset = .custom(UnansweredWakeUp())
    options.acknowledgementTimeout = .seconds(1)
    options.commandAttempts = 3
    let clock = ManualClock()
    let receiver = GPSReceiver(connector: connector, options: options, clock: clock)
    let events = receiver.subscribe()
    #expect(await eventually { connector.latest?.writes.count == 1 })
    // The clock never moves: without abandoning, the wake-up would wait for ever.
    await receiver.shutdown()
    let writes = connector.latest!.writes.map { String(decoding: $0, as: UTF8.self) }
    #expect(writes == ["$PMTK314,0*00\r\n", "$PMTK161,0*28\r\n"])
    #expect(connector.latest!.isClosed)
    events.cancel()
  }
}

@Suite struct CycleKnowledgeTests {
  @Test func theFirstFixAfterAPowerOnComesWithItsOwnEpochNotTheNext() async throws {
    let connector = MemoryConnector()
    var options = GPSReceiver.Options()
    options.linger = .zero
    let receiver = GPSReceiver(connector: connector, options: options, clock: ManualClock())
    // First session: three cycles, enough to learn that GGA ends each one.
    let first = EventLog(receiver.subscribe())
    #expect(await eventually { connector.opens == 1 })
    connector.latest!.feed(cycle(second: 1) + cycle(second: 2) + cycle(second: 3))
    #expect(await eventually { first.fixes.count == 3 })
    first.stop()
    #expect(await eventually { connector.latest!.isClosed })
    // Second session: a single cycle is a fix at once, without waiting for the next one.
    let second = EventLog(receiver.subscribe())
    #expect(await eventually { connector.opens == 2 })
    connector.latest!.feed(cycle(second: 30))
    #expect(await eventually { second.fixes.contains { !$0.isReplay } })
    #expect(second.fixes.last?.fix.time == UTCTime(hour: 12, minute: 0, second: 30))
    second.stop()
    await receiver.shutdown()
  }
}
