/// Counters of what the framer accepted and why it rejected the rest.
public struct FramerStatistics: Sendable, Hashable {
  /// Sentences delivered.
  public var sentences = 0
  /// Sentences whose checksum did not match.
  public var badChecksum = 0
  /// Sentences without `*hh`, rejected under ``ChecksumPolicy/strict``.
  public var missingChecksum = 0
  /// Sentences longer than the configured maximum.
  public var tooLong = 0
  /// Sentences cut short by a control or binary byte or by a new start character, or with
  /// bytes after the checksum.
  public var malformed = 0
  /// UBX frames with a valid checksum, delivered.
  public var ubxFrames = 0
  /// SiRF binary frames with a valid checksum, delivered.
  public var sirfFrames = 0
  /// RTCM 3 frames with a valid CRC-24Q, delivered.
  public var rtcm3Frames = 0
  /// CASIC binary frames with a valid checksum, delivered (CASICFraming.swift).
  public var casicFrames = 0
  /// Binary frames whose checksum, CRC or trailer did not match (their bytes are rescanned).
  public var badBinaryFrames = 0
  /// Bytes outside any sentence or frame.
  public var garbageBytes = 0
  /// Binary frames whose header came but not the bytes its length announced before the input
  /// ended (``NMEAFramer/finish(_:)``): a length field that lied, or a recording cut short.
  /// Their bytes are rescanned.
  public var unfinishedBinaryFrames = 0

  public init() {}

  /// All sentences rejected, whatever the reason.
  public var rejectedSentences: Int { badChecksum + missingChecksum + tooLong + malformed }
}
