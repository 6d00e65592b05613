// nmea-bench: how fast the framer, parser and fix builder are, and whether they allocate.
//
//   swift run -c release nmea-bench [--input FILE] [--json] [--iterations N]
//
// Measures (a) framer + parser, (b) the whole pipeline (NMEADecoder: framer, parser and fix
// builder) in sentences per second, each as the median of several passes over the same
// bytes, and (c) heap allocations per sentence in steady state, counted by the
// CMallocCounter shim that is linked into this program only. See BENCHMARKS.md.

import CMallocCounter
import GPSDProtocol
import Glibc
import NMEA
import POSIX

struct Options {
  var input: String?
  var json = false
  var iterations = 7
  var sentences = 100_000
  var chunk = 4096
  var writeStream: String?
  /// Time only this stage (for profilers): framer, parse, pipeline or ubx.
  var only: String?
  /// Measure UBX decoding on the logs of this directory (gpsd's gpsd-ubx captures) instead.
  var ubxCorpus: String?
  /// UBX messages the stream built from those logs holds at least (repeated as needed).
  var ubxMessages = 100_000
}

let usage = """
  usage: nmea-bench [--input FILE] [--json] [--iterations N] [--sentences N] [--chunk BYTES]

  Measures the NMEA framer + parser and the whole decoding pipeline (framer, parser, fix
  builder) in sentences per second (median of N passes), and heap allocations per sentence
  in steady state.

    --input FILE     measure a recording instead of the generated u-blox M8 stream
    --json           print one JSON object instead of text
    --iterations N   timed passes per measurement (default 7)
    --sentences N    size of the generated stream (default 100000)
    --chunk BYTES    bytes handed to the framer per call, like one read() (default 4096)
    --write-stream FILE  write the generated stream to FILE and exit (for other parsers)
    --only STAGE     time only framer, parse or pipeline (for profiling; others report 0),
                     or ubx with --ubx-corpus
    --ubx-corpus DIR measure UBX decoding instead: the *.log files of DIR (gpsd's gpsd-ubx
                     captures, # comment lines dropped), repeated to at least --ubx-messages
                     decoded messages, in UBX messages per second and allocations per message
    --ubx-messages N messages the UBX stream holds at least (default 100000)

  """

func fail(_ message: String) -> Never {
  writeError("nmea-bench: " + message + "\n")
  exit(2)
}

func writeError(_ text: String) {
  var bytes = Array(text.utf8)
  _ = bytes.withUnsafeMutableBytes { write(2, $0.baseAddress, $0.count) }
}

func parseOptions(_ arguments: [String]) -> Options {
  var options = Options()
  var index = 0
  func value(_ name: String) -> String {
    index += 1
    guard index < arguments.count else { fail("\(name) needs a value\n\n" + usage) }
    return arguments[index]
  }
  func positive(_ name: String) -> Int {
    let text = value(name)
    guard let number = Int(text), number > 0 else {
      fail("\(name) takes a positive number, not '\(text)'")
    }
    return number
  }
  while index < arguments.count {
    switch arguments[index] {
    case "--input": options.input = value("--input")
    case "--json": options.json = true
    case "--iterations": options.iterations = positive("--iterations")
    case "--sentences": options.sentences = positive("--sentences")
    case "--chunk": options.chunk = positive("--chunk")
    case "--write-stream": options.writeStream = value("--write-stream")
    case "--ubx-corpus": options.ubxCorpus = value("--ubx-corpus")
    case "--ubx-messages": options.ubxMessages = positive("--ubx-messages")
    case "--only":
      let stage = value("--only")
      guard ["framer", "parse", "pipeline", "ubx"].contains(stage) else {
        fail("--only takes framer, parse, pipeline or ubx, not '\(stage)'")
      }
      options.only = stage
    case "--help", "-h":
      print(usage, terminator: "")
      exit(0)
    default: fail("unknown option '\(arguments[index])'\n\n" + usage)
    }
    index += 1
  }
  return options
}

