import Testing

@testable import GPSDServer

/// What a client's queue costs: a report broadcast to many stalled watchers must not be
/// copied into each of their queues, or stalled watchers would cost the process their backlog
/// limit each.
@Suite struct OutputQueueTests {
  /// The address of a slice's first byte.
  private func address(_ bytes: ArraySlice<UInt8>) -> UnsafeRawPointer? {
    bytes.withUnsafeBytes { $0.baseAddress }
  }

  @Test func queuedReportsAreSharedNotCopied() {
    let report = [UInt8](repeating: UInt8(ascii: "x"), count: 4096)
    var queues = Array(repeating: OutputQueue(), count: 3)
    for index in queues.indices {
      queues[index].append([0x41, 0x42][...])
      queues[index].append(report[...])
    }
    for var queue in queues {
      // Written up to the report, which then waits as the same bytes, not a copy of them.
      #expect(queue.drain { $0.count == 2 ? 2 : 0 } == 2)
      #expect(queue.count == report.count)
      let first = queue.withFirstChunk { $0.baseAddress }
      #expect(first == address(report[...]))
    }
  }

  @Test func drainWritesInOrderAndKeepsWhatWasNotTaken() {
    var queue = OutputQueue()
    queue.append(Array("first,".utf8)[...])
    queue.append(Array("second,".utf8)[...])
    queue.append(Array("third".utf8)[...])
    #expect(queue.count == 18)
    var written: [UInt8] = []
    // Takes at most 4 bytes a call, as a socket with little room would.
    func take(_ bytes: UnsafeRawBufferPointer) -> Int? {
      let count = min(4, bytes.count)
      written += bytes.prefix(count)
      return count
    }
    #expect(queue.drain(take) == 4)
    #expect(queue.count == 14)
    #expect(String(decoding: written, as: UTF8.self) == "firs")
    while !queue.isEmpty { _ = queue.drain(take) }
    #expect(String(decoding: written, as: UTF8.self) == "first,second,third")
    // Usable again after it emptied.
    queue.append(Array("again".utf8)[...])
    #expect(queue.drain { $0.count } == 5)
    #expect(queue.isEmpty)
  }

  @Test func aPeerThatIsGoneIsReported() {
    var queue = OutputQueue()
    queue.append(Array("report".utf8)[...])
    #expect(queue.drain { _ in nil } == nil)
  }

  /// A long-lived slow client: what is written is let go, whatever the number of reports.
  @Test func manyReportsThroughASlowWriterKeepTheCountExact() {
    var queue = OutputQueue()
    var expected = 0
    var drained = 0
    for round in 0..<10_000 {
      let report = [UInt8](repeating: UInt8(truncatingIfNeeded: round), count: 1 + round % 97)
      queue.append(report[...])
      expected += report.count
      drained += queue.drain { min($0.count, 50) } ?? 0
      #expect(queue.count == expected - drained)
    }
    while !queue.isEmpty { drained += queue.drain { $0.count } ?? 0 }
    #expect(drained == expected)
  }
}
