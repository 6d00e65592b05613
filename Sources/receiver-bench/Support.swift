import Glibc
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
  var request = timespec(tv_sec: milliseconds / 1000, tv_nsec: (milliseconds % 1000) * 1_000_000)
  var remaining = timespec()
  while nanosleep(&request, &remaining) != 0 && errno == EINTR { request = remaining }
}

/// `value` with `decimals` digits after the point (for figures, not for exact output).
func format(_ value: Double, _ decimals: Int = 1) -> String {
  guard value.isFinite else { return "nan" }
  var scale: Int64 = 1
  for _ in 0..<decimals { scale *= 10 }
  let scaled = Int64((abs(value) * Double(scale)).rounded())
  var text = value < 0 && scaled != 0 ? "-" : ""
  text += String(scaled / scale)
  if decimals > 0 {
    let fraction = String(scaled % scale)
    text += "." + String(repeating: "0", count: decimals - fraction.count) + fraction
  }
  return text
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
  let descriptor = open(path, O_RDONLY | O_CLOEXEC)
  guard descriptor >= 0 else { return nil }
  defer { close(descriptor) }
  var bytes: [UInt8] = []
  var chunk = [UInt8](repeating: 0, count: 4096)
  while true {
    let count = read(descriptor, &chunk, chunk.count)
    if count < 0 && errno == EINTR { continue }
    if count <= 0 { break }
    bytes += chunk[0..<count]
  }
  return String(decoding: bytes, as: UTF8.self)
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

/// A mutex and condition variable for handing values between threads and tasks.
final class Mailbox<Value>: @unchecked Sendable {
  private var mutex = pthread_mutex_t()
  private var condition = pthread_cond_t()
  private var value: Value

  init(_ value: Value) {
    self.value = value
    pthread_mutex_init(&mutex, nil)
    var attributes = pthread_condattr_t()
    pthread_condattr_init(&attributes)
    pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
    pthread_cond_init(&condition, &attributes)
    pthread_condattr_destroy(&attributes)
  }

  func update(_ body: (inout Value) -> Void) {
    pthread_mutex_lock(&mutex)
    body(&value)
    pthread_cond_broadcast(&condition)
    pthread_mutex_unlock(&mutex)
  }

  func read<T>(_ body: (Value) -> T) -> T {
    pthread_mutex_lock(&mutex)
    defer { pthread_mutex_unlock(&mutex) }
    return body(value)
  }

  /// Waits until `ready` returns a result or `timeoutMilliseconds` pass.
  func wait<T>(timeoutMilliseconds: Int, _ ready: (Value) -> T?) -> T? {
    var deadline = timespec()
    clock_gettime(CLOCK_MONOTONIC, &deadline)
    deadline.tv_sec += timeoutMilliseconds / 1000
    deadline.tv_nsec += (timeoutMilliseconds % 1000) * 1_000_000
    if deadline.tv_nsec >= 1_000_000_000 {
      deadline.tv_sec += 1
      deadline.tv_nsec -= 1_000_000_000
    }
    pthread_mutex_lock(&mutex)
    defer { pthread_mutex_unlock(&mutex) }
    while true {
      if let result = ready(value) { return result }
      if pthread_cond_timedwait(&condition, &mutex, &deadline) == ETIMEDOUT {
        return ready(value)
      }
    }
  }
}

/// Starts `body` on a new detached thread.
func startThread(_ body: @escaping @Sendable () -> Void) {
  final class Box: @unchecked Sendable {
    let body: @Sendable () -> Void
    init(_ body: @escaping @Sendable () -> Void) { self.body = body }
  }
  var handle = pthread_t()
  let box = Unmanaged.passRetained(Box(body)).toOpaque()
  let result = pthread_create(
    &handle, nil,
    { argument in
      let box = Unmanaged<Box>.fromOpaque(argument!).takeRetainedValue()
      box.body()
      return nil
    }, box)
  precondition(result == 0, "pthread_create failed: \(result)")
  pthread_detach(handle)
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
