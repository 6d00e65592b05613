import Glibc
import NMEA

// Placeholder decode: prints one line per fix. The issue that owns decode replaces this
// with the full command (JSON, --stats, error handling).
let decodeCommand = Command(
  name: "decode", usage: "decode [FILE|-] [--json] [--stats]",
  summary: "Decode a recording (or standard input) and print one line per fix."
) { arguments in
  let path = arguments.first ?? "-"
  let descriptor = path == "-" ? 0 : open(path, O_RDONLY | O_CLOEXEC)
  guard descriptor >= 0 else {
    Output.error.line("serialgps decode: cannot open \(path)")
    return 2
  }
  var decoder = NMEADecoder()
  var buffer = [UInt8](repeating: 0, count: 65536)
  let body: (DecoderEvent) -> Void = { event in
    if case .epoch(let epoch) = event {
      let fix = epoch.fix
      Output.standard.line(
        "\(fix.timestamp?.description ?? "-") \(fix.mode) \(fix.latitude ?? 0) \(fix.longitude ?? 0)"
      )
    }
  }
  while true {
    let count = read(descriptor, &buffer, buffer.count)
    if count <= 0 { break }
    decoder.decode(buffer[0..<count], body)
  }
  decoder.finish(body)
  return 0
}
