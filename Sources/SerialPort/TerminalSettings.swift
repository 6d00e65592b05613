import CSerialShims
import Glibc

/// A tty's termios settings, as `tcgetattr` returns them: what ``SerialPort`` saves on open
/// and restores on close, and what a ``PseudoTerminal`` reports about its device side.
///
/// `@unchecked Sendable`: `termios` is a plain C struct of integers that Glibc does not mark
/// `Sendable`.
public struct TerminalSettings: Equatable, @unchecked Sendable {
  // termios is plain integers and a fixed byte array; @unchecked only because the importer
  // does not mark C structs Sendable.
  var attributes: termios

  init(_ attributes: termios) { self.attributes = attributes }

  /// The output speed, or nil for B0 (hang up) and speeds outside the C library's table.
  public var baudRate: BaudRate? {
    withUnsafePointer(to: attributes) { BaudRate(speed: cserial_output_speed($0)) }
  }

  /// Sets both input and output speed. Returns false, changing nothing, for a rate outside
  /// ``BaudRate/supported``.
  @discardableResult
  public mutating func setBaudRate(_ rate: BaudRate) -> Bool {
    guard let speed = rate.speed else { return false }
    cfsetispeed(&attributes, speed)
    cfsetospeed(&attributes, speed)
    return true
  }

  /// Raw 8N1 with the receiver on, no flow control, VMIN 1 and VTIME 0, as a ``SerialPort``
  /// configures its tty.
  public var isRaw8N1: Bool { withUnsafePointer(to: attributes) { cserial_is_raw_8n1($0) != 0 } }

  /// Makes these settings raw 8N1 (cfmakeraw plus CLOCAL, CREAD, no flow control, VMIN 1,
  /// VTIME 0), keeping the speed.
  public mutating func makeRaw8N1() { cserial_make_raw_8n1(&attributes) }

  /// Whether the line discipline is in canonical (line-by-line, cooked) mode with echo: the
  /// state a fresh tty starts in. Setting it to true turns on ICANON, ECHO and ISIG; to false
  /// turns them off.
  public var isCanonicalWithEcho: Bool {
    get { attributes.c_lflag & tcflag_t(ICANON | ECHO | ISIG) == tcflag_t(ICANON | ECHO | ISIG) }
    set {
      if newValue {
        attributes.c_lflag |= tcflag_t(ICANON | ECHO | ISIG)
      } else {
        attributes.c_lflag &= ~tcflag_t(ICANON | ECHO | ISIG)
      }
    }
  }

  /// c_cc[VMIN] and c_cc[VTIME].
  public var minimumReadCount: UInt8 { withUnsafePointer(to: attributes) { cserial_vmin($0) } }
  public var readTimeoutTenths: UInt8 { withUnsafePointer(to: attributes) { cserial_vtime($0) } }

  public static func == (lhs: TerminalSettings, rhs: TerminalSettings) -> Bool {
    withUnsafePointer(to: lhs.attributes) { a in
      withUnsafePointer(to: rhs.attributes) { b in cserial_termios_equal(a, b) != 0 }
    }
  }
}
