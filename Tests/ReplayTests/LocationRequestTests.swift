import Chipsets
import Foundation
import NMEA
import Replay
import SerialGPS
import Simulator
import Testing

/// Location requests through the real gated receiver, on the simulated MediaTek (hot start
/// 1 s, error 25 m converging on 3 m, data-sheet currents) and a virtual clock: the
/// scheduler's decisions reach the chip.
@Suite struct LocationRequestThroughTheDriverTests {
  /// A MediaTek in standby with a fresh ephemeris, under a receiver with a 5-s linger (which
  /// requests must not pay).
  func bench() throws -> (ManualClock, ReplayConnector, GPSReceiver) {
    let clock = ManualClock()
    let physics = PhysicsConfiguration(
      figures: .mediatekMT3339, initialKnowledge: .ephemeris(age: .zero))
    let replay = ReplayConnector(
      recording: try loadFixture("mtk-cold-start"),
      configuration: .init(
        profile: .mediatek, loops: true, initialPowerState: .standby,
        wakeDelay: .milliseconds(100), physics: physics),
      clock: clock)
    // With GST on, so that the fixes carry the error estimate the requests compare.
    var options = receiverOptions(
      linger: .seconds(5),
      chipset: .custom(
        MediaTekCommandSet(sentences: NMEASelection([.gga, .gsa, .gsv, .rmc, .gst]))))
    options.awakeMarkers = nil
    let receiver = GPSReceiver(connector: replay, options: options, clock: clock)
    return (clock, replay, receiver)
  }

