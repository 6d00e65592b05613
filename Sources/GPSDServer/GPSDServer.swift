import Discovery
import Glibc
import POSIX
import SerialGPS
import TimeService

/// A server that speaks gpsd's JSON protocol (port 2947) for the receivers it serves, so
/// gpsd's clients (`gpspipe`, `cgps`, `gpxlogger`, the Python `gps` module …) work unchanged.
///
/// Power follows the watchers: a receiver is woken at the first `?WATCH` that covers it and
/// put to standby after ``GPSReceiver/Options/linger`` once the last such watcher disabled
/// its watch or disconnected. Clients that only ask (`?POLL;`, `?DEVICES;`) never power
/// anything.
///
/// ```swift
/// let server = try GPSDServer(devices: .discovery(DeviceDiscovery()))
/// print("listening on \(server.listenAddress)")
/// // … later
/// await server.shutdown()
/// ```
///
/// One thread runs the protocol: `poll(2)` over non-blocking sockets. See docs/server.md.
public final class GPSDServer: Sendable {
  /// How the server listens and what it allows.
  public struct Configuration: Sendable {
    /// Where to listen. Loopback by default; anything else needs ``allowRemote``. `nil`: no
    /// TCP listener at all, for a process that serves its receivers only to subscribers in
    /// the same process (a board that only publishes to MQTT, `serve --listen none`).
    public var listenAddress: ListenAddress? = ListenAddress.loopback()
    /// Permits a non-loopback ``listenAddress``: the protocol has no authentication, and any
    /// watcher can keep the receivers powered.
    public var allowRemote = false
    /// Listening sockets the service manager passed (socket activation: `serve` under
    /// `serialgps.socket` or `systemd-socket-activate`), served instead of ``listenAddress``
    /// when not empty. The server owns them from then on and closes them when it ends. Each
    /// must be a listening TCP socket, on loopback unless ``allowRemote``.
    public var listenDescriptors: [Int32] = []
    /// The raw port (`serve --raw-listen`): each connection gets the bytes the first receiver
    /// served sends, as they are, for as long as it is connected, and counts as a subscriber
    /// of it (the receiver is powered while any is connected). `nil`: none. Loopback unless
    /// ``allowRemote``.
    public var rawListenAddress: ListenAddress?
    /// Whether one raw-port connection at a time may write to the receiver (the first that
    /// sends, until it leaves; `GPSReceiver.write`, between the driver's own command
    /// exchanges); the others' bytes are dropped and each is told so once.
    public var rawWrite = false
    /// Bytes queued for a raw-port or NMEA-socket connection that does not read; past it, the
    /// receiver's bytes are dropped for that connection (``ServerStatistics/rawBytesDropped``).
    public var rawBacklog = 256 * 1024
    /// Bytes of whole sentences and frames of the raw port's writer that may wait for the
    /// receiver; past it the writer's socket is not read until the receiver has written
    /// them (at 9 600 baud 64 KiB take about 70 s). Dropped when the writer leaves.
    public var rawWriteBacklog = 64 * 1024
    /// The NMEA socket (`serve --nmea-socket`, GeoClue's `network-nmea` source): a Unix stream
    /// socket at this path whose every connection gets the NMEA sentences of the first
    /// receiver served, as the reader framed them, and counts as a subscriber of it for as long
    /// as it is connected. `nil`: none. See docs/geoclue.md.
    public var nmeaSocket: NMEASocket?
    /// Clients served at once. When all are connected, a newcomer takes the slot of the
    /// longest-idle client that does not watch (see ``evictionIdleTime``); when there is
    /// none, it is told so in an `ERROR` report and closed.
    public var maximumClients = 64
    /// How long a client that does not watch must have gone without a request before it may
    /// be closed to make room for a newcomer when all ``maximumClients`` slots are taken (it is
    /// told why, and the log says so); `nil`: never, newcomers are refused instead. Not zero,
    /// so that in a burst of connections a client is not closed before its first request
    /// could be read.
    public var evictionIdleTime: Duration? = .seconds(5)
    /// The longest request accepted, in bytes (see `GPSDRequestReader`).
    public var maximumRequestLength = 1024
    /// Bytes queued for a client that is not reading before it is dropped.
    public var maximumBacklog = 256 * 1024
    /// A client that neither watches nor sends a request for this long is closed, as gpsd
    /// closes them after 15 minutes; `nil`: never.
    public var idleTimeout: Duration? = .seconds(15 * 60)
    /// `SO_SNDBUF` for client sockets (the kernel doubles it for its bookkeeping); `nil`
    /// leaves the kernel's default, which on Linux grows to megabytes per socket. Small, so
    /// that a client that stops reading is found by ``maximumBacklog`` soon, not after the
    /// kernel has buffered megabytes for it; a reading client never notices (an epoch's
    /// reports are a few KiB).
    public var clientSendBufferSize: Int? = 32 * 1024
    /// How each receiver is driven: linger, replay expiry, chipset.
    public var receiverOptions = GPSReceiver.Options()
    /// Reports of one receiver waiting for the server thread (the readers hand them over
    /// directly): past this, the oldest are dropped (``ServerStatistics/reportsDropped``).
    public var subscriptionBufferSize = 128
    /// Baud rate for receivers found by discovery.
    public var baud: SerialConnector.BaudSetting = .automatic()
    /// What the VERSION report says. `release` is the gpsd release whose protocol is spoken:
    /// gpsd's clients compare it with their own (cgps warns and pauses two seconds at every
    /// screen update when they differ), so it is gpsd's, not ours; `rev` names us.
    public var release = "3.22"
    public var revision = "serialgps"
    /// Where the server reports what happens (clients refused or dropped, devices appearing);
    /// called on the server's thread, must not block.
    public var log: (@Sendable (String) -> Void)?
    /// Whose words the log uses where a receiver's message says what to set: the Swift API's
    /// (`chipset: .family(…)`) by default, serialgps's options (`--chipset NAME`) for
    /// `serialgps serve`.
    public var messageVocabulary: MessageVocabulary = .swiftAPI
    /// Told of each receiver the server starts or stops serving (named devices at start,
    /// discovered ones as they come and go), so that others in the same process, such as the
    /// MQTT bridge, can subscribe to it too. Called on the server's thread (for named
    /// devices, on the caller's, before the initializer returns); must not block.
    public var receiverChanges: (@Sendable (ServedReceiverChange) -> Void)?
    /// Time for chrony and ntpd from every receiver served (`serve --time`, docs/time.md);
    /// `nil`: none. Each receiver then stays powered for as long as the server runs.
    public var time: TimeOptions?
    /// Called once, on the server's thread, when the server has had no client connected and no
    /// receiver subscribed (watched, or held by an in-process subscriber) for this long: a
    /// socket-activated server then shuts down, to be started again by the next client
    /// (`serve --exit-idle S`). Never with ``time``, whose consumers never stop listening.
    public var whenIdle: IdleNotice?

