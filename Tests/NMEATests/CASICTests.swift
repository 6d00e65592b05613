import NMEA
import Testing

// CASIC binary (Zhongke AT6558R: Quectel L76K): the framer's CASIC frames, the messages decoded
// from them and the epochs they make. The sample frames are the first of each kind in
// corpus/gpsd-casic/quectel-l76k-binary.log; docs/casic.md.

/// Bytes from space-separated hex.
private func hex(_ text: String) -> [UInt8] {
  text.split(separator: " ").map { UInt8($0, radix: 16)! }
}

/// A CASIC payload written field by field at the spec's offsets.
private struct CASICPayload {
  var bytes: [UInt8]
  init(length: Int) { bytes = [UInt8](repeating: 0, count: length) }
  mutating func u1(_ offset: Int, _ value: UInt8) { bytes[offset] = value }
  mutating func u2(_ offset: Int, _ value: UInt16) {
    for index in 0..<2 { bytes[offset + index] = UInt8(truncatingIfNeeded: value >> (8 * index)) }
  }
  mutating func u4(_ offset: Int, _ value: UInt32) {
    for index in 0..<4 { bytes[offset + index] = UInt8(truncatingIfNeeded: value >> (8 * index)) }
  }
  mutating func r4(_ offset: Int, _ value: Float) { u4(offset, value.bitPattern) }
  mutating func r8(_ offset: Int, _ value: Double) {
    u4(offset, UInt32(truncatingIfNeeded: value.bitPattern))
    u4(offset + 4, UInt32(truncatingIfNeeded: value.bitPattern >> 32))
  }
}

/// NAV-PV (01 03) of `runTime`: a 3D position and velocity unless said otherwise.
private func navPV(
  runTime: UInt32, validity: UInt8 = 7, latitude: Double = 47.5, longitude: Double = -122.25,
  height: Float = 56, separation: Float = -21.5, hAcc: Float = 4, vAcc: Float = 9,
  speed: Float = 1.5, heading: Float = 90, cAcc: Float = 1e6
) -> [UInt8] {
  var p = CASICPayload(length: 80)
  p.u4(0, runTime)
  p.u1(4, validity)
  p.u1(5, validity)
  p.u1(7, 12)
  p.r4(12, 1.5)
  p.r8(16, longitude)
  p.r8(24, latitude)
  p.r4(32, height)
  p.r4(36, separation)
  p.r4(40, hAcc)
  p.r4(44, vAcc)
  p.r4(48, 0)
  p.r4(52, speed)
  p.r4(56, 0.25)
  p.r4(64, speed)
  p.r4(68, heading)
  p.r4(72, 0.04)
  p.r4(76, cAcc)
  return casicFrame(class: 0x01, id: 0x03, payload: p.bytes)
}

/// NAV-TIMEUTC (01 10) of `runTime`: 2026-08-06 at `second` seconds past 07:18.
private func navTimeUTC(runTime: UInt32, second: UInt8, valid: UInt8 = 7) -> [UInt8] {
  var p = CASICPayload(length: 24)
  p.u4(0, runTime)
  p.u2(14, 2026)
  p.u1(16, 8)
  p.u1(17, 6)
  p.u1(18, 7)
  p.u1(19, 18)
  p.u1(20, second)
  p.u1(21, valid)
  p.u1(23, 3)
  return casicFrame(class: 0x01, id: 0x10, payload: p.bytes)
}

/// NAV-DOP (01 01) of `runTime`, every DOP `dop`.
private func navDOP(runTime: UInt32, dop: Float) -> [UInt8] {
  var p = CASICPayload(length: 28)
  p.u4(0, runTime)
  for offset in stride(from: 4, to: 28, by: 4) { p.r4(offset, dop) }
  return casicFrame(class: 0x01, id: 0x01, payload: p.bytes)
}

/// NAV-GLNINFO (01 22) of `runTime` with one satellite, slot `svid`, used.
private func navGLNInfo(runTime: UInt32, svid: UInt8) -> [UInt8] {
  var p = CASICPayload(length: 20)
  p.u4(0, runTime)
  p.u1(4, 1)
  p.u1(5, 1)
  p.u1(6, 2)
  p.u1(8, 3)
  p.u1(9, svid)
  p.u2(10, 0x6141)
  p.u1(12, 33)
  p.u1(13, 40)
  p.u2(14, 200)
  return casicFrame(class: 0x01, id: 0x22, payload: p.bytes)
}

