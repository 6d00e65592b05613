// libFuzzer entry point: arbitrary bytes through framer, parser and fix builder.
//
// Input layout (so that the fuzzer chooses the configuration and the split points):
//
//   byte 0      bits 0-3: number of split points n (0...15)
//               bit 4: lenient checksum policy; bit 5: 82-byte sentence limit (else 128)
//               bit 6: also feed the bytes one at a time
//               bit 7: give every UBX and CASIC frame in the payload its right checksum first,
//               so that mutated payloads reach the binary decoders instead of failing the
//               checksum
//   2n bytes    split points, little-endian UInt16, each taken modulo (payload length + 1)
//   the rest    the payload: what a receiver sent
//
// Checked for every input, by trapping (which libFuzzer reports as a crash):
// - split independence: the payload fed whole, fed in the chosen pieces (and byte by byte)
//   gives the same frames, sentences, parse errors, epochs and counters;
// - counters agree with what was delivered (sentences, binary frames, parse errors, epochs)
//   and garbage never exceeds the input;
// - every delivered sentence starts with `$` or `!`, is printable ASCII, holds no `*` when
//   it carried a checksum, and fits the configured limit;
// - parsing is deterministic;
// - fixes are sane: latitude within ±90°, longitude within ±180°, no position without a fix,
//   no fix without a time of day;
// - no impossible value gets through the parser: dates in the calendar, speeds not negative
//   and under 999 knots, courses within 0..<360°, magnetic variations within ±180°,
//   altitudes within -1 000 m ... 100 km, geoid separations within ±200 m, GGA qualities
//   0...8, DOPs under 99, GSV message numbers within their count (Fuzz/nmea.dict holds the
//   values on both sides of each limit and the receivers' sentinels); only an impossible time
//   of day or message number refuses a sentence, and every impossible value is counted;
// - every UBX frame is decoded, refused by reason or passed on as not decoded, and the
//   counters say so; decoded messages hold no impossible value (positions within ±90°/±180°,
//   calendar dates, satellites' elevations within ±90°), and every block of a message's
//   views is read (AddressSanitizer catches a read past the payload);
// - the raw port's writer framing (the gpsd server's RawWriteQueue passes on `Frame.bytes`
//   of each whole frame, and drops what the framer holds unfinished): each frame's bytes,
//   framed alone, give that frame again and nothing else; all of them written one after the
//   other and followed by a driver's standby commands (UBX-RXM-PMREQ, `$PMTK161,0`) give
//   exactly those frames and then the commands, whole, whatever the writer sent; and what
//   the framer holds unfinished stays within the configured limits.

import NMEA

/// One thing the framer or decoder handed out, kept for comparison between runs.
enum Observed: Equatable {
  case sentence(bytes: [UInt8], hadChecksum: Bool)
  case ubx(messageClass: UInt8, messageID: UInt8, payload: [UInt8])
  case sirf(payload: [UInt8])
  case rtcm3(message: [UInt8])
  case casic(messageClass: UInt8, messageID: UInt8, payload: [UInt8])
  case parsed(Sentence)
  case parseError(NMEAParseError, bytes: [UInt8])
  case epoch(Epoch)
  case ubxEvent(messageClass: UInt8, messageID: UInt8, length: Int)
  case ubxMessage(String)
  case ubxRejected(UBXRejection)
  case sirfEvent(length: Int)
  case casicEvent(messageClass: UInt8, messageID: UInt8, length: Int)
}

/// Everything observable from one decoding run.
struct Run: Equatable {
  var frames: [Observed] = []
  var events: [Observed] = []
  var framerStatistics = FramerStatistics()
  var decoderStatistics = DecoderStatistics()
}

func check(_ condition: @autoclosure () -> Bool, _ message: @autoclosure () -> String) {
  if !condition() { fatalError("invariant violated: " + message()) }
}

