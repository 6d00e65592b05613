import POSIX

/// Why a serial port operation failed, naming the device and saying what to do about it.
///
/// Every failure of ``SerialPort``, ``PseudoTerminal`` and ``Autobaud`` is one of these. Match
/// on ``reason`` to react (``Reason/disconnected(_:)`` means reopen later,
/// ``Reason/busy`` means someone else has the port); print ``description`` to tell the user.
public struct SerialPortError: Error, Hashable, Sendable, CustomStringConvertible {
  /// What the port was doing when it failed.
  public enum Operation: String, Hashable, Sendable {
    case open, configure, read, write, drain, flush, modemLines, autobaud

    var phrase: String {
      switch self {
      case .open: "opening"
      case .configure: "configuring"
      case .read: "reading from"
      case .write: "writing to"
      case .drain: "waiting for output to reach"
      case .flush: "flushing"
      case .modemLines: "setting the modem lines of"
      case .autobaud: "finding the baud rate of"
      }
    }

    var activity: String {
      switch self {
      case .open: "opening"
      case .configure: "configuring the port"
      case .read: "reading"
      case .write: "writing"
      case .drain: "draining output"
      case .flush: "flushing"
      case .modemLines: "setting modem lines"
      case .autobaud: "listening for the baud rate"
      }
    }
  }

  /// How a device showed that it went away.
  public enum DisconnectCause: Hashable, Sendable, CustomStringConvertible {
    /// `poll` reported POLLHUP, or `read` returned 0: the tty was hung up, as when a USB
    /// receiver is unplugged or the other end of a pty closes.
    case hangUp
    /// `poll` reported POLLERR on the tty.
    case pollError
    /// A call failed with EIO, ENXIO or ENODEV.
    case errno(Errno)

    public var description: String {
      switch self {
      case .hangUp: "hang-up"
      case .pollError: "POLLERR"
      case .errno(let errno): errno.description
      }
    }
  }

  /// What went wrong.
  public enum Reason: Hashable, Sendable {
    /// ENOENT or ENOTDIR: no such device node.
    case missing
    /// EACCES or EPERM. Carries who owns the node, when `stat` could tell.
    case permissionDenied(DeviceOwnership?)
    /// EBUSY: another program holds the port exclusively (TIOCEXCL) or the driver is busy,
    /// and which program is not known.
    case busy
    /// Another process owns the device: its `flock`, or a lock file naming it, or TIOCEXCL
    /// with a lock file naming it (``SerialPort/open(path:baudRate:exclusive:lockDirectory:)``).
    case inUse(by: DeviceOwner)
    /// The device went away: hang-up, POLLERR, EIO, ENXIO or ENODEV. The port is unusable
    /// from now on; close it and open the device again once it is back.
    case disconnected(DisconnectCause)
    /// The path is not a tty (ENOTTY from `tcgetattr`) nor a GNSS device; or, from
    /// ``SerialPort/setBaudRate(_:)``, the port is a GNSS device, which has no rate to set.
    case notATerminal
    /// The rate is outside ``BaudRate/supported``, or the driver did not take it.
    case unsupportedBaudRate(BaudRate)
    /// The port was closed by this program before or during the call.
    case closed
    /// A write with a timeout could not hand all its bytes to the driver in time.
    case writeTimedOut(after: Duration, written: Int, of: Int)
    /// Autobaud heard nothing it recognised at any of these rates, listening this long at each.
    case nothingRecognised(triedRates: [BaudRate], timePerRate: Duration)
    /// Autobaud was stopped by ``SerialPort/interrupt()`` before it found a rate.
    case interrupted
    /// Any other errno.
    case system(Errno)
  }

  /// The device path as the caller gave it.
  public let device: String
  /// What the port was doing.
  public let operation: Operation
  /// What went wrong.
  public let reason: Reason
  /// The errno behind the failure, when there was one.
  public let errno: Errno?

  public init(device: String, operation: Operation, reason: Reason, errno: Errno? = nil) {
    self.device = device
    self.operation = operation
    self.reason = reason
    self.errno = errno
  }

  /// Classifies an errno from `operation` on `device`. For EACCES and EPERM the node is
  /// inspected with `stat` so that the message can name its group.
  public init(device: String, operation: Operation, errno: Errno) {
    let reason: Reason
    switch errno {
    case .noSuchFileOrDirectory, .notDirectory:
      reason = .missing
    case .permissionDenied, .notPermitted:
      reason = .permissionDenied(DeviceOwnership.inspect(path: device))
    case .deviceBusy:
      reason = .busy
    case .ioError, .noSuchDeviceOrAddress, .noSuchDevice:
      reason = .disconnected(.errno(errno))
    case .notATerminal:
      reason = .notATerminal
    default:
      reason = .system(errno)
    }
    self.init(device: device, operation: operation, reason: reason, errno: errno)
  }

