/// The one table from a sentence's address to its type (``NMEASentenceDescriptor``): a row
/// per type, as gpsd's `nmea_phrase` table has, and a row per alias (Quectel's `$PQGSV` is
/// a GSV of talker `PQ`; `$PMTK011` is the text form of `$PMTK010`). Every sentence is
/// parsed through it, by ``Sentence/init(parsing:)`` and by ``NMEADecoder`` alike; an address
/// without a row is ``Sentence/unknown(_:)``.
///
/// Two parts, for speed only: the standard sentences, found by their three letters after a
/// talker in one comparison per row (the four a receiver sends most come first and are
/// parsed inline), and everything else (proprietary addresses, unknown and malformed ones),
/// out of line.
enum SentenceRegistry {
  @inline(__always)
  static func parse<Consumer: ParsedSentenceConsumer>(
    _ raw: RawSentence, into consumer: inout Consumer, emit: (DecoderEvent) throws -> Void
  ) rethrows -> Consumer.Result {
    let bytes = raw.bytes
    // `$TTXXX` followed by a comma or the end: a five-character address of letters and
    // digits, not proprietary. (A row's three letters are letters: a match needs no check.)
    if bytes.count >= 6, bytes.count == 6 || bytes[6] == ASCII.comma, bytes[1] != 0x50,
      isAlphanumeric(bytes[1]), isAlphanumeric(bytes[2])
    {
      let talker = Talker(bytes[1], bytes[2])
      let address = SentenceAddress(
        standard: UInt32(bytes[3]) << 16 | UInt32(bytes[4]) << 8 | UInt32(bytes[5]))
      switch address {
      case GGA.address:
        return try Sentence.parse(raw, as: GGA.self, talker: talker, into: &consumer, emit: emit)
      case RMC.address:
        return try Sentence.parse(raw, as: RMC.self, talker: talker, into: &consumer, emit: emit)
      case GSA.address:
        return try Sentence.parse(raw, as: GSA.self, talker: talker, into: &consumer, emit: emit)
      case GSV.address:
        return try Sentence.parse(raw, as: GSV.self, talker: talker, into: &consumer, emit: emit)
      case GLL.address:
        return try Sentence.parseOutOfLine(
          raw, as: GLL.self, talker: talker, into: &consumer, emit: emit)
      case VTG.address:
        return try Sentence.parseOutOfLine(
          raw, as: VTG.self, talker: talker, into: &consumer, emit: emit)
      case ZDA.address:
        return try Sentence.parseOutOfLine(
          raw, as: ZDA.self, talker: talker, into: &consumer, emit: emit)
      case GST.address:
        return try Sentence.parseOutOfLine(
          raw, as: GST.self, talker: talker, into: &consumer, emit: emit)
      case GNS.address:
        return try Sentence.parseOutOfLine(
          raw, as: GNS.self, talker: talker, into: &consumer, emit: emit)
      case GBS.address:
        return try Sentence.parseOutOfLine(
          raw, as: GBS.self, talker: talker, into: &consumer, emit: emit)
      case GRS.address:
        return try Sentence.parseOutOfLine(
          raw, as: GRS.self, talker: talker, into: &consumer, emit: emit)
      case DTM.address:
        return try Sentence.parseOutOfLine(
          raw, as: DTM.self, talker: talker, into: &consumer, emit: emit)
      case TXT.address:
        return try Sentence.parseOutOfLine(
          raw, as: TXT.self, talker: talker, into: &consumer, emit: emit)
      default: break
      }
    }
    return try parseOther(raw, into: &consumer, emit: emit)
  }

  /// Proprietary sentences, standard ones without a row, and malformed addresses.
  @inline(never)
  static func parseOther<Consumer: ParsedSentenceConsumer>(
    _ raw: RawSentence, into consumer: inout Consumer, emit: (DecoderEvent) throws -> Void
  ) rethrows -> Consumer.Result {
    let bytes = raw.bytes
    var addressEnd = 1
    while addressEnd < bytes.count && bytes[addressEnd] != ASCII.comma {
      guard isAlphanumeric(bytes[addressEnd]) else {
        return try consumer.reject(raw, .badAddress, emit: emit)
      }
      addressEnd += 1
    }
    guard addressEnd - 1 >= 2 else { return try consumer.reject(raw, .badAddress, emit: emit) }
    guard bytes[1] == 0x50 else {  // not 'P': a standard type without a row
      let unknown = Sentence.unknown(raw, talker: Talker(bytes[1], bytes[2]))
      return try consumer.takeUnknown(unknown, emit: emit)
    }
    // `PUBX` names its message in the first field: the address is `PUBX,nn`.
    var end = addressEnd
    var skipping = 0
    if addressEnd == 5, bytes[1..<5].elementsEqual("PUBX".utf8), addressEnd + 3 <= bytes.count,
      addressEnd + 3 == bytes.count || bytes[addressEnd + 3] == ASCII.comma
    {
      end = addressEnd + 3
      skipping = 1
    }
    guard end - 1 <= 8 else {
      return try consumer.takeUnknown(Sentence.unknown(raw, talker: .proprietary), emit: emit)
    }
    switch SentenceAddress(UnsafeBufferPointer(rebasing: bytes[1..<end])) {
    case PUBXPosition.address:
      return try Sentence.parse(
        raw, as: PUBXPosition(talker: .proprietary), skipping: skipping, into: &consumer,
        emit: emit)
    case PUBXSatellites.address:
      return try Sentence.parse(
        raw, as: PUBXSatellites(talker: .proprietary), skipping: skipping, into: &consumer,
        emit: emit)
    case PUBXTime.address:
      return try Sentence.parse(
        raw, as: PUBXTime(talker: .proprietary), skipping: skipping, into: &consumer,
        emit: emit)
    case "PQGSV": return try Sentence.parse(raw, as: GSV(talker: .pq), into: &consumer, emit: emit)
    case "PQGSA": return try Sentence.parse(raw, as: GSA(talker: .pq), into: &consumer, emit: emit)
    case MTKAcknowledgement.address:
      return try Sentence.parse(
        raw, as: MTKAcknowledgement(talker: .proprietary), into: &consumer, emit: emit)
    case MTKSystemMessage.address:
      return try Sentence.parse(
        raw, as: MTKSystemMessage(talker: .proprietary), into: &consumer, emit: emit)
    case MTKSystemMessage.textAddress:
      return try Sentence.parse(raw, as: MTKSystemMessage.text, into: &consumer, emit: emit)
    case GarminErrorEstimates.address:
      return try Sentence.parse(
        raw, as: GarminErrorEstimates(talker: .proprietary), into: &consumer, emit: emit)
    case GarminAltitude.address:
      return try Sentence.parse(
        raw, as: GarminAltitude(talker: .proprietary), into: &consumer, emit: emit)
    case GarminDatum.address:
      return try Sentence.parse(
        raw, as: GarminDatum(talker: .proprietary), into: &consumer, emit: emit)
    default:
      return try consumer.takeUnknown(Sentence.unknown(raw, talker: .proprietary), emit: emit)
    }
  }

  @inline(__always)
  static func isAlphanumeric(_ byte: UInt8) -> Bool {
    (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte)
  }
}
