import CTimeShims
import Glibc
import POSIX
import SerialPort

/// Which edge of the pulse marks the second.
public enum PPSEdge: Sendable, Hashable {
  /// The assert (leading, usually rising) edge: what receivers mean, and chrony's default.
  case assert
  /// The clear (trailing) edge, for a line inverted on its way (an RS-232 level shifter).
  case clear
}

/// Pulses from the kernel's RFC 2783 PPS API: `/dev/ppsN`, made by the `pps-gpio` driver (a
/// GPIO on a Raspberry Pi: `dtoverlay=pps-gpio,gpiopin=18`) or by the PPS line discipline on a
/// serial port's DCD line (`ldattach PPS /dev/ttyS0`). The kernel timestamps the edge in its
/// interrupt handler, so the pulse's time is good to a few microseconds whatever the load.
///
/// Each ``nextPulse(timeout:)`` is one `PPS_FETCH` that sleeps in the kernel until the next
/// event or the timeout; nothing polls.
///
/// `@unchecked Sendable`: `lastSequence` belongs to the one listener thread that fetches pulses;
/// the descriptor is only used, never replaced.
public final class KernelPPSSource: PPSSource, @unchecked Sendable {
  /// The device's path.
  public let name: String
  /// The edge that marks the second.
  public let edge: PPSEdge
  // Closed when the source is released, and only then: also when `init` throws after
  // storing it, since a class whose properties are all set is deinitialised on a throw.
  private let descriptor: OwnedDescriptor
  // Only the listener's thread touches it.
  private var lastSequence: UInt32?

  /// Opens the PPS device at `path` and sets it to capture `edge` (which needs write access;
  /// read-only access suffices when the mode is already set, as `pps-gpio` sets it).
  public init(path: String, edge: PPSEdge = .assert) throws(TimeServiceError) {
    name = path
    self.edge = edge
    var writable = true
    var opened: CInt
    do {
      opened = try System.open(path, O_RDWR)
    } catch {
      guard error == .permissionDenied else { throw .ppsOpen(path: path, error) }
      do {
        opened = try System.open(path, O_RDONLY)
        writable = false
      } catch {
        throw .ppsOpen(path: path, error)
      }
    }
    descriptor = OwnedDescriptor(FileDescriptor(rawValue: opened))
    try Self.configure(descriptor.rawValue, path: path, edge: edge, writable: writable)
  }

  private static func configure(
    _ descriptor: CInt, path: String, edge: PPSEdge, writable: Bool
  ) throws(TimeServiceError) {
    let capabilities: CInt
    do {
      capabilities = try System.ppsCapabilities(descriptor)
    } catch {
      if error == .notATerminal || error == .invalidArgument { throw .notPPSDevice(path: path) }
      throw .ppsFailed(path: path, operation: "PPS_GETCAP", error)
    }
    guard capabilities & CInt(PPS_CANWAIT) != 0 else {
      throw .ppsUnsupported(path: path, "cannot wait for pulses (no PPS_CANWAIT)")
    }
    let capture = CInt(edge == .assert ? PPS_CAPTUREASSERT : PPS_CAPTURECLEAR)
    guard capabilities & capture != 0 else {
      throw .ppsUnsupported(
        path: path, "cannot capture the \(edge == .assert ? "assert" : "clear") edge")
    }
    guard writable else { return }
    do {
      try System.ppsEnable(descriptor, mode: capture | CInt(PPS_TSFMT_TSPEC))
    } catch {
      throw .ppsFailed(path: path, operation: "PPS_SETPARAMS", error)
    }
  }

  public func nextPulse(timeout: Duration) throws(TimeServiceError) -> Pulse? {
    let data: pps_fdata
    do {
      guard let fetched = try System.ppsFetch(descriptor.rawValue, timeout: timeout) else {
        return nil
      }
      data = fetched
    } catch {
      throw .ppsFailed(path: name, operation: "PPS_FETCH", error)
    }
    let (sequence, stamp) =
      edge == .assert
      ? (data.info.assert_sequence, data.info.assert_tu)
      : (data.info.clear_sequence, data.info.clear_tu)
    // With both edges captured (by another consumer's setting), the other edge wakes the
    // fetch too: only a new event of our edge is a pulse.
    guard sequence != lastSequence, sequence != 0 else { return nil }
    lastSequence = sequence
    return Pulse(
      time: PosixTime(seconds: stamp.sec, nanoseconds: Int64(stamp.nsec)),
      sequence: UInt64(sequence))
  }

