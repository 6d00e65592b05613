import Chipsets
import Glibc
import NMEA
import POSIX
import SerialPort
import TimeService

/// Opens a receiver on a serial port (a tty), at a fixed baud rate or at the rate found by
/// listening.
public struct SerialConnector: ReceiverConnector {
  /// How the baud rate is chosen.
  public enum BaudSetting: Sendable, Hashable {
    /// Listen at each candidate rate (never writing) until checksum-valid NMEA arrives; the
    /// rate found is remembered and tried first next time. A receiver that sends nothing (in
    /// standby) is opened at the remembered rate, else the first candidate, so that its wake-up
    /// commands can go out. USB CDC-ACM devices (`ttyACM`) ignore the rate: no search.
    case automatic(
      candidates: [BaudRate] = Autobaud.defaultCandidates,
      timePerRate: Duration = .milliseconds(1500))
    case fixed(BaudRate)
  }

  public let path: String
  public let baud: BaudSetting
  public let chipsetHint: ChipsetHint?
  private let memory: Locked<BaudRateMemory>

  /// - Parameters:
  ///   - hint: what is known of the device (its chipset from USB IDs); by default the
  ///     interface is guessed from the name: `ttyACM` is the receiver's own USB port.
  public init(path: String, baud: BaudSetting = .automatic(), hint: ChipsetHint? = nil) {
    self.init(path: path, baud: baud, hint: hint, memory: Locked(BaudRateMemory()))
  }

  /// A connector whose baud rates found by listening go into `memory`, shared with others (a
  /// ``DiscoveringConnector`` makes one per open).
  init(
    path: String, baud: BaudSetting, hint: ChipsetHint? = nil, memory: Locked<BaudRateMemory>
  ) {
    self.path = path
    self.baud = baud
    self.chipsetHint = hint ?? ChipsetHint(family: nil, interface: Self.guessInterface(path))
    self.memory = memory
  }

  public var deviceName: String { path }

  /// The device node (links resolved) with its creation time: the same while the receiver
  /// stays plugged in, different once the node was made again (a replug, a reboot, another
  /// pty with the same number). `nil` when the device is missing.
  public var markerIdentity: String? {
    let node = Self.resolvedPath(path)
    var status = stat()
    guard stat(node, &status) == 0 else { return nil }
    return "tty \(node) \(status.st_ctim.tv_sec).\(status.st_ctim.tv_nsec)"
  }

  /// `ttyACM` devices are receivers' own USB ports; links (`/dev/serial/by-id/…`) are
  /// resolved first.
  static func guessInterface(_ path: String) -> HostInterface {
    resolvedPath(path).contains(substring: "ttyACM") ? .usb : .uart
  }

  static func resolvedPath(_ path: String) -> String {
    guard let resolved = realpath(path, nil) else { return path }
    defer { free(resolved) }
    return String(cString: resolved)
  }

  public func connect() async throws -> any ReceiverConnection {
    try await connect(wakingWith: .nmea)
  }

  /// A receiver the driver wakes with commands is silent in standby, so listening for its
  /// rate first would cost the whole search (9 rates × 1.5 s) on every power-on: it is opened
  /// at the remembered rate, else its chipset's factory rate, and woken at once. Give a fixed
  /// rate for a receiver configured otherwise.
  public func connect(wakingWith family: ChipsetFamily) async throws -> any ReceiverConnection {
    if case .automatic = baud, family.hasCommands {
      let rate = memory.withLock { $0.rate(for: path) } ?? Self.factoryRate(family)
      return SerialConnection(port: try SerialPort.open(path: path, baudRate: rate))
    }
    switch baud {
    case .fixed(let rate):
      return SerialConnection(port: try SerialPort.open(path: path, baudRate: rate))
    case .automatic(let candidates, let timePerRate):
      let remembered = memory.withLock { $0.rate(for: path) }
      let initial = remembered ?? candidates.first ?? .b9600
      let port = try SerialPort.open(path: path, baudRate: initial)
      // The interface was guessed from the resolved path when no hint named it.
      if chipsetHint?.interface == .usb { return SerialConnection(port: port) }
      let memory = self.memory
      let found: Result<Autobaud.Detection, SerialPortError> = await onOwnThread {
        var known = memory.withLock { $0 }
        let result = Result { () throws(SerialPortError) in
          try Autobaud.detect(
            on: port, candidates: candidates, timePerRate: timePerRate, memory: &known,
            recognises: { NMEAFramer.holdsChecksummedSentences($0) })
        }
        memory.withLock { $0 = known }
        return result
      }
      switch found {
      case .success(let detection):
        // The sentences that decided the rate are the receiver's first: not lost.
        return SerialConnection(port: port, heard: detection.heard)
      case .failure(let error) where error.isDisconnected:
        port.close()
        throw error
      case .failure:
        // Silent: perhaps in standby. Stay at the initial rate so the wake-up goes out.
        try? port.setBaudRate(initial)
      }
      return SerialConnection(port: port)
    }
  }

  /// The rate a family's receivers ship with on their UART.
  static func factoryRate(_ family: ChipsetFamily) -> BaudRate {
    switch family {
    case .sirf: return .b4800
    case .ublox, .mediatek, .nmea: return .b9600
    }
  }

}

/// A ``ReceiverConnection`` over a ``SerialPort``.
final class SerialConnection: ReceiverConnection {
  let port: SerialPort
  /// Bytes already read from the port (while listening for its rate), handed out first.
  private let pending: Locked<[UInt8]>

  init(port: SerialPort, heard: [UInt8] = []) {
    self.port = port
    pending = Locked(heard)
  }

  func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
    let taken = pending.withLock { pending -> Int in
      let count = min(buffer.count, pending.count)
      guard count > 0 else { return 0 }
      pending.withUnsafeBytes {
        buffer.copyMemory(from: UnsafeRawBufferPointer(rebasing: $0[..<count]))
      }
      pending.removeFirst(count)
      return count
    }
    if taken > 0 { return taken }
    switch try port.read(into: buffer, timeout: nil) {
    case .received(let count): return count
    case .timedOut, .interrupted: return 0
    }
  }

  func write(_ bytes: [UInt8]) throws {
    try port.write(bytes, timeout: .seconds(5))
  }

  func interrupt() { port.interrupt() }

  func close() { port.close() }

  /// A pty has no modem lines and no line rate; `ttyACM` is the receiver's own USB, whose
  /// rate setting the device ignores. Everything else is a UART at the port's rate.
  var lineTiming: LineTiming {
    guard port.supportsModemLines, SerialConnector.guessInterface(port.path) != .usb else {
      return .unpaced
    }
    return .uart(baud: port.baudRate.rawValue)
  }

  func carrierDetectDescriptor() -> CInt? {
    port.supportsModemLines ? port.duplicateDescriptor() : nil
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
