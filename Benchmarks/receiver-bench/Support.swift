import Chipsets
import GPSDProtocol
import Glibc
import POSIX
import SerialGPS

// Small tools for the benchmark, without Foundation: Foundation would add its own threads and
// several megabytes to the resident memory this program measures.

/// Monotonic time in nanoseconds.
func nanoseconds() -> Int64 {
  var now = timespec()
  clock_gettime(CLOCK_MONOTONIC, &now)
  return Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec)
}

func sleep(milliseconds: Int) {
  sleepThread(for: .milliseconds(milliseconds))
}

/// The receiver every measurement drives: a `family` receiver on `device` at a fixed 9600
/// baud, powered off as soon as its last subscription ends (linger 0).
func benchReceiver(device: String, family: ChipsetFamily) -> GPSReceiver {
  var options = GPSReceiver.Options()
  options.chipset = .family(family)
  options.linger = .zero
  return GPSReceiver(device: device, baud: .fixed(.b9600), options: options)
}

/// `value` with `decimals` digits after the point (GPSDProtocol's exact decimal text); "nan"
/// for NaN and the infinities.
func format(_ value: Double, _ decimals: Int = 1) -> String {
  DecimalText.fixed(value, decimals: decimals) ?? "nan"
}

/// Order statistics of a sample, in microseconds.
struct Distribution {
  let sorted: [Double]

  init(_ samples: [Double]) { sorted = samples.sorted() }

  func percentile(_ p: Double) -> Double {
    guard !sorted.isEmpty else { return .nan }
    return sorted[min(sorted.count - 1, Int((Double(sorted.count - 1) * p).rounded()))]
  }

  var median: Double { percentile(0.5) }
  var p99: Double { percentile(0.99) }
  var maximum: Double { sorted.last ?? .nan }

  var summary: String {
    "median \(format(median)) µs, p90 \(format(percentile(0.9))) µs, p99 \(format(p99)) µs, "
      + "max \(format(maximum)) µs (\(sorted.count) samples)"
  }

  var json: String {
    "{\"median_us\":\(format(median, 2)),\"p90_us\":\(format(percentile(0.9), 2)),"
      + "\"p99_us\":\(format(p99, 2)),\"max_us\":\(format(maximum, 2)),\"samples\":\(sorted.count)}"
  }
}

/// A whole file's text (for /proc files, which report size 0), or nil.
func readFile(_ path: String) -> String? {
  guard let bytes = try? FileDescriptor.contents(of: path) else { return nil }
  return String(decoding: bytes, as: UTF8.self)
}

/// The next line read from `descriptor`, one byte at a time (a pipe shared with a child, which
/// must not be read past the line); nil at end of file with nothing read.
func readLine(from descriptor: FileDescriptor) -> String? {
  var line: [UInt8] = []
  var byte: UInt8 = 0
  while true {
    let count = try? withUnsafeMutableBytes(of: &byte) { raw throws(Errno) in
      try descriptor.read(into: raw)
    }
    guard count == 1 else { return line.isEmpty ? nil : String(decoding: line, as: UTF8.self) }
    if byte == 10 { return String(decoding: line, as: UTF8.self) }
    line.append(byte)
  }
}

/// The number after `name:` in a /proc status file (kB for memory lines).
func statusField(_ status: String, _ name: String) -> Int? {
  for line in status.split(separator: "\n") where line.hasPrefix(name + ":") {
    let value = line.dropFirst(name.count + 1).split { $0 == " " || $0 == "\t" }.first
    return value.flatMap { Int($0) }
  }
  return nil
}

/// One thread's context switches: every time it went to sleep (voluntary) or was preempted.
struct ThreadSwitches {
  var name: String
  var voluntary: Int
  var involuntary: Int
  var total: Int { voluntary + involuntary }
}

