import Chipsets
import NMEA
import Testing

// The aiding commands, byte for byte against the interface descriptions (u-blox M8 Receiver
// Description UBX-13003221, "UBX-MGA-INI-TIME_UTC" and "UBX-MGA-INI-POS_LLH"; MediaTek's
// PMTK command packet, `$PMTK740`/`$PMTK741`). The expected frames were computed from the
// layouts by hand (Python's struct), not by the code under test.

@Suite struct AidingTests {
  static let now = UTCTimestamp(
    date: UTCDate(year: 2026, month: 12, day: 3),
    time: UTCTime(hour: 13, minute: 40, second: 5, nanoseconds: 250_000_000))
  static let zurich = AidingPosition(
    latitude: 47.285219, longitude: 8.565253, altitude: 600.5, accuracy: 150)

  @Test func ubloxTimeFirstThenPosition() {
    let data = AidingData(time: Self.now, timeAccuracy: .milliseconds(500), position: Self.zurich)
    let commands = Aiding.ublox(data)
    #expect(commands.count == 2)
    // TIME_UTC: type 0x10, version 0, ref 0, leap seconds unknown (-128), 2026-12-03
    // 13:40:05, 250 000 000 ns, accuracy 0 s + 500 000 000 ns.
    #expect(
      commands.first == [
        0xB5, 0x62, 0x13, 0x40, 0x18, 0x00, 0x10, 0x00, 0x00, 0x80, 0xEA, 0x07, 0x0C, 0x03, 0x0D,
        0x28, 0x05, 0x00, 0x80, 0xB2, 0xE6, 0x0E, 0x00, 0x00, 0x00, 0x00, 0x00, 0x65, 0xCD, 0x1D,
        0xAA, 0x90,
      ])
    // POS_LLH: type 1, 47.285219° and 8.565253° in 1e-7°, 60 050 cm, 15 000 cm.
    #expect(
      commands.last == [
        0xB5, 0x62, 0x13, 0x40, 0x14, 0x00, 0x01, 0x00, 0x00, 0x00, 0xDE, 0x26, 0x2F, 0x1C, 0x32,
        0xF4, 0x1A, 0x05, 0x92, 0xEA, 0x00, 0x00, 0x98, 0x3A, 0x00, 0x00, 0x4A, 0x75,
      ])
  }

  @Test func ubloxSouthAndWestAreNegative() {
    let sydney = AidingPosition(
      latitude: -33.8567844, longitude: -151.2152967, altitude: -12.3, accuracy: 2.5)
    let commands = Aiding.ublox(
      AidingData(time: Self.now, timeAccuracy: .seconds(1), position: sydney))
    #expect(
      commands.last == [
        0xB5, 0x62, 0x13, 0x40, 0x14, 0x00, 0x01, 0x00, 0x00, 0x00, 0x5C, 0xDD, 0xD1, 0xEB, 0x79,
        0x60, 0xDE, 0xA5, 0x32, 0xFB, 0xFF, 0xFF, 0xFA, 0x00, 0x00, 0x00, 0xDE, 0xF3,
      ])
    // Without a position, the time alone.
    #expect(Aiding.ublox(AidingData(time: Self.now, timeAccuracy: .seconds(1))).count == 1)
  }

  @Test func theTimeIsTheOneGiven() {
    // A later time makes other bytes: nothing is cached between calls.
    var later = Self.now
    later.time = UTCTime(hour: 13, minute: 40, second: 6, nanoseconds: 0)
    let first = Aiding.ublox(AidingData(time: Self.now, timeAccuracy: .seconds(1)))
    let second = Aiding.ublox(AidingData(time: later, timeAccuracy: .seconds(1)))
    #expect(first != second)
    #expect(second.first?[16] == 6)
  }

  @Test func mediatekTimeThenPosition() {
    let data = AidingData(time: Self.now, timeAccuracy: .seconds(1), position: Self.zurich)
    let text = Aiding.mediatek(data).map { String(decoding: $0, as: UTF8.self) }
    #expect(
      text == [
        "$PMTK740,2026,12,03,13,40,05*34\r\n",
        "$PMTK741,47.285219,8.565253,601,2026,12,03,13,40,05*12\r\n",
      ])
    let sydney = AidingPosition(
      latitude: -33.8567844, longitude: -151.2152967, altitude: -12.3, accuracy: 20)
    let south = Aiding.mediatek(
      AidingData(time: Self.now, timeAccuracy: .seconds(1), position: sydney))
    #expect(
      south.last.map { String(decoding: $0, as: UTF8.self) }
        == "$PMTK741,-33.856784,-151.215297,-12,2026,12,03,13,40,05*08\r\n")
  }

  @Test func mediatekTakesNoPositionWorseThan30Kilometres() {
    var far = Self.zurich
    far.accuracy = 30_000
    let commands = Aiding.mediatek(
      AidingData(time: Self.now, timeAccuracy: .seconds(1), position: far))
    #expect(commands.count == 1)
    #expect(
      commands.first.map { String(decoding: $0, as: UTF8.self) }?.hasPrefix("$PMTK740,") == true)
  }

  @Test func onlyFamiliesThatTakeAiding() {
    let data = AidingData(time: Self.now, timeAccuracy: .seconds(1), position: Self.zurich)
    let ublox = TimedCommand(family: .ublox, content: .time(accuracy: data.timeAccuracy))
    let mediatek = TimedCommand(family: .mediatek, content: .time(accuracy: data.timeAccuracy))
    #expect(ublox.bytes(at: Self.now) == Aiding.ublox(data).first)
    #expect(mediatek.bytes(at: Self.now) == Aiding.mediatek(data).first)
    #expect(ChipsetFamily.ublox.driver.takesAiding && ChipsetFamily.mediatek.driver.takesAiding)
    #expect(!ChipsetFamily.sirf.driver.takesAiding && !ChipsetFamily.nmea.driver.takesAiding)
    for family in [ChipsetFamily.sirf, .nmea] {
      let time = TimedCommand(family: family, content: .time(accuracy: .seconds(1)))
      #expect(time.bytes(at: Self.now) == nil)
      #expect(time.step(at: Self.now, acknowledged: true) == nil)
    }
  }

  @Test func mgaAckDataIsTheAnswerToAnMGAMessage() throws {
    func acknowledgement(_ payload: [UInt8]) -> ReceiverAcknowledgement? {
      guard let frame = try? UBX.frame(.mgaAck, payload: payload) else { return nil }
      var found: ReceiverAcknowledgement?
      var framer = NMEAFramer()
      framer.feed(frame) { if case .ubx(let view) = $0 { found = ReceiverAcknowledgement(view) } }
      return found
    }
    // type 1 (accepted), version 0, infoCode 0, msgId 0x40 (MGA-INI), msgPayloadStart: the
    // TIME_UTC payload's first four bytes (type 0x10).
    #expect(
      acknowledgement([0x01, 0x00, 0x00, 0x40, 0x10, 0x00, 0x00, 0x80])
        == .mga(.mgaIni, messageType: 0x10, accepted: true, infoCode: 0))
    // type 0 (not used), infoCode 1 (no time yet) for a POS_LLH.
    let refused = acknowledgement([0x00, 0x00, 0x01, 0x40, 0x01, 0x00, 0x00, 0x00])
    #expect(refused == .mga(.mgaIni, messageType: 0x01, accepted: false, infoCode: 1))
    #expect(refused?.isPositive == false)
    #expect(refused?.failureReason?.contains("does not know the time yet") == true)
    #expect(acknowledgement([0x07, 0x00, 0x00, 0x40, 0x10, 0x00, 0x00, 0x80]) == nil)
    #expect(acknowledgement([0x01, 0x01, 0x00, 0x40, 0x10, 0x00, 0x00, 0x80]) == nil)
    #expect(acknowledgement([0x01, 0x00, 0x00, 0x40]) == nil)
  }

  /// Each field read back at its offset in the interface description's table, with an
  /// independent little-endian reader, and the checksum recomputed independently: a field
  /// moved, resized or scaled wrongly fails here by name.
  @Test func ubloxFieldsAtTheirOffsets() throws {
    let data = AidingData(time: Self.now, timeAccuracy: .milliseconds(1500), position: Self.zurich)
    let commands = Aiding.ublox(data)
    let time = try #require(commands.first)
    func unsigned(_ frame: [UInt8], _ offset: Int, _ size: Int) -> Int {
      // Payload offsets: the frame's payload begins after B5 62, class, ID, length.
      (0..<size).reduce(0) { $0 | Int(frame[6 + offset + $1]) << (8 * $1) }
    }
    func signed32(_ frame: [UInt8], _ offset: Int) -> Int {
      let value = unsigned(frame, offset, 4)
      return value >= 1 << 31 ? value - (1 << 32) : value
    }
    // Header: sync, class 0x13 (MGA), ID 0x40 (INI), length 24.
    #expect(Array(time[0..<4]) == [0xB5, 0x62, 0x13, 0x40])
    #expect(Int(time[4]) | Int(time[5]) << 8 == 24)
    #expect(time.count == 6 + 24 + 2)
    #expect(unsigned(time, 0, 1) == 0x10, "type: TIME_UTC")
    #expect(unsigned(time, 1, 1) == 0, "version")
    #expect(unsigned(time, 2, 1) == 0, "ref: none, the time applies on receipt")
    #expect(unsigned(time, 3, 1) == 0x80, "leapSecs: -128, unknown")
    #expect(unsigned(time, 4, 2) == 2026, "year")
    #expect(unsigned(time, 6, 1) == 12, "month")
    #expect(unsigned(time, 7, 1) == 3, "day")
    #expect(unsigned(time, 8, 1) == 13, "hour")
    #expect(unsigned(time, 9, 1) == 40, "minute")
    #expect(unsigned(time, 10, 1) == 5, "second")
    #expect(unsigned(time, 11, 1) == 0, "reserved / bitfield0")
    #expect(unsigned(time, 12, 4) == 250_000_000, "ns")
    #expect(unsigned(time, 16, 2) == 1, "tAccS")
    #expect(unsigned(time, 18, 2) == 0, "reserved")
    #expect(unsigned(time, 20, 4) == 500_000_000, "tAccNs")
    #expect(Array(time.suffix(2)) == referenceFletcher(Array(time[2..<(time.count - 2)])))

    let position = try #require(commands.last)
    #expect(Array(position[0..<4]) == [0xB5, 0x62, 0x13, 0x40])
    #expect(Int(position[4]) | Int(position[5]) << 8 == 20)
    #expect(unsigned(position, 0, 1) == 0x01, "type: POS_LLH")
    #expect(unsigned(position, 1, 1) == 0, "version")
    #expect(unsigned(position, 2, 2) == 0, "reserved")
    #expect(signed32(position, 4) == 472_852_190, "lat, 1e-7 degrees")
    #expect(signed32(position, 8) == 85_652_530, "lon, 1e-7 degrees")
    #expect(signed32(position, 12) == 60_050, "alt, cm above the ellipsoid")
    #expect(unsigned(position, 16, 4) == 15_000, "posAcc, cm")
    #expect(
      Array(position.suffix(2)) == referenceFletcher(Array(position[2..<(position.count - 2)])))
  }

  /// `$PMTK740,YYYY,MM,DD,hh,mm,ss` and `$PMTK741,Lat,Long,Alt,YYYY,MM,DD,hh,mm,ss`, field by
  /// field, with the checksum recomputed here (XOR of the characters between `$` and `*`).
  @Test func mediatekFieldsInOrder() throws {
    let data = AidingData(time: Self.now, timeAccuracy: .seconds(1), position: Self.zurich)
    let text = Aiding.mediatek(data).map { String(decoding: $0, as: UTF8.self) }
    #expect(text.count == 2)
    for sentence in text {
      #expect(sentence.hasPrefix("$") && sentence.hasSuffix("\r\n"))
      // "\r\n" is one Character: the checksum is the two characters after "*".
      let parts = sentence.dropFirst().split(separator: "*")
      let body = try #require(parts.first)
      let value = body.utf8.reduce(UInt8(0)) { $0 ^ $1 }
      #expect(UInt8(try #require(parts.last).prefix(2), radix: 16) == value, "\(sentence)")
    }
    let time = try #require(text.first?.split(separator: "*").first?.split(separator: ","))
    #expect(time == ["$PMTK740", "2026", "12", "03", "13", "40", "05"])
    let position = try #require(text.last?.split(separator: "*").first?.split(separator: ","))
    #expect(position.count == 10)
    #expect(position[0] == "$PMTK741")
    #expect(position[1] == "47.285219", "Lat, degrees, north positive")
    #expect(position[2] == "8.565253", "Long, degrees, east positive")
    #expect(position[3] == "601", "Alt, metres")
    #expect(Array(position[4...]) == ["2026", "12", "03", "13", "40", "05"], "UTC")
  }

  /// Figures no receiver is at, given to the encoders directly: the heights of a corrupted
  /// state file (not-a-number, infinities, beyond every integer field) and accuracies beyond
  /// anything worth telling. Each used to trap converting to an integer, or wrote
  /// `$PMTK741,…,100000000000000000,…`.
  static let absurd: [AidingPosition] = [
    .init(latitude: 47.3, longitude: 8.6, altitude: .nan, accuracy: 5),
    .init(latitude: 47.3, longitude: 8.6, altitude: -.infinity, accuracy: 5),
    .init(latitude: 47.3, longitude: 8.6, altitude: 1e300, accuracy: 5),
    .init(latitude: 47.3, longitude: 8.6, altitude: 9.3e18, accuracy: 5),
    .init(latitude: 47.3, longitude: 8.6, altitude: 1e17, accuracy: 5),
    .init(latitude: 47.3, longitude: 8.6, altitude: 600, accuracy: .infinity),
    .init(latitude: 47.3, longitude: 8.6, altitude: 600, accuracy: 1e17),
    .init(latitude: 47.3, longitude: 8.6, altitude: 600, accuracy: .nan),
    .init(latitude: .nan, longitude: 8.6, altitude: 600, accuracy: 5),
    .init(latitude: 47.3, longitude: -.infinity, altitude: 600, accuracy: 5),
    .init(latitude: 1e300, longitude: 8.6, altitude: 600, accuracy: 5),
  ]

  @Test("an absurd position is not sent: the time alone goes", arguments: absurd)
  func absurdPositionsAreNotSent(position: AidingPosition) {
    #expect(!position.isPlausible)
    let data = AidingData(time: Self.now, timeAccuracy: .seconds(1), position: position)
    #expect(Aiding.ubloxPosition(position) == nil)
    #expect(Aiding.ublox(data).count == 1)
    #expect(Aiding.mediatekPosition(position, at: Self.now) == nil)
    #expect(Aiding.mediatek(data).count == 1)
  }

  /// An app's ``KnownPosition`` (``GPSReceiver/Options/initialPosition``) is checked the same
  /// way: nothing absurd becomes a step.
  @Test(arguments: [Double.nan, -.infinity, 1e300, 9.3e18, 1e17])
  func absurdKnownPositionsMakeNoStep(height: Double) {
    let known = KnownPosition(
      latitude: 47.3, longitude: 8.6, heightAboveEllipsoid: height, altitudeMSL: nil,
      accuracy: 5, time: Self.now)
    #expect(known.aiding(at: Self.now) == nil)
    for family in [ChipsetFamily.ublox, .mediatek] {
      let command = TimedCommand(family: family, content: .position(known))
      #expect(command.bytes(at: Self.now) == nil)
      #expect(command.step(at: Self.now, acknowledged: true) == nil)
    }
    let vague = KnownPosition(
      latitude: 47.3, longitude: 8.6, heightAboveEllipsoid: 600, altitudeMSL: nil,
      accuracy: 1e17, time: Self.now)
    #expect(TimedCommand(family: .ublox, content: .position(vague)).bytes(at: Self.now) == nil)
  }

  /// The edges still go: the highest and lowest heights kept, a position known to 10 000 km.
  @Test func plausibleEdgesAreSent() throws {
    let edge = AidingPosition(latitude: -90, longitude: 180, altitude: 50_000, accuracy: 1e7)
    let command = try #require(Aiding.ubloxPosition(edge))
    #expect(command.count == 28)
    let low = AidingPosition(latitude: 90, longitude: -180, altitude: -1_000, accuracy: 29_999)
    let text = String(
      decoding: try #require(Aiding.mediatekPosition(low, at: Self.now)), as: UTF8.self)
    #expect(text.hasPrefix("$PMTK741,90.000000,-180.000000,-1000,2026,"))
  }
}
