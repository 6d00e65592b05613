import NMEA

/// Builds NMEA command sentences for the wire from what people type.
public enum NMEACommand {
  /// The longest command accepted, from `$` through the checksum. NMEA 0183 allows 82 bytes
  /// with the line ending; some proprietary commands are longer, none this long.
  public static let maximumLength = 128

  /// A complete command sentence: `$`, the body, `*hh`, CR LF.
  ///
  /// Accepts `PMTK161,0`, `$PMTK161,0` and `$PMTK161,0*28` (with or without CR LF): what is
  /// missing is added, a stated checksum is verified. Throws a ``ChipsetCommandError`` that
  /// says what is wrong for an empty command, a wrong checksum, a character that cannot be
  /// sent, or an over-long sentence.
  public static func frame(_ text: String) throws(ChipsetCommandError) -> [UInt8] {
    let body = try body(of: text)
    let framed = NMEAChecksum.frame(body)
    guard framed.count - 2 <= maximumLength else { throw .sentenceTooLong(framed.count - 2) }
    return framed
  }

  /// The body of a command (between `$` and `*`), checked as ``frame(_:)`` checks it.
  public static func body(of text: String) throws(ChipsetCommandError) -> String {
    var bytes = Array(text.utf8)
    while let last = bytes.last, last == 0x0D || last == 0x0A || last == 0x20 || last == 0x09 {
      bytes.removeLast()
    }
    while let first = bytes.first, first == 0x20 || first == 0x09 { bytes.removeFirst() }
    if bytes.first == 0x24 { bytes.removeFirst() }  // $
    var stated: [UInt8]?
    if let star = bytes.firstIndex(of: 0x2A) {  // *
      stated = Array(bytes[(star + 1)...])
      bytes.removeSubrange(star...)
    }
    guard !bytes.isEmpty else { throw .empty }
    let body = String(decoding: bytes, as: UTF8.self)
    for byte in bytes {
      let printable = (0x20...0x7E).contains(byte)
      guard printable, byte != 0x24, byte != 0x21, byte != 0x2A else {
        throw .invalidNMEACharacter(text)
      }
    }
    if let stated {
      let computed = NMEAChecksum.compute(bytes)
      let statedText = String(decoding: stated, as: UTF8.self)
      guard stated.count == 2, let high = hexValue(stated[0]), let low = hexValue(stated[1]),
        high << 4 | low == computed
      else {
        throw .checksumMismatch(stated: statedText, computed: hex(computed))
      }
    }
    return body
  }

  static func hexValue(_ byte: UInt8) -> UInt8? {
    switch byte {
    case 0x30...0x39: return byte - 0x30
    case 0x41...0x46: return byte - 0x41 + 10
    case 0x61...0x66: return byte - 0x61 + 10
    default: return nil
    }
  }
}

/// A command typed by a person (`serialgps send DEVICE RAW`), turned into a step for a
/// chipset family: framed, checksummed, and with the acknowledgement the receiver gives.
public enum RawCommand {
  /// Builds the step for `text` sent to a receiver of `family`: its driver's
  /// ``ChipsetDriver/rawStep(_:)``.
  ///
  /// - u-blox: UBX as hex bytes, class and ID first (`06 04 00 00 08 00`, `0x06,0x04,…`), a
  ///   message name and payload bytes (`CFG-RST 00 00 08 00`), or a whole frame starting
  ///   `B5 62` whose checksum is verified; anything else is an NMEA command such as
  ///   `PUBX,40,GLL,0,0,0,0`. `UBX-CFG` messages other than `CFG-RST` expect `UBX-ACK-ACK`.
  /// - MediaTek: an NMEA command; `$PMTKnnn` set commands expect `$PMTK001,nnn,3` (queries,
  ///   `PMTK4xx` and `PMTK6xx`, are answered by data sentences instead).
  /// - SiRF: an NMEA command, never acknowledged.
  /// - generic NMEA: throws ``ChipsetCommandError/noCommands(_:)``: the driver writes only to
  ///   receivers of a known family.
  public static func step(_ text: String, family: ChipsetFamily) throws(ChipsetCommandError)
    -> CommandStep
  {
    try family.driver.rawStep(text)
  }