    public init() {}
  }

  /// What ``Configuration/whenIdle`` calls, and after how long.
  public struct IdleNotice: Sendable {
    /// How long the server must have been idle.
    public var after: Duration
    /// Called once on the server's thread; must not block (shut the server down from a task).
    public var handler: @Sendable () -> Void

    public init(after: Duration, handler: @escaping @Sendable () -> Void) {
      self.after = after
      self.handler = handler
    }
  }

  /// A device served from start to end.
  public struct ServedDevice: Sendable {
    /// The path clients see and name (`/dev/ttyACM0`).
    public var path: String
    /// Other names clients may use for it in `?WATCH={"device":…}`.
    public var aliases: [String]
    /// How to open it.
    public var connector: any ReceiverConnector

    public init(path: String, aliases: [String] = [], connector: any ReceiverConnector) {
      self.path = path
      self.aliases = aliases
      self.connector = connector
    }

    /// A serial port; a symbolic link (`/dev/serial/by-id/…`) also answers to the node it
    /// points to.
    public static func serialPort(path: String, baud: SerialConnector.BaudSetting = .automatic())
      -> ServedDevice
    {
      var aliases: [String] = []
      if let resolved = realpath(path, nil) {
        let node = String(cString: resolved)
        free(resolved)
        if node != path { aliases.append(node) }
      }
      return ServedDevice(
        path: path, aliases: aliases, connector: SerialConnector(path: path, baud: baud))
    }
  }

  /// Which receivers the server serves.
  public enum Devices: Sendable {
    /// These, whether present or not.
    case fixed([ServedDevice])
    /// Every receiver discovery finds (known and possible ones), following hotplug.
    case discovery(DeviceDiscovery)
  }

