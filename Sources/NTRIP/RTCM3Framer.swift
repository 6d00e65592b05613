/// RTCM 3 transport frames, checked before anything reaches the receiver: preamble `0xD3`,
/// six reserved bits that are zero, a 10-bit length (0…1023 bytes of message), the message,
/// and CRC-24Q over everything before it (RTCM 10403, section 4; gpsd's crc24q.c uses the
/// same polynomial).
///
/// The framer holds at most one frame's worth of bytes (1029), so a stream of garbage or a
/// frame cut short costs nothing but its own bytes: a header whose reserved bits are not zero
/// or a frame whose CRC fails is counted, and the search for the next preamble starts at the
/// byte after the rejected one, so a frame that follows the damage is still found whole.
///
/// ```swift
/// var framer = RTCM3Framer()
/// framer.append(bytes) { frame in receiver.write(Array(frame)) }
/// ```
public struct RTCM3Framer: Sendable {
  /// The longest frame: 3 header bytes, 1023 of message, 3 of CRC.
  public static let maximumFrameLength = 3 + 1023 + 3

  /// What the framer saw.
  public struct Counts: Sendable, Hashable {
    /// Whole frames whose CRC matched (each was handed out).
    public var frames = 0
    /// Frames whose header was whole and CRC did not match: refused, never handed out.
    public var crcErrors = 0
    /// Bytes skipped while looking for a preamble (garbage, or the bytes of a refused frame).
    public var bytesSkipped = 0

    public init() {}
  }

  public private(set) var counts = Counts()
  private var buffer: [UInt8] = []

  public init() {
    buffer.reserveCapacity(Self.maximumFrameLength)
  }

  /// Bytes held for a frame not yet whole.
  public var pendingByteCount: Int { buffer.count }

  /// Feeds `bytes`; `frame` is called with every whole frame whose CRC matched, header to
  /// CRC, in order.
  public mutating func append(_ bytes: some Collection<UInt8>, frame: ([UInt8]) -> Void) {
    for byte in bytes {
      if buffer.isEmpty && byte != 0xD3 {
        counts.bytesSkipped += 1
        continue
      }
      buffer.append(byte)
      scan(frame)
    }
  }

  /// Forgets a partial frame (the connection it came from ended); it is counted as skipped.
  public mutating func reset() {
    counts.bytesSkipped += buffer.count
    buffer.removeAll(keepingCapacity: true)
  }

  /// Decides on the buffer after each byte: waits, hands out a frame, or drops the first
  /// byte and looks for the next preamble in what is left.
  private mutating func scan(_ frame: ([UInt8]) -> Void) {
    while !buffer.isEmpty {
      if buffer.count < 2 { return }
      // The six reserved bits after the preamble are zero in RTCM 3.
      if buffer[1] & 0xFC != 0 {
        dropFirstAndResync()
        continue
      }
      if buffer.count < 3 { return }
      let length = Int(buffer[1] & 0x03) << 8 | Int(buffer[2])
      let total = 3 + length + 3
      if buffer.count < total { return }
      let crc = RTCM3Framer.crc24q(buffer[0..<(3 + length)])
      let sent =
        UInt32(buffer[3 + length]) << 16 | UInt32(buffer[4 + length]) << 8
        | UInt32(buffer[5 + length])
      if crc == sent {
        counts.frames += 1
        if buffer.count == total {
          frame(buffer)
          buffer.removeAll(keepingCapacity: true)
        } else {
          // Bytes kept after a resync can hold a frame and the start of the next.
          frame(Array(buffer[0..<total]))
          buffer.removeFirst(total)
          dropToPreamble()
        }
        continue
      }
      counts.crcErrors += 1
      dropFirstAndResync()
    }
  }

  /// Drops the first byte (a preamble that led nowhere) and whatever follows up to the next
  /// `0xD3`, which may begin the real frame.
  private mutating func dropFirstAndResync() {
    counts.bytesSkipped += 1
    buffer.removeFirst()
    dropToPreamble()
  }

  private mutating func dropToPreamble() {
    var next = 0
    while next < buffer.count && buffer[next] != 0xD3 { next += 1 }
    counts.bytesSkipped += next
    buffer.removeFirst(next)
  }

  /// CRC-24Q (polynomial 0x1864CFB, initial value zero), as RTCM 3 and SBAS use it.
  public static func crc24q(_ bytes: some Collection<UInt8>) -> UInt32 {
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

  /// A whole frame around `message` (at most 1023 bytes), with its CRC: for tests and
  /// fixtures that need valid frames.
  public static func frame(message: [UInt8]) -> [UInt8] {
    precondition(message.count <= 1023, "an RTCM 3 message holds at most 1023 bytes")
    var out: [UInt8] = [0xD3, UInt8(message.count >> 8), UInt8(message.count & 0xFF)]
    out += message
    let crc = crc24q(out)
    out += [UInt8(crc >> 16 & 0xFF), UInt8(crc >> 8 & 0xFF), UInt8(crc & 0xFF)]
    return out
  }
}
