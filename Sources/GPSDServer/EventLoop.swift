import Chipsets
import Discovery
import GPSDProtocol
import Glibc
import NMEA
import POSIX
import SerialGPS

/// The server's one thread: `poll(2)` on the listening socket, the clients and a wake-up
/// eventfd; every socket non-blocking. Receivers' events and hotplug events arrive through
/// an inbox that other threads append to before writing the eventfd. Protocol decisions are
/// `ServerState`'s; this type performs its actions: queue bytes, (un)subscribe receivers.
///
/// No thread ever waits for a client: a write takes what the socket accepts now and queues
/// the rest, and a client whose queue passes ``GPSDServer/Configuration/maximumBacklog`` is
/// dropped. Receivers' readers never wait for the server: they append to the inbox
/// themselves (``GPSReceiver/subscribeOnReaderThread(rawData:sentences:_:)``) and signal the
/// eventfd, with no task or queue in between.
final class EventLoop: @unchecked Sendable {
  enum Message: Sendable {
    case receiver(DeviceID, generation: Int, ReceiverEventOrRawData)
    /// A time report of the time service of the device at this path (`serve --time`).
    case time(path: String, DeviceTimeReport)
    case hotplug(HotplugEvent)
    case discoveryFailed(String)
    case barrier(CheckedContinuation<Void, Never>)
    case stop
  }

  struct ReceiverSlot {
    let receiver: GPSReceiver
    /// The device's path, for log messages.
    let path: String
    var subscription: Subscription?
    var need: ReceiverNeed?
    /// Events of an older subscription still in flight are recognised by this and dropped.
    var generation = 0
    /// The port's sysfs path, for devices found by discovery.
    var sysPath: String?
    /// What discovery knows about it, for devices found by discovery.
    var device: SerialDevice?
  }

  /// A class, so that queueing bytes for a client changes its queue in place: a copy taken
  /// out of the dictionary would share the queue's storage with the one still in it, and
  /// appending would copy the whole queue (up to the backlog limit) for every report.
  final class Connection {
    let socket: ClientSocket
    var output = OutputQueue()
    let peer: String
    /// When the client last sent something (or connected), for the idle timeout.
    var lastRequest: ContinuousClock.Instant

    init(socket: ClientSocket, peer: String, lastRequest: ContinuousClock.Instant) {
      self.socket = socket
      self.peer = peer
      self.lastRequest = lastRequest
    }
  }

  let configuration: GPSDServer.Configuration
  let clock: any DriverClock
  /// `nil`: no TCP listener (receivers served to in-process subscribers only).
  let listener: ListeningSocket?
  /// Other threads signal it after posting to the inbox; the loop polls it.
  let wakeup: EventSignal
  private let inbox: Locked<Inbox>
  let counters = Locked(ServerStatistics())
  /// Receivers to shut down once the loop has stopped.
  let retired = Locked<[GPSReceiver]>([])

  // Owned by the loop thread (set up before it starts).
  private var state: ServerState
  private var connections: [ClientID: Connection] = [:]
  private(set) var receivers: [DeviceID: ReceiverSlot] = [:]
  private var nextClientID = 1
  private var nextDeviceID = 1
  private var stopping = false
  private var lastDropLog: ContinuousClock.Instant?
  /// Set when `accept` failed (no descriptor left): the listener is not polled until then.
  private var acceptPausedUntil: ContinuousClock.Instant?
  private var acceptFailureLogged = false
  private var lastAcceptFailureLog: ContinuousClock.Instant?
  private var acceptFailuresNotLogged = 0

  init(
    configuration: GPSDServer.Configuration, clock: any DriverClock, listener: ListeningSocket?,
    wakeup: EventSignal
  ) {
    self.configuration = configuration
    self.clock = clock
    self.listener = listener
    self.wakeup = wakeup
    inbox = Locked(Inbox(reportLimit: max(1, configuration.subscriptionBufferSize)))
    var settings = ServerState.Settings()
    settings.release = configuration.release
    settings.revision = configuration.revision
    settings.maximumRequestLength = configuration.maximumRequestLength
    state = ServerState(settings: settings)
  }

