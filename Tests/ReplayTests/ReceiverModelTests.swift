import Chipsets
import NMEA
import Replay
import Simulator
import Testing

/// The receiver behaviour as a state machine, with time as plain values in milliseconds.
@Suite struct ReceiverModelTests {
  func ms(_ value: Int) -> Duration { .milliseconds(value) }

  /// The acknowledgements (and other frames) in what the model sent back.
  func decoded(_ replies: [[UInt8]]) -> [ReceiverAcknowledgement] {
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

  // MARK: u-blox

  @Test func ubloxPowerOnStepsAreAcknowledgedAndRecordedExactly() {
    var model = ReceiverModel(profile: .ublox(.m8))
    let steps = UbloxCommandSet(UbloxOptions(port: .uart1)).powerOnSteps
    var acknowledgements: [ReceiverAcknowledgement] = []
    for (index, step) in steps.enumerated() {
      acknowledgements += decoded(model.receive(step.bytes, at: ms(index * 10)))
    }
    // Four CFG-MSG acknowledged; the wake burst and CFG-RST are not answered.
    #expect(acknowledgements == Array(repeating: .ubx(.cfgMsg, accepted: true), count: 4))
    #expect(model.received.map(\.bytes) == steps.map(\.bytes))
    #expect(model.received.first?.command == nil)
    #expect(model.received.first?.outcome == .ignored)  // 0xFF to a running receiver
    #expect(
      model.received.dropFirst().map(\.outcome) == [
        .acknowledged, .acknowledged, .acknowledged, .acknowledged, .carriedOut,
      ])
    #expect(model.received.last?.command == .ubxReset(navBbrMask: 0, resetMode: 0x09))
    #expect(model.power == .running)
  }

  @Test func ubloxGnssStopAndStart() {
    var model = ReceiverModel(profile: .ublox(.m8))
    #expect(model.receive(UbloxCommandSet.gnssStop.bytes, at: ms(0)).isEmpty)
    #expect(model.power == .gnssStopped)
    // Still answers while stopped.
    let ack = decoded(
      model.receive(UbloxCommandSet().selectionSteps[0].bytes, at: ms(10)))
    #expect(ack == [.ubx(.cfgMsg, accepted: true)])
    #expect(model.receive(UbloxCommandSet.gnssStart.bytes, at: ms(20)).isEmpty)
    #expect(model.power == .running)
    #expect(model.powerOffs == 1)
    #expect(model.powerOns == 1)
  }

