import CUdev
import Glibc
import POSIX

/// The one thread that owns the libudev context and the hotplug monitor.
///
/// libudev objects are not thread-safe (and `OpaquePointer` is not `Sendable`), so every
/// libudev call happens here. Other threads hand in requests through a locked queue and wake
/// the thread with an eventfd; the thread sleeps in `poll(2)` on that eventfd and on the
/// monitor socket, with no timeout, so it costs nothing while nothing is plugged in.
/// Results leave as `Sendable` values through continuations, which are resumed with no lock
/// held.
///
/// `@unchecked Sendable`: its queue is behind `lock` and libudev's objects belong to its thread,
/// which the compiler cannot see.
final class DiscoveryThread: @unchecked Sendable {
  enum Request {
    case enumerate(CheckedContinuation<Result<[SerialDevice], DiscoveryError>, Never>)
    case subscribe(
      id: UInt64, includePresent: Bool, AsyncThrowingStream<HotplugEvent, any Error>.Continuation)
    case unsubscribe(id: UInt64)
  }

  let source: HotplugSource

  // Shared between threads, guarded by `lock`.
  private let lock = Lock()
  private var queue: [Request] = []
  private var stopRequested = false
  private var exited = false
  private var nextSubscriberID: UInt64 = 0

  // Set in `init`, before any other thread can see the object; read-only afterwards.
  private let wakeSignal: EventSignal?
  private var thread: OwnThread?
  private var startError: DiscoveryError?

  // Confined to the discovery thread.
  private var udev: OpaquePointer?
  private var udevError: DiscoveryError?
  private var monitor: OpaquePointer?
  private var monitorDescriptor: Int32 = -1
  private var subscribers: [UInt64: AsyncThrowingStream<HotplugEvent, any Error>.Continuation] =
    [:]
  /// The serial ports and GNSS devices the monitor knows to be present, by sysfs path, so that a removal
  /// can be reported with the details sysfs no longer has.
  private var present: [String: SerialDevice] = [:]

  init(source: HotplugSource) {
    self.source = source.resolved
    do {
      wakeSignal = try EventSignal.make()
    } catch {
      wakeSignal = nil
      startError = .threadUnavailable(errno: error.rawValue)
      exited = true
      return
    }
    // Named so that a leak shows in `ps -L` and tests can check the thread is gone.
    let started = OwnThread.start(name: "serialgps-udev") { [self] in run() }
    if let failure = started.startFailure {
      startError = .threadUnavailable(errno: failure.rawValue)
      exited = true
    }
    thread = started
  }

  deinit {
    wakeSignal?.close()
  }

  /// True once the thread has left its loop (or never started). For tests.
  var hasExited: Bool { lock.withLock { exited } }

  /// A fresh subscriber number.
  func makeSubscriberID() -> UInt64 {
    lock.withLock {
      nextSubscriberID += 1
      return nextSubscriberID
    }
  }

  /// Queues `request` and wakes the thread; fails it at once when the thread is stopping.
  func submit(_ request: Request) {
    let accepted = lock.withLock { () -> Bool in
      guard !stopRequested, !exited else { return false }
      queue.append(request)
      return true
    }
    if accepted {
      wake()
    } else {
      fail(request, with: startError ?? .stopped)
    }
  }

  /// Asks the thread to finish its subscribers and exit, and waits for it. Idempotent.
  func stop() {
    let join = lock.withLock { () -> Bool in
      guard startError == nil, !stopRequested else { return false }
      stopRequested = true
      return true
    }
    guard join else { return }
    wake()
    // On the discovery thread itself (a subscriber stopping from its callback) this returns
    // at once; the thread ends after the current request.
    thread?.joinBlocking()
  }

  private func wake() { wakeSignal?.signal() }

  // MARK: - On the discovery thread

  private func run() {
    guard let wakeSignal else { return }
    udev = udev_new()
    if udev == nil { udevError = .udevUnavailable(errno: errno) }

    var stopping = false
    while !stopping {
      var descriptors = [wakeSignal.pollDescriptor]
      if monitorDescriptor >= 0 {
        descriptors.append(pollfd(fd: monitorDescriptor, events: Int16(POLLIN), revents: 0))
      }
      do {
        _ = try poll(&descriptors, until: nil)
      } catch {
        // poll only fails on bad arguments or ENOMEM; back off instead of spinning.
        sleepThread(for: .milliseconds(100))
        continue
      }
      if descriptors.count > 1, descriptors[1].revents != 0 {
        receiveMonitorEvents()
      }
      if descriptors[0].revents != 0 { wakeSignal.consume() }
      let (requests, stop) = lock.withLock { () -> ([Request], Bool) in
        let taken = queue
        queue.removeAll()
        return (taken, stopRequested)
      }
      for request in requests { serve(request) }
      stopping = stop
    }

    let leftovers = lock.withLock { () -> [Request] in
      exited = true
      let taken = queue
      queue.removeAll()
      return taken
    }
    for request in leftovers { fail(request, with: .stopped) }
    for continuation in subscribers.values { continuation.finish() }
    subscribers.removeAll()
    closeMonitor()
    if let udev { udev_unref(udev) }
    udev = nil
  }

