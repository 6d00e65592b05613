/// The word-at-a-time tests of the sentence loop (``NMEAFramer/scan(_:count:at:_:)``).
extension NMEAFramer {
  /// Whether any of the eight bytes of `word` may need a look: a byte below `+` (control
  /// bytes, CR and LF, space, `!`, `$`, `*` and a few punctuation marks NMEA rarely uses) or
  /// above `~`. Never false for a word that holds a byte the sentence loop must see; true
  /// for a few ordinary ones too (a space in a TXT sentence), which then take the
  /// byte-by-byte path. Two carry-free range tests from "Bit Twiddling Hacks" (hasless,
  /// hasmore), where an exact test for each special byte took three more.
  @inlinable @inline(__always)
  static func hasSpecialByte(_ word: UInt64) -> Bool {
    let ones: UInt64 = 0x0101_0101_0101_0101
    let highs: UInt64 = 0x8080_8080_8080_8080
    let below2B = (word &- ones &* 0x2B) & ~word
    let above7E = (word &+ ones &* (127 - 0x7E)) | word
    return (below2B | above7E) & highs != 0
  }

  /// The exclusive-or of the eight bytes of `word`.
  @inlinable @inline(__always)
  static func foldXOR(_ word: UInt64) -> UInt8 {
    var folded = word ^ (word >> 32)
    folded ^= folded >> 16
    folded ^= folded >> 8
    return UInt8(truncatingIfNeeded: folded)
  }
}