  /// The server thread's mailbox: receivers' events, hotplug, control messages.
  let inbox: ServerInbox
  let timeKeeper: TimeKeeper?
  /// The address listened on, with the port the kernel chose when port 0 was asked for;
  /// `nil` without a listener. With sockets passed by the service manager, the first of them.
  public var listenAddress: ListenAddress? { listenAddresses.first }
  /// Every address listened on: the one of ``Configuration/listenAddress``, or those of the
  /// sockets passed (``Configuration/listenDescriptors``).
  public let listenAddresses: [ListenAddress]
  /// The raw port's address, with the port the kernel chose for port 0; `nil` without one.
  public let rawListenAddress: ListenAddress?
  /// The NMEA socket's path; `nil` without one.
  public let nmeaSocketPath: String?
  private let counters = Locked(ServerStatistics())
  /// Receivers to shut down once the server's thread has stopped.
  private let retired = Locked<[GPSReceiver]>([])
  private let thread: OwnThread
  private let discoveryTask: Task<Void, Never>?

  /// Binds the listening socket and starts serving.
  ///
  /// - Parameter clock: times the receivers' linger and replay expiry (tests pass a
  ///   `ManualClock`).
  /// - Throws: ``GPSDServerError`` when the address is remote without ``Configuration/allowRemote``
  ///   or cannot be bound, or when ``TimeOptions/chronySocket`` names a path that cannot be
  ///   chronyd's socket (``ChronySocket/check(path:)``).
  public convenience init(
    configuration: Configuration = Configuration(), devices: Devices,
    clock: any DriverClock = SystemClock()
  ) throws(GPSDServerError) {
    try self.init(
      configuration: configuration, devices: devices, clock: clock, wallClock: SystemWallClock())
  }

