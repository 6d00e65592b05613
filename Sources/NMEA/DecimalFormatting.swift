/// Decimal text for integers and fixed-decimal numbers, written straight into a byte buffer.
///
/// gpsd prints its numbers with `printf("%.Nf")`; ``appendFixed(_:decimals:to:)`` gives the
/// same digits without Foundation or a C call: the exact binary value rounded to nearest,
/// ties to even. It splits the value into its integer part and fraction (both exact), scales
/// the fraction by 10^N, and decides the rounding with the exact product error from a fused
/// multiply-add, so no intermediate rounding can flip a digit.
package enum DecimalFormatting {
  /// 10^0 ... 10^15 as doubles, all exact.
  package static let powers: [Double] = [
    1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
  ]

  /// The decimal digits of `value`.
  package static func appendDigits(_ value: UInt64, to out: inout [UInt8]) {
    var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)  // 20 digits fit in 24 bytes
    var count = 0
    var rest = value
    withUnsafeMutableBytes(of: &digits) { buffer in
      repeat {
        buffer[23 - count] = UInt8(truncatingIfNeeded: rest % 10) &+ 0x30
        rest /= 10
        count += 1
      } while rest != 0
      out.append(contentsOf: buffer[(24 - count)...])
    }
  }

  /// `value` (non-negative) in decimal, zero-padded to at least `width` digits.
  package static func appendPadded(_ value: Int, width: Int, to out: inout [UInt8]) {
    var digits = 1
    var scale = 10
    while value >= scale && digits < 19 {
      digits += 1
      scale = scale &* 10
    }
    if digits < width {
      out.append(contentsOf: repeatElement(UInt8(ascii: "0"), count: width - digits))
    }
    if value < 0 {
      out.append(contentsOf: String(value).utf8)
    } else {
      appendDigits(UInt64(value), to: &out)
    }
  }

  /// `value` with exactly `decimals` (0...15) digits after the point, as `printf("%.*f")`
  /// writes it, except that a result of zero has no minus sign. `value` must be finite.
  package static func appendFixed(_ value: Double, decimals: Int, to out: inout [UInt8]) {
    let decimals = min(max(decimals, 0), 15)
    let magnitude = value.magnitude
    var whole = magnitude.rounded(.down)
    guard whole < 9_223_372_036_854_775_808.0 else {
      // Beyond 2^63: no GPS quantity is this large; write it in the shortest form that reads
      // back exactly, which is still valid JSON.
      out.append(contentsOf: value.description.utf8)
      return
    }
    let scale = powers[decimals]
    let fraction = magnitude - whole  // exact
    let product = fraction * scale  // < 10^15 < 2^52: the grid holds 0.5
    let error = fusedError(fraction, scale, product)
    var scaled = product.rounded(.down)
    let remainder = product - scaled  // exact
    // On an exact tie the last digit written decides: the fraction's, or with no decimals
    // the integer part's.
    let lastDigitIsOdd = decimals == 0 ? isOdd(whole) : isOdd(scaled)
    if remainder > 0.5 || (remainder == 0.5 && (error > 0 || (error == 0 && lastDigitIsOdd))) {
      scaled += 1
    }
    if scaled >= scale {  // the fraction rounded up to a whole unit
      scaled -= scale
      whole += 1
    }
    let integerPart = UInt64(whole)
    let fractionPart = UInt64(scaled)
    if value.sign == .minus && (integerPart != 0 || fractionPart != 0) {
      out.append(UInt8(ascii: "-"))
    }
    appendDigits(integerPart, to: &out)
    if decimals > 0 {
      out.append(UInt8(ascii: "."))
      var digits = 1
      var bound: UInt64 = 10
      while fractionPart >= bound && digits < decimals {
        digits += 1
        bound &*= 10
      }
      if digits < decimals {
        out.append(contentsOf: repeatElement(UInt8(ascii: "0"), count: decimals - digits))
      }
      appendDigits(fractionPart, to: &out)
    }
  }

  /// The exact error of the rounded product `a * b = product`: `a * b - product`, which a
  /// fused multiply-add computes exactly.
  @inline(__always)
  static func fusedError(_ a: Double, _ b: Double, _ product: Double) -> Double {
    (-product).addingProduct(a, b)
  }

  @inline(__always)
  static func isOdd(_ integral: Double) -> Bool {
    (integral * 0.5).rounded(.down) != integral * 0.5
  }
}
