import Foundation
import Glibc
import POSIX
import SerialPort
import Testing

/// Runs `body` `rounds` times while another thread keeps opening, using and closing pipes,
/// most likely under the numbers `body` just gave back, and expects that none of that
/// thread's descriptors vanished under it (a double close in `body` closes someone else's
/// file; debug builds stop at ``OwnedDescriptor``'s assertion first) and that `body` left
/// no descriptor open (leaked: far more descriptors open after than before, whatever other
/// tests running at the same time hold).
func expectEachDescriptorClosedOnce(
  rounds: Int = 5000, sourceLocation: SourceLocation = #_sourceLocation, _ body: () -> Void
) {
  let stopped = Locked(false)
  let lost = Locked<[Errno]>([])
  let neighbourRounds = Locked(0)
  let before = openDescriptorCount()
  let neighbour = OwnThread.start(name: "test-pipes") {
    while !stopped.withLock({ $0 }) {
      guard let (readEnd, writeEnd) = try? FileDescriptor.pipe() else { continue }
      var byte: UInt8 = 0x2A
      do throws(Errno) {
        _ = try withUnsafeBytes(of: &byte) { raw throws(Errno) in try writeEnd.write(raw) }
        _ = try withUnsafeMutableBytes(of: &byte) { raw throws(Errno) in
          try readEnd.read(into: raw)
        }
        try writeEnd.close()
        try readEnd.close()
      } catch {
        // A descriptor of ours was closed by someone else: stop before closing anything
        // more, which could be another test's.
        lost.withLock { $0.append(error) }
        stopped.withLock { $0 = true }
      }
      neighbourRounds.withLock { $0 += 1 }
    }
  }
  // Under way before the first round, so that every round has a neighbour to hurt.
  let started = ContinuousClock.now
  while neighbourRounds.withLock({ $0 }) == 0, ContinuousClock.now - started < .seconds(10) {
    sched_yield()
  }
  for _ in 0..<rounds where !stopped.withLock({ $0 }) { body() }
  stopped.withLock { $0 = true }
  neighbour.joinBlocking()
  let leaked = openDescriptorCount() - before
  #expect(neighbourRounds.withLock { $0 } > 0, sourceLocation: sourceLocation)
  #expect(
    lost.withLock { $0 } == [], "descriptors closed under another thread",
    sourceLocation: sourceLocation)
  #expect(
    leaked < rounds / 5, "\(leaked) more descriptors open after \(rounds) rounds",
    sourceLocation: sourceLocation)
}

/// How many descriptors the process has open (by `/proc/self/fd`).
private func openDescriptorCount() -> Int {
  (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd"))?.count ?? 0
}
