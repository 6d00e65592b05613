/// The word-at-a-time tests of the sentence loop (``NMEAFramer/scan(_:count:at:_:)``).
extension NMEAFramer {
  /// The bytes of `word` that may need a look, as the high bit of each: a byte below `+`
  /// (control bytes, CR and LF, space, `!`, `$`, `*` and a few punctuation marks NMEA rarely
  /// uses) or above `~`. Never misses a byte the sentence loop must see; flags a few
  /// ordinary ones too (a space in a TXT sentence), which then take the byte-by-byte path.
  /// Two carry-free range tests from "Bit Twiddling Hacks" (hasless, hasmore), where an
  /// exact test for each special byte took three more. The first byte flagged (in memory
  /// order) is exact, as no borrow or carry reaches it from the bytes before: those are all
  /// ordinary (`+` ... `~`).
  @inlinable @inline(__always)
  static func specialBytes(_ word: UInt64) -> UInt64 {
    let ones: UInt64 = 0x0101_0101_0101_0101
    let highs: UInt64 = 0x8080_8080_8080_8080
    let below2B = (word &- ones &* 0x2B) & ~word
    let above7E = (word &+ ones &* (127 - 0x7E)) | word
    return (below2B | above7E) & highs
  }

  /// How many bytes of the word that gave `special` (``specialBytes(_:)``, not zero) come
  /// before the first one flagged, in memory order: all of them ordinary. Zero where the
  /// order of a word's bytes in memory is not its little-endian order.
  @inlinable @inline(__always)
  static func ordinaryBytes(before special: UInt64) -> Int {
    #if _endian(little)
      return special.trailingZeroBitCount &>> 3
    #else
      return 0
    #endif
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
