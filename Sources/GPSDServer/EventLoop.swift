import Chipsets
import Discovery
import GPSDProtocol
import Glibc
import NMEA
import POSIX
import SerialGPS

/// The server's one thread: `poll(2)` on the listening socket, the clients and the inbox's
/// eventfd, every socket non-blocking. It holds no policy: what clients asked is
/// ``ServerState``'s to decide, who may connect and who must go ``ClientAdmission``'s; this
/// runs their actions (writes and queues bytes, closes sockets, subscribes receivers) in the
/// order they come.
///
/// No thread ever waits for a client: a write takes what the socket accepts now and queues
/// the rest, and a client whose queue passes ``GPSDServer/Configuration/maximumBacklog`` is
/// dropped. Receivers' readers never wait for the server: they post to the inbox themselves
/// (``GPSReceiver/subscribeOnReaderThread(rawData:sentences:_:)``), with no task or queue in
/// between.
///
/// Not `Sendable`: made by ``GPSDServer`` and handed whole to the server's thread, which alone
/// uses it from then on; other threads reach it through the ``ServerInbox`` only.
final class EventLoop {
  struct ReceiverSlot {
    let receiver: GPSReceiver
    /// The device's path, for log messages.
    let path: String
    var subscription: Subscription?
    /// What the subscription delivers: what ``ServerState`` asked for, and the raw bytes
    /// while raw-port connections want this device's.
    var need: ReceiverNeed?
    /// What ``ServerState`` asked for; its events go to it only while it asked.
    var stateNeed: ReceiverNeed?
    /// Events of an older subscription still in flight are recognised by this and dropped.
    var generation = 0
    /// What discovery knows about it, and its events for the receiver's connector, for
    /// devices found by discovery.
    var device: SerialDevice?
    var hotplug: HotplugFeed?
  }

  /// A class, so that queueing bytes for a client changes its queue in place: a copy taken
  /// out of the dictionary would share the queue's storage with the one still in it, and
  /// appending would copy the whole queue (up to the backlog limit) for every report.
  final class Connection {
    let socket: ClientSocket
    let peer: String
    /// What a stream port's connection gets (`nil` for a gpsd client).
    let stream: StreamKind?
    var output = OutputQueue()

    init(socket: ClientSocket, peer: String, stream: StreamKind? = nil) {
      self.socket = socket
      self.peer = peer
      self.stream = stream
    }
  }

  /// Connections accepted per wake at most: in a burst of connections the loop must also get
  /// to the clients already connected (their requests, their closes that free slots), or
  /// the slots stay taken by clients that are gone and every newcomer is refused.
  static let acceptsPerWake = 16

  let configuration: GPSDServer.Configuration
  let clock: any DriverClock
  /// Dates devices' `activated` and POLL's `time`.
  let wallClock: any WallClock
  /// Empty: no TCP listener (receivers served to in-process subscribers only). More than one
  /// when the service manager passed several (IPv4 and IPv6 loopback).
  private let listeners: [ListeningSocket]
  /// The stream ports: the raw port (`serve --raw-listen`) and the NMEA socket
  /// (`--nmea-socket`), each connection a continuous subscription of the first receiver.
  let streamPorts: [(listener: any Listener, kind: StreamKind)]
  var streamConnections: [Int: Connection] = [:]
  var nextStreamID = 1
  var rawWriter: RawWriteQueue
  /// ``RawWriteQueue/Counters/bytesDropped`` when the last writer that left was told of.
  var rawDropsSaid = 0
  var rawDropLog = LogThrottle(interval: .seconds(10))
  /// NMEA made from the stream device's fixes when it sends none, for the NMEA socket.
  var streamPseudoNMEA = PseudoNMEA()
  let inbox: ServerInbox
  let counters: Locked<ServerStatistics>
  /// Receivers to shut down once the loop has stopped.
  private let retired: Locked<[GPSReceiver]>

