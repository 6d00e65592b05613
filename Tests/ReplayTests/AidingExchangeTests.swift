import Chipsets
import NMEA
import Replay
import Simulator
import Testing

/// A planned wake's power-on steps (``ReceiverCommandSet/powerOnSteps(for:)``) run through the
/// one command runner (``CommandExchange``) against the simulator's receiver model: what the
/// model receives is the aiding the driver meant (the time of each attempt's writing, the last
/// position), and its answers end the right steps.
@Suite struct AidingExchangeTests {
  /// Simulated time as an instant, for the exchange.
  struct SimInstant: InstantProtocol {
    var elapsed: Duration
    func advanced(by duration: Duration) -> SimInstant { SimInstant(elapsed: elapsed + duration) }
    func duration(to other: SimInstant) -> Duration { other.elapsed - elapsed }
    static func < (lhs: SimInstant, rhs: SimInstant) -> Bool { lhs.elapsed < rhs.elapsed }
  }

  /// The acknowledgements in what the model sent.
  static func acknowledgements(_ replies: [[UInt8]]) -> [ReceiverAcknowledgement] {
    var framer = NMEAFramer()
    var found: [ReceiverAcknowledgement] = []
    framer.feed(replies.flatMap { $0 }) { frame in
      switch frame {
      case .ubx(let view): if let ack = ReceiverAcknowledgement(view) { found.append(ack) }
      case .sentence(let raw):
        if let sentence = try? Sentence(parsing: raw), let ack = ReceiverAcknowledgement(sentence) {
          found.append(ack)
        }
      case .sirf, .rtcm3, .casic: break
      }
    }
    return found
  }

  /// Runs `steps` from `start` as the gated receiver does (3 attempts, 1 s each, settle times
  /// kept), each attempt made with the simulator's UTC at its writing; returns each step's
  /// outcome and the bytes of every write.
  static func run(
    _ steps: [CommandStep], on model: inout ReceiverModel, from start: Duration
  ) -> (outcomes: [CommandOutcome], writes: [[UInt8]], end: Duration) {
    var now = start
    var outcomes: [CommandOutcome] = []
    var writes: [[UInt8]] = []
    func utc(_ at: Duration) -> UTCTimestamp? { model.physics?.utc(at: at) }
    for step in steps {
      var exchange = CommandExchange<SimInstant>(step: step, attempts: 3, timeout: .seconds(1))
      var action = exchange.start(utc: utc(now))
      var pending: [ReceiverAcknowledgement] = []
      exchanging: while true {
        switch action {
        case .write(let bytes):
          writes.append(bytes)
          pending = acknowledgements(model.receive(bytes, at: now))
          action = exchange.written(now: SimInstant(elapsed: now))
        case .wait(let deadline):
          if !pending.isEmpty {
            let answer = pending.removeFirst()
            action =
              exchange.answered(answer, now: SimInstant(elapsed: now), utc: utc(now))
              ?? .wait(until: deadline)
          } else {
            now = deadline.elapsed
            pending = acknowledgements(model.advance(to: now))
            action =
              pending.isEmpty
              ? exchange.timedOut(heard: true, now: deadline, utc: utc(now)) : action
          }
        case .listen:
          Issue.record("\(step.summary): no wake-up step is confirmed by silence")
          break exchanging
        case .finished(let outcome):
          outcomes.append(outcome)
          now += step.settle
          break exchanging
        }
      }
    }
    return (outcomes, writes, now)
  }

  static func physics(_ figures: ReceiverFigures) -> PhysicsConfiguration {
    PhysicsConfiguration(
      figures: figures, timeScale: 1, seed: 1, backupPower: false, initialKnowledge: .nothing)
  }

  /// Where the receiver last was: a fix a minute before `now`, 5 m, 45 m above the ellipsoid.
  static func lastFix(before now: UTCTimestamp) -> KnownPosition {
    KnownPosition(
      latitude: -33.8567844, longitude: 151.2152967, heightAboveEllipsoid: 45, altitudeMSL: nil,
      accuracy: 5,
      time: UTCTimestamp(
        secondsSinceUnixEpoch: now.secondsSinceUnixEpoch - 60,
        nanoseconds: now.time.nanoseconds))
  }

