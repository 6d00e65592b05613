import POSIX

/// A source of pulse-per-second edges: kernel PPS (``KernelPPSSource``), the carrier-detect
/// line of a serial port (``CarrierDetectPPSSource``), or pulses given by the program
/// (``ManualPPSSource``, for tests and simulations).
///
/// A source blocks: ``PulseListener`` calls it from a thread of its own, and only from that
/// thread.
public protocol PPSSource: AnyObject, Sendable {
  /// A name for messages: the device's path.
  var name: String { get }

  /// Waits for the next pulse, at most about `timeout` (a source that cannot time out, such
  /// as the carrier-detect line, may wait longer). Returns `nil` when no pulse came in time.
  func nextPulse(timeout: Duration) throws(TimeServiceError) -> Pulse?
}

/// Pulses handed in by the program: for tests, simulated receivers and sources SerialGPS does
/// not read itself.
///
/// `@unchecked Sendable`: its queue is behind `lock`, a ``Lock`` the compiler cannot see guards it.
public final class ManualPPSSource: PPSSource, @unchecked Sendable {
  public let name: String
  // Guarded by `lock`.
  private let lock = Lock()
  private var queue: [Pulse] = []
  private var sequence: UInt64 = 0

  public init(name: String = "manual") {
    self.name = name
  }

  /// Hands over a pulse at system time `time`, numbered after the previous one.
  public func emit(at time: PosixTime) {
    lock.withLock {
      sequence += 1
      queue.append(Pulse(time: time, sequence: sequence))
      lock.broadcast()
    }
  }

  public func nextPulse(timeout: Duration) throws(TimeServiceError) -> Pulse? {
    let deadline = ContinuousClock.now + timeout
    return lock.withLock { () -> Pulse? in
      while queue.isEmpty {
        let left = deadline - ContinuousClock.now
        if left <= .zero { return nil }
        lock.wait(timeout: left)
      }
      return queue.removeFirst()
    }
  }
}

/// When a PPS source that failed (its device gone: unplugged, its driver unloaded) is tried
/// again: after ``first``, doubling up to ``longest``, for as long as it is listened to. Only
/// the first failure of an outage is reported, and the first pulse after it ends the outage.
/// A pure state machine: the listener asks it how long to wait, and waits.
public struct PPSRetry: Sendable, Hashable {
  /// The wait after the first failure of an outage.
  public var first: Duration
  /// The longest wait between attempts.
  public var longest: Duration
  /// Consecutive failures since the last pulse.
  public private(set) var failures = 0

  public init(first: Duration = .seconds(1), longest: Duration = .seconds(32)) {
    self.first = first
    self.longest = max(first, longest)
  }

  /// The source failed (or could not be opened): how long to wait before the next attempt,
  /// and whether to report it (only the first failure of an outage is).
  public mutating func failed() -> (wait: Duration, report: Bool) {
    failures += 1
    var wait = first
    for _ in 1..<failures where wait < longest { wait = min(wait * 2, longest) }
    return (wait, failures == 1)
  }

  /// A pulse came: whether it ends an outage (to be reported as such).
  public mutating func pulsed() -> Bool {
    defer { failures = 0 }
    return failures > 0
  }
}

/// What a ``PulseListener`` tells its owner besides the pulses.
public enum PulseListenerEvent: Sendable, Hashable {
  /// The source failed or could not be opened. `retryingIn`: when the next attempt is (the
  /// listener goes on), or `nil` when the listener ended. Reported once per outage.
  case failed(TimeServiceError, retryingIn: Duration?)
  /// A pulse came after an outage.
  case resumed
}

/// Runs a ``PPSSource`` on a thread of its own and hands each pulse on.
///
/// The thread waits in the source (in the kernel, for the real ones) and wakes only for a
/// pulse, or once per ``timeout`` without one to notice ``stop()``. A source that fails is
/// opened again with backoff when the listener was started with a ``PPSRetry``
/// (``start(opening:retry:pulse:events:pause:)``); otherwise its failure is reported once and
/// ends the thread.
///
/// `@unchecked Sendable`: its state is behind `lock`, a ``Lock`` the compiler cannot see guards it.
public final class PulseListener: @unchecked Sendable {
  /// How long one wait for a pulse lasts: longer than a second, so that a live 1 Hz source
  /// never times out and every timeout means a missing pulse.
  public static let timeout: Duration = .milliseconds(1500)

  private struct State {
    var stopped = false
    var silences = 0
  }

  private let lock = Lock()
  // Guarded by `lock`.
  private var state = State()
  private let thread: Locked<OwnThread?> = Locked(nil)

  private init() {}

