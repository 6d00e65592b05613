import CMosquitto
import Glibc
import POSIX

// The only file of this module that touches threads, epoll(7) and the eventfd. When the shared
// system layer lands (`POSIX`: OwnThread, EventSignal, a wait with a deadline), `Wakeup`
// becomes its EventSignal and the thread its `OwnThread`; nothing else here changes. (epoll,
// not poll: with hundreds of connections a wake-up costs the sockets that are ready, not all
// of them.)

/// What the network thread asks of each client it serves; called on that thread only.
protocol NetworkClient: AnyObject {
  /// The socket to watch now (`nil`: none), whether to wait until it can be written, and when
  /// the client next wants ``serviceDeadline(now:)``. Asked again each time the client was
  /// touched (``NetworkThread/touch(_:)``), and after each service.
  var interest: (socket: Int32?, write: Bool, deadline: Duration?) { get }
  /// The socket is readable, writable, or has failed (hang-up, error).
  func serviceSocket(readable: Bool, writable: Bool, failed: Bool, now: Duration)
  /// The deadline has come.
  func serviceDeadline(now: Duration)
  /// Sends what the client held back since ``NetworkThread/holdWrites(of:)``.
  func releaseWrites()
}

/// The one thread that owns every libmosquitto client of the process (libmosquitto objects are
/// not safe to share between threads): it waits on their sockets, runs their timers, and runs
/// the work other threads post to it, in the order posted.
///
/// It starts with the first client and then lives as long as the process, as the driver's
/// executor does. With no client it sleeps without a timeout: no wake-ups.
///
/// `@unchecked Sendable`: everything but the inbox, `started` and the eventfd is owned by the
/// thread it starts, which the compiler cannot know.
final class NetworkThread: @unchecked Sendable {
  static let shared = NetworkThread()

  /// Monotonic time for every client and state machine here, since the thread was made.
  private let origin = ContinuousClock.now
  var now: Duration { ContinuousClock.now - origin }

  private let wakeup = Wakeup()
  private let inbox = Locked<[@Sendable () -> Void]>([])
  private let started = Locked(false)
  private let epoll = epoll_create1(Int32(EPOLL_CLOEXEC))

  // Owned by the thread.
  private struct Registration {
    let client: NetworkClient
    var socket: Int32?
    var write = false
    var deadline: Duration?
  }
  private var registrations: [UInt64: Registration] = [:]
  private var tokens: [ObjectIdentifier: UInt64] = [:]
  private var nextToken: UInt64 = 1
  /// Clients whose interest may have changed since the last wait.
  private var touched: Set<UInt64> = []
  /// Clients holding writes back until the thread is done with the work at hand.
  private var holding: Set<UInt64> = []
  /// Which client each watched descriptor is watched for: a descriptor libmosquitto closed
  /// may come back as another client's socket, and must not then be unwatched for the first.
  private var watchedBy: [Int32: UInt64] = [:]

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
  func add(_ client: NetworkClient) {
    let token = nextToken
    nextToken += 1
    tokens[ObjectIdentifier(client)] = token
    registrations[token] = Registration(client: client)
    touched.insert(token)
  }

  /// Stops serving `client`; on the thread only.
  func remove(_ client: NetworkClient) {
    guard let token = tokens.removeValue(forKey: ObjectIdentifier(client)),
      let registration = registrations.removeValue(forKey: token)
    else { return }
    touched.remove(token)
    holding.remove(token)
    if let socket = registration.socket { unwatch(socket, token: token) }
  }

  /// `client` holds its writes back (corked) until the work in hand is done: then (after the
  /// job, and always before the thread waits) its ``NetworkClient/releaseWrites()`` sends them
  /// together. On the thread only.
  func holdWrites(of client: NetworkClient) {
    if let token = tokens[ObjectIdentifier(client)] { holding.insert(token) }
  }

  /// `client`'s interest may have changed (a publication waiting to be written, a new socket,
  /// a new deadline): asked again before the thread next waits. On the thread only.
  func touch(_ client: NetworkClient) {
    if let token = tokens[ObjectIdentifier(client)] { touched.insert(token) }
  }

  private func startIfNeeded() {
    let first = started.withLock { started -> Bool in
      defer { started = true }
      return !started
    }
    guard first else { return }
    // libmosquitto's global set-up (OpenSSL, sockets) is not thread-safe: done once, here.
    _ = Libmosquitto.functions.mosquitto_lib_init()
    if wakeup.works {
      var event = epoll_event(events: EPOLLIN.rawValue, data: epoll_data_t(u64: 0))
      epoll_ctl(epoll, EPOLL_CTL_ADD, wakeup.descriptor, &event)
    }
    _ = OwnThread.start(name: "serialgps-mqtt") { [self] in
      cmosquitto_name_current_thread("serialgps-mqtt")
      run()
    }
  }

