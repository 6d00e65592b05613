/// Presence bits: which of a sentence's optional values are present, one bit each, the
/// values themselves kept beside them as plain ones (0 when absent). The compact storage of
/// the sentences copied most (every copy of a ``Sentence`` copies its largest case, and an
/// `Int?` or `Double?` takes twice the room of its value once aligned).
enum PresenceBits {
  /// `stored` if bit `bit` of `bits` says it is present, else `nil`.
  @inline(__always)
  static func value<Bits: FixedWidthInteger, Value>(_ stored: Value, in bits: Bits, bit: Int)
    -> Value?
  {
    bits & (1 &<< bit) != 0 ? stored : nil
  }

  /// Stores `newValue` (0 for `nil`) in `stored` and marks bit `bit` of `bits` present or
  /// absent, without a branch.
  @inline(__always)
  static func set<Bits: FixedWidthInteger, Value: ExpressibleByIntegerLiteral>(
    _ newValue: Value?, in stored: inout Value, bits: inout Bits, bit: Int
  ) {
    stored = newValue ?? 0
    bits = newValue == nil ? bits & ~(1 &<< bit) : bits | (1 &<< bit)
  }
}
