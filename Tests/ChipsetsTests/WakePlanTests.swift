import Chipsets
import NMEA
import Testing

@Suite struct WakePlanTests {
  static let now = UTCTimestamp(
    date: UTCDate(year: 2026, month: 12, day: 3),
    time: UTCTime(hour: 13, minute: 40, second: 0, nanoseconds: 0))

  /// A fix `age` seconds before `now`, with a horizontal accuracy of 5 m.
  static func fix(ageSeconds: Int, heightAboveEllipsoid: Bool = true) -> Fix {
    var fix = Fix()
    fix.date = now.date
    fix.time = UTCTime(hour: 13, minute: 40 - UInt8(ageSeconds / 60), second: 0, nanoseconds: 0)
    fix.mode = .threeD
    fix.position = Position(
      latitude: Coordinate(
        degrees: 47, scaledMinutes: 17_113, fractionDigits: 3, isNegative: false),
      longitude: Coordinate(degrees: 8, scaledMinutes: 33_915, fractionDigits: 3, isNegative: false)
    )
    fix.altitudeMSL = 546.6
    if heightAboveEllipsoid { fix.geoidSeparation = 48.0 }
    fix.horizontalAccuracy = 5
    return fix
  }

  static func context(
    family: ChipsetFamily? = .ublox, slept: Duration? = nil, keptBackup: Bool? = nil,
    fix: Fix? = WakePlanTests.fix(ageSeconds: 120), now: UTCTimestamp? = WakePlanTests.now
  ) -> WakeContext {
    WakeContext(
      now: now, timeAccuracy: .milliseconds(100), family: family,
      lastPosition: fix.flatMap(KnownPosition.init), slept: slept, keptBackup: keptBackup)
  }

  @Test func aHotStartIsNotAided() {
    #expect(WakePlan.aiding(for: Self.context(slept: .seconds(600))) == nil)
    #expect(WakePlan.aiding(for: Self.context(slept: .seconds(600), keptBackup: true)) == nil)
    // Backup kept and first start: the receiver has what it needs.
    #expect(WakePlan.aiding(for: Self.context(keptBackup: true)) == nil)
  }

  @Test func warmAndColdStartsAreAided() throws {
    for context in [
      Self.context(slept: .seconds(5 * 3600)),  // past the ephemeris
      Self.context(slept: .seconds(60), keptBackup: false),  // unplugged
      Self.context(),  // first start, backup unknown
    ] {
      let data = try #require(WakePlan.aiding(for: context), "\(context)")
      #expect(data.time == Self.now)
      #expect(data.timeAccuracy == .milliseconds(100))
      let position = try #require(data.position)
      #expect(abs(position.latitude - (47 + 17.113 / 60)) < 1e-9)
      #expect(abs(position.longitude - (8 + 33.915 / 60)) < 1e-9)
      #expect(abs(position.altitude - 594.6) < 1e-9, "MSL plus the geoid's height")
      // 5 m, widened by 120 s at 50 m/s.
      #expect(position.accuracy == 5 + 6_000)
    }
  }

