import CSerialShims
import CTimeShims
import Glibc
import POSIX
import SerialPort

// Every system call of the time service, in one file, on the shared POSIX module's `Errno`
// and its one EINTR retry. Nothing here holds a lock.

extension PosixTime {
  /// The system clock now (`CLOCK_REALTIME`, as ``SystemWallClock`` reads it).
  public static func now() -> PosixTime {
    let (seconds, nanoseconds) = SystemWallClock().now().secondsAndNanoseconds
    return PosixTime(seconds: seconds, nanoseconds: nanoseconds)
  }
}

extension System {
  /// `CLOCK_REALTIME − CLOCK_MONOTONIC` now: constant while the system clock runs or is slewed
  /// (slewing moves both clocks), changed by every step of it (`clock_settime`, chronyd's
  /// `makestep`, `date -s`). Read between two monotonic readings, again when they lie more
  /// than 20 µs apart (the thread was preempted between them), so it is good to about that.
  static func systemClockOffset() -> Duration {
    var best: (spread: Duration, offset: Duration)?
    for _ in 0..<4 {
      var before = Glibc.timespec()
      var realtime = Glibc.timespec()
      var after = Glibc.timespec()
      clock_gettime(CLOCK_MONOTONIC, &before)
      // Not through SystemWallClock: the three readings must come back to back.
      clock_gettime(CLOCK_REALTIME, &realtime)
      clock_gettime(CLOCK_MONOTONIC, &after)
      func duration(_ time: Glibc.timespec) -> Duration {
        .seconds(Int64(time.tv_sec)) + .nanoseconds(Int64(time.tv_nsec))
      }
      let spread = duration(after) - duration(before)
      let offset = duration(realtime) - (duration(before) + spread / 2)
      if best == nil || spread < best!.spread { best = (spread, offset) }
      if spread <= Duration.microseconds(20) { break }
    }
    return best!.offset
  }
}

enum System {
  /// The calling thread's errno.
  static var errno: Errno { Errno(rawValue: Glibc.errno) }

  /// Runs `body` until it does not fail with EINTR; -1 becomes the errno it left.
  static func retrying(_ body: () -> CInt) throws(Errno) -> CInt {
    try retryingOnInterrupt(body)
  }

  /// Whether the process runs as root (effective user 0).
  static var isRoot: Bool { geteuid() == 0 }

  static func open(_ path: String, _ flags: CInt) throws(Errno) -> CInt {
    try retrying { Glibc.open(path, flags | O_CLOEXEC) }
  }

  /// The contents of a small file (a sysfs attribute), or `nil` when it cannot be read.
  static func readSmallFile(_ path: String) -> String? {
    guard let bytes = try? FileDescriptor.contents(of: path) else { return nil }
    return String(decoding: bytes.prefix(4096), as: UTF8.self)
  }

  /// The names in a directory (without `.` and `..`), or `[]` when it cannot be read.
  static func directoryEntries(_ path: String) -> [String] {
    guard let directory = opendir(path) else { return [] }
    defer { closedir(directory) }
    var names: [String] = []
    while let entry = readdir(directory) {
      let name = withUnsafeBytes(of: entry.pointee.d_name) { bytes in
        String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
      }
      if name != "." && name != ".." { names.append(name) }
    }
    return names.sorted()
  }

  /// The path with every symbolic link resolved, or `nil` when it does not exist.
  static func resolvedPath(_ path: String) -> String? {
    guard let resolved = realpath(path, nil) else { return nil }
    defer { free(resolved) }
    return String(cString: resolved)
  }

  // MARK: Processes

  /// The command name of a running process (`/proc/PID/comm`, readable for every process),
  /// or `nil` when it has gone.
  static func command(ofProcess process: Int32) -> String? {
    guard let text = readSmallFile("/proc/\(process)/comm") else { return nil }
    let name = text.split(separator: "\n").first.map(String.init) ?? ""
    return name.isEmpty ? nil : name
  }

  /// The processes that have each of the System V segments named `keys` mapped, as far as
  /// this process may read their `/proc/PID/maps` (all of them as root; its own user's
  /// otherwise), where an attached segment is the file `/SYSV<key in 8 hex digits>`.
  static func processesMapping(keys: Set<Int32>) -> [Int32: Set<Int32>] {
    var names: [String: Int32] = [:]
    for key in keys {
      let hex = String(UInt32(bitPattern: key), radix: 16)
      names["/SYSV" + String(repeating: "0", count: max(0, 8 - hex.count)) + hex] = key
    }
    var found: [Int32: Set<Int32>] = [:]
    for entry in directoryEntries("/proc") {
      guard let process = Int32(entry),
        let maps = try? FileDescriptor.contents(of: "/proc/\(entry)/maps")
      else { continue }
      var start = 0
      // Each line ends with the mapped file's path; a segment's is "/SYSV4e545030 (deleted)".
      for index in maps.indices where maps[index] == UInt8(ascii: "\n") {
        defer { start = index + 1 }
        guard let slash = maps[start..<index].firstIndex(of: UInt8(ascii: "/")),
          index - slash >= 13, maps[slash + 1] == UInt8(ascii: "S")
        else { continue }
        let name = String(decoding: maps[slash..<(slash + 13)], as: UTF8.self)
        if let key = names[name] { found[key, default: []].insert(process) }
      }
    }
    return found
  }

