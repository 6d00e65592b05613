import Chipsets
import Foundation
import NMEA
import Replay
import SerialGPS
import SerialPort
import Simulator
import Testing

/// The physics of the receiver model, driven with plain times: starts, no-fix epochs, the
/// error and its estimate, ephemeris, aiding, sleeps, pins and the energy meter.
// One test at a time: each runs the model and decodes every epoch synchronously, and side by
// side under ThreadSanitizer they would hold both threads of the cooperative pool for seconds.
@Suite(.serialized) struct ReceiverPhysicsTests {
  func s(_ value: Double) -> Duration { Self.s(value) }
  static func s(_ value: Double) -> Duration { .milliseconds(Int64((value * 1000).rounded())) }

  /// One rendered epoch, decoded on its own.
  struct Epoch {
    let at: Duration
    let bytes: [UInt8]
    let fix: Fix
    /// The recording's own fix in the same epoch.
    let truth: Fix
    var hasFix: Bool { fix.position != nil }
  }

  /// A model of `profile`'s chip on `fixture`'s fix epochs, running from `start`.
  struct Bench {
    var model: ReceiverModel
    var playback: Playback
    let recording: Recording

    init(
      _ fixture: String, profile: ReceiverProfile, physics: PhysicsConfiguration,
      power: SimulatedPowerState = .running, wakeDelay: Duration = .milliseconds(50)
    ) throws {
      recording = try loadFixture(fixture)
      model = ReceiverModel(
        profile: profile, power: power, wakeDelay: wakeDelay, physics: physics,
        recordingStart: recording.firstTimestamp, epochInterval: recording.nominalInterval)
      playback = Playback(recording: recording.fixEpochs, loops: true)
    }

    /// The epoch due at `at`, rendered and decoded.
    mutating func epoch(at time: Duration) -> Epoch {
      _ = model.advance(to: time)
      let burst = playback.next()!.burst
      let bytes = model.epoch(recording.bytes(of: burst), at: time)
      return Epoch(
        at: time, bytes: bytes, fix: Self.decode(bytes[...]),
        truth: Self.decode(recording.bytes(of: burst)))
    }

    static func decode(_ bytes: ArraySlice<UInt8>) -> Fix {
      var decoder = NMEADecoder()
      var fix = Fix()
      decoder.decode(bytes) { if case .epoch(let epoch) = $0 { fix = epoch.fix } }
      decoder.finish { if case .epoch(let epoch) = $0 { fix = epoch.fix } }
      return fix
    }

    /// Epochs every second from `from` for `count` seconds.
    mutating func run(from start: Duration, seconds count: Int) -> [Epoch] {
      (0..<count).map { epoch(at: start + .seconds($0)) }
    }

    mutating func send(_ bytes: [UInt8], at time: Duration) -> [[UInt8]] {
      model.receive(bytes, at: time)
    }

    mutating func send(_ sentence: String, at time: Duration) -> [[UInt8]] {
      model.receive(NMEAChecksum.frame(sentence), at: time)
    }
  }

  func physics(
    _ figures: ReceiverFigures, knowing knowledge: PhysicsConfiguration.InitialKnowledge,
    backup: Bool = true, scale: Double = 1, seed: UInt64 = 1
  ) -> PhysicsConfiguration {
    PhysicsConfiguration(
      figures: figures, timeScale: scale, seed: seed, backupPower: backup,
      initialKnowledge: knowledge)
  }

  /// The first epoch with a position, from a start at zero with epochs at 1, 2, … s.
  func firstFix(_ epochs: [Epoch]) -> Epoch? { epochs.first(where: \.hasFix) }

  // MARK: Starts

  @Test(arguments: [
    (StartKind.hot, PhysicsConfiguration.InitialKnowledge.ephemeris(age: .seconds(600))),
    (.warm, .almanac),
    (.warm, .ephemeris(age: .seconds(5 * 3600))),
    (.cold, .nothing),
  ])
  func mediatekStartTakesTheDataSheetTime(
    kind: StartKind, knowledge: PhysicsConfiguration.InitialKnowledge
  ) throws {
    var bench = try Bench(
      "mtk-cold-start", profile: .mediatek, physics: physics(.mediatekMT3339, knowing: knowledge))
    let epochs = bench.run(from: .seconds(1), seconds: 60)
    let fix = try #require(firstFix(epochs))
    let expected = ReceiverFigures.mediatekMT3339.timeToFirstFix(kind)
    // The first epoch at or after the data sheet's time carries the fix (1 Hz epochs).
    #expect(fix.at >= expected && fix.at < expected + .seconds(1), "\(kind): \(fix.at)")
    #expect(bench.model.physics?.starts.first?.kind == kind)
    #expect(bench.model.physics?.starts.first?.timeToFirstFix == fix.at)
    // Every epoch before it has no fix, and is there (the chip writes its no-fix sentences).
    #expect(epochs.prefix { !$0.hasFix }.allSatisfy { $0.fix.mode == .noFix })
    #expect(epochs.filter(\.hasFix).count == epochs.count - Int(expected / .seconds(1)) + 1)
  }