  deinit { wakeup.close() }

  /// Adds a device before the loop starts (devices named on the command line).
  func addInitialDevice(_ description: DeviceDescription, receiver: GPSReceiver) {
    let id = nextDeviceID
    nextDeviceID += 1
    receivers[id] = ReceiverSlot(receiver: receiver, path: description.path)
    perform(state.deviceAdded(id, description, wallClock: wallClockNow()))
    configuration.receiverChanges?(
      .added(ServedReceiver(path: description.path, device: nil, receiver: receiver)))
  }

  // MARK: - From other threads

  func post(_ message: Message) {
    inbox.withLock { $0.post(message) }
    wakeup.signal()
  }

  // MARK: - The loop

  func run() {
    let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 16 * 1024, alignment: 1)
    defer { buffer.deallocate() }
    var descriptors: [pollfd] = []
    var order: [ClientID] = []
    while !stopping {
      descriptors.removeAll(keepingCapacity: true)
      order.removeAll(keepingCapacity: true)
      descriptors.append(wakeup.pollDescriptor)
      // Without a listener, or while accepting is paused, the slot stays with a descriptor
      // poll skips.
      if let until = acceptPausedUntil, ContinuousClock.now >= until { acceptPausedUntil = nil }
      let listening = acceptPausedUntil == nil ? listener?.descriptor ?? -1 : -1
      descriptors.append(pollfd(fd: listening, events: Int16(POLLIN), revents: 0))
      for (id, connection) in connections {
        order.append(id)
        let events = Int16(POLLIN) | (connection.output.isEmpty ? 0 : Int16(POLLOUT))
        descriptors.append(pollfd(fd: connection.socket.descriptor, events: events, revents: 0))
      }
      // Nothing here is periodic: the only timeouts are the next idle client's and the end
      // of a pause in accepting, so a server whose clients all watch (or that has none)
      // never wakes on its own.
      let deadline = [nextIdleDeadline(), acceptPausedUntil.map(MonotonicInstant.init)]
        .compactMap { $0 }.min()
      do {
        _ = try poll(&descriptors, until: deadline)
      } catch {
        log("serialgps serve: poll failed: \(SocketError("poll", error)); stopping")
        break
      }
      if descriptors[0].revents != 0 {
        wakeup.consume()
        handleInbox()
      }
      if descriptors[1].revents != 0 { acceptClients() }
      for (offset, id) in order.enumerated() {
        let revents = descriptors[offset + 2].revents
        guard revents != 0, connections[id] != nil else { continue }
        if revents & Int16(POLLOUT) != 0 { flush(id) }
        if revents & Int16(POLLIN) != 0 { readClient(id, into: buffer) }
        // An error or hang-up without data to read would make every poll return at once.
        if revents & (Int16(POLLHUP) | Int16(POLLERR) | Int16(POLLNVAL)) != 0,
          revents & Int16(POLLIN) == 0
        {
          disconnect(id, reason: nil)
        }
      }
      closeIdleClients()
    }
    finish()
  }

  /// When the first client that neither watches nor asks anything reaches
  /// ``GPSDServer/Configuration/idleTimeout``; `nil` (wait forever) when there is none.
  private func nextIdleDeadline() -> MonotonicInstant? {
    guard let limit = configuration.idleTimeout else { return nil }
    var earliest: ContinuousClock.Instant?
    for (id, connection) in connections where !state.isWatching(id) {
      let deadline = connection.lastRequest + limit
      earliest = min(earliest ?? deadline, deadline)
    }
    return earliest.map(MonotonicInstant.init)
  }

  /// Closes the clients that have neither watched nor asked anything for the idle timeout,
  /// as gpsd does after 15 minutes: a slot held by a forgotten connection is given back.
  private func closeIdleClients() {
    guard let limit = configuration.idleTimeout else { return }
    let now = ContinuousClock.now
    let idle = connections.filter { id, connection in
      !state.isWatching(id) && now - connection.lastRequest >= limit
    }
    for (id, connection) in idle {
      disconnect(
        id, reason: "closed client \(connection.peer): no request for \(limit) and not watching")
    }
  }

  private func handleInbox() {
    let (messages, dropped) = inbox.withLock { $0.take() }
    if dropped > 0 { noteDroppedReports(dropped) }
    for message in messages {
      switch message {
      case .receiver(let id, let generation, let event):
        guard let slot = receivers[id], slot.generation == generation else { continue }
        // The receiver's messages name the device and say what to do; the operator sees them.
        switch event {
        case .event(.status(.disconnected(let reason))),
          .event(.status(.commandFailed(let reason))):
          log("serialgps serve: \(slot.path): \(reason)")
        case .event(.status(.commandsWithheld(let withheld))):
          log("serialgps serve: \(slot.path): \(withheld)")
        case .event(.status(.reconnected)):
          log("serialgps serve: \(slot.path): back")
        default:
          break
        }
        perform(state.receiverEvent(id, event, wallClock: wallClockNow()))
      case .time(let path, let report):
        guard let id = receivers.first(where: { $0.value.path == path })?.key else { continue }
        perform(state.timeReport(id, report))
      case .hotplug(let event):
        handleHotplug(event)
      case .discoveryFailed(let reason):
        log(
          "serialgps serve: receiver discovery stopped: \(reason); serving the receivers found so far"
        )
      case .barrier(let continuation):
        continuation.resume()
      case .stop:
        stopping = true
      }
    }
  }

  /// Counts reports the loop fell too far behind to handle, and says so at most every ten
  /// seconds: a sign of an overloaded board (or a replay at full speed), not of a client.
  private func noteDroppedReports(_ count: Int) {
    let total = counters.withLock { statistics -> Int in
      statistics.reportsDropped += count
      return statistics.reportsDropped
    }
    let now = ContinuousClock.now
    if let last = lastDropLog, now - last < .seconds(10) { return }
    lastDropLog = now
    log(
      "serialgps serve: fell behind the receivers: \(total) reports skipped so far "
        + "(the newest are kept)")
  }

  // MARK: - Clients

  /// Connections accepted per wake at most: in a burst of connections the loop must also get
  /// to the clients already connected (their requests, their closes that free slots), or
  /// the slots stay taken by clients that are gone and every newcomer is refused.
  static let acceptsPerWake = 16

  private func acceptClients() {
    guard let listener else { return }
    for _ in 0..<Self.acceptsPerWake {
      let descriptor: Int32?
      do {
        descriptor = try listener.accept()
      } catch {
        // EMFILE and the like: the pending connection stays queued and the listener stays
        // readable, so polling it again at once would spin (and log) until a descriptor is
        // free. Paused until a client leaves or a second has passed; said once (see
        // noteAcceptFailure).
        acceptPausedUntil = .now + .seconds(1)
        noteAcceptFailure(error)
        return
      }
      guard let descriptor else { return }
      acceptFailureLogged = false
      let socket = ClientSocket(descriptor: descriptor)
      let peer = peerName(descriptor)
      guard connections.count < configuration.maximumClients || evictIdleClient(for: peer) else {
        refuse(socket, peer: peer)
        continue
      }
      socket.configure(sendBufferSize: configuration.clientSendBufferSize)
      let id = nextClientID
      nextClientID += 1
      connections[id] = Connection(socket: socket, peer: peer, lastRequest: .now)
      counters.withLock {
        $0.clientsAccepted += 1
        $0.clients = connections.count
      }
      perform(state.clientConnected(id))
    }
  }

  /// Says that the server cannot accept clients: once each time it runs out, and, when it
  /// runs out again and again (a burst of connections queued behind the descriptor limit
  /// frees and takes descriptors in turns, more often the slower the machine), at most once
  /// every 10 seconds with the count of the times in between.
  private func noteAcceptFailure(_ error: any Error) {
    guard !acceptFailureLogged else { return }
    acceptFailureLogged = true
    let now = ContinuousClock.now
    if let last = lastAcceptFailureLog, now - last < .seconds(10) {
      acceptFailuresNotLogged += 1
      return
    }
    lastAcceptFailureLog = now
    let since =
      acceptFailuresNotLogged == 0
      ? "" : " (ran out \(acceptFailuresNotLogged) more times since the last message)"
    acceptFailuresNotLogged = 0
    log(
      "serialgps serve: cannot accept clients: \(error)\(since); waiting for a client to leave "
        + "(raise the process's descriptor limit, ulimit -n or LimitNOFILE=, or lower "
        + "--max-clients)")
  }

  /// Makes room for a newcomer when every slot is taken: closes the client that has gone
  /// longest without a request, among those that do not watch and have been quiet for at least
  /// ``GPSDServer/Configuration/evictionIdleTime``, telling it why. Watchers are never
  /// evicted. Returns whether a slot was freed.
  private func evictIdleClient(for newcomer: String) -> Bool {
    guard let minimum = configuration.evictionIdleTime else { return false }
    let now = ContinuousClock.now
    let candidate =
      connections
      .filter { id, connection in
        !state.isWatching(id) && now - connection.lastRequest >= minimum
      }
      .min { $0.value.lastRequest < $1.value.lastRequest }
    guard let (id, connection) = candidate else { return false }
    let idle = now - connection.lastRequest
    var writer = JSONWriter()
    writer.error(
      "Too many clients: this connection was idle and not watching, so it was closed to serve "
        + "a new one; reconnect when needed")
    writer.newline(crlf: true)
    // Nothing of this client's may be queued ahead of the notice, or it would be cut short.
    if connection.output.isEmpty {
      _ = writer.bytes.withUnsafeBytes { connection.socket.write($0) }
    }
    counters.withLock { $0.clientsEvicted += 1 }
    disconnect(
      id,
      reason: "closed idle client \(connection.peer) (not watching, no request for "
        + "\(idle.components.seconds) s) to make room for \(newcomer): "
        + "\(configuration.maximumClients) clients connected (--max-clients)")
    return true
  }

  /// Tells a client over the limit why, then closes it. The message fits any socket buffer,
  /// so the write never waits.
  private func refuse(_ socket: ClientSocket, peer: String) {
    var writer = JSONWriter()
    writer.error(
      "Too many clients: this server serves at most \(configuration.maximumClients) at once; "
        + "try again later")
    writer.newline(crlf: true)
    _ = writer.bytes.withUnsafeBytes { socket.write($0) }
    socket.closeAfterDiscardingInput()
    counters.withLock { $0.clientsRefused += 1 }
    log(
      "serialgps serve: refused a client from \(peer): \(configuration.maximumClients) clients "
        + "already connected, none of them idle (raise --max-clients to serve more)")
  }

  private func readClient(_ id: ClientID, into buffer: UnsafeMutableRawBufferPointer) {
    guard let connection = connections[id] else { return }
    // A few reads per wake at most, so one chatty client cannot starve the others.
    for _ in 0..<4 {
      switch connection.socket.read(into: buffer) {
      case .received(let count):
        connections[id]?.lastRequest = .now
        perform(
          state.clientInput(
            id, UnsafeRawBufferPointer(rebasing: buffer[0..<count]), wallClock: wallClockNow(),
            fixes: ReceiverFixes(receivers: receivers)))
        guard connections[id] != nil else { return }
      case .wouldBlock:
        return
      case .closed:
        disconnect(id, reason: nil)
        return
      }
    }
  }

  private func send(_ bytes: [UInt8], to id: ClientID) {
    guard let connection = connections[id] else { return }
    var offset = 0
    if connection.output.isEmpty {
      guard let written = bytes.withUnsafeBytes({ connection.socket.write($0) }) else {
        disconnect(id, reason: nil)
        return
      }
      offset = written
    }
    if offset < bytes.count { connection.output.append(bytes[offset...]) }
    if connection.output.count > configuration.maximumBacklog {
      counters.withLock { $0.clientsDropped += 1 }
      disconnect(
        id,
        reason: "dropped client \(connection.peer): it stopped reading "
          + "(\(connection.output.count) bytes waiting, limit \(configuration.maximumBacklog))")
    }
  }

  private func flush(_ id: ClientID) {
    guard let connection = connections[id] else { return }
    let socket = connection.socket
    if connection.output.drain({ socket.write($0) }) == nil { disconnect(id, reason: nil) }
  }

  private func disconnect(_ id: ClientID, reason: String?) {
    guard let connection = connections.removeValue(forKey: id) else { return }
    connection.socket.close()
    // A descriptor is free again: a connection waiting because there was none can be taken.
    acceptPausedUntil = nil
    counters.withLock { $0.clients = connections.count }
    if let reason { log("serialgps serve: \(reason)") }
    perform(state.clientDisconnected(id))
    counters.withLock { $0.watchers = state.watcherCount }
  }

  // MARK: - Actions

  private func perform(_ actions: [ServerAction]) {
    for action in actions {
      switch action {
      case .send(let id, let bytes):
        send(bytes, to: id)
      case .subscribe(let id, let need):
        subscribe(id, need)
      case .release(let id):
        guard let slot = receivers.removeValue(forKey: id) else { continue }
        slot.subscription?.cancel()
        configuration.receiverChanges?(
          .removed(ServedReceiver(path: slot.path, device: slot.device, receiver: slot.receiver)))
        let receiver = slot.receiver
        let retired = self.retired
        // Kept until its standby is done, so that a server shutdown meanwhile waits for it;
        // then forgotten, so that years of plugging leave nothing behind.
        retired.withLock { $0.append(receiver) }
        DriverExecutor.task {
          await receiver.shutdown()
          retired.withLock { $0.removeAll { $0 === receiver } }
        }
      }
    }
    let watchers = state.watcherCount
    let unexpected = state.unexpectedEvents
    counters.withLock {
      $0.watchers = watchers
      $0.unexpectedEvents = unexpected
    }
  }

  /// Gives the device the subscription it needs now. A replacement is made before the old
  /// one is cancelled, so the receiver never sees zero subscribers in between (no power
  /// cycle); events of the old one still queued are dropped by their generation.
  private func subscribe(_ id: DeviceID, _ need: ReceiverNeed?) {
    guard var slot = receivers[id], slot.need != need else { return }
    let old = slot.subscription
    slot.generation += 1
    slot.need = need
    slot.subscription = nil
    if let need {
      let generation = slot.generation
      // Straight from the reader's thread into the inbox, which wakes this loop: no task and
      // no queue in between (the inbox is the one bound, newest wins).
      slot.subscription = slot.receiver.subscribeOnReaderThread(
        rawData: need.rawData, sentences: need.sentences
      ) { [weak self] item in
        self?.post(.receiver(id, generation: generation, item))
      }
    }
    receivers[id] = slot
    old?.cancel()
    counters.withLock { $0.subscribedDevices = receivers.values.filter { $0.need != nil }.count }
  }

  // MARK: - Hotplug

  private func handleHotplug(_ event: HotplugEvent) {
    switch event {
    case .added(let device):
      addDiscovered(device)
    case .removed(let device):
      removeDiscovered(sysPath: device.sysPath, reason: "unplugged")
    case .changed(let device):
      if let id = receivers.first(where: { $0.value.sysPath == device.sysPath })?.key {
        if device.isReceiverCandidate {
          perform(state.deviceRenamed(id, Self.description(of: device)))
        } else {
          removeDiscovered(sysPath: device.sysPath, reason: "no longer classified as a receiver")
        }
      } else {
        addDiscovered(device)
      }
    case .enumerationComplete:
      let count = receivers.count
      log(
        count == 0
          ? "serialgps serve: no receiver attached; waiting for one to be plugged in"
          : "serialgps serve: serving \(count) receiver\(count == 1 ? "" : "s")")
    }
  }

  private func addDiscovered(_ device: SerialDevice) {
    guard device.isReceiverCandidate,
      !receivers.values.contains(where: { $0.sysPath == device.sysPath })
    else { return }
    let interface = HostInterface(device)
    // A generic bridge gets no family: the receiver must identify itself before anything is
    // written to it (docs/discovery.md).
    let family =
      device.classification.mayWriteUnprompted
      ? device.classification.chipset : nil
    let connector = SerialConnector(
      path: device.path, baud: configuration.baud,
      hint: ChipsetHint(family: family, interface: interface))
    let receiver = GPSReceiver(
      connector: connector, options: configuration.receiverOptions, clock: clock)
    let id = nextDeviceID
    nextDeviceID += 1
    var slot = ReceiverSlot(receiver: receiver, path: device.path)
    slot.sysPath = device.sysPath
    slot.device = device
    receivers[id] = slot
    log("serialgps serve: \(device.path) appeared (\(device.classification.kind) receiver)")
    // Told before the watchers subscribe it: a time service must reach the reader before the
    // port opens.
    configuration.receiverChanges?(
      .added(ServedReceiver(path: device.path, device: device, receiver: receiver)))
    perform(state.deviceAdded(id, Self.description(of: device), wallClock: wallClockNow()))
  }

  private func removeDiscovered(sysPath: String, reason: String) {
    guard let (id, _) = receivers.first(where: { $0.value.sysPath == sysPath }) else { return }
    log("serialgps serve: stopped serving \(sysPath): \(reason)")
    perform(state.deviceRemoved(id))
  }

  static func description(of device: SerialDevice) -> DeviceDescription {
    var aliases = device.links
    if let stable = device.stablePath, !aliases.contains(stable) { aliases.append(stable) }
    return DeviceDescription(path: device.path, aliases: aliases.filter { $0 != device.path })
  }

  // MARK: - Stopping

  private func finish() {
    for (_, connection) in connections { connection.socket.close() }
    connections.removeAll()
    listener?.close()
    for (_, slot) in receivers { slot.subscription?.cancel() }
    let all = receivers.values.map(\.receiver)
    retired.withLock { $0 += all }
    receivers.removeAll()
    counters.withLock {
      $0.clients = 0
      $0.watchers = 0
      $0.subscribedDevices = 0
    }
    // Anyone still waiting on a barrier is released.
    for message in inbox.withLock({ $0.take().messages }) {
      if case .barrier(let continuation) = message { continuation.resume() }
    }
  }

  // MARK: - Helpers

  private func log(_ message: String) {
    configuration.log?(message)
  }

  private func peerName(_ descriptor: Int32) -> String {
    var storage = sockaddr_storage()
    var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
    let result = withUnsafeMutablePointer(to: &storage) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getpeername(descriptor, $0, &length) }
    }
    guard result == 0 else { return "an unknown peer" }
    var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
    let port = ListenAddress.port(of: storage)
    let isIPv6 = storage.ss_family == sa_family_t(AF_INET6)
    return withUnsafePointer(to: storage) { pointer -> String in
      if isIPv6 {
        return pointer.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { address in
          var raw = address.pointee.sin6_addr
          inet_ntop(AF_INET6, &raw, &text, socklen_t(text.count))
          return "[" + Self.string(text) + "]:\(port)"
        }
      }
      return pointer.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { address in
        var raw = address.pointee.sin_addr
        inet_ntop(AF_INET, &raw, &text, socklen_t(text.count))
        return Self.string(text) + ":\(port)"
      }
    }
  }
}

