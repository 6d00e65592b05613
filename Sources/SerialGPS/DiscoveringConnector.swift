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
///
/// A receiver another process owns (``SerialPort/open(path:baudRate:exclusive:lockDirectory:)``:
/// its `flock` or lock file) is waited for, not fought over: the open fails with
/// ``DeviceInUse``, which names the owner, and until the owner lets the device go the
/// connector does not open it again; it looks at the lock (without opening the device) every
/// ``ownerPollInterval`` and, once the device is free, tells the receiver, which takes it at
/// once rather than after its backoff.
public final class DiscoveringConnector: ReceiverConnector, Sendable {
  typealias Following = FollowingState<FollowedConnection, SerialPort>

  /// Whether hotplug events are being followed.
  private enum Watching {
    case no
    /// Asked to; the task that follows them is being made.
    case starting(appeared: @Sendable () -> Void)
    case yes(appeared: @Sendable () -> Void, task: Task<Void, Never>)

    var appeared: (@Sendable () -> Void)? {
      switch self {
      case .no: return nil
      case .starting(let appeared), .yes(let appeared, _): return appeared
      }
    }
  }

  private struct State {
    var following: Following
    var watching = Watching.no
    /// Opens waiting for the devices present to be listed.
    var enumerationWaiters: [CheckedContinuation<Void, Never>] = []
    /// The task waiting for another process to let the device go.
    var ownerWatch: Task<Void, Never>?
  }

  public let selector: ReceiverSelector
  private let baud: SerialConnector.BaudSetting
  private let state: Locked<State>
  /// Baud rates found by listening, shared by every port this connector opens.
  private let baudMemory = Locked(BaudRateMemory())
  /// The baud search under way, which ``interruptConnect()`` ends.
  private let searching = SearchInterruption()
  /// Subscribes to hotplug events and feeds them to the connector, on a task of its own.
  private let subscribe: @Sendable (DiscoveringConnector) -> Task<Void, Never>
  /// How often a device another process owns is looked at (its lock, never the device) to
  /// see whether it is free.
  public let ownerPollInterval: Duration

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

  /// A connector fed from any sequence of hotplug events (tests replay scripted ones; the
  /// gpsd server feeds each receiver it found its device's). The sequence must start with the
  /// devices present and `.enumerationComplete`.
  package init<Events: AsyncSequence & Sendable>(
    selector: ReceiverSelector, baud: SerialConnector.BaudSetting,
    ownerPollInterval: Duration = .seconds(1), events: @escaping @Sendable () -> Events
  ) where Events.Element == HotplugEvent {
    self.selector = selector
    self.baud = baud
    self.ownerPollInterval = ownerPollInterval
    state = Locked(State(following: Following(selector: selector)))
    subscribe = { connector in connector.watch(events()) }
  }

  /// The device in use now, if one was found.
  public var currentDevice: SerialDevice? { state.withLock { $0.following.attached?.device } }

  /// Whether an open is under way (for tests).
  var isOpening: Bool { state.withLock { $0.following.isOpening } }

  /// Ends a baud search under way (the listening to a possible receiver, or the search for a
  /// known one's rate) at once, and refuses later ones: the receiver shuts down.
  public func interruptConnect() { searching.interrupt() }

  /// Hotplug events handled so far (for tests).
  var eventsHandled: Int { state.withLock { $0.following.eventsHandled } }

  /// Steps of its own that came when its state did not expect them: a bug, ignored and
  /// counted (a debug build asserts).
  var unexpectedEvents: Int { state.withLock { $0.following.unexpectedEvents } }

  public var deviceName: String {
    state.withLock { $0.following.attached?.device.path } ?? selector.description
  }

  public var chipsetHint: ChipsetHint? {
    state.withLock { state in
      guard let attached = state.following.attached else { return nil }
      let device = attached.device
      let interface = HostInterface(device)
      // A device we may not write to gets no family: it must identify itself first.
      let family = attached.mayWrite ? device.classification.chipset : nil
      return ChipsetHint(family: family, interface: interface)
    }
  }

  /// The serial number of the receiver in use; without one, its USB IDs and the USB port it is
  /// plugged into (identical receivers without serial numbers look alike otherwise).
  public var receiverIdentity: String? {
    state.withLock { state in
      guard let device = state.following.attached?.device else { return nil }
      if let serial = device.serialNumber, !serial.isEmpty { return "serial " + serial }
      let ids = device.usb.map { "\($0.id) " } ?? ""
      return ids + Self.portPath(of: device.sysPath)
    }
  }

