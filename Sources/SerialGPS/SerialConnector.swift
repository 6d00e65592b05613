import Chipsets
import Discovery
import Glibc
import NMEA
import POSIX
import SerialPort
import TimeService

/// Opens a receiver on a serial port (a tty), at a fixed baud rate or at the rate found by
/// listening, or on a kernel GNSS device (`/dev/gnss0`), which has no rate.
public struct SerialConnector: ReceiverConnector {
  /// How the baud rate is chosen.
  public enum BaudSetting: Sendable, Hashable {
    /// Listen at each candidate rate (never writing) until checksum-valid NMEA arrives; the
    /// rate found is remembered and tried first next time. A receiver that sends nothing (in
    /// standby) is opened at the remembered rate, else the first candidate, so that its wake-up
    /// commands can go out. USB CDC-ACM devices (`ttyACM`) ignore the rate: no search.
    /// Nor is there one on a kernel GNSS device (`/dev/gnss0`), which has no termios.
    case automatic(
      candidates: [BaudRate] = Autobaud.defaultCandidates,
      timePerRate: Duration = .milliseconds(1500))
    case fixed(BaudRate)
  }

  /// A port opened by ``openPort(path:baud:memory:ratelessPort:opened:)``, at the rate it is
  /// at now.
  public struct OpenedPort: Sendable {
    public let port: SerialPort
    /// What the search found, if it searched and found.
    public let detection: Autobaud.Detection?
    /// The rates listened to when the search ran and recognised nothing (the receiver is
    /// silent, perhaps in standby, or is no receiver); `nil` otherwise.
    public let unrecognisedRates: [BaudRate]?
    /// The rate the port is at: the fixed one, the one found, or (nothing recognised, or not
    /// searched) the remembered one, else the first candidate.
    public var rate: BaudRate { port.baudRate }
    /// Every byte received at the rate found: the receiver's first data, not to be lost.
    public var heard: [UInt8] { detection?.heard ?? [] }
    /// The reads that brought ``heard``, in order, each with the system time
    /// (`CLOCK_REALTIME`) taken as it returned: the time service dates the heard bytes by
    /// them, as it dates the reader's own reads (docs/time.md).
    public let heardReads: [HeardRead]
  }

  /// One read of the baud search: how many bytes it brought and when it returned.
  public struct HeardRead: Sendable, Hashable {
    public var count: Int
    /// `CLOCK_REALTIME` as the read returned.
    public var time: PosixTime

    public init(count: Int, time: PosixTime) {
      self.count = count
      self.time = time
    }
  }

  public let path: String
  public let baud: BaudSetting
  public let chipsetHint: ChipsetHint?
  private let memory: Locked<BaudRateMemory>
  /// The search under way, which ``interruptConnect()`` ends; shared by the connector's
  /// copies (and by a ``DiscoveringConnector``'s opens).
  private let searching: SearchInterruption

  /// - Parameters:
  ///   - hint: what is known of the device (its chipset from USB IDs); by default the
  ///     interface is guessed from the name: `ttyACM` is the receiver's own USB port.
  public init(path: String, baud: BaudSetting = .automatic(), hint: ChipsetHint? = nil) {
    self.init(path: path, baud: baud, hint: hint, memory: Locked(BaudRateMemory()))
  }

  /// A connector whose baud rates found by listening go into `memory`, shared with others (a
  /// ``DiscoveringConnector`` makes one per open).
  init(
    path: String, baud: BaudSetting, hint: ChipsetHint? = nil, memory: Locked<BaudRateMemory>,
    searching: SearchInterruption = SearchInterruption()
  ) {
    self.searching = searching
    self.path = path
    self.baud = baud
    self.chipsetHint = hint ?? ChipsetHint(family: nil, interface: HostInterface(devicePath: path))
    self.memory = memory
  }

  public var deviceName: String { path }

  /// The device node (links resolved) with its creation time: the same while the receiver
  /// stays plugged in, different once the node was made again (a replug, a reboot, another
  /// pty with the same number). `nil` when the device is missing.
  public var markerIdentity: String? {
    let node = resolvedPath(path) ?? path
    var status = stat()
    guard stat(node, &status) == 0 else { return nil }
    // Built from bytes: this runs on every open (BENCHMARKS.md, Footprint).
    var text = Array("tty ".utf8)
    text += node.utf8
    text.append(UInt8(ascii: " "))
    if status.st_ctim.tv_sec < 0 { text.append(UInt8(ascii: "-")) }
    DecimalFormatting.appendDigits(UInt64(status.st_ctim.tv_sec.magnitude), to: &text)
    text.append(UInt8(ascii: "."))
    DecimalFormatting.appendDigits(UInt64(status.st_ctim.tv_nsec.magnitude), to: &text)
    return String(decoding: text, as: UTF8.self)
  }

