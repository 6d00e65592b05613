import Glibc
import POSIX

/// A change in the set of serial ports and GNSS devices.
public enum HotplugEvent: Sendable, Hashable, CustomStringConvertible {
  /// A port appeared (or was present when the stream started).
  case added(SerialDevice)
  /// A port went away. The value is the one last reported for it, so its path, IDs and
  /// classification are still known although sysfs no longer has them.
  case removed(SerialDevice)
  /// A present port's properties changed, for example its classification after
  /// `udevadm trigger` applied newly installed rules.
  case changed(SerialDevice)
  /// Every port present when the stream started has been reported; what follows is live.
  /// Lets a caller say "no receiver, waiting" instead of guessing with a timeout.
  case enumerationComplete

  /// The device the event is about; `nil` for `.enumerationComplete`.
  public var device: SerialDevice? {
    switch self {
    case .added(let device), .removed(let device), .changed(let device): return device
    case .enumerationComplete: return nil
    }
  }

  public var description: String {
    switch self {
    case .added(let device): return "added \(device)"
    case .removed(let device): return "removed \(device)"
    case .changed(let device): return "changed \(device)"
    case .enumerationComplete: return "enumeration complete"
    }
  }
}

/// Which netlink source hotplug events come from.
public enum HotplugSource: String, Sendable, Hashable, CustomStringConvertible {
  /// `udev` where udevd runs (`/run/udev/control` exists), else `kernel`.
  case automatic
  /// Events udevd broadcasts after running its rules: device links and `SERIALGPS_*`
  /// properties are in place when they arrive.
  case udev
  /// Raw kernel uevents, for systems without udevd (containers, minimal images). Device
  /// details are read from sysfs, which is all discovery needs.
  case kernel

  /// `.automatic` resolved for this system.
  public var resolved: HotplugSource {
    guard self == .automatic else { return self }
    return access("/run/udev/control", F_OK) == 0 ? .udev : .kernel
  }

  public var description: String { rawValue }
}

/// Why discovery could not do what was asked.
public enum DiscoveryError: Error, Sendable, Hashable, CustomStringConvertible {
  /// `udev_new` failed.
  case udevUnavailable(errno: Int32)
  /// The hotplug monitor could not be created or bound.
  case monitorUnavailable(source: HotplugSource, errno: Int32)
  /// Enumerating `/sys/class/tty` and `/sys/class/gnss` failed.
  case enumerationFailed(errno: Int32)
  /// The discovery thread could not be started.
  case threadUnavailable(errno: Int32)
  /// `shutdown()` was called, or the discovery object went away.
  case stopped

  public var description: String {
    switch self {
    case .udevUnavailable(let code):
      return "serialgps: cannot open libudev (\(errorText(code))); check that /sys is mounted"
    case .monitorUnavailable(let source, let code):
      let hint =
        source == .udev
        ? "is udevd running? Try HotplugSource.kernel where it is not"
        : "the kernel uevent netlink socket may be blocked in this container or sandbox"
      return
        "serialgps: cannot listen for serial devices being plugged in on the \(source) netlink socket (\(errorText(code))); \(hint)"
    case .enumerationFailed(let code):
      return
        "serialgps: cannot list serial ports and GNSS devices in /sys/class/tty and /sys/class/gnss (\(errorText(code))); check that /sys is mounted"
    case .threadUnavailable(let code):
      return "serialgps: cannot start the device discovery thread (\(errorText(code)))"
    case .stopped:
      return "serialgps: device discovery was shut down"
    }
  }
}

func errorText(_ code: Int32) -> String {
  code == 0 ? "unknown error" : Errno(rawValue: code).description
}

/// The hotplug events of one subscription, as an `AsyncSequence`. Ends when the discovery
/// object shuts down; throws `DiscoveryError` when the monitor cannot be set up.
public struct HotplugEvents: AsyncSequence, Sendable {
  public typealias Element = HotplugEvent

  let stream: AsyncThrowingStream<HotplugEvent, any Error>

  public func makeAsyncIterator() -> AsyncIterator {
    AsyncIterator(base: stream.makeAsyncIterator())
  }

  public struct AsyncIterator: AsyncIteratorProtocol {
    var base: AsyncThrowingStream<HotplugEvent, any Error>.AsyncIterator

    public mutating func next() async throws -> HotplugEvent? {
      try await base.next()
    }
  }
}