/// The context switches of every thread of process `pid`, by thread id.
func threadSwitches(pid: pid_t) -> [Int32: ThreadSwitches] {
  var result: [Int32: ThreadSwitches] = [:]
  guard let directory = opendir("/proc/\(pid)/task") else { return result }
  defer { closedir(directory) }
  while let entry = readdir(directory) {
    let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
      String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
    }
    guard let tid = Int32(name),
      let status = readFile("/proc/\(pid)/task/\(tid)/status"),
      let voluntary = statusField(status, "voluntary_ctxt_switches"),
      let involuntary = statusField(status, "nonvoluntary_ctxt_switches")
    else { continue }
    let comm = readFile("/proc/\(pid)/task/\(tid)/comm")?.split(separator: "\n").first
    result[tid] = ThreadSwitches(
      name: comm.map(String.init) ?? "?", voluntary: voluntary, involuntary: involuntary)
  }
  return result
}

/// What the threads of a process did between two snapshots.
struct WakeUps {
  struct Thread {
    var tid: Int32
    var name: String
    var voluntary: Int
    var involuntary: Int
  }

  var seconds: Double
  var threads: [Thread]

  init(from before: [Int32: ThreadSwitches], to after: [Int32: ThreadSwitches], seconds: Double) {
    self.seconds = seconds
    threads = after.keys.sorted().map { tid in
      let now = after[tid]!
      let then = before[tid] ?? ThreadSwitches(name: now.name, voluntary: 0, involuntary: 0)
      return Thread(
        tid: tid, name: now.name, voluntary: now.voluntary - then.voluntary,
        involuntary: now.involuntary - then.involuntary)
    }
  }

  var total: Int { threads.reduce(0) { $0 + $1.voluntary + $1.involuntary } }
  /// Voluntary switches: each time a thread went to sleep, so each time it had been woken.
  /// Involuntary switches are preemptions of a running thread (load from other processes).
  var wakeUps: Int { threads.reduce(0) { $0 + $1.voluntary } }
  var perSecond: Double { Double(wakeUps) / seconds }

  var summary: String {
    var text =
      "\(format(perSecond, 2)) wake-ups/s (\(wakeUps) voluntary, \(total - wakeUps) "
      + "involuntary switches in \(format(seconds, 1)) s); per thread:"
    for thread in threads {
      text += " \(thread.name)[\(thread.tid)] \(thread.voluntary)+\(thread.involuntary)"
    }
    return text
  }

  var json: String {
    let list = threads.map {
      "{\"tid\":\($0.tid),\"name\":\"\($0.name)\",\"voluntary\":\($0.voluntary),"
        + "\"involuntary\":\($0.involuntary)}"
    }
    return "{\"seconds\":\(format(seconds, 1)),\"voluntary\":\(wakeUps),"
      + "\"involuntary\":\(total - wakeUps),\"wakeups_per_second\":\(format(perSecond, 3)),"
      + "\"threads\":[\(list.joined(separator: ","))]}"
  }
}

/// Resident memory of process `pid`, kB: VmRSS now and at its peak (VmHWM), how much of it is
/// private (RssAnon) or pages of files such as the shared libraries (RssFile), and the
/// proportional share (Pss, shared pages divided among the processes mapping them).
struct Memory {
  var rss = -1
  var peak = -1
  var anonymous = -1
  var file = -1
  var proportional = -1

  init(pid: pid_t) {
    let status = readFile("/proc/\(pid)/status") ?? ""
    rss = statusField(status, "VmRSS") ?? -1
    peak = statusField(status, "VmHWM") ?? -1
    anonymous = statusField(status, "RssAnon") ?? -1
    file = statusField(status, "RssFile") ?? -1
    proportional = statusField(readFile("/proc/\(pid)/smaps_rollup") ?? "", "Pss") ?? -1
  }

  var summary: String {
    "VmRSS \(rss) kB (RssAnon \(anonymous), RssFile \(file), Pss \(proportional), "
      + "VmHWM \(peak))"
  }

