import CMosquitto
import Glibc
import Threading

// The only file of this module that touches threads, poll(2) and the eventfd. When the shared
// system layer lands (`POSIX`: OwnThread, EventSignal, poll with a deadline), `Wakeup` becomes
// its EventSignal and `waitForReadiness` its poll; nothing else here changes.

/// What the network thread asks of each client it serves; called on that thread only.
protocol NetworkClient: AnyObject {
  /// The socket to watch now and whether to wait until it can be written; `nil`: none.
  var pollRequest: (descriptor: Int32, write: Bool)? { get }
  /// When the client next wants ``serviceDeadline(now:)``; `nil`: never.
  var nextDeadline: Duration? { get }
  /// The socket is readable, writable, or has failed (hang-up, error).
  func serviceSocket(readable: Bool, writable: Bool, failed: Bool, now: Duration)
  /// ``nextDeadline`` has come.
  func serviceDeadline(now: Duration)
}

/// The one thread that owns every libmosquitto client of the process (libmosquitto objects are
/// not safe to share between threads): it polls their sockets, runs their timers, and runs the
/// work other threads post to it, in the order posted.
///
/// It starts with the first client and then lives as long as the process, as the driver's
/// executor does. With no client it sleeps in `poll` without a timeout: no wake-ups.
final class NetworkThread: @unchecked Sendable {
  static let shared = NetworkThread()

  /// Monotonic time for every client and state machine here, since the thread was made.
  private let origin = ContinuousClock.now
  var now: Duration { ContinuousClock.now - origin }

  private let wakeup = Wakeup()
  private let inbox = Locked<[@Sendable () -> Void]>([])
  private let started = Locked(false)
  /// Owned by the thread.
  private var clients: [ObjectIdentifier: NetworkClient] = [:]

  private init() {}

  /// Runs `work` on the thread, after the work posted before it.
  func post(_ work: @escaping @Sendable () -> Void) {
    let wasEmpty = inbox.withLock { inbox -> Bool in
      inbox.append(work)
      return inbox.count == 1
    }
    startIfNeeded()
    // One wake-up per batch: the thread takes the whole inbox at once.
    if wasEmpty { wakeup.signal() }
  }

  /// Starts serving `client`; on the thread only.
  func add(_ client: NetworkClient) { clients[ObjectIdentifier(client)] = client }

  /// Stops serving `client`; on the thread only.
  func remove(_ client: NetworkClient) { clients.removeValue(forKey: ObjectIdentifier(client)) }

  private func startIfNeeded() {
    let first = started.withLock { started -> Bool in
      defer { started = true }
      return !started
    }
    guard first else { return }
    // libmosquitto's global set-up (OpenSSL, sockets) is not thread-safe: done once, here.
    mosquitto_lib_init()
    _ = OwnThread.start { [self] in
      cmosquitto_name_current_thread("serialgps-mqtt")
      run()
    }
  }

  private func run() {
    var descriptors: [pollfd] = []
    var polled: [NetworkClient] = []
    while true {
      let jobs = inbox.withLock { inbox -> [@Sendable () -> Void] in
        defer { inbox.removeAll(keepingCapacity: true) }
        return inbox
      }
      for job in jobs { job() }

      descriptors.removeAll(keepingCapacity: true)
      polled.removeAll(keepingCapacity: true)
      // A negative descriptor (no eventfd) is skipped by poll.
      descriptors.append(pollfd(fd: wakeup.descriptor, events: Int16(POLLIN), revents: 0))
      var deadline: Duration?
      for client in clients.values {
        if let request = client.pollRequest {
          let events = Int16(POLLIN) | (request.write ? Int16(POLLOUT) : 0)
          descriptors.append(pollfd(fd: request.descriptor, events: events, revents: 0))
          polled.append(client)
        }
        if let next = client.nextDeadline { deadline = min(deadline ?? next, next) }
      }
      var timeout = deadline.map { milliseconds(until: $0) } ?? -1
      if !wakeup.works { timeout = timeout < 0 ? 5 : min(timeout, 5) }
      let ready = poll(&descriptors, nfds_t(descriptors.count), timeout)
      if ready < 0 && errno != EINTR { continue }
      if descriptors[0].revents != 0 { wakeup.drain() }
      let now = self.now
      for (offset, client) in polled.enumerated() {
        let revents = descriptors[offset + 1].revents
        guard revents != 0 else { continue }
        client.serviceSocket(
          readable: revents & Int16(POLLIN) != 0, writable: revents & Int16(POLLOUT) != 0,
          failed: revents & (Int16(POLLHUP) | Int16(POLLERR) | Int16(POLLNVAL)) != 0, now: now)
      }
      for client in Array(clients.values) {
        if let next = client.nextDeadline, next <= now { client.serviceDeadline(now: now) }
      }
    }
  }

  /// Milliseconds from now to `deadline`, rounded up so a wake is never early.
  private func milliseconds(until deadline: Duration) -> Int32 {
    let left = deadline - now
    guard left > .zero else { return 0 }
    let (seconds, attoseconds) = left.components
    let milliseconds = seconds * 1000 + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000
    return Int32(clamping: milliseconds)
  }
}

/// An eventfd that other threads write to end the network thread's `poll`.
private final class Wakeup: Sendable {
  let descriptor: Int32

  /// Without an eventfd (the process is out of descriptors) the thread polls every few
  /// milliseconds instead of being woken: slower, never stuck.
  var works: Bool { descriptor >= 0 }

  init() {
    descriptor = eventfd(0, Int32(EFD_NONBLOCK) | Int32(EFD_CLOEXEC))
  }

  // Non-blocking eventfd reads and writes do not sleep, so a signal cannot interrupt them.
  func signal() {
    guard works else { return }
    var one: UInt64 = 1
    _ = write(descriptor, &one, 8)
  }

  func drain() {
    guard works else { return }
    var value: UInt64 = 0
    _ = read(descriptor, &value, 8)
  }
}