/// What decoding `bytes` whole gives: the epochs, the CASIC frames and the counters.
private func decodeCASIC(_ bytes: [UInt8]) -> (
  epochs: [Epoch], frames: [(UInt8, UInt8, Int)], statistics: DecoderStatistics
) {
  var decoder = NMEADecoder()
  var epochs: [Epoch] = []
  var found: [(UInt8, UInt8, Int)] = []
  let handle: (DecoderEvent) -> Void = { event in
    switch event {
    case .epoch(let epoch): epochs.append(epoch)
    case .casic(let frame): found.append((frame.messageClass, frame.messageID, frame.payload.count))
    default: break
    }
  }
  decoder.decode(bytes, handle)
  decoder.finish(handle)
  return (epochs, found, decoder.statistics)
}

/// The message `frame` (whole wire bytes) decodes to.
private func message(_ frame: [UInt8]) throws -> CASICMessage? {
  var result: Result<CASICMessage?, CASICRejection>?
  var framer = NMEAFramer()
  framer.feed(frame) { found in
    guard case .casic(let view) = found else { return }
    result = Result { () throws(CASICRejection) in try CASICMessage(view) }
  }
  return try #require(result, "no CASIC frame in \(frame.count) bytes").get()
}

extension CASICMessage {
  var pv: CASICNavPV? { if case .navPV(let m) = self { m } else { nil } }
  var timeUTC: CASICNavTimeUTC? { if case .navTimeUTC(let m) = self { m } else { nil } }
  var satellites: CASICNavSatellites? { if case .navSatellites(let m) = self { m } else { nil } }
}

@Suite("CASIC framing")
struct CASICFramingTests {
  static let gga = "GPGGA,123519,4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,"
  static let rmc = "GPRMC,123519,A,4807.038,N,01131.000,E,022.4,084.4,230394,003.1,W"
  /// The capture's first NAV-DOP, whose checksum 8D BF 77 04 the receiver computed.
  static let navDOP = hex(
    "BA CE 1C 00 01 01 08 5C 03 11 8A 03 A8 3F 6D 42 43 3F BD BC 88 3F 3F F6 06 3F B9 1B 0D 3F "
      + "34 06 33 3F 04 77 BF 8D")

