import Glibc
import NMEA
import POSIX
import SerialGPS

/// Corrections from an NTRIP caster for a gated receiver, fetched only while it is powered:
/// the I/O shell around ``NTRIPSession`` (which decides everything). The receiver's status
/// changes come from ``GPSReceiver/observe(bufferSize:)``, which powers nothing, through a
/// small task on the ``DriverExecutor``; one thread, `serialgps-ntrip`, hands them to the
/// session, runs its actions on a non-blocking TCP socket, and writes
/// each whole, valid RTCM 3 frame with ``GPSReceiver/write(_:)`` — the receiver's one writer,
/// which puts client bytes between the driver's own command exchanges, never inside one.
/// While the receiver sleeps nothing runs: no timer, the thread asleep in `poll` until a
/// status change or ``stop()``.
///
/// ```swift
/// let caster = try NTRIPCaster(url: "ntrip://rtk2go.com/MOUNT")
/// let client = try NTRIPClient(receiver: receiver, configuration: .init(caster: caster))
/// // … later
/// await client.stop()
/// ```
public final class NTRIPClient: Sendable {
  public struct Options: Sendable {
    /// Bytes of corrections handed to the receiver and not yet written, past which whole
    /// frames are dropped and counted (``NTRIPStatistics/framesDropped``): a receiver whose
    /// port stalls holds nothing more.
    public var maximumPendingBytes = 16 * 1024
    /// Where the client says what happens (connections, failures); never with a password.
    /// Called on the client's thread; must not block.
    public var log: (@Sendable (String) -> Void)?

    public init() {}
  }

  private let thread: OwnThread
  private let observer: Task<Void, Never>
  private let wake: EventSignal
  private let shared: Locked<Shared>

  fileprivate struct Shared: Sendable {
    var stopping = false
    /// Status changes the observer passed on and the thread has not yet taken, in order.
    var statuses: [ReceiverStatus] = []
    /// The receiver shut down: no more statuses come.
    var observerEnded = false
    var statistics = NTRIPStatistics()
    var stoppedBy: NTRIPFailure?
  }

  /// Starts following `receiver`. Throws only when no eventfd can be made.
  public init(
    receiver: GPSReceiver, configuration: NTRIPSession.Configuration, options: Options = Options(),
    clock: any DriverClock = SystemClock()
  ) throws(Errno) {
    let wake = try EventSignal.make()
    let shared = Locked(Shared())
    self.wake = wake
    self.shared = shared
    let loop = ClientLoop(
      receiver: receiver, session: NTRIPSession(configuration: configuration), options: options,
      clock: clock, wake: wake, shared: shared)
    thread = OwnThread.start(name: "serialgps-ntrip") { loop.run() }
    // Only the statuses matter; a few buffered fixes ahead of them may be dropped.
    let events = receiver.observe(bufferSize: 8)
    observer = DriverExecutor.task {
      for await event in events {
        guard case .status(let status) = event else { continue }
        shared.withLock { shared in
          // Statuses come a few per power change; a thread that stopped taking them (only
          // while it stops) leaves the oldest dropped rather than a growing queue.
          if shared.statuses.count >= 64 { shared.statuses.removeFirst() }
          shared.statuses.append(status)
        }
        wake.signal()
      }
      shared.withLock { $0.observerEnded = true }
      wake.signal()
    }
  }

  /// Counters so far.
  public var statistics: NTRIPStatistics { shared.withLock { $0.statistics } }

  /// The failure that stopped the client until the receiver is next powered (a wrong
  /// password or mountpoint), if any.
  public var stoppedBy: NTRIPFailure? { shared.withLock { $0.stoppedBy } }

  /// Closes the connection and ends the thread; returns when it has.
  public func stop() async {
    shared.withLock { $0.stopping = true }
    wake.signal()
    await thread.join()
    // The observer signals `wake`: it ends before the descriptor is closed.
    observer.cancel()
    await observer.value
    wake.close()
  }
}

/// The client's thread: owns the socket and the session alone.
private final class ClientLoop: @unchecked Sendable {
  let receiver: GPSReceiver
  var session: NTRIPSession
  let options: NTRIPClient.Options
  let clock: any DriverClock
  let wake: EventSignal
  let shared: Locked<NTRIPClient.Shared>

  var socket: Int32?
  var connecting = false
  var outgoing: [UInt8] = []
  var observing = true
  /// Bytes handed to ``GPSReceiver/write(_:)``, and the receiver's counters of written and
  /// refused bytes when the client began: what is still waiting is the difference.
  var handed = 0
  let writtenAtStart: Int
  var framesForwarded = 0
  var framesDropped = 0
  var wakeUps = 0
  var timedWakeUps = 0

  init(
    receiver: GPSReceiver, session: NTRIPSession, options: NTRIPClient.Options,
    clock: any DriverClock, wake: EventSignal, shared: Locked<NTRIPClient.Shared>
  ) {
    self.receiver = receiver
    self.session = session
    self.options = options
    self.clock = clock
    self.wake = wake
    self.shared = shared
    let statistics = receiver.statistics
    writtenAtStart = statistics.bytesWritten + statistics.bytesNotWritten
  }