  @Test(arguments: [
    (ReceiverFigures.ubloxM8, StartKind.hot), (.ubloxM8, .cold), (.ubloxM9, .hot),
    (.ubloxM9, .cold), (.ubloxM10, .cold),
  ])
  func ubloxStartTakesTheDataSheetTime(figures: ReceiverFigures, kind: StartKind) throws {
    let knowledge: PhysicsConfiguration.InitialKnowledge =
      kind == .hot ? .ephemeris(age: .zero) : .nothing
    var bench = try Bench(
      "ublox-m8-drive", profile: .ublox(.m8), physics: physics(figures, knowing: knowledge))
    let fix = try #require(firstFix(bench.run(from: .seconds(1), seconds: 40)))
    let expected = figures.timeToFirstFix(kind)
    #expect(fix.at >= expected && fix.at < expected + .seconds(1), "\(figures) \(kind)")
  }

  @Test func noFixEpochsCarryTimeOnlyOnceTheReceiverKnowsIt() throws {
    // Cold: no time for the first 6 s (the first hand-over word), then time without a fix.
    var cold = try Bench(
      "mtk-cold-start", profile: .mediatek, physics: physics(.mediatekMT3339, knowing: .nothing))
    let epochs = cold.run(from: .seconds(1), seconds: 36)
    for epoch in epochs where !epoch.hasFix {
      #expect((epoch.fix.time != nil) == (epoch.at >= .seconds(6)), "\(epoch.at)")
    }
    // The sentences are MediaTek's no-fix forms.
    let first = String(decoding: epochs[0].bytes, as: UTF8.self)
    #expect(first.contains("$GPRMC,,V,,,,,,,,,,N*"))
    #expect(first.contains("$GPGGA,,,,,,0,0,,,M,,M,,*"))
    // Warm: the RTC ran, so every epoch has the time, and the time is the simulator's UTC.
    var warm = try Bench(
      "mtk-cold-start", profile: .mediatek, physics: physics(.mediatekMT3339, knowing: .almanac))
    let warmEpochs = warm.run(from: .seconds(1), seconds: 5)
    let utcOrigin = try #require(warm.recording.firstTimestamp)
    for epoch in warmEpochs {
      #expect(!epoch.hasFix)
      let time = try #require(epoch.fix.time)
      #expect(
        time.nanosecondsOfDay
          == (utcOrigin.time.nanosecondsOfDay + Int64(epoch.at / .seconds(1)) * 1_000_000_000)
          % 86_400_000_000_000)
    }
  }

  // MARK: Accuracy

  @Test func errorShrinksAsReportedAndThePositionsCarryIt() throws {
    var bench = try Bench(
      "ublox-m8-drive", profile: .ublox(.m8), physics: physics(.ubloxM8, knowing: .nothing))
    let epochs = bench.run(from: .seconds(1), seconds: 200)
    let fixes = epochs.enumerated().filter { $0.element.hasFix }
    let reported = fixes.map { $0.element.fix.horizontalAccuracy! }
    // From about 25 m at the first fix to 1.2 × the 2.5 m CEP, never growing.
    #expect(abs(reported.first! - 25) < 0.2)
    #expect(abs(reported.last! - 3.0) < 0.1)
    #expect(zip(reported, reported.dropFirst()).allSatisfy { $1 <= $0 + 0.01 })
    // After a cold start the time constant is 10 s: within 1 m of 10 m after 10·ln(22/7) s.
    let at10 = reported[Int((10 * log(22.0 / 7.0)).rounded())]
    #expect(abs(at10 - 10) < 1, "\(at10)")
    // The positions really are off by that much: the radial RMS of the actual error over
    // the converged epochs is within a factor of 2 of the reported one.
    func error(_ pair: (offset: Int, element: Epoch)) -> Double {
      let fix = pair.element.fix
      let true_ = pair.element.truth
      let north = (fix.latitude! - true_.latitude!) * 111_195
      let east = (fix.longitude! - true_.longitude!) * 111_195 * cos(true_.latitude! * .pi / 180)
      return (north * north + east * east).squareRoot()
    }
    let converged = fixes.suffix(120)
    let rms = (converged.map { error($0) * error($0) }.reduce(0, +) / Double(converged.count))
      .squareRoot()
    #expect(rms > 1.5 && rms < 6, "\(rms)")
    // And near the first fix the error is large.
    let early = fixes.prefix(3).map(error).max()!
    #expect(early > 5, "\(early)")
  }

  @Test func adjustedFiguresSetTheHotStartAndTheConvergence() throws {
    let figures = try #require(
      ReceiverFigures.ubloxM8.adjusted(
        hotStart: s(2.5), firstFixError: 40, convergedError: 4, hotConvergence: s(2)))
    #expect(
      figures.name
        == "u-blox M8 (SAM-M8Q) [hot start 2.50 s, first error 40 m, converged 4 m, tau 2 s]")
    var bench = try Bench(
      "ublox-m8-drive", profile: .ublox(.m8),
      physics: physics(figures, knowing: .ephemeris(age: .zero)))
    let epochs = bench.run(from: .seconds(1), seconds: 30)
    // The first epoch at or after 2.5 s carries the fix, 40 m off as reported; from it the
    // error reaches 10 m after 2·ln(36/6) = 3.58 s, on the epoch at 7 s.
    let first = try #require(firstFix(epochs))
    #expect(first.at == .seconds(3))
    #expect(bench.model.physics?.starts.first?.kind == .hot)
    #expect(abs(first.fix.horizontalAccuracy! - 40) < 0.1)
    let reported = epochs.filter(\.hasFix).map { ($0.at, $0.fix.horizontalAccuracy!) }
    let firstWithin10 = try #require(reported.first { $0.1 <= 10 })
    #expect(firstWithin10.0 == .seconds(7), "\(reported)")
    #expect(abs(reported.last!.1 - 4) < 0.1)
    // The presets stay as they are; values that make no receiver are refused.
    #expect(ReceiverFigures.ubloxM8.adjusted() == .ubloxM8)
    #expect(ReceiverFigures.ubloxM8.adjusted(convergedError: 30) == nil)
    #expect(ReceiverFigures.ubloxM8.adjusted(hotStart: .zero) == nil)
  }

  @Test func theFirstFixAfterNoFixEpochsKeepsItsEstimateInOneStream() throws {
    // A hot start of 2.5 s: two no-fix epochs, from which one decoder learns where a cycle
    // ends, then the fix whose GST must stay inside its epoch.
    let figures = try #require(ReceiverFigures.ubloxM8.adjusted(hotStart: s(2.5)))
    var bench = try Bench(
      "ublox-m8-drive", profile: .ublox(.m8),
      physics: physics(figures, knowing: .ephemeris(age: .zero)))
    let bytes = bench.run(from: .seconds(1), seconds: 6).flatMap(\.bytes)
    var decoder = NMEADecoder()
    var fixes: [Fix] = []
    func take(_ output: DecoderEvent) {
      if case .epoch(let epoch) = output, epoch.fix.position != nil { fixes.append(epoch.fix) }
    }
    decoder.decode(bytes[...], take)
    decoder.finish(take)
    #expect(fixes.count == 4)
    let first = try #require(fixes.first)
    #expect(abs((first.horizontalAccuracy ?? 0) - 25) < 0.1, "\(first)")
  }

  @Test func theErrorsAreSeeded() throws {
    func bytes(seed: UInt64) throws -> [UInt8] {
      var bench = try Bench(
        "ublox-m8-drive", profile: .ublox(.m8),
        physics: physics(.ubloxM8, knowing: .ephemeris(age: .zero), seed: seed))
      return bench.run(from: .seconds(1), seconds: 20).flatMap(\.bytes)
    }
    #expect(try bytes(seed: 7) == bytes(seed: 7))
    #expect(try bytes(seed: 7) != bytes(seed: 8))
  }

  @Test func gstIsAddedWhenTheHostSwitchesItOn() throws {
    var bench = try Bench(
      "mtk-cold-start", profile: .mediatek,
      physics: physics(.mediatekMT3339, knowing: .ephemeris(age: .zero)))
    #expect(bench.epoch(at: .seconds(2)).fix.horizontalAccuracy == nil)  // MTK sends no GST
    let selection = MediaTekCommandSet(sentences: NMEASelection([.rmc, .gga, .gst]))
      .sentenceSelection
    _ = bench.send(selection.bytes, at: s(2.5))
    let epoch = bench.epoch(at: .seconds(3))
    #expect(epoch.hasFix)
    let accuracy = try #require(epoch.fix.horizontalAccuracy)
    #expect(accuracy > ReceiverFigures.mediatekMT3339.convergedError && accuracy < 25.1)
  }

  // MARK: Ephemeris

  @Test func ephemerisIsCollectedOnlyByContinuousTracking() throws {
    let figures = ReceiverFigures.mediatekMT3339
    let warm = Int(figures.warmStart / .seconds(1))
    // Warm start, 20 s of tracking after the fix, standby for an hour: warm again.
    var short = try Bench(
      "mtk-cold-start", profile: .mediatek, physics: physics(figures, knowing: .almanac))
    _ = short.run(from: .seconds(1), seconds: warm + 20)
    _ = short.send("PMTK161,0", at: .seconds(warm + 21))
    #expect(short.model.power == .standby)
    _ = short.send([0x0D, 0x0A], at: .seconds(warm + 21 + 3600))
    _ = short.run(from: .seconds(warm + 22 + 3600), seconds: 2)
    #expect(short.model.physics?.starts.map(\.kind) == [.warm, .warm])
    // 30 s of tracking collects it: the next start is hot …
    var long = try Bench(
      "mtk-cold-start", profile: .mediatek, physics: physics(figures, knowing: .almanac))
    _ = long.run(from: .seconds(1), seconds: warm + 31)
    let asleep = warm + 32
    _ = long.send("PMTK161,0", at: .seconds(asleep))
    _ = long.send([0x0D, 0x0A], at: .seconds(asleep + 3600))
    let fix = try #require(firstFix(long.run(from: .seconds(asleep + 3601), seconds: 5)))
    #expect(fix.at == .seconds(asleep + 3601))  // 1 s after the wake
    #expect(long.model.physics?.starts.map(\.kind) == [.warm, .hot])
    // … until it is 4 h old.
    _ = long.run(from: .seconds(asleep + 3606), seconds: 40)
    _ = long.send("PMTK161,0", at: .seconds(asleep + 3646))
    _ = long.send([0x0D, 0x0A], at: .seconds(asleep + 3646 + 4 * 3600))
    _ = long.run(from: .seconds(asleep + 3647 + 4 * 3600), seconds: 1)
    #expect(long.model.physics?.starts.map(\.kind) == [.warm, .hot, .warm])
  }

  @Test func timeScaleDividesEveryPhysicalTime() throws {
    // At ×60, a cold start of 32 s takes 0.53 s (the fix on the epoch at 0.6 s) and
    // ephemeris expires after 4 min.
    let due = ReceiverFigures.mediatekMT3339.coldStart / 60
    var bench = try Bench(
      "mtk-cold-start", profile: .mediatek,
      physics: physics(.mediatekMT3339, knowing: .nothing, scale: 60))
    var at = Duration.zero
    var fixAt: Duration?
    while fixAt == nil, at < .seconds(2) {
      at += .milliseconds(100)
      if bench.epoch(at: at).hasFix { fixAt = at }
    }
    #expect(
      fixAt.map { $0 >= due && $0 < due + .milliseconds(100) } == true,
      "\(String(describing: fixAt))")
    #expect(bench.model.physics?.configuration.scaled(.seconds(4 * 3600)) == .seconds(240))
    #expect(bench.model.physics?.configuration.description.contains("×60") == true)
    // 0.5 s of tracking is 30 s of the receiver's: collected.
    _ = bench.epoch(at: .milliseconds(1200))
    _ = bench.send("PMTK161,0", at: .milliseconds(1200))
    _ = bench.send([0x0D, 0x0A], at: .seconds(200))
    _ = bench.send("PMTK161,0", at: .milliseconds(200_100))
    _ = bench.send([0x0D, 0x0A], at: .seconds(500))
    #expect(bench.model.physics?.starts.map(\.kind) == [.cold, .hot, .warm])
  }

  // MARK: Backup power and aiding

  @Test func losingBackupPowerMakesTheNextStartCold() throws {
    var bench = try Bench(
      "ublox-m8-drive", profile: .ublox(.m8),
      physics: physics(.ubloxM8, knowing: .ephemeris(age: .zero)))
    _ = bench.run(from: .seconds(1), seconds: 5)
    // With the battery a power cut keeps everything: hot.
    bench.model.powerCycle(at: .seconds(10))
    _ = bench.run(from: .seconds(11), seconds: 2)
    // Without it: cold, and no time until it is decoded.
    bench.model.setBackupPower(false, at: .seconds(20))
    bench.model.powerCycle(at: .seconds(30))
    let epochs = bench.run(from: .seconds(31), seconds: 30)
    #expect(bench.model.physics?.starts.map(\.kind) == [.hot, .hot, .cold])
    #expect(epochs.first?.fix.time == nil)
    #expect(firstFix(epochs)?.at == .seconds(56))  // 26 s after the power-up
    // An unplug without backup loses it too.
    bench.model.unplug(at: .seconds(100))
    bench.model.plugIn(at: .seconds(200))
    #expect(bench.model.physics?.starts.last?.kind == .cold)
  }

  @Test func mediatekAidingIsRecordedAcknowledgedAndShortensAColdStartOnlyWhereItCan() throws {
    // The MT3339 figures give no warm start below the cold one, so aiding cannot bring their
    // fix forward; an aided time 5 s below the cold start shows what aiding does where it can.
    var figures = ReceiverFigures.mediatekMT3339
    figures.aidedStart = figures.coldStart - .seconds(5)
    var bench = try Bench(
      "mtk-cold-start", profile: .mediatek,
      physics: physics(figures, knowing: .nothing, backup: false))
    let utc = bench.model.physics!.utc(at: .seconds(1))
    let time =
      "PMTK740,\(utc.date.year),\(utc.date.month),\(utc.date.day),\(utc.time.hour),"
      + "\(utc.time.minute),\(utc.time.second)"
    #expect(bench.send(time, at: .seconds(1)) == [NMEAChecksum.frame("PMTK001,740,3")])
    let position =
      "PMTK741,-33.8600,151.2100,45.0,\(utc.date.year),\(utc.date.month),\(utc.date.day),"
      + "\(utc.time.hour),\(utc.time.minute),\(utc.time.second)"
    #expect(bench.send(position, at: s(1.2)) == [NMEAChecksum.frame("PMTK001,741,3")])
    let aiding = bench.model.physics!.aiding
    #expect(aiding.count == 2)
    #expect(aiding[0].content == .time(utc, accuracySeconds: nil))
    #expect(aiding[0].at == .seconds(1))
    #expect(aiding[0].phase == .duringAcquisition)
    #expect(
      aiding[1].content
        == .position(latitude: -33.86, longitude: 151.21, altitude: 45, accuracyMetres: nil))
    #expect(aiding.allSatisfy { $0.usable })
    // The start counts as aided, its fix due the aided time after the later message.
    let start = try #require(bench.model.physics?.starts.last)
    #expect(start.kind == .aided)
    #expect(start.fixDue == s(1.2) + figures.aidedStart)
    // A time 20 s off is recorded and not used.
    let wrong = bench.model.physics!.utc(at: .seconds(-19))
    _ = bench.send(
      "PMTK740,\(wrong.date.year),\(wrong.date.month),\(wrong.date.day),\(wrong.time.hour),"
        + "\(wrong.time.minute),\(wrong.time.second)", at: .seconds(2))
    #expect(bench.model.physics?.aiding.last?.usable == false)
    // Malformed aiding is refused as MediaTek refuses it.
    #expect(
      bench.send("PMTK740,2026,13,1,0,0,0", at: .seconds(3)) == [
        NMEAChecksum.frame("PMTK001,740,0")
      ])
    // With the data sheet's figures the same aiding would make the fix later: the start stays
    // cold, its fix due at the cold time.
    let preset = ReceiverFigures.mediatekMT3339
    var plain = try Bench(
      "mtk-cold-start", profile: .mediatek,
      physics: physics(preset, knowing: .nothing, backup: false))
    _ = plain.send(time, at: .seconds(1))
    _ = plain.send(position, at: s(1.2))
    #expect(plain.model.physics?.aiding.count == 2)
    #expect(plain.model.physics?.starts.last?.kind == .cold)
    #expect(plain.model.physics?.starts.last?.fixDue == preset.coldStart)
  }

  @Test func ubloxAidingIsDecodedAndAcknowledgedWhenAsked() throws {
    var bench = try Bench(
      "ublox-m8-drive", profile: .ublox(.m9),
      physics: physics(.ubloxM9, knowing: .nothing), power: .gnssStopped)
    let utc = bench.model.physics!.utc(at: .seconds(1))
    var time: [UInt8] = [0x10, 0x00, 0x00, 0x12]
    time += UBXTestBytes.u16(utc.date.year) + [utc.date.month, utc.date.day]
    time += [utc.time.hour, utc.time.minute, utc.time.second, 0]
    time += UBXTestBytes.u32(250_000_000) + UBXTestBytes.u16(2) + [0, 0] + UBXTestBytes.u32(0)
    let timeFrame = try UBX.frame(UBXMessageID(0x13, 0x40), payload: time)
    // Without acknowledgements switched on: taken silently.
    #expect(bench.send(timeFrame, at: .seconds(1)).isEmpty)
    #expect(bench.model.received.last?.outcome == .carriedOut)
    // CFG-NAVSPG-ACKAIDING on: each MGA-INI answered by MGA-ACK-DATA0.
    let valset = try UBX.frame(
      .cfgValset, payload: [0, 1, 0, 0] + UBXTestBytes.u32(0x1011_0025) + [1])
    #expect(
      bench.send(valset, at: s(1.1)) == [
        UBX.acknowledgement(for: .cfgValset, accepted: true)
      ])
    var position: [UInt8] = [0x01, 0x00, 0x00, 0x00]
    position += UBXTestBytes.i32(-338_600_000) + UBXTestBytes.i32(1_512_100_000)
    position += UBXTestBytes.i32(4500) + UBXTestBytes.u32(5000)
    let replies = bench.send(
      try UBX.frame(UBXMessageID(0x13, 0x40), payload: position), at: s(1.2))
    #expect(
      replies == [
        try UBX.frame(UBXMessageID(0x13, 0x60), payload: [1, 0, 0, 0x40, 0x01, 0x00, 0x00, 0x00])
      ])
    let aiding = bench.model.physics!.aiding
    #expect(aiding.map(\.phase) == [.beforeAcquisition, .beforeAcquisition])
    guard case .time(let given, let accuracy) = aiding[0].content else {
      Issue.record("not a time: \(aiding[0])")
      return
    }
    #expect(given.date == utc.date && given.time.second == utc.time.second)
    #expect(given.time.nanoseconds == 250_000_000)
    #expect(accuracy == 2)
    #expect(
      aiding[1].content
        == .position(latitude: -33.86, longitude: 151.21, altitude: 45, accuracyMetres: 50))
    // Given before the GNSS start: the start is aided from the start, and for u-blox no
    // faster than cold (its data sheets give no warm figure below the cold one).
    _ = bench.send(UbloxCommandSet.gnssStart.bytes, at: .seconds(2))
    let start = try #require(bench.model.physics?.starts.last)
    #expect(start.kind == .aided)
    #expect(start.fixDue == .seconds(2) + ReceiverFigures.ubloxM9.aidedStart)
  }

  // MARK: Sleeps and pins

  @Test func mediatekBackupIgnoresBytesAndWakesOnForceOn() throws {
    var bench = try Bench(
      "mtk-cold-start", profile: .mediatek,
      physics: physics(.mediatekMT3339, knowing: .ephemeris(age: .zero)))
    #expect(bench.send("PMTK225,4", at: .seconds(1)) == [NMEAChecksum.frame("PMTK001,225,3")])
    #expect(bench.model.power == .hibernate)
    _ = bench.send([0x0D, 0x0A], at: .seconds(2))
    _ = bench.send(MediaTekCommandSet.standby.bytes, at: .seconds(3))
    #expect(bench.model.power == .hibernate)
    #expect(bench.model.received.suffix(2).allSatisfy { $0.outcome == .lost })
    // FORCE_ON low does nothing; high wakes it, with everything kept: a hot start.
    bench.model.drivePin(.forceOn, high: false, at: .seconds(4))
    #expect(bench.model.power == .hibernate)
    bench.model.drivePin(.forceOn, high: true, at: .seconds(5))
    #expect(bench.model.power == .booting)
    #expect(bench.model.advance(to: s(5.05)) == [NMEAChecksum.frame("PMTK010,001")])
    #expect(bench.model.power == .running)
    #expect(bench.model.physics?.starts.last?.kind == .hot)
  }

  @Test func ubloxBackupWakesOnlyFromTheSourcesItWasGiven() throws {
    var bench = try Bench(
      "ublox-m8-drive", profile: .ublox(.m9),
      physics: physics(.ubloxM9, knowing: .ephemeris(age: .zero)))
    // 16-byte PMREQ: backup (bit 1), wake on extint0 only (bit 5).
    let pin = try UBX.frame(
      .rxmPmreq,
      payload: [0, 0, 0, 0] + UBXTestBytes.u32(0) + UBXTestBytes.u32(0x02) + UBXTestBytes.u32(0x20))
    _ = bench.send(pin, at: .seconds(1))
    #expect(bench.model.power == .backup)
    #expect(!bench.model.wakesOnBytes)
    _ = bench.send([UInt8](repeating: 0xFF, count: 8), at: .seconds(2))
    #expect(bench.model.power == .backup)
    #expect(bench.model.received.last?.outcome == .lost)
    bench.model.drivePin(.extint, high: true, at: .seconds(3))
    #expect(bench.model.power == .booting)
    // The driver's own PMREQ (uartrx) wakes on bytes, not on the pin.
    _ = bench.model.advance(to: .seconds(4))
    _ = bench.send(
      UbloxCommandSet(UbloxOptions(generation: .m9AndLater, port: .uart1)).backupRequest.bytes,
      at: .seconds(5))
    #expect(bench.model.power == .backup)
    bench.model.drivePin(.extint, high: false, at: .seconds(6))
    #expect(bench.model.power == .backup)
    _ = bench.send([0xFF], at: .seconds(7))
    #expect(bench.model.power == .booting)
  }

  @Test func mediatekPeriodicStandbyRunsItsDutyCycle() throws {
    var bench = try Bench(
      "mtk-cold-start", profile: .mediatek,
      physics: physics(.mediatekMT3339, knowing: .ephemeris(age: .zero)))
    _ = bench.run(from: .seconds(1), seconds: 2)  // a fix at 1 s
    #expect(
      bench.send("PMTK225,2,3000,12000,18000,72000", at: s(2.5)) == [
        NMEAChecksum.frame("PMTK001,225,3")
      ])
    _ = bench.model.advance(to: s(5.4))
    #expect(bench.model.power == .running)
    _ = bench.model.advance(to: s(5.5))
    #expect(bench.model.power == .standby)  // 3 s run
    _ = bench.model.advance(to: s(17.49))
    #expect(bench.model.power == .standby)
    _ = bench.model.advance(to: s(17.5))  // 12 s sleep, then a wake
    #expect(bench.model.power == .booting)
    let energy = try #require(bench.model.energy(at: s(17.5)))
    #expect(energy.time(in: .standby) == .seconds(12))
    // $PMTK225,0 ends it.
    _ = bench.model.advance(to: .seconds(18))
    _ = bench.send("PMTK225,0", at: .seconds(18))
    _ = bench.model.advance(to: .seconds(60))
    #expect(bench.model.power == .running)
    #expect(
      bench.send("PMTK225,2,10,12000", at: .seconds(61)) == [NMEAChecksum.frame("PMTK001,225,0")])
  }

  // MARK: Energy

  @Test func theMeterIntegratesAScriptedSequenceExactly() throws {
    let figures = ReceiverFigures.mediatekMT3339
    var bench = try Bench(
      "mtk-cold-start", profile: .mediatek,
      physics: physics(figures, knowing: .ephemeris(age: .zero)))
    _ = bench.run(from: .seconds(1), seconds: 10)  // acquisition 0–1 s, tracking 1–10 s
    _ = bench.send(MediaTekCommandSet.standby.bytes, at: .seconds(10))  // standby 10–70 s
    _ = bench.send([0x0D, 0x0A], at: .seconds(70))  // booting 70–70.05 s (acquisition)
    _ = bench.model.advance(to: s(70.05))
    _ = bench.epoch(at: s(71.05))  // hot start: fix at 71.05 s
    _ = bench.send("PMTK225,4", at: .seconds(80))  // backup from 80 s
    let report = try #require(bench.model.energy(at: .seconds(3680)))
    #expect(report.time(in: .acquisition) == .seconds(1) + .milliseconds(1050))
    #expect(report.time(in: .tracking) == .seconds(9) + .milliseconds(8950))
    #expect(report.time(in: .standby) == .seconds(60))
    #expect(report.time(in: .backup) == .seconds(3600))
    #expect(report.total == .seconds(3680))
    let expected =
      (25 * 2.05 + 20 * 17.95 + 0.2 * 60 + 0.007 * 3600) / 3600
    #expect(abs(report.milliampHours - expected) < 1e-12, "\(report)")
    #expect(report.entries[.acquisition] == 2)
  }
}

