// receiver-bench: what the gated receiver costs, measured on this machine with a pty standing
// in for the receiver. Prints figures; asserts nothing.
//
//   swift run -c release receiver-bench [--json] [--epochs N] [--cycles N]
//       [--first-fix-cycles N] [--burst-clients N] [--burst-rounds N] [--burst-spread-ms N]
//       [--seconds S]
//       [--only latency|power-on|first-fix|burst|process]
//
// 1. Fix latency: from the last byte of an epoch written to the pty to the fix reaching a
//    subscriber iterating `subscribe()`. The epoch goes out but for its final CR LF; once the
//    reader is back asleep the CR LF is written, and the clock runs from just before that
//    write to the subscriber's loop body. Also from before writing a whole epoch at once.
// 2. Power-on: from calling `subscribe()` on a powered-off MediaTek receiver to the first
//    enable byte (the wake-up CR LF) read on the pty's controller side; the subscription then
//    ends and the power-off (with its acknowledged standby) completes before the next cycle.
//    Then, with a feed at 1 Hz of wall time, the time from `subscribe()` to the first fix of
//    each power cycle, and from the write of that fix's epoch to the fix.
// 2c. Bursts: N subscribers that each subscribe and cancel at once on a MediaTek
//    (acknowledging at once, 200 ms wake settle, streaming 5 Hz while awake), linger 0; the
//    power cycles they cost with a newcomer right after, the newcomer's first fix, and a
//    `shutdown()` right after a second burst: how long it takes and how many standbys.
// 3. Wake-ups and memory, in a child process that holds one receiver (this program run with
//    --child): context switches of each of its threads from /proc/PID/task/*/status while
//    nobody subscribes, while streaming 1 Hz, and idle again after the power-off (a voluntary
//    switch is a sleep, hence one wake-up; involuntary ones are preemptions); VmRSS, VmHWM,
//    RssAnon, RssFile and Pss while streaming. Baselines: the same program with --empty (the
//    Swift runtime and this program's libraries, no receiver) and with --empty-concurrency
//    (the same after running one task, which starts libdispatch's thread pool).

import Chipsets
import Dispatch
import Glibc
import NMEA
import POSIX
import SerialGPS
import SerialPort

struct Settings {
  var json = false
  var epochs = 2000
  var cycles = 300
  var seconds = 10
  var firstFixCycles = 10
  var burstClients = 1000
  var burstRounds = 5
  var burstSpread = 0
  /// Runs one phase only: latency, power-on, first-fix or process.
  var only: String?
}

var settings = Settings()
var argumentList = Array(CommandLine.arguments.dropFirst())

if argumentList.first == "--child" {
  runChild(device: argumentList.count > 1 ? argumentList[1] : nil)
}
if argumentList.first == "--empty" {
  runChild(device: nil)
}
if argumentList.first == "--empty-concurrency" {
  // One trivial task on the default executor: what any program using Swift concurrency on
  // libdispatch's pool starts on Linux.
  let done = Mailbox(false)
  Task.detached { done.update { $0 = true } }
  _ = done.wait(timeoutMilliseconds: 10_000) { $0 ? true : nil }
  runChild(device: nil)
}

while !argumentList.isEmpty {
  let argument = argumentList.removeFirst()
  func number() -> Int {
    guard let text = argumentList.first, let value = Int(text), value > 0 else {
      print("receiver-bench: \(argument) needs a positive number")
      exit(2)
    }
    argumentList.removeFirst()
    return value
  }
  switch argument {
  case "--json": settings.json = true
  case "--epochs": settings.epochs = number()
  case "--cycles": settings.cycles = number()
  case "--seconds": settings.seconds = number()
  case "--first-fix-cycles": settings.firstFixCycles = number()
  case "--burst-clients": settings.burstClients = number()
  case "--burst-rounds": settings.burstRounds = number()
  case "--burst-spread-ms": settings.burstSpread = number()
  case "--only":
    guard let phase = argumentList.first,
      ["latency", "power-on", "first-fix", "burst", "process"].contains(phase)
    else {
      print("receiver-bench: --only takes latency, power-on, first-fix, burst or process")
      exit(2)
    }
    argumentList.removeFirst()
    settings.only = phase
  default:
    print(
      "usage: receiver-bench [--json] [--epochs N] [--cycles N] [--first-fix-cycles N]\n"
        + "       [--burst-clients N] [--burst-rounds N] [--burst-spread-ms N] [--seconds S]\n"
        + "       [--only latency|power-on|first-fix|burst|process]\n"
        + "       (internal: --child DEVICE, --empty, --empty-concurrency)")
    exit(2)
  }
}