  private var state: ServerState
  private var admission: ClientAdmission
  private var connections: [ClientID: Connection] = [:]
  var receivers: [DeviceID: ReceiverSlot] = [:]
  private var nextDeviceID = 1
  private var stopping = false
  private var accepting = true
  private var dropLog = LogThrottle(interval: .seconds(10))
  private var idleExit: IdleExit?

  init(
    configuration: GPSDServer.Configuration, clock: any DriverClock,
    wallClock: any WallClock = SystemWallClock(), listeners: [ListeningSocket],
    streamPorts: [(listener: any Listener, kind: StreamKind)] = [],
    inbox: ServerInbox, counters: Locked<ServerStatistics>, retired: Locked<[GPSReceiver]>
  ) {
    self.configuration = configuration
    self.clock = clock
    self.wallClock = wallClock
    self.listeners = listeners
    self.streamPorts = streamPorts
    rawWriter = RawWriteQueue(
      writable: configuration.rawWrite, limit: configuration.rawWriteBacklog)
    idleExit = configuration.whenIdle.map { IdleExit(limit: $0.after) }
    self.inbox = inbox
    self.counters = counters
    self.retired = retired
    var settings = ServerState.Settings()
    settings.release = configuration.release
    settings.revision = configuration.revision
    settings.maximumRequestLength = configuration.maximumRequestLength
    state = ServerState(settings: settings)
    admission = ClientAdmission(
      settings: ClientAdmission.Settings(
        maximumClients: configuration.maximumClients,
        evictionIdleTime: configuration.evictionIdleTime,
        idleTimeout: configuration.idleTimeout))
  }

  /// Adds a device before the loop starts (devices named on the command line).
  func addInitialDevice(_ description: DeviceDescription, receiver: GPSReceiver) {
    let id = nextDeviceID
    nextDeviceID += 1
    receivers[id] = ReceiverSlot(receiver: receiver, path: description.path)
    perform(state.deviceAdded(id, description, wallClock: wallClockNow()))
  }

  // MARK: - The loop