  @Test("a CASIC frame is reported with class, id and payload, and the NMEA around it is kept")
  func frame() {
    // The payload holds `$`, LF, CR and the sync bytes: it must not be read as text or a frame.
    let payload: [UInt8] = [0x24, 0x47, 0x50, 0x0A, 0x0D, 0x00, 0xBA, 0xCE]
    let bytes =
      wire(Self.gga) + casicFrame(class: 0x05, id: 0x01, payload: payload) + wire(Self.rmc)
    let (found, statistics) = frames(bytes)
    #expect(
      found == [
        .sentence("$" + Self.gga, hadChecksum: true), .casic(0x05, 0x01, payload),
        .sentence("$" + Self.rmc, hadChecksum: true),
      ])
    #expect(
      statistics.casicFrames == 1 && statistics.garbageBytes == 0
        && statistics.badBinaryFrames == 0)
  }

  @Test("the checksum is the spec's sum of 32-bit words: the receiver's own frame passes")
  func receiversChecksum() {
    let (found, statistics) = frames(Self.navDOP)
    #expect(found == [.casic(0x01, 0x01, Array(Self.navDOP[6..<34]))])
    #expect(statistics.casicFrames == 1 && statistics.garbageBytes == 0)
  }

  @Test("the same frames however the stream is split")
  func anySplit() {
    let bytes = wire(Self.gga) + Self.navDOP + Self.navDOP + wire(Self.rmc)
    let whole = frames(bytes).0
    #expect(whole.count == 4)
    for split in 1..<bytes.count {
      let (found, statistics) = frames([Array(bytes[..<split]), Array(bytes[split...])])
      #expect(found == whole, "split at \(split)")
      #expect(statistics.garbageBytes == 0, "split at \(split)")
    }
  }

  @Test("a bad checksum is counted and the sentences the frame covered are given back")
  func badChecksum() {
    var frame = Self.navDOP
    frame[frame.count - 1] ^= 0x01
    let bytes = frame + wire(Self.gga)
    let (found, statistics) = frames(bytes)
    #expect(sentenceTexts(found) == ["$" + Self.gga])
    #expect(statistics.badBinaryFrames == 1 && statistics.casicFrames == 0)
    // The whole false frame is garbage, byte by byte, after its rescan.
    #expect(statistics.garbageBytes == frame.count)

    // A claimed 80-byte payload covering two sentences.
    let covering: [UInt8] =
      [0xBA, 0xCE, 80, 0, 0x01, 0x03] + wire(Self.gga) + wire(Self.rmc)
      + wire(Self.gga)
    let (again, counted) = frames(covering)
    #expect(sentenceTexts(again) == ["$" + Self.gga, "$" + Self.rmc, "$" + Self.gga])
    #expect(counted.badBinaryFrames == 1 && counted.garbageBytes == 6)
  }

  @Test(
    "a length of 2 KiB or more, or not whole words, is no CASIC frame: the sentence after it is kept",
    arguments: [(UInt8(0x00), UInt8(0x08)), (0xFF, 0xFF), (0x1D, 0x00)])
  func impossibleLength(low: UInt8, high: UInt8) {
    let bytes: [UInt8] = [0xBA, 0xCE, low, high, 0x01, 0x03] + wire(Self.gga)
    let (found, statistics) = frames(bytes)
    #expect(sentenceTexts(found) == ["$" + Self.gga])
    #expect(statistics.badBinaryFrames == 1 && statistics.garbageBytes == 6)
  }

  @Test("a frame of the longest payload the spec allows is delivered")
  func longestPayload() {
    let payload = [UInt8](repeating: 0x33, count: 2044)
    let (found, statistics) = frames(casicFrame(class: 0x01, id: 0x22, payload: payload))
    #expect(found == [.casic(0x01, 0x22, payload)])
    #expect(statistics.casicFrames == 1)
  }

  @Test("a frame unfinished at the end of the input is counted, and what it swallowed found")
  func unfinishedAtTheEnd() {
    var framer = NMEAFramer()
    var found: [FoundFrame] = []
    framer.feed([0xBA, 0xCE, 0x40, 0x00, 0x01, 0x03] + wire(Self.gga)) {
      found.append(FoundFrame($0))
    }
    #expect(found.isEmpty)
    framer.finish { found.append(FoundFrame($0)) }
    #expect(sentenceTexts(found) == ["$" + Self.gga])
    #expect(framer.statistics.unfinishedBinaryFrames == 1)
    #expect(framer.bytesInProgress == 0)
  }

  @Test("a frame's bytes are the frame again, and they prove a receiver's rate")
  func bytesAgainAndRate() {
    var framer = NMEAFramer()
    var again: [UInt8] = []
    framer.feed(Self.navDOP) { again = $0.bytes }
    #expect(again == Self.navDOP)
    #expect(NMEAFramer.holdsChecksummedFrames(Self.navDOP + Self.navDOP))
    var broken = Self.navDOP
    broken[10] ^= 0xFF
    #expect(!NMEAFramer.holdsChecksummedFrames(broken + broken))
  }
}