  /// An NMEA command sentence for `text`, expecting the acknowledgement the family whose
  /// address it carries gives (``ChipsetDriver/expectedAcknowledgement(forAddress:)``).
  public static func nmeaStep(_ text: String) throws(ChipsetCommandError) -> CommandStep {
    let body = try NMEACommand.body(of: text)
    let bytes = try NMEACommand.frame(body)
    var expectation = AcknowledgementExpectation.none
    let address = body.prefix { $0 != "," }
    for driver in ChipsetRegistry.all {
      if let expected = driver.expectedAcknowledgement(forAddress: address) {
        expectation = expected
        break
      }
    }
    return CommandStep(bytes: bytes, summary: "$" + body, acknowledgement: expectation)
  }

  /// A UBX command for `text`; `nil` when the text is not UBX at all (so it is tried as NMEA).
  public static func ubxStep(_ text: String) throws(ChipsetCommandError) -> CommandStep? {
    let trimmed = text.trimmingSpaces()
    if trimmed.hasPrefix("$") { return nil }
    var tokens = trimmed.split { $0 == " " || $0 == "," || $0 == ":" || $0 == "\t" }.map(
      String.init)
    guard let first = tokens.first else { throw .empty }
    var message: UBXMessageID?
    if let named = UBXMessageID(name: first) {
      message = named
      tokens.removeFirst()
    } else if first.contains("-") {
      throw .invalidUBX(text)
    }
    var bytes: [UInt8] = []
    for token in tokens {
      guard let value = hexByte(token) else {
        if message == nil && bytes.isEmpty { return nil }  // not hex: an NMEA body
        throw .invalidUBX(text)
      }
      bytes.append(value)
    }
    if message == nil {
      if bytes.count >= 2, bytes[0] == UBX.sync.0, bytes[1] == UBX.sync.1 {
        return try wholeFrame(bytes, text: text)
      }
      guard bytes.count >= 2 else { throw .invalidUBX(text) }
      message = UBXMessageID(bytes[0], bytes[1])
      bytes.removeFirst(2)
    }
    let id = message!
    let frame = try UBX.frame(id, payload: bytes)
    return CommandStep(
      bytes: frame, summary: "\(id) with \(bytes.count)-byte payload",
      acknowledgement: expectation(for: id))
  }

  static func wholeFrame(_ bytes: [UInt8], text: String) throws(ChipsetCommandError)
    -> CommandStep
  {
    guard bytes.count >= 8 else { throw .invalidUBX(text) }
    let length = Int(bytes[4]) | Int(bytes[5]) << 8
    guard bytes.count == length + 8 else { throw .invalidUBX(text) }
    let sum = UBX.checksum(bytes[2..<(bytes.count - 2)])
    guard sum.a == bytes[bytes.count - 2], sum.b == bytes[bytes.count - 1] else {
      throw .checksumMismatch(
        stated: hex(bytes[bytes.count - 2]) + " " + hex(bytes[bytes.count - 1]),
        computed: hex(sum.a) + " " + hex(sum.b))
    }
    let id = UBXMessageID(bytes[2], bytes[3])
    return CommandStep(
      bytes: bytes, summary: "\(id) with \(length)-byte payload",
      acknowledgement: expectation(for: id))
  }

  /// Every `UBX-CFG` input message is acknowledged, except `CFG-RST`, which resets before it
  /// could answer (UBX-13003221 §32.10 "UBX-CFG" introduction and §32.10.29 "UBX-CFG-RST").
  static func expectation(for id: UBXMessageID) -> AcknowledgementExpectation {
    id.messageClass == 0x06 && id != .cfgRst ? .ubx(id) : .none
  }

  static func hexByte(_ token: String) -> UInt8? {
    var digits = Substring(token)
    if digits.hasPrefix("0x") || digits.hasPrefix("0X") { digits = digits.dropFirst(2) }
    guard (1...2).contains(digits.count) else { return nil }
    return UInt8(digits, radix: 16)
  }
}