  // MARK: Files

  /// What kind of file a path names, for messages.
  enum FileKind: Sendable, Hashable, CustomStringConvertible {
    case socket, directory, regular, other

    var description: String {
      switch self {
      case .socket: return "a socket"
      case .directory: return "a directory"
      case .regular: return "a regular file"
      case .other: return "neither a socket nor a directory"
      }
    }
  }

  /// The kind of file at `path`, symbolic links followed.
  static func fileKind(_ path: String) -> Result<FileKind, Errno> {
    var status = stat()
    guard stat(path, &status) == 0 else { return .failure(errno) }
    switch status.st_mode & S_IFMT {
    case S_IFSOCK: return .success(.socket)
    case S_IFDIR: return .success(.directory)
    case S_IFREG: return .success(.regular)
    default: return .success(.other)
    }
  }

  /// Whether this process (its effective user) may write to `path`, as `connect` to a Unix
  /// socket needs.
  static func mayWrite(_ path: String) -> Bool {
    faccessat(AT_FDCWD, path, W_OK, AT_EACCESS) == 0
  }

  /// The bytes a Unix socket address holds, with the terminating zero.
  static var socketPathCapacity: Int { UnixSocketAddress.pathCapacity }

  // MARK: Unix datagram sockets

  /// A close-on-exec, non-blocking Unix datagram socket connected to `path`; closed here when
  /// the connection fails.
  static func connectedDatagramSocket(to path: String) throws(Errno) -> OwnedDescriptor {
    // Too long a path is said before a socket is made.
    guard path.utf8.count < UnixSocketAddress.pathCapacity else {
      throw Errno(rawValue: ENAMETOOLONG)
    }
    let descriptor = socket(
      AF_UNIX,
      CInt(SOCK_DGRAM.rawValue) | CInt(SOCK_CLOEXEC.rawValue)
        | CInt(SOCK_NONBLOCK.rawValue), 0)
    guard descriptor >= 0 else { throw errno }
    // Closed by its owner going away when `connect` throws.
    let socket = OwnedDescriptor(FileDescriptor(rawValue: descriptor))
    _ = try retrying {
      (try? UnixSocketAddress.with(path) { Glibc.connect(descriptor, $0, $1) }) ?? -1
    }
    return socket
  }

  /// Sends one datagram without blocking and without SIGPIPE.
  static func send(_ descriptor: CInt, _ bytes: UnsafeRawBufferPointer) throws(Errno) {
    _ = try retryingOnInterrupt {
      Glibc.send(
        descriptor, bytes.baseAddress, bytes.count, CInt(MSG_DONTWAIT) | CInt(MSG_NOSIGNAL))
    }
  }

  // MARK: ioctl through CTimeShims

  static func ppsCapabilities(_ descriptor: CInt) throws(Errno) -> CInt {
    var capabilities: CInt = 0
    _ = try retrying { ctime_pps_capabilities(descriptor, &capabilities) }
    return capabilities
  }

  static func ppsEnable(_ descriptor: CInt, mode: CInt) throws(Errno) {
    _ = try retrying { ctime_pps_enable(descriptor, mode) }
  }

  /// PPS_FETCH with a timeout; `nil` when the time passed without an event. EINTR ends the
  /// wait early like a timeout: the caller loops anyway.
  static func ppsFetch(_ descriptor: CInt, timeout: Duration) throws(Errno) -> pps_fdata? {
    var data = pps_fdata()
    let (seconds, attoseconds) = max(timeout, .zero).components
    let result = ctime_pps_fetch(
      descriptor, seconds, Int32(attoseconds / 1_000_000_000), &data)
    if result == 0 { return data }
    let error = errno
    if error == Errno(rawValue: ETIMEDOUT) || error == .interrupted { return nil }
    throw error
  }

  /// Blocks until the carrier-detect line changes, then reads the lines. `nil` when a signal
  /// ended the wait (the listener being stopped: TIOCMIWAIT has no timeout), like a timeout:
  /// the caller loops anyway.
  static func waitForCarrierChange(_ descriptor: CInt) throws(Errno) -> (
    time: PosixTime, carrier: Bool
  )? {
    if ctime_wait_modem_change(descriptor, CTIME_MODEM_LINE_CD) != 0 {
      let error = errno
      if error == .interrupted { return nil }
      throw error
    }
    let time = PosixTime.now()
    let lines = try modemLines(descriptor)
    return (time, lines & CTIME_MODEM_LINE_CD != 0)
  }

  static func modemLines(_ descriptor: CInt) throws(Errno) -> CInt {
    var lines: CInt = 0
    _ = try retrying { cserial_modem_lines_get(descriptor, &lines) }
    return lines
  }

  static func duplicate(_ descriptor: CInt) throws(Errno) -> CInt {
    try FileDescriptor(rawValue: descriptor).duplicate().rawValue
  }
}