  /// Binds the listening socket and starts serving, with the time of day read from
  /// `wallClock` (tests pass a `FixedWallClock` to know the times the reports give).
  package init(
    configuration: Configuration = Configuration(), devices: Devices,
    clock: any DriverClock = SystemClock(), wallClock: any WallClock
  ) throws(GPSDServerError) {
    let activated = !configuration.listenDescriptors.isEmpty
    let address = activated ? nil : configuration.listenAddress
    if let address, !address.isLoopback, !configuration.allowRemote {
      throw GPSDServerError(
        "listening on \(address) would let other machines connect: the gpsd protocol has no "
          + "authentication and any watcher keeps the receivers powered; pass --allow-remote "
          + "to do it anyway, or listen on 127.0.0.1")
    }
    if let raw = configuration.rawListenAddress, !raw.isLoopback, !configuration.allowRemote {
      throw GPSDServerError(
        "a raw port on \(raw) would let other machines read the receiver, and write to it with "
          + "--raw-write; pass --allow-remote to do it anyway, or listen on 127.0.0.1")
    }
    if configuration.time != nil, configuration.whenIdle != nil {
      throw GPSDServerError(
        "a server that serves time is never idle (chrony and ntpd never stop listening): "
          + "leave out the idle exit (--exit-idle) or the time service (--time)")
    }
    // A chrony socket that cannot work is said now, not counted in a report ten minutes on.
    if let path = configuration.time?.chronySocket {
      switch ChronySocket.check(path: path) {
      case .usable: break
      case .notYet(let warning): configuration.log?("serialgps serve: \(warning)")
      case .unusable(let problem): throw GPSDServerError(problem)
      }
    }
    let listeners: [ListeningSocket]
    if activated {
      listeners = try Self.adopt(configuration.listenDescriptors, configuration: configuration)
    } else {
      listeners = []
    }
    // Each listener closes its socket when it goes away: an error below leaves none open.
    let rawListener: ListeningSocket?
    do throws(SocketError) {
      rawListener = try configuration.rawListenAddress.map { raw throws(SocketError) in
        try ListeningSocket(address: raw)
      }
    } catch {
      throw GPSDServerError(
        "cannot listen on the raw port \(configuration.rawListenAddress?.description ?? "-"): "
          + "\(error)\(error.code == EADDRINUSE ? " (choose another --raw-listen port)" : "")")
    }
    let nmeaListener: UnixListeningSocket?
    do throws(SocketError) {
      nmeaListener = try configuration.nmeaSocket.map { nmea throws(SocketError) in
        try UnixListeningSocket(path: nmea.path, mode: nmea.mode)
      }
    } catch {
      rawListener?.close()
      throw GPSDServerError(
        "cannot serve the NMEA socket \(configuration.nmeaSocket?.path ?? "-"): \(error) "
          + "(choose another --nmea-socket path, or remove what is there)")
    }
    let wakeup: EventSignal
    var bound: ListeningSocket?
    do throws(SocketError) {
      bound = try address.map { address throws(SocketError) in
        try ListeningSocket(address: address)
      }
      do {
        wakeup = try EventSignal.make()
      } catch {
        bound?.close()
        rawListener?.close()
        nmeaListener?.close()
        for listener in listeners { listener.close() }
        throw SocketError("eventfd", error)
      }
    } catch {
      let hint =
        error.code == EADDRINUSE
        ? " (is gpsd running? `systemctl stop gpsd.socket gpsd`, or choose another --listen port)"
        : error.code == EACCES ? " (ports below 1024 need privileges)" : ""
      throw GPSDServerError("cannot listen on \(address?.description ?? "-"): \(error)\(hint)")
    }
    let listening = listeners + (bound.map { [$0] } ?? [])
    listenAddresses = listening.map(\.address)
    rawListenAddress = rawListener?.address
    nmeaSocketPath = nmeaListener?.path
    var streamPorts: [(listener: any Listener, kind: StreamKind)] = []
    if let rawListener { streamPorts.append((rawListener, .raw)) }
    if let nmeaListener { streamPorts.append((nmeaListener, .nmea)) }
    let inbox = ServerInbox(reportLimit: configuration.subscriptionBufferSize, wakeup: wakeup)
    self.inbox = inbox
    var configuration = configuration
    // What a receiver says with nobody subscribed (a standby that failed after the last
    // watcher left, a position file ignored) reaches the log, and a failed standby the
    // counters.
    let log = configuration.log
    let notices = configuration.receiverOptions.notices
    let counters = counters
    configuration.receiverOptions.notices = { device, notice in
      if case .standbyFailed = notice { counters.withLock { $0.standbysFailed += 1 } }
      log?("serialgps serve: \(device): \(notice)")
      notices?(device, notice)
    }
    if let time = configuration.time {
      let keeper = TimeKeeper(options: time, log: configuration.log ?? { _ in })
      let others = configuration.receiverChanges
      configuration.receiverChanges = { change in
        keeper.change(change)
        others?(change)
      }
      timeKeeper = keeper
      // Samples and pulses go to the watchers through the server's thread, as fixes do.
      keeper.reports.withLock {
        $0 = { path, report in inbox.post(.time(path: path, DeviceTimeReport(report))) }
      }
    } else {
      timeKeeper = nil
    }
    let loop = EventLoop(
      configuration: configuration, clock: clock, wallClock: wallClock, listeners: listening,
      streamPorts: streamPorts,
      inbox: inbox, counters: counters, retired: retired)
    switch devices {
    case .fixed(let served):
      for device in served {
        let receiver = GPSReceiver(
          connector: device.connector, options: configuration.receiverOptions, clock: clock)
        loop.addInitialDevice(
          DeviceDescription(path: device.path, aliases: device.aliases), receiver: receiver)
        configuration.receiverChanges?(
          .added(ServedReceiver(path: device.path, device: nil, receiver: receiver)))
      }
      discoveryTask = nil
    case .discovery(let discovery):
      let events = discovery.events(includingPresent: true)
      discoveryTask = DriverExecutor.task {
        do {
          for try await event in events { inbox.post(.hotplug(event)) }
        } catch {
          inbox.post(.discoveryFailed(String(describing: error)))
        }
      }
    }
    thread = OwnThread.start(name: "serialgps-serve") { loop.run() }
  }

  /// The sockets the service manager passed, taken over; every one is closed when one cannot
  /// be served, so that none is left to a process that will not accept on it.
  private static func adopt(
    _ descriptors: [Int32], configuration: Configuration
  ) throws(GPSDServerError) -> [ListeningSocket] {
    var adopted: [ListeningSocket] = []
    for (index, descriptor) in descriptors.enumerated() {
      let problem: String
      do throws(SocketError) {
        // One that fails is closed by its initialiser.
        let listener = try ListeningSocket(adopting: descriptor)
        adopted.append(listener)
        if listener.address.isLoopback || configuration.allowRemote { continue }
        problem =
          "the socket unit listens on \(listener.address), which lets other machines connect: "
          + "the gpsd protocol has no authentication; add --allow-remote to serve's ExecStart "
          + "(a drop-in), or listen on 127.0.0.1:2947 and [::1]:2947 only"
      } catch {
        problem = "cannot serve the socket the service manager passed: \(error)"
      }
      for listener in adopted { listener.close() }
      // Those not reached yet are ours too: nobody else will close them.
      for rest in descriptors[(index + 1)...] { _ = Glibc.close(rest) }
      throw GPSDServerError(problem)
    }
    return adopted
  }