  func run() {
    var buffer = [UInt8](repeating: 0, count: 4096)
    while true {
      let (stopping, statuses, ended) = shared.withLock { shared in
        defer { shared.statuses.removeAll() }
        return (shared.stopping, shared.statuses, shared.observerEnded)
      }
      if stopping { break }
      for status in statuses { perform(session.receiverStatus(status, at: clock.now)) }
      if ended && observing {
        // The receiver shut down without a last status: it is powered no more.
        observing = false
        perform(session.power(false, at: clock.now))
      }
      perform(session.tick(at: clock.now, fix: fix))
      publish()

      var fds = [wake.pollDescriptor]
      if let socket {
        var events = Int16(POLLIN)
        if connecting || !outgoing.isEmpty { events |= Int16(POLLOUT) }
        fds.append(pollfd(fd: socket, events: events, revents: 0))
      }
      // No deadline (the receiver asleep, or stopped at a failure): no timer at all.
      let deadline = session.nextDeadline.map { due in
        MonotonicInstant(
          sinceOrigin: MonotonicInstant.now.sinceOrigin + max(.zero, due - clock.now))
      }
      let ready = (try? poll(&fds, until: deadline)) ?? true
      wakeUps += 1
      if !ready { timedWakeUps += 1 }
      if fds[0].revents != 0 { wake.consume() }
      if fds.count > 1 { service(fds[1].revents, buffer: &buffer) }
    }
    if socket != nil {
      _ = session.power(false, at: clock.now)
      close()
    }
    publish()
  }

  private var fix: Fix? { receiver.replay?.fix }

  private func service(_ revents: Int16, buffer: inout [UInt8]) {
    guard let socket, revents != 0 else { return }
    if connecting {
      var error: Int32 = 0
      var length = socklen_t(MemoryLayout<Int32>.size)
      _ = getsockopt(socket, SOL_SOCKET, SO_ERROR, &error, &length)
      if error != 0 {
        close()
        perform(
          session.connectionEnded(at: clock.now, reason: String(cString: strerror(error))))
        return
      }
      guard revents & Int16(POLLOUT) != 0 else { return }
      connecting = false
      perform(session.connected(at: clock.now))
    }
    if revents & Int16(POLLOUT) != 0 { flush() }
    guard self.socket != nil, revents & Int16(POLLIN | POLLHUP | POLLERR) != 0 else { return }
    for _ in 0..<8 {
      let count = buffer.withUnsafeMutableBytes { raw in
        (try? retryingOnInterrupt { recv(socket, raw.baseAddress, raw.count, 0) }) ?? -1
      }
      if count > 0 {
        perform(session.received(buffer[0..<count], at: clock.now, fix: fix))
        if self.socket == nil { return }
        continue
      }
      if count < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) { return }
      let reason = count < 0 ? String(cString: strerror(errno)) : nil
      close()
      perform(session.connectionEnded(at: clock.now, reason: reason))
      return
    }
  }

  private func perform(_ actions: [NTRIPSession.Action]) {
    for action in actions {
      switch action {
      case .connect:
        open()
      case .send(let bytes):
        // The request and a GGA now and then: a caster that reads nothing gets no more.
        if outgoing.count + bytes.count <= 16 * 1024 { outgoing += bytes }
        flush()
      case .forward(let frame):
        // What is still waiting: handed over less what the receiver wrote or dropped since
        // the client began. A raw-port writer's bytes count there too: while one writes, the
        // bound is loose by what it wrote; without one it is exact.
        let statistics = receiver.statistics
        let done = statistics.bytesWritten + statistics.bytesNotWritten - writtenAtStart
        if handed - done + frame.count > options.maximumPendingBytes {
          framesDropped += 1
        } else {
          handed += frame.count
          framesForwarded += 1
          receiver.write(frame)
        }
      case .disconnect:
        close()
      case .report(let report):
        switch report {
        case .ended(let failure, _, _):
          shared.withLock { $0.stoppedBy = failure?.isPermanent == true ? failure : nil }
        case .streaming:
          shared.withLock { $0.stoppedBy = nil }
        case .connecting:
          break
        }
        options.log?(report.description)
      }
    }
  }

  private func publish() {
    var statistics = session.statistics
    statistics.framesForwarded = framesForwarded
    statistics.framesDropped = framesDropped
    statistics.wakeUps = wakeUps
    statistics.timedWakeUps = timedWakeUps
    shared.withLock { $0.statistics = statistics }
  }

  /// Starts a non-blocking connect to the caster's first address.
  private func open() {
    close()
    let caster = session.configuration.caster
    var hints = addrinfo()
    hints.ai_family = AF_UNSPEC
    hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
    var list: UnsafeMutablePointer<addrinfo>?
    let resolved = getaddrinfo(caster.host, String(caster.port), &hints, &list)
    guard resolved == 0, let first = list else {
      let reason = "cannot resolve \(caster.host): " + String(cString: gai_strerror(resolved))
      perform(session.connectionEnded(at: clock.now, reason: reason))
      return
    }
    defer { freeaddrinfo(list) }
    let descriptor = Glibc.socket(
      first.pointee.ai_family,
      Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue),
      0)
    guard descriptor >= 0 else {
      perform(
        session.connectionEnded(at: clock.now, reason: String(cString: strerror(errno))))
      return
    }
    let result = Glibc.connect(descriptor, first.pointee.ai_addr, first.pointee.ai_addrlen)
    if result != 0 && errno != EINPROGRESS {
      let reason = String(cString: strerror(errno))
      _ = Glibc.close(descriptor)
      perform(session.connectionEnded(at: clock.now, reason: reason))
      return
    }
    socket = descriptor
    connecting = true
  }

  private func flush() {
    guard let socket, !connecting, !outgoing.isEmpty else { return }
    let sent = outgoing.withUnsafeBytes { raw in
      (try? retryingOnInterrupt {
        send(socket, raw.baseAddress, raw.count, Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT))
      }) ?? (errno == EAGAIN ? 0 : -1)
    }
    if sent > 0 { outgoing.removeFirst(sent) }
  }

  private func close() {
    if let socket { _ = Glibc.close(socket) }
    socket = nil
    connecting = false
    outgoing.removeAll()
  }
}