/// Whether `date` is in the calendar (an impossible one, 31 February, does not survive the
/// round trip through a day count).
func isCalendarDate(_ date: UTCDate) -> Bool {
  UTCDate(daysSinceUnixEpoch: date.daysSinceUnixEpoch) == date
}

func checkPossible(_ fix: Fix) {
  if let date = fix.date { check(isCalendarDate(date), "impossible date \(date)") }
  if let speed = fix.speed { check(speed >= 0 && speed < 999 * 1852 / 3600, "speed \(speed)") }
  if let altitude = fix.altitudeMSL {
    check(altitude >= -1_000 && altitude <= 100_000, "altitude \(altitude)")
  }
  if let separation = fix.geoidSeparation { check(abs(separation) <= 200, "geoid \(separation)") }
  if let quality = fix.quality { check((0...8).contains(quality.rawValue), "quality \(quality)") }
  for dop in [fix.hdop, fix.vdop, fix.pdop, fix.tdop] {
    if let dop { check(dop >= 0 && dop < 99, "DOP \(dop)") }
  }
  if let course = fix.course { check(course >= 0 && course < 360, "course \(course)") }
  if let variation = fix.magneticVariation {
    check(abs(variation) <= 180, "magnetic variation \(variation)")
  }
}

/// An integer field as every build reads it: within what `Int32` holds, so a 32-bit board
/// and a 64-bit one agree (larger values are dropped as `integerRange`).
func checkInteger(_ value: Int?, _ what: @autoclosure () -> String) {
  if let value { check(abs(value) <= Int(Int32.max), "\(what()) \(value) beyond 32 bits") }
}

func checkPossible(_ sentence: Sentence) {
  switch sentence {
  case .gga(let gga):
    checkInteger(gga.satellitesUsed, "GGA satellites")
    checkInteger(gga.differentialStation, "GGA station")
  case .pubxTime(let pubx):
    checkInteger(pubx.leapSeconds, "PUBX,04 leap seconds")
    checkInteger(pubx.week, "PUBX,04 week")
    checkInteger(pubx.clockBias, "PUBX,04 clock bias")
  case .rmc(let rmc):
    if let date = rmc.date { check(isCalendarDate(date), "RMC date \(date)") }
    if let speed = rmc.speedKnots { check(speed >= 0 && speed < 999, "RMC speed \(speed)") }
    if let course = rmc.course { check(course >= 0 && course < 360, "RMC course \(course)") }
  case .zda(let zda):
    if let date = zda.date { check(isCalendarDate(date), "ZDA date \(date)") }
    checkInteger(zda.localZoneHours, "ZDA zone hours")
    checkInteger(zda.localZoneMinutes, "ZDA zone minutes")
  case .gsv(let gsv):
    for satellite in gsv {
      checkInteger(satellite.id, "GSV satellite")
      checkInteger(satellite.elevation, "GSV elevation")
      checkInteger(satellite.azimuth, "GSV azimuth")
      checkInteger(satellite.snr, "GSV SNR")
    }
    check(
      (1...9).contains(gsv.messageCount) && (1...gsv.messageCount).contains(gsv.messageNumber),
      "GSV message \(gsv.messageNumber) of \(gsv.messageCount)")
  case .vtg(let vtg):
    if let knots = vtg.speedKnots { check(knots >= 0 && knots < 999, "VTG speed \(knots)") }
    if let course = vtg.courseTrue { check(course >= 0 && course < 360, "VTG course \(course)") }
  default:
    break
  }
}

func checkPossible(_ position: Position?, _ what: String) {
  guard let position else { return }
  check(abs(position.latitude.decimalDegrees) <= 90, "\(what) latitude \(position)")
  check(abs(position.longitude.decimalDegrees) <= 180, "\(what) longitude \(position)")
}

func checkPossible(_ timestamp: UTCTimestamp?, _ what: String) {
  guard let timestamp else { return }
  check(isCalendarDate(timestamp.date), "\(what) date \(timestamp)")
  check(timestamp.time.hour < 24 && timestamp.time.minute < 60, "\(what) time \(timestamp)")
}

