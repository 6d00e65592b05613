import CSerialShims
import Glibc
import POSIX

/// A pseudo-terminal pair standing in for a receiver: ``devicePath`` (`/dev/pts/N`) is opened
/// with ``SerialPort/open(path:baudRate:exclusive:lockDirectory:)`` as if it were the receiver's tty, and
/// this object plays the receiver on the controller side, reading what the port writes and
/// writing what the receiver would send.
///
/// - The device side starts raw 8N1 at 9600 baud, so nothing written by the controller is
///   echoed back or mangled before a port configures it.
/// - This object keeps the device side open itself, so the pair lives across any number of
///   ports opening and closing it, and the controller never sees a hang-up.
/// - The baud rate on a pty is stored and reported (``deviceSettings()`` shows the rate the
///   port chose) but has no effect: bytes pass at memory speed whatever the rate. A simulator
///   that wants to mimic a receiver at a fixed rate checks ``deviceSettings()`` and sends
///   garbage at the wrong rate.
/// - ``hangUp()`` closes the controller: the device side is hung up, so a port blocked in
///   ``SerialPort/read(into:deadline:)`` wakes with
///   ``SerialPortError/Reason/disconnected(_:)``, as when a USB receiver is unplugged. Bytes
///   the port had not read yet are discarded by the kernel, as on a real unplug. The pair
///   cannot come back: a "replugged" receiver is a new `PseudoTerminal`, with a new
///   `/dev/pts/N`. Give both the same `symlink` to keep one stable name across the replug, as
///   `/dev/serial/by-id/…` does for a USB receiver.
///
/// Threading: as for ``SerialPort``, one reader and one writer at a time, ``interrupt()``
/// and ``hangUp()`` from anywhere.
public final class PseudoTerminal: GuardedTerminal, PolledTerminal {
  /// The device side's path, `/dev/pts/N`.
  public let devicePath: String
  /// A symbolic link to ``devicePath``, when one was asked for; removed by ``hangUp()``.
  public let symlinkPath: String?

  let io: PolledIO
  let device: FileDescriptor
  let lifetime: DescriptorGuard