  private func serve(_ request: Request) {
    switch request {
    case .enumerate(let continuation):
      guard let udev else {
        continuation.resume(returning: .failure(udevError ?? .stopped))
        return
      }
      errno = 0
      if let devices = DeviceReader.enumerate(udev) {
        continuation.resume(returning: .success(devices))
      } else {
        continuation.resume(returning: .failure(.enumerationFailed(errno: errno)))
      }

    case .subscribe(let id, let includePresent, let continuation):
      if monitor == nil, let error = openMonitor() {
        continuation.finish(throwing: error)
        return
      }
      subscribers[id] = continuation
      if includePresent {
        for device in present.values.sorted(by: { NaturalOrder.less($0.path, $1.path) }) {
          continuation.yield(.added(device))
        }
      }
      continuation.yield(.enumerationComplete)

    case .unsubscribe(let id):
      subscribers[id] = nil
      // Nobody listens: give the socket back rather than keep buffering events.
      if subscribers.isEmpty { closeMonitor() }
    }
  }

  private func fail(_ request: Request, with error: DiscoveryError) {
    switch request {
    case .enumerate(let continuation): continuation.resume(returning: .failure(error))
    case .subscribe(_, _, let continuation):
      if error == .stopped {
        continuation.finish()
      } else {
        continuation.finish(throwing: error)
      }
    case .unsubscribe: break
    }
  }

  /// Creates the monitor, starts receiving, and only then enumerates, so that a device
  /// plugged in between the two is seen at least once (and `present` removes the duplicate).
  private func openMonitor() -> DiscoveryError? {
    guard let udev else { return udevError ?? .stopped }
    errno = 0
    guard let created = udev_monitor_new_from_netlink(udev, source == .kernel ? "kernel" : "udev")
    else { return .monitorUnavailable(source: source, errno: errno) }
    for subsystem in DeviceReader.subsystems {
      udev_monitor_filter_add_match_subsystem_devtype(created, subsystem, nil)
    }
    let enabled = udev_monitor_enable_receiving(created)
    guard enabled >= 0 else {
      udev_monitor_unref(created)
      return .monitorUnavailable(source: source, errno: -enabled)
    }
    monitor = created
    monitorDescriptor = udev_monitor_get_fd(created)
    present.removeAll()
    for device in DeviceReader.enumerate(udev) ?? [] {
      present[device.sysPath] = device
    }
    return nil
  }

  private func closeMonitor() {
    if let monitor { udev_monitor_unref(monitor) }
    monitor = nil
    monitorDescriptor = -1
    present.removeAll()
  }

  private func receiveMonitorEvents() {
    guard let monitor, let udev else { return }
    // The socket is non-blocking: take everything queued, then go back to poll.
    while true {
      errno = 0
      guard let device = udev_monitor_receive_device(monitor) else {
        // The socket buffer overflowed and events were dropped: compare with sysfs so that
        // no plug or unplug goes unreported.
        if errno == ENOBUFS { resynchronize(udev) }
        return
      }
      let action = DeviceReader.string(udev_device_get_action(device)) ?? ""
      let sysPath = DeviceReader.string(udev_device_get_syspath(device))
      let oldPath = DeviceReader.property(device, "DEVPATH_OLD").map { "/sys" + $0 }
      udev_device_unref(device)
      guard let sysPath else { continue }

      var events: [HotplugEvent] = []
      switch action {
      case "remove":
        if let gone = present.removeValue(forKey: sysPath) { events.append(.removed(gone)) }
      case "add", "change", "move", "bind", "online":
        if action == "move", let oldPath, let gone = present.removeValue(forKey: oldPath) {
          events.append(.removed(gone))
        }
        // Re-read from sysfs: an event from the kernel, or one synthesised by umockdev,
        // carries only a few properties, and the database udevd wrote is in place by now.
        guard let fresh = udev_device_new_from_syspath(udev, sysPath) else { continue }
        let serial = DeviceReader.serialDevice(fresh)
        udev_device_unref(fresh)
        guard let serial else { continue }
        events += record(serial)
      default:
        continue
      }
      publish(events)
    }
  }

  /// Notes `device` as present; the event that tells subscribers, if anything changed.
  private func record(_ device: SerialDevice) -> [HotplugEvent] {
    let previous = present.updateValue(device, forKey: device.sysPath)
    guard let previous else { return [.added(device)] }
    return previous == device ? [] : [.changed(device)]
  }

  /// Brings `present` in line with a fresh enumeration, reporting the differences.
  private func resynchronize(_ udev: OpaquePointer) {
    guard let devices = DeviceReader.enumerate(udev) else { return }
    let current = Set(devices.map(\.sysPath))
    var events: [HotplugEvent] = []
    for (sysPath, device) in present where !current.contains(sysPath) {
      present[sysPath] = nil
      events.append(.removed(device))
    }
    for device in devices { events += record(device) }
    publish(events)
  }

  private func publish(_ events: [HotplugEvent]) {
    for event in events {
      for continuation in subscribers.values { continuation.yield(event) }
    }
  }
}
