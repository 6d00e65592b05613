import CSerialShims
import Foundation
import Glibc
import POSIX
import SerialPort

// Every serial call blocks its thread. Swift Testing runs tests on the cooperative pool (two
// threads on a two-core CI machine), so blocking work runs on threads of its own and the test
// awaits it: a test waiting on a pty never starves the other suites.

/// Runs `body` on a new thread and returns what it returned (or throws what it threw).
func onOwnThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
  try await withCheckedThrowingContinuation { continuation in
    let thread = Thread {
      continuation.resume(with: Result { try body() })
    }
    thread.stackSize = 1 << 20
    thread.start()
  }
}

/// A thread running `body` whose result can be awaited later, with its kernel thread id so a
/// test can see when it is asleep in `poll`.
final class Background<T: Sendable>: @unchecked Sendable {
  private let condition = NSCondition()
  private var result: Result<T, any Error>? = nil
  private var finished: ContinuousClock.Instant?
  private var threadID: Int32 = 0

  init(_ body: @escaping @Sendable () throws -> T) {
    let thread = Thread { [self] in
      condition.lock()
      threadID = OwnThread.currentKernelID
      condition.broadcast()
      condition.unlock()
      let outcome = Result { try body() }
      let end = ContinuousClock.now
      condition.lock()
      result = outcome
      finished = end
      condition.broadcast()
      condition.unlock()
    }
    thread.stackSize = 1 << 20
    thread.start()
  }

  /// The thread's kernel id, once it has started.
  var tid: Int32 {
    condition.lock()
    defer { condition.unlock() }
    while threadID == 0 { condition.wait() }
    return threadID
  }

  /// When `body` returned, read on its own thread: how long a wake-up took, free of the time
  /// the awaiting test then waits for the cooperative pool (seconds on a loaded machine).
  var finishedAt: ContinuousClock.Instant? {
    condition.lock()
    defer { condition.unlock() }
    return finished
  }

  /// Waits (on a thread of its own, not the cooperative pool) for the result; nil if it did
  /// not come within `limit`.
  func result(within limit: Duration) async -> Result<T, any Error>? {
    let seconds = Double(limit.components.seconds) + Double(limit.components.attoseconds) / 1e18
    return try? await onOwnThread { [self] in
      condition.lock()
      defer { condition.unlock() }
      let end = Date(timeIntervalSinceNow: seconds)
      while result == nil {
        if !condition.wait(until: end) { break }
      }
      return result
    }
  }
}

/// Waits on the calling thread until thread `tid` of this process sleeps in poll, as read from
/// /proc, so that a test acts the moment the reader sleeps, without waiting for the
/// cooperative pool in between. Returns false if that was not seen within `limit` (or /proc
/// does not say), after which the test goes on anyway: the behaviour under test must hold
/// either way, only the path through it differs.
func waitUntilAsleepInPollBlocking(tid: Int32, limit: Duration = .seconds(10)) -> Bool {
  #if arch(x86_64)
    let pollSyscalls: Set<Int> = [7, 271]  // poll, ppoll
  #elseif arch(arm64)
    let pollSyscalls: Set<Int> = [73]  // ppoll
  #else
    let pollSyscalls: Set<Int> = []
  #endif
  let end = ContinuousClock.now.advanced(by: limit)
  while ContinuousClock.now < end {
    if let syscall = try? String(
      contentsOfFile: "/proc/self/task/\(tid)/syscall", encoding: .utf8),
      let number = Int(syscall.split(separator: " ").first ?? ""),
      pollSyscalls.contains(number),
      let stat = try? String(contentsOfFile: "/proc/self/task/\(tid)/stat", encoding: .utf8),
      let state = stat.split(separator: ")").last?.split(separator: " ").first,
      state == "S"
    {
      return true
    }
    sleepThread(for: .milliseconds(5))
  }
  return false
}

