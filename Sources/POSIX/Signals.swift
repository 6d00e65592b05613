import CPOSIX
import Glibc

/// A signal number, with the name people know it by.
package struct Signal: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
  package let rawValue: CInt

  package init(rawValue: CInt) { self.rawValue = rawValue }

  /// SIGHUP: the terminal or ssh session went away (or, by convention, "reload").
  package static let hangUp = Signal(rawValue: SIGHUP)
  /// SIGINT: Ctrl-C.
  package static let interrupt = Signal(rawValue: SIGINT)
  /// SIGQUIT: Ctrl-\.
  package static let quit = Signal(rawValue: SIGQUIT)
  /// SIGTERM: the polite request to end (`kill`, systemd, `timeout`).
  package static let terminate = Signal(rawValue: SIGTERM)
  /// SIGPIPE: a write to a pipe or socket nobody reads any more.
  package static let brokenPipe = Signal(rawValue: SIGPIPE)

  /// "SIGINT", or "signal N" for a number the C library does not name.
  package var description: String {
    guard let abbreviation = cposix_signal_abbreviation(rawValue) else {
      return "signal \(rawValue)"
    }
    return "SIG" + String(cString: abbreviation)
  }

  /// The status a shell reports for a process this signal ended: 128 + the number.
  package var exitStatus: Int32 { 128 + rawValue }

  /// Whether the signal is ignored now: the way a process started by `nohup` finds SIGHUP,
  /// and a background job of a non-interactive shell finds SIGINT and SIGQUIT.
  package var isIgnored: Bool { cposix_signal_is_ignored(rawValue) == 1 }

  /// Ignores the signal from now on, in every thread. For SIGPIPE: a write to a closed pipe
  /// or socket then fails with EPIPE, which the writer handles, instead of ending the process.
  package func ignore() {
    _ = cposix_ignore_signal(rawValue)
  }
}

/// The process's one signal handler: signals become ordered calls on a thread of their own.
///
/// A signal handler may run on any thread, between any two instructions, and may call
/// almost nothing (no lock, no allocation, no Swift runtime). So the handler, written in C,
/// only writes the signal's number into a pipe. One thread, ``threadName``, reads the pipe and
/// calls the handler given to ``deliver(_:to:)`` with each signal, one at a time, in the
/// order they came; there the code may do what it likes (take locks, resume tasks, write
/// messages). The thread unblocks every signal for itself, since a parent may have started
/// the process with them blocked (test runners do, and a child inherits the mask), and it
/// sleeps in `read` until a signal comes: no polling, no libdispatch.
package enum SignalPipe {
  /// The name of the thread that reads the pipe.
  package static let threadName = "serialgps-sig"

  private struct Route {
    let readEnd: FileDescriptor
    var handler: @Sendable (Signal) -> Void
    var thread: OwnThread?
  }

  private static let route = Locked<Route?>(nil)

  /// From now on, delivers each of `signals` to `handler` on the signal thread, in order. A
  /// later call adds its signals and replaces the handler. A signal not listed keeps its
  /// action. Throws when the pipe cannot be made; the signals then keep their actions.
  package static func deliver(
    _ signals: [Signal], to handler: @escaping @Sendable (Signal) -> Void
  ) throws(Errno) {
    try route.withLock { route throws(Errno) in
      if route != nil {
        route!.handler = handler
        return
      }
      let (readEnd, writeEnd) = try FileDescriptor.pipe()
      // The handler must never block; a full pipe drops the signal rather than hang a thread.
      let flags = fcntl(writeEnd.rawValue, F_GETFL)
      _ = fcntl(writeEnd.rawValue, F_SETFL, flags | O_NONBLOCK)
      cposix_set_signal_pipe(writeEnd.rawValue)
      route = Route(readEnd: readEnd, handler: handler)
      route!.thread = OwnThread.start(name: threadName) { listen(to: readEnd) }
    }
    for signal in signals {
      _ = try valueOrErrno(cposix_catch_signal(signal.rawValue))
    }
  }

  /// Reads signal numbers, one byte each, for the life of the process.
  private static func listen(to readEnd: FileDescriptor) {
    var none = sigset_t()
    sigemptyset(&none)
    pthread_sigmask(SIG_SETMASK, &none, nil)
    var byte: UInt8 = 0
    while true {
      let count = try? withUnsafeMutableBytes(of: &byte) { raw throws(Errno) in
        try readEnd.read(into: raw)
      }
      guard count == 1 else { return }
      let handler = route.withLock { $0?.handler }
      handler?(Signal(rawValue: CInt(byte)))
    }
  }
}
