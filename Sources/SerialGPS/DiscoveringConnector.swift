import Chipsets
import Discovery

/// Finds the receiver to use with libudev, waits for it when it is absent, and follows it
/// across unplug and replug.
///
/// With ``ReceiverSelector/first`` any receiver will do (known ones first); with a serial
/// number or a `/dev/serial/by-id/…` path only that one. A generic USB-serial bridge (a
/// "possible" receiver) is only listened to unless the user named it: the driver sends it
/// nothing until the receiver identified itself by its own output.
public final class DiscoveringConnector: ReceiverConnector, @unchecked Sendable {
  private struct State {
    var tracker: ReceiverTracker
    var device: SerialDevice?
    var mayWrite = false
    var appeared: (@Sendable () -> Void)?
    var watcher: Task<Void, Never>?
    var enumerated = false
    /// Why discovery stopped, if it did (no udev in a container, for example).
    var failure: DiscoveryError?
  }

  public let selector: ReceiverSelector
  private let discovery: DeviceDiscovery
  private let baud: SerialConnector.BaudSetting
  private let state: Locked<State>

  /// - Parameters:
  ///   - selector: which receiver to use.
  ///   - discovery: the udev enumeration and hotplug source (shared, if several receivers are
  ///     followed).
  public init(
    selector: ReceiverSelector, discovery: DeviceDiscovery = DeviceDiscovery(),
    baud: SerialConnector.BaudSetting = .automatic()
  ) {
    self.selector = selector
    self.discovery = discovery
    self.baud = baud
    state = Locked(State(tracker: ReceiverTracker(selector: selector)))
  }

  /// The device in use now, if one was found.
  public var currentDevice: SerialDevice? { state.withLock { $0.device } }

  public var deviceName: String {
    state.withLock { $0.device?.path } ?? "the \(selector) receiver"
  }

  public var chipsetHint: ChipsetHint? {
    state.withLock { state in
      guard let device = state.device else { return nil }
      let interface: HostInterface = device.driver == "cdc_acm" ? .usb : .uart
      // A device we may not write to gets no family: it must identify itself first.
      let family =
        state.mayWrite
        ? device.classification.chipset.flatMap { ChipsetFamily(cliName: $0.rawValue) } : nil
      return ChipsetHint(family: family, interface: interface)
    }
  }

  /// The device could not be used.
  public struct NoReceiver: Error, CustomStringConvertible {
    public let selector: ReceiverSelector
    public let stillEnumerating: Bool
    public var description: String {
      if stillEnumerating { return "looking for the \(selector) receiver" }
      return "no \(selector) receiver is attached; waiting for one to be plugged in "
        + "(`serialgps list --all` shows the serial ports found)"
    }
  }

  public func connect() async throws -> any ReceiverConnection {
    try await connect(wakingWith: .nmea)
  }

  public func connect(wakingWith family: ChipsetFamily) async throws -> any ReceiverConnection {
    if !state.withLock({ $0.enumerated }) { await waitForEnumeration() }
    let (device, failure) = state.withLock { state in (state.device, state.failure) }
    if let failure { throw failure }
    guard let device else {
      throw NoReceiver(selector: selector, stillEnumerating: false)
    }
    let connector = SerialConnector(path: device.path, baud: baud, hint: chipsetHint)
    return try await connector.connect(wakingWith: family)
  }

  public func startWatching(appeared: @escaping @Sendable () -> Void) {
    let events = discovery.events(includingPresent: true)
    let watcher = Task(executorPreference: DriverExecutor.shared) { [weak self] in
      do {
        for try await event in events {
          guard let self else { return }
          self.handle(event)
        }
      } catch {
        guard let self else { return }
        let appeared = self.state.withLock { state -> (@Sendable () -> Void)? in
          state.failure = error as? DiscoveryError ?? .stopped
          state.enumerated = true
          return state.appeared
        }
        appeared?()  // a waiting receiver retries now, and reports the failure
      }
    }
    state.withLock {
      $0.appeared = appeared
      $0.watcher = watcher
    }
  }

  public func stopWatching() {
    let watcher = state.withLock { state -> Task<Void, Never>? in
      defer {
        state.watcher = nil
        state.appeared = nil
      }
      return state.watcher
    }
    watcher?.cancel()
  }

  private func handle(_ event: HotplugEvent) {
    let appeared: (@Sendable () -> Void)? = state.withLock { state in
      if case .enumerationComplete = event { state.enumerated = true }
      var attachedNow = false
      for action in state.tracker.handle(event) {
        switch action {
        case .attach(let device, let mayWrite), .update(let device, let mayWrite):
          state.device = device
          state.mayWrite = mayWrite
          if case .attach = action { attachedNow = true }
        case .detach:
          state.device = nil
          state.mayWrite = false
        }
      }
      return attachedNow || (state.enumerated && event == .enumerationComplete)
        ? state.appeared : nil
    }
    appeared?()
  }

  /// The first open waits (briefly) for the devices already present to be listed.
  private func waitForEnumeration() async {
    for _ in 0..<200 {
      if state.withLock({ $0.enumerated }) { return }
      try? await DriverExecutor.shared.sleep(until: .now + .milliseconds(10))
    }
  }
}

extension GPSReceiver {
  /// A receiver found with libudev: the first one attached, or the one with a serial number or
  /// by-id path. It waits for the receiver when it is absent and follows it across unplug and
  /// replug, powering it on again for the subscribers still there.
  public convenience init(
    selecting selector: ReceiverSelector, discovery: DeviceDiscovery = DeviceDiscovery(),
    baud: SerialConnector.BaudSetting = .automatic(), options: Options = Options(),
    clock: any DriverClock = SystemClock()
  ) {
    self.init(
      connector: DiscoveringConnector(selector: selector, discovery: discovery, baud: baud),
      options: options, clock: clock)
  }
}
