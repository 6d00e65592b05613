/// RTCM 3 transport frames (RTCM 10403, section 4): preamble `0xD3`, six reserved bits that
/// are zero, a 10-bit length (0…1023 bytes of message), the message, and CRC-24Q over
/// everything before it. ``NMEAFramer`` finds them in a receiver's stream (an RTK receiver
/// echoes or sends them) and in what a raw-port writer or an NTRIP caster sends.
public enum RTCM3 {
  /// The first byte of every frame.
  public static let preamble: UInt8 = 0xD3
  /// The longest message a frame holds.
  public static let maximumMessageLength = 1023
  /// The longest frame: 3 header bytes, 1023 of message, 3 of CRC.
  public static let maximumFrameLength = 3 + maximumMessageLength + 3

  /// CRC-24Q (polynomial 0x1864CFB, initial value zero), as RTCM 3 and SBAS use it (gpsd's
  /// crc24q.c uses the same polynomial).
  public static func crc24q<Bytes: Sequence>(_ bytes: Bytes) -> UInt32
  where Bytes.Element == UInt8 {
    var crc: UInt32 = 0
    for byte in bytes {
      crc ^= UInt32(byte) << 16
      for _ in 0..<8 {
        crc <<= 1
        if crc & 0x100_0000 != 0 { crc ^= 0x186_4CFB }
      }
    }
    return crc & 0xFF_FFFF
  }

  /// The whole frame around `message` (at most ``maximumMessageLength`` bytes), with its CRC.
  public static func frame<Message: Collection>(message: Message) -> [UInt8]
  where Message.Element == UInt8 {
    precondition(
      message.count <= maximumMessageLength, "an RTCM 3 message holds at most 1023 bytes")
    var out: [UInt8] = [preamble, UInt8(message.count >> 8), UInt8(message.count & 0xFF)]
    out.reserveCapacity(message.count + 6)
    out += message
    let crc = crc24q(out)
    out += [UInt8(crc >> 16 & 0xFF), UInt8(crc >> 8 & 0xFF), UInt8(crc & 0xFF)]
    return out
  }
}

/// An RTCM 3 frame whose CRC matched.
public struct RTCM3FrameView {
  /// The message (its first 12 bits are the message number); valid only inside the closure
  /// it was passed to.
  public let message: UnsafeBufferPointer<UInt8>

  /// The message number (1005, 1077, …), or `nil` for an empty message.
  public var messageNumber: Int? {
    guard message.count >= 2 else { return nil }
    return Int(message[0]) << 4 | Int(message[1]) >> 4
  }
}