/// The latest fixes as the receivers' hubs, their one owner, have them.
struct ReceiverFixes: LatestFixes {
  let receivers: [DeviceID: EventLoop.ReceiverSlot]
  func replay(of device: DeviceID) -> FixUpdate? { receivers[device]?.receiver.replay }
  func latest(of device: DeviceID) -> FixUpdate? { receivers[device]?.receiver.latestFix }
}

extension EventLoop {
  static func string(_ characters: [CChar]) -> String {
    let bytes = characters.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
    return String(decoding: bytes, as: UTF8.self)
  }
}

/// The wall-clock time now, for `activated` and POLL's `time`.
func wallClockNow() -> UTCTimestamp {
  var now = timespec()
  clock_gettime(CLOCK_REALTIME, &now)
  return UTCTimestamp(secondsSinceUnixEpoch: Int64(now.tv_sec), nanoseconds: UInt32(now.tv_nsec))
}

/// What other threads hand the loop, in order. Receivers' readers post their reports here
/// directly, so this is the one bound between a receiver and the loop: without it the inbox
/// would grow as fast as a receiver (or a replay at full speed) outpaces the loop (40 MB a
/// second was seen). Past `reportLimit` reports of a device waiting, the oldest of them is
/// dropped (newest wins, as in a subscription queue; sentences and raw chunks too, which
/// consumers expect to have gaps). Status events, hotplug and control messages are never
/// dropped.
struct Inbox {
  let reportLimit: Int
  private(set) var messages: [EventLoop.Message] = []
  /// Reports of each device waiting in `messages`.
  private var waitingReports: [DeviceID: Int] = [:]
  /// Dropped since the last `take()`.
  private var dropped = 0

