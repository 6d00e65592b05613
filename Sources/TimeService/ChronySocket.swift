import CTimeShims
import Glibc
import POSIX
import SerialPort

/// Sends samples to chrony's SOCK refclock: `struct sock_sample` datagrams to the Unix socket
/// chronyd created (`refclock SOCK /run/chrony.clk.ttyUSB0.sock`).
///
/// chrony not running, not yet started or restarting is never an error: a sample that finds
/// no socket is counted and dropped, and the next sample tries again; a restarted chronyd
/// (which binds a new socket at the same path) is reconnected at once. Sending never blocks:
/// a chronyd that does not read loses samples, counted, rather than stopping the caller.
///
/// Not thread-safe: one thread (the reader for serial time, the PPS thread for pulses) owns
/// each.
public final class ChronySocket {
  /// The socket's path.
  public let path: String

  // Closed when it is replaced, set to nil, or the writer goes away.
  private var socket: OwnedDescriptor?

  /// Samples delivered to chrony.
  public private(set) var sent = 0
  /// Samples dropped because no chronyd listened at ``path``.
  public private(set) var noListener = 0
  /// Samples dropped for another reason (chronyd's queue full, an unexpected error).
  public private(set) var failed = 0
  /// The last error that dropped a sample.
  public private(set) var lastError: Errno?

  /// A writer for the socket at `path`. Nothing is opened until the first sample.
  public init(path: String) {
    self.path = path
  }

  /// gpsd's path for a receiver's serial time: `/run/chrony.clk.<tty>.sock` when running as
  /// root, else `/tmp/chrony.clk.<tty>.sock`; `<tty>` is the last part of the device's path.
  public static func serialTimePath(forDevice device: String) -> String {
    directory + "/chrony.clk." + lastComponent(device) + ".sock"
  }

  /// gpsd's path for a receiver's PPS: `/run/chrony.<tty>.sock` (root) or
  /// `/tmp/chrony.<tty>.sock`.
  public static func ppsPath(forDevice device: String) -> String {
    directory + "/chrony." + lastComponent(device) + ".sock"
  }

  private static var directory: String { System.isRoot ? "/run" : "/tmp" }

  private static func lastComponent(_ path: String) -> String {
    String(path.split(separator: "/").last ?? Substring(path))
  }

  /// What can be told of a socket path before any sample is sent.
  public enum PathCheck: Sendable, Hashable {
    /// chronyd's socket, or nothing yet in a directory that exists (chronyd not started).
    case usable
    /// It may work later: the directory does not exist yet (chronyd makes `/run/chrony` when
    /// it starts). The text says so, for the log.
    case notYet(String)
    /// It cannot work as it is: not a socket, a path too long for a socket address, a socket
    /// this process may not write to. The text says what to do.
    case unusable(String)
  }

  /// Checks `path` as chronyd's refclock SOCK path: what a sample would find there, said
  /// before the first sample rather than counted after it.
  public static func check(path: String) -> PathCheck {
    let capacity = System.socketPathCapacity
    let length = path.utf8.count
    guard length < capacity else {
      return .unusable(
        "the chrony socket path \(path) is \(length) bytes, longer than a Unix socket address "
          + "holds (\(capacity - 1)): chronyd cannot bind it either; choose a shorter path in "
          + "both places")
    }
    switch System.fileKind(path) {
    case .success(.socket):
      guard System.mayWrite(path) else {
        return .unusable(
          "this process may not write to chronyd's socket \(path) (chronyd makes it as root "
            + "with mode 0755): run serve as root, or give the socket to serve's user after "
            + "chronyd starts")
      }
      return .usable
    case .success(let kind):
      return .unusable(
        "\(path) is \(kind), not chronyd's socket: give the path that chronyd's refclock SOCK "
          + "line names (chronyd makes the socket when it starts)")
    case .failure(let error)
    where error == .noSuchFileOrDirectory || error == Errno(rawValue: ENOTDIR):
      let directory = Self.directory(of: path)
      switch System.fileKind(directory) {
      case .success(.directory):
        return .usable  // chronyd not started yet: it makes the socket
      case .success(let kind):
        return .unusable(
          "the chrony socket \(path) cannot be made: \(directory) is \(kind), not a directory")
      case .failure(let error) where error == .noSuchFileOrDirectory:
        return .notYet(
          "the directory \(directory) of the chrony socket \(path) does not exist (yet): "
            + "samples are counted until chronyd makes the socket there; check the path if "
            + "chronyd's refclock SOCK line names another")
      case .failure(let error):
        return .unusable("cannot look at \(directory) for the chrony socket \(path): \(error)")
      }
    case .failure(let error):
      return .unusable("cannot look at the chrony socket \(path): \(error)")
    }
  }

  private static func directory(of path: String) -> String {
    guard let slash = path.utf8.lastIndex(of: UInt8(ascii: "/")) else { return "." }
    let directory = String(path[..<slash])
    return directory.isEmpty ? "/" : directory
  }

  /// What became of one sample.
  public enum Outcome: Sendable, Hashable {
    case sent
    /// No chronyd at the path (not running, or restarting).
    case noListener
    /// Dropped for another reason.
    case failed(Errno)
  }

  /// Sends a sample: at system time `clock`, true time was `real`; `leap` is chrony's leap
  /// field (0 none, 1 insert, 2 delete). Like gpsd, `pulse` is 0 even for PPS samples:
  /// they carry the whole second.
  @discardableResult
  public func send(real: PosixTime, clock: PosixTime, leap: Int32 = 0) -> Outcome {
    // chrony takes a timeval: the offset is measured from the microsecond it can name.
    let stamp = clock.truncatedToMicroseconds
    var sample = ctime_sock_sample()
    sample.tv.tv_sec = .init(stamp.seconds)
    sample.tv.tv_usec = .init(stamp.nanoseconds / 1000)
    sample.offset = (real - stamp).inSeconds
    sample.pulse = 0
    sample.leap = leap
    sample._pad = 0
    sample.magic = Int32(CTIME_SOCK_MAGIC)
    let outcome = withUnsafeBytes(of: &sample) { transmit($0) }
    switch outcome {
    case .sent: sent += 1
    case .noListener: noListener += 1
    case .failed(let error):
      failed += 1
      lastError = error
    }
    return outcome
  }

  private func transmit(_ datagram: UnsafeRawBufferPointer) -> Outcome {
    // A socket connected to an earlier chronyd is refused once that chronyd has gone: connect
    // again, to whoever listens at the path now, and try once more.
    for attempt in 0..<2 {
      let descriptor: CInt
      if let open = socket?.rawValue {
        descriptor = open
      } else {
        do {
          let connected = try System.connectedDatagramSocket(to: path)
          descriptor = connected.rawValue
          socket = consume connected
        } catch {
          // No socket file (chronyd not started), or nobody bound to it (chronyd gone).
          if error == .noSuchFileOrDirectory || error == Errno(rawValue: ECONNREFUSED) {
            return .noListener
          }
          return .failed(error)
        }
      }
      do {
        try System.send(descriptor, datagram)
        return .sent
      } catch {
        if error == .wouldBlock { return .failed(error) }  // chronyd's queue is full
        socket = nil  // closes it
        if attempt == 1 || !Self.meansPeerGone(error) { return .failed(error) }
      }
    }
    return .noListener
  }

  private static func meansPeerGone(_ error: Errno) -> Bool {
    [ECONNREFUSED, ENOTCONN, ECONNRESET, ENOENT, EPIPE].contains(error.rawValue)
  }
}