  /// The device as configured (`/dev/serial/by-id/…` when the user named it so): what stays
  /// the same across a replug or a reboot, when a receiver that lost its backup power needs
  /// its kept position most. Unlike ``markerIdentity``, no creation time.
  public var positionIdentity: String? { "tty " + path }

  /// The process that owns the device now (its lock file or `flock`), if any.
  public var deviceOwner: DeviceOwner? { SerialPort.owner(of: path) }

  /// Ends the baud search under way, and refuses later ones (``SerialPort/interrupt()``);
  /// a connect at a known rate is not affected.
  public func interruptConnect() { searching.interrupt() }

  public func connect() async throws -> any ReceiverConnection {
    try await connect(wakingWith: .nmea)
  }

  /// A receiver the driver wakes with commands is silent in standby, so listening for its
  /// rate first would cost the whole search (9 rates × 1.5 s) on every power-on: it is opened
  /// at the remembered rate, else its chipset's factory rate, and woken at once. Give a fixed
  /// rate for a receiver configured otherwise.
  public func connect(wakingWith family: ChipsetFamily) async throws -> any ReceiverConnection {
    let baud = Self.baud(self.baud, wakingWith: family, path: path, memory: memory.withLock { $0 })
    // The interface was told by the path when no hint named it.
    let interface = chipsetHint?.interface ?? HostInterface(devicePath: path)
    let searching = searching
    defer { searching.end() }
    let opened = try await Self.openPort(
      path: path, baud: baud, memory: memory, ratelessPort: interface == .usb
    ) { port, search in
      if search { try searching.begin(port) }
    }
    // The sentences that decided the rate are the receiver's first: not lost.
    return SerialConnection(
      port: opened.port, interface: interface, heard: opened.heard, heardReads: opened.heardReads)
  }

  /// Opens a receiver's port as `baud` says and leaves it open: at a fixed rate, or at the
  /// rate found by listening for NMEA sentences with valid checksums or UBX frames
  /// (``Autobaud``, ``NMEA/NMEAFramer/holdsChecksummedFrames(_:atLeast:)``), which
  /// `memory` remembers and tries first next time. The one baud search of the package: the
  /// connectors, `serialgps record` and `send` open ports through it, and so can an app that
  /// wants a receiver's raw port at its rate.
  ///
  /// Silence is not an error: the port stays at the remembered rate, else the first candidate,
  /// so that a receiver in standby can be woken there (``OpenedPort/unrecognisedRates``). Any
  /// other failure (the device vanished, ``SerialPort/interrupt()``) closes the port and
  /// throws, as does `opened`.
  ///
  /// - Parameters:
  ///   - ratelessPort: the receiver's own USB port, whose rate does not matter: opened at the
  ///     remembered rate or the first candidate without listening. By default told by the
  ///     path (``Chipsets/HostInterface/init(devicePath:)``).
  ///     A kernel GNSS device (``SerialPort/isTerminal`` false) is never searched either.
  ///   - opened: called once the port is open, before any listening, with whether a search
  ///     follows: where the caller keeps the port so that it can interrupt the search, or says
  ///     that something is about to take seconds.
  public static func openPort(
    path: String, baud: BaudSetting, memory: inout BaudRateMemory, ratelessPort: Bool? = nil,
    opened: (SerialPort, _ searching: Bool) throws -> Void = { _, _ in }
  ) throws -> OpenedPort {
    let initial: BaudRate
    switch baud {
    case .fixed(let rate): initial = rate
    case .automatic(let candidates, _):
      initial = memory.rate(for: path) ?? candidates.first ?? .b9600
    }
    let port = try SerialPort.open(path: path, baudRate: initial)
    // A kernel GNSS device has no rate of its own to search: its driver set the line.
    guard case .automatic(let candidates, let timePerRate) = baud, port.isTerminal,
      !(ratelessPort ?? (HostInterface(devicePath: path) == .usb))
    else {
      do { try opened(port, false) } catch {
        port.close()
        throw error
      }
      return OpenedPort(port: port, detection: nil, unrecognisedRates: nil, heardReads: [])
    }
    do {
      try opened(port, true)
      // The search's reads are timed as the reader's are: the clock as soon as each returns.
      var readTimes: [PosixTime] = []
      let detection = try Autobaud.detect(
        on: port, candidates: candidates, timePerRate: timePerRate, memory: &memory,
        readReturned: { _ in readTimes.append(.now()) },
        recognises: { NMEAFramer.holdsChecksummedFrames($0) })
      let heardReads = zip(detection.heardReads, readTimes.suffix(detection.heardReads.count))
        .map { HeardRead(count: $0, time: $1) }
      return OpenedPort(
        port: port, detection: detection, unrecognisedRates: nil, heardReads: heardReads)
    } catch let error as SerialPortError {
      // `detect` put the port back at the rate it was opened at.
      if case .nothingRecognised(let tried, _) = error.reason {
        return OpenedPort(port: port, detection: nil, unrecognisedRates: tried, heardReads: [])
      }
      port.close()
      throw error
    } catch {
      port.close()
      throw error
    }
  }