@Suite("CASIC messages")
struct CASICMessageTests {
  /// The capture's first NAV-PV.
  static let sampleNavPV = hex(
    "BA CE 50 00 01 03 08 5C 03 11 07 07 07 11 0A 04 03 00 8A 03 A8 3F 05 3E CE 59 E3 94 5E C0 "
      + "0F 9B 1B 0E BB D4 47 40 28 16 60 42 BF DF AC C1 78 24 21 40 54 0C 9E 40 "
      + "00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 44 2C 8F 43 "
      + "D4 6D 0D 3D 00 24 74 49 70 92 23 1C")
  /// The capture's first NAV-TIMEUTC.
  static let sampleNavTimeUTC = hex(
    "BA CE 18 00 01 10 08 5C 03 11 CA EA CC 40 00 35 09 B6 00 00 EA 07 08 06 07 12 04 07 00 03 "
      + "F6 88 CB 34")
  /// The capture's first NAV-GPSINFO.
  static let sampleNavGPSInfo = hex(
    "BA CE 8C 00 01 20 08 5C 03 11 0B 0A 00 00 15 01 C1 61 1E 12 2C 00 5E CD E8 3F 0C 06 C1 63 "
      + "1F 11 9C 00 8B F2 A4 BF FF 0C 40 00 00 05 11 01 00 00 00 00 06 0E C1 21 "
      + "15 2B 54 00 87 1C D8 3F 1D 0F C1 21 14 15 FD 00 46 AF EC 3F 08 11 C1 61 "
      + "19 43 48 00 E3 E1 3F 3D 0A 13 C1 61 1D 42 C1 00 B9 4F C3 3F 05 14 C1 21 "
      + "16 14 DF 00 0B 40 C1 3F 0D 16 C1 61 1B 3D 47 00 B5 39 29 40 0F 18 C1 61 "
      + "19 2C 2C 01 6F 49 CE C0 01 1E C1 21 17 11 91 00 86 13 8D C0 1A 2C 82 09")

  @Test("NAV-PV: position, heights, accuracies as standard deviations, velocity, validity")
  func navPVDecodes() throws {
    let pv = try #require(try message(Self.sampleNavPV)?.pv)
    #expect(pv.runTime == 0x1103_5C08)
    #expect(pv.positionValidity == .threeD && pv.velocityValidity == .threeD)
    #expect(pv.satellitesUsed == 17)
    // gpsd's TPV of this NAV-PV: 47.661958469, -122.326376392, altHAE 56.0216, altMSL
    // 77.6309, eph 1.587, epv 2.222, eps 0.19, track 286.3458, no epd.
    let position = try #require(pv.position)
    #expect(abs(position.latitude.decimalDegrees - 47.661958469) <= 0.6e-9)
    #expect(abs(position.longitude.decimalDegrees - -122.326376392) <= 0.6e-9)
    #expect(abs(try #require(pv.altitudeHAE) - 56.0216) < 0.5e-4)
    #expect(abs(try #require(pv.altitudeMSL) - 77.6309) < 0.5e-4)
    #expect(abs(try #require(pv.geoidSeparation) - -21.609) < 0.5e-3)
    #expect(abs(try #require(pv.horizontalAccuracy) - 1.587) < 0.5e-3)
    #expect(abs(try #require(pv.verticalAccuracy) - 2.222) < 0.5e-3)
    #expect(abs(try #require(pv.speedAccuracy) - 0.19) < 0.5e-2)
    #expect(abs(try #require(pv.heading) - 286.3458) < 0.5e-4)
    #expect(pv.groundSpeed == 0 && pv.velocityUp == 0)
    #expect(pv.headingAccuracy == nil, "cAcc 1e6 is the receiver's 'no estimate'")
    #expect(pv.dropped == 0)
  }

