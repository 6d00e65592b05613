import Dispatch
import Glibc

/// Ctrl-C (SIGINT) and SIGTERM as a request to finish cleanly: `replay`, `record` and `demo`
/// stop what they are doing, put things back (the receiver to standby, the recording flushed)
/// and exit normally. A second signal ends the process at once.
///
/// The signals are taken with Dispatch signal sources: libdispatch installs its own handler in
/// place of the default action and hands the signal to one serial queue, whatever thread it
/// landed on (a reader blocked in `poll`, the cooperative pool). Observers run there, in
/// order; none may block. (The same approach as `serialgps watch`'s `StopSignals`; the two
/// can become one once both are on main.)
final class Interruption: @unchecked Sendable {
  private let queue = DispatchQueue(label: "serialgps.interruption")
  private var sources: [any DispatchSourceSignal] = []
  private var mutex = pthread_mutex_t()
  // Guarded by `mutex`.
  private var signals = 0
  private var observers: [@Sendable () -> Void] = []

  init(signals numbers: [Int32] = [SIGINT, SIGTERM]) {
    pthread_mutex_init(&mutex, nil)
    for number in numbers {
      let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
      source.setEventHandler { [unowned self] in self.received(count: Int(source.data)) }
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
    return signals > 0
  }

  /// Runs `body` when a stop is asked for, or now if it already was.
  func onStop(_ body: @escaping @Sendable () -> Void) {
    pthread_mutex_lock(&mutex)
    let already = signals > 0
    if !already { observers.append(body) }
    pthread_mutex_unlock(&mutex)
    if already { body() }
  }

  /// Sleeps `duration`, or less if a stop is asked for meanwhile.
  func sleep(for duration: Duration) async {
    let timer = Task { try? await Task.sleep(for: duration) }
    onStop { timer.cancel() }
    await timer.value
  }

  private func received(count: Int) {
    pthread_mutex_lock(&mutex)
    let first = signals == 0
    signals += max(1, count)
    let again = signals >= 2
    let notify = first ? observers : []
    if first { observers.removeAll() }
    pthread_mutex_unlock(&mutex)
    if again {
      Output.standard.flush()
      Output.error.write("\nserialgps: stopped at once (second signal)\n")
      _exit(128 + SIGINT)
    }
    for body in notify { body() }
  }
}
