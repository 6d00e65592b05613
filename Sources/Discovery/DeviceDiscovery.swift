/// Finds serial ports and GPS receivers, and follows them being plugged in and out.
///
/// One instance owns one thread, which owns the libudev context and the hotplug monitor
/// (libudev is not thread-safe). The instance itself is `Sendable`: call it from any task.
/// Everything it returns is a plain value.
///
/// ```swift
/// let discovery = DeviceDiscovery()
/// let receivers = try await discovery.receivers()
/// for try await event in discovery.events() {
///   print(event)
/// }
/// ```
///
/// Dropping the last reference, or calling `shutdown()`, stops the thread and finishes every
/// event stream.
public final class DeviceDiscovery: Sendable {
  let thread: DiscoveryThread

  /// Starts the discovery thread. `source` picks the netlink source for hotplug events;
  /// the default uses udevd's events where udevd runs and the kernel's elsewhere.
  public init(source: HotplugSource = .automatic) {
    thread = DiscoveryThread(source: source)
  }

  deinit {
    thread.stop()
  }

  /// The hotplug source in use (`.udev` or `.kernel`, never `.automatic`).
  public var hotplugSource: HotplugSource { thread.source }

  /// Every serial port backed by hardware (virtual terminals and empty 8250 slots left out),
  /// classified, in natural order of the device node.
  public func serialPorts() async throws(DiscoveryError) -> [SerialDevice] {
    let result = await withCheckedContinuation { continuation in
      thread.submit(.enumerate(continuation))
    }
    return try result.get()
  }

  /// The known and possible receivers, best first: known receivers (catalogue or udev rule)
  /// before generic bridges, then in natural order of the device node.
  public func receivers() async throws(DiscoveryError) -> [SerialDevice] {
    ReceiverSelector.first.candidates(in: try await serialPorts())
  }

  /// The hotplug events from now on, preceded (when `includingPresent`) by `.added` for
  /// every port already present, then `.enumerationComplete`.
  ///
  /// The monitor is enabled before the present ports are enumerated, so nothing plugged in
  /// meanwhile is missed. Ending the iteration (or cancelling its task) unsubscribes; the
  /// monitor socket is closed when the last subscriber goes.
  public func events(includingPresent: Bool = true) -> HotplugEvents {
    let id = thread.makeSubscriberID()
    let (stream, continuation) = AsyncThrowingStream<HotplugEvent, any Error>.makeStream()
    let thread = self.thread
    continuation.onTermination = { _ in
      thread.submit(.unsubscribe(id: id))
    }
    thread.submit(.subscribe(id: id, includePresent: includingPresent, continuation))
    return HotplugEvents(stream: stream)
  }

  /// Stops the thread: event streams finish, pending and later requests fail with
  /// `DiscoveryError.stopped`. Waits for the thread to exit. Idempotent.
  public func shutdown() {
    thread.stop()
  }
}