/// Progress goes to standard error so that `--json` output stays clean.
func note(_ text: String) {
  try? FileDescriptor.standardError.writeAll((text + "\n").utf8)
}

// MARK: - 1. Fix latency

struct LatencyResult {
  var lastByte: Distribution
  var wholeEpoch: Distribution
}

func measureFixLatency(epochs: Int) throws -> LatencyResult {
  let pty = try PseudoTerminal()
  let receiver = benchReceiver(device: pty.devicePath, family: .nmea)

  // Arrival time of each fix, by its second of the day.
  let arrivals = Mailbox<[Int: Int64]>([:])
  let events = receiver.subscribe()
  DriverExecutor.task {
    for await event in events {
      if case .fix(let update) = event, let time = update.fix.time {
        let now = nanoseconds()
        let key = secondOfDay(hour: time.hour, minute: time.minute, second: time.second)
        arrivals.update { $0[key] = now }
      }
    }
  }
  // The port must be open before anything is written: it flushes its input when it opens.
  while receiver.statistics.powerOns == 0 { sleep(milliseconds: 1) }
  sleep(milliseconds: 20)

  // Until the fix builder has learned which sentence ends the cycle, an epoch is emitted only
  // when the next one begins; a receiver's first few seconds are like that too.
  var index = 0
  while receiver.statistics.decoder.builder.epochsClosedAtCycleEnd < 3 {
    guard index < 100 else { throw BenchError.noFix }
    try pty.write(epoch(index))
    index += 1
    sleep(milliseconds: 5)
  }
  sleep(milliseconds: 20)
  arrivals.update { $0.removeAll() }

  var lastByte: [Double] = []
  var whole: [Double] = []
  let warmUp = 20
  for round in 0..<(warmUp + 2 * epochs) {
    let bytes = epoch(index)
    let start: Int64
    if round % 2 == 0 {
      try pty.write(bytes.dropLast(2))
      sleep(milliseconds: 2)  // the reader takes the partial epoch and goes back to sleep
      start = nanoseconds()
      try pty.write(bytes.suffix(2))
    } else {
      sleep(milliseconds: 1)
      start = nanoseconds()
      try pty.write(bytes)
    }
    let key = index % 86_400
    guard let arrival = arrivals.wait(timeoutMilliseconds: 5000, { $0[key] }) else {
      note("epoch \(index): no fix within 5 s (fix builder statistics: \(receiver.statistics))")
      throw BenchError.noFix
    }
    arrivals.update { $0[key] = nil }
    if round >= warmUp {
      let delay = Double(arrival - start) / 1000
      if round % 2 == 0 { lastByte.append(delay) } else { whole.append(delay) }
    }
    index += 1
  }
  events.cancel()
  runBlocking { await receiver.shutdown() }
  pty.hangUp()
  return LatencyResult(lastByte: Distribution(lastByte), wholeEpoch: Distribution(whole))
}

enum BenchError: Error {
  case noFix
  case noEnableByte
  case child(String)
}

// MARK: - 2. Power-on

