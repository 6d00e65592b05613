import Glibc
import SerialGPS

/// The write end of the pipe the signal handler writes to (async-signal-safe: one `write`).
nonisolated(unsafe) private var signalPipeWriteEnd: Int32 = -1

/// Turns SIGINT and SIGTERM into a request to stop cleanly, and a SIGINT that comes while
/// stopping (Ctrl-C pressed again) into an immediate exit.
///
/// Repeated SIGTERMs only ask again: `timeout(1)` sends its SIGTERM both to the command and to
/// its process group, so the command gets two at once, and a supervisor that wants the
/// process gone at once has SIGKILL.
///
/// The handler (installed with `sigaction`, so it applies whichever thread the signal lands
/// on) only writes the signal number into a pipe; a thread of its own reads the pipe and acts,
/// in order. Nothing here uses libdispatch, whose thread pool would wake the process every
/// second, and nothing polls: the thread sleeps in `read` until a signal comes.
final class StopSignals: @unchecked Sendable {
  /// The exit status after Ctrl-C while stopping: 128 + SIGINT, as a shell reports it.
  static let immediateExitStatus: Int32 = 128 + SIGINT

  private var mutex = pthread_mutex_t()
  // Guarded by `mutex`.
  private var received = 0
  private var observers: [@Sendable () -> Void] = []

  /// Starts listening for `signals`; the first calls the observers, a further SIGINT ends
  /// the process at once with ``immediateExitStatus``.
  init(signals: [Int32] = [SIGINT, SIGTERM]) {
    pthread_mutex_init(&mutex, nil)
    var ends: [Int32] = [-1, -1]
    guard pipe(&ends) == 0 else { return }  // signals keep their default action
    for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
    signalPipeWriteEnd = ends[1]
    var action = sigaction()
    action.__sigaction_handler.sa_handler = { number in
      var byte = UInt8(truncatingIfNeeded: number)
      _ = write(signalPipeWriteEnd, &byte, 1)
    }
    action.sa_flags = SA_RESTART
    sigemptyset(&action.sa_mask)
    for signalNumber in signals { sigaction(signalNumber, &action, nil) }
    let readEnd = ends[0]
    handled = signals
    self.readEnd = readEnd
    let unmanaged = Unmanaged.passRetained(self)
    var thread = pthread_t()
    let created = pthread_create(
      &thread, nil,
      { argument in
        let signals = Unmanaged<StopSignals>.fromOpaque(argument!).takeRetainedValue()
        signals.listen()
        return nil
      }, unmanaged.toOpaque())
    if created == 0 {
      pthread_detach(thread)
    } else {
      unmanaged.release()
    }
  }

  private var readEnd: Int32 = -1
  private var handled: [Int32] = []

  /// Reads signal numbers from the pipe, one byte each, for the life of the process.
  private func listen() {
    // A parent may have started this process with the signals blocked (test runners do), and
    // blocked signals never reach the handler: this thread takes them.
    var mask = sigset_t()
    sigemptyset(&mask)
    for signalNumber in handled { sigaddset(&mask, signalNumber) }
    pthread_sigmask(SIG_UNBLOCK, &mask, nil)
    var byte: UInt8 = 0
    while true {
      let count = read(readEnd, &byte, 1)
      if count == 1 {
        signalled(Int32(byte), count: 1)
      } else if count < 0 && errno == EINTR {
        continue
      } else {
        return
      }
    }
  }

  deinit {
    pthread_mutex_destroy(&mutex)
  }

  /// Whether a stop was asked for.
  var isRequested: Bool {
    pthread_mutex_lock(&mutex)
    defer { pthread_mutex_unlock(&mutex) }
    return received > 0
  }

  /// Runs `body` when a stop is asked for, or now if it already was.
  func onStop(_ body: @escaping @Sendable () -> Void) {
    pthread_mutex_lock(&mutex)
    let already = received > 0
    if !already { observers.append(body) }
    pthread_mutex_unlock(&mutex)
    if already { body() }
  }

  /// Waits `duration`, or less if a stop is asked for meanwhile.
  func sleep(for duration: Duration) async {
    let clock = SystemClock()
    let deadline = clock.now + duration
    let timer = Task(executorPreference: DriverExecutor.shared) {
      try? await clock.sleep(until: deadline)
    }
    onStop { timer.cancel() }
    await timer.value
  }

  private func signalled(_ signalNumber: Int32, count: Int) {
    pthread_mutex_lock(&mutex)
    let wasRequested = received > 0
    received += max(1, count)
    let toNotify = wasRequested ? [] : observers
    if !wasRequested { observers.removeAll() }
    pthread_mutex_unlock(&mutex)
    if signalNumber == SIGINT && (wasRequested || count >= 2) {
      // Ctrl-C again: the user does not want to wait for the receiver to be put to standby.
      Output.standard.flush()
      Output.error.write("serialgps: stopped without powering the receiver off\n")
      _exit(Self.immediateExitStatus)
    }
    for body in toNotify { body() }
  }
}