func checkPossible(_ satellite: Satellite?) {
  guard let satellite else { return }
  if let elevation = satellite.elevation { check(abs(elevation) <= 90, "elevation \(elevation)") }
  if let azimuth = satellite.azimuth { check((0..<360).contains(azimuth), "azimuth \(azimuth)") }
}

/// What a decoded UBX message says, as text that does not depend on where its payload was
/// (the views' pointers differ between runs), reading every block of its views.
func summary(_ message: UBXMessage) -> String {
  switch message {
  case .navPVT(let m):
    checkPossible(m.position, "NAV-PVT")
    checkPossible(m.timestamp, "NAV-PVT")
    if let speed = m.groundSpeed { check(speed >= 0, "NAV-PVT speed \(speed)") }
    if let heading = m.headingOfMotion { check(heading >= 0 && heading < 360, "heading") }
    return "\(m)"
  case .navPosLLH(let m):
    checkPossible(m.position, "NAV-POSLLH")
    return "\(m)"
  case .navHPPosLLH(let m):
    checkPossible(m.position, "NAV-HPPOSLLH")
    return "\(m)"
  case .navTimeUTC(let m):
    checkPossible(m.timestamp, "NAV-TIMEUTC")
    return "\(m)"
  case .navSat(let m):
    let satellites = m.satellites.map { element -> String in
      checkPossible(element.satellite)
      return "\(element.gnssID)/\(element.svID)/\(element.carrierToNoise)/\(element.used)"
    }
    return "NAV-SAT \(m.iTOW) " + satellites.joined(separator: ",")
  case .navSVInfo(let m):
    let channels = m.channels.map { element -> String in
      checkPossible(element.satellite)
      return "\(element.svid)/\(element.carrierToNoise)/\(element.used)"
    }
    return "NAV-SVINFO \(m.iTOW) " + channels.joined(separator: ",")
  case .navSig(let m):
    let signals = m.signals.map { "\($0.gnssID)/\($0.svID)/\($0.signalID)/\($0.used)" }
    return "NAV-SIG \(m.iTOW) " + signals.joined(separator: ",")
  case .monRF(let m):
    let blocks = m.blocks.map { "\($0.blockID)/\($0.jammingIndicator)/\($0.agcCount)" }
    return "MON-RF " + blocks.joined(separator: ",")
  case .monVer(let m):
    let fields = [m.software, m.hardware] + Array(m.extensions)
    return "MON-VER " + fields.map(UBXMonVer.text).joined(separator: "|")
  default:
    return "\(message)"
  }
}

/// The payload with every UBX frame in it given its right Fletcher checksum.
func fixingUBXChecksums(_ bytes: [UInt8]) -> [UInt8] {
  var out = bytes
  var index = 0
  while index + 8 <= out.count {
    if out[index] == 0xB5 && out[index + 1] == 0x62 {
      let end = index + 6 + (Int(out[index + 4]) | Int(out[index + 5]) << 8)
      if end + 2 <= out.count {
        var a: UInt8 = 0
        var b: UInt8 = 0
        for position in (index + 2)..<end {
          a = a &+ out[position]
          b = b &+ a
        }
        out[end] = a
        out[end + 1] = b
        index = end + 2
        continue
      }
    }
    index += 1
  }
  return out
}