  init(reportLimit: Int) { self.reportLimit = reportLimit }

  mutating func post(_ message: EventLoop.Message) {
    if let device = Self.droppableReport(message) {
      let waiting = waitingReports[device, default: 0]
      if waiting >= reportLimit,
        let oldest = messages.firstIndex(where: { Self.droppableReport($0) == device })
      {
        messages.remove(at: oldest)
        dropped += 1
      } else {
        waitingReports[device] = waiting + 1
      }
    }
    messages.append(message)
  }

  /// Everything posted so far, and how many reports were dropped meanwhile.
  mutating func take() -> (messages: [EventLoop.Message], dropped: Int) {
    defer {
      messages = []
      waitingReports.removeAll(keepingCapacity: true)
      dropped = 0
    }
    return (messages, dropped)
  }

  /// The device whose report `message` is, if it is one that may be dropped.
  private static func droppableReport(_ message: EventLoop.Message) -> DeviceID? {
    switch message {
    case .receiver(_, _, .event(.status)): nil
    case .receiver(let device, _, _): device
    default: nil
    }
  }
}

/// Bytes waiting to be written to one client: the reports themselves, not a copy of them.
/// A report broadcast to many watchers is one array that all their queues share, so a client
/// that stops reading holds a list of references to reports (most of them shared with the
/// other clients' queues), and what it costs the process stays within what ``count``, the
/// figure the backlog limit checks, says.
struct OutputQueue {
  private var chunks: [ArraySlice<UInt8>] = []
  /// The first chunk not yet written; those before it are empty.
  private var head = 0

