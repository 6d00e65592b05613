// The NMEA module's decoder as a board runs it: built with Embedded Swift (no Foundation, no
// Glibc module) by scripts/arm-check.sh for x86-64, aarch64 and armv7 hard-float. It reads a
// capture from standard input and writes every epoch in a canonical text form: the module's
// own NMEA encoder (GGA, RMC, GSA, GSV) and its decimal formatting for the fields those
// sentences do not carry, then the decoder's statistics. The same bytes on every target mean
// the same decoding.

import NMEA

@_extern(c, "read") func cRead(_ fd: Int32, _ buffer: UnsafeMutableRawPointer?, _ count: Int) -> Int
@_extern(c, "write") func cWrite(_ fd: Int32, _ buffer: UnsafeRawPointer?, _ count: Int) -> Int

/// Writes `bytes` to standard output and empties them.
func flush(_ bytes: inout [UInt8]) {
  var written = 0
  bytes.withUnsafeBytes { buffer in
    while written < buffer.count {
      let result = cWrite(1, buffer.baseAddress! + written, buffer.count - written)
      if result <= 0 { break }
      written += result
    }
  }
  bytes.removeAll(keepingCapacity: true)
}

func append(_ text: StaticString, to out: inout [UInt8]) {
  out.append(contentsOf: UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
}

func append(_ name: StaticString, _ value: Int, to out: inout [UInt8]) {
  append(" ", to: &out)
  append(name, to: &out)
  append("=", to: &out)
  if value < 0 { out.append(UInt8(ascii: "-")) }
  DecimalFormatting.appendDigits(UInt64(value.magnitude), to: &out)
}

func append(_ name: StaticString, _ value: Double?, to out: inout [UInt8]) {
  guard let value, value.isFinite else { return }
  append(" ", to: &out)
  append(name, to: &out)
  append("=", to: &out)
  DecimalFormatting.appendFixed(value, decimals: 9, to: &out)
}

func append(_ name: StaticString, _ value: Int?, to out: inout [UInt8]) {
  guard let value else { return }
  append(name, value, to: &out)
}

func write(_ epoch: Epoch, to out: inout [UInt8]) {
  let fix = epoch.fix
  append("epoch", to: &out)
  append("mode", Int(fix.mode.rawValue), to: &out)
  append("offset", epoch.firstByteOffset.map { Int(truncatingIfNeeded: $0) }, to: &out)
  append("lat", fix.latitude, to: &out)
  append("lon", fix.longitude, to: &out)
  append("altHAE", fix.altitudeHAE, to: &out)
  append("climb", fix.climb, to: &out)
  append("pdop", fix.pdop, to: &out)
  append("vdop", fix.vdop, to: &out)
  append("tdop", fix.tdop, to: &out)
  append("eph", fix.horizontalAccuracy, to: &out)
  append("epv", fix.verticalAccuracy, to: &out)
  append("sep", fix.sphericalAccuracy, to: &out)
  append("eps", fix.speedAccuracy, to: &out)
  append("epd", fix.courseAccuracy, to: &out)
  append("latErr", fix.latitudeError, to: &out)
  append("lonErr", fix.longitudeError, to: &out)
  append("dgpsAge", fix.differentialAge, to: &out)
  append("dgpsStation", fix.differentialStation, to: &out)
  append("leap", fix.leapSeconds, to: &out)
  append("jam", fix.jammingIndicator, to: &out)
  append("used", fix.satellitesUsed, to: &out)
  if let ecef = fix.ecefPosition {
    append("ecefX", ecef.x, to: &out)
    append("ecefY", ecef.y, to: &out)
    append("ecefZ", ecef.z, to: &out)
  }
  if let velocity = fix.velocityNED {
    append("velN", velocity.x, to: &out)
    append("velE", velocity.y, to: &out)
    append("velD", velocity.z, to: &out)
  }
  out.append(0x0A)
  NMEAEncoder.appendGGA(fix, to: &out)
  NMEAEncoder.appendRMC(fix, to: &out)
  NMEAEncoder.appendGSA(fix, satellites: epoch.satellites, to: &out)
  if let view = epoch.satellites {
    NMEAEncoder.appendGSV(view, to: &out)
    for satellite in view.satellites {
      append("sat", to: &out)
      append("system", satellite.constellation.map { Int($0.rawValue) } ?? -1, to: &out)
      append("prn", satellite.prn, to: &out)
      append("svid", satellite.svid, to: &out)
      append("signal", satellite.signalID, to: &out)
      append("el", satellite.elevation, to: &out)
      append("az", satellite.azimuth, to: &out)
      append("snr", satellite.snr, to: &out)
      append("used", satellite.used ? 1 : 0, to: &out)
      out.append(0x0A)
    }
  }
}

@main
struct NMEAPrint {
  static func main() {
    var decoder = NMEADecoder()
    var out: [UInt8] = []
    out.reserveCapacity(1 << 16)
    let chunk = UnsafeMutableRawBufferPointer.allocate(byteCount: 4096, alignment: 8)
    defer { chunk.deallocate() }
    while true {
      let count = cRead(0, chunk.baseAddress, chunk.count)
      if count <= 0 { break }
      decoder.decode(UnsafeRawBufferPointer(rebasing: chunk[0..<count])) { event in
        if case .epoch(let epoch) = event { write(epoch, to: &out) }
      }
      if out.count > 1 << 15 { flush(&out) }
    }
    decoder.finish { event in
      if case .epoch(let epoch) = event { write(epoch, to: &out) }
    }
    let statistics = decoder.statistics
    append("statistics", to: &out)
    append("sentences", statistics.framer.sentences, to: &out)
    append("rejected", statistics.framer.rejectedSentences, to: &out)
    append("ubx", statistics.framer.ubxFrames, to: &out)
    append("garbage", statistics.framer.garbageBytes, to: &out)
    append("parseErrors", statistics.parseErrors, to: &out)
    append("unknown", statistics.unknownSentences, to: &out)
    append("impossible", statistics.impossibleValues.total, to: &out)
    append("integerRange", statistics.impossibleValues.integerRange, to: &out)
    append("ubxDecoded", statistics.ubx.decoded, to: &out)
    append("ubxDropped", statistics.ubx.droppedFields, to: &out)
    out.append(0x0A)
    flush(&out)
  }
}
