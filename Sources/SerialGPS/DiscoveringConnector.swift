import Chipsets
import Discovery
import Glibc
import NMEA
import POSIX
import SerialPort
import TimeService

/// Finds the receiver to use with libudev, waits for it when it is absent, and follows it
/// across unplug and replug.
///
/// With ``ReceiverSelector/first`` any receiver will do (known ones first); with a serial
/// number or a `/dev/serial/by-id/…` path only that one. A generic USB-serial bridge (a
/// "possible" receiver) that the user did not name is only listened to: the driver sends it
/// nothing until checksum-valid NMEA was heard on it, and one that stays silent is left alone
/// (and the next receiver tried) until it is plugged in again.
///
/// The first open waits for the devices already present to be listed. A receiver plugged in
/// while the driver waits for one is opened at once, not after the reconnection backoff. An
/// unplug reported by udev ends the open connection even when the kernel reports no hang-up
/// on the port, so subscribers are told `disconnected` and the receiver is powered on again
/// for them when it (or, with `.first`, another receiver) appears.
public final class DiscoveringConnector: ReceiverConnector, @unchecked Sendable {
  private struct State {
    var tracker: ReceiverTracker
    var device: SerialDevice?
    var mayWrite = false
    /// Counts attachments, so a connection knows whether the device attached now is the one
    /// it was opened on.
    var attachment = 0
    /// Ports (sysfs paths) on which valid NMEA was heard since they were plugged in: possible
    /// receivers that proved themselves.
    var heard: Set<String> = []
    var appeared: (@Sendable () -> Void)?
    /// Set once watching starts (the task follows), cleared when it stops.
    var watching = false
    var watcher: Task<Void, Never>?
    var enumerated = false
    var enumerationWaiters: [CheckedContinuation<Void, Never>] = []
    /// Why discovery stopped, if it did (no udev in a container, for example).
    var failure: DiscoveryError?
    /// The connection open now, so that an unplug can end it.
    var connection: FollowedConnection?
    /// The port of a possible receiver being listened to, so that an unplug can end that.
    var listening: (sysPath: String, port: SerialPort)?
    /// An open is under way.
    var connecting = false
    /// A device was attached while an open was under way: if that open fails, the receiver
    /// is told once it has (before, it would ignore the news).
    var attachedWhileConnecting = false
    /// Hotplug events handled so far (for tests that must know one was seen).
    var eventsHandled = 0
    /// Why the device was last lost or could not be opened, and the attachment count then.
    /// While nothing has been attached since, a retry fails the same way, so subscribers are
    /// told once (the receiver repeats no status whose reason is unchanged).
    var lastFailure: (attachment: Int, error: any Error)?
  }

  public let selector: ReceiverSelector
  private let baud: SerialConnector.BaudSetting
  private let state: Locked<State>
  /// Baud rates found by listening, shared by every port this connector opens.
  private let baudMemory = Locked(BaudRateMemory())
  /// Subscribes to hotplug events and feeds them to the connector, on a task of its own.
  private let subscribe: @Sendable (DiscoveringConnector) -> Task<Void, Never>

  /// - Parameters:
  ///   - selector: which receiver to use.
  ///   - discovery: the udev enumeration and hotplug source (shared, if several receivers are
  ///     followed).
  ///   - baud: the rate; with `.automatic` a port that is not the receiver's own USB port
  ///     (`cdc_acm`) is listened to at each candidate rate.
  public convenience init(
    selector: ReceiverSelector, discovery: DeviceDiscovery = DeviceDiscovery(),
    baud: SerialConnector.BaudSetting = .automatic()
  ) {
    self.init(selector: selector, baud: baud, events: { discovery.events(includingPresent: true) })
  }

  /// A connector fed from any sequence of hotplug events (tests replay scripted ones). The
  /// sequence must start with the devices present and `.enumerationComplete`.
  init<Events: AsyncSequence & Sendable>(
    selector: ReceiverSelector, baud: SerialConnector.BaudSetting,
    events: @escaping @Sendable () -> Events
  ) where Events.Element == HotplugEvent {
    self.selector = selector
    self.baud = baud
    state = Locked(State(tracker: ReceiverTracker(selector: selector)))
    subscribe = { connector in connector.watch(events()) }
  }