  @Test func anAltitudeAboveTheGeoidOnlyWidensTheAccuracy() throws {
    let data = try #require(
      WakePlan.aiding(for: Self.context(fix: Self.fix(ageSeconds: 0, heightAboveEllipsoid: false))))
    #expect(data.position?.altitude == 546.6)
    #expect(data.position?.accuracy == Double(5 + 110))
  }

  @Test func nothingForAnUnknownOrNonAidedFamilyOrAnUnsetClock() {
    #expect(WakePlan.aiding(for: Self.context(family: nil)) == nil)
    #expect(WakePlan.aiding(for: Self.context(family: .sirf)) == nil)
    #expect(WakePlan.aiding(for: Self.context(family: .nmea)) == nil)
    let boot = UTCTimestamp(
      date: UTCDate(year: 1970, month: 1, day: 1),
      time: UTCTime(hour: 0, minute: 0, second: 30, nanoseconds: 0))
    #expect(WakePlan.aiding(for: Self.context(now: boot)) == nil)
    #expect(WakePlan.aiding(for: Self.context(now: nil)) == nil)
  }

  @Test func aPositionFromTheFutureOrWithoutAccuracyIsLeftOut() throws {
    var later = Self.fix(ageSeconds: 0)
    later.time = UTCTime(hour: 13, minute: 41, second: 0, nanoseconds: 0)
    #expect(try #require(WakePlan.aiding(for: Self.context(fix: later))).position == nil)
    var vague = Self.fix(ageSeconds: 60)
    vague.horizontalAccuracy = nil
    #expect(try #require(WakePlan.aiding(for: Self.context(fix: vague))).position == nil)
  }

  @Test func anOldPositionReachesUbloxButNotMediaTek() throws {
    // 10 minutes at 50 m/s: 30 km, MediaTek's limit for a useful position.
    let data = try #require(
      WakePlan.aiding(for: Self.context(family: .mediatek, fix: Self.fix(ageSeconds: 600))))
    #expect(Aiding.mediatek(data).count == 1)
    #expect(Aiding.ublox(data).count == 2)
  }

  // MARK: The power-on steps of a planned wake

  static let unplugged = context(slept: .seconds(60), keptBackup: false)

  @Test func ubloxNineIsAidedAfterItsSelectionAndBeforeItsStartWithAcknowledgements() throws {
    let set = UbloxCommandSet(UbloxOptions(generation: .m9AndLater, port: .uart1))
    let steps = set.powerOnSteps(for: Self.unplugged)
    let plain = set.powerOnSteps
    // The plain steps, with the switch and the aiding between the selection and the start.
    #expect(steps.count == plain.count + 3)
    #expect(Array(steps.prefix(plain.count - 1)) == Array(plain.dropLast()))
    #expect(steps.last == UbloxCommandSet.gnssStart)
    let added = Array(steps[(plain.count - 1)..<(steps.count - 1)])
    #expect(added[0] == UbloxCommandSet.acknowledgeAiding)
    // CFG-VALSET, RAM layer, key 0x10110025 = 1.
    #expect(
      Array(added[0].bytes[6..<15]) == [0x00, 0x01, 0x00, 0x00, 0x25, 0x00, 0x11, 0x10, 0x01])
    #expect(added[0].acknowledgement == .ubx(.cfgValset))
    // Time first, then position, each answered by MGA-ACK for its own type.
    #expect(added[1].bytes[6] == 0x10)
    #expect(added[1].acknowledgement == .mga(.mgaIni, messageType: 0x10))
    #expect(added[2].bytes[6] == 0x01)
    #expect(added[2].acknowledgement == .mga(.mgaIni, messageType: 0x01))
    #expect(added[1].bytes == Aiding.ubloxTime(Self.now, accuracy: .milliseconds(100)))
    #expect(added[1].timed != nil && added[2].timed != nil)
  }

  @Test func ubloxEightIsAidedWithoutAcknowledgements() {
    let set = UbloxCommandSet(UbloxOptions(generation: .m8AndOlder, port: .uart1))
    let steps = set.powerOnSteps(for: Self.unplugged)
    #expect(steps.count == set.powerOnSteps.count + 2)
    #expect(!steps.contains(UbloxCommandSet.acknowledgeAiding))
    let aiding = steps.filter { $0.timed != nil }
    #expect(aiding.map { $0.bytes[6] } == [0x10, 0x01])
    #expect(aiding.allSatisfy { $0.acknowledgement == .none })
    #expect(steps.last == UbloxCommandSet.gnssStart)
  }

  @Test func mediatekIsAidedRightAfterItsWake() {
    let set = MediaTekCommandSet()
    let steps = set.powerOnSteps(
      for: Self.context(family: .mediatek, slept: .seconds(60), keptBackup: false))
    #expect(steps.count == 4)
    #expect(steps.first == set.powerOnSteps.first)
    #expect(steps.last == set.sentenceSelection)
    #expect(steps[1].acknowledgement == .mtk(command: 740))
    #expect(
      String(decoding: steps[1].bytes, as: UTF8.self).hasPrefix("$PMTK740,2026,12,03,13,40,00*"))
    #expect(steps[2].acknowledgement == .mtk(command: 741))
    // A fix two minutes old is within MediaTek's 30 km.
    #expect(
      String(decoding: steps[2].bytes, as: UTF8.self).hasPrefix("$PMTK741,47.285217,8.565250,"))
  }

  @Test func aHotStartAnUnknownOrAnotherFamilyOrSiRFGetsThePlainSteps() {
    let ublox = UbloxCommandSet(UbloxOptions(generation: .m9AndLater, port: .uart1))
    let mediatek = MediaTekCommandSet()
    for context in [
      Self.context(slept: .seconds(600), keptBackup: true),  // hot
      Self.context(slept: .seconds(3 * 3600)),  // within the ephemeris's four hours
    ] {
      #expect(ublox.powerOnSteps(for: context) == ublox.powerOnSteps)
      #expect(mediatek.powerOnSteps(for: context) == mediatek.powerOnSteps)
    }
    // The family unknown, or not the command set's: nothing added.
    #expect(
      ublox.powerOnSteps(for: Self.context(family: nil, keptBackup: false)) == ublox.powerOnSteps)
    #expect(
      mediatek.powerOnSteps(for: Self.context(family: .ublox, keptBackup: false))
        == mediatek.powerOnSteps)
    let sirf = SiRFCommandSet()
    #expect(
      sirf.powerOnSteps(for: Self.context(family: .sirf, keptBackup: false)) == sirf.powerOnSteps)
    let generic = GenericNMEACommandSet()
    #expect(generic.powerOnSteps(for: Self.context(family: .nmea, keptBackup: false)).isEmpty)
  }

  @Test func aSleepPastTheEphemerisIsAided() {
    let mediatek = MediaTekCommandSet()
    let steps = mediatek.powerOnSteps(
      for: Self.context(family: .mediatek, slept: .seconds(5 * 3600)))
    #expect(steps.count == 4)
  }
}
