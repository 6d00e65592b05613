// fleet-bench: many virtual receivers (in-process replays) published through an MQTT broker
// by one FleetBridge. The publishing side of scripts/bench-fleet.py, which starts the broker
// and the consumer, runs this beside `serialgps serve` on ptys and gpsd with
// `gpspipe -w | mosquitto_pub -l`, and prints the figures (BENCHMARKS.md). Prints figures of
// its own; asserts nothing.
//
//   fleet-bench --broker mqtt://127.0.0.1:PORT --receivers 200 --fixture FILE --seconds S
//               --stamps FILE [--spread MS]
//
// Each receiver is a GPSReceiver over a ReplayConnector of FILE in real time (looping), with
// no chipset commands, published as r0, r1 … with --mqtt-gating always. For each epoch the
// wall-clock time (CLOCK_REALTIME, nanoseconds) at which the driver's reader took the epoch's
// last bytes from the replay is written to the stamps file as `ID HH:MM:SS.mmm NANOSECONDS`,
// for the consumer's receipt times to be matched against. Prints `ready` once every
// receiver's connection is up, and statistics at the end. By default every receiver's epochs
// come at the same moments, as GPS receivers' do (aligned on GPS time); --spread MS spreads
// them evenly over MS milliseconds.

import Chipsets
import Fleet
import Glibc
import NMEA
import POSIX
import Replay
import SerialGPS
import Simulator

struct Settings {
  var broker = "mqtt://127.0.0.1:1883"
  var receivers = 200
  var fixture = "fixtures/ublox-m8-drive.nmea"
  var seconds = 30
  var stamps = "/tmp/fleet-bench-stamps"
  /// Receivers' epochs spread evenly over this many milliseconds instead of all at once.
  var spread = 0
}

var settings = Settings()
var arguments = Array(CommandLine.arguments.dropFirst())
while !arguments.isEmpty {
  let option = arguments.removeFirst()
  guard let value = arguments.first else {
    print("fleet-bench: \(option) needs a value")
    exit(2)
  }
  arguments.removeFirst()
  switch option {
  case "--broker": settings.broker = value
  case "--receivers": settings.receivers = Int(value) ?? settings.receivers
  case "--fixture": settings.fixture = value
  case "--seconds": settings.seconds = Int(value) ?? settings.seconds
  case "--stamps": settings.stamps = value
  case "--spread": settings.spread = Int(value) ?? 0
  default:
    print(
      "usage: fleet-bench --broker URL --receivers N --fixture FILE --seconds S --stamps FILE "
        + "[--spread MS]")
    exit(2)
  }
}

func realtimeNanoseconds() -> Int64 {
  let (seconds, nanoseconds) = SystemWallClock().now().secondsAndNanoseconds
  return seconds * 1_000_000_000 + nanoseconds
}

/// When each epoch's last bytes were read, per receiver.
final class Stamps: Sendable {
  let id: String
  /// The epoch being read (its RMC time as `HH:MM:SS.mmm`) and when its latest bytes came.
  private let state = Locked((current: String?.none, stamp: Int64(0), done: [(String, Int64)]()))

  init(id: String) { self.id = id }

  /// A chunk the reader took: an RMC starts a new epoch; every chunk moves its end.
  func read(_ bytes: UnsafeRawBufferPointer) {
    let now = realtimeNanoseconds()
    let key = Self.rmcTime(bytes)
    state.withLock { state in
      if let key {
        if let current = state.current { state.done.append((current, state.stamp)) }
        state.current = key
      }
      state.stamp = now
    }
  }

  var lines: [String] {
    state.withLock { state in
      var all = state.done
      if let current = state.current { all.append((current, state.stamp)) }
      return all.map { "\(id) \($0.0) \($0.1)" }
    }
  }

  /// `HH:MM:SS.mmm` of the first `$xxRMC` in `bytes`.
  static func rmcTime(_ bytes: UnsafeRawBufferPointer) -> String? {
    guard bytes.count >= 17 else { return nil }
    for index in 0..<(bytes.count - 16) {
      guard bytes[index] == UInt8(ascii: "$"), bytes[index + 3] == UInt8(ascii: "R"),
        bytes[index + 4] == UInt8(ascii: "M"), bytes[index + 5] == UInt8(ascii: "C"),
        bytes[index + 6] == UInt8(ascii: ",")
      else { continue }
      let field = Array(bytes[(index + 7)..<min(bytes.count, index + 17)])
      guard field.count >= 6 else { return nil }
      var text = ""
      for (offset, byte) in field.prefix(6).enumerated() {
        if offset == 2 || offset == 4 { text.append(":") }
        text.append(Character(UnicodeScalar(byte)))
      }
      var millis = "000"
      if field.count > 7, field[6] == UInt8(ascii: ".") {
        let digits = field[7...].prefix { $0 >= 48 && $0 <= 57 }.map {
          Character(UnicodeScalar($0))
        }
        millis = String((String(digits) + "000").prefix(3))
      }
      return text + "." + millis
    }
    return nil
  }
}