/// The receive side of a simulated MediaTek on `pty`, run on a thread of its own until `stop`
/// says so or the pty fails: every `$PMTK` command is acknowledged at once (`$PMTK001,N,3`,
/// as the chip does), `bytesArrived` gets the time of each read and `commandAnswered` the
/// number of each command answered.
func answerMediaTekCommands(
  on pty: PseudoTerminal, until stop: () -> Bool, bytesArrived: (Int64) -> Void = { _ in },
  commandAnswered: (String) -> Void = { _ in }
) {
  var pending: [UInt8] = []
  var buffer = [UInt8](repeating: 0, count: 4096)
  while !stop() {
    let result = buffer.withUnsafeMutableBytes { raw in
      Result { () throws(SerialPortError) in try pty.read(into: raw, timeout: nil) }
    }
    guard case .success(.received(let count)) = result else {
      if case .failure = result { break }
      continue
    }
    bytesArrived(nanoseconds())
    pending += buffer[0..<count]
    while let end = pending.firstIndex(of: 10) {
      let line = String(decoding: pending[...end], as: UTF8.self)
      pending.removeSubrange(...end)
      guard line.hasPrefix("$PMTK") else { continue }
      let number = String(line.dropFirst(5).prefix { $0 != "," && $0 != "*" })
      try? pty.write(sentence("PMTK001,\(number),3"))
      commandAnswered(number)
    }
  }
}

func measurePowerOn(cycles: Int) throws -> Distribution {
  let pty = try PseudoTerminal()
  let receiver = benchReceiver(device: pty.devicePath, family: .mediatek)

  // The receiver's side: notes when the first byte of a cycle arrives and acknowledges $PMTK
  // commands at once, as a MediaTek chip does.
  struct Wire {
    var cycle = -1
    var firstByte: [Int: Int64] = [:]
    var stop = false
  }
  let wire = Mailbox(Wire())
  let stopped = Mailbox(false)
  startThread(name: "bench-receiver") {
    answerMediaTekCommands(
      on: pty, until: { wire.read { $0.stop } },
      bytesArrived: { now in
        wire.update { state in
          if state.cycle >= 0 && state.firstByte[state.cycle] == nil {
            state.firstByte[state.cycle] = now
          }
        }
      })
    stopped.update { $0 = true }
  }

  var delays: [Double] = []
  for cycle in 0..<cycles {
    wire.update { $0.cycle = cycle }
    let start = nanoseconds()
    let events = receiver.subscribe()
    guard let first = wire.wait(timeoutMilliseconds: 5000, { $0.firstByte[cycle] }) else {
      throw BenchError.noEnableByte
    }
    delays.append(Double(first - start) / 1000)
    events.cancel()
    // The next cycle starts from a receiver that is off: standby sent and port closed.
    while receiver.statistics.powerOffs < cycle + 1 { sleep(milliseconds: 1) }
  }
  let statistics = receiver.statistics
  runBlocking { await receiver.shutdown() }
  wire.update { $0.stop = true }
  pty.interrupt()
  _ = stopped.wait(timeoutMilliseconds: 5000) { $0 ? true : nil }
  pty.hangUp()
  if statistics.commandsFailed > 0 {
    note("power-on: \(statistics.commandsFailed) commands were not acknowledged")
  }
  return Distribution(delays)
}

// MARK: - 2b. First fix after subscribing, 1 Hz feed

/// One power cycle's wait for its first fix.
struct FirstFix {
  /// From `subscribe()` to the first fix, ms.
  var afterSubscribe: Double
  /// From the end of the write of the epoch that fix belongs to, ms: about 0 when the epoch
  /// was closed at its own last sentence, about one epoch when it waited for the next one.
  var afterItsEpoch: Double
}

