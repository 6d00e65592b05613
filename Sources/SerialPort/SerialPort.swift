import CSerialShims
import Glibc
import POSIX

/// A tty opened for a GPS receiver: raw 8N1 at a chosen rate, owned by this process alone, read
/// through `poll`. A kernel GNSS device (`/dev/gnss0`) opens too, without termios: see
/// ``isTerminal``.
///
/// ```swift
/// let port = try SerialPort.open(path: "/dev/ttyACM0", baudRate: 9600)
/// defer { port.close() }
/// var buffer = [UInt8](repeating: 0, count: 4096)
/// while case .received(let count) = try buffer.withUnsafeMutableBytes({
///   try port.read(into: $0, timeout: .seconds(5))
/// }) {
///   decoder.feed(buffer[..<count])
/// }
/// ```
///
/// ## Threading contract
/// - **One reader.** ``read(into:deadline:)`` is called by one thread at a time, typically a
///   dedicated reader thread that blocks in it. A blocked reader sleeps in `poll` with no timer
///   armed unless it gave a deadline: an idle port costs no wake-ups.
/// - **One writer context.** ``write(_:timeout:)``, ``setBaudRate(_:)``, ``flushInput()`` and
///   ``setModemLines(_:raised:)`` are called from one context at a time (say, the task that
///   runs the power policy), concurrently with the reader.
/// - **Interrupt and close from anywhere.** ``interrupt()`` ends the reader's current or next
///   read with ``ReadResult/interrupted``. ``close()`` wakes and waits for any read or write in
///   flight (they throw ``SerialPortError/Reason/closed``), then restores the saved settings
///   and closes the descriptor, so a descriptor is never closed under a thread still using it.
///   Both may be called from any thread, any number of times.
///
/// Every call is a blocking system call: call them from threads you own, not from Swift
/// concurrency's cooperative pool, where a blocked read would starve other tasks.
public final class SerialPort: GuardedTerminal, PolledTerminal {
  /// The device path as given to ``open(path:baudRate:exclusive:lockDirectory:)``.
  public let path: String
  /// Whether TIOCEXCL took: other opens fail with EBUSY. Root bypasses TIOCEXCL in the
  /// kernel, but ``open(path:baudRate:exclusive:lockDirectory:)`` checks for it (TIOCGEXCL)
  /// and refuses anyway. False where the driver does not support it (umockdev, some USB
  /// bridges); the `flock` and the lock file still keep the device this process's.
  public let isExclusive: Bool
  /// The lock file naming this process (`/run/lock/LCK..ttyUSB0`), removed by ``close()``;
  /// `nil` when none was written (not exclusive, or the lock directory is missing or not
  /// writable).
  public let lockFile: String?

  /// Where ``open(path:baudRate:exclusive:lockDirectory:)`` puts lock files unless told
  /// otherwise: `/run/lock`, else `/var/lock`; `nil` when neither exists.
  public static var standardLockDirectory: String? { DeviceLock.standardDirectory }

  /// The process that owns the device at `path` now, found without opening it: a lock file
  /// in `lockDirectory` naming a live process, else a `flock` on the device node
  /// (`/proc/locks`). `nil` when neither shows one; a program that holds the device with
  /// TIOCEXCL alone is seen only by an open.
  public static func owner(
    of path: String, lockDirectory: String? = SerialPort.standardLockDirectory
  ) -> DeviceOwner? {
    DeviceLock.owner(of: path, lockDirectory: lockDirectory)
  }
  /// Whether the line has modem control (DTR/RTS). False on ptys, which refuse it with ENOTTY.
  public let supportsModemLines: Bool
  /// False for a character device without termios, such as a node of the kernel's GNSS
  /// subsystem (`/dev/gnss0`, drivers/gnss/core.c): the kernel driver owns the line and its
  /// rate, so there is no rate to set or search for (``setBaudRate(_:)`` throws
  /// ``SerialPortError/Reason/notATerminal``), no modem lines, no TIOCEXCL, and a write is
  /// done when `write(2)` returns. The kernel switches the receiver's supply on when the node
  /// is first opened and off when it is last closed, so ``close()`` is a real power-off.
  public let isTerminal: Bool

  let io: PolledIO
  let lifetime: DescriptorGuard
  /// `nil` for a node without termios.
  let savedSettings: TerminalSettings?
  let currentRate: Locked<BaudRate>