  /// The device in use now, if one was found.
  public var currentDevice: SerialDevice? { state.withLock { $0.device } }

  /// Whether an open is under way (for tests).
  var isOpening: Bool { state.withLock { $0.connecting } }

  /// Hotplug events handled so far (for tests).
  var eventsHandled: Int { state.withLock { $0.eventsHandled } }

  public var deviceName: String {
    state.withLock { $0.device?.path } ?? selector.description
  }

  public var chipsetHint: ChipsetHint? {
    state.withLock { state in
      guard let device = state.device else { return nil }
      let interface = Self.interface(of: device)
      // A device we may not write to gets no family: it must identify itself first.
      let family =
        state.mayWrite
        ? device.classification.chipset.flatMap { ChipsetFamily(cliName: $0.rawValue) } : nil
      return ChipsetHint(family: family, interface: interface)
    }
  }

  /// A receiver's own USB port (CDC-ACM), or a UART perhaps behind a USB-serial bridge.
  static func interface(of device: SerialDevice) -> HostInterface {
    device.driver == "cdc_acm" ? .usb : .uart
  }

  /// The serial number of the receiver in use; without one, its USB IDs and the USB port it is
  /// plugged into (identical receivers without serial numbers look alike otherwise).
  public var receiverIdentity: String? {
    state.withLock { state in
      guard let device = state.device else { return nil }
      if let serial = device.serialNumber, !serial.isEmpty { return "serial " + serial }
      let ids = device.usb.map { "\($0.id) " } ?? ""
      return ids + Self.portPath(of: device.sysPath)
    }
  }

  /// The sysfs path of the hardware behind a tty: `…/1-4/1-4:1.0` for
  /// `…/1-4/1-4:1.0/ttyUSB0/tty/ttyUSB0`, so that the node name a replug gets does not count.
  static func portPath(of sysPath: String) -> String {
    let components = sysPath.split(separator: "/", omittingEmptySubsequences: false)
    guard let tty = components.firstIndex(where: { $0.hasPrefix("tty") }) else { return sysPath }
    return components[..<tty].joined(separator: "/")
  }

  /// No receiver the selector accepts is attached.
  public struct NoReceiver: Error, CustomStringConvertible {
    public let selector: ReceiverSelector
    public var description: String {
      let listing = "`serialgps list --all` shows the serial ports found"
      switch selector {
      case .first:
        return "no GPS receiver is attached; waiting for one to be plugged in (\(listing))"
      case .serialNumber, .path:
        return "\(selector) is not attached; waiting for it to be plugged in (\(listing))"
      }
    }
  }

  /// The device in use went away (or a udev rule now excludes it).
  public struct DeviceGone: Error, CustomStringConvertible {
    public let device: String
    public let why: String
    public var description: String { "\(device) \(why)" }
  }

  /// A generic USB-serial bridge that the user did not name sent no NMEA: it is left alone
  /// until it is plugged in again.
  public struct NotAReceiver: Error, CustomStringConvertible {
    public let device: SerialDevice
    public let rates: [BaudRate]
    public let timePerRate: Duration
    public var description: String {
      let bridge = device.driver.map { "a generic USB-serial bridge, \($0)" } ?? "a serial port"
      let list = rates.map(\.description).joined(separator: ", ")
      return "\(device.path) (\(bridge)) sent no NMEA at \(list) baud (listened \(timePerRate) "
        + "at each), so it is not taken for a GPS receiver and is left alone until it is "
        + "plugged in again. If it is your receiver, name it (serialgps watch \(device.path)) "
        + "or declare it with a udev rule (SERIALGPS_CHIPSET, docs/discovery.md)."
    }
  }

  public func connect() async throws -> any ReceiverConnection {
    try await connect(wakingWith: .nmea)
  }