/// The payload with every CASIC frame in it (`BA CE`, a length of whole words under 2 KiB)
/// given its right checksum.
func fixingCASICChecksums(_ bytes: [UInt8]) -> [UInt8] {
  var out = bytes
  var index = 0
  while index + 10 <= out.count {
    let length = Int(out[index + 2]) | Int(out[index + 3]) << 8
    let end = index + 6 + length
    if out[index] == 0xBA && out[index + 1] == 0xCE && length % 4 == 0
      && length <= CASICFraming.maximumPayloadLength && end + 4 <= out.count
    {
      let sum = out.withUnsafeBufferPointer {
        CASICFraming.checksum(
          messageClass: out[index + 4], messageID: out[index + 5],
          payload: UnsafeBufferPointer(rebasing: $0[(index + 6)..<end]))
      }
      for byte in 0..<4 { out[end + byte] = UInt8(truncatingIfNeeded: sum >> (8 * UInt32(byte))) }
      index = end + 4
      continue
    }
    index += 1
  }
  return out
}

func parse(_ raw: RawSentence) -> Observed {
  do {
    return .parsed(try Sentence(parsing: raw))
  } catch let error as NMEAParseError {
    return .parseError(error, bytes: Array(raw.bytes))
  } catch {
    fatalError("Sentence(parsing:) threw \(error), not an NMEAParseError")
  }
}

/// The driver's own standby commands, which follow what a raw-port writer wrote.
let standbyCommands: [UInt8] =
  [0xB5, 0x62, 0x02, 0x41, 0x08, 0x00, 0, 0, 0, 0, 0x02, 0, 0, 0, 0x4D, 0x3B]
  + Array("$PMTK161,0*28\r\n".utf8)

/// Frames `bytes` with a fresh framer: what a receiver would find in them.
func frames(of bytes: [UInt8], configuration: FramerConfiguration) -> (
  frames: [Observed], garbage: Int
) {
  var framer = NMEAFramer(configuration: configuration)
  var found: [Observed] = []
  framer.feed(bytes) { frame in found.append(observed(frame)) }
  return (found, framer.statistics.garbageBytes + framer.bytesInProgress)
}

func observed(_ frame: Frame) -> Observed {
  switch frame {
  case .sentence(let raw): return .sentence(bytes: Array(raw.bytes), hadChecksum: raw.hadChecksum)
  case .ubx(let view):
    return .ubx(
      messageClass: view.messageClass, messageID: view.messageID, payload: Array(view.payload))
  case .sirf(let view): return .sirf(payload: Array(view.payload))
  case .rtcm3(let view): return .rtcm3(message: Array(view.message))
  case .casic(let view):
    return .casic(
      messageClass: view.messageClass, messageID: view.messageID, payload: Array(view.payload))
  }
}