  private init(
    path: String, io: PolledIO, savedSettings: TerminalSettings?, baudRate: BaudRate,
    isExclusive: Bool, lockFile: String?, supportsModemLines: Bool
  ) {
    self.path = path
    self.lockFile = lockFile
    self.io = io
    self.lifetime = DescriptorGuard(closeSignal: io.closeSignal)
    self.savedSettings = savedSettings
    self.currentRate = Locked(baudRate)
    self.isExclusive = isExclusive
    self.supportsModemLines = supportsModemLines
    self.isTerminal = savedSettings != nil
  }

  deinit {
    close()
  }

  /// Opens `path` for reading and writing as a raw 8N1 port at `baudRate`.
  ///
  /// The tty is opened `O_RDWR | O_NOCTTY | O_NONBLOCK | O_CLOEXEC` (it never becomes the
  /// controlling terminal, never blocks in open waiting for carrier, and does not leak into
  /// child processes). Then, in order: the device is claimed for this process when
  /// `exclusive` (below); its settings are saved (restored by ``close()``); TIOCEXCL is set
  /// when `exclusive`; the line is made raw 8N1 with the receiver enabled, carrier ignored and
  /// no flow control; the rate is set and read back; DTR and RTS are raised where the line has
  /// them (some receivers draw power from them); stale input is discarded.
  ///
  /// **A node without termios.** A kernel GNSS device (`/dev/gnss0`: a character device of
  /// sysfs subsystem `gnss`) or a FIFO, which answer `tcgetattr` with ENOTTY, is opened all
  /// the same, with the
  /// same ownership rules, and left as it is: no settings saved or changed, `baudRate` taken
  /// as given and meaning nothing (``isTerminal`` is false). The kernel's GNSS core empties
  /// its read buffer when the node is last closed, so there is no stale input to discard. A
  /// regular file, or another device answering ENOTTY (`/dev/null`), is refused with
  /// ``SerialPortError/Reason/notATerminal``.
  ///
  /// **One owner.** Two programs on one receiver each get part of its bytes, and one's standby
  /// powers off the other's receiver. So the open takes an exclusive `flock` on its descriptor
  /// (which root does not bypass) and writes the lock file serial programs agree on,
  /// `LCK..ttyUSB0` in `lockDirectory` with this process's PID, before it touches anything;
  /// ``close()`` removes it. A device another process owns (its `flock`, a lock file naming a
  /// live process, or TIOCEXCL, which root bypasses but this open checks) is refused at once,
  /// before any of the owner's settings is touched, with
  /// ``SerialPortError/Reason/inUse(by:)`` naming the owner's PID and command, or
  /// ``SerialPortError/Reason/busy`` when it cannot be named. A lock file naming a process
  /// that no longer exists is stale and taken over. Without `exclusive` nothing is claimed but
  /// another's claim is still refused.
  ///
  /// - Parameter lockDirectory: where lock files are (``standardLockDirectory`` by default);
  ///   `nil`, or a directory that is missing or not writable: the `flock` alone.
  /// - Throws: ``SerialPortError`` naming `path`: ``SerialPortError/Reason/missing``,
  ///   ``SerialPortError/Reason/permissionDenied(_:)``, ``SerialPortError/Reason/inUse(by:)``,
  ///   ``SerialPortError/Reason/busy``, ``SerialPortError/Reason/notATerminal``,
  ///   ``SerialPortError/Reason/unsupportedBaudRate(_:)``,
  ///   ``SerialPortError/Reason/disconnected(_:)`` and others.
  public static func open(
    path: String, baudRate: BaudRate, exclusive: Bool = true,
    lockDirectory: String? = SerialPort.standardLockDirectory
  ) throws(SerialPortError) -> SerialPort {
    func failure(_ operation: SerialPortError.Operation, _ errno: Errno) -> SerialPortError {
      SerialPortError(device: path, operation: operation, errno: errno)
    }
    guard baudRate.isSupported else {
      throw SerialPortError(device: path, operation: .open, reason: .unsupportedBaudRate(baudRate))
    }

    let interruptSignal: EventSignal
    let closeSignal: EventSignal
    do {
      interruptSignal = try EventSignal.make()
    } catch {
      throw failure(.open, error)
    }
    do {
      closeSignal = try EventSignal.make()
    } catch {
      interruptSignal.close()
      throw failure(.open, error)
    }

    let tty: FileDescriptor
    do {
      tty = try FileDescriptor.open(path, O_RDWR | O_NOCTTY | O_NONBLOCK | O_CLOEXEC)
    } catch {
      interruptSignal.close()
      closeSignal.close()
      throw failure(.open, error)
    }

    var saved: TerminalSettings? = nil
    var setExclusive = false
    var lockFile: String? = nil
    func abandon(_ error: SerialPortError) -> SerialPortError {
      if let saved { try? tty.setAttributes(saved.attributes) }
      if setExclusive { _ = cserial_clear_exclusive(tty.rawValue) }
      if let lockFile { DeviceLock.releaseLockFile(lockFile) }
      try? tty.close()  // lets the flock go
      interruptSignal.close()
      closeSignal.close()
      return error
    }

    // Another program holding the tty exclusively makes open fail with EBUSY, except for root
    // (CAP_SYS_ADMIN), whose open succeeds. Two readers on one tty would each get part of
    // the bytes, so root is refused too, before anything of the other program's is touched.
    var heldExclusively: CInt = 0
    if cserial_get_exclusive(tty.rawValue, &heldExclusively) == 0, heldExclusively != 0 {
      let owner = DeviceLock.owner(of: path, lockDirectory: lockDirectory)
      throw abandon(
        SerialPortError(
          device: path, operation: .open, reason: owner.map { .inUse(by: $0) } ?? .busy,
          errno: .deviceBusy))
    }

    // The flock before anything is set: of two opens racing, exactly one gets it (TIOCEXCL
    // is set only after the settings are saved, so both could pass the check above).
    do {
      try DeviceLock.lockDescriptor(
        tty, path: path, lockDirectory: lockDirectory, claiming: exclusive)
    } catch {
      throw abandon(error)
    }

    do {
      lockFile = try DeviceLock.claimLockFile(
        for: path, in: lockDirectory, claiming: exclusive)
    } catch {
      throw abandon(error)
    }

    do {
      saved = TerminalSettings(try tty.attributes())
    } catch  where error == .notATerminal && isGNSSDeviceOrFIFO(tty) {
      // A GNSS device: nothing below applies to it.
      let io = PolledIO(
        descriptor: tty, interruptSignal: interruptSignal, closeSignal: closeSignal)
      return SerialPort(
        path: path, io: io, savedSettings: nil, baudRate: baudRate, isExclusive: false,
        lockFile: lockFile, supportsModemLines: false)
    } catch {
      throw abandon(failure(.open, error))
    }
    let original = saved!

    // Not supported everywhere (umockdev, some drivers): not worth failing over.
    setExclusive = exclusive && cserial_set_exclusive(tty.rawValue) == 0
    let isExclusive = setExclusive

    var settings = original
    settings.makeRaw8N1()
    settings.setBaudRate(baudRate)
    do {
      try applySettings(settings, rate: baudRate, to: tty, path: path)
    } catch {
      throw abandon(error)
    }

    let lines = CSERIAL_MODEM_LINE_DTR | CSERIAL_MODEM_LINE_RTS
    var supportsModemLines = true
    if cserial_modem_lines_raise(tty.rawValue, lines) != 0 {
      let error = Errno.current
      if error.meansDeviceGone { throw abandon(failure(.modemLines, error)) }
      // ENOTTY on ptys, EINVAL on some USB bridges: a line without modem control.
      supportsModemLines = false
    }

    // Bytes queued before this open arrived at whatever rate the line had: drop them. Only a
    // device that went away makes this fatal.
    do {
      try tty.flush(TCIFLUSH)
    } catch  where error.meansDeviceGone {
      throw abandon(failure(.flush, error))
    } catch {}

    let io = PolledIO(
      descriptor: tty, interruptSignal: interruptSignal, closeSignal: closeSignal)
    return SerialPort(
      path: path, io: io, savedSettings: original, baudRate: baudRate,
      isExclusive: isExclusive, lockFile: lockFile, supportsModemLines: supportsModemLines)
  }

