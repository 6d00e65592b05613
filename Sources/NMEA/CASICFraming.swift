// CASIC binary framing (Zhongke AT6558 / AT6558R: Quectel L76K, ATGM336H), from the CASIC
// Multimode Satellite Navigation Receiver Protocol Specification V4.2.0.3, section 2 ("CASIC
// binary message structure"): `BA CE`, the payload's length (u16, little-endian), class, ID,
// the payload, and a 32-bit checksum (little-endian): the payload's 32-bit little-endian words
// added to `(ID << 24) + (class << 16) + length`, modulo 2^32. The payload is a whole number of
// words and under 2 KiB. The framer (Framer.swift) finds the sync bytes and counts the bytes;
// what is CASIC's is here. docs/casic.md.

/// A CASIC binary frame (`BA CE`, length, class, ID, payload, checksum).
public struct CASICFrameView {
  public let messageClass: UInt8
  public let messageID: UInt8
  /// The payload; valid only inside the closure it was passed to.
  public let payload: UnsafeBufferPointer<UInt8>

  public init(messageClass: UInt8, messageID: UInt8, payload: UnsafeBufferPointer<UInt8>) {
    self.messageClass = messageClass
    self.messageID = messageID
    self.payload = payload
  }
}

/// The CASIC frame's layout and checksum.
public enum CASICFraming {
  /// The two sync bytes.
  public static let sync: (UInt8, UInt8) = (0xBA, 0xCE)
  /// Sync, length, class and ID.
  static let headerLength = 6
  /// The checksum after the payload.
  static let checksumLength = 4
  /// The spec's bound: a payload is shorter than 2 KiB.
  public static let maximumPayloadLength = 2047

  /// The whole frame's length from its header (sync, length, class, ID), or `nil` when the
  /// length field cannot be a CASIC payload's (2 KiB or more, or not whole 32-bit words).
  static func frameLength(header: [UInt8]) -> Int? {
    let payload = Int(header[2]) | Int(header[3]) << 8
    guard payload <= maximumPayloadLength, payload % 4 == 0 else { return nil }
    return headerLength + payload + checksumLength
  }

  /// The checksum of a message of `messageClass` and `messageID` with `payload` (whole 32-bit
  /// words; a last partial word counts as if zero-padded).
  public static func checksum(
    messageClass: UInt8, messageID: UInt8, payload: UnsafeBufferPointer<UInt8>
  ) -> UInt32 {
    var sum = UInt32(messageID) << 24 &+ UInt32(messageClass) << 16 &+ UInt32(payload.count)
    var index = 0
    while index < payload.count {
      var word: UInt32 = 0
      for byte in 0..<min(4, payload.count - index) {
        word |= UInt32(payload[index + byte]) << (8 * UInt32(byte))
      }
      sum = sum &+ word
      index += 4
    }
    return sum
  }

  /// The frame of a message on the wire: sync, length, class, ID, `payload`, checksum (a
  /// command to the receiver, or a frame handed on as it came).
  public static func frame(messageClass: UInt8, messageID: UInt8, payload: [UInt8]) -> [UInt8] {
    let length = payload.count
    var out: [UInt8] = [
      sync.0, sync.1, UInt8(truncatingIfNeeded: length), UInt8(truncatingIfNeeded: length >> 8),
      messageClass, messageID,
    ]
    out.reserveCapacity(length + headerLength + checksumLength)
    out += payload
    let sum = payload.withUnsafeBufferPointer {
      checksum(messageClass: messageClass, messageID: messageID, payload: $0)
    }
    for shift in stride(from: 0, to: 32, by: 8) {
      out.append(UInt8(truncatingIfNeeded: sum >> shift))
    }
    return out
  }
}

extension NMEAFramer {
  /// The length of the CASIC frame whose header the binary buffer holds, or more than any
  /// frame may be (so that the framer rejects it) when its length field cannot be CASIC's.
  @usableFromInline
  func casicFrameLength() -> Int {
    CASICFraming.frameLength(header: binary) ?? Int.max
  }

  /// Whether the CASIC frame the binary buffer holds has the checksum it states.
  @usableFromInline
  func casicChecksumMatches() -> Bool {
    let end = binary.count - CASICFraming.checksumLength
    let stated =
      UInt32(binary[end]) | UInt32(binary[end + 1]) << 8 | UInt32(binary[end + 2]) << 16
      | UInt32(binary[end + 3]) << 24
    return binary.withUnsafeBufferPointer { frame in
      CASICFraming.checksum(
        messageClass: frame[4], messageID: frame[5],
        payload: UnsafeBufferPointer(rebasing: frame[CASICFraming.headerLength..<end])) == stated
    }
  }

  /// Delivers the CASIC frame the binary buffer holds, its checksum checked.
  @usableFromInline
  mutating func deliverCASICFrame(_ body: (Frame) throws -> Void) rethrows {
    state = .hunting
    let end = binary.count - CASICFraming.checksumLength
    try binary.withUnsafeBufferPointer { frame in
      try body(
        .casic(
          CASICFrameView(
            messageClass: frame[4], messageID: frame[5],
            payload: UnsafeBufferPointer(rebasing: frame[CASICFraming.headerLength..<end]))))
    }
    binary.removeAll(keepingCapacity: true)
  }
}