/// Little-endian fields for UBX payloads in tests.
enum UBXTestBytes {
  static func u16(_ value: Int) -> [UInt8] { [UInt8(value & 0xFF), UInt8(value >> 8 & 0xFF)] }
  static func u32(_ value: UInt32) -> [UInt8] { (0..<4).map { UInt8(value >> (8 * $0) & 0xFF) } }
  static func i32(_ value: Int32) -> [UInt8] { u32(UInt32(bitPattern: value)) }
}

/// The physics under the real gated receiver, in-process on a virtual clock and on a pty:
/// what the driver sees is what the model says.
@Suite struct PhysicsThroughTheDriverTests {
  @Test("in-process: a hot start's no-fix epoch, then fixes whose accuracy converges; the charge")
  func inProcessHotStartAndCharge() async throws {
    let clock = ManualClock()
    let physics = PhysicsConfiguration(figures: .ubloxM8, initialKnowledge: .ephemeris(age: .zero))
    let replay = ReplayConnector(
      recording: try loadFixture("ublox-m8-drive"),
      configuration: .init(profile: .ublox(.m8), interface: .usb, physics: physics), clock: clock)
    let receiver = GPSReceiver(connector: replay, options: receiverOptions(), clock: clock)
    // A buffer for all of them: twenty epochs come due in one advance.
    let log = EventLog(receiver.subscribe(bufferSize: 100))
    defer { log.stop() }
    #expect(await replay.waitForCommand(matching: isGNSSStart) != nil)
    clock.advance(by: .seconds(20))
    #expect(await eventually { log.fixes.count >= 19 })
    let fixes = log.fixes
    // The chip was running from the start (a hot start at 0 s, fix due at 1 s): the first
    // epoch (1 s) carries the fix; GST's estimate falls from 25 m towards 3 m.
    #expect(fixes.first?.mode == .threeD)
    let accuracies = fixes.compactMap(\.horizontalAccuracy)
    #expect(accuracies.count == fixes.count)
    #expect(abs(accuracies[0] - 25) < 0.2)
    #expect(accuracies.last! < 5)
    // The epoch times are the simulator's UTC, one second apart.
    let times = fixes.compactMap(\.timestamp?.unixTime)
    #expect(zip(times, times.dropFirst()).allSatisfy { abs($1 - $0 - 1) < 1e-6 })
    let energy = try #require(replay.energy)
    #expect(energy.time(in: .acquisition) == .seconds(1))
    #expect(energy.time(in: .tracking) == .seconds(19))
    #expect(abs(energy.milliampHours - (32 * 1 + 29 * 19) / 3600.0) < 1e-12)
    #expect(replay.starts.map(\.kind) == [.hot])
    await receiver.shutdown()
  }

