/// One NMEA sentence as it arrived: the bytes from the start character (`$` or `!`) up to,
/// not including, the `*` before the checksum.
///
/// The bytes belong to the framer or to the buffer being fed: a `RawSentence` is valid only
/// inside the closure it was passed to. Parse it (``Sentence/init(parsing:)``) or copy it
/// (``text``) to keep it.
public struct RawSentence {
  /// `$GPGGA,...` without `*hh` and line ending.
  public let bytes: UnsafeBufferPointer<UInt8>
  /// Whether the sentence carried a (valid) checksum.
  public let hadChecksum: Bool
  /// The stream offset of the start character: how many bytes the framer had been fed before
  /// it (``NMEAFramer/streamOffset``). The time service dates an epoch by the arrival of this
  /// byte of its first sentence.
  public let offset: UInt64
  /// The sentence exactly as it arrived, `*hh` included, without the line ending: what a
  /// pass-through (gpsd's `nmea` watchers) hands on, checked once, by this framer.
  public let line: UnsafeBufferPointer<UInt8>

  @inlinable
  public init(
    bytes: UnsafeBufferPointer<UInt8>, hadChecksum: Bool, offset: UInt64 = 0,
    line: UnsafeBufferPointer<UInt8>? = nil
  ) {
    self.bytes = bytes
    self.hadChecksum = hadChecksum
    self.offset = offset
    self.line = line ?? bytes
  }

  /// The sentence as text, without checksum (allocates).
  public var text: String { String(decoding: bytes, as: UTF8.self) }
}

/// A UBX frame (`B5 62`, class, id, little-endian length, payload, Fletcher checksum).
public struct UBXFrameView {
  public let messageClass: UInt8
  public let messageID: UInt8
  /// The payload; valid only inside the closure it was passed to.
  public let payload: UnsafeBufferPointer<UInt8>
}

/// A SiRF binary frame (`A0 A2`, big-endian length, payload, checksum, `B0 B3`).
public struct SiRFFrameView {
  /// The payload; its first byte is the message ID. Valid only inside the closure.
  public let payload: UnsafeBufferPointer<UInt8>
}