  func run() {
    let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 16 * 1024, alignment: 1)
    defer { buffer.deallocate() }
    var descriptors: [pollfd] = []
    var order: [ClientID] = []
    var rawOrder: [Int] = []
    while !stopping {
      descriptors.removeAll(keepingCapacity: true)
      order.removeAll(keepingCapacity: true)
      rawOrder.removeAll(keepingCapacity: true)
      descriptors.append(inbox.wakeup.pollDescriptor)
      // While accepting is paused, the listeners' slots stay with a descriptor poll skips.
      for listener in listeners {
        let listening = accepting ? listener.descriptor : -1
        descriptors.append(pollfd(fd: listening, events: Int16(POLLIN), revents: 0))
      }
      for port in streamPorts {
        let listening = accepting ? port.listener.descriptor : -1
        descriptors.append(pollfd(fd: listening, events: Int16(POLLIN), revents: 0))
      }
      for (id, connection) in connections {
        order.append(id)
        let events = Int16(POLLIN) | (connection.output.isEmpty ? 0 : Int16(POLLOUT))
        descriptors.append(pollfd(fd: connection.socket.descriptor, events: events, revents: 0))
      }
      for (id, connection) in streamConnections {
        rawOrder.append(id)
        descriptors.append(
          pollfd(fd: connection.socket.descriptor, events: streamEvents(id, connection), revents: 0)
        )
      }
      noteUse()
      do {
        _ = try poll(&descriptors, until: nextDeadline)
      } catch {
        log("poll failed: \(SocketError("poll", error)); stopping")
        break
      }
      if descriptors[0].revents != 0 {
        _ = inbox.wakeup.consume()
        handleInbox()
      }
      for (offset, listener) in listeners.enumerated() where descriptors[offset + 1].revents != 0 {
        acceptClients(from: listener)
      }
      for (offset, port) in streamPorts.enumerated()
      where descriptors[listeners.count + 1 + offset].revents != 0 {
        acceptStreamConnections(port.listener, port.kind)
      }
      let firstClient = listeners.count + 1 + streamPorts.count
      for (offset, id) in order.enumerated() {
        let revents = descriptors[offset + firstClient].revents
        guard revents != 0, connections[id] != nil else { continue }
        if revents & Int16(POLLOUT) != 0 { flush(id) }
        if revents & Int16(POLLIN) != 0 { readClient(id, into: buffer) }
        // An error or hang-up without data to read would make every poll return at once.
        if revents & (Int16(POLLHUP) | Int16(POLLERR) | Int16(POLLNVAL)) != 0,
          revents & Int16(POLLIN) == 0
        {
          drop(id, reason: nil)
        }
      }
      let firstRaw = firstClient + order.count
      for (offset, id) in rawOrder.enumerated() {
        handleStream(id, descriptors[offset + firstRaw].revents, buffer: buffer)
      }
      let now = MonotonicInstant.now
      if let due = admission.nextDeadline, due <= now {
        admit(admission.handle(.timer, now: now))
      }
    }
    finish()
  }

  /// The earlier of admission's deadline and the idle exit's.
  private var nextDeadline: MonotonicInstant? {
    switch (admission.nextDeadline, idleExit?.deadline) {
    case (let a?, let b?): return min(a, b)
    case (let a, let b): return a ?? b
    }
  }

  /// Tells the idle exit whether anyone uses the server now, and calls the idle handler when
  /// nobody has for its time.
  private func noteUse() {
    guard idleExit != nil, let notice = configuration.whenIdle else { return }
    let inUse =
      !connections.isEmpty || !streamConnections.isEmpty
      || receivers.values.contains { $0.need != nil }
    guard idleExit?.note(inUse: inUse, now: .now) == true else { return }
    log("no client for \(Self.seconds(notice.after)): exiting until the next one connects")
    notice.handler()
  }

  static func seconds(_ duration: Duration) -> String {
    let (seconds, attoseconds) = duration.components
    return attoseconds == 0 ? "\(seconds) s" : "\(Double(seconds) + Double(attoseconds) / 1e18) s"
  }

  private func handleInbox() {
    let (messages, dropped) = inbox.take()
    if dropped > 0 { noteDroppedReports(dropped) }
    for message in messages {
      switch message {
      case .receiver(let id, let generation, let event):
        guard let slot = receivers[id], slot.generation == generation else { continue }
        // The receiver's messages name the device and say what to do; the operator sees them.
        switch event {
        case .event(.status(.disconnected(let reason))),
          .event(.status(.commandFailed(let reason))):
          log("\(slot.path): \(reason.message(in: configuration.messageVocabulary))")
        case .event(.status(.commandsWithheld(let withheld))):
          log("\(slot.path): \(withheld.description(in: configuration.messageVocabulary))")
        case .event(.status(.reconnected)):
          log("\(slot.path): back")
        default:
          break
        }
        if id == streamDevice {
          switch event {
          case .rawData(let bytes): sendStream(bytes, to: .raw)
          case .sentences(let bytes): sendStream(bytes, to: .nmea)
          case .event:
            // A receiver that sends no NMEA: the socket gets sentences made from its fixes.
            if hasStreamConnections(.nmea), let bytes = streamPseudoNMEA.sentences(for: event) {
              sendStream(bytes, to: .nmea)
            }
          }
        }
        // Only what ServerState asked for: the stream ports' bytes are not its business.
        guard let asked = slot.stateNeed else { continue }
        if case .rawData = event, !asked.rawData { continue }
        if case .sentences = event, !asked.sentences { continue }
        // The family is asked only with a status: it is what the DEVICE report names.
        var family: ChipsetFamily?
        if case .event(.status) = event { family = slot.receiver.commandFamily }
        perform(state.receiverEvent(id, event, wallClock: wallClockNow(), family: family))
      case .time(let path, let report):
        guard let id = receivers.first(where: { $0.value.path == path })?.key else { continue }
        perform(state.timeReport(id, report))
      case .hotplug(let event):
        handleHotplug(event)
      case .discoveryFailed(let reason):
        log("receiver discovery stopped: \(reason); serving the receivers found so far")
      case .rawWritten(let batch):
        performRawWrite(rawWriter.written(batch))
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
    guard dropLog.allow(now: .now) != nil else { return }
    log("fell behind the receivers: \(total) reports skipped so far (the newest are kept)")
  }

  // MARK: - Clients

  private func acceptClients(from listener: ListeningSocket) {
    for _ in 0..<Self.acceptsPerWake {
      let descriptor: Int32?
      do {
        descriptor = try listener.accept()
      } catch {
        admit(admission.handle(.acceptFailed(reason: "\(error)"), now: .now))
        return
      }
      guard let descriptor else { return }
      let socket = ClientSocket(descriptor: descriptor)
      let arrival = (socket: socket, peer: socket.peer)
      admit(admission.handle(.arrived(peer: arrival.peer), now: .now), arrival: arrival)
    }
  }

  /// Runs ``ClientAdmission``'s actions; `arrival` is the connection an `.arrived` event was
  /// about.
  private func admit(
    _ actions: [ClientAdmission.Action], arrival: (socket: ClientSocket, peer: String)? = nil
  ) {
    for action in actions {
      switch action {
      case .admit(let id):
        guard let (socket, peer) = arrival else { continue }
        socket.configure(sendBufferSize: configuration.clientSendBufferSize)
        connections[id] = Connection(socket: socket, peer: peer)
        counters.withLock { $0.clients = connections.count }
        perform(state.clientConnected(id))
      case .refuse:
        guard let socket = arrival?.socket else { continue }
        // The notice fits any socket buffer, so the write never waits.
        _ = notice(Self.refusal(maximumClients: configuration.maximumClients), to: socket)
        socket.closeAfterDiscardingInput()
      case .evict(let id):
        // Nothing of this client's may be queued ahead of the notice, or it would be cut short.
        if let connection = connections[id], connection.output.isEmpty {
          _ = notice(Self.eviction, to: connection.socket)
        }
        close(id)
      case .close(let id):
        close(id)
      case .pauseAccepting:
        accepting = false
      case .resumeAccepting:
        accepting = true
      case .log(let message):
        log(message)
      }
    }
    let admitted = admission.counters
    let unexpected = admission.unexpectedEvents + state.unexpectedEvents
    counters.withLock {
      $0.clientsAccepted = admitted.accepted
      $0.clientsRefused = admitted.refused
      $0.clientsEvicted = admitted.evicted
      $0.unexpectedEvents = unexpected
    }
  }

  static let eviction =
    "Too many clients: this connection was idle and not watching, so it was closed to serve "
    + "a new one; reconnect when needed"

  static func refusal(maximumClients: Int) -> String {
    "Too many clients: this server serves at most \(maximumClients) at once; try again later"
  }

  private func notice(_ message: String, to socket: ClientSocket) -> Int? {
    var writer = JSONWriter()
    writer.error(message)
    writer.newline(crlf: true)
    return writer.bytes.withUnsafeBytes { socket.write($0) }
  }

  private func readClient(_ id: ClientID, into buffer: UnsafeMutableRawBufferPointer) {
    guard let connection = connections[id] else { return }
    // A few reads per wake at most, so one chatty client cannot starve the others.
    for _ in 0..<4 {
      switch connection.socket.read(into: buffer) {
      case .received(let count):
        perform(
          state.clientInput(
            id, UnsafeRawBufferPointer(rebasing: buffer[0..<count]), wallClock: wallClockNow(),
            fixes: ReceiverFixes(receivers: receivers)))
        // Dropped while its replies were written: nothing more to read.
        guard connections[id] != nil else { return }
        admit(admission.handle(.request(id, watching: state.isWatching(id)), now: .now))
      case .wouldBlock:
        return
      case .closed:
        drop(id, reason: nil)
        return
      }
    }
  }

  private func send(_ bytes: [UInt8], to id: ClientID) {
    guard let connection = connections[id] else { return }
    var offset = 0
    if connection.output.isEmpty {
      guard let written = bytes.withUnsafeBytes({ connection.socket.write($0) }) else {
        drop(id, reason: nil)
        return
      }
      offset = written
    }
    if offset < bytes.count { connection.output.append(bytes[offset...]) }
    if connection.output.count > configuration.maximumBacklog {
      counters.withLock { $0.clientsDropped += 1 }
      drop(
        id,
        reason: "dropped client \(connection.peer): it stopped reading "
          + "(\(connection.output.count) bytes waiting, limit \(configuration.maximumBacklog))")
    }
  }

  private func flush(_ id: ClientID) {
    guard let connection = connections[id] else { return }
    let socket = connection.socket
    if connection.output.drain({ socket.write($0) }) == nil { drop(id, reason: nil) }
  }

  /// Closes a client for a reason of the loop's own (the peer left, stopped reading, failed),
  /// and tells ``ClientAdmission``.
  private func drop(_ id: ClientID, reason: String?) {
    guard connections[id] != nil else { return }
    if let reason { log(reason) }
    close(id)
    admit(admission.handle(.left(id), now: .now))
  }

  /// Closes the client's socket and tells ``ServerState`` it is gone.
  private func close(_ id: ClientID) {
    guard let connection = connections.removeValue(forKey: id) else { return }
    connection.socket.close()
    counters.withLock { $0.clients = connections.count }
    perform(state.clientDisconnected(id))
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
        let wasStreamed = id == streamDevice
        guard let slot = receivers.removeValue(forKey: id) else { continue }
        // The stream ports follow the next receiver served; a batch the old one had is
        // not waited for.
        if wasStreamed {
          if let next = streamDevice { updateSubscription(next) }
          performRawWrite(rawWriter.receiverChanged())
        }
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
    let unexpected = state.unexpectedEvents + admission.unexpectedEvents
    counters.withLock {
      $0.watchers = watchers
      $0.unexpectedEvents = unexpected
    }
  }

  /// Gives the device the subscription it needs now. A replacement is made before the old
  /// one is cancelled, so the receiver never sees zero subscribers in between (no power
  /// cycle); events of the old one still queued are dropped by their generation.
  private func subscribe(_ id: DeviceID, _ asked: ReceiverNeed?) {
    guard receivers[id] != nil else { return }
    receivers[id]?.stateNeed = asked
    updateSubscription(id)
  }

  /// What the device's subscription must deliver now: what ``ServerState`` asked for, and
  /// the raw bytes and the sentences while the stream ports that serve this device have
  /// connections that want them.
  func updateSubscription(_ id: DeviceID) {
    guard let slot = receivers[id] else { return }
    var need = slot.stateNeed
    if id == streamDevice, !streamConnections.isEmpty {
      need = need ?? ReceiverNeed()
      if hasStreamConnections(.raw) { need?.rawData = true }
      if hasStreamConnections(.nmea) { need?.sentences = true }
    }
    resubscribe(id, need)
  }

  private func resubscribe(_ id: DeviceID, _ need: ReceiverNeed?) {
    guard var slot = receivers[id], slot.need != need else { return }
    let old = slot.subscription
    slot.generation += 1
    slot.need = need
    slot.subscription = nil
    if let need {
      let generation = slot.generation
      let inbox = self.inbox
      // Straight from the reader's thread into the inbox, which wakes this loop: no task and
      // no queue in between (the inbox is the one bound, newest wins).
      slot.subscription = slot.receiver.subscribeOnReaderThread(
        rawData: need.rawData, sentences: need.sentences
      ) { item in
        inbox.post(.receiver(id, generation: generation, item))
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
      // Not passed to its receiver: the server shuts it down, and the shutdown sends the
      // standby commands first in case the device is still there, which a connector that
      // ended the connection on hearing of the unplug would skip.
      removeDiscovered(sysPath: device.sysPath, reason: "unplugged")
    case .changed(let device):
      guard let (id, slot) = discovered(device.sysPath) else {
        addDiscovered(device)
        return
      }
      // Its receiver learns what changed (a udev rule declaring its chipset, say) as a
      // receiver following discovery does.
      slot.hotplug?.send(event)
      receivers[id]?.device = device
      if device.isReceiverCandidate {
        perform(state.deviceRenamed(id, Self.description(of: device)))
      } else {
        removeDiscovered(sysPath: device.sysPath, reason: "no longer classified as a receiver")
      }
    case .enumerationComplete:
      let count = receivers.count
      log(
        count == 0
          ? "no receiver attached; waiting for one to be plugged in"
          : "serving \(count) receiver\(count == 1 ? "" : "s")")
    }
  }

  private func discovered(_ sysPath: String) -> (id: DeviceID, slot: ReceiverSlot)? {
    guard let (id, slot) = receivers.first(where: { $0.value.device?.sysPath == sysPath }) else {
      return nil
    }
    return (id, slot)
  }

  /// Serves a receiver candidate discovery found. Its receiver's connector follows the device
  /// as `DiscoveringConnector` does for a receiver the user chose (the first one found): it
  /// writes to a known receiver, and only listens to a possible one (a generic USB-serial
  /// bridge) until it has heard NMEA on it.
  private func addDiscovered(_ device: SerialDevice) {
    guard device.isReceiverCandidate, discovered(device.sysPath) == nil else { return }
    let hotplug = HotplugFeed(device)
    let connector = DiscoveringConnector(
      selector: .first, baud: configuration.baud, events: { hotplug.events() })
    let receiver = GPSReceiver(
      connector: connector, options: configuration.receiverOptions, clock: clock)
    let id = nextDeviceID
    nextDeviceID += 1
    var slot = ReceiverSlot(receiver: receiver, path: device.path)
    slot.device = device
    slot.hotplug = hotplug
    receivers[id] = slot
    log("\(device.path) appeared (\(device.classification.kind) receiver)")
    // Told before the watchers subscribe it: a time service must reach the reader before the
    // port opens.
    configuration.receiverChanges?(
      .added(ServedReceiver(path: device.path, device: device, receiver: receiver)))
    perform(state.deviceAdded(id, Self.description(of: device), wallClock: wallClockNow()))
    // The first receiver served now: the stream ports' connections get its output.
    if id == streamDevice { updateSubscription(id) }
  }

  private func removeDiscovered(sysPath: String, reason: String) {
    guard let (id, _) = discovered(sysPath) else { return }
    log("stopped serving \(sysPath): \(reason)")
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
    for listener in listeners { listener.close() }
    for (_, connection) in streamConnections { connection.socket.close() }
    streamConnections.removeAll()
    for port in streamPorts { port.listener.close() }
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
    for message in inbox.take().messages {
      if case .barrier(let continuation) = message { continuation.resume() }
    }
  }

  func log(_ message: String) {
    configuration.log?("serialgps serve: " + message)
  }

  /// The wall-clock time now, for `activated` and POLL's `time`.
  private func wallClockNow() -> UTCTimestamp {
    let (seconds, nanoseconds) = wallClock.now().secondsAndNanoseconds
    return UTCTimestamp(secondsSinceUnixEpoch: seconds, nanoseconds: UInt32(nanoseconds))
  }
}

/// The latest fixes as the receivers' hubs, their one owner, have them.
struct ReceiverFixes: LatestFixes {
  let receivers: [DeviceID: EventLoop.ReceiverSlot]
  func replay(of device: DeviceID) -> FixUpdate? { receivers[device]?.receiver.replay }
  func latest(of device: DeviceID) -> FixUpdate? { receivers[device]?.receiver.latestFix }
}
