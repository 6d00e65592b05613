import CSerialShims
import Glibc

/// A line speed in bits per second. Only the rates in ``supported`` can be set: the standard
/// rates GPS receivers use, from 4800 (the NMEA 0183 default) to 921600.
public struct BaudRate: RawRepresentable, Hashable, Comparable, Sendable,
  ExpressibleByIntegerLiteral, CustomStringConvertible
{
  /// Bits per second.
  public let rawValue: Int

  public init(rawValue: Int) { self.rawValue = rawValue }
  public init(_ bitsPerSecond: Int) { self.rawValue = bitsPerSecond }
  public init(integerLiteral value: Int) { self.rawValue = value }

  public static let b4800: BaudRate = 4800
  public static let b9600: BaudRate = 9600
  public static let b19200: BaudRate = 19200
  public static let b38400: BaudRate = 38400
  public static let b57600: BaudRate = 57600
  public static let b115200: BaudRate = 115_200
  public static let b230400: BaudRate = 230_400
  public static let b460800: BaudRate = 460_800
  public static let b921600: BaudRate = 921_600

  /// Every rate a ``SerialPort`` accepts, slowest first.
  public static let supported: [BaudRate] = [
    .b4800, .b9600, .b19200, .b38400, .b57600, .b115200, .b230400, .b460800, .b921600,
  ]

  /// Whether ``SerialPort`` can set this rate.
  public var isSupported: Bool { Self.supported.contains(self) }

  /// The termios speed constant, or nil for a rate outside ``supported``.
  var speed: speed_t? {
    guard isSupported else { return nil }
    let speed = cserial_speed_for_rate(rawValue)
    return speed == speed_t(B0) ? nil : speed
  }

  /// The rate a termios speed constant stands for, or nil for B0 or an unknown constant.
  init?(speed: speed_t) {
    let rate = cserial_rate_for_speed(speed)
    guard rate > 0 else { return nil }
    self.rawValue = rate
  }

  public static func < (lhs: BaudRate, rhs: BaudRate) -> Bool { lhs.rawValue < rhs.rawValue }

  public var description: String { String(rawValue) }
}