func measureFirstFix(cycles: Int) throws -> [FirstFix] {
  let pty = try PseudoTerminal()
  let receiver = benchReceiver(device: pty.devicePath, family: .nmea)

  // A receiver streaming at 1 Hz of wall time whether anyone listens or not.
  let written = Mailbox<[Int: Int64]>([:])
  let feeding = Mailbox(true)
  let fed = Mailbox(false)
  startThread(name: "bench-feeder") {
    var index = 70_000
    while feeding.read({ $0 }) {
      if (try? pty.write(epoch(index), timeout: .milliseconds(200))) != nil {
        let now = nanoseconds()
        written.update { $0[index % 86_400] = now }
      }
      index += 1
      _ = feeding.wait(timeoutMilliseconds: 1000) { $0 ? nil : true }
    }
    fed.update { $0 = true }
  }

  var results: [FirstFix] = []
  for cycle in 0..<cycles {
    // Spread the start over the feed's second: 0.3 s, then 0.37 s later each cycle.
    sleep(milliseconds: 1300 + (cycle * 370) % 1000)
    let first = Mailbox<(time: Int64, key: Int)?>(nil)
    let start = nanoseconds()
    let events = receiver.subscribe()
    DriverExecutor.task {
      for await event in events {
        if case .fix(let update) = event, !update.isReplay, let time = update.fix.time {
          let now = nanoseconds()
          let key = secondOfDay(hour: time.hour, minute: time.minute, second: time.second)
          first.update { if $0 == nil { $0 = (now, key) } }
        }
      }
    }
    guard let fix = first.wait(timeoutMilliseconds: 10_000, { $0 }) else {
      throw BenchError.noFix
    }
    events.cancel()
    let epochWritten = written.read { $0[fix.key] } ?? fix.time
    results.append(
      FirstFix(
        afterSubscribe: Double(fix.time - start) / 1e6,
        afterItsEpoch: Double(fix.time - epochWritten) / 1e6))
    while receiver.statistics.powerOffs < cycle + 1 { sleep(milliseconds: 1) }
  }
  feeding.update { $0 = false }
  _ = fed.wait(timeoutMilliseconds: 5000) { $0 ? true : nil }
  runBlocking { await receiver.shutdown() }
  pty.hangUp()
  return results
}

// MARK: - Run

func machine() -> String {
  let cpu =
    readFile("/proc/cpuinfo")?.split(separator: "\n").first { $0.hasPrefix("model name") }
    .map { String($0.split(separator: ":", maxSplits: 1)[1].drop { $0 == " " }) } ?? "?"
  var name = utsname()
  uname(&name)
  let release = withUnsafeBytes(of: name.release) { raw in
    String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
  }
  return "\(cpu), \(sysconf(Int32(_SC_NPROCESSORS_ONLN))) CPUs, Linux \(release)"
}

/// The figures so far: JSON members, and lines for people.
var jsonMembers = ["\"machine\":\"\(machine())\""]
var lines = ["machine: \(machine())"]

func milliseconds(_ values: [Double]) -> String {
  values.map { format($0, 1) }.joined(separator: ", ")
}

@MainActor func runs(_ phase: String) -> Bool { settings.only == nil || settings.only == phase }

