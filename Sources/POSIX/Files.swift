import Glibc

// Advisory locks, and the few path operations a lock file needs, as typed wrappers: the value
// or the errno, EINTR retried where retrying is correct.

/// What an advisory lock (`flock(2)`) excludes.
package enum FileLockKind: Sendable {
  /// Others may hold shared locks too; an exclusive one waits or fails.
  case shared
  /// Nobody else holds any lock on the file.
  case exclusive
}

extension FileDescriptor {
  /// `flock(2)` on this descriptor's open file description: two descriptors from separate
  /// `open` calls (in one process or two) conflict, duplicates of one (`dup`, `fork`) share it.
  /// Root is not exempt. Released by ``unlock()`` or when the last descriptor of the open file
  /// closes, so a process that dies lets it go.
  ///
  /// - Parameter waiting: wait for the lock (EINTR retried); otherwise fail at once.
  /// - Returns: false when another open file holds a conflicting lock and `waiting` is false.
  /// - Throws: other errors (ENOLCK, EINVAL where the file system has no such locks).
  package func lock(_ kind: FileLockKind, waiting: Bool = false) throws(Errno) -> Bool {
    var operation = kind == .exclusive ? LOCK_EX : LOCK_SH
    if !waiting { operation |= LOCK_NB }
    do {
      _ = try retryingOnInterrupt { flock(rawValue, operation) }
      return true
    } catch  where error == .wouldBlock {
      return false
    }
  }

  /// Lets go of this open file's `flock`.
  package func unlock() throws(Errno) {
    _ = try retryingOnInterrupt { flock(rawValue, LOCK_UN) }
  }
}

extension FileDescriptor {
  /// `fstat(2)`: what the open file is (its type, owner, size), whatever its path names now.
  package func status() throws(Errno) -> stat {
    var status = stat()
    _ = try valueOrErrno(fstat(rawValue, &status))
    return status
  }

  /// What there is to read, up to `limit` bytes (fewer at the end of the file), reading
  /// nothing past them: a file that grows, or never ends (`/dev/zero`), costs `limit` bytes
  /// at most. EAGAIN is thrown like any other errno.
  package func read(atMost limit: Int) throws(Errno) -> [UInt8] {
    var bytes = [UInt8](repeating: 0, count: max(limit, 0))
    var count = 0
    while count < bytes.count {
      let read = try bytes.withUnsafeMutableBytes { raw in
        Result { () throws(Errno) in
          try self.read(into: UnsafeMutableRawBufferPointer(rebasing: raw[count...]))
        }
      }.get()
      if read == 0 { break }
      count += read
    }
    bytes.removeLast(bytes.count - count)
    return bytes
  }
}

/// Path operations (`link`, `rename`, `unlink`, `stat`): the value or the errno.
package enum FileSystem {
  /// The major and minor numbers packed in a `dev_t` (glibc's `major()` and `minor()`, which
  /// are macros Swift cannot call).
  package static func deviceNumbers(_ device: dev_t) -> (major: dev_t, minor: dev_t) {
    let major = ((device >> 8) & 0xfff) | ((device >> 32) & ~0xfff)
    let minor = (device & 0xff) | ((device >> 12) & ~0xff)
    return (major, minor)
  }

  /// The kernel subsystem of the character device `device` (`tty`, `gnss`, `mem` …), from the
  /// `subsystem` link of `/sys/dev/char/MAJOR:MINOR`; `nil` when sysfs does not know it.
  package static func characterDeviceSubsystem(_ device: dev_t) -> String? {
    let (major, minor) = deviceNumbers(device)
    guard let target = resolvedPath("/sys/dev/char/\(major):\(minor)/subsystem"),
      let slash = target.lastIndex(of: "/")
    else { return nil }
    return String(target[target.index(after: slash)...])
  }

  /// A second name for an existing file; EEXIST when `newPath` exists (never replaced), which
  /// makes it the atomic "create if absent" for a file written whole under another name.
  package static func link(_ existingPath: String, _ newPath: String) throws(Errno) {
    _ = try valueOrErrno(Glibc.link(existingPath, newPath))
  }

  /// Writes `bytes` to `path` whole: to a file of its own beside it (`path.PID.partial`),
  /// flushed to the disk first when `durable`, then renamed into place, so that a reader (or
  /// the next process, after a crash or a power cut) finds the old content or the new, never
  /// half of either. The partial file is removed if anything fails.
  package static func writeWhole(_ bytes: [UInt8], to path: String, durable: Bool) throws(Errno) {
    let partial = "\(path).\(getpid()).partial"
    do {
      try FileDescriptor.withOpened(partial, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC) {
        descriptor throws(Errno) in
        try descriptor.writeAll(bytes)
        if durable { try descriptor.sync() }
      }
      try rename(partial, path)
    } catch {
      Glibc.unlink(partial)
      throw error
    }
  }

  /// Renames `from` to `to`, atomically replacing what `to` named.
  package static func rename(_ from: String, _ to: String) throws(Errno) {
    _ = try valueOrErrno(Glibc.rename(from, to))
  }

  /// Removes the name `path`.
  package static func unlink(_ path: String) throws(Errno) {
    _ = try valueOrErrno(Glibc.unlink(path))
  }

  /// `stat(2)`, links followed.
  package static func status(_ path: String) throws(Errno) -> stat {
    var status = stat()
    _ = try valueOrErrno(stat(path, &status))
    return status
  }
}