  @Test("NAV-PV below 2D has no position; 2D has no height; impossible values are dropped")
  func navPVValidity() throws {
    let held = try #require(try message(navPV(runTime: 1, validity: 3))?.pv)
    #expect(held.position == nil && held.altitudeHAE == nil && held.groundSpeed == nil)
    #expect(held.positionValidity?.mode == .noFix)
    let flat = try #require(try message(navPV(runTime: 1, validity: 6))?.pv)
    #expect(flat.position != nil && flat.altitudeHAE == nil && flat.velocityUp == nil)
    for (latitude, longitude) in [(Double.nan, 1.0), (91, 1), (1, 1e300), (1, -.infinity)] {
      let bad = try #require(
        try message(
          navPV(runTime: 1, latitude: latitude, longitude: longitude))?.pv)
      #expect(bad.position == nil && bad.dropped == 1, "\(latitude), \(longitude)")
      #expect(bad.altitudeHAE == 56, "the rest of the message stands")
    }
    let nan = try #require(try message(navPV(runTime: 1, height: .nan, hAcc: -1))?.pv)
    #expect(nan.altitudeHAE == nil && nan.horizontalAccuracy == nil && nan.dropped == 2)
  }

  @Test("NAV-TIMEUTC: the date and time only when the receiver says UTC and the date are known")
  func navTimeUTCDecodes() throws {
    let time = try #require(try message(Self.sampleNavTimeUTC)?.timeUTC)
    #expect(time.timestamp?.description.hasPrefix("2026-08-06T07:18:04") == true)
    #expect(time.validity == 7 && time.dateValidity == 3 && time.timeSource == 0)
    for valid: UInt8 in [0, 3, 5, 6] {
      let partial = try #require(
        try message(navTimeUTC(runTime: 1, second: 4, valid: valid))?.timeUTC)
      #expect(partial.timestamp == nil, "valid \(valid)")
    }
    let impossible = try #require(try message(navTimeUTC(runTime: 1, second: 61))?.timeUTC)
    #expect(impossible.timestamp == nil && impossible.dropped == 1)
  }

  @Test("NAV-GPSINFO: every satellite, numbered as gpsd does, its use from flags B0")
  func navGPSInfoDecodes() throws {
    let info = try #require(try message(Self.sampleNavGPSInfo)?.satellites)
    #expect(info.inView == 11 && info.used == 10 && info.satellites.count == 11)
    #expect(info.satellites.filter(\.used).count == 10)
    let first = info.satellites[0]
    #expect(first.svID == 1 && first.carrierToNoise == 30 && first.elevation == 18)
    #expect(first.azimuth == 44 && first.used)
    // gpsd's SKY: PRN 12 at 5° 273°, ss 0, not used (channel FF: not tracked).
    let untracked = info.satellites[2]
    #expect(untracked.channel == 0xFF && untracked.svID == 12 && !untracked.used)
  }

  @Test("a negative or non-finite DOP is dropped and counted; 99 and more is no value in the fix")
  func impossibleDOPs() throws {
    // The fuzzer's find: a DOP of -1.2e-17 reached the fix.
    let bytes =
      navDOP(runTime: 1000, dop: -1.2e-17) + navPV(runTime: 1000)
      + navTimeUTC(runTime: 1000, second: 1) + navDOP(runTime: 2000, dop: .nan)
      + navPV(runTime: 2000) + navTimeUTC(runTime: 2000, second: 2)
      + navDOP(runTime: 3000, dop: 99.5) + navPV(runTime: 3000)
      + navTimeUTC(runTime: 3000, second: 3)
    let (epochs, _, statistics) = decodeCASIC(bytes)
    #expect(epochs.count == 3)
    for epoch in epochs {
      #expect(epoch.fix.hdop == nil && epoch.fix.vdop == nil && epoch.fix.tdop == nil)
      // NAV-PV's own pDOP, 1.5, stands where NAV-DOP gave none.
      #expect(epoch.fix.pdop == 1.5)
    }
    #expect(statistics.casic.droppedFields == 12, "six DOPs in each of the first two")
  }

  @Test("a payload shorter than its message, or than its satellites, is refused and counted")
  func shortPayloads() throws {
    let short = [
      casicFrame(class: 0x01, id: 0x03, payload: [UInt8](repeating: 0, count: 76)),
      casicFrame(class: 0x01, id: 0x10, payload: [UInt8](repeating: 0, count: 20)),
      casicFrame(class: 0x01, id: 0x01, payload: [UInt8](repeating: 0, count: 24)),
      casicFrame(
        class: 0x01, id: 0x20, payload: [0, 0, 0, 0, 2, 1, 0, 0] + [UInt8](repeating: 0, count: 12)),
      casicFrame(class: 0x05, id: 0x01, payload: []),
    ]
    for frame in short {
      #expect(throws: CASICRejection.self) { try message(frame) }
    }
    let (epochs, found, statistics) = decodeCASIC(short.flatMap { $0 })
    #expect(found.count == 5 && epochs.isEmpty)
    #expect(statistics.casic.rejected == 5 && statistics.casic.decoded == 0)
  }

  @Test("ACK-ACK and ACK-NAK name the message they answer")
  func acknowledgements() throws {
    let ack = casicFrame(class: 0x05, id: 0x01, payload: [0x06, 0x00, 0x00, 0x00])
    let nak = casicFrame(class: 0x05, id: 0x00, payload: [0x06, 0x04, 0x00, 0x00])
    var found: [CASICAcknowledgement] = []
    var framer = NMEAFramer()
    framer.feed(ack + nak + Self.sampleNavTimeUTC) { frame in
      if case .casic(let view) = frame, let answer = CASICAcknowledgement(view) {
        found.append(answer)
      }
    }
    #expect(
      found == [
        CASICAcknowledgement(messageClass: 0x06, messageID: 0x00, accepted: true),
        CASICAcknowledgement(messageClass: 0x06, messageID: 0x04, accepted: false),
      ])
    #expect(found.map(\.description) == ["CASIC ACK-ACK 06-00", "CASIC ACK-NAK 06-04"])
    let (epochs, _, statistics) = decodeCASIC(ack + nak)
    #expect(epochs.isEmpty && statistics.casic.decoded == 2)
  }
}