  /// Whether the device went away; the port must be closed and the device opened again.
  public var isDisconnected: Bool {
    if case .disconnected = reason { return true }
    return false
  }

  public var description: String {
    switch reason {
    case .missing:
      return "\(device) does not exist. Check that the receiver is plugged in and find the name "
        + "it got with `ls -l /dev/serial/by-id/` (USB receivers) or `dmesg | tail` right after "
        + "plugging it in."

    case .permissionDenied(let ownership):
      var text = "Permission denied \(operation.phrase) \(device)"
      guard let ownership else {
        return text + ". Check the permissions of the device and of its directory, and install "
          + "the project's udev rule \(Self.udevRuleAdvice)."
      }
      text += " (\(ownership.summary))."
      if let group = ownership.groupName, ownership.groupCanReadAndWrite {
        if ownership.callerIsInGroup {
          text +=
            " This process is already in group \(group), so something else denies access"
            + " (a security policy such as AppArmor, or a read-only mount)."
        } else {
          text +=
            " Add your user to group \(group): `sudo usermod -aG \(group) $USER`, then log"
            + " out and back in."
        }
        return text + " Or install the project's udev rule \(Self.udevRuleAdvice)."
      }
      return text + " Its group cannot read and write it either; install the project's udev "
        + "rule \(Self.udevRuleAdvice)."

    case .busy:
      return "\(device) is in use by another program that holds it exclusively. Find it with "
        + "`fuser -v \(device)` (gpsd and ModemManager often hold GPS ports) and stop it, e.g. "
        + "`sudo systemctl stop gpsd.socket gpsd`."

    case .inUse(let owner):
      let how = owner.lockFile.map { "its lock file \($0) names it" } ?? "it holds its lock"
      if owner.isThisProcess {
        return "\(device) is already open in this process (\(owner.processID)): one receiver "
          + "serves one reader; share the open receiver's subscriptions instead of opening it "
          + "again."
      }
      return "\(device) is in use by \(owner) (\(how)). A receiver has one owner at a time: "
        + "stop that program (`kill \(owner.processID)`) or, if it is `serialgps serve`, read "
        + "the receiver through it as a gpsd client (`gpspipe -w`)."

    case .disconnected(let cause):
      if operation == .open {
        return "\(device) exists but no device answers behind it (\(cause)): the receiver was "
          + "unplugged or the port has no hardware. Plug the receiver in, or check the port name."
      }
      return "\(device) went away while \(operation.activity) (\(cause)), as when a USB "
        + "receiver is unplugged. Plug it back in; the port must be closed and opened again."

    case .notATerminal:
      if operation == .configure {
        return "\(device) has no line settings (a kernel GNSS device: its driver sets the "
          + "rate from the device tree), so its baud rate cannot be changed. Leave the rate out."
      }
      return "\(device) is not a serial port (tcgetattr: \(Errno.notATerminal.name)). Give the "
        + "path of a tty such as /dev/ttyUSB0, /dev/ttyACM0 or one under /dev/serial/by-id/, "
        + "or a kernel GNSS device such as /dev/gnss0."

    case .unsupportedBaudRate(let rate):
      let rates = BaudRate.supported.map(\.description).joined(separator: ", ")
      if rate.isSupported {
        return "The driver of \(device) does not accept \(rate) baud"
          + (errno.map { " (\($0))" } ?? "") + ". Try another rate: \(rates)."
      }
      return "\(rate) baud is not supported for \(device). Use one of \(rates)."

    case .closed:
      return "\(device) was closed by this program (while \(operation.activity)); open it again."

    case .writeTimedOut(let after, let written, let total):
      return "Writing to \(device) timed out after \(after) with \(written) of \(total) bytes "
        + "sent: the device is not taking data. Unplug and replug it, or check its flow control."

    case .nothingRecognised(let rates, let timePerRate):
      let list = rates.map(\.description).joined(separator: ", ")
      return "Nothing recognisable arrived from \(device) at \(list) baud (listened \(timePerRate)"
        + " at each). Check that the receiver is powered and sending, and that \(device) is "
        + "the right port."

    case .interrupted:
      return "The search for the baud rate of \(device) was interrupted before it found one."

    case .system(let errno):
      return "\(operation.phrase.prefix(1).uppercased() + operation.phrase.dropFirst()) "
        + "\(device) failed: \(errno)."
    }
  }

  static let udevRuleAdvice =
    "udev-rules/60-serialgps.rules (`sudo cp udev-rules/60-serialgps.rules /etc/udev/rules.d/ "
    + "&& sudo udevadm control --reload-rules && sudo udevadm trigger`, then replug)"
}
