import Dispatch
import Glibc

/// Turns SIGINT and SIGTERM into a request to stop cleanly, and a second one into an
/// immediate exit.
///
/// The signals are taken with Dispatch signal sources: on Linux, libdispatch reads them from
/// a `signalfd` on its manager thread and installs its own handler in place of the default
/// action, so a signal that lands on any thread (the receiver's reader, the cooperative pool)
/// is routed there instead of killing the process. The handlers run on one serial queue, in
/// order; a stop request never waits for anything.
final class StopSignals: @unchecked Sendable {
  /// The exit status after a second signal: 128 + SIGINT, as a shell reports Ctrl-C.
  static let immediateExitStatus: Int32 = 128 + SIGINT

  private let queue = DispatchQueue(label: "serialgps.signals")
  private var sources: [any DispatchSourceSignal] = []
  private var mutex = pthread_mutex_t()
  // Guarded by `mutex`.
  private var received = 0
  private var observers: [@Sendable () -> Void] = []

  /// Starts listening for `signals`; the first calls the observers, the second ends the
  /// process at once with ``immediateExitStatus``.
  init(signals: [Int32] = [SIGINT, SIGTERM]) {
    pthread_mutex_init(&mutex, nil)
    for signalNumber in signals {
      let source = DispatchSource.makeSignalSource(signal: signalNumber, queue: queue)
      source.setEventHandler { [unowned self] in
        // Two signals may be merged into one event; `data` says how many arrived.
        self.signalled(count: Int(source.data))
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

  private func signalled(count: Int) {
    pthread_mutex_lock(&mutex)
    let before = received
    received += max(1, count)
    let after = received
    let toNotify = before == 0 ? observers : []
    if before == 0 { observers.removeAll() }
    pthread_mutex_unlock(&mutex)
    if after >= 2 {
      // The user does not want to wait for the receiver to be put to standby.
      Output.standard.flush()
      Output.error.write("serialgps: stopped without powering the receiver off\n")
      _exit(Self.immediateExitStatus)
    }
    for body in toNotify { body() }
  }
}
