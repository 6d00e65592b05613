import Glibc

/// The listening sockets a service manager passed at start (systemd's socket activation,
/// `systemd-socket-activate`), read the way `sd_listen_fds(3)` reads them, without libsystemd:
/// `LISTEN_PID` must be this process (a variable inherited from a parent that was activated
/// names another), `LISTEN_FDS` says how many descriptors follow from
/// ``firstDescriptor`` (3) on, `LISTEN_FDNAMES` optionally names them (`FileDescriptorName=`,
/// colon-separated). ``take()`` then unsets the three variables, so that no child started later
/// believes the sockets are its own, and marks each descriptor close-on-exec, which the
/// manager had to leave off to pass them.
package enum SocketActivation {
  /// `SD_LISTEN_FDS_START`: the first descriptor passed.
  package static let firstDescriptor: CInt = 3

  /// One descriptor passed, with its name (`nil` when none was given).
  package struct Passed: Sendable, Hashable {
    package let descriptor: CInt
    package let name: String?

    package init(descriptor: CInt, name: String?) {
      self.descriptor = descriptor
      self.name = name
    }
  }

  /// What the variables say.
  package enum Outcome: Sendable, Hashable {
    /// No `LISTEN_FDS`: not socket-activated.
    case none
    /// `LISTEN_PID` names another process: the variables were inherited, nothing is ours.
    case otherProcess(Int32)
    /// The descriptors passed, in order (possibly none).
    case passed([Passed])
    /// The variables cannot be understood; what is wrong.
    case invalid(String)
  }

  /// The outcome of the variables' values for a process `ownPID`; no system call.
  package static func parse(
    listenPID: String?, listenFDs: String?, names: String?, ownPID: Int32
  ) -> Outcome {
    guard let listenFDs else { return .none }
    guard let pidText = listenPID, let pid = Int32(pidText), pid > 0 else {
      return .invalid(
        "LISTEN_FDS=\(listenFDs) without a valid LISTEN_PID (\(listenPID ?? "unset")): the "
          + "service manager sets both; start serve from a socket unit or systemd-socket-activate")
    }
    guard pid == ownPID else { return .otherProcess(pid) }
    // The count may not reach past the highest descriptor number.
    guard let count = Int32(listenFDs), count >= 0, count <= Int32.max - firstDescriptor else {
      return .invalid("LISTEN_FDS=\(listenFDs) is not a number of descriptors")
    }
    var given: [String?] = []
    if let names {
      given = names.split(separator: ":", omittingEmptySubsequences: false).map {
        $0.isEmpty ? nil : String($0)
      }
      // A list of another length names nothing reliably; sd_listen_fds_with_names refuses it.
      guard given.count == Int(count) else {
        return .invalid(
          "LISTEN_FDNAMES names \(given.count) descriptors, LISTEN_FDS says \(count)")
      }
    }
    return .passed(
      (0..<count).map { offset in
        Passed(
          descriptor: firstDescriptor + offset, name: given.isEmpty ? nil : given[Int(offset)])
      })
  }

  /// Reads the variables of this process, unsets them, and marks the descriptors passed
  /// close-on-exec. Call it at start, before other threads read the environment (`unsetenv` is
  /// not thread-safe).
  package static func take() -> Outcome {
    func variable(_ name: String) -> String? { getenv(name).map { String(cString: $0) } }
    let outcome = parse(
      listenPID: variable("LISTEN_PID"), listenFDs: variable("LISTEN_FDS"),
      names: variable("LISTEN_FDNAMES"), ownPID: getpid())
    for name in ["LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES"] { unsetenv(name) }
    guard case .passed(let passed) = outcome else { return outcome }
    for socket in passed {
      let flags = fcntl(socket.descriptor, F_GETFD)
      guard flags >= 0 else {
        return .invalid(
          "LISTEN_FDS says descriptor \(socket.descriptor) was passed, but it is not open "
            + "(\(Errno.current))")
      }
      _ = fcntl(socket.descriptor, F_SETFD, flags | FD_CLOEXEC)
    }
    return outcome
  }
}
