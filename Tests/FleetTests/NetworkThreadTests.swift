import Dispatch
import Testing

@testable import Fleet

/// A client that only records, on the network thread, when its held writes are released.
private final class RecordingClient: NetworkClient, @unchecked Sendable {
  var log: [String] = []
  var interest: (socket: Int32?, write: Bool, deadline: Duration?) { (nil, false, nil) }
  func serviceSocket(readable: Bool, writable: Bool, failed: Bool, now: Duration) {}
  func serviceDeadline(now: Duration) {}
  func releaseWrites() { log.append("release") }
}

@Suite("the network thread's held writes")
struct NetworkThreadTests {
  @Test("writes held in a job are released when that job ends, before the next job of the batch")
  func releasedPerJob() async {
    let thread = NetworkThread.shared
    let client = RecordingClient()
    let log = Outcome<[String]>()
    let gate = DispatchSemaphore(value: 0)
    // Held up in a first job, the thread takes the next three in one batch.
    thread.post { gate.wait() }
    thread.post {
      thread.add(client)
      thread.holdWrites(of: client)
      client.log.append("job 1")
    }
    thread.post {
      client.log.append("job 2")
      thread.holdWrites(of: client)
      thread.holdWrites(of: client)  // held twice, released once
    }
    thread.post {
      client.log.append("job 3")
      thread.remove(client)
      log.settle(client.log)
    }
    gate.signal()
    #expect(await log.value() == ["job 1", "release", "job 2", "release", "job 3"])
  }

  @Test("a client removed while holding is not called")
  func removedWhileHolding() async {
    let thread = NetworkThread.shared
    let client = RecordingClient()
    let log = Outcome<[String]>()
    thread.post {
      thread.add(client)
      thread.holdWrites(of: client)
      thread.remove(client)
    }
    thread.post { log.settle(client.log) }
    #expect(await log.value() == [])
  }
}
