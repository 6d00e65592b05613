/// The bytes the framer and parser look for, named so the scanning loops read as prose.
@usableFromInline
enum ASCII {
  @usableFromInline static let dollar: UInt8 = 0x24  // $
  @usableFromInline static let bang: UInt8 = 0x21  // !
  @usableFromInline static let star: UInt8 = 0x2A  // *
  @usableFromInline static let comma: UInt8 = 0x2C  // ,
  @usableFromInline static let dot: UInt8 = 0x2E  // .
  @usableFromInline static let minus: UInt8 = 0x2D  // -
  @usableFromInline static let plus: UInt8 = 0x2B  // +
  @usableFromInline static let cr: UInt8 = 0x0D
  @usableFromInline static let lf: UInt8 = 0x0A
  @usableFromInline static let zero: UInt8 = 0x30

  /// The value of a hexadecimal digit (either case), or `nil`.
  @inlinable @inline(__always)
  static func hexValue(_ byte: UInt8) -> UInt8? {
    switch byte {
    case 0x30...0x39: return byte &- 0x30
    case 0x41...0x46: return byte &- 0x41 &+ 10
    case 0x61...0x66: return byte &- 0x61 &+ 10
    default: return nil
    }
  }

  /// Upper-case hexadecimal digits, as checksums are written.
  @usableFromInline static let hexDigits: [UInt8] = Array("0123456789ABCDEF".utf8)
}