  /// Counters and gauges, for monitoring and tests.
  public var statistics: ServerStatistics { counters.withLock { $0 } }

  /// Stops listening, closes every client, and powers every receiver off (without the
  /// linger); returns when they are all closed.
  public func shutdown() async {
    await timeKeeper?.shutdown()
    discoveryTask?.cancel()
    inbox.post(.stop)
    await thread.join()
    let receivers = retired.withLock { $0 }
    for receiver in receivers { await receiver.shutdown() }
  }

  /// Returns once the server thread has handled every receiver and hotplug event posted
  /// before the call.
  func settle() async {
    await withCheckedContinuation { continuation in
      inbox.post(.barrier(continuation))
    }
  }
}

/// A receiver the server serves, as told to ``GPSDServer/Configuration/receiverChanges``.
public struct ServedReceiver: Sendable {
  /// The device's path (`/dev/ttyACM0`).
  public var path: String
  /// What discovery knows about it; `nil` for a device named at start.
  public var device: SerialDevice?
  /// The receiver: subscribe to it as to any other.
  public var receiver: GPSReceiver
}

/// A change in what the server serves.
public enum ServedReceiverChange: Sendable {
  /// The server serves a receiver from now on.
  case added(ServedReceiver)
  /// The server no longer serves it (unplugged, or no longer classified as a receiver); it
  /// is being shut down.
  case removed(ServedReceiver)
}

/// Why the server could not start.
public struct GPSDServerError: Error, Sendable, Hashable, CustomStringConvertible {
  public let description: String
  init(_ description: String) { self.description = description }
}

/// What the server has done so far, and what it serves now.
public struct ServerStatistics: Sendable, Hashable {
  /// Clients connected now.
  public var clients = 0
  /// Clients with watcher mode enabled now.
  public var watchers = 0
  /// Devices whose receiver the server subscribes to now (powered or lingering to power off).
  public var subscribedDevices = 0
  /// Clients accepted since the start.
  public var clientsAccepted = 0
  /// Clients turned away because ``GPSDServer/Configuration/maximumClients`` were connected.
  public var clientsRefused = 0
  /// Clients dropped because they stopped reading.
  public var clientsDropped = 0
  /// Idle clients that did not watch, closed to make room for a newcomer.
  public var clientsEvicted = 0
  /// Receiver reports skipped because the server thread fell behind the receivers (the
  /// newest are kept; see `subscriptionBufferSize`).
  public var reportsDropped = 0
  /// Power-offs that may have left a receiver powered
  /// (``SerialGPS/ReceiverNotice/standbyFailed(reason:)``), each logged as it happened.
  public var standbysFailed = 0
  /// Connections to the raw port now.
  public var rawClients = 0
  /// Connections to the NMEA socket now.
  public var nmeaClients = 0
  /// Bytes of the receiver not sent to a raw-port connection because it did not read and
  /// ``GPSDServer/Configuration/rawBacklog`` bytes waited for it already.
  public var rawBytesDropped = 0
  /// Bytes of the raw port's writers handed to the receiver: whole NMEA sentences, UBX and
  /// SiRF frames.
  public var rawBytesWritten = 0
  /// Bytes the raw port's writers sent that never reached the receiver: not part of a whole
  /// sentence or frame (noise, a bad checksum, a frame the framer does not know, such as
  /// RTCM 3), or still waiting when their writer left.
  public var rawWriteBytesDropped = 0
  /// Inputs the server's protocol state did not expect and ignored (a bug if ever above zero;
  /// a debug build stops at the first).
  public var unexpectedEvents = 0

  public init() {}
}

/// Where and with which permissions serve offers its NMEA sentences on a Unix stream socket
/// (``GPSDServer/Configuration/nmeaSocket``, `serve --nmea-socket PATH`).
public struct NMEASocket: Sendable, Hashable {
  /// The socket's path. A socket a process that is gone left there is replaced.
  public var path: String
  /// Its permissions: connecting needs write permission. 0o666 by default, as the gpsd port
  /// on loopback is open to every local user; 0o660 keeps it to serve's group (GeoClue's user
  /// must then be in it).
  public var mode: UInt32

  public init(path: String, mode: UInt32 = 0o666) {
    self.path = path
    self.mode = mode
  }
}