/// The whole file, or a clear error.
func readFile(_ path: String) -> [UInt8] {
  do {
    return try FileDescriptor.contents(of: path)
  } catch {
    fail("cannot read '\(path)': \(error)")
  }
}

// MARK: - Passes

/// Accumulates a few fields of a sentence, as a consumer would read them, so that the
/// optimiser cannot drop the parsing.
@inline(__always)
func digest(_ sentence: Sentence) -> Int {
  switch sentence {
  case .rmc(let rmc): return Int(rmc.time?.nanoseconds ?? 0) &+ Int(rmc.speedKnots ?? 0)
  case .gga(let gga):
    return (gga.satellitesUsed ?? 0) &+ Int(gga.position?.latitude.scaledMinutes ?? 0)
  case .gsa(let gsa): return gsa.satellites.count &+ (gsa.systemID ?? 0)
  case .gsv(let gsv): return gsv.count &+ (gsv.signalID ?? 0) &+ (gsv.first?.snr ?? 0)
  default: return 1
  }
}

/// Calls `body` with `stream` cut into pieces of `chunk` bytes (the last one shorter), in
/// order, as reads from a port would deliver it.
@inline(__always)
func forEachChunk(
  of stream: UnsafeRawBufferPointer, chunk: Int, _ body: (UnsafeRawBufferPointer) -> Void
) {
  var offset = 0
  while offset < stream.count {
    let end = min(offset + chunk, stream.count)
    body(UnsafeRawBufferPointer(rebasing: stream[offset..<end]))
    offset = end
  }
}

/// The framer alone: sentences found and checksums validated, nothing parsed.
func framerPass(_ stream: UnsafeRawBufferPointer, chunk: Int, framer: inout NMEAFramer) -> (
  Int, Int
) {
  var found = 0
  var sink = 0
  forEachChunk(of: stream, chunk: chunk) { bytes in
    framer.feed(bytes) { frame in
      guard case .sentence(let raw) = frame else { return }
      found += 1
      sink &+= raw.bytes.count
    }
  }
  return (found, sink)
}

/// Framer and parser only. Returns the sentences parsed and a digest of them.
func parsePass(_ stream: UnsafeRawBufferPointer, chunk: Int, framer: inout NMEAFramer) -> (Int, Int)
{
  var parsed = 0
  var sink = 0
  forEachChunk(of: stream, chunk: chunk) { bytes in
    framer.feed(bytes) { frame in
      guard case .sentence(let raw) = frame else { return }
      do {
        let sentence = try Sentence(parsing: raw)
        parsed += 1
        sink &+= digest(sentence)
      } catch {
        sink &+= 1
      }
    }
  }
  return (parsed, sink)
}

@inline(__always)
func digestEpoch(_ event: DecoderEvent, into sink: inout Int) {
  if case .epoch(let epoch) = event {
    sink &+= Int(epoch.fix.mode.rawValue) &+ (epoch.satellites?.satellites.count ?? 0)
    sink &+= Int(epoch.fix.position?.longitude.scaledMinutes ?? 0)
  }
}

/// Framer, parser and fix builder. Returns the sentences accepted and a digest of the epochs.
func pipelinePass(_ stream: UnsafeRawBufferPointer, chunk: Int, decoder: inout NMEADecoder) -> (
  Int, Int
) {
  let before = decoder.statistics.framer.sentences
  var sink = 0
  // Closure literals passed straight to the calls are non-escaping and capture `sink` in
  // place; a closure value or a local function used twice would box it on the heap, and the
  // benchmark would count its own allocation.
  forEachChunk(of: stream, chunk: chunk) { bytes in
    decoder.decode(bytes) { digestEpoch($0, into: &sink) }
  }
  decoder.finish { digestEpoch($0, into: &sink) }
  return (decoder.statistics.framer.sentences - before, sink)
}

// MARK: - Measuring

nonisolated(unsafe) var keptDigest = 0

/// Keeps a digest alive past the optimiser.
@inline(never)
func keep(_ value: Int) { keptDigest &+= value }

func now() -> Double {
  var time = timespec()
  clock_gettime(CLOCK_MONOTONIC, &time)
  return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
}