  @Test("a 60-s request of 10 m: one fix a minute, the receiver in standby in between")
  func intervalRequest() async throws {
    let (clock, replay, receiver) = try bench()
    let log = EventLog(
      try receiver.subscribe(LocationRequest(interval: .seconds(60), accuracy: 10)))
    defer { log.stop() }
    // The first wake collects the ephemeris (30 s of tracking), then a wake a minute.
    #expect(
      await advance(clock, by: .milliseconds(200), upTo: .seconds(200)) {
        log.updates.count >= 4
      })
    let updates = log.updates
    #expect(updates.allSatisfy { ($0.fix.horizontalAccuracy ?? 99) <= 10 }, "\(updates)")
    let arrivals = updates.map(\.arrival)
    // The fixes after the first a minute apart, give or take the clock's 200-ms steps.
    for (earlier, later) in zip(arrivals, arrivals.dropFirst()).dropFirst() {
      let gap = later - earlier
      #expect(gap > .milliseconds(59_000) && gap < .milliseconds(61_000), "\(arrivals)")
    }
    // Asleep between the wakes: most of the time in standby, every start hot.
    let energy = try #require(replay.energy)
    let standby = energy.time(in: .standby)
    let awake = energy.time(in: .acquisition) + energy.time(in: .tracking)
    #expect(standby > awake * 2, "\(energy)")
    #expect(replay.starts.allSatisfy { $0.kind == .hot }, "\(replay.starts)")
    #expect(replay.starts.count >= 3 && replay.starts.count <= 5)
    // No linger after a scheduled wake: in standby within a second of the last delivery.
    #expect(
      await advance(clock, by: .milliseconds(200), upTo: .seconds(1)) {
        replay.powerState == .standby
      })
    #expect(receiver.statistics.unexpectedPolicyEvents == 0)
    #expect(await shutDown(receiver, advancing: clock))
  }

  @Test("one-shot: wakes for the first fix of 10 m, releases at once; then the cache answers")
  func oneShot() async throws {
    let (clock, replay, receiver) = try bench()
    let result = Locked<Result<FixUpdate, any Error>?>(nil)
    let asked = Task {
      let outcome = await outcome {
        try await receiver.location(accuracy: 10, timeout: .seconds(30))
      }
      result.set(outcome)
    }
    #expect(await advance(clock, upTo: .seconds(20)) { result.value != nil })
    let fix = try #require(try result.value?.get())
    #expect((fix.fix.horizontalAccuracy ?? 99) <= 10)
    #expect(!fix.isReplay)
    // Released without the 5-s linger.
    #expect(await advance(clock, upTo: .seconds(1)) { replay.powerState == .standby })
    _ = await asked.value
    let starts = replay.starts.count
    clock.advance(by: .seconds(10))
    // Young and good enough: from the cache, nothing woken.
    let cached = try await receiver.location(
      accuracy: 10, timeout: .seconds(30), maxAge: .seconds(30))
    #expect(cached.isReplay && cached.fix == fix.fix)
    #expect(cached.age >= .seconds(10))
    #expect(replay.starts.count == starts)
    #expect(replay.powerState == .standby)
    #expect(await shutDown(receiver, advancing: clock))
  }

  @Test("one-shot timing out throws with the best fix seen, and leaves the receiver in standby")
  func oneShotTimeout() async throws {
    let (clock, replay, receiver) = try bench()
    let result = Locked<Result<FixUpdate, any Error>?>(nil)
    Task {
      result.set(await outcome { try await receiver.location(accuracy: 0.5, timeout: .seconds(8)) })
    }
    #expect(await advance(clock, upTo: .seconds(12)) { result.value != nil })
    guard case .failure(let error) = result.value, let timeout = error as? LocationTimeout else {
      Issue.record("expected a LocationTimeout, got \(String(describing: result.value))")
      return
    }
    let best = try #require(timeout.best?.fix.horizontalAccuracy)
    #expect(best > 0.5 && best < 25)
    #expect(timeout.description.contains("0.5 m"))
    #expect(await advance(clock, upTo: .seconds(1)) { replay.powerState == .standby })
    #expect(await shutDown(receiver, advancing: clock))
  }

  @Test("a request the driver cannot meet throws why, at once, and powers nothing")
  func refusedRequestsThrow() async throws {
    let (clock, replay, receiver) = try bench()
    do {
      _ = try await receiver.location(accuracy: 0, timeout: .seconds(8))
      Issue.record("location(accuracy: 0) returned a fix")
    } catch let refused as LocationRequestRefused {
      #expect(refused.reason == .accuracy(0))
      #expect(refused.description.contains("refused") && refused.description.contains("above 0"))
    }
    do {
      _ = try await receiver.location(timeout: .microseconds(500))
      Issue.record("a 0.5 ms timeout returned a fix")
    } catch let refused as LocationRequestRefused {
      #expect(refused.reason == .duration(.microseconds(500)))
    }
    for interval in [Duration.zero, .microseconds(100), .seconds(-1)] {
      #expect(throws: LocationRequestRefused(.interval(interval))) {
        _ = try receiver.subscribe(LocationRequest(interval: interval))
      }
      #expect(throws: LocationRequestRefused(.interval(interval))) {
        _ = try receiver.subscribe(LocationRequest(interval: interval)) { _ in }
      }
    }
    #expect(
      LocationRequestRefused(.interval(.zero)).description
        == "location request refused: an interval of 0.0 s is not one the driver can count: "
        + "ask for one of at least 0.001 s")
    #expect(LocationRequest(interval: .milliseconds(1)).refusal == nil)
    #expect(LocationRequest.duration(seconds: 0.0001) == nil)
    #expect(LocationRequest.duration(seconds: 0.0015) == .milliseconds(2))
    #expect(await advance(clock, upTo: .seconds(1)) { true })
    #expect(replay.starts.isEmpty, "nothing was woken")
    #expect(await shutDown(receiver, advancing: clock))
  }

  @Test("a passive request never wakes the receiver")
  func passiveNeverWakes() async throws {
    let (clock, replay, receiver) = try bench()
    let log = EventLog(
      try receiver.subscribe(LocationRequest(interval: .seconds(5), passive: true)))
    defer { log.stop() }
    #expect(!(await advance(clock, upTo: .seconds(30)) { replay.powerState != .standby }))
    #expect(replay.starts.isEmpty)
    // Another subscriber's power: the passive request gets fixes, one per 5 s.
    let other = EventLog(receiver.subscribe())
    #expect(
      await advance(clock, by: .milliseconds(200), upTo: .seconds(30)) { log.updates.count >= 3 })
    other.stop()
    let arrivals = log.updates.map(\.arrival)
    for (earlier, later) in zip(arrivals, arrivals.dropFirst()) {
      #expect(later - earlier >= .milliseconds(4000), "\(arrivals)")
    }
    #expect(await shutDown(receiver, advancing: clock))
  }
}

/// A value shared between a task and the test.
final class Locked<Value: Sendable>: @unchecked Sendable {  // `value` only under `lock`
  private let lock = NSLock()
  private var stored: Value
  init(_ value: Value) { stored = value }
  var value: Value { lock.withLock { stored } }
  func set(_ value: Value) { lock.withLock { stored = value } }
}

func outcome<T: Sendable>(_ body: () async throws -> T) async -> Result<T, any Error> {
  do {
    return .success(try await body())
  } catch {
    return .failure(error)
  }
}