extension SerialPort {
  /// Reads until `count` bytes have arrived, or throws.
  func readExactly(_ count: Int, timeout: Duration = .seconds(30)) throws -> [UInt8] {
    var bytes: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65536)
    let deadline = ContinuousClock.now.advanced(by: timeout)
    while bytes.count < count {
      let result = try buffer.withUnsafeMutableBytes {
        try read(
          into: UnsafeMutableRawBufferPointer(rebasing: $0[..<min($0.count, count - bytes.count)]),
          deadline: deadline)
      }
      switch result {
      case .received(let n): bytes += buffer[..<n]
      case .timedOut, .interrupted:
        throw TestFailure("read \(bytes.count) of \(count) bytes: \(result)")
      }
    }
    return bytes
  }

  func readOnce(timeout: Duration?) throws(SerialPortError) -> ReadResult {
    var buffer = [UInt8](repeating: 0, count: 256)
    return try buffer.withUnsafeMutableBytes { buffer in
      Result { () throws(SerialPortError) in try read(into: buffer, timeout: timeout) }
    }.get()
  }
}

extension PseudoTerminal {
  /// Reads until `count` bytes have arrived from the port, or throws.
  func readExactly(_ count: Int, timeout: Duration = .seconds(30)) throws -> [UInt8] {
    var bytes: [UInt8] = []
    let deadline = ContinuousClock.now.advanced(by: timeout)
    while bytes.count < count {
      let chunk = try read(
        upTo: min(65536, count - bytes.count), timeout: ContinuousClock.now.duration(to: deadline))
      if chunk.isEmpty { throw TestFailure("read \(bytes.count) of \(count) bytes, then nothing") }
      bytes += chunk
    }
    return bytes
  }
}

struct TestFailure: Error, CustomStringConvertible {
  let description: String
  init(_ description: String) { self.description = description }
}

/// Bytes that are not all alike, so that a lost or reordered chunk shows. Written through a
/// buffer pointer: a closure capturing the state costs seconds a megabyte under
/// ThreadSanitizer, on the cooperative pool the other tests wait for.
func pattern(_ count: Int) -> [UInt8] {
  [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
    var state: UInt32 = 0x9E37_79B9
    for index in 0..<count {
      state ^= state << 13
      state ^= state >> 17
      state ^= state << 5
      buffer[index] = UInt8(truncatingIfNeeded: state)
    }
    initialized = count
  }
}

/// Whether `bytes` hold an NMEA sentence with a valid checksum: what a caller of `Autobaud`
/// would check with the NMEA module, which this test target does not import.
func containsChecksumValidSentence(_ bytes: [UInt8]) -> Bool {
  var index = 0
  while let start = bytes[index...].firstIndex(of: UInt8(ascii: "$")) {
    index = start + 1
    var checksum: UInt8 = 0
    var position = start + 1
    while position < bytes.count, bytes[position] != UInt8(ascii: "*"),
      bytes[position] >= 0x20, bytes[position] < 0x7F, bytes[position] != UInt8(ascii: "$")
    {
      checksum ^= bytes[position]
      position += 1
    }
    guard position + 4 < bytes.count, bytes[position] == UInt8(ascii: "*") else { continue }
    let hex = String(decoding: bytes[(position + 1)...(position + 2)], as: UTF8.self)
    if UInt8(hex, radix: 16) == checksum, bytes[position + 3] == 0x0D, bytes[position + 4] == 0x0A {
      return true
    }
  }
  return false
}

/// A checksum-valid sentence.
let validSentence = Array(
  "$GPGGA,123519,4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,*47\r\n".utf8)

/// Runs `body` with CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH and CAP_SYS_ADMIN dropped from this
/// thread's effective set, so that root sees what an unprivileged user sees. Synchronous on
/// purpose: the thread cannot change in the middle.
func withoutPrivilegeOverrides<T>(_ body: () throws -> T) throws -> T {
  guard cserial_thread_set_privilege_overrides(0) == 0 else {
    throw TestFailure("capset failed: \(Errno.current)")
  }
  defer { _ = cserial_thread_set_privilege_overrides(1) }
  return try body()
}

/// Polls `condition` on the calling thread every 10 ms until it holds or `limit` passes; for a
/// state that another process of the test run can hold for a moment, as a child spawned between
/// fork and exec holds every descriptor of this process.
func becomesTrue(within limit: Duration, _ condition: () -> Bool) -> Bool {
  let end = ContinuousClock.now.advanced(by: limit)
  while ContinuousClock.now < end {
    if condition() { return true }
    usleep(10_000)
  }
  return condition()
}
