import Chipsets
import Discovery
import GPSDProtocol
import Glibc
import NMEA
import POSIX
import SerialGPS

/// The server's one thread: `poll(2)` on the listening sockets, the clients, the stream ports
/// and the inbox's eventfd, every socket non-blocking. It holds no policy: what clients asked
/// is ``ServerState``'s to decide, who may connect and who must go (a client that stops
/// reading among them) ``ClientAdmission``'s, what the stream ports get and what each
/// device's subscription delivers ``StreamDoors``', which discovered devices are served
/// ``DiscoveredDevices``'; this runs their actions (writes and queues bytes, closes sockets,
/// subscribes receivers) in the order they come. The gpsd port is ClientPort.swift, the
/// stream ports StreamPorts.swift, the receivers ServedReceivers.swift.
///
/// No thread ever waits for a client: a write takes what the socket accepts now and queues
/// the rest, or drops it as the machines decide. Receivers' readers never wait for the
/// server: they post to the inbox themselves
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
    /// What the subscription delivers (as ``StreamDoors`` decided).
    var need: ReceiverNeed?
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
    var output = OutputQueue()

    init(socket: ClientSocket) { self.socket = socket }
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
  let inbox: ServerInbox
  let counters: Locked<ServerStatistics>
  /// Receivers to shut down once the loop has stopped.
  let retired: Locked<[GPSReceiver]>

  var state: ServerState
  var admission: ClientAdmission
  var doors: StreamDoors
  var discovered = DiscoveredDevices()
  /// What ``ServerStatistics`` last had of the doors' counters.
  var streamCounters = StreamDoors.Counters()
  var connections: [ClientID: Connection] = [:]
  var receivers: [DeviceID: ReceiverSlot] = [:]
  var nextDeviceID = 1
  private var stopping = false
  var accepting = true
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
    doors = StreamDoors(
      settings: StreamDoors.Settings(
        ports: !streamPorts.isEmpty, writable: configuration.rawWrite,
        backlog: configuration.rawBacklog, writeBacklog: configuration.rawWriteBacklog))
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
        idleTimeout: configuration.idleTimeout, maximumBacklog: configuration.maximumBacklog))
  }

  /// Adds a device before the loop starts (devices named on the command line).
  func addInitialDevice(_ description: DeviceDescription, receiver: GPSReceiver) {
    let id = nextDeviceID
    nextDeviceID += 1
    receivers[id] = ReceiverSlot(receiver: receiver, path: description.path)
    doors.deviceAdded(id)
    perform(state.deviceAdded(id, description, wallClock: wallClockNow()))
    perform(doors.reconcile(id))
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
          drop(id)
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
      !connections.isEmpty || !doors.isEmpty
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
        perform(doors.receiverItem(id, event))
      case .time(let path, let report):
        guard let id = receivers.first(where: { $0.value.path == path })?.key else { continue }
        perform(state.timeReport(id, report))
      case .hotplug(let event):
        handleHotplug(event)
      case .discoveryFailed(let reason):
        log("receiver discovery stopped: \(reason); serving the receivers found so far")
      case .rawWritten(let batch):
        perform(doors.written(batch))
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

  // MARK: - Actions

  func perform(_ actions: [ServerAction]) {
    for action in actions {
      switch action {
      case .send(let id, let bytes):
        send(bytes, to: id)
      case .subscribe(let id, let need):
        perform(doors.asked(id, need))
      case .release(let id):
        release(id)
      }
    }
    let watchers = state.watcherCount
    let unexpected = state.unexpectedEvents + admission.unexpectedEvents
    counters.withLock {
      $0.watchers = watchers
      $0.unexpectedEvents = unexpected
    }
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
  func wallClockNow() -> UTCTimestamp {
    let (seconds, nanoseconds) = wallClock.now().secondsAndNanoseconds
    return UTCTimestamp(secondsSinceUnixEpoch: seconds, nanoseconds: UInt32(nanoseconds))
  }
}
