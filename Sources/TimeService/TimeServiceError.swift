import SerialPort

/// What went wrong setting up a time output or a PPS source; each says what to do.
public enum TimeServiceError: Error, Sendable, Hashable, CustomStringConvertible {
  /// NTP SHM units 0 and 1 are root's.
  case sharedMemoryNeedsRoot(unit: Int)
  /// A unit outside 0…255 (the keys ntpd, chrony and ntpshmmon use).
  case sharedMemoryUnitOutOfRange(Int)
  /// shmget or shmat failed.
  case sharedMemory(unit: Int, Errno)
  /// Another process that may write it has the unit's segment attached (`by` describes each,
  /// `gpsd (pid 812)`); `free` is a unit that is not taken.
  case sharedMemoryHeld(unit: Int, by: [String], free: Int?)
  /// The unit's segment is smaller than ntpd's layout (`size` bytes): made by another program.
  case sharedMemoryWrongSize(unit: Int, size: Int, free: Int?)
  /// The PPS device could not be opened.
  case ppsOpen(path: String, Errno)
  /// The device is not an RFC 2783 PPS source (the PPS ioctls are unknown to it).
  case notPPSDevice(path: String)
  /// The PPS source cannot wait for an event (no `PPS_CANWAIT`) or cannot capture the edge.
  case ppsUnsupported(path: String, String)
  /// A PPS ioctl failed.
  case ppsFailed(path: String, operation: String, Errno)
  /// No kernel PPS device belongs to the tty.
  case noPPSDevice(tty: String)
  /// The tty cannot wait for modem-line changes (TIOCMIWAIT).
  case carrierDetectUnsupported(path: String, Errno)

  /// The NTP shared-memory unit the error is about, if it is about one.
  public var sharedMemoryUnit: Int? {
    switch self {
    case .sharedMemoryNeedsRoot(let unit), .sharedMemoryUnitOutOfRange(let unit),
      .sharedMemory(let unit, _), .sharedMemoryHeld(let unit, _, _),
      .sharedMemoryWrongSize(let unit, _, _):
      return unit
    case .ppsOpen, .notPPSDevice, .ppsUnsupported, .ppsFailed, .noPPSDevice,
      .carrierDetectUnsupported:
      return nil
    }
  }

  public var description: String {
    switch self {
    case .sharedMemoryNeedsRoot(let unit):
      return
        "NTP shared memory unit \(unit) is root's (ntpd makes units 0 and 1 mode 0600): run as root, or use unit 2 or above"
    case .sharedMemoryUnitOutOfRange(let unit):
      return "NTP shared memory unit \(unit) is out of range: use 0…255"
    case .sharedMemory(let unit, let error):
      let removal =
        "remove it with ipcrm -M \(hex(NTPSharedMemory.key(ofUnit: unit))) when nothing uses it"
      let hint =
        error == .permissionDenied
        ? ": the segment belongs to another user (\(removal), or run as its owner)"
        : error == .invalidArgument
          ? ": a segment of another size holds the key (\(removal))"
          : ""
      return "cannot attach NTP shared memory unit \(unit) (NTP\(unit)): \(error)\(hint)"
    case .sharedMemoryHeld(let unit, let holders, let free):
      return
        "NTP shared memory unit \(unit) (NTP\(unit)) is attached by \(holders.joined(separator: ", ")), "
        + "which may write it too (gpsd takes units 0 to 7): not writing beside it; "
        + Self.choose(free)
    case .sharedMemoryWrongSize(let unit, let size, let free):
      return
        "NTP shared memory unit \(unit) (NTP\(unit)) is a segment of \(size) bytes, not ntpd's "
        + "layout: another program made it (remove it with ipcrm -M "
        + "\(hex(NTPSharedMemory.key(ofUnit: unit))) when nothing uses it), or "
        + Self.choose(free)
    case .ppsOpen(let path, let error):
      let hint =
        error == .permissionDenied
        ? ": run as root or give the user access to it (a udev rule with GROUP and MODE)"
        : error == .noSuchFileOrDirectory
          ? ": load the PPS driver (dtoverlay=pps-gpio on a Raspberry Pi, ldattach PPS /dev/ttyS0 for a serial line's DCD) or name the right device"
          : ""
      return "cannot open the PPS device \(path): \(error)\(hint)"
    case .notPPSDevice(let path):
      return "\(path) is not a kernel PPS device (expected /dev/ppsN)"
    case .ppsUnsupported(let path, let what):
      return "the PPS device \(path) \(what)"
    case .ppsFailed(let path, let operation, let error):
      let hint =
        error == .permissionDenied || error == .notPermitted
        ? ": setting the capture mode needs write access to the device (run as root)" : ""
      return "PPS \(operation) failed on \(path): \(error)\(hint)"
    case .noPPSDevice(let tty):
      return
        "no kernel PPS device belongs to \(tty): attach the PPS line discipline (ldattach PPS \(tty)), or name the device with --pps /dev/ppsN"
    case .carrierDetectUnsupported(let path, let error):
      return
        "\(path) cannot report carrier-detect changes (TIOCMIWAIT: \(error)): it is not a real serial port, or its driver lacks modem-line interrupts; use kernel PPS instead"
    }
  }

  private static func choose(_ free: Int?) -> String {
    guard let free else { return "no unit up to 99 is free" }
    return
      "unit \(free) is free: use it (--ntp-shm \(free)) and point chrony's refclock SHM or "
      + "ntpd's 127.127.28.\(free) at it"
  }

  private func hex(_ value: Int32) -> String { "0x" + String(UInt32(bitPattern: value), radix: 16) }
}
