import Glibc
import POSIX

/// The process that holds a serial device, as ``SerialPortError/Reason/inUse(by:)`` names it.
public struct DeviceOwner: Hashable, Sendable, CustomStringConvertible {
  /// Its process id.
  public let processID: Int32
  /// Its command line as `ps` shows it (`serialgps serve /dev/ttyUSB0`), when `/proc` tells.
  public let command: String?
  /// The lock file that names it (`/run/lock/LCK..ttyUSB0`); `nil` when it was found by the
  /// `flock` it holds on the device.
  public let lockFile: String?

  public init(processID: Int32, command: String?, lockFile: String?) {
    self.processID = processID
    self.command = command
    self.lockFile = lockFile
  }

  /// Whether the owner is this process (another port it opened on the same device).
  public var isThisProcess: Bool { processID == getpid() }

  /// "process 1234 (serialgps serve /dev/ttyUSB0)".
  public var description: String {
    "process \(processID)" + (command.map { " (\($0))" } ?? "")
  }
}

/// One owner per device, as serial programs on Linux agree: an exclusive `flock` on the open
/// descriptor, which every program that opens the device through ``SerialPort`` (and picocom,
/// and others) respects and which root does not bypass; and the UUCP lock file
/// (`/run/lock/LCK..ttyUSB0`, the Filesystem Hierarchy Standard's HDB format: the owner's PID
/// as ten characters and a newline) that minicom, picocom, lockdev and ModemManager check.
///
/// The lock file is put in place whole: written under a name of this process's and linked
/// (absent) or renamed (stale) to its name, so a file that exists always names its owner. One
/// naming a process that no longer exists is stale and taken over. Where the lock directory is
/// missing or not writable (a user outside its group on an old system, a read-only `/run`),
/// no lock file is written and the `flock` alone keeps the device one program's, which is
/// enough among programs that use `flock`; a lock file that names a live process is still
/// honoured.
enum DeviceLock {
  /// `/run/lock`, else `/var/lock`, whichever exists; `nil` when neither does.
  static var standardDirectory: String? {
    for directory in ["/run/lock", "/var/lock"] {
      if let status = try? FileSystem.status(directory), status.st_mode & S_IFMT == S_IFDIR {
        return directory
      }
    }
    return nil
  }

  /// The lock file of the device at `path`, links resolved: `/dev/` cut off and every other
  /// `/` turned into `_`, as picocom and lockdev name them (`LCK..ttyUSB0`, `LCK..pts_3`).
  static func lockFile(for path: String, in directory: String) -> String {
    let node = Array(linksResolved(path).utf8)
    var name = node[...]
    if node.starts(with: "/dev/".utf8) {
      name = node[5...]
    } else if let slash = node.lastIndex(of: UInt8(ascii: "/")) {
      name = node[(slash + 1)...]
    }
    var file = Array(directory.utf8)
    file += "/LCK..".utf8
    for byte in name { file.append(byte == UInt8(ascii: "/") ? UInt8(ascii: "_") : byte) }
    return String(decoding: file, as: UTF8.self)
  }

  /// `path` with its symbolic links followed (`/dev/serial/by-id/…` → `/dev/ttyACM0`), by
  /// `lstat` and `readlink`, not `realpath`: umockdev's `realpath()` corrupts memory for the
  /// nodes it stands in for with ptys. At most 16 links; the path itself when it is none.
  static func linksResolved(_ path: String) -> String {
    // Paths as bytes, not `String`'s characters: a path is bytes to the kernel, and this runs
    // on every open, where the standard library's grapheme-breaking code would be paged in
    // for it alone (BENCHMARKS.md, Footprint).
    let slash = UInt8(ascii: "/")
    let dot = UInt8(ascii: ".")
    var current = Array(path.utf8)
    for _ in 0..<16 {
      let text = String(decoding: current, as: UTF8.self)
      var status = stat()
      guard lstat(text, &status) == 0, status.st_mode & S_IFMT == S_IFLNK else { break }
      var target = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
      let length = readlink(text, &target, target.count - 1)
      guard length > 0 else { break }
      let link = target[..<length].map { UInt8(bitPattern: $0) }
      if link.first == slash {
        current = link
      } else if let last = current.lastIndex(of: slash) {
        current = Array(current[...last]) + link
      } else {
        current = link
      }
    }
    // `/dev/serial/by-id/../../ttyACM0` → `/dev/ttyACM0`.
    var components: [ArraySlice<UInt8>] = []
    for component in current.split(separator: slash) {
      if component.count == 1, component.first == dot { continue }
      if component.count == 2, component.allSatisfy({ $0 == dot }) {
        if !components.isEmpty { components.removeLast() }
      } else {
        components.append(component)
      }
    }
    var resolved: [UInt8] = current.first == slash ? [slash] : []
    for (index, component) in components.enumerated() {
      if index > 0 { resolved.append(slash) }
      resolved += component
    }
    return String(decoding: resolved, as: UTF8.self)
  }