func medianOf(_ values: [Double]) -> Double {
  let sorted = values.sorted()
  let middle = sorted.count / 2
  return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
}

struct Measurement {
  /// Sentences per second of each timed pass.
  var rates: [Double] = []
  var median: Double { rates.isEmpty ? 0 : medianOf(rates) }
}

/// One timed pass of `stage` over `fresh` (a new framer or decoder, made before the clock
/// starts), its rate added to `measurement`; nothing when `--only` names another stage.
func measure<State>(
  _ stage: String, only: String?, into measurement: inout Measurement,
  fresh: @autoclosure () -> State, _ pass: (inout State) -> (count: Int, digest: Int)
) {
  guard only == nil || only == stage else { return }
  var state = fresh()
  let start = now()
  let (count, digest) = pass(&state)
  measurement.rates.append(Double(count) / (now() - start))
  keep(digest)
}

/// The CPU model from /proc/cpuinfo, for the report.
func cpuModel() -> String {
  guard let bytes = try? FileDescriptor.contents(of: "/proc/cpuinfo") else { return "unknown" }
  let text = String(decoding: bytes, as: UTF8.self)
  for line in text.split(separator: "\n") where line.hasPrefix("model name") {
    if let colon = line.firstIndex(of: ":") {
      return String(line[line.index(after: colon)...].drop(while: { $0 == " " }))
    }
  }
  return "unknown"
}

// MARK: - Formatting without Foundation

/// `value` with `decimals` digits after the point (GPSDProtocol's exact decimal text); "0"
/// for NaN and the infinities (a stage that was not timed).
func fixed(_ value: Double, _ decimals: Int) -> String {
  DecimalText.fixed(value, decimals: decimals) ?? "0"
}

func jsonString(_ text: String) -> String {
  var out = "\""
  for scalar in text.unicodeScalars {
    switch scalar {
    case "\"": out += "\\\""
    case "\\": out += "\\\\"
    case _ where scalar.value < 0x20:
      let hex = String(scalar.value, radix: 16)
      out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
    default: out.unicodeScalars.append(scalar)
    }
  }
  return out + "\""
}

// MARK: - Main

let options = parseOptions(Array(CommandLine.arguments.dropFirst()))

if let directory = options.ubxCorpus {
  UBXBench.run(directory: directory, options: options)
  exit(0)
}

let stream: [UInt8]
let source: String
if let input = options.input {
  stream = readFile(input)
  source = input
} else {
  stream = StreamGenerator.generate(sentences: options.sentences).bytes
  source = "generated u-blox M8 stream"
}

if let path = options.writeStream {
  do {
    try FileDescriptor.withOpened(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC) {
      descriptor throws(Errno) in try descriptor.writeAll(stream)
    }
  } catch {
    fail("cannot write '\(path)': \(error)")
  }
  exit(0)
}

let report:
  (
    framer: Measurement, parse: Measurement, pipeline: Measurement, sentences: Int, epochs: Int,
    allocs: UInt64, rejected: Int
  ) =
    stream.withUnsafeBytes { bytes in
      // Warm-up: one pass of each, which also tells how many sentences the stream holds.
      var framer = NMEAFramer()
      let (parsedSentences, warmParse) = parsePass(bytes, chunk: options.chunk, framer: &framer)
      keep(warmParse)
      var decoder = NMEADecoder()
      let (sentences, warmPipeline) = pipelinePass(bytes, chunk: options.chunk, decoder: &decoder)
      keep(warmPipeline)
      let epochs = decoder.statistics.builder.epochs
      let rejected = decoder.statistics.framer.rejectedSentences
      guard sentences > 0 else { fail("no NMEA sentences in \(source)") }

      // Steady state: the same framer and decoder again, every allocation counted.
      let before = malloc_counter_snapshot()
      let (_, countedParse) = parsePass(bytes, chunk: options.chunk, framer: &framer)
      let between = malloc_counter_snapshot()
      let (_, countedPipeline) = pipelinePass(bytes, chunk: options.chunk, decoder: &decoder)
      let after = malloc_counter_snapshot()
      if getenv("NMEA_BENCH_DEBUG") != nil {
        writeError(
          "allocations: parse \(between.allocations - before.allocations), "
            + "pipeline \(after.allocations - between.allocations)\n")
      }
      keep(countedParse &+ countedPipeline)
      let allocations = after.allocations - before.allocations

      var parse = Measurement()
      var pipeline = Measurement()
      var framing = Measurement()
      for _ in 0..<options.iterations {
        measure("framer", only: options.only, into: &framing, fresh: NMEAFramer()) {
          framerPass(bytes, chunk: options.chunk, framer: &$0)
        }
        measure("parse", only: options.only, into: &parse, fresh: NMEAFramer()) {
          parsePass(bytes, chunk: options.chunk, framer: &$0)
        }
        measure("pipeline", only: options.only, into: &pipeline, fresh: NMEADecoder()) {
          pipelinePass(bytes, chunk: options.chunk, decoder: &$0)
        }
      }
      _ = parsedSentences
      return (framing, parse, pipeline, sentences, epochs, allocations, rejected)
    }