  @Test("in-process: standby for an hour between two subscriptions, then a hot start; the charge")
  func standbyHourThenHotStart() async throws {
    let clock = ManualClock()
    let physics = PhysicsConfiguration(
      figures: .mediatekMT3339, initialKnowledge: .ephemeris(age: .zero))
    let replay = ReplayConnector(
      recording: try loadFixture("mtk-cold-start"),
      configuration: .init(
        profile: .mediatek, loops: true, initialPowerState: .standby,
        wakeDelay: .milliseconds(100), physics: physics),
      clock: clock)
    let receiver = GPSReceiver(
      connector: replay, options: receiverOptions(linger: .zero), clock: clock)
    let first = EventLog(receiver.subscribe(bufferSize: 100))
    #expect(await replay.waitUntil { !$0.received.isEmpty })
    // The driver's settle time (the chip boots in 100 ms), then its output commands.
    #expect(
      await advance(clock, upTo: .seconds(1)) {
        replay.receivedCommands.contains { if case .mtkSetNMEAOutput = $0 { true } else { false } }
      })
    clock.advance(to: .origin + .milliseconds(5100))  // epochs at 1.1 … 5.1 s
    #expect(await eventually { first.fixes.count >= 4 })
    #expect(first.fixes.first?.position != nil)  // hot: the first epoch has the fix
    first.stop()
    #expect(await replay.waitForPowerState(.standby))

