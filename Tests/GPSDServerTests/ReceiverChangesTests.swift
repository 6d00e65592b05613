import Glibc
import POSIX
import SerialGPS
import Testing

@testable import GPSDServer

@Suite("receivers shared with others in the process; serving with no listener")
struct ReceiverChangesTests {
  @Test("with no listener the receivers are still served: told to receiverChanges, subscribable")
  func noListener() async throws {
    let memory = MemoryConnector()
    let told = Locked<[ServedReceiver]>([])
    var configuration = testConfiguration()
    configuration.listenAddress = nil
    configuration.receiverChanges = { change in
      if case .added(let served) = change { told.withLock { $0.append(served) } }
    }
    let server = try GPSDServer(
      configuration: configuration,
      devices: .fixed([GPSDServer.ServedDevice(path: "/dev/memory0", connector: memory)]))
    #expect(server.listenAddress == nil)
    let served = try #require(told.withLock { $0.first })
    #expect(served.path == "/dev/memory0")
    #expect(served.device == nil)

    // Another subscriber of the same receiver powers it as a watcher would.
    let events = served.receiver.subscribe()
    #expect(await eventually { memory.opens == 1 })
    memory.latest!.feed(cycle(second: 1) + cycle(second: 2) + cycle(second: 3))
    var iterator = events.makeAsyncIterator()
    var sawFix = false
    while let event = await iterator.next() {
      if case .fix = event {
        sawFix = true
        break
      }
    }
    #expect(sawFix)
    events.cancel()
    #expect(await eventually { !memory.isOpen })
    await server.shutdown()
  }
}