@Suite("CASIC epochs")
struct CASICEpochTests {
  /// One L76K epoch: NAV-DOP, NAV-PV, NAV-TIMEUTC, NAV-GLNINFO of one run time.
  static func epoch(_ index: Int) -> [UInt8] {
    let runTime = UInt32(5_000 + index * 1000)
    return navDOP(runTime: runTime, dop: Float(index) + 0.5)
      + navPV(runTime: runTime, latitude: 47.5 + Double(index) * 1e-6)
      + navTimeUTC(runTime: runTime, second: UInt8(index))
      + navGLNInfo(runTime: runTime, svid: UInt8(index + 1))
  }

  @Test("one epoch per run time: each holds its own DOP, position, time and satellites")
  func oneEpochPerRunTime() throws {
    let (epochs, _, statistics) = decodeCASIC((0..<5).flatMap { Self.epoch($0) })
    #expect(epochs.count == 5)
    for (index, epoch) in epochs.enumerated() {
      let fix = epoch.fix
      #expect(fix.time?.second == UInt8(index))
      #expect(fix.mode == .threeD)
      #expect(abs(try #require(fix.latitude) - (47.5 + Double(index) * 1e-6)) < 1e-9)
      #expect(fix.hdop == Double(index) + 0.5, "the NAV-DOP of the epoch's own run time")
      #expect(abs(try #require(fix.altitudeMSL) - 77.5) < 1e-6, "height less separation")
      #expect(fix.date?.description == "2026-08-06")
      let satellites = try #require(epoch.satellites).satellites
      #expect(satellites.map(\.prn) == [64 + index + 1], "GLONASS slot as gpsd's PRN")
      #expect(satellites.first?.used == true)
    }
    // Learned from two epochs: the third on are closed by their NAV-GLNINFO, not the next one.
    #expect(statistics.builder.epochsClosedAtCycleEnd == 3)
  }

  @Test("a new run time closes the epoch even without a time or a second NAV-PV")
  func runTimeAloneCloses() {
    let bytes =
      navPV(runTime: 1000) + navTimeUTC(runTime: 1000, second: 1)
      + navDOP(runTime: 2000, dop: 7) + navPV(runTime: 2000) + navTimeUTC(runTime: 2000, second: 2)
    let (epochs, _, _) = decodeCASIC(bytes)
    #expect(epochs.map { $0.fix.time?.second } == [1, 2])
    #expect(epochs.map(\.fix.hdop) == [nil, 7])
  }

  @Test("NMEA and CASIC of one second, NMEA first, make one fix: NAV-PV's position")
  func dualOutputOneFix() throws {
    var bytes: [UInt8] = []
    for index in 0..<4 {
      let second = index < 10 ? "0\(index)" : "\(index)"
      bytes += wire("GNGGA,0718\(second).000,4730.00000,N,12215.00000,W,1,12,0.8,77.5,M,-21.6,M,,")
      bytes += wire("GNRMC,0718\(second).000,A,4730.00000,N,12215.00000,W,0.00,90.0,060826,,,A,V")
      bytes += Self.epoch(index)
    }
    let (epochs, _, statistics) = decodeCASIC(bytes)
    #expect(epochs.count == 4)
    #expect(statistics.builder.lateSentences == 0)
    for (index, epoch) in epochs.enumerated() {
      #expect(epoch.fix.time?.second == UInt8(index))
      #expect(abs(try #require(epoch.fix.latitude) - (47.5 + Double(index) * 1e-6)) < 1e-9)
      #expect(abs(try #require(epoch.fix.longitude) - -122.25) < 1e-9)
    }
  }
}