    clock.advance(to: .origin + .seconds(3605))
    let second = EventLog(receiver.subscribe(bufferSize: 100))
    defer { second.stop() }
    #expect(await replay.waitUntil { $0.powerState == .booting })
    // The settle time, then the output commands; the hot start's first epoch at +1.1 s.
    #expect(
      await advance(clock, upTo: .seconds(1)) {
        replay.receivedCommands.filter { if case .mtkSetNMEAOutput = $0 { true } else { false } }
          .count == 2
      })
    #expect(await advance(clock, upTo: .seconds(3)) { second.fixes.count >= 1 })
    #expect(second.fixes.first?.position != nil)
    // Two hot starts (the ephemeris from before the simulation is an hour old: valid).
    #expect(replay.starts.map(\.kind) == [.hot, .hot])
    #expect(replay.starts.map(\.timeToFirstFix) == [.milliseconds(1100), .milliseconds(1100)])
    let energy = try #require(replay.energy)
    let standby = energy.time(in: .standby)
    #expect(standby > .seconds(3599) && standby < .seconds(3600))
    // About 2 × 1.1 s of acquisition at 25 mA, 5 s of tracking at 20 mA, an hour at 0.2 mA.
    #expect(energy.milliampHours > 0.2 && energy.milliampHours < 0.26, "\(energy)")
    #expect(await shutDown(receiver, advancing: clock))
  }

  @Test("on a pty: a cold start's epochs without time, then without a fix, then fixes")
  func ptyColdStart() async throws {
    let physics = PhysicsConfiguration(
      figures: .mediatekMT3339, timeScale: 10, initialKnowledge: .nothing)
    let simulator = try ReceiverSimulator(
      recording: try loadFixture("mtk-cold-start"),
      configuration: .init(
        profile: .mediatek, pace: .recorded(speed: 10), initialPowerState: .off,
        physics: physics))
    defer { simulator.stop() }
    // Unpowered until the port is open and read (opening discards what was queued).
    let port = try await openPort(simulator)
    defer { port.close() }
    let listener = PortListener(port, keepingBytes: true)
    simulator.powerCycle()
    func fixes() -> [Fix] {
      var decoder = NMEADecoder()
      var fixes: [Fix] = []
      decoder.decode(listener.receivedBytes) {
        if case .epoch(let epoch) = $0 { fixes.append(epoch.fix) }
      }
      return fixes
    }
    #expect(await eventually(timeout: .seconds(30)) { fixes().contains { $0.position != nil } })
    await listener.stop()
    let fixes = fixes()
    // 32 s of cold start at ×10: 3.2 s; the time decoded after 0.6 s. Epochs every 0.1 s
    // (exact timings are the pure model's tests; here the order on the wire): first epochs
    // without time, then time without a fix, then the fix.
    let firstFix = try #require(fixes.firstIndex { $0.position != nil })
    let firstTime = try #require(fixes.firstIndex { $0.time != nil })
    #expect(fixes.first?.time == nil)
    #expect(firstTime >= 1 && firstTime < firstFix - 20, "\(firstTime) \(firstFix)")
    #expect(fixes[..<firstTime].allSatisfy { $0.time == nil && $0.mode == .noFix })
    #expect(fixes[firstTime..<firstFix].allSatisfy { $0.time != nil && $0.mode == .noFix })
    let cold = ReceiverFigures.mediatekMT3339.coldStart / 10
    let ttff = try #require(simulator.starts.first?.timeToFirstFix)
    #expect(ttff >= cold && ttff < cold + .milliseconds(600), "\(ttff)")
    #expect(simulator.starts.first?.kind == .cold)
    #expect(simulator.energy?.time(in: .acquisition) ?? .zero >= cold - .milliseconds(100))
  }
}