  /// Whether `descriptor` is a node of the kernel's GNSS subsystem, or a FIFO (a test's or a
  /// relay's stand-in for one), rather than a regular file or another device opened by mistake.
  private static func isGNSSDeviceOrFIFO(_ descriptor: FileDescriptor) -> Bool {
    var status = stat()
    guard fstat(descriptor.rawValue, &status) == 0 else { return false }
    switch status.st_mode & S_IFMT {
    case S_IFIFO: return true
    case S_IFCHR: return FileSystem.characterDeviceSubsystem(status.st_rdev) == "gnss"
    default: return false
    }
  }

  /// tcsetattr reports success when any one change took, so read the settings back and check
  /// the rate, which a driver may quietly round to one it can do.
  private static func applySettings(
    _ settings: TerminalSettings, rate: BaudRate, to tty: FileDescriptor, path: String
  ) throws(SerialPortError) {
    do {
      try tty.setAttributes(settings.attributes)
    } catch {
      if error == .invalidArgument {
        throw SerialPortError(
          device: path, operation: .configure, reason: .unsupportedBaudRate(rate), errno: error)
      }
      throw SerialPortError(device: path, operation: .configure, errno: error)
    }
    let applied: TerminalSettings
    do {
      applied = TerminalSettings(try tty.attributes())
    } catch {
      throw SerialPortError(device: path, operation: .configure, errno: error)
    }
    guard applied.baudRate == rate else {
      throw SerialPortError(device: path, operation: .configure, reason: .unsupportedBaudRate(rate))
    }
  }