  public func connect(wakingWith family: ChipsetFamily) async throws -> any ReceiverConnection {
    // From here on an attachment is this open's business, not news for the receiver.
    state.withLock { $0.connecting = true }
    await waitForEnumeration()
    let (device, mayWrite, attachment, failure, lastFailure) = state.withLock { state in
      state.attachedWhileConnecting = false  // this open takes what is attached now
      // Named by the user, known to be a receiver, or heard speaking NMEA.
      let proven = state.device.map { state.heard.contains($0.sysPath) } ?? false
      let last = state.lastFailure.flatMap { $0.attachment == state.attachment ? $0.error : nil }
      return (state.device, state.mayWrite || proven, state.attachment, state.failure, last)
    }
    do {
      if let failure { throw failure }
      guard let device else {
        // Nothing attached since the last loss: the same news (a retry, or a wake-up for a
        // device an open already tried).
        throw lastFailure ?? NoReceiver(selector: selector)
      }
      let connection = try await open(
        device, mayWrite: mayWrite, attachment: attachment, family: family)
      _ = finishConnecting(failure: nil, attachment: attachment)
      return connection
    } catch {
      // A device attached meanwhile (the next candidate after a rejection, a replug) is
      // tried at once rather than after the backoff.
      finishConnecting(failure: error, attachment: attachment)?()
      throw error
    }
  }

  /// Ends an open; returns the receiver's callback when a device attached during a failed one.
  private func finishConnecting(failure: (any Error)?, attachment: Int) -> (
    @Sendable () -> Void
  )? {
    state.withLock { state in
      defer {
        state.connecting = false
        state.attachedWhileConnecting = false
      }
      state.lastFailure = failure.map { (attachment, $0) }
      guard failure != nil, state.attachedWhileConnecting, state.device != nil else {
        return nil
      }
      return state.appeared
    }
  }

  /// A connection ended with `error` (unplugged, hung up).
  private func lost(_ connection: FollowedConnection, _ error: any Error) {
    state.withLock { $0.lastFailure = (connection.attachment, error) }
  }

  private func open(
    _ device: SerialDevice, mayWrite: Bool, attachment: Int, family: ChipsetFamily
  ) async throws -> any ReceiverConnection {
    // Between the unplug and udev's word of it the node may still be listed; sysfs knows.
    guard access(device.sysPath, F_OK) == 0 else {
      throw DeviceGone(device: device.path, why: unpluggedWaiting)
    }

    let opened: any ReceiverConnection
    if mayWrite {
      // The interface comes from the driver, so the node's path is not resolved (umockdev's
      // realpath() corrupts memory for nodes that are ptys).
      opened = try await SerialConnector(
        path: device.path, baud: effectiveBaud(for: device),
        hint: ChipsetHint(family: nil, interface: Self.interface(of: device)), memory: baudMemory
      ).connect(wakingWith: family)
    } else {
      opened = try await listen(to: device)
    }

    let connection = FollowedConnection(
      opened, device: device, attachment: attachment,
      onLoss: { [weak self] in self?.lost($0, $1) }, onClose: { [weak self] in self?.closed($0) })
    let stillAttached = state.withLock { state -> Bool in
      guard state.attachment == attachment, state.device != nil else { return false }
      state.connection = connection
      return true
    }
    guard stillAttached else {
      opened.close()
      throw DeviceGone(device: device.path, why: "was unplugged while it was being opened")
    }
    return connection
  }

  /// A USB receiver's own port (CDC-ACM) ignores the rate: no search.
  private func effectiveBaud(for device: SerialDevice) -> SerialConnector.BaudSetting {
    guard case .automatic(let candidates, _) = baud, device.driver == "cdc_acm" else {
      return baud
    }
    return .fixed(candidates.first ?? .b9600)
  }

