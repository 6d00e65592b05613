import Dispatch
import Glibc

/// Turns SIGINT and SIGTERM into a request to stop cleanly, and a SIGINT that comes while
/// stopping (Ctrl-C pressed again) into an immediate exit.
///
/// Repeated SIGTERMs only ask again: `timeout(1)` sends its SIGTERM both to the command and to
/// its process group, so the command gets two at once, and a supervisor that wants the
/// process gone at once has SIGKILL.
///
/// The signals are taken with Dispatch signal sources: on Linux, libdispatch reads them from
/// a `signalfd` on its manager thread and installs its own handler in place of the default
/// action, so a signal that lands on any thread (the receiver's reader, the cooperative pool)
/// is routed there instead of killing the process. The handlers run on one serial queue, in
/// order; a stop request never waits for anything.
final class StopSignals: @unchecked Sendable {
  /// The exit status after Ctrl-C while stopping: 128 + SIGINT, as a shell reports it.
  static let immediateExitStatus: Int32 = 128 + SIGINT

  private let queue = DispatchQueue(label: "serialgps.signals")
  private var sources: [any DispatchSourceSignal] = []
  private var mutex = pthread_mutex_t()
  // Guarded by `mutex`.
  private var received = 0
  private var observers: [@Sendable () -> Void] = []

  /// Starts listening for `signals`; the first calls the observers, a further SIGINT ends
  /// the process at once with ``immediateExitStatus``.
  init(signals: [Int32] = [SIGINT, SIGTERM]) {
    pthread_mutex_init(&mutex, nil)
    for signalNumber in signals {
      let source = DispatchSource.makeSignalSource(signal: signalNumber, queue: queue)
      source.setEventHandler { [unowned self] in
        // Signals that arrive together are merged into one event; `data` says how many.
        self.signalled(signalNumber, count: Int(source.data))
      }
      source.resume()
      sources.append(source)
    }
  }

  deinit {
    for source in sources { source.cancel() }
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
    let timer = Task { try? await Task.sleep(for: duration) }
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