  @Test func ubloxNineTakesTheAidingBeforeItsStartAndAnswersEachMessage() throws {
    var model = ReceiverModel(
      profile: .ublox(.m9), power: .gnssStopped, physics: Self.physics(.ubloxM9))
    let start = Duration.seconds(1)
    let now = try #require(model.physics?.utc(at: start))
    let context = WakeContext(
      now: now, timeAccuracy: .milliseconds(100), family: .ublox,
      lastPosition: Self.lastFix(before: now), slept: .seconds(3600), keptBackup: false)
    let set = UbloxCommandSet(UbloxOptions(generation: .m9AndLater, port: .usb))
    let steps = set.powerOnSteps(for: context)
    let run = Self.run(steps, on: &model, from: start)
    #expect(run.outcomes.allSatisfy { $0.succeeded }, "\(run.outcomes)")
    // ACKAIDING, TIME_UTC and POS_LLH each acknowledged at the first attempt, the MGA ones
    // by MGA-ACK for their own type.
    let answers = run.outcomes.compactMap { outcome -> ReceiverAcknowledgement? in
      if case .acknowledged(let answer, 1, 1, nil) = outcome { return answer }
      return nil
    }
    #expect(answers.contains(.mga(.mgaIni, messageType: 0x10, accepted: true, infoCode: 0)))
    #expect(answers.contains(.mga(.mgaIni, messageType: 0x01, accepted: true, infoCode: 0)))
    let aiding = try #require(model.physics?.aiding)
    #expect(aiding.count == 2)
    #expect(aiding.allSatisfy { $0.usable })
    #expect(aiding.map(\.phase) == [.beforeAcquisition, .beforeAcquisition])
    guard case .time(let given, let accuracy) = aiding[0].content else {
      Issue.record("time first: \(aiding)")
      return
    }
    #expect(abs(given.unixTime - aiding[0].utcThen.unixTime) < 1)
    #expect(accuracy == 0.1)
    guard case .position(let latitude, let longitude, let altitude, let metres) = aiding[1].content
    else {
      Issue.record("then the position: \(aiding)")
      return
    }
    #expect(abs(latitude - -33.8567844) < 1e-7 && abs(longitude - 151.2152967) < 1e-7)
    #expect(altitude == 45)
    // 5 m widened by a minute (and the few hundred milliseconds of the steps) at 50 m/s.
    let widened = try #require(metres)
    #expect(widened >= 3005 && widened < 3030)
    // The GNSS start came after: the start is aided.
    #expect(model.physics?.starts.last?.kind == .aided)
  }

  /// MediaTek: woken from standby, then `$PMTK740` and `$PMTK741`, each answered by
  /// `$PMTK001`, before the sentence selection.
  @Test func mediatekTakesTheTimeAndPositionAfterItsWake() throws {
    var model = ReceiverModel(
      profile: .mediatek, power: .standby, physics: Self.physics(.mediatekMT3339))
    let start = Duration.seconds(1)
    let planned = try #require(model.physics?.utc(at: start))
    let context = WakeContext(
      now: planned, timeAccuracy: .milliseconds(100), family: .mediatek,
      lastPosition: Self.lastFix(before: planned), keptBackup: false)
    let steps = MediaTekCommandSet().powerOnSteps(for: context)
    #expect(steps.count == 4)
    let run = Self.run(steps, on: &model, from: start)
    #expect(run.outcomes.allSatisfy { $0.succeeded }, "\(run.outcomes)")
    #expect(run.outcomes.count == 4)
    let aiding = try #require(model.physics?.aiding)
    let time = try #require(aiding.first)
    guard case .time(let given, _) = time.content else {
      Issue.record("time first: \(aiding)")
      return
    }
    // Whole seconds: within a second of the chip's UTC when it arrived.
    #expect(time.utcThen.unixTime - given.unixTime >= 0)
    #expect(time.utcThen.unixTime - given.unixTime < 1)
    #expect(aiding.count == 2)
    if case .position(let latitude, let longitude, _, _) = aiding.last?.content {
      #expect(abs(latitude - -33.856784) < 1e-6 && abs(longitude - 151.215297) < 1e-6)
    } else {
      Issue.record("then the position: \(aiding)")
    }
  }
}
