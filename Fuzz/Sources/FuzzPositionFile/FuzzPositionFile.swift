// libFuzzer entry point: arbitrary bytes as a kept position's file (`serve --state-dir`),
// through the parser and on to the aiding encoders, as a wake after a restart uses them.
//
// Input layout: the whole input is the file's text (decoded as UTF-8, as PositionMemory
// reads it), for the receiver "r".
//
// Checked for every input, by trapping (which libFuzzer reports as a crash):
// - parsing is deterministic and never traps, whatever the figures (nan, inf, 1e300 …);
// - a position parsed is written back and parsed again to itself (the time to the
//   millisecond, every figure as Swift prints it), for the same receiver only;
// - whether plausible or not, it goes through `aiding(at:)` and the u-blox and MediaTek
//   encoders at its own time and a day later without trapping, and they send a position
//   only when it is plausible, with every figure in its field's range;
// - a plausible position always makes both commands (MediaTek's when within 30 km).

import Chipsets
import NMEA

func check(_ condition: @autoclosure () -> Bool, _ message: @autoclosure () -> String) {
  if !condition() { fatalError("invariant violated: " + message()) }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
  let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
  let parsed = PositionFile.parse(text, identity: "r")
  // NaN is not equal to itself: positions are compared by what is written of them.
  let written = parsed.map { PositionFile.text($0, identity: "r") }
  check(
    written == PositionFile.parse(text, identity: "r").map { PositionFile.text($0, identity: "r") },
    "parsing is not deterministic")
  guard let position = parsed, let written else { return 0 }
  check(PositionFile.parse(text, identity: "s") == nil, "another receiver's file was taken")
  let again = PositionFile.parse(written, identity: "r")
  check(
    again.map { PositionFile.text($0, identity: "r") } == written,
    "the written position does not read back: \(position)")

  let later = UTCTimestamp(
    secondsSinceUnixEpoch: position.time.secondsSinceUnixEpoch + 86_400,
    nanoseconds: position.time.time.nanoseconds)
  for now in [position.time, later] {
    let aiding = position.aiding(at: now)
    check(aiding == nil || position.isPlausible, "an implausible position aids: \(position)")
    for family in [ChipsetFamily.ublox, .mediatek] {
      let command = TimedCommand(family: family, content: .position(position))
      let bytes = command.bytes(at: now)
      _ = command.step(at: now, acknowledged: true)
      check(bytes == nil || aiding?.isPlausible == true, "sent an implausible \(position)")
    }
    guard let aiding else { continue }
    let ublox = Aiding.ubloxPosition(aiding)
    check((ublox != nil) == aiding.isPlausible, "u-blox: \(aiding)")
    if let ublox { check(ublox.count == 28, "POS_LLH is 20 bytes of payload: \(ublox.count)") }
    let mediatek = Aiding.mediatekPosition(aiding, at: now)
    check(
      (mediatek != nil) == (aiding.isPlausible && aiding.accuracy < Aiding.mediatekPositionLimit),
      "MediaTek: \(aiding)")
    if let mediatek {
      check(mediatek.count <= 82, "$PMTK741 longer than a sentence: \(mediatek.count)")
    }
  }
  return 0
}
