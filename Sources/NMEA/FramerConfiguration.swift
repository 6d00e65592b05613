/// What the framer does with a sentence that has no `*hh` checksum.
public enum ChecksumPolicy: Sendable, Hashable {
  /// Reject it and count it as `missingChecksum` (the default).
  case strict
  /// Accept it. Sentences that do carry a checksum are still validated.
  case lenient
}

/// Limits and policies of an ``NMEAFramer``.
public struct FramerConfiguration: Sendable, Hashable {
  /// The longest sentence accepted, in bytes from the start character through the checksum,
  /// line ending excluded. NMEA 0183 allows 82 with the line ending; high-precision and RTK
  /// receivers write longer sentences, hence the default of 128.
  public var maximumSentenceLength: Int
  /// What to do with a sentence that has no checksum.
  public var checksumPolicy: ChecksumPolicy
  /// The longest binary frame (UBX, SiRF or RTCM 3, framing included) that is delivered. Longer ones
  /// are skipped as garbage. Bounds the framer's memory together with the sentence limit. The
  /// default, 4096, holds the longest navigation message a u-blox sends (UBX-NAV-SIG with 255
  /// signals: 8 + 255 · 16 bytes of payload and 8 of framing).
  public var maximumBinaryFrameLength: Int

  public init(
    maximumSentenceLength: Int = 128,
    checksumPolicy: ChecksumPolicy = .strict,
    maximumBinaryFrameLength: Int = 4096
  ) {
    self.maximumSentenceLength = max(8, maximumSentenceLength)
    self.checksumPolicy = checksumPolicy
    self.maximumBinaryFrameLength = max(16, maximumBinaryFrameLength)
  }
}