  @Test func ubloxBackupWakesOnAnyByteAfterTheWakeDelay() {
    var model = ReceiverModel(profile: .ublox(.m8), wakeDelay: ms(100))
    let set = UbloxCommandSet(UbloxOptions(port: .uart1))
    _ = model.receive(set.backupRequest.bytes, at: ms(0))
    #expect(model.power == .backup)
    #expect(model.nextDeadline == nil)
    // A command sent to a sleeping receiver only wakes it: no answer.
    #expect(model.receive(set.selectionSteps[0].bytes, at: ms(1000)).isEmpty)
    #expect(model.power == .booting)
    #expect(model.received.last?.outcome == .wokeReceiver)
    #expect(model.received.last?.powerState == .backup)
    // Input while booting is lost.
    #expect(model.receive(set.selectionSteps[1].bytes, at: ms(1050)).isEmpty)
    #expect(model.received.last?.outcome == .lost)
    #expect(model.advance(to: ms(1099)).isEmpty)
    #expect(model.power == .booting)
    #expect(model.nextDeadline == ms(1100))
    _ = model.advance(to: ms(1100))
    #expect(model.power == .running)
    #expect(
      decoded(model.receive(set.selectionSteps[2].bytes, at: ms(1200))) == [
        .ubx(.cfgMsg, accepted: true)
      ])
  }

  /// What was due happens first, however late the caller asks: a command arriving after the
  /// wake delay is answered even if nobody called `advance` in between.
  @Test func inputAfterTheWakeDelayFindsTheChipRunning() {
    var model = ReceiverModel(profile: .mediatek, power: .standby, wakeDelay: ms(50))
    _ = model.receive(MediaTekCommandSet.wakeBytes, at: ms(0))
    #expect(model.power == .booting)
    let replies = model.receive(MediaTekCommandSet().sentenceSelection.bytes, at: ms(200))
    #expect(replies.first == NMEAChecksum.frame("PMTK010,001"))
    #expect(decoded(replies) == [.mtk(command: 314, result: .succeeded)])
    #expect(model.received.last?.outcome == .acknowledged)
  }

  @Test func ubloxTimedBackupWakesByItself() {
    var model = ReceiverModel(profile: .ublox(.m8), wakeDelay: ms(10))
    let request = try! UBX.frame(.rxmPmreq, payload: [0xE8, 0x03, 0, 0, 0x02, 0, 0, 0])  // 1 s
    _ = model.receive(request, at: ms(0))
    #expect(model.power == .backup)
    #expect(model.nextDeadline == ms(1000))
    _ = model.advance(to: ms(1000))
    #expect(model.power == .booting)
    _ = model.advance(to: ms(1010))
    #expect(model.power == .running)
  }

  @Test func ubloxRejectsWhatTheChipWould() {
    let m9Selection = UbloxCommandSet(UbloxOptions(generation: .m9AndLater)).selectionSteps[0]
    let m8Selection = UbloxCommandSet(UbloxOptions(generation: .m8AndOlder)).selectionSteps[0]

    var m8 = ReceiverModel(profile: .ublox(.m8))
    #expect(
      decoded(m8.receive(m9Selection.bytes, at: .zero)) == [.ubx(.cfgValset, accepted: false)])
    var m9 = ReceiverModel(profile: .ublox(.m9))
    #expect(decoded(m9.receive(m9Selection.bytes, at: .zero)) == [.ubx(.cfgValset, accepted: true)])
    #expect(decoded(m9.receive(m8Selection.bytes, at: .zero)) == [.ubx(.cfgMsg, accepted: true)])
    var m10 = ReceiverModel(profile: .ublox(.m10))
    #expect(decoded(m10.receive(m8Selection.bytes, at: .zero)) == [.ubx(.cfgMsg, accepted: false)])
    #expect(
      decoded(m10.receive(m9Selection.bytes, at: .zero)) == [.ubx(.cfgValset, accepted: true)])

    // An unknown key, no layer, an unknown CFG message, malformed payloads.
    let unknownKey = try! UBX.frame(.cfgValset, payload: [0, 1, 0, 0, 0x01, 0x00, 0x99, 0x20, 1])
    let noLayer = try! UBX.frame(.cfgValset, payload: [0, 0, 0, 0, 0xBB, 0x00, 0x91, 0x20, 1])
    let unknownCFG = try! UBX.frame(UBXMessageID(0x06, 0xEE), payload: [1, 2])
    let shortReset = try! UBX.frame(.cfgRst, payload: [0, 0, 8])
    let badMessageRate = try! UBX.frame(.cfgMsg, payload: [0xF0, 0x00, 1, 1])
    for frame in [unknownKey, noLayer, unknownCFG, shortReset, badMessageRate] {
      let answer = decoded(m9.receive(frame, at: .zero))
      #expect(answer.count == 1 && answer.first?.isPositive == false, "\(frame)")
    }
    #expect(m9.power == .running)  // the malformed CFG-RST did nothing
    // Messages outside class CFG are not acknowledged.
    #expect(m9.receive(try! UBX.frame(UBXMessageID(0x01, 0x07), payload: [1]), at: .zero).isEmpty)
    #expect(m9.received.last?.outcome == .ignored)
  }

  @Test func ubloxAnswersVersionAndRatePolls() {
    for model in UbloxModel.allCases {
      var receiver = ReceiverModel(profile: .ublox(model))
      let replies = receiver.receive(UbloxCommandSet.versionQuery.bytes, at: .zero)
      var version: UBXVersion?
      var framer = NMEAFramer()
      framer.feed(replies.flatMap { $0 }) { frame in
        if case .ubx(let view) = frame { version = UBXVersion(view) }
      }
      #expect(version?.hardware == model.version.hardware)
      #expect(
        version?.protocolVersion.map(UbloxGeneration.init)
          == (model == .m8 ? .m8AndOlder : .m9AndLater))
      #expect(receiver.received.last?.outcome == .answered)
    }
    var m8 = ReceiverModel(profile: .ublox(.m8))
    _ = m8.receive(try! UBX.frame(.cfgMsg, payload: [0xF0, 0x04, 1]), at: .zero)
    let replies = m8.receive(try! UBX.frame(.cfgMsg, payload: [0xF0, 0x04]), at: .zero)
    #expect(replies.first == (try! UBX.frame(.cfgMsg, payload: [0xF0, 0x04, 1, 1, 1, 1, 1, 1])))
    #expect(decoded(replies) == [.ubx(.cfgMsg, accepted: true)])
  }

  // MARK: MediaTek

  @Test func mediatekStandbyAndWake() {
    var model = ReceiverModel(profile: .mediatek, wakeDelay: ms(50))
    let set = MediaTekCommandSet()
    #expect(
      decoded(model.receive(MediaTekCommandSet.standby.bytes, at: ms(0))) == [
        .mtk(command: 161, result: .succeeded)
      ])
    #expect(model.power == .standby)
    #expect(model.powerOffs == 1)
    // The wake bytes: lost, but they wake the chip.
    #expect(model.receive(set.powerOnSteps[0].bytes, at: ms(1000)).isEmpty)
    #expect(model.received.last?.bytes == [0x0D, 0x0A])
    #expect(model.received.last?.outcome == .wokeReceiver)
    #expect(model.power == .booting)
    let startup = model.advance(to: ms(1050))
    #expect(startup == [NMEAChecksum.frame("PMTK010,001")])
    #expect(model.power == .running)
    #expect(
      decoded(model.receive(set.sentenceSelection.bytes, at: ms(1200))) == [
        .mtk(command: 314, result: .succeeded)
      ])
    #expect(model.powerOns == 1)
  }

  @Test func mediatekAnswersAsTheChipWould() {
    var model = ReceiverModel(profile: .mediatek)
    func answer(_ body: String) -> [ReceiverAcknowledgement] {
      decoded(model.receive(NMEAChecksum.frame(body), at: .zero))
    }
    #expect(answer("PMTK999,1") == [.mtk(command: 999, result: .unsupported)])
    #expect(answer("PMTK314,1,1") == [.mtk(command: 314, result: .invalidCommand)])
    #expect(answer("PMTK314,x") == [.mtk(command: 314, result: .invalidCommand)])
    #expect(answer("PMTK161,7") == [.mtk(command: 161, result: .invalidCommand)])
    #expect(answer("PMTK314,-1") == [.mtk(command: 314, result: .succeeded)])
    #expect(answer("PMTK220,1000") == [.mtk(command: 220, result: .succeeded)])
    #expect(answer("PMTK000") == [.mtk(command: 0, result: .succeeded)])
    #expect(model.power == .running)
    // A checksum error is ignored, as the chip ignores it; counted by the framer.
    var corrupted = MediaTekCommandSet.standby.bytes
    corrupted[corrupted.count - 3] = UInt8(ascii: "9")
    #expect(model.receive(corrupted, at: .zero).isEmpty)
    #expect(model.power == .running)
    #expect(model.inputStatistics.badChecksum == 1)
    #expect(model.received.last?.command == nil)
    #expect(model.received.last?.bytes == corrupted)
    // The release query identifies the chip.
    var identifier = ChipsetIdentifier()
    var framer = NMEAFramer()
    framer.feed(model.receive(NMEAChecksum.frame("PMTK605"), at: .zero).flatMap { $0 }) { frame in
      identifier.observe(frame)
    }
    #expect(identifier.identification.family == .mediatek)
  }

  @Test func mediatekBackupModeNeedsThePin() {
    var model = ReceiverModel(profile: .mediatek, wakeDelay: ms(10))
    _ = model.receive(NMEAChecksum.frame("PMTK225,4"), at: ms(0))
    #expect(model.power == .hibernate)
    _ = model.receive([0x0D, 0x0A], at: ms(100))
    #expect(model.power == .hibernate)
    #expect(model.received.last?.outcome == .lost)
    model.powerCycle(at: ms(200))
    #expect(model.power == .booting)
    #expect(
      model.advance(to: ms(210)) == [
        NMEAChecksum.frame("PMTK011,MTKGPS"), NMEAChecksum.frame("PMTK010,001"),
      ])
    #expect(model.power == .running)
  }

  // MARK: Response modes, SiRF, generic

  @Test func rejectingModeNaksAndChangesNothing() {
    var ublox = ReceiverModel(profile: .ublox(.m8), responses: .rejecting)
    #expect(
      decoded(ublox.receive(UbloxCommandSet().selectionSteps[0].bytes, at: .zero)) == [
        .ubx(.cfgMsg, accepted: false)
      ])
    var mtk = ReceiverModel(profile: .mediatek, responses: .rejecting)
    #expect(
      decoded(mtk.receive(MediaTekCommandSet.standby.bytes, at: .zero)) == [
        .mtk(command: 161, result: .failed)
      ])
    #expect(mtk.power == .running)
    #expect(mtk.rejections == 1)
  }

  @Test func aModelIgnoringBackupRequestsKeepsRunningAndStillStops() {
    let backup = UbloxCommandSet().backupRequest.bytes
    var ignoring = ReceiverModel(profile: .ublox(.m8), responses: .ignoringBackupRequest)
    #expect(ignoring.receive(backup, at: .zero).isEmpty)
    #expect(ignoring.power == .running)
    #expect(ignoring.received.map(\.outcome) == [.ignored])
    // Everything else as ever: the GNSS stop takes.
    _ = ignoring.receive(UbloxCommandSet.gnssStop.bytes, at: ms(10))
    #expect(ignoring.power == .gnssStopped)
    var normal = ReceiverModel(profile: .ublox(.m8))
    _ = normal.receive(backup, at: .zero)
    #expect(normal.power == .backup)
  }

  @Test func unresponsiveModeIsDeaf() {
    var model = ReceiverModel(profile: .mediatek, power: .standby, responses: .unresponsive)
    #expect(model.receive(MediaTekCommandSet().powerOnSteps[0].bytes, at: .zero).isEmpty)
    #expect(model.receive(MediaTekCommandSet().sentenceSelection.bytes, at: .zero).isEmpty)
    #expect(model.power == .standby)  // not even woken
    #expect(model.received.map(\.outcome) == [.ignored, .ignored])
    #expect(
      model.received.last?.command.map { if case .mtkSetNMEAOutput = $0 { true } else { false } }
        == true)
  }

  @Test func sirfTakesRatesSilentlyAndHibernates() {
    var model = ReceiverModel(profile: .sirf)
    for step in SiRFCommandSet().powerOnSteps {
      #expect(model.receive(step.bytes, at: .zero).isEmpty)
    }
    #expect(model.received.allSatisfy { $0.outcome == .carriedOut })
    #expect(
      model.receive(SiRFCommandSet.hibernate.bytes, at: .zero) == [NMEAChecksum.frame("PSRF150,0")])
    #expect(model.power == .hibernate)
    _ = model.receive([0xFF], at: .zero)
    #expect(model.power == .hibernate)
  }

  @Test func genericReceiverIgnoresEverything() {
    var model = ReceiverModel(profile: .generic)
    #expect(model.receive(MediaTekCommandSet.standby.bytes, at: .zero).isEmpty)
    #expect(model.receive(UbloxCommandSet.gnssStop.bytes, at: .zero).isEmpty)
    #expect(model.power == .running)
    #expect(model.received.map(\.outcome) == [.ignored, .ignored])
  }

  // MARK: Recording what arrived

  @Test func inputSplitAcrossReadsAndMixedWithNoiseIsRecordedExactly() {
    var model = ReceiverModel(profile: .mediatek)
    let command = MediaTekCommandSet().sentenceSelection.bytes
    let ubx = UbloxCommandSet.gnssStop.bytes
    let noise: [UInt8] = [0x00, 0x7F, 0x41]
    let stream = noise + command + ubx + [0x0D, 0x0A] + MediaTekCommandSet.standby.bytes
    // Fed in awkward pieces, never ending on a start character.
    var offset = 0
    for size in [3, 7, 30, 1, 9, 50, 3, 100] where offset < stream.count {
      var end = min(stream.count, offset + size)
      while end < stream.count, stream[end - 1] == UInt8(ascii: "$") { end += 1 }
      _ = model.receive(stream[offset..<end], at: .zero)
      offset = end
    }
    #expect(
      model.received.map(\.bytes) == [
        noise, command, ubx, [0x0D, 0x0A], MediaTekCommandSet.standby.bytes,
      ])
    #expect(
      model.received.map(\.command) == [
        nil, .mtkSetNMEAOutput(intervals: [0, 1, 0, 1, 1, 1] + [Int](repeating: 0, count: 13)),
        .ubxReset(navBbrMask: 0, resetMode: 8), nil, .mtkStandby(mode: 0),
      ])
    #expect(model.power == .standby)
  }

  @Test func aUBXFrameHoldingADollarAndALineFeedIsNotCutUp() {
    var model = ReceiverModel(profile: .ublox(.m9))
    // A VALSET whose payload holds `$` and LF, arriving in two reads split inside it.
    let frame = try! UBX.frame(.cfgValset, payload: [0, 1, 0, 0, 0x24, 0x0A, 0x91, 0x20, 1])
    _ = model.receive(frame[..<9], at: .zero)
    #expect(model.received.isEmpty)
    _ = model.receive(frame[9...], at: ms(5))
    #expect(model.received.map(\.bytes) == [frame])
    #expect(model.received.first?.outcome == .rejected)  // 0x20910A24 is no MSGOUT key
  }
}
