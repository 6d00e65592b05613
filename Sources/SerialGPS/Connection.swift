import Chipsets
import SerialPort
import TimeService

/// An open byte stream to a receiver: a serial port, or an in-process replay.
///
/// Threading contract: one thread reads (the receiver's reader thread), one task writes at a
/// time, `interrupt()` may be called from anywhere, and `close()` is called once, after the
/// reader has stopped.
public protocol ReceiverConnection: AnyObject, Sendable {
  /// Blocks until bytes arrive and returns how many were stored; returns 0 when woken by
  /// ``interrupt()``. Throws when the device is gone or unreadable.
  func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int
  /// Whether the bytes behind what the reader has read wait in a queue it can look into
  /// (``read(into:waitingAtMost:)``), as a serial port's do in the kernel while the reader
  /// falls behind: then an epoch with newer ones queued behind it is told from a live one and
  /// goes out as late (docs/receiver.md, "Late fixes"). False (the default) for sources that
  /// hand out whatever is due at once, such as a replay on a virtual clock: every epoch is live.
  var queuesBehindReader: Bool { get }
  /// Reads like ``read(into:)`` but waits at most `timeout` (zero: takes only what is waiting
  /// already) and returns 0 when nothing came or ``interrupt()`` was called. Only called when
  /// ``queuesBehindReader``; by default 0.
  func read(into buffer: UnsafeMutableRawBufferPointer, waitingAtMost timeout: Duration) throws
    -> Int
  /// Writes every byte (waiting for the line to drain).
  func write(_ bytes: [UInt8]) throws
  /// Wakes a blocked ``read(into:)``, which then returns 0.
  func interrupt()
  /// Releases the device. Called once, after reading stopped.
  func close()
  /// How bytes reach the reader, which decides how far the time service dates a byte back
  /// from the read that returned it: ``LineTiming/uart(baud:)`` at the port's rate for a UART
  /// (also behind a USB bridge), ``LineTiming/unpaced`` for native USB, a pty or a replay.
  /// Asked once, when reading starts. By default `unpaced`.
  var lineTiming: LineTiming { get }
  /// A duplicate of the port's descriptor, owned by the caller, for the time service's wait on
  /// the carrier-detect line (a PPS on DCD; docs/time.md); the caller closes it before the
  /// reader stops. `nil` when the connection has no modem lines. By default `nil`.
  func carrierDetectDescriptor() -> CInt?
  /// When the bytes the last ``read(into:)`` returned reached the system, if they were read
  /// from the device before that call: bytes heard while the baud rate was searched for,
  /// handed out first, dated by the search's read that brought them (`CLOCK_REALTIME`, the
  /// time of the last byte returned). `nil` when the call read them itself: the reader then
  /// takes the clock as it returns. Asked by the reader right after each read that returned
  /// bytes, when the receiver has a time service. By default `nil`.
  func timeOfBytesLastRead() -> PosixTime?
  /// Whether bytes have come from the device that no read has returned yet (in a serial
  /// port's kernel queue, or due on a replay's clock): asked when a command's listening window
  /// ends without a byte read, so that a reader running late does not make a talking receiver
  /// look silent. By default false: what was read tells.
  func hasUnreadInput() -> Bool
}

extension ReceiverConnection {
  public var queuesBehindReader: Bool { false }
  public func read(into buffer: UnsafeMutableRawBufferPointer, waitingAtMost timeout: Duration)
    throws -> Int
  { 0 }
  public var lineTiming: LineTiming { .unpaced }
  public func carrierDetectDescriptor() -> CInt? { nil }
  public func timeOfBytesLastRead() -> PosixTime? { nil }
  public func hasUnreadInput() -> Bool { false }
}

/// Opens connections to one receiver, as many times as the power policy asks.
public protocol ReceiverConnector: Sendable {
  /// The device as users know it (`/dev/ttyACM0`, a replay's name), for messages.
  var deviceName: String { get }
  /// Opens the device. Errors should say what went wrong and what to do.
  func connect() async throws -> any ReceiverConnection
  /// Opens the device that the driver will wake with `family`'s commands (`.nmea`: none). A
  /// receiver that is to be woken may be silent until then, so a connector should not wait
  /// to hear it first. By default the same as ``connect()``.
  func connect(wakingWith family: ChipsetFamily) async throws -> any ReceiverConnection
  /// What is known about the device before it says anything: its chipset from its USB IDs or
  /// a udev property, and how it is attached. `nil` when nothing is known.
  var chipsetHint: ChipsetHint? { get }
  /// Which receiver the next connection reaches, for a connector that may reach different
  /// ones over time (the first receiver found). What the driver learned about a receiver by
  /// listening to it (its chipset, which sentence ends its cycle) is forgotten when this
  /// changes, so that it is never applied to another one. `nil`: always the same receiver.
  var receiverIdentity: String? { get }
  /// What names this receiver across processes, for ``AwakeMarkers``: stable while the
  /// receiver stays attached, and never the tty path alone (another receiver may get it).
  /// `nil`: not marked. By default ``receiverIdentity``.
  var markerIdentity: String? { get }
  /// What names this receiver for ``PositionMemory``: the same for it across replugs and
  /// reboots (its USB serial number, its `/dev/serial/by-id` link, else the device as
  /// configured), when the aiding it keeps matters most. `nil`: the ``deviceName``. By default
  /// ``receiverIdentity``.
  var positionIdentity: String? { get }
  /// The process that owns the device now, if another one does
  /// (``SerialPort/SerialPort/owner(of:lockDirectory:)``), found without opening it: a
  /// receiver left awake by a killed process is not put to standby while someone owns it.
  /// By default `nil`.
  var deviceOwner: DeviceOwner? { get }
  /// Starts watching for the device to (re)appear; `appeared` is called each time it does,
  /// so the receiver retries at once instead of after its backoff. Called once, when the
  /// receiver starts.
  func startWatching(appeared: @escaping @Sendable () -> Void)
  /// Stops watching (the receiver shut down).
  func stopWatching()
  /// Ends a ``connect(wakingWith:)`` under way that may take seconds (a baud search) at
  /// once, and any later search: it throws. Called when the receiver shuts down, so that
  /// Ctrl-C during a search ends the process within a second. By default nothing.
  func interruptConnect()
}

extension ReceiverConnector {
  public func connect(wakingWith family: ChipsetFamily) async throws -> any ReceiverConnection {
    try await connect()
  }
  public var chipsetHint: ChipsetHint? { nil }
  public var receiverIdentity: String? { nil }
  public var markerIdentity: String? { receiverIdentity }
  public var positionIdentity: String? { receiverIdentity }
  public var deviceOwner: DeviceOwner? { nil }
  public func startWatching(appeared: @escaping @Sendable () -> Void) {}
  public func stopWatching() {}
  public func interruptConnect() {}
}

/// What a connector knows about the receiver behind it.
public struct ChipsetHint: Sendable, Hashable {
  /// The chipset family, when the device is known to be a GPS receiver of that family.
  public var family: ChipsetFamily?
  /// How the receiver is attached (its own USB port, or a UART perhaps behind a bridge).
  public var interface: HostInterface

  public init(family: ChipsetFamily?, interface: HostInterface) {
    self.family = family
    self.interface = interface
  }
}