  /// The rate the port is set to.
  public var baudRate: BaudRate { currentRate.withLock { $0 } }

  /// Whether ``close()`` has been called.
  public var isClosed: Bool { !lifetime.isOpen }

  var errorPath: String { path }

  /// Changes the rate of an open port (input and output). Bytes already queued at the old
  /// rate stay queued; call ``flushInput()`` to drop them. Throws
  /// ``SerialPortError/Reason/notATerminal`` on a node without termios (``isTerminal``).
  public func setBaudRate(_ rate: BaudRate) throws(SerialPortError) {
    guard isTerminal else {
      throw SerialPortError(
        device: path, operation: .configure, reason: .notATerminal, errno: .notATerminal)
    }
    guard rate.isSupported else {
      throw SerialPortError(device: path, operation: .configure, reason: .unsupportedBaudRate(rate))
    }
    try withOpenDescriptors(.configure) { () throws(SerialPortError) in
      var settings: TerminalSettings
      do throws(Errno) {
        settings = TerminalSettings(try io.descriptor.attributes())
      } catch {
        throw SerialPortError(device: path, operation: .configure, errno: error)
      }
      settings.setBaudRate(rate)
      try Self.applySettings(settings, rate: rate, to: io.descriptor, path: path)
      currentRate.withLock { $0 = rate }
    }
  }

  /// Drops bytes received but not yet read (TCIFLUSH), e.g. what arrived at the old rate.
  /// Does nothing on a node without termios (``isTerminal``), which has no rate to change.
  public func flushInput() throws(SerialPortError) {
    guard isTerminal else { return }
    try withOpenDescriptors(.flush) { () throws(SerialPortError) in
      do throws(Errno) {
        try io.descriptor.flush(TCIFLUSH)
      } catch {
        throw SerialPortError(device: path, operation: .flush, errno: error)
      }
    }
  }

  /// How many received bytes wait in the kernel to be read (`FIONREAD`, `TIOCINQ` on a tty):
  /// more than zero while a reader is behind what the device sent.
  public func bytesWaiting() throws(SerialPortError) -> Int {
    try withOpenDescriptors(.read) { () throws(SerialPortError) in
      var count: CInt = 0
      do throws(Errno) {
        _ = try valueOrErrno(cserial_input_queued(io.descriptor.rawValue, &count))
      } catch {
        throw SerialPortError(device: path, operation: .read, errno: error)
      }
      return Int(count)
    }
  }

  /// Raises or lowers DTR and/or RTS. Returns false, doing nothing, on a line without modem
  /// control (see ``supportsModemLines``).
  @discardableResult
  public func setModemLines(_ lines: ModemLines, raised: Bool) throws(SerialPortError) -> Bool {
    guard supportsModemLines else { return false }
    var mask: CInt = 0
    if lines.contains(.dataTerminalReady) { mask |= CSERIAL_MODEM_LINE_DTR }
    if lines.contains(.requestToSend) { mask |= CSERIAL_MODEM_LINE_RTS }
    try withOpenDescriptors(.modemLines) { () throws(SerialPortError) in
      let fd = io.descriptor.rawValue
      let status =
        raised ? cserial_modem_lines_raise(fd, mask) : cserial_modem_lines_lower(fd, mask)
      if status != 0 {
        throw SerialPortError(device: path, operation: .modemLines, errno: Errno.current)
      }
    }
    return true
  }

  /// Ends the reader's current read with ``ReadResult/interrupted``, or its next one if no
  /// read is waiting: an interrupt stays pending until a read consumes it, so a reader that
  /// checks a stop flag and then reads cannot miss it. Several interrupts before a read count
  /// as one. Does nothing once the port is closed. Callable from any thread.
  public func interrupt() { guardedInterrupt() }