  /// ``openPort(path:baud:memory:ratelessPort:opened:)`` for the connectors: a search, which
  /// blocks for seconds, runs on a thread of its own; the rate found goes into `memory`,
  /// shared by every port a connector opens.
  static func openPort(
    path: String, baud: BaudSetting, memory: Locked<BaudRateMemory>, ratelessPort: Bool,
    opened: @escaping @Sendable (SerialPort, _ searching: Bool) throws -> Void = { _, _ in }
  ) async throws -> OpenedPort {
    @Sendable func run() -> Result<OpenedPort, any Error> {
      var known = memory.withLock { $0 }
      let result = Result {
        try openPort(
          path: path, baud: baud, memory: &known, ratelessPort: ratelessPort, opened: opened)
      }
      if case .success(let port) = result, let found = port.detection {
        memory.withLock { $0.remember(found.rate, for: path) }
      }
      return result
    }
    guard case .automatic = baud, !ratelessPort else { return try run().get() }
    return try await onOwnThread(run).get()
  }

  /// How to open a receiver that `family`'s commands will wake: an automatic setting becomes
  /// the rate remembered for `path`, else the family's factory rate, since a receiver in
  /// standby is silent and a search would only cost its time (9 rates × 1.5 s) before the
  /// wake-up. A fixed rate, and a family without commands, are kept as they are.
  public static func baud(
    _ setting: BaudSetting, wakingWith family: ChipsetFamily, path: String,
    memory: BaudRateMemory
  ) -> BaudSetting {
    guard case .automatic = setting, family.hasCommands else { return setting }
    return .fixed(memory.rate(for: path) ?? factoryRate(family))
  }

  /// The rate a family's receivers ship with on their UART.
  static func factoryRate(_ family: ChipsetFamily) -> BaudRate {
    BaudRate(rawValue: family.driver.factoryBaudRate)
  }

}

/// A ``ReceiverConnection`` over a ``SerialPort``.
final class SerialConnection: ReceiverConnection {
  let port: SerialPort
  let interface: HostInterface
  /// Bytes already read from the port (while listening for its rate), handed out first, with
  /// the reads that brought them.
  private let pending: Locked<Pending>

  private struct Pending {
    var bytes: [UInt8]
    /// In order, adding up to `bytes` (or empty: the bytes are not dated).
    var reads: [SerialConnector.HeardRead]
    /// Bytes of `reads[0]` already handed out.
    var handedOut = 0
    /// When the bytes the last ``read(into:)`` handed out arrived, if they were pending.
    var lastTime: PosixTime?
  }

  /// - Parameters:
  ///   - interface: by default told by the port's path.
  ///   - heard: bytes read while the rate was searched for, handed out first.
  ///   - heardReads: the reads that brought `heard`, with their times (adding up to it), or
  ///     none.
  init(
    port: SerialPort, interface: HostInterface? = nil, heard: [UInt8] = [],
    heardReads: [SerialConnector.HeardRead] = []
  ) {
    precondition(
      heardReads.isEmpty || heardReads.reduce(0, { $0 + $1.count }) == heard.count,
      "the heard reads bring every heard byte")
    let interface = interface ?? HostInterface(devicePath: port.path)
    self.port = port
    self.interface = interface
    pending = Locked(Pending(bytes: heard, reads: heardReads))
    heardTiming = heardReads.isEmpty ? .unpaced : Self.lineTiming(of: port, interface: interface)
  }

  /// The line the heard bytes came over (the port is at its final rate once they are heard).
  private let heardTiming: LineTiming