  private func run() {
    var events = [epoll_event](repeating: epoll_event(), count: 256)
    while true {
      let jobs = inbox.withLock { inbox -> [@Sendable () -> Void] in
        defer { inbox.removeAll(keepingCapacity: true) }
        return inbox
      }
      // Released after each job (one receiver's events, its TPV and SKY together), not after
      // the whole batch: the first receivers of a burst must not wait for the last.
      for job in jobs {
        job()
        releaseHeldWrites()
      }
      releaseHeldWrites()  // what the sockets and deadlines served last published
      refreshTouched()

      var deadline: Duration?
      for registration in registrations.values {
        if let next = registration.deadline { deadline = min(deadline ?? next, next) }
      }
      var timeout = deadline.map { milliseconds(until: $0) } ?? -1
      if !wakeup.works { timeout = timeout < 0 ? 5 : min(timeout, 5) }
      let ready: Int32
      do {
        ready = try retryingOnInterrupt { epoll_wait(epoll, &events, Int32(events.count), timeout) }
      } catch {
        ready = 0
        // No epoll (the process was out of descriptors when it was made): never spin.
        usleep(5000)
      }
      let now = self.now
      for index in 0..<max(0, Int(ready)) {
        let event = events[index]
        let token = event.data.u64
        if token == 0 {
          wakeup.drain()
          continue
        }
        guard let client = registrations[token]?.client else { continue }
        let flags = event.events
        client.serviceSocket(
          readable: flags & EPOLLIN.rawValue != 0, writable: flags & EPOLLOUT.rawValue != 0,
          failed: flags & (EPOLLHUP.rawValue | EPOLLERR.rawValue) != 0, now: now)
        touched.insert(token)
      }
      for (token, registration) in registrations {
        guard let due = registration.deadline, due <= now else { continue }
        registration.client.serviceDeadline(now: now)
        touched.insert(token)
      }
    }
  }

  /// What was published since the last release (by a job, or by the sockets and deadlines
  /// served) leaves now, each connection's in as few segments as fit.
  private func releaseHeldWrites() {
    guard !holding.isEmpty else { return }
    let tokens = holding
    holding.removeAll(keepingCapacity: true)
    for token in tokens {
      guard let client = registrations[token]?.client else { continue }
      client.releaseWrites()
      touched.insert(token)
    }
  }

  /// Asks the touched clients for their interest and watches their sockets accordingly.
  private func refreshTouched() {
    while !touched.isEmpty {
      let tokens = touched
      touched.removeAll(keepingCapacity: true)
      for token in tokens {
        guard var registration = registrations[token] else { continue }
        let interest = registration.client.interest
        registration.deadline = interest.deadline
        if interest.socket != registration.socket {
          if let old = registration.socket { unwatch(old, token: token) }
          if let socket = interest.socket { watch(socket, token: token, write: interest.write) }
        } else if let socket = interest.socket, interest.write != registration.write {
          var event = epoll_event(
            events: EPOLLIN.rawValue | (interest.write ? EPOLLOUT.rawValue : 0),
            data: epoll_data_t(u64: token))
          epoll_ctl(epoll, EPOLL_CTL_MOD, socket, &event)
        }
        registration.socket = interest.socket
        registration.write = interest.write
        registrations[token] = registration
      }
    }
  }

  private func watch(_ socket: Int32, token: UInt64, write: Bool) {
    var event = epoll_event(
      events: EPOLLIN.rawValue | (write ? EPOLLOUT.rawValue : 0), data: epoll_data_t(u64: token))
    if epoll_ctl(epoll, EPOLL_CTL_ADD, socket, &event) != 0 && errno == EEXIST {
      // Still registered for an earlier socket with this number: take it over.
      epoll_ctl(epoll, EPOLL_CTL_MOD, socket, &event)
    }
    watchedBy[socket] = token
  }

  private func unwatch(_ socket: Int32, token: UInt64) {
    guard watchedBy[socket] == token else { return }  // already another client's socket
    watchedBy.removeValue(forKey: socket)
    // Fails harmlessly when libmosquitto has already closed the socket (closing removes it).
    var event = epoll_event()
    epoll_ctl(epoll, EPOLL_CTL_DEL, socket, &event)
  }

  /// Milliseconds from now to `deadline`, rounded up so a wake is never early.
  private func milliseconds(until deadline: Duration) -> Int32 {
    (deadline - now).pollMilliseconds
  }
}

/// The shared ``EventSignal`` that other threads write to end the network thread's wait.
private struct Wakeup: Sendable {
  let event: EventSignal?

  /// Without an eventfd (the process is out of descriptors) the thread looks at its inbox
  /// every few milliseconds instead of being woken: slower, never stuck.
  var works: Bool { event != nil }
  var descriptor: Int32 { event?.descriptor.rawValue ?? -1 }

  init() { event = try? EventSignal.make() }

  func signal() { event?.signal() }
  func drain() { event?.consume() }
}
