import Glibc
import POSIX
import SerialGPS

/// Every way a command that owns a receiver is asked to end, as one request to stop cleanly
/// (the receiver put to standby first), and a Ctrl-C that comes while stopping as an immediate
/// exit.
///
/// - SIGINT, SIGTERM, SIGQUIT and SIGHUP ask to stop. A SIGHUP that was ignored when the
///   process started (`nohup`) stays ignored: the process then goes on when its terminal
///   closes, as the user asked.
/// - SIGPIPE is ignored: a write to a closed pipe fails with EPIPE instead, and standard
///   output's first failure asks to stop (``Reason/outputClosed``, or
///   ``Reason/outputFailed(_:)`` for any other errno), so `serialgps watch | head -2` ends
///   with the receiver in standby.
/// - Ctrl-C again while stopping ends the process at once with ``immediateExitStatus``,
///   without waiting for the receiver. Repeated SIGTERMs only ask again: `timeout(1)` sends
///   its SIGTERM both to the command and to its process group, so the command gets two at
///   once, and a supervisor that wants the process gone at once has SIGKILL.
///
/// The signals come through POSIX's ``SignalPipe``: on its thread, one at a time, in order.
///
/// `@unchecked Sendable`: its state is behind its lock and the signal pipe's thread, which the
/// compiler cannot see.
final class StopSignals: @unchecked Sendable {
  /// Why a stop was asked for.
  enum Reason: Equatable, CustomStringConvertible {
    case signal(Signal)
    /// Standard output is a pipe nobody reads any more (EPIPE).
    case outputClosed
    /// Writing standard output failed otherwise (a full disk, an I/O error).
    case outputFailed(Errno)
    /// Nobody used the server for `serve --exit-idle`'s time.
    case idle

    var description: String {
      switch self {
      case .signal(let signal): return "\(signal)"
      case .outputClosed: return "standard output closed"
      case .outputFailed(let error): return "cannot write standard output: \(error)"
      case .idle: return "idle"
      }
    }
  }

  /// The exit status after Ctrl-C while stopping: 128 + SIGINT, as a shell reports it.
  static let immediateExitStatus = Signal.interrupt.exitStatus

  private let state = Locked<(reason: Reason?, observers: [@Sendable (Reason) -> Void])>(
    (nil, []))

  /// Starts listening. Should the signal pipe be impossible to make (no descriptors left),
  /// the signals keep their default actions.
  init() {
    Signal.brokenPipe.ignore()
    var signals: [Signal] = [.interrupt, .terminate, .quit]
    if !Signal.hangUp.isIgnored { signals.append(.hangUp) }
    try? SignalPipe.deliver(signals) { [self] signal in received(signal) }
    Output.standard.onFailure { [self] error in
      request(error == .brokenPipe ? .outputClosed : .outputFailed(error))
    }
  }

  /// Why a stop was asked for; `nil` while none was.
  var reason: Reason? { state.withLock { $0.reason } }

  /// Whether a stop was asked for.
  var isRequested: Bool { reason != nil }

  /// Runs `body` when a stop is asked for, or now if it already was.
  func onStop(_ body: @escaping @Sendable (Reason) -> Void) {
    let already = state.withLock { state -> Reason? in
      if state.reason == nil { state.observers.append(body) }
      return state.reason
    }
    if let already { body(already) }
  }

  /// Waits until a stop is asked for, and says why.
  func requested() async -> Reason {
    await withCheckedContinuation { continuation in
      onStop { continuation.resume(returning: $0) }
    }
  }

  /// Waits `duration`, or less if a stop is asked for meanwhile.
  func sleep(for duration: Duration) async {
    let clock = SystemClock()
    let deadline = clock.now + duration
    let timer = DriverExecutor.task {
      try? await clock.sleep(until: deadline)
    }
    onStop { _ in timer.cancel() }
    await timer.value
  }

  /// Asks to stop; the first request calls the observers, later ones do nothing.
  func request(_ reason: Reason) {
    let observers = state.withLock { state -> [@Sendable (Reason) -> Void] in
      guard state.reason == nil else { return [] }
      state.reason = reason
      defer { state.observers.removeAll() }
      return state.observers
    }
    for body in observers { body(reason) }
  }

  private func received(_ signal: Signal) {
    if signal == .interrupt && isRequested {
      // Ctrl-C again: the user does not want to wait for the receiver to be put to standby.
      Output.standard.flush()
      Output.error.write("serialgps: stopped without powering the receiver off\n")
      _exit(Self.immediateExitStatus)
    }
    request(.signal(signal))
  }
}