  var json: String {
    "{\"VmRSS\":\(rss),\"VmHWM\":\(peak),\"RssAnon\":\(anonymous),\"RssFile\":\(file),"
      + "\"Pss\":\(proportional)}"
  }
}

/// A value handed between threads and tasks, with a wait for it to change.
///
/// `@unchecked Sendable`: its value is behind its mutex and condition, which the compiler cannot
/// see.
final class Mailbox<Value>: @unchecked Sendable {
  private let lock = Lock()
  private var value: Value

  init(_ value: Value) { self.value = value }

  func update(_ body: (inout Value) -> Void) {
    lock.withLock {
      body(&value)
      lock.broadcast()
    }
  }

  func read<T>(_ body: (Value) -> T) -> T {
    lock.withLock { body(value) }
  }

  /// Waits until `ready` returns a result or `timeoutMilliseconds` pass.
  func wait<T>(timeoutMilliseconds: Int, _ ready: (Value) -> T?) -> T? {
    let deadline = MonotonicInstant.now + .milliseconds(timeoutMilliseconds)
    return lock.withLock {
      while true {
        if let result = ready(value) { return result }
        if !lock.wait(until: deadline) { return ready(value) }
      }
    }
  }
}

/// Starts `body` on a thread of its own, named for the wake-up report.
func startThread(name: String, _ body: @escaping @Sendable () -> Void) {
  let thread = OwnThread.start(name: name, body)
  precondition(thread.startFailure == nil, "cannot start a thread: \(thread.startFailure!)")
}

/// Runs an async operation to its end from synchronous code (the benchmark's main thread
/// blocks; the operation runs on the cooperative pool).
func runBlocking<T: Sendable>(_ operation: @escaping @Sendable () async -> T) -> T {
  // On the driver's own thread, as the serialgps command runs: libdispatch's pool is never
  // started, so it cannot wake the process (docs/receiver.md).
  DriverExecutor.runBlocking(operation)
}

/// A sentence with its checksum and CR LF.
func sentence(_ body: String) -> [UInt8] {
  var sum: UInt8 = 0
  for byte in body.utf8 { sum ^= byte }
  let digits = Array("0123456789ABCDEF".utf8)
  return Array(("$" + body + "*").utf8) + [digits[Int(sum >> 4)], digits[Int(sum & 15)], 13, 10]
}

/// `hhmmss.00` for second `index` of the day.
func timeField(_ index: Int) -> String {
  func two(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }
  let second = index % 86_400
  return two(second / 3600) + two(second / 60 % 60) + two(second % 60) + ".00"
}

/// One epoch of a u-blox-like receiver: RMC, GGA, GSA, three GSV, GST (last in the cycle).
/// About 500 bytes, as a typical 1 Hz receiver sends.
func epoch(_ index: Int) -> [UInt8] {
  let time = timeField(index)
  var bytes = sentence("GNRMC,\(time),A,4722.61420,N,00832.50210,E,0.012,,300326,,,A,V")
  bytes += sentence("GNGGA,\(time),4722.61420,N,00832.50210,E,1,08,0.90,408.3,M,47.4,M,,")
  bytes += sentence("GNGSA,A,3,01,03,08,11,14,17,22,28,,,,,1.50,0.90,1.20,1")
  bytes += sentence("GPGSV,3,1,10,01,40,120,38,03,20,300,35,08,65,045,42,11,12,190,30,1")
  bytes += sentence("GPGSV,3,2,10,14,33,250,39,17,55,310,44,22,25,080,36,28,48,150,41,1")
  bytes += sentence("GPGSV,3,3,10,30,05,020,,32,09,340,,1")
  bytes += sentence("GNGST,\(time),1.0,2.0,1.5,45.0,1.2,1.6,2.5")
  return bytes
}

/// The seconds of the day of an epoch's time.
func secondOfDay(hour: UInt8, minute: UInt8, second: UInt8) -> Int {
  Int(hour) * 3600 + Int(minute) * 60 + Int(second)
}