  /// Bytes waiting.
  private(set) var count = 0
  var isEmpty: Bool { count == 0 }

  mutating func append(_ more: ArraySlice<UInt8>) {
    guard !more.isEmpty else { return }
    if head > 0 && head * 2 >= chunks.count {
      chunks.removeFirst(head)
      head = 0
    }
    chunks.append(more)
    count += more.count
  }

  /// Hands the waiting bytes to `write` in order, chunk by chunk, until it takes less than it
  /// was given; `write` returns how many bytes it took, or `nil` when the peer is gone (then
  /// so does this).
  mutating func drain(_ write: (UnsafeRawBufferPointer) -> Int?) -> Int? {
    var total = 0
    while head < chunks.count {
      guard let written = chunks[head].withUnsafeBytes(write) else { return nil }
      total += written
      count -= written
      guard written == chunks[head].count else {
        chunks[head] = chunks[head].dropFirst(written)
        return total
      }
      // Released as soon as it is written: the report may be large and shared.
      chunks[head] = []
      head += 1
    }
    chunks.removeAll(keepingCapacity: chunks.capacity <= 256)
    head = 0
    return total
  }

  /// Calls `body` with the first waiting chunk, for tests; `nil` when nothing waits.
  func withFirstChunk<Result>(_ body: (UnsafeRawBufferPointer) -> Result) -> Result? {
    guard head < chunks.count else { return nil }
    return chunks[head].withUnsafeBytes(body)
  }
}