  /// Opens a new pair (`openpty`).
  ///
  /// - Parameter symlink: a path at which to create a symbolic link to the device side. An
  ///   existing symbolic link there is replaced (a replugged receiver takes over the name);
  ///   any other file there is an error.
  public init(symlink: String? = nil) throws(SerialPortError) {
    let interruptSignal: EventSignal
    let closeSignal: EventSignal
    do {
      interruptSignal = try EventSignal.make()
    } catch {
      throw SerialPortError(device: "a new pty", operation: .open, errno: error)
    }
    do {
      closeSignal = try EventSignal.make()
    } catch {
      interruptSignal.close()
      throw SerialPortError(device: "a new pty", operation: .open, errno: error)
    }
    var controller: CInt = -1
    var device: CInt = -1
    var path = [CChar](repeating: 0, count: 128)
    if cserial_openpty(&controller, &device, &path, path.count) != 0 {
      let error = Errno.current
      interruptSignal.close()
      closeSignal.close()
      throw SerialPortError(device: "a new pty", operation: .open, errno: error)
    }
    let devicePath = String(
      decoding: path.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    if let symlink {
      do throws(Errno) {
        try Self.link(symlink, to: devicePath)
      } catch {
        // Nothing is stored yet, so no deinit runs to close them again.
        try? FileDescriptor(rawValue: controller).close()
        try? FileDescriptor(rawValue: device).close()
        interruptSignal.close()
        closeSignal.close()
        throw SerialPortError(device: symlink, operation: .open, errno: error)
      }
    }
    self.devicePath = devicePath
    self.symlinkPath = symlink
    self.io = PolledIO(
      descriptor: FileDescriptor(rawValue: controller), interruptSignal: interruptSignal,
      closeSignal: closeSignal)
    self.device = FileDescriptor(rawValue: device)
    self.lifetime = DescriptorGuard(closeSignal: closeSignal)
  }

  deinit {
    hangUp()
  }

  var errorPath: String { devicePath }

  /// Whether ``hangUp()`` has been called.
  public var isHungUp: Bool { !lifetime.isOpen }

  /// Reads what the port wrote, waiting until `deadline` (nil: forever); see
  /// ``SerialPort/read(into:deadline:)``.
  public func read(
    into buffer: UnsafeMutableRawBufferPointer, deadline: ContinuousClock.Instant?
  ) throws(SerialPortError) -> ReadResult {
    try guardedRead(into: buffer, deadline: deadline)
  }

  /// Reads up to `maximumCount` bytes the port wrote, waiting at most `timeout`; empty when the
  /// timeout passed or ``interrupt()`` was called.
  public func read(upTo maximumCount: Int = 4096, timeout: Duration?) throws(SerialPortError)
    -> [UInt8]
  {
    var bytes = [UInt8](repeating: 0, count: maximumCount)
    let result = bytes.withUnsafeMutableBytes { buffer in
      Result { () throws(SerialPortError) in try read(into: buffer, timeout: timeout) }
    }
    guard case .received(let count) = try result.get() else { return [] }
    bytes.removeSubrange(count...)
    return bytes
  }

  /// Sends bytes to the port: every byte, waiting in `poll` while the pty's buffer is full
  /// (the port is not reading). Throws ``SerialPortError/Reason/writeTimedOut(after:written:of:)``
  /// after `timeout` (nil: never).
  public func write(_ bytes: UnsafeRawBufferPointer, timeout: Duration? = nil)
    throws(SerialPortError)
  {
    try guardedWrite(bytes, timeout: timeout)
  }

  /// Ends the current or next ``read(into:deadline:)`` with ``ReadResult/interrupted``.
  public func interrupt() { guardedInterrupt() }

  /// The device side's settings as the port left them (the controller reads the device side's
  /// termios): its rate, whether it is raw.
  public func deviceSettings() throws(SerialPortError) -> TerminalSettings {
    try withOpenDescriptors(.configure) { () throws(SerialPortError) in
      do throws(Errno) {
        return TerminalSettings(try io.descriptor.attributes())
      } catch {
        throw SerialPortError(device: devicePath, operation: .configure, errno: error)
      }
    }
  }

  /// Changes the device side's settings, e.g. to see that a port restores them on close.
  public func setDeviceSettings(_ settings: TerminalSettings) throws(SerialPortError) {
    try withOpenDescriptors(.configure) { () throws(SerialPortError) in
      do throws(Errno) {
        try io.descriptor.setAttributes(settings.attributes)
      } catch {
        throw SerialPortError(device: devicePath, operation: .configure, errno: error)
      }
    }
  }

  /// Closes the controller and this object's hold on the device side: to a port that has the
  /// device open, the receiver was unplugged. Removes ``symlinkPath`` if it still points here.
  /// Reads and writes in flight here are woken and throw ``SerialPortError/Reason/closed``.
  /// Idempotent; callable from any thread.
  public func hangUp() {
    let io = io
    let device = device
    let devicePath = devicePath
    let symlinkPath = symlinkPath
    lifetime.close {
      if let symlinkPath, Self.linkTarget(symlinkPath) == devicePath { unlink(symlinkPath) }
      try? io.descriptor.close()
      try? device.close()
      io.interruptSignal.close()
    }
  }

  private static func link(_ link: String, to target: String) throws(Errno) {
    var status = stat()
    if lstat(link, &status) == 0 {
      guard status.st_mode & S_IFMT == S_IFLNK else { throw Errno(rawValue: EEXIST) }
      _ = try valueOrErrno(unlink(link))
    }
    _ = try valueOrErrno(symlink(target, link))
  }

  private static func linkTarget(_ link: String) -> String? {
    var buffer = [CChar](repeating: 0, count: 4096)
    let count = readlink(link, &buffer, buffer.count - 1)
    guard count >= 0 else { return nil }
    return String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
  }
}
