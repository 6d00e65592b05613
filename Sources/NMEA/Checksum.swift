/// NMEA 0183 checksums: the exclusive-or of every byte between `$` (or `!`) and `*`.
public enum NMEAChecksum {
  /// The checksum of `body`, which holds the bytes between the start character and `*`
  /// (both excluded).
  @inlinable
  public static func compute<Bytes: Sequence>(_ body: Bytes) -> UInt8 where Bytes.Element == UInt8 {
    var sum: UInt8 = 0
    for byte in body { sum ^= byte }
    return sum
  }

  /// A complete sentence for the wire: `$`, `body`, `*`, two upper-case hex digits, CR LF.
  ///
  /// `body` is the text between `$` and `*`, for example `PMTK161,0`. Used to build
  /// receiver commands.
  public static func frame(_ body: String, start: UInt8 = ASCII.dollar) -> [UInt8] {
    var out: [UInt8] = []
    out.reserveCapacity(body.utf8.count + 6)
    out.append(start)
    out.append(contentsOf: body.utf8)
    appendTrailer(to: &out, sentenceStart: 0)
    return out
  }

  /// Ends the sentence that begins at `start` in `out` (its `$` or `!`): `*`, the checksum of
  /// the bytes after the start character, CR LF.
  @inlinable
  public static func appendTrailer(to out: inout [UInt8], sentenceStart start: Int) {
    let sum = compute(out[(start + 1)...])
    out.append(ASCII.star)
    out.append(ASCII.hexDigits[Int(sum >> 4)])
    out.append(ASCII.hexDigits[Int(sum & 0x0F)])
    out.append(ASCII.cr)
    out.append(ASCII.lf)
  }
}
