/// Follows the receiver a selector asks for across unplug and replug.
///
/// A state machine with no I/O: feed it the events of `DeviceDiscovery.events()` (and the
/// driver's verdict when a possible receiver turns out not to speak NMEA), and it returns
/// what to do, in order. The gated receiver runs the actions; tests drive it directly.
///
/// - It waits for `.enumerationComplete` before choosing, so that it picks the best of the
///   devices already present rather than whichever was reported first.
/// - Once attached it stays on that device until it is removed, rejected or stops matching;
///   it never switches because a "better" one was plugged in.
/// - After a removal it takes the next best matching device present, else waits. With a
///   named selector (serial number, by-id path) only that receiver matches, so it waits for
///   that one to come back, whatever node it then gets; with `.first` any receiver will do.
public struct ReceiverTracker: Sendable {
  /// What the driver should do.
  public enum Action: Sendable, Hashable, CustomStringConvertible {
    /// Open `device` and use it. With `mayWrite` false, only listen: send nothing until valid
    /// NMEA was heard on it (a generic bridge the user did not name).
    case attach(SerialDevice, mayWrite: Bool)
    /// The attached device's details changed (for example a udev rule now declares its
    /// chipset); keep using it with the new details.
    case update(SerialDevice, mayWrite: Bool)
    /// Stop using `device`: it was unplugged, rejected, or no longer matches.
    case detach(SerialDevice)

    public var description: String {
      switch self {
      case .attach(let device, let mayWrite):
        return "attach \(device.path)\(mayWrite ? "" : " (listen only)")"
      case .update(let device, _): return "update \(device.path)"
      case .detach(let device): return "detach \(device.path)"
      }
    }
  }

  public let selector: ReceiverSelector
  /// The device in use, if any.
  public private(set) var attached: SerialDevice?
  private var present: [String: SerialDevice] = [:]
  private var rejected: Set<String> = []
  private var enumerated = false

  public init(selector: ReceiverSelector) {
    self.selector = selector
  }

  /// True once the present devices are known and none of them matches: the driver is
  /// waiting for the receiver to be plugged in.
  public var isWaiting: Bool { enumerated && attached == nil }

  /// Takes one hotplug event; returns the actions to run, in order.
  public mutating func handle(_ event: HotplugEvent) -> [Action] {
    switch event {
    case .enumerationComplete:
      enumerated = true
      return attachIfIdle()

    case .added(let device):
      present[device.sysPath] = device
      return attachIfIdle()

    case .changed(let device):
      present[device.sysPath] = device
      guard let current = attached, current.sysPath == device.sysPath else {
        return attachIfIdle()
      }
      guard selector.matches(device) else {
        attached = nil
        return [.detach(current)] + attachIfIdle()
      }
      attached = device
      return current == device ? [] : [.update(device, mayWrite: selector.mayWrite(to: device))]

    case .removed(let device):
      present[device.sysPath] = nil
      rejected.remove(device.sysPath)
      guard let current = attached, current.sysPath == device.sysPath else { return [] }
      attached = nil
      return [.detach(current)] + attachIfIdle()
    }
  }

  /// The driver listened to `device` and heard no valid NMEA: stop using it and try the next
  /// candidate. It is not tried again until it is unplugged and plugged back in.
  public mutating func reject(_ device: SerialDevice) -> [Action] {
    rejected.insert(device.sysPath)
    guard let current = attached, current.sysPath == device.sysPath else { return [] }
    attached = nil
    return [.detach(current)] + attachIfIdle()
  }

  private mutating func attachIfIdle() -> [Action] {
    guard enumerated, attached == nil else { return [] }
    let available = present.values.filter { !rejected.contains($0.sysPath) }
    guard let chosen = selector.candidates(in: Array(available)).first else { return [] }
    attached = chosen
    return [.attach(chosen, mayWrite: selector.mayWrite(to: chosen))]
  }
}
