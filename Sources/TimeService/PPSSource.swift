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

/// Runs a ``PPSSource`` on a thread of its own and hands each pulse on.
///
/// The thread waits in the source (in the kernel, for the real ones) and wakes only for a
/// pulse, or once per ``timeout`` without one to notice ``stop()``. A source error (the
/// device vanished) is reported once and ends the thread.
public final class PulseListener: Sendable {
  /// How long one wait for a pulse lasts: longer than a second, so that a live 1 Hz source
  /// never times out and every timeout means a missing pulse.
  public static let timeout: Duration = .milliseconds(1500)

  private let stopped = Locked(false)
  private let thread: Locked<OwnThread?> = Locked(nil)
  private let silences = Locked(0)

  private init() {}

  /// Starts listening to `source`: `pulse` is called on the listener's thread for each
  /// pulse, `failure` once if the source fails (then the thread ends).
  public static func start(
    _ source: any PPSSource, pulse: @escaping @Sendable (Pulse) -> Void,
    failure: @escaping @Sendable (TimeServiceError) -> Void
  ) -> PulseListener {
    let listener = PulseListener()
    let thread = OwnThread.start(name: "serialgps-pps") {
      while !listener.stopped.withLock({ $0 }) {
        do throws(TimeServiceError) {
          if let next = try source.nextPulse(timeout: timeout) {
            if listener.stopped.withLock({ $0 }) { break }
            pulse(next)
          } else {
            listener.silences.withLock { $0 += 1 }
          }
        } catch {
          if !listener.stopped.withLock({ $0 }) { failure(error) }
          break
        }
      }
    }
    listener.thread.withLock { $0 = thread }
    return listener
  }

  /// Waits of ``timeout`` that ended without a pulse.
  public var silentWaits: Int { silences.withLock { $0 } }

  /// Asks the thread to end: it does after the wait in progress (at most ``timeout`` for the
  /// kernel PPS; the carrier-detect line ends at its next change or when the port hangs up).
  public func stop() {
    stopped.withLock { $0 = true }
  }

  /// Waits until the thread has ended (after ``stop()``, or a source error).
  public func finished() async {
    guard let thread = thread.withLock({ $0 }) else { return }
    await thread.join()
  }
}