  func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
    try read(into: buffer, timeout: nil)
  }

  /// The kernel queues what the receiver sends while the reader is behind.
  var queuesBehindReader: Bool { true }

  func read(into buffer: UnsafeMutableRawBufferPointer, waitingAtMost timeout: Duration) throws
    -> Int
  {
    try read(into: buffer, timeout: timeout)
  }

  /// The heard bytes first, then the port, waiting at most `timeout` (nil: until bytes come).
  private func read(into buffer: UnsafeMutableRawBufferPointer, timeout: Duration?) throws -> Int {
    let taken = pending.withLock { pending -> Int in
      pending.lastTime = nil
      var count = min(buffer.count, pending.bytes.count)
      guard count > 0 else { return 0 }
      if let read = pending.reads.first {
        // One heard read at a time, each handed out with the time its last byte came.
        count = min(count, read.count - pending.handedOut)
        pending.lastTime = LineTiming.arrival(
          ofByteAt: pending.handedOut + count - 1, inReadOf: read.count, returnedAt: read.time,
          timing: heardTiming)
        pending.handedOut += count
        if pending.handedOut == read.count {
          pending.reads.removeFirst()
          pending.handedOut = 0
        }
      }
      pending.bytes.withUnsafeBytes {
        buffer.copyMemory(from: UnsafeRawBufferPointer(rebasing: $0[..<count]))
      }
      pending.bytes.removeFirst(count)
      return count
    }
    if taken > 0 { return taken }
    switch try port.read(into: buffer, timeout: timeout) {
    case .received(let count): return count
    case .timedOut, .interrupted: return 0
    }
  }

  /// The bytes heard during the baud search are dated by the search's reads.
  func timeOfBytesLastRead() -> PosixTime? {
    pending.withLock { $0.lastTime }
  }

  func write(_ bytes: [UInt8]) throws {
    try port.write(bytes, timeout: .seconds(5))
  }

  /// Heard bytes not handed out yet, or bytes in the kernel's queue. A port that cannot say
  /// (gone, or not a tty, pipe or socket) has nothing the reader will not report itself.
  func hasUnreadInput() -> Bool {
    if pending.withLock({ !$0.bytes.isEmpty }) { return true }
    return ((try? port.bytesWaiting()) ?? 0) > 0
  }

  func interrupt() { port.interrupt() }

  func close() { port.close() }

  /// A pty has no modem lines and no line rate; `ttyACM` is the receiver's own USB, whose
  /// rate setting the device ignores. Everything else is a UART at the port's rate.
  var lineTiming: LineTiming { Self.lineTiming(of: port, interface: interface) }

  private static func lineTiming(of port: SerialPort, interface: HostInterface) -> LineTiming {
    guard port.supportsModemLines, interface != .usb else {
      return .unpaced
    }
    return .uart(baud: port.baudRate.rawValue)
  }

  func carrierDetectDescriptor() -> CInt? {
    port.supportsModemLines ? port.duplicateDescriptor() : nil
  }
}

extension HostInterface {
  /// How the serial device at `devicePath` reaches the host: the package's one answer to "is
  /// this the receiver's own USB port?". `.usb` for the kernel's CDC-ACM driver (`cdc_acm`,
  /// whose nodes are `ttyACM…`): the receiver's own USB port, whose line rate the device
  /// ignores, with no UART timing and (u-blox) its own port number for commands. `.uart`
  /// otherwise: a UART, straight or behind a USB-serial bridge.
  ///
  /// Told by the node's name, links such as `/dev/serial/by-id/…` resolved. A device udev
  /// reported is asked with ``init(_:)`` instead.
  public init(devicePath: String) {
    let node = resolvedPath(devicePath) ?? devicePath
    self = node.contains(substring: "ttyACM") ? .usb : .uart
  }

  /// The same answer for a device udev reported: its kernel driver says it (`cdc_acm`), and
  /// the node's path is not touched (umockdev's `realpath()` corrupts memory for nodes that
  /// are ptys).
  public init(_ device: SerialDevice) {
    self = device.driver == "cdc_acm" ? .usb : .uart
  }
}

extension GPSReceiver {
  /// A receiver on the serial device at `path` (`/dev/ttyACM0`, `/dev/serial/by-id/…`).
  public convenience init(
    device path: String, baud: SerialConnector.BaudSetting = .automatic(),
    options: Options = Options(), clock: any DriverClock = SystemClock()
  ) {
    self.init(connector: SerialConnector(path: path, baud: baud), options: options, clock: clock)
  }
}

/// A connector's baud searches, which a shutdown ends at once
/// (``ReceiverConnector/interruptConnect()``): the port being searched is interrupted
/// (``SerialPort/SerialPort/interrupt()``), and no search starts after that.
final class SearchInterruption: Sendable {
  private let state = Locked<(port: SerialPort?, interrupted: Bool)>((nil, false))

  /// Notes that `port` is about to be searched; throws (the search is not to run) once
  /// interrupted.
  func begin(_ port: SerialPort) throws(SerialPortError) {
    let interrupted = state.withLock { state -> Bool in
      if !state.interrupted { state.port = port }
      return state.interrupted
    }
    if interrupted {
      throw SerialPortError(device: port.path, operation: .autobaud, reason: .interrupted)
    }
  }

  /// The search ended.
  func end() { state.withLock { $0.port = nil } }

  /// Whether ``interrupt()`` was called.
  var isInterrupted: Bool { state.withLock { $0.interrupted } }

  /// Ends the search under way, and refuses the later ones.
  func interrupt() {
    let port = state.withLock { state -> SerialPort? in
      state.interrupted = true
      return state.port
    }
    port?.interrupt()
  }
}