/// A connector that stamps what the reader takes from the replay.
struct StampingConnector: ReceiverConnector {
  let inner: ReplayConnector
  let stamps: Stamps
  var deviceName: String { inner.deviceName }
  var chipsetHint: ChipsetHint? { inner.chipsetHint }

  func connect() async throws -> any ReceiverConnection {
    StampingConnection(inner: try await inner.connect(), stamps: stamps)
  }
  func startWatching(appeared: @escaping @Sendable () -> Void) {
    inner.startWatching(appeared: appeared)
  }
  func stopWatching() { inner.stopWatching() }
}

final class StampingConnection: ReceiverConnection {
  let inner: any ReceiverConnection
  let stamps: Stamps
  init(inner: any ReceiverConnection, stamps: Stamps) {
    self.inner = inner
    self.stamps = stamps
  }
  func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
    let count = try inner.read(into: buffer)
    if count > 0 { stamps.read(UnsafeRawBufferPointer(rebasing: buffer[0..<count])) }
    return count
  }
  func write(_ bytes: [UInt8]) throws { try inner.write(bytes) }
  func interrupt() { inner.interrupt() }
  func close() { inner.close() }
}

/// Writes a line to standard output at once (the driving script waits for `ready`).
func say(_ text: String) {
  let line = text + "\n"
  _ = line.withCString { write(1, $0, strlen($0)) }
}

func run(_ settings: Settings) async -> Int32 {
  let recording: Recording
  do {
    recording = try Recording.load(path: settings.fixture)
  } catch {
    say("fleet-bench: \(error)")
    return 2
  }
  var configuration: FleetBridge.Configuration
  do {
    configuration = FleetBridge.Configuration(broker: try BrokerConfiguration(url: settings.broker))
  } catch {
    say("fleet-bench: \(error)")
    return 2
  }
  configuration.gating = .always
  configuration.log = { message in
    let line = message + "\n"
    _ = line.withCString { write(2, $0, strlen($0)) }
  }
  let bridge: FleetBridge
  do {
    bridge = try FleetBridge(configuration: configuration)
  } catch {
    say("fleet-bench: \(error)")
    return 2
  }
  let clock = SystemClock()
  var options = GPSReceiver.Options()
  options.chipset = .family(.nmea)
  options.linger = .zero
  var receivers: [GPSReceiver] = []
  var allStamps: [Stamps] = []
  let start = clock.now
  for index in 0..<settings.receivers {
    // A replay's epochs come one interval after it is made: making them apart spreads them.
    if settings.spread > 0 {
      let offset = Duration.milliseconds(settings.spread) * index / settings.receivers
      try? await clock.sleep(until: start + offset)
    }
    let id = "r\(index)"
    let replay = ReplayConnector(
      recording: recording,
      configuration: .init(profile: .generic, pace: .realTime, loops: true, deviceName: id),
      clock: clock)
    let stamps = Stamps(id: id)
    let receiver = GPSReceiver(
      connector: StampingConnector(inner: replay, stamps: stamps), options: options, clock: clock)
    do {
      try bridge.publish(receiver, as: id)
    } catch {
      say("fleet-bench: \(error)")
      return 2
    }
    receivers.append(receiver)
    allStamps.append(stamps)
  }
  let ids = (0..<settings.receivers).map { "r\($0)" }
  while !ids.allSatisfy({ bridge.statistics(for: $0)?.connected == true }) {
    try? await clock.sleep(until: clock.now + .milliseconds(20))
  }
  say("ready")
  try? await clock.sleep(until: clock.now + .seconds(Int64(settings.seconds)))

  var published = 0
  var dropped = 0
  for id in ids {
    published += bridge.statistics(for: id)?.fixesPublished ?? 0
    dropped += bridge.statistics(for: id)?.publishFailures ?? 0
  }
  await bridge.shutdown()
  for receiver in receivers { await receiver.shutdown() }
  guard let file = fopen(settings.stamps, "w") else {
    say("fleet-bench: cannot write \(settings.stamps)")
    return 1
  }
  for stamps in allStamps {
    for line in stamps.lines { fputs(line + "\n", file) }
  }
  fclose(file)
  say("published \(published) fixes, \(dropped) publications refused")
  return 0
}

let chosen = settings
exit(DriverExecutor.runBlocking { await run(chosen) })
