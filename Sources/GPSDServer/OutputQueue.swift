/// Bytes waiting to be written to one client: the reports themselves, not a copy of them.
/// A report broadcast to many watchers is one array that all their queues share, so a client
/// that stops reading holds a list of references to reports (most of them shared with the
/// other clients' queues), and what it costs the process stays within what ``count``, the
/// figure the backlog limit checks, says.
struct OutputQueue {
  private var chunks: [ArraySlice<UInt8>] = []
  /// The first chunk not yet written; those before it are empty.
  private var head = 0

  /// Bytes waiting.
  private(set) var count = 0
  var isEmpty: Bool { count == 0 }

  mutating func append(_ more: ArraySlice<UInt8>) {
    guard !more.isEmpty else { return }
    if head > 0 && head * 2 >= chunks.count {
      chunks.removeFirst(head)
      head = 0
    }
    chunks.append(more)
    count += more.count
  }

  /// Hands the waiting bytes to `write` in order, chunk by chunk, until it takes less than it
  /// was given; `write` returns how many bytes it took, or `nil` when the peer is gone (then
  /// so does this).
  mutating func drain(_ write: (UnsafeRawBufferPointer) -> Int?) -> Int? {
    var total = 0
    while head < chunks.count {
      guard let written = chunks[head].withUnsafeBytes(write) else { return nil }
      total += written
      count -= written
      guard written == chunks[head].count else {
        chunks[head] = chunks[head].dropFirst(written)
        return total
      }
      // Released as soon as it is written: the report may be large and shared.
      chunks[head] = []
      head += 1
    }
    chunks.removeAll(keepingCapacity: chunks.capacity <= 256)
    head = 0
    return total
  }

  /// Calls `body` with the first waiting chunk, for tests; `nil` when nothing waits.
  func withFirstChunk<Result>(_ body: (UnsafeRawBufferPointer) -> Result) -> Result? {
    guard head < chunks.count else { return nil }
    return chunks[head].withUnsafeBytes(body)
  }
}