  /// The kernel PPS device that belongs to the tty at `tty`: the one whose sysfs `path`
  /// attribute names it, as the PPS line discipline records it (`ldattach PPS /dev/ttyS0`).
  /// Symbolic links (`/dev/serial0`, `/dev/gps0`) are followed first. `nil` when none does —
  /// a `pps-gpio` device names no tty and must be given explicitly.
  public static func device(forTTY tty: String, sysfs: String = "/sys") -> String? {
    let resolved = System.resolvedPath(tty) ?? tty
    guard let ttyName = resolved.split(separator: "/").last else { return nil }
    let classDirectory = sysfs + "/class/pps"
    for entry in System.directoryEntries(classDirectory) {
      guard let recorded = System.readSmallFile(classDirectory + "/" + entry + "/path") else {
        continue
      }
      let trimmed = recorded.split(whereSeparator: { $0 == "\n" || $0 == " " }).first ?? ""
      guard let name = trimmed.split(separator: "/").last else { continue }
      if name == ttyName { return "/dev/" + entry }
    }
    return nil
  }
}

/// Pulses from the carrier-detect (DCD) line of a serial port, when the kernel has no PPS
/// device for it: the thread sleeps in `TIOCMIWAIT` until the line changes and takes the
/// system time as it wakes, so the pulse's time carries the interrupt and scheduling latency
/// (tens of microseconds on an idle board, more under load; kernel PPS is better).
///
/// `TIOCMIWAIT` has no timeout: a wait ends at the line's next change, when the port hangs up
/// (the receiver unplugged), or when a signal interrupts it: ``PulseListener/stopAndWait()``
/// sends one, so a line that never changes does not keep the thread. The source works on its
/// own duplicate of the port's descriptor, which it closes when it is released.
///
/// `@unchecked Sendable`: `sequence` belongs to the one listener thread that waits for pulses.
public final class CarrierDetectPPSSource: PPSSource, @unchecked Sendable {
  /// The serial port's path.
  public let name: String
  /// The edge that marks the second: assert when DCD is raised.
  public let edge: PPSEdge
  private let waitForChange: () throws(Errno) -> (time: PosixTime, carrier: Bool)?
  private let release: () -> Void
  // The duplicate this source closes: after `release`, when the source goes away.
  private let owned: OwnedDescriptor?
  // Only the listener's thread touches it.
  private var sequence: UInt64 = 0

  /// Listens to the DCD line of the open serial port `descriptor` (duplicated; the caller
  /// keeps its own). `path` names it in messages.
  public convenience init(descriptor: CInt, path: String, edge: PPSEdge = .assert)
    throws(TimeServiceError)
  {
    let own: CInt
    do {
      own = try System.duplicate(descriptor)
    } catch {
      throw .carrierDetectUnsupported(path: path, error)
    }
    self.init(ownDescriptor: own, path: path, edge: edge)
  }

  /// Listens to the DCD line of `descriptor`, a duplicate of a serial port's descriptor that
  /// the source now owns and closes when it is released. `path` names it in messages.
  public convenience init(ownDescriptor own: CInt, path: String, edge: PPSEdge = .assert) {
    self.init(
      path: path, edge: edge,
      waitForChange: { () throws(Errno) in try System.waitForCarrierChange(own) },
      owned: OwnedDescriptor(FileDescriptor(rawValue: own)))
  }

  /// A source on a given wait (tests), which runs `release` and then closes `owned` when it
  /// goes away.
  init(
    path: String, edge: PPSEdge,
    waitForChange: @escaping () throws(Errno) -> (time: PosixTime, carrier: Bool)?,
    release: @escaping () -> Void = {},
    owned: consuming OwnedDescriptor? = nil
  ) {
    name = path
    self.edge = edge
    self.waitForChange = waitForChange
    self.release = release
    self.owned = owned
  }

  deinit {
    release()
  }

  /// Waits for the line to reach the edge's state (raised for assert, lowered for clear);
  /// the timeout cannot be honoured. `nil` when a signal interrupted the wait.
  public func nextPulse(timeout: Duration) throws(TimeServiceError) -> Pulse? {
    while true {
      let change: (time: PosixTime, carrier: Bool)
      do {
        guard let changed = try waitForChange() else { return nil }
        change = changed
      } catch {
        // A pty, or a driver without modem-status interrupts, refuses the request itself.
        if error == .invalidArgument || error == .notATerminal {
          throw .carrierDetectUnsupported(path: name, error)
        }
        throw .ppsFailed(path: name, operation: "TIOCMIWAIT", error)
      }
      // A change to the other state is the pulse's other edge.
      guard change.carrier == (edge == .assert) else { continue }
      sequence += 1
      return Pulse(time: change.time, sequence: sequence)
    }
  }
}