// Two passes (parser alone, then the pipeline) over `sentences` each.
let allocsPerSentence = Double(report.allocs) / Double(2 * report.sentences)
let cpu = cpuModel()
let cores = Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))

if options.json {
  var fields: [String] = []
  fields.append("\"parse_sentences_per_s\":" + fixed(report.parse.median, 0))
  fields.append("\"framer_sentences_per_s\":" + fixed(report.framer.median, 0))
  fields.append("\"pipeline_sentences_per_s\":" + fixed(report.pipeline.median, 0))
  fields.append("\"allocs_per_sentence\":" + fixed(allocsPerSentence, 6))
  fields.append("\"allocations\":\(report.allocs)")
  fields.append("\"sentences\":\(report.sentences)")
  fields.append("\"epochs\":\(report.epochs)")
  fields.append("\"rejected_sentences\":\(report.rejected)")
  fields.append("\"bytes\":\(stream.count)")
  fields.append("\"chunk_bytes\":\(options.chunk)")
  fields.append("\"iterations\":\(options.iterations)")
  fields.append(
    "\"parse_runs\":[" + report.parse.rates.map { fixed($0, 0) }.joined(separator: ",") + "]")
  fields.append(
    "\"pipeline_runs\":[" + report.pipeline.rates.map { fixed($0, 0) }.joined(separator: ",") + "]")
  fields.append("\"input\":" + jsonString(source))
  fields.append("\"cpu\":" + jsonString(cpu))
  fields.append("\"cores\":\(cores)")
  print("{" + fields.joined(separator: ",") + "}")
} else {
  func millions(_ rate: Double) -> String { fixed(rate / 1e6, 2) + " M sentences/s" }
  func spread(_ measurement: Measurement) -> String {
    let sorted = measurement.rates.sorted()
    guard !sorted.isEmpty else { return "not timed" }
    return "min " + fixed(sorted.first! / 1e6, 2) + ", max " + fixed(sorted.last! / 1e6, 2)
  }
  let megabytes = Double(stream.count) / 1e6
  print("nmea-bench: \(source)")
  print(
    "  \(report.sentences) sentences, \(report.epochs) epochs, \(fixed(megabytes, 1)) MB, "
      + "\(options.chunk)-byte chunks, \(report.rejected) rejected")
  print("  machine: \(cpu), \(cores) cores")
  print(
    "  framer alone:    \(millions(report.framer.median))  (median of \(options.iterations); "
      + spread(report.framer) + ")")
  print(
    "  framer + parser: \(millions(report.parse.median))  (median of \(options.iterations); "
      + spread(report.parse) + ")")
  print(
    "  whole pipeline:  \(millions(report.pipeline.median))  (median of \(options.iterations); "
      + spread(report.pipeline) + ")")
  print(
    "  allocations:     \(fixed(allocsPerSentence, 6)) per sentence in steady state "
      + "(\(report.allocs) in \(2 * report.sentences) sentences)")
}
