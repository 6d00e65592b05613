import Testing

@testable import Discovery

/// The discovery thread on the real system (whatever serial ports this machine has, often
/// none): enumeration, subscriptions coming and going, shutdown and release. The hotplug
/// behaviour itself is tested against umockdev in UmockdevTests.
@Suite("Discovery thread lifecycle", .serialized)
struct LifecycleTests {
  /// Iterates until `.enumerationComplete`; returns the devices reported before it.
  private func present(_ events: HotplugEvents) async throws -> [SerialDevice]? {
    var devices: [SerialDevice] = []
    for try await event in events {
      switch event {
      case .added(let device): devices.append(device)
      case .enumerationComplete: return devices
      case .removed, .changed: continue
      }
    }
    return nil
  }

  @Test("A subscription first reports the ports enumeration finds, then says so")
  func subscriptionStartsWithPresentPorts() async throws {
    let discovery = DeviceDiscovery()
    defer { discovery.shutdown() }
    let ports = try await discovery.serialPorts()
    for port in ports {
      #expect(port.path.hasPrefix("/dev/"))
      #expect(port.sysPath.hasPrefix("/sys/"))
    }
    let reported = try await present(discovery.events())
    #expect(reported.map { Set($0.map(\.sysPath)) } == Set(ports.map(\.sysPath)))
    #expect(discovery.hotplugSource != .automatic)
  }

  @Test("Without includingPresent a subscription starts with enumerationComplete")
  func subscriptionWithoutPresentPorts() async throws {
    let discovery = DeviceDiscovery()
    defer { discovery.shutdown() }
    var iterator = discovery.events(includingPresent: false).makeAsyncIterator()
    #expect(try await iterator.next() == .enumerationComplete)
  }

  @Test("Subscriptions can end and start again; the thread keeps serving")
  func resubscribe() async throws {
    let discovery = DeviceDiscovery()
    defer { discovery.shutdown() }
    for _ in 0..<3 {
      let task = Task { try await present(discovery.events()) }
      #expect(try await task.value != nil)
    }
    // A consumer cancelled while it waits for events ends its iteration.
    let (started, signal) = AsyncStream<Void>.makeStream()
    let waiting = Task {
      var count = 0
      for try await event in discovery.events() {
        count += 1
        if event == .enumerationComplete { signal.yield() }
      }
      return count
    }
    var startedIterator = started.makeAsyncIterator()
    await startedIterator.next()
    waiting.cancel()
    _ = try? await waiting.value
    _ = try await discovery.serialPorts()
  }

  @Test("shutdown() finishes live streams, stops the thread and fails later requests")
  func shutdown() async throws {
    let discovery = DeviceDiscovery()
    let events = discovery.events()
    _ = try await present(events)
    discovery.shutdown()
    #expect(discovery.thread.hasExited)
    var remaining = 0
    for try await _ in events { remaining += 1 }
    #expect(remaining == 0)
    await #expect(throws: DiscoveryError.stopped) { try await discovery.serialPorts() }
    var late = discovery.events().makeAsyncIterator()
    #expect(try await late.next() == nil)
    discovery.shutdown()  // idempotent
  }

  @Test("Releasing the last reference stops the thread")
  func releaseStopsThread() async throws {
    var discovery: DeviceDiscovery? = DeviceDiscovery()
    let thread = discovery!.thread
    _ = try await discovery!.serialPorts()
    #expect(!thread.hasExited)
    discovery = nil
    #expect(thread.hasExited)
  }
}
