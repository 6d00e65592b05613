// nmea-bench --ubx-corpus DIR: how fast the decoder takes u-blox binary, and whether it
// allocates, on gpsd's u-blox captures.
//
// The logs of DIR (without their `#` comment lines) are concatenated and repeated until the
// stream holds at least --ubx-messages decoded UBX messages; the whole decoder (framer, UBX
// decoders and, for the logs that mix NMEA in, the parser and fix builder) runs over it in
// --chunk pieces. Reported: decoded UBX messages per second (median of --iterations passes)
// and heap allocations per decoded message in a steady-state pass.

import CMallocCounter
import Glibc
import NMEA
import POSIX

enum UBXBench {
  /// The `*.log` files of `directory`, sorted.
  static func logs(in directory: String) -> [String] {
    guard let handle = opendir(directory) else { fail("cannot open directory '\(directory)'") }
    defer { closedir(handle) }
    var names: [String] = []
    while let entry = readdir(handle) {
      let name = withUnsafePointer(to: entry.pointee.d_name) {
        $0.withMemoryRebound(to: CChar.self, capacity: 256) { String(cString: $0) }
      }
      if name.hasSuffix(".log") { names.append(directory + "/" + name) }
    }
    return names.sorted()
  }

  /// A log without the corpus's `#` comment lines (a line is one when it starts with `#` and
  /// holds printable text only, so binary data that happens to hold `\n#` is kept).
  static func recording(_ bytes: [UInt8]) -> [UInt8] {
    var out: [UInt8] = []
    out.reserveCapacity(bytes.count)
    var start = 0
    while start < bytes.count {
      var end = start
      while end < bytes.count && bytes[end] != 0x0A { end += 1 }
      let lineEnd = min(end + 1, bytes.count)
      let line = bytes[start..<lineEnd]
      let isComment =
        bytes[start] == 0x23
        && line.allSatisfy { $0 == 0x09 || $0 == 0x0A || $0 == 0x0D || (0x20...0x7E).contains($0) }
      if !isComment { out.append(contentsOf: line) }
      start = lineEnd
    }
    return out
  }

  /// Reads a few fields of a message, as a consumer would, so that decoding is not dropped.
  @inline(__always)
  static func digest(_ message: UBXMessage) -> Int {
    switch message {
    case .navPVT(let m): return Int(m.iTOW) &+ Int(m.position?.latitude.scaledMinutes ?? 0)
    case .navSat(let m):
      var sum = 0
      for satellite in m.satellites { sum &+= Int(satellite.carrierToNoise) }
      return sum
    case .navSig(let m):
      var sum = 0
      for signal in m.signals { sum &+= Int(signal.carrierToNoise) }
      return sum
    case .navPosLLH(let m): return Int(m.altitudeMSL)
    default: return Int(message.timeOfWeek ?? 1)
    }
  }

  /// One pass of the whole decoder. Returns the UBX messages decoded and a digest.
  static func pass(_ stream: UnsafeRawBufferPointer, chunk: Int, decoder: inout NMEADecoder)
    -> (count: Int, digest: Int)
  {
    let before = decoder.statistics.ubx.decoded
    var sink = 0
    forEachChunk(of: stream, chunk: chunk) { bytes in
      decoder.decode(bytes) { event in
        if case .ubxMessage(let message) = event { sink &+= digest(message) }
      }
    }
    return (decoder.statistics.ubx.decoded - before, sink)
  }

  static func run(directory: String, options: Options) {
    var once: [UInt8] = []
    let files = logs(in: directory)
    guard !files.isEmpty else { fail("no .log files in '\(directory)'") }
    for file in files { once += recording(readFile(file)) }
    var probe = NMEADecoder()
    let perCopy = once.withUnsafeBytes { pass($0, chunk: options.chunk, decoder: &probe).count }
    guard perCopy > 0 else { fail("no UBX messages in the logs of '\(directory)'") }
    let copies = (options.ubxMessages + perCopy - 1) / perCopy
    var stream: [UInt8] = []
    stream.reserveCapacity(once.count * copies)
    for _ in 0..<copies { stream += once }

    let (messages, rates, allocations, statistics) = stream.withUnsafeBytes {
      bytes -> (Int, [Double], UInt64, UBXStatistics) in
      var decoder = NMEADecoder()
      let (messages, warm) = pass(bytes, chunk: options.chunk, decoder: &decoder)
      keep(warm)
      let before = malloc_counter_snapshot()
      let (_, counted) = pass(bytes, chunk: options.chunk, decoder: &decoder)
      let after = malloc_counter_snapshot()
      keep(counted)
      var rates: [Double] = []
      if options.only == nil || options.only == "ubx" {
        for _ in 0..<options.iterations {
          var fresh = NMEADecoder()
          let start = now()
          let (count, digest) = pass(bytes, chunk: options.chunk, decoder: &fresh)
          rates.append(Double(count) / (now() - start))
          keep(digest)
        }
      }
      return (messages, rates, after.allocations - before.allocations, decoder.statistics.ubx)
    }
    let perMessage = Double(allocations) / Double(messages)
    let median = rates.isEmpty ? 0 : medianOf(rates)
    let sorted = rates.sorted()
    if options.json {
      var fields: [String] = []
      fields.append("\"ubx_messages_per_s\":" + fixed(median, 0))
      fields.append("\"allocs_per_ubx_message\":" + fixed(perMessage, 6))
      fields.append("\"allocations\":\(allocations)")
      fields.append("\"ubx_messages\":\(messages)")
      fields.append("\"ubx_refused\":\(statistics.rejected / 2)")
      fields.append("\"logs\":\(files.count)")
      fields.append("\"copies\":\(copies)")
      fields.append("\"bytes\":\(stream.count)")
      fields.append("\"chunk_bytes\":\(options.chunk)")
      fields.append("\"runs\":[" + rates.map { fixed($0, 0) }.joined(separator: ",") + "]")
      fields.append("\"input\":" + jsonString(directory))
      fields.append("\"cpu\":" + jsonString(cpuModel()))
      print("{" + fields.joined(separator: ",") + "}")
    } else {
      print("nmea-bench: UBX, \(files.count) logs of \(directory), \(copies) copies")
      print(
        "  \(messages) UBX messages decoded (\(statistics.rejected / 2) refused per pass), "
          + "\(fixed(Double(stream.count) / 1e6, 1)) MB, \(options.chunk)-byte chunks")
      print("  machine: \(cpuModel()), \(Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))) cores")
      let spread =
        sorted.isEmpty
        ? "not timed"
        : "min " + fixed(sorted.first! / 1e6, 2) + ", max " + fixed(sorted.last! / 1e6, 2)
      print(
        "  whole decoder:   \(fixed(median / 1e6, 2)) M UBX messages/s  (median of "
          + "\(options.iterations); \(spread))")
      print(
        "  allocations:     \(fixed(perMessage, 6)) per UBX message in steady state "
          + "(\(allocations) in \(messages) messages)")
    }
  }
}