  /// The process that owns the device in use now (its lock file or `flock`), if any.
  public var deviceOwner: DeviceOwner? {
    state.withLock { $0.following.attached?.device.path }.flatMap { SerialPort.owner(of: $0) }
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

  /// Another process owns the device (the port's refusal names it): the connector waits for it
  /// to be free and then takes it.
  public struct DeviceInUse: Error, CustomStringConvertible {
    /// The port's refusal, ``SerialPort/SerialPortError/Reason/inUse(by:)``.
    public let refusal: SerialPortError
    public let owner: DeviceOwner
    public var description: String {
      "\(refusal) Waiting for it to be free; it is taken as soon as it is."
    }
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
    state.withLock { $0.following.openRequested() }
    await waitForEnumeration()
    let (device, mayWrite, attachment): (SerialDevice, Bool, Int)
    switch state.withLock({ $0.following.beginOpen() }) {
    case .fail(let error): throw error
    case .open(let chosen, let writable, let number):
      (device, mayWrite, attachment) = (chosen, writable, number)
    }
    do {
      return try await open(device, mayWrite: mayWrite, attachment: attachment, family: family)
    } catch let error as SerialPortError {
      guard case .inUse(let owner) = error.reason else {
        run(state.withLock { $0.following.openFailed(error, attachment: attachment) })
        throw error
      }
      let inUse = DeviceInUse(refusal: error, owner: owner)
      run(state.withLock { $0.following.ownedElsewhere(inUse, attachment: attachment) })
      throw inUse
    } catch {
      run(state.withLock { $0.following.openFailed(error, attachment: attachment) })
      throw error
    }
  }

  private func open(
    _ device: SerialDevice, mayWrite: Bool, attachment: Int, family: ChipsetFamily
  ) async throws -> any ReceiverConnection {
    // Between the unplug and udev's word of it the node may still be listed; sysfs knows.
    guard access(device.sysPath, F_OK) == 0 else {
      throw DeviceGone(device: device.path, why: state.withLock { $0.following.unpluggedWaiting })
    }

    let interface = HostInterface(device)
    let opened: any ReceiverConnection
    if mayWrite {
      opened = try await SerialConnector(
        path: device.path, baud: baud, hint: ChipsetHint(family: nil, interface: interface),
        memory: baudMemory, searching: searching
      ).connect(wakingWith: family)
    } else {
      opened = try await listen(to: device, interface: interface)
    }

    let connection = FollowedConnection(
      opened, device: device, attachment: attachment,
      onLoss: { [weak self] connection, error in
        self?.state.withLock {
          $0.following.lost(connection, attachment: connection.attachment, error)
        }
      },
      onClose: { [weak self] connection in
        guard let self else { return }
        self.run(
          self.state.withLock {
            $0.following.closed(connection, attachment: connection.attachment)
          })
      })
    let stillAttached = state.withLock {
      $0.following.opened(connection, on: device, attachment: attachment)
    }
    guard stillAttached else {
      opened.close()
      throw DeviceGone(device: device.path, why: "was unplugged while it was being opened")
    }
    return connection
  }

  /// Opens a possible receiver the user did not name and listens, never writing, until
  /// checksum-valid NMEA arrives. Silence rejects it: the tracker moves on to the next
  /// candidate, or waits.
  private func listen(
    to device: SerialDevice, interface: HostInterface
  ) async throws -> any ReceiverConnection {
    // Hearing NMEA is the proof it is a receiver, so even a fixed rate, or a port whose rate
    // does not matter, is listened to (at that one rate).
    let timePerRate: Duration
    var candidates: [BaudRate]
    switch baud {
    case .fixed(let rate): (candidates, timePerRate) = ([rate], Autobaud.defaultTimePerRate)
    case .automatic(let rates, let time): (candidates, timePerRate) = (rates, time)
    }
    if candidates.isEmpty { candidates = [.b9600] }
    if interface == .usb { candidates = [candidates[0]] }
    let opened: SerialConnector.OpenedPort
    var heardNMEA = false
    do {
      defer {
        state.withLock { $0.following.listeningEnded(at: device.sysPath, heardNMEA: heardNMEA) }
      }
      let searching = searching
      defer { searching.end() }
      opened = try await SerialConnector.openPort(
        path: device.path, baud: .automatic(candidates: candidates, timePerRate: timePerRate),
        memory: baudMemory, ratelessPort: false,
        opened: { [weak self] port, _ in
          // Kept where an unplug finds it, to end the listening.
          let attached = self?.state.withLock {
            $0.following.listening(to: device.sysPath, on: port)
          }
          if attached != true {
            throw DeviceGone(device: device.path, why: "was unplugged while it was being opened")
          }
          // And where a shutdown finds it.
          try searching.begin(port)
        })
      heardNMEA = opened.unrecognisedRates == nil
    } catch let error as SerialPortError
      where !searching.isInterrupted && (error.isDisconnected || error.reason == .interrupted)
    {
      throw DeviceGone(device: device.path, why: "was unplugged while it was listened to")
    }
    guard let tried = opened.unrecognisedRates else {
      // What it said while being listened to is its first data: handed to the reader.
      return SerialConnection(
        port: opened.port, interface: interface, heard: opened.heard,
        heardReads: opened.heardReads)
    }
    opened.port.close()
    state.withLock { $0.following.reject(device) }
    throw NotAReceiver(device: device, rates: tried, timePerRate: timePerRate)
  }

  public func startWatching(appeared: @escaping @Sendable () -> Void) {
    let start = state.withLock { state -> Bool in
      switch state.watching {
      case .no:
        state.watching = .starting(appeared: appeared)
        return true
      case .starting:
        state.watching = .starting(appeared: appeared)
      case .yes(_, let task):
        state.watching = .yes(appeared: appeared, task: task)
      }
      return false
    }
    guard start else { return }
    let watcher = subscribe(self)
    let stopped = state.withLock { state -> Bool in
      guard case .starting(let appeared) = state.watching else { return true }
      state.watching = .yes(appeared: appeared, task: watcher)
      return false
    }
    if stopped { watcher.cancel() }
  }

  public func stopWatching() {
    let (watching, waiters, ownerWatch) = state.withLock { state in
      defer {
        state.watching = .no
        state.enumerationWaiters = []
        state.ownerWatch = nil
      }
      return (state.watching, state.enumerationWaiters, state.ownerWatch)
    }
    if case .yes(_, let task) = watching { task.cancel() }
    ownerWatch?.cancel()
    for waiter in waiters { waiter.resume() }
  }

  private func watch<Events: AsyncSequence & Sendable>(_ events: Events) -> Task<Void, Never>
  where Events.Element == HotplugEvent {
    DriverExecutor.task { [weak self] in
      var failure = DiscoveryError.stopped
      do {
        for try await event in events {
          guard let self else { return }
          self.run(self.state.withLock { $0.following.handle(event) })
        }
      } catch {
        failure = error as? DiscoveryError ?? .stopped
      }
      if Task.isCancelled { return }
      // Discovery ended (shut down, or no udev here): a waiting receiver retries now and
      // reports why; connecting fails with the reason from now on.
      guard let self else { return }
      self.run(self.state.withLock { $0.following.discoveryEnded(failure) })
    }
  }

  /// Runs the state machine's actions, outside the lock.
  private func run(_ actions: [Following.Action]) {
    for action in actions {
      switch action {
      case .end(let connection, let why): connection.end(because: why)
      case .interrupt(let port): port.interrupt()
      case .releaseWaiters:
        let waiters = state.withLock { state in
          defer { state.enumerationWaiters = [] }
          return state.enumerationWaiters
        }
        for waiter in waiters { waiter.resume() }
      case .announce:
        state.withLock { $0.watching.appeared }?()
      case .awaitOwner(let path, let attachment):
        awaitOwner(of: path, attachment: attachment)
      }
    }
  }

  /// Looks at the lock of the device at `path` every ``ownerPollInterval`` until nobody holds
  /// it (then the receiver is told) or it is no longer the one waited for (unplugged, another
  /// attached, watching stopped). The lock file and `/proc/locks` are read; the device is not
  /// opened, so the owner is not disturbed.
  private func awaitOwner(of path: String, attachment: Int) {
    let interval = ownerPollInterval
    let task = DriverExecutor.task { [weak self] in
      while true {
        do { try await SystemClock().sleep(for: interval) } catch { return }
        guard let self,
          self.state.withLock({ $0.following.awaitsOwner(attachment: attachment) })
        else { return }
        if SerialPort.owner(of: path) == nil {
          self.run(self.state.withLock { $0.following.ownerLeft(attachment: attachment) })
          return
        }
      }
    }
    let previous = state.withLock { state in
      defer { state.ownerWatch = task }
      return state.ownerWatch
    }
    previous?.cancel()
  }

  /// The first open waits for the devices already present to be listed.
  private func waitForEnumeration() async {
    // Used on its own, outside a receiver: nobody started watching yet.
    if state.withLock({ if case .no = $0.watching { return true } else { return false } }) {
      startWatching {}
    }
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
      let ready = state.withLock { state -> Bool in
        if state.following.isListed { return true }
        if case .no = state.watching { return true }
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
    try guarded { try base.read(into: buffer) }
  }

  var queuesBehindReader: Bool { base.queuesBehindReader }

  func hasUnreadInput() -> Bool { base.hasUnreadInput() }

  func read(into buffer: UnsafeMutableRawBufferPointer, waitingAtMost timeout: Duration) throws
    -> Int
  {
    try guarded { try base.read(into: buffer, waitingAtMost: timeout) }
  }

  /// A read of the base connection that ends once udev says the device is gone.
  private func guarded(_ read: () throws -> Int) throws -> Int {
    do {
      try checkEnded()
      let count = try read()
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