  /// Closes the port, restoring the settings it had before
  /// ``open(path:baudRate:exclusive:lockDirectory:)`` (a node without termios has none; closing
  /// a kernel GNSS device switches the receiver off), clearing TIOCEXCL (which belongs to the
  /// tty and would otherwise outlive this descriptor while anyone else holds the tty open),
  /// removing the lock file and, with the descriptor, letting the `flock` go.
  ///
  /// Reads and writes in flight on other threads are woken and throw
  /// ``SerialPortError/Reason/closed``; this waits for them to return before closing the
  /// descriptor (a write that is draining waits for its bytes to go out first). Idempotent and
  /// callable from any thread; later calls return once the first has finished. Errors are not
  /// reported: restoring settings on a device that went away fails with EIO by nature, and
  /// `close` is never retried (on Linux the descriptor is released even when it reports EINTR).
  public func close() {
    let io = io
    let saved = savedSettings
    let isExclusive = isExclusive
    let lockFile = lockFile
    lifetime.close {
      if let saved { try? io.descriptor.setAttributes(saved.attributes) }
      if isExclusive { _ = cserial_clear_exclusive(io.descriptor.rawValue) }
      // The lock file before the flock: a lock file is never left naming this process after
      // the device is free.
      if let lockFile { DeviceLock.releaseLockFile(lockFile) }
      try? io.descriptor.close()
      io.interruptSignal.close()
    }
  }
}

/// Modem control lines a port can raise or lower.
public struct ModemLines: OptionSet, Hashable, Sendable {
  public let rawValue: Int
  public init(rawValue: Int) { self.rawValue = rawValue }

  /// DTR.
  public static let dataTerminalReady = ModemLines(rawValue: 1 << 0)
  /// RTS.
  public static let requestToSend = ModemLines(rawValue: 1 << 1)
}

extension IOFailure {
  func serialPortError(
    device: String, operation: SerialPortError.Operation, timeout: Duration?, total: Int = 0
  ) -> SerialPortError {
    switch self {
    case .closed:
      SerialPortError(device: device, operation: operation, reason: .closed)
    case .disconnected(let cause):
      if case .errno(let errno) = cause {
        SerialPortError(
          device: device, operation: operation, reason: .disconnected(cause), errno: errno)
      } else {
        SerialPortError(device: device, operation: operation, reason: .disconnected(cause))
      }
    case .errno(let errno):
      SerialPortError(device: device, operation: operation, errno: errno)
    case .writeTimedOut(let written):
      SerialPortError(
        device: device, operation: operation,
        reason: .writeTimedOut(after: timeout ?? .zero, written: written, of: total))
    }
  }
}

extension SerialPort {
  /// Waits for data and reads what has arrived, up to `buffer.count` bytes.
  ///
  /// The thread sleeps in `poll` on the tty, the interrupt signal and the close signal, so it
  /// wakes only when there is something to do: data, a hang-up, ``interrupt()``, ``close()``,
  /// or the deadline. With a nil deadline no timer is armed at all. Bytes that arrived before
  /// a hang-up are returned first; the hang-up is reported by the next read.
  ///
  /// Only one thread may read at a time (see the threading contract on ``SerialPort``).
  ///
  /// - Parameters:
  ///   - buffer: where the bytes go; must not be empty.
  ///   - deadline: when to give up with ``ReadResult/timedOut``; nil waits forever.
  /// - Throws: ``SerialPortError`` with ``SerialPortError/Reason/disconnected(_:)`` when the
  ///   device went away (POLLHUP, POLLERR, `read` returning 0, EIO, ENXIO, ENODEV),
  ///   ``SerialPortError/Reason/closed`` when the port was closed.
  public func read(
    into buffer: UnsafeMutableRawBufferPointer, deadline: ContinuousClock.Instant?
  ) throws(SerialPortError) -> ReadResult {
    try guardedRead(into: buffer, deadline: deadline)
  }

  /// Writes every byte, then waits (`tcdrain`) until the driver has sent them on the line. On a
  /// node without termios (``isTerminal``) there is no drain: the GNSS core's `write(2)` hands
  /// the bytes to the receiver before it returns.
  ///
  /// When the driver's buffer is full the thread sleeps in `poll` for room, woken early only by
  /// ``close()``. `tcdrain` itself cannot be woken: at 4800 baud a full 4 KiB driver buffer
  /// takes about 8.5 s to go out. On a pty it returns at once.
  ///
  /// - Parameter timeout: how long to wait for room in the driver's buffer before throwing
  ///   ``SerialPortError/Reason/writeTimedOut(after:written:of:)``; nil waits forever.
  ///   The drain is not bounded by it.
  public func write(_ bytes: UnsafeRawBufferPointer, timeout: Duration? = nil)
    throws(SerialPortError)
  {
    let isTerminal = isTerminal
    try guardedWrite(bytes, timeout: timeout) { () throws(SerialPortError) in
      guard isTerminal else { return }
      do throws(Errno) {
        try io.descriptor.drain()
      } catch {
        throw SerialPortError(device: path, operation: .drain, errno: error)
      }
    }
  }
}