  /// The process a lock file names, if it exists and names one: ASCII (HDB, spaces allowed) or
  /// the four-byte binary PID of the oldest programs.
  static func processNamed(byLockFile file: String) -> pid_t? {
    guard let bytes = try? FileDescriptor.contents(of: file) else { return nil }
    if bytes.count == 4, bytes.contains(where: { $0 < 0x20 && $0 != 0x0a }) {
      return bytes.withUnsafeBytes { $0.loadUnaligned(as: pid_t.self) }
    }
    return Processes.id(inText: bytes)
  }

  /// Who holds the device at `path` now, found without opening it: a lock file naming a live
  /// process, else a `flock` on the node (`/proc/locks`). `nil` when neither shows an owner
  /// (it may still be held with TIOCEXCL alone, which only an open can see).
  static func owner(of path: String, lockDirectory: String?) -> DeviceOwner? {
    if let lockDirectory {
      let file = lockFile(for: path, in: lockDirectory)
      if let pid = processNamed(byLockFile: file), Processes.exists(pid) {
        return DeviceOwner(
          processID: pid, command: Processes.commandLine(of: pid), lockFile: file)
      }
    }
    guard let status = try? FileSystem.status(path),
      let pid = Processes.flockHolder(device: status.st_dev, inode: status.st_ino)
    else { return nil }
    return DeviceOwner(processID: pid, command: Processes.commandLine(of: pid), lockFile: nil)
  }

  /// The `flock` half, on a descriptor just opened: taken when `claiming`, else only checked
  /// (taken and let go at once). Throws ``SerialPortError/Reason/inUse(by:)`` (or ``busy`` when
  /// the holder cannot be named) when another open file holds it. A file system without such
  /// locks is not worth failing over.
  static func lockDescriptor(
    _ tty: FileDescriptor, path: String, lockDirectory: String?, claiming: Bool
  ) throws(SerialPortError) {
    guard let locked = try? tty.lock(.exclusive) else { return }
    guard locked else {
      throw refusal(path: path, owner: owner(of: path, lockDirectory: lockDirectory))
    }
    if !claiming { try? tty.unlock() }
  }

  /// The lock file half, once this process holds the `flock`: a lock file naming another live
  /// process refuses the device (a program that keeps lock files but not `flock`, minicom);
  /// one naming a dead process (or this one: a port of its own that has closed) is stale.
  /// When `claiming`, this process's lock file is put in place. Returns the lock file written,
  /// or `nil` (not claiming; no lock directory; not writable).
  static func claimLockFile(
    for path: String, in lockDirectory: String?, claiming: Bool
  ) throws(SerialPortError) -> String? {
    guard let lockDirectory else { return nil }
    let file = lockFile(for: path, in: lockDirectory)
    let me = getpid()
    for _ in 0..<3 {
      let named = processNamed(byLockFile: file)
      if let pid = named, pid != me, Processes.exists(pid) {
        throw refusal(
          path: path,
          owner: DeviceOwner(
            processID: pid, command: Processes.commandLine(of: pid), lockFile: file))
      }
      guard claiming else { return nil }
      var name = Array(lockDirectory.utf8)
      name += "/.LCK.".utf8
      name += Processes.decimal(me)
      name.append(UInt8(ascii: "."))
      name += Processes.decimal(.random(in: 0...pid_t.max))
      let partial = String(decoding: name, as: UTF8.self)
      // HDB: the PID right-aligned in ten characters, and a newline.
      var text = Processes.decimal(me)
      text = [UInt8](repeating: UInt8(ascii: " "), count: max(0, 10 - text.count)) + text
      text.append(UInt8(ascii: "\n"))
      do throws(Errno) {
        let descriptor = try FileDescriptor.open(
          partial, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, permissions: 0o644)
        defer { try? descriptor.close() }
        try descriptor.writeAll(text)
      } catch {
        try? FileSystem.unlink(partial)
        return nil  // the directory is not ours to write: the flock alone
      }
      defer { try? FileSystem.unlink(partial) }
      do throws(Errno) {
        if named == nil && (try? FileSystem.status(file)) == nil {
          try FileSystem.link(partial, file)
        } else {
          try FileSystem.rename(partial, file)  // over a stale one, atomically
        }
        return file
      } catch  where error == Errno(rawValue: EEXIST) {
        continue  // another program made one meanwhile: read it again
      } catch {
        return nil
      }
    }
    return nil
  }

  /// Removes this process's lock file, if it still names this process.
  static func releaseLockFile(_ file: String) {
    guard processNamed(byLockFile: file) == getpid() else { return }
    try? FileSystem.unlink(file)
  }

  private static func refusal(path: String, owner: DeviceOwner?) -> SerialPortError {
    guard let owner else {
      return SerialPortError(device: path, operation: .open, reason: .busy, errno: .deviceBusy)
    }
    return SerialPortError(device: path, operation: .open, reason: .inUse(by: owner))
  }
}
