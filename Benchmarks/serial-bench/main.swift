// serial-bench: what a SerialPort reader costs while idle, and how long a byte takes from the
// receiver's side of a pty to a blocked reader. Prints figures; asserts nothing.
//
//   swift run -c release serial-bench [idle-seconds] [latency-samples]
//
// Idle cost: a reader thread blocks in `read` with no timeout for `idle-seconds`; its context
// switches are read from /proc/self/task/TID/status before and after. Each wake-up of the
// thread counts as a voluntary switch, so 0 means it never woke. For contrast, the same is
// measured for a reader that loops on `read` with a 100 ms timeout.
//
// Latency: the controller writes one byte while the reader sleeps in poll; the reader notes
// the time as `read` returns. Reported as median and percentiles over the samples, for data
// and for `interrupt()`.

import Foundation
import POSIX
import SerialPort

func contextSwitches(tid: Int32) -> (voluntary: Int, involuntary: Int) {
  guard let status = try? String(contentsOfFile: "/proc/self/task/\(tid)/status", encoding: .utf8)
  else { return (-1, -1) }
  func field(_ name: String) -> Int {
    for line in status.split(separator: "\n") where line.hasPrefix(name) {
      return Int(line.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) ?? -1
    }
    return -1
  }
  return (field("voluntary_ctxt_switches"), field("nonvoluntary_ctxt_switches"))
}

/// Runs `body` on a new thread; returns its kernel thread id once it has started and a way to
/// wait for it to finish.
func spawn(_ body: @escaping @Sendable () -> Void) -> (tid: Int32, join: () -> Void) {
  let started = DispatchSemaphore(value: 0)
  let finished = DispatchSemaphore(value: 0)
  nonisolated(unsafe) var tid: Int32 = 0
  let thread = Thread {
    tid = OwnThread.currentKernelID
    started.signal()
    body()
    finished.signal()
  }
  thread.start()
  started.wait()
  return (tid, { finished.wait() })
}

func percentile(_ sorted: [Double], _ p: Double) -> Double {
  sorted[min(sorted.count - 1, Int((Double(sorted.count - 1) * p).rounded()))]
}

func microseconds(_ d: Duration) -> Double {
  Double(d.components.seconds) * 1e6 + Double(d.components.attoseconds) / 1e12
}

let arguments = CommandLine.arguments.dropFirst().compactMap { Int($0) }
let idleSeconds = arguments.first ?? 10
let samples = arguments.dropFirst().first ?? 2000

let pty = try PseudoTerminal()
let port = try SerialPort.open(path: pty.devicePath, baudRate: 9600)

// MARK: Idle cost

func idle(label: String, timeout: Duration?) {
  let reader = spawn {
    var buffer = [UInt8](repeating: 0, count: 64)
    while true {
      let result = try? buffer.withUnsafeMutableBytes { try port.read(into: $0, timeout: timeout) }
      if result != .timedOut { return }
    }
  }
  Thread.sleep(forTimeInterval: 0.2)  // let it settle into poll
  let before = contextSwitches(tid: reader.tid)
  Thread.sleep(forTimeInterval: Double(idleSeconds))
  let after = contextSwitches(tid: reader.tid)
  port.interrupt()
  reader.join()
  print(
    "idle reader, \(label), \(idleSeconds) s: \(after.voluntary - before.voluntary) voluntary, "
      + "\(after.involuntary - before.involuntary) involuntary context switches")
}

idle(label: "no timeout", timeout: nil)
idle(label: "100 ms timeout loop", timeout: .milliseconds(100))

// MARK: Latency

/// `@unchecked Sendable`: its value is behind its mutex and condition, which the compiler cannot
/// see.
final class Mailbox: @unchecked Sendable {
  let ready = DispatchSemaphore(value: 0)
  let delivered = DispatchSemaphore(value: 0)
  var arrival = ContinuousClock.now
  var result: ReadResult? = nil
}

func latency(label: String, trigger: () -> Void) {
  let mailbox = Mailbox()
  var delays: [Double] = []
  delays.reserveCapacity(samples)
  let reader = spawn {
    var buffer = [UInt8](repeating: 0, count: 64)
    for _ in 0..<samples {
      mailbox.ready.signal()
      let result = try? buffer.withUnsafeMutableBytes { try port.read(into: $0, timeout: nil) }
      mailbox.arrival = ContinuousClock.now
      mailbox.result = result
      mailbox.delivered.signal()
    }
  }
  for _ in 0..<samples {
    mailbox.ready.wait()
    // Give the reader time to reach poll, so each sample measures a wake-up from sleep.
    usleep(200)
    let start = ContinuousClock.now
    trigger()
    mailbox.delivered.wait()
    delays.append(microseconds(mailbox.arrival - start))
  }
  reader.join()
  let sorted = delays.sorted()
  print(
    String(
      format: "%@: median %.1f µs, p90 %.1f µs, p99 %.1f µs, max %.1f µs (%d samples)",
      label, percentile(sorted, 0.5), percentile(sorted, 0.9), percentile(sorted, 0.99),
      sorted.last!, sorted.count))
}

latency(label: "pty byte → blocked reader") { try! pty.write([0x24]) }
latency(label: "interrupt() → blocked reader") { port.interrupt() }

port.close()
pty.hangUp()