/// What the kernel says about other processes.
package enum Processes {
  /// `pid` in decimal digits, as lock files and awake markers hold it. Written here rather
  /// than interpolated: these are written on every open, and the standard library's integer
  /// text would be paged in for that alone (BENCHMARKS.md, Footprint). Negative ids are
  /// written as 0 (no process).
  package static func decimal(_ pid: pid_t) -> [UInt8] {
    var digits: [UInt8] = []
    var rest = max(pid, 0)
    repeat {
      digits.append(UInt8(ascii: "0") + UInt8(rest % 10))
      rest /= 10
    } while rest > 0
    return digits.reversed()
  }

  /// The process id a file's text names: its first word (words end at a space, a tab or a
  /// newline) in decimal digits, within the first 32 bytes; `nil` for anything else.
  package static func id<Bytes: Collection<UInt8>>(inText bytes: Bytes) -> pid_t? {
    let words = bytes.prefix(32).split {
      $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\n") || $0 == UInt8(ascii: "\t")
    }
    guard let first = words.first else { return nil }
    var value: pid_t = 0
    for byte in first {
      guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) else { return nil }
      let (times, overflowTimes) = value.multipliedReportingOverflow(by: 10)
      let (sum, overflowSum) = times.addingReportingOverflow(pid_t(byte - UInt8(ascii: "0")))
      guard !overflowTimes, !overflowSum else { return nil }
      value = sum
    }
    return value
  }

  /// Whether a process with this id exists (`kill(pid, 0)`): EPERM means it does, only not
  /// ours to signal; ESRCH that it does not. Ids at or below zero name no one process.
  package static func exists(_ pid: pid_t) -> Bool {
    guard pid > 0 else { return false }
    return kill(pid, 0) == 0 || Errno.current != Errno(rawValue: ESRCH)
  }

  /// The command line of process `pid` as a person reads it: `/proc/PID/cmdline`'s arguments
  /// joined by spaces, the program by its file name (`serialgps serve /dev/ttyUSB0`), cut to
  /// `limit` characters; else its name (`/proc/PID/comm`); `nil` when neither can be read (the
  /// process is gone, or `/proc` hides it).
  package static func commandLine(of pid: pid_t, limit: Int = 120) -> String? {
    if let bytes = try? FileDescriptor.contents(of: "/proc/\(pid)/cmdline"), !bytes.isEmpty {
      var arguments = bytes.split(separator: 0, omittingEmptySubsequences: false).map {
        String(decoding: $0, as: UTF8.self)
      }
      if arguments.last == "" { arguments.removeLast() }
      if let program = arguments.first, let slash = program.lastIndex(of: "/") {
        arguments[0] = String(program[program.index(after: slash)...])
      }
      let line = arguments.joined(separator: " ")
      return line.count > limit ? String(line.prefix(limit - 1)) + "…" : line
    }
    guard let bytes = try? FileDescriptor.contents(of: "/proc/\(pid)/comm") else { return nil }
    let name = String(decoding: bytes, as: UTF8.self).split(separator: "\n").first.map(String.init)
    return name?.isEmpty == false ? name : nil
  }

  /// The process holding a `flock` on the file `device`/`inode` (as `stat` gives them), from
  /// `/proc/locks`; `nil` when none does or the table cannot be read. Waiters (`->` lines) are
  /// not holders.
  package static func flockHolder(device: dev_t, inode: ino_t) -> pid_t? {
    guard let bytes = try? FileDescriptor.contents(of: "/proc/locks") else { return nil }
    // "1: FLOCK  ADVISORY  WRITE 25063 00:1a:4 0 EOF": major and minor in hex, inode decimal.
    let (major, minor) = FileSystem.deviceNumbers(device)
    let file = hex2(major) + ":" + hex2(minor) + ":" + String(inode)
    for line in bytes.split(separator: UInt8(ascii: "\n")) {
      let fields = line.split(separator: UInt8(ascii: " "))
      guard fields.count >= 6, fields[1].elementsEqual("FLOCK".utf8),
        fields[5].elementsEqual(file.utf8),
        let pid = pid_t(String(decoding: fields[4], as: UTF8.self))
      else { continue }
      return pid
    }
    return nil
  }

  private static func hex2(_ value: dev_t) -> String {
    let digits = String(value, radix: 16)
    return digits.count < 2 ? "0" + digits : digits
  }
}