  private var isStopped: Bool { lock.withLock { state.stopped } }

  /// Starts listening to `source`: `pulse` is called on the listener's thread for each
  /// pulse, `failure` once if the source fails (then the thread ends).
  public static func start(
    _ source: any PPSSource, pulse: @escaping @Sendable (Pulse) -> Void,
    failure: @escaping @Sendable (TimeServiceError) -> Void
  ) -> PulseListener {
    let taken = Locked<(any PPSSource)?>(source)
    return start(
      opening: { () throws(TimeServiceError) in
        // Only opened once: without a retry the thread ends at the first failure.
        taken.withLock { taken in
          defer { taken = nil }
          return taken!
        }
      },
      retry: nil, pulse: pulse,
      events: { event in
        if case .failed(let error, _) = event { failure(error) }
      })
  }

  /// Starts a thread that opens a source with `open` and listens to it; `pulse` is called on
  /// the listener's thread for each pulse. When the source fails or cannot be opened, and
  /// `retry` is given, the source is released (closing its device) and opened again after
  /// the retry's wait, until the listener is stopped; `events` hears of the first failure
  /// of each outage and of the pulse that ends it. Without `retry`, the first failure ends
  /// the thread.
  ///
  /// - Parameter pause: waits the given time, or less once the listener is stopped; `nil`:
  ///   the listener's own timed wait. Tests give one that returns at once.
  public static func start(
    opening open: @escaping @Sendable () throws(TimeServiceError) -> any PPSSource,
    retry: PPSRetry?, pulse: @escaping @Sendable (Pulse) -> Void,
    events: @escaping @Sendable (PulseListenerEvent) -> Void,
    pause: (@Sendable (Duration) -> Void)? = nil
  ) -> PulseListener {
    let listener = PulseListener()
    let thread = OwnThread.start(name: "serialgps-pps") {
      // A source without a timeout (TIOCMIWAIT) is woken by a signal to stop.
      OwnThread.acceptWakes()
      listener.run(open: open, retry: retry, pulse: pulse, events: events, pause: pause)
    }
    listener.thread.withLock { $0 = thread }
    return listener
  }

  private func run(
    open: () throws(TimeServiceError) -> any PPSSource, retry: PPSRetry?,
    pulse: (Pulse) -> Void, events: (PulseListenerEvent) -> Void,
    pause: ((Duration) -> Void)?
  ) {
    var retry = retry
    var source: (any PPSSource)?
    while !isStopped {
      do throws(TimeServiceError) {
        if source == nil { source = try open() }
        if let next = try source!.nextPulse(timeout: Self.timeout) {
          if isStopped { break }
          if retry?.pulsed() == true { events(.resumed) }
          pulse(next)
        } else {
          lock.withLock { state.silences += 1 }
        }
      } catch {
        // Released before the wait: a device that is gone is closed while we wait for it.
        source = nil
        if isStopped { break }
        guard retry != nil else {
          events(.failed(error, retryingIn: nil))
          break
        }
        let (wait, report) = retry!.failed()
        if report { events(.failed(error, retryingIn: wait)) }
        if let pause { pause(wait) } else { sleep(wait) }
      }
    }
  }

  /// Waits `length`, or less if the listener is stopped meanwhile.
  private func sleep(_ length: Duration) {
    let deadline = MonotonicInstant.now + length
    lock.withLock {
      while !state.stopped {
        if !lock.wait(until: deadline) { break }
      }
    }
  }

  /// Waits of ``timeout`` that ended without a pulse.
  public var silentWaits: Int { lock.withLock { state.silences } }

  /// Asks the thread to end: it does after the wait in progress (at most ``timeout`` for the
  /// kernel PPS; the carrier-detect line ends at its next change, or when the port hangs up).
  /// Does not wait; ``stopAndWait()`` ends a wait in progress at once.
  public func stop() {
    lock.withLock {
      state.stopped = true
      lock.broadcast()
    }
  }

  /// Stops the thread and waits until it has ended, waking it out of the wait in progress
  /// (a `TIOCMIWAIT` on a line that never changes, a `PPS_FETCH`) with a signal: when this
  /// returns, the thread is gone and its source released. Blocks the caller for a few
  /// milliseconds at most: not for the cooperative pool.
  public func stopAndWait() {
    stop()
    guard let thread = thread.withLock({ $0 }) else { return }
    thread.wakeUntilReturned()
    thread.joinBlocking()
  }

  /// Waits until the thread has ended (after ``stop()``, or a source error).
  public func finished() async {
    guard let thread = thread.withLock({ $0 }) else { return }
    await thread.join()
  }
}