/// u-blox navigation messages switched on by the host, encoded from the epoch's own NMEA.
@Suite struct UBXNavigationOutputTests {
  func frames(_ bytes: [UInt8]) -> [(UBXMessageID, [UInt8])] {
    var framer = NMEAFramer()
    var found: [(UBXMessageID, [UInt8])] = []
    framer.feed(bytes) {
      if case .ubx(let view) = $0 { found.append((UBXMessageID(view), Array(view.payload))) }
    }
    return found
  }

  func i32(_ p: [UInt8], _ i: Int) -> Int32 {
    Int32(
      bitPattern: UInt32(p[i]) | UInt32(p[i + 1]) << 8 | UInt32(p[i + 2]) << 16 | UInt32(p[i + 3])
        << 24)
  }
  func u32(_ p: [UInt8], _ i: Int) -> UInt32 { UInt32(bitPattern: i32(p, i)) }

  @Test("CFG-MSG (M8) and CFG-VALSET (M10) switch NAV-PVT/DOP/SAT/EOE on; PVT carries the epoch")
  func navigationMessagesFollowTheNMEA() throws {
    for (profile, figures) in [
      (ReceiverProfile.ublox(.m8), ReceiverFigures.ubloxM8), (.ublox(.m10), .ubloxM10),
    ] {
      let recording = try loadFixture("ublox-m8-drive")
      var model = ReceiverModel(
        profile: profile,
        physics: PhysicsConfiguration(figures: figures, initialKnowledge: .ephemeris(age: .zero)),
        recordingStart: recording.firstTimestamp)
      var playback = Playback(recording: recording.fixEpochs)
      let epoch1 = model.epoch(recording.bytes(of: playback.next()!.burst), at: .seconds(1))
      #expect(frames(epoch1).isEmpty)  // nothing switched on, and the recording's own left out
      let ids: [UInt8] = [0x07, 0x04, 0x35, 0x61]
      for id in ids {
        let command: [UInt8]
        if profile == .ublox(.m8) {
          command = try UBX.frame(.cfgMsg, payload: [0x01, id, 1])
        } else {
          let key = UBXOutputMessage(id: UBXMessageID(0x01, id))!.uart1Key!
          command = try UBX.frame(.cfgValset, payload: [0, 1, 0, 0] + UBXTestBytes.u32(key) + [1])
        }
        #expect(decodedAcks(model.receive(command, at: .seconds(1.5))) == 1)
      }
      let bytes = model.epoch(recording.bytes(of: playback.next()!.burst), at: .seconds(2))
      let found = frames(bytes)
      #expect(found.map(\.0) == ids.map { UBXMessageID(0x01, $0) })
      var decoder = NMEADecoder()
      var fix = Fix()
      decoder.decode(bytes) { if case .epoch(let e) = $0 { fix = e.fix } }
      decoder.finish { if case .epoch(let e) = $0 { fix = e.fix } }
      let pvt = found[0].1
      #expect(pvt.count == 92)
      #expect(pvt[20] == 3)  // 3D
      #expect(abs(Double(i32(pvt, 24)) / 1e7 - fix.longitude!) < 1e-7)
      #expect(abs(Double(i32(pvt, 28)) / 1e7 - fix.latitude!) < 1e-7)
      #expect(Int(pvt[10]) == Int(fix.time!.second))
      // hAcc: the model's error, which GST reports too.
      let hAcc = Double(u32(pvt, 40)) / 1000
      #expect(abs(hAcc - fix.horizontalAccuracy!) < 0.2, "\(hAcc) \(fix.horizontalAccuracy!)")
      // EOE and PVT carry the same time of week.
      #expect(found[3].1 == Array(pvt[0..<4]))
      #expect(Int(found[2].1[5]) == (found[2].1.count - 8) / 12)  // NAV-SAT: numSvs blocks
    }
  }

  func decodedAcks(_ replies: [[UInt8]]) -> Int {
    replies.flatMap(frames).filter { $0.0 == UBXMessageID(0x05, 0x01) }.count
  }
}