  /// Opens a possible receiver the user did not name and listens, never writing, until
  /// checksum-valid NMEA arrives. Silence rejects it: the tracker moves on to the next
  /// candidate, or waits.
  private func listen(to device: SerialDevice) async throws -> any ReceiverConnection {
    let (candidates, timePerRate): ([BaudRate], Duration)
    switch effectiveBaud(for: device) {
    case .fixed(let rate): (candidates, timePerRate) = ([rate], Autobaud.defaultTimePerRate)
    case .automatic(let rates, let time):
      (candidates, timePerRate) = (rates.isEmpty ? [.b9600] : rates, time)
    }
    let port = try SerialPort.open(path: device.path, baudRate: candidates[0])
    let unplugged = state.withLock { state -> Bool in
      guard state.device?.sysPath == device.sysPath else { return true }
      state.listening = (device.sysPath, port)
      return false
    }
    if unplugged {
      port.close()
      throw DeviceGone(device: device.path, why: "was unplugged while it was being opened")
    }
    let memory = baudMemory
    let found: Result<Autobaud.Detection, SerialPortError> = await onOwnThread {
      var known = memory.withLock { $0 }
      let result = Result { () throws(SerialPortError) in
        try Autobaud.detect(
          on: port, candidates: candidates, timePerRate: timePerRate, memory: &known,
          recognises: { NMEAFramer.holdsChecksummedSentences($0) })
      }
      memory.withLock { $0 = known }
      return result
    }
    state.withLock { $0.listening = nil }
    switch found {
    case .success(let detection):
      _ = state.withLock { $0.heard.insert(device.sysPath) }
      // What it said while being listened to is its first data: handed to the reader.
      return SerialConnection(port: port, heard: detection.heard)
    case .failure(let error):
      port.close()
      if error.isDisconnected || error.reason == .interrupted {
        throw DeviceGone(device: device.path, why: "was unplugged while it was listened to")
      }
      guard case .nothingRecognised(let tried, _) = error.reason else { throw error }
      reject(device)
      throw NotAReceiver(device: device, rates: tried, timePerRate: timePerRate)
    }
  }

  /// Tells the tracker `device` is no receiver; it takes the next candidate, if any (tried
  /// once the open under way has failed).
  private func reject(_ device: SerialDevice) {
    state.withLock { state in
      if apply(state.tracker.reject(device), to: &state).attached {
        state.attachedWhileConnecting = true
      }
    }
  }

  /// What a subscriber is told when the device was unplugged.
  private var unpluggedWaiting: String {
    if case .first = selector { return "was unplugged; waiting for a receiver to be plugged in" }
    return "was unplugged; waiting for it to be plugged in again"
  }

  public func startWatching(appeared: @escaping @Sendable () -> Void) {
    let start = state.withLock { state -> Bool in
      state.appeared = appeared
      defer { state.watching = true }
      return !state.watching
    }
    guard start else { return }
    let watcher = subscribe(self)
    let stopped = state.withLock { state -> Bool in
      guard state.watching else { return true }
      state.watcher = watcher
      return false
    }
    if stopped { watcher.cancel() }
  }

  public func stopWatching() {
    let (watcher, waiters) = state.withLock { state in
      defer {
        state.watching = false
        state.watcher = nil
        state.appeared = nil
        state.enumerationWaiters = []
      }
      return (state.watcher, state.enumerationWaiters)
    }
    watcher?.cancel()
    for waiter in waiters { waiter.resume() }
  }

  private func watch<Events: AsyncSequence & Sendable>(_ events: Events) -> Task<Void, Never>
  where Events.Element == HotplugEvent {
    Task(executorPreference: DriverExecutor.shared) { [weak self] in
      var failure = DiscoveryError.stopped
      do {
        for try await event in events {
          guard let self else { return }
          self.handle(event)
        }
      } catch {
        failure = error as? DiscoveryError ?? .stopped
      }
      if Task.isCancelled { return }
      // Discovery ended (shut down, or no udev here): a waiting receiver retries now and
      // reports why; connecting fails with the reason from now on.
      guard let self else { return }
      let (appeared, waiters) = self.state.withLock { state in
        defer { state.enumerationWaiters = [] }
        state.failure = failure
        state.enumerated = true
        return (state.appeared, state.enumerationWaiters)
      }
      for waiter in waiters { waiter.resume() }
      appeared?()
    }
  }