/// Runs the payload through a framer and a decoder in the given pieces.
func run(_ payload: [UInt8], pieces: [Range<Int>], configuration: FramerConfiguration) -> Run {
  var result = Run()
  var framer = NMEAFramer(configuration: configuration)
  var decoder = NMEADecoder(configuration: configuration)
  var sentences = 0
  var ubx = 0
  var sirf = 0
  var rtcm3 = 0
  var casic = 0
  var parseErrors = 0
  var impossibleValues = 0
  var epochs = 0
  var ubxMessages = 0
  var ubxRejections = 0

  var written: [UInt8] = []
  let onFrame: (Frame) -> Void = { frame in
    // What the raw port's writer would pass on: the frame alone, found again whole.
    let wire = frame.bytes
    let again = frames(of: wire, configuration: configuration)
    check(
      again.frames == [observed(frame)] && again.garbage == 0,
      "a frame's bytes framed again give \(again.frames), \(again.garbage) bytes left over")
    written += wire
    switch frame {
    case .sentence(let raw):
      sentences += 1
      let bytes = Array(raw.bytes)
      result.frames.append(.sentence(bytes: bytes, hadChecksum: raw.hadChecksum))
      check(bytes.count >= 2, "sentence shorter than two bytes")
      check(bytes.count <= configuration.maximumSentenceLength, "sentence over the limit")
      check(bytes[0] == 0x24 || bytes[0] == 0x21, "sentence without a start character")
      check(bytes.allSatisfy { $0 >= 0x20 && $0 < 0x7F }, "control or binary byte in a sentence")
      if raw.hadChecksum { check(!bytes.dropFirst().contains(0x2A), "star left in a sentence") }
      check(
        configuration.checksumPolicy == .lenient || raw.hadChecksum,
        "sentence without checksum accepted in strict mode")
      // Parsing is a pure function of the bytes.
      check(parse(raw) == parse(raw), "parsing not deterministic")
    case .ubx(let view):
      ubx += 1
      result.frames.append(
        .ubx(
          messageClass: view.messageClass, messageID: view.messageID, payload: Array(view.payload)))
    case .sirf(let view):
      sirf += 1
      result.frames.append(.sirf(payload: Array(view.payload)))
    case .rtcm3(let view):
      rtcm3 += 1
      check(view.message.count <= RTCM3.maximumMessageLength, "RTCM 3 message over 1023 bytes")
      result.frames.append(.rtcm3(message: Array(view.message)))
    case .casic(let view):
      casic += 1
      check(
        view.payload.count <= CASICFraming.maximumPayloadLength, "CASIC payload over 2 KiB")
      result.frames.append(observed(frame))
    }
  }

  let onEvent: (DecoderEvent) -> Void = { event in
    switch event {
    case .sentence(let sentence):
      checkPossible(sentence)
      result.events.append(.parsed(sentence))
    case .parseError(let raw, let error):
      parseErrors += 1
      if case .impossibleValue(let reason, _) = error {
        check(
          reason == .timeOfDay || reason == .messageNumber,
          "a sentence refused for \(reason), a value that drops only its field")
        impossibleValues += 1
      }
      result.events.append(.parseError(error, bytes: Array(raw.bytes)))
    case .epoch(let epoch):
      epochs += 1
      let fix = epoch.fix
      if let latitude = fix.latitude { check(abs(latitude) <= 90, "latitude \(latitude)") }
      if let longitude = fix.longitude { check(abs(longitude) <= 180, "longitude \(longitude)") }
      if fix.mode == .noFix { check(fix.position == nil, "a position without a fix") }
      if fix.mode != .noFix { check(fix.time != nil, "a fix without a time of day") }
      checkPossible(fix)
      result.events.append(.epoch(epoch))
    case .ubx(let view):
      result.events.append(
        .ubxEvent(
          messageClass: view.messageClass, messageID: view.messageID, length: view.payload.count))
    case .ubxMessage(let message):
      ubxMessages += 1
      result.events.append(.ubxMessage(summary(message)))
    case .ubxRejected(_, let reason):
      ubxRejections += 1
      result.events.append(.ubxRejected(reason))
    case .sirf(let view):
      result.events.append(.sirfEvent(length: view.payload.count))
    case .casic(let view):
      result.events.append(
        .casicEvent(
          messageClass: view.messageClass, messageID: view.messageID, length: view.payload.count))
    }
  }

  payload.withUnsafeBytes { raw in
    for piece in pieces {
      let chunk = UnsafeRawBufferPointer(rebasing: raw[piece])
      framer.feed(chunk, onFrame)
      decoder.decode(chunk, onEvent)
      check(
        framer.bytesInProgress
          <= max(
            configuration.maximumBinaryFrameLength, configuration.maximumSentenceLength + 2),
        "\(framer.bytesInProgress) bytes held unfinished, over the limits")
    }
  }
  // Both reach the end of the input: the decoder's framer counts and rescans an unfinished
  // frame there, so the framer alone does too.
  framer.finish(onFrame)
  decoder.finish(onEvent)

  // The writer's whole frames, then the driver's standby: nothing of the writer's swallows
  // a command, however it ended.
  let receiver = frames(of: written + standbyCommands, configuration: configuration)
  let standby = frames(of: standbyCommands, configuration: configuration).frames
  check(standby.count == 2, "the standby commands frame as two")
  check(
    receiver.frames == result.frames + standby && receiver.garbage == 0,
    "the receiver would see \(receiver.frames.count) frames, \(receiver.garbage) bytes of "
      + "garbage, for \(result.frames.count) written and the standby")

  let statistics = framer.statistics
  check(
    statistics.sentences == sentences,
    "framer counted \(statistics.sentences), delivered \(sentences)")
  check(statistics.ubxFrames == ubx, "UBX frames counted \(statistics.ubxFrames), delivered \(ubx)")
  check(
    statistics.sirfFrames == sirf, "SiRF frames counted \(statistics.sirfFrames), delivered \(sirf)"
  )
  check(
    statistics.rtcm3Frames == rtcm3,
    "RTCM 3 frames counted \(statistics.rtcm3Frames), delivered \(rtcm3)")
  check(
    statistics.casicFrames == casic,
    "CASIC frames counted \(statistics.casicFrames), delivered \(casic)")
  check(statistics.garbageBytes <= payload.count, "more garbage than input")
  check(
    statistics.sentences + statistics.rejectedSentences <= payload.count,
    "more sentences than bytes")
  let decoderStatistics = decoder.statistics
  check(decoderStatistics.framer == statistics, "framer inside the decoder counted differently")
  check(decoderStatistics.parseErrors == parseErrors, "parse errors counted differently")
  // The values dropped are counted too, with no error: the refusals are the reasons that
  // refuse, exactly.
  let refusing = decoderStatistics.impossibleValues
  check(
    refusing.timeOfDay + refusing.messageNumber == impossibleValues,
    "sentences refused for impossible values counted differently")
  check(decoderStatistics.builder.epochs == epochs, "epochs counted differently")
  check(parseErrors <= sentences, "more parse errors than sentences")
  let ubxStatistics = decoderStatistics.ubx
  check(ubxStatistics.decoded == ubxMessages, "UBX messages counted differently")
  check(ubxStatistics.rejected == ubxRejections, "UBX refusals counted differently")
  check(
    ubxStatistics.decoded + ubxStatistics.notDecoded + ubxStatistics.rejected
      == statistics.ubxFrames, "UBX frames neither decoded, passed on nor refused")
  let casicStatistics = decoderStatistics.casic
  check(
    casicStatistics.decoded + casicStatistics.notDecoded + casicStatistics.rejected
      == statistics.casicFrames, "CASIC frames neither decoded, passed on nor refused")
  result.framerStatistics = statistics
  result.decoderStatistics = decoderStatistics
  return result
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
  guard size > 0 else { return 0 }
  let input = Array(UnsafeBufferPointer(start: data, count: size))
  let control = input[0]
  let splitCount = Int(control & 0x0F)
  let headerLength = 1 + 2 * splitCount
  guard input.count >= headerLength else { return 0 }
  let given = Array(input[headerLength...])
  let payload = control & 0x80 != 0 ? fixingCASICChecksums(fixingUBXChecksums(given)) : given
  let configuration = FramerConfiguration(
    maximumSentenceLength: control & 0x20 != 0 ? 82 : 128,
    checksumPolicy: control & 0x10 != 0 ? .lenient : .strict)

  var splits: [Int] = []
  for index in 0..<splitCount {
    let value = Int(input[1 + 2 * index]) | Int(input[2 + 2 * index]) << 8
    splits.append(value % (payload.count + 1))
  }
  splits.sort()
  var pieces: [Range<Int>] = []
  var start = 0
  for split in splits + [payload.count] {
    pieces.append(start..<split)
    start = split
  }

  let whole = run(payload, pieces: [0..<payload.count], configuration: configuration)
  let split = run(payload, pieces: pieces, configuration: configuration)
  check(whole == split, "output depends on the split points \(splits)")
  if control & 0x40 != 0 {
    let bytewise = run(
      payload, pieces: payload.indices.map { $0..<($0 + 1) }, configuration: configuration)
    check(whole == bytewise, "output differs when fed one byte at a time")
  }
  return 0
}
