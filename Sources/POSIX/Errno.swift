import CPOSIX
import Glibc

/// An error number, as `errno` reports it: a value type, so it can be stored, compared and
/// carried inside an error (`SerialPortError`, the server's socket errors) instead of being read
/// from a thread-local at the wrong moment.
///
/// Public because `SerialPortError` carries it; every message the package builds from an errno
/// uses ``description`` ("Permission denied (EACCES)"), never `strerror` by hand.
public struct Errno: RawRepresentable, Error, Hashable, Sendable, CustomStringConvertible {
  public let rawValue: CInt

  public init(rawValue: CInt) { self.rawValue = rawValue }

  /// The calling thread's `errno`, read right after a failed call.
  @usableFromInline package static var current: Errno { Errno(rawValue: Glibc.errno) }

  /// The symbolic name (`"EACCES"`), or `"errno N"` for a number the C library does not name.
  public var name: String {
    guard let name = cposix_errno_name(rawValue) else { return "errno \(rawValue)" }
    return String(cString: name)
  }

  /// The C library's message (`strerror`), e.g. "Permission denied".
  public var message: String {
    withUnsafeTemporaryAllocation(of: CChar.self, capacity: 256) { buffer in
      cposix_errno_message(rawValue, buffer.baseAddress!, buffer.count)
      return String(cString: buffer.baseAddress!)
    }
  }

  /// The message followed by the name: "Permission denied (EACCES)".
  public var description: String { "\(message) (\(name))" }

  public static let notPermitted = Errno(rawValue: EPERM)
  public static let noSuchFileOrDirectory = Errno(rawValue: ENOENT)
  public static let interrupted = Errno(rawValue: EINTR)
  public static let ioError = Errno(rawValue: EIO)
  public static let noSuchDeviceOrAddress = Errno(rawValue: ENXIO)
  public static let badFileDescriptor = Errno(rawValue: EBADF)
  public static let wouldBlock = Errno(rawValue: EAGAIN)
  public static let permissionDenied = Errno(rawValue: EACCES)
  public static let deviceBusy = Errno(rawValue: EBUSY)
  public static let noSuchDevice = Errno(rawValue: ENODEV)
  public static let notDirectory = Errno(rawValue: ENOTDIR)
  public static let invalidArgument = Errno(rawValue: EINVAL)
  public static let notATerminal = Errno(rawValue: ENOTTY)
  public static let notSupported = Errno(rawValue: EOPNOTSUPP)
  public static let tooManyOpenFiles = Errno(rawValue: EMFILE)
  public static let readOnlyFileSystem = Errno(rawValue: EROFS)
  public static let brokenPipe = Errno(rawValue: EPIPE)
  public static let noSpace = Errno(rawValue: ENOSPC)
  public static let isDirectory = Errno(rawValue: EISDIR)
  public static let addressInUse = Errno(rawValue: EADDRINUSE)
}