do {
  if runs("latency") {
    note("fix latency: \(settings.epochs) epochs of each kind")
    let latency = try measureFixLatency(epochs: settings.epochs)
    jsonMembers.append("\"fix_latency_last_byte\":\(latency.lastByte.json)")
    jsonMembers.append("\"fix_latency_whole_epoch\":\(latency.wholeEpoch.json)")
    lines.append("fix latency, last byte of the epoch → subscriber: \(latency.lastByte.summary)")
    lines.append("fix latency, whole epoch written → subscriber:    \(latency.wholeEpoch.summary)")
  }
  if runs("power-on") {
    note("power-on: \(settings.cycles) cycles")
    let powerOn = try measurePowerOn(cycles: settings.cycles)
    jsonMembers.append("\"subscribe_to_first_enable_byte\":\(powerOn.json)")
    lines.append("subscribe() → first enable byte on the wire:      \(powerOn.summary)")
  }
  if runs("first-fix") {
    note("first fix after subscribe(), 1 Hz feed: \(settings.firstFixCycles) power cycles")
    let firstFixes = try measureFirstFix(cycles: settings.firstFixCycles)
    let afterSubscribe = firstFixes.map(\.afterSubscribe)
    let afterEpoch = firstFixes.map(\.afterItsEpoch)
    jsonMembers.append("\"first_fix_after_subscribe_ms\":[\(milliseconds(afterSubscribe))]")
    jsonMembers.append("\"first_fix_after_its_epoch_ms\":[\(milliseconds(afterEpoch))]")
    lines.append(
      "first fix after subscribe(), 1 Hz feed: median "
        + "\(format(Distribution(afterSubscribe).median, 1)) ms [\(milliseconds(afterSubscribe))]")
    lines.append(
      "  … after its epoch was written:        median "
        + "\(format(Distribution(afterEpoch).median, 1)) ms [\(milliseconds(afterEpoch))]")
  }
  if runs("burst") {
    note("bursts: \(settings.burstRounds) rounds of \(settings.burstClients) clients")
    var rounds: [BurstFigures] = []
    for _ in 0..<settings.burstRounds {
      rounds.append(
        try measureBurst(clients: settings.burstClients, spreadMilliseconds: settings.burstSpread))
    }
    let cycles = rounds.map { Double($0.powerCycles) }
    let firstFix = rounds.map(\.newcomerFirstFix)
    let shutdown = rounds.map(\.shutdown)
    let standbys = rounds.map { Double($0.shutdownStandbys) }
    jsonMembers += [
      "\"burst_clients\":\(settings.burstClients)",
      "\"burst_spread_ms\":\(settings.burstSpread)",
      "\"burst_power_cycles\":[\(milliseconds(cycles))]",
      "\"burst_newcomer_first_fix_ms\":[\(milliseconds(firstFix))]",
      "\"burst_shutdown_ms\":[\(milliseconds(shutdown))]",
      "\"burst_shutdown_standbys\":[\(milliseconds(standbys))]",
    ]
    lines += [
      "burst of \(settings.burstClients) subscribe+cancel over \(settings.burstSpread) ms, "
        + "linger 0, MediaTek on a pty:",
      "  power cycles (burst + newcomer): median \(format(Distribution(cycles).median, 0)) "
        + "[\(milliseconds(cycles))]",
      "  newcomer's first fix after it:   median \(format(Distribution(firstFix).median, 1)) ms "
        + "[\(milliseconds(firstFix))]",
      "  shutdown() after another burst:  median \(format(Distribution(shutdown).median, 1)) ms "
        + "[\(milliseconds(shutdown))]",
      "  standbys sent from that burst:   median \(format(Distribution(standbys).median, 0)) "
        + "[\(milliseconds(standbys))]",
    ]
  }
  if runs("process") {
    let process = try measureProcess(seconds: settings.seconds)
    jsonMembers += [
      "\"wakeups_program_that_ran_one_task\":\(process.concurrencyIdle.json)",
      "\"wakeups_idle\":\(process.idle.json)",
      "\"wakeups_streaming_1hz\":\(process.streaming.json)",
      "\"wakeups_idle_after_power_off\":\(process.idleAfter.json)",
      "\"memory_kb\":{\"empty\":\(process.emptyMemory.json),"
        + "\"empty_after_one_task\":\(process.concurrencyMemory.json),"
        + "\"idle_receiver\":\(process.idleMemory.json),"
        + "\"streaming\":\(process.streamingMemory.json)}",
    ]
    lines += [
      "wake-ups, a program that ran one task:     \(process.concurrencyIdle.summary)",
      "wake-ups, idle (nobody subscribed):        \(process.idle.summary)",
      "wake-ups, streaming 1 Hz:                  \(process.streaming.summary)",
      "wake-ups, idle again after the power-off:  \(process.idleAfter.summary)",
      "memory, empty program:             \(process.emptyMemory.summary)",
      "memory, a program that ran a task: \(process.concurrencyMemory.summary)",
      "memory, one receiver, idle:        \(process.idleMemory.summary)",
      "memory, one receiver, streaming:   \(process.streamingMemory.summary)",
    ]
  }
} catch {
  note("receiver-bench: \(error)")
  exit(1)
}
if settings.json {
  print("{" + jsonMembers.joined(separator: ",") + "}")
} else {
  for line in lines { print(line) }
}