  private func handle(_ event: HotplugEvent) {
    var ended: (FollowedConnection?, SerialPort?, String) = (nil, nil, "")
    let (appeared, waiters) = state.withLock {
      state -> ((@Sendable () -> Void)?, [CheckedContinuation<Void, Never>]) in
      var waiters: [CheckedContinuation<Void, Never>] = []
      state.eventsHandled += 1
      switch event {
      case .enumerationComplete:
        state.enumerated = true
        waiters = state.enumerationWaiters
        state.enumerationWaiters = []
      case .removed(let device):
        state.heard.remove(device.sysPath)
      case .added, .changed:
        break
      }
      let outcome = apply(state.tracker.handle(event), to: &state)
      if let detached = outcome.detached {
        let why: String
        if case .removed = event {
          why = unpluggedWaiting
        } else {
          why = "no longer matches \(selector) (a udev rule changed it)"
        }
        if state.connection?.device.sysPath == detached.sysPath {
          ended.0 = state.connection
        }
        if state.listening?.sysPath == detached.sysPath { ended.1 = state.listening?.port }
        ended.2 = why
      }
      // An open under way may have chosen its device before this one came: it tells the
      // receiver if it fails. A receiver with a connection open ignores the news; it is told
      // again when that connection closes (`closed`).
      if outcome.attached && state.connecting {
        state.attachedWhileConnecting = true
        return (nil, waiters)
      }
      return (outcome.attached ? state.appeared : nil, waiters)
    }
    ended.0?.end(because: ended.2)
    ended.1?.interrupt()
    for waiter in waiters { waiter.resume() }
    appeared?()
  }

  /// Runs the tracker's actions on the state.
  private func apply(_ actions: [ReceiverTracker.Action], to state: inout State) -> (
    attached: Bool, detached: SerialDevice?
  ) {
    var attached = false
    var detached: SerialDevice?
    for action in actions {
      switch action {
      case .attach(let device, let mayWrite):
        state.device = device
        state.mayWrite = mayWrite
        state.attachment += 1
        attached = true
      case .update(let device, let mayWrite):
        state.device = device
        state.mayWrite = mayWrite
      case .detach(let device):
        state.device = nil
        state.mayWrite = false
        detached = device
      }
    }
    return (attached, detached)
  }

  /// A connection closed. If another device was attached while it was open, the receiver
  /// (which ignored that appearance while it was still connected) is told now: it is about
  /// to wait for its backoff, and should try the new device at once.
  private func closed(_ connection: FollowedConnection) {
    let appeared = state.withLock { state -> (@Sendable () -> Void)? in
      if state.connection === connection { state.connection = nil }
      guard state.device != nil, state.attachment != connection.attachment else { return nil }
      return state.appeared
    }
    appeared?()
  }

  /// The first open waits for the devices already present to be listed.
  private func waitForEnumeration() async {
    // Used on its own, outside a receiver: nobody started watching yet.
    if !state.withLock({ $0.watching }) { startWatching {} }
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
      let ready = state.withLock { state -> Bool in
        if state.enumerated || !state.watching { return true }
        state.enumerationWaiters.append(continuation)
        return false
      }
      if ready { continuation.resume() }
    }
  }
}

/// A connection to a followed device: ends (its reads throw) when udev reports the device
/// gone, whether or not the kernel hung the port up.
final class FollowedConnection: ReceiverConnection {
  let base: any ReceiverConnection
  let device: SerialDevice
  let attachment: Int
  private let ending = Locked<String?>(nil)
  private let onLoss: @Sendable (FollowedConnection, any Error) -> Void
  private let onClose: @Sendable (FollowedConnection) -> Void

  init(
    _ base: any ReceiverConnection, device: SerialDevice, attachment: Int,
    onLoss: @escaping @Sendable (FollowedConnection, any Error) -> Void,
    onClose: @escaping @Sendable (FollowedConnection) -> Void
  ) {
    self.base = base
    self.device = device
    self.attachment = attachment
    self.onLoss = onLoss
    self.onClose = onClose
  }

  func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
    do {
      try checkEnded()
      let count = try base.read(into: buffer)
      if count == 0 { try checkEnded() }
      return count
    } catch {
      onLoss(self, error)
      throw error
    }
  }

  private func checkEnded() throws {
    if let why = ending.withLock({ $0 }) {
      throw DiscoveringConnector.DeviceGone(device: device.path, why: why)
    }
  }

  func write(_ bytes: [UInt8]) throws { try base.write(bytes) }

  func interrupt() { base.interrupt() }

  var lineTiming: LineTiming { base.lineTiming }

  func carrierDetectDescriptor() -> CInt? { base.carrierDetectDescriptor() }

  func close() {
    base.close()
    onClose(self)
  }

  /// The device went away: the reader stops with `why`.
  func end(because why: String) {
    ending.withLock { $0 = $0 ?? why }
    base.interrupt()
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
