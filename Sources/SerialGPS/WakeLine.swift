import Chipsets
import POSIX
import SerialPort

/// A line the driver drives to wake a receiver from a sleep that only a pin ends: MediaTek's
/// FORCE_ON, which `$PMTK225,4` (backup) waits for. Declaring one
/// (``GPSReceiver/Options/wakePin``) is what lets the driver choose that sleep
/// (docs/chipsets.md, "Sleep depth"); without one it never does.
///
/// The driver drives it high at every wake (before the port is opened; harmless to a receiver
/// that is awake or in standby) and keeps it high while the receiver runs, then low just
/// before the backup command: the chip cannot enter backup while FORCE_ON is high, and a
/// pulse would need a width nobody states (Quectel asks for at least 100 ms, users measured
/// 600 ms).
public protocol WakeLine: Sendable, CustomStringConvertible {
  /// Drives the line high (wake; keep awake) or low (released, so that the receiver may
  /// sleep). Errors say what went wrong.
  func drive(high: Bool) throws
}

/// A wake line on a GPIO chip, driven through the kernel's GPIO character device
/// (`/dev/gpiochipN`, uAPI v2): `serve --wake-pin gpiochip0:17`.
public final class GPIOWakeLine: WakeLine {
  private let line: GPIOLine
  private let name: String

  /// Requests line `offset` of `chip` (`gpiochip0` or `/dev/gpiochip0`) as an output, high
  /// (the receiver is woken at start anyway). Throws ``WakeLineError`` naming the chip, the
  /// line and what to do.
  public init(chip: String, offset: UInt32) throws {
    let path = chip.hasPrefix("/") ? chip : "/dev/" + chip
    name = "\(path) line \(offset)"
    do {
      line = try GPIOLine(chipPath: path, offset: offset, consumer: "serialgps wake", high: true)
    } catch {
      throw WakeLineError(line: name, errno: error)
    }
  }

  /// Parses `CHIP:LINE` (`gpiochip0:17`, `/dev/gpiochip1:4`) and requests the line.
  public convenience init(specification: String) throws {
    guard let colon = specification.lastIndex(of: ":"),
      let offset = UInt32(specification[specification.index(after: colon)...]),
      colon != specification.startIndex
    else {
      throw WakeLineError(
        line: specification, reason: "expected CHIP:LINE, such as gpiochip0:17 (see gpioinfo)")
    }
    try self.init(chip: String(specification[..<colon]), offset: offset)
  }

  public func drive(high: Bool) throws {
    do {
      try line.set(high: high)
    } catch {
      throw WakeLineError(line: name, errno: error)
    }
  }

  public var description: String { name }
}

/// A wake line that could not be requested or driven.
public struct WakeLineError: Error, CustomStringConvertible, Sendable {
  public let line: String
  public let reason: String

  public init(line: String, reason: String) {
    self.line = line
    self.reason = reason
  }

  init(line: String, errno: Errno) {
    let advice: String
    switch errno {
    case .noSuchFileOrDirectory: advice = "no such GPIO chip (list them with gpiodetect)"
    case .permissionDenied:
      advice = "no permission (add the user to the gpio group, or a udev rule)"
    case .deviceBusy: advice = "the line is in use by another program or driver (gpioinfo)"
    case .invalidArgument: advice = "no such line on this chip (gpioinfo lists them)"
    default: advice = "\(errno)"
    }
    self.init(line: line, reason: advice)
  }

  public var description: String { "wake line \(line): \(reason)" }
}

/// A connector that drives the declared wake line high before each connection that the
/// driver will wake with commands, so that a receiver in a pin-only sleep is awake by the time
/// its wake-up steps are written. Everything else is the wrapped connector's.
struct WakingConnector: ReceiverConnector {
  let base: any ReceiverConnector
  let line: any WakeLine

  var deviceName: String { base.deviceName }
  func connect() async throws -> any ReceiverConnection { try await base.connect() }
  func connect(wakingWith family: ChipsetFamily) async throws -> any ReceiverConnection {
    if family.hasCommands { try line.drive(high: true) }
    return try await base.connect(wakingWith: family)
  }
  var chipsetHint: ChipsetHint? { base.chipsetHint }
  var receiverIdentity: String? { base.receiverIdentity }
  var markerIdentity: String? { base.markerIdentity }
  var positionIdentity: String? { base.positionIdentity }
  var deviceOwner: DeviceOwner? { base.deviceOwner }
  func startWatching(appeared: @escaping @Sendable () -> Void) {
    base.startWatching(appeared: appeared)
  }
  func stopWatching() { base.stopWatching() }
  func interruptConnect() { base.interruptConnect() }
}
