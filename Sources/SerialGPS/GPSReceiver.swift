import Chipsets
import NMEA
import POSIX
import TimeService

/// A GPS receiver that is powered only while someone listens.
///
/// The first subscriber opens the port, wakes the receiver with its chipset's commands and
/// starts reading; fixes then stream to every subscriber, and a newcomer at once gets the
/// latest fix with its age. When the last subscription ends the receiver waits
/// ``Options/linger``, then sends the chipset's standby commands and closes the port. A
/// subscriber arriving during the linger keeps it powered, restarting nothing.
///
/// ```swift
/// let receiver = GPSReceiver(device: "/dev/ttyACM0")
/// for await event in receiver.subscribe() {
///   if case .fix(let update) = event { print(update.fix.latitude ?? "-") }
/// }
/// ```
///
/// The receiver lives while this object or any of its subscriptions does; when the last of
/// them goes away it powers off (without waiting for the linger). ``shutdown()`` does the same
/// and waits until the receiver has been sent its standby commands.
public final class GPSReceiver: Sendable {
  /// How the receiver is driven.
  public struct Options: Sendable {
    /// How long the receiver stays powered after the last subscription ends. Zero powers off
    /// at once.
    public var linger: Duration = .seconds(5)
    /// A newcomer gets the latest fix only while it is younger than this.
    public var replayExpiry: Duration = .seconds(10)
    /// Events buffered per subscriber before the oldest positions are dropped.
    public var subscriberBufferSize = 32
    /// First delay before reopening a lost device; doubled per attempt up to
    /// ``maximumReconnectDelay``.
    public var reconnectDelay: Duration = .milliseconds(500)
    public var maximumReconnectDelay: Duration = .seconds(30)
    /// The longest NMEA sentence accepted (RTK receivers exceed NMEA's 82 characters).
    public var maximumSentenceLength = 128
    /// What the driver sends to wake the receiver and to put it to standby.
    public var chipset: ChipsetChoice = .automatic
    /// The u-blox binary messages a u-blox receiver is told to send beside its NMEA, once per
    /// epoch in the RAM layer, when the driver commands it (``chipset`` names or finds u-blox;
    /// a ``ChipsetChoice/custom(_:)`` set brings its own). None by default: NMEA alone fits a
    /// 9600 baud line and every receiver; ``UBXMessageSelection/navigation`` adds the
    /// receiver's own accuracies, ECEF and 1e-7° positions (docs/ubx.md, "The default").
    public var ubxMessages: UBXMessageSelection = .none
    /// How long to wait for a command's acknowledgement, and how often to retry it.
    public var acknowledgementTimeout: Duration = .seconds(1)
    public var commandAttempts = 3
    /// Where woken receivers are noted, so that one left awake by a process that ended
    /// without ``GPSReceiver/shutdown()`` (killed outright, or an app that simply exited) is
    /// put to standby by the next process that opens it (``AwakeMarkers``). By default
    /// ``AwakeMarkers/standard()``: `/run/serialgps` or `$XDG_RUNTIME_DIR/serialgps`, whichever
    /// is writable, and `nil` (nothing noted) when neither is. `nil` turns it off.
    public var awakeMarkers: AwakeMarkers? = AwakeMarkers.standard()
    /// The longest time between two ephemeris collections for a receiver woken only briefly
    /// by interval requests: past it, one wake is extended until the receiver has tracked for
    /// about 30 s, so that later wakes stay hot starts (docs/requests.md).
    public var ephemerisRefresh: Duration = .seconds(2 * 3600)
    /// A wake line wired to the receiver that the driver may drive (MediaTek FORCE_ON; a
    /// ``GPIOWakeLine``): only with one does a power-off use a sleep that only the pin ends
    /// (MediaTek backup, `$PMTK225,4`, for a long expected sleep). `nil` by default: nothing
    /// but the serial line is assumed (docs/chipsets.md, "Sleep depth").
    public var wakePin: (any WakeLine)?
    /// How deep a power-off may put the receiver: ``SleepDepth/deepest`` it can certainly
    /// leave (the default), or ``SleepDepth/standby`` always, for the quickest wakes.
    public var sleepDepth: SleepDepth = .deepest
    /// Whether a wake that will be a cold or warm start (a first start, a receiver that lost
    /// its backup power or slept past its ephemeris) tells a u-blox or MediaTek receiver the
    /// time and its last position (docs/chipsets.md, "Aiding"). Never to a receiver whose
    /// family is not known.
    public var aiding = true
    /// Where the receiver's last position is kept across restarts (``PositionMemory``):
    /// written when it is put to standby, read for its first wake. `nil` (the default): not
    /// kept, the last fix of this process alone aids.
    public var positionMemory: PositionMemory? = nil
    /// Where the receiver is, for a first start with no fix of this process and none kept in
    /// ``positionMemory`` (an app that knows its place: a fixed station, a position from the
    /// network). Its accuracy is widened by its age at the wake, as a fix's is.
    public var initialPosition: KnownPosition? = nil
    /// Told what the driver has to say with nobody subscribed (``ReceiverNotice``): a receiver
    /// left powered because its sleep failed, a kept position ignored or not saved. Called on
    /// the driver's task, with the receiver's ``GPSReceiver/deviceName`` first; return
    /// quickly. `nil` (the default): only ``GPSReceiver/lastNotice`` keeps them.
    public var notices: (@Sendable (_ device: String, _ notice: ReceiverNotice) -> Void)? = nil
    /// The one wall clock the driver reads (the time aiding tells a receiver); tests inject a
    /// ``POSIX/FixedWallClock``.
    package var wallClock: any WallClock = SystemWallClock()

    public init() {}
  }

  let core: ReceiverCore
  private let lifetime: ReceiverLifetime

  /// A receiver reached through `connector`, timed by `clock`.
  public init(
    connector: any ReceiverConnector, options: Options = Options(),
    clock: any DriverClock = SystemClock()
  ) {
    core = ReceiverCore(connector: connector, options: options, clock: clock)
    lifetime = ReceiverLifetime(core: core)
    core.start()
  }

  /// The device as users know it.
  public var deviceName: String { core.connector.deviceName }

  /// Subscribes to fixes, satellite views and status changes. The first subscriber powers the
  /// receiver on. See ``ReceiverEvents`` for what ends a subscription.
  ///
  /// `includingLateFixes`: also the fixes the reader found queued behind newer ones after it
  /// fell behind, flagged ``FixUpdate/isLate`` (docs/receiver.md, "Late fixes"); without it
  /// (the default) only the newest of them arrives, live.
  public func subscribe(bufferSize: Int? = nil, includingLateFixes: Bool = false)
    -> ReceiverEvents
  {
    ReceiverEvents(
      core: core.makeSubscription(
        bufferSize: bufferSize, rawData: false, lateFixes: includingLateFixes,
        lifetime: lifetime))
  }

  /// The events subscribers get, without powering the receiver: its status changes (the
  /// current one first), and its fixes and satellite views while others power it. For code
  /// that asks with a request or ``location(accuracy:timeout:maxAge:)``, which deliver fixes
  /// only, and wants to know at once why none can come: the device cannot be opened
  /// (``ReceiverStatus/disconnected(reason:)``), or a receiver in standby is not woken
  /// (``ReceiverStatus/commandsWithheld(_:)``). Ends as ``ReceiverEvents`` do.
  public func observe(bufferSize: Int? = nil) -> ReceiverEvents {
    ReceiverEvents(core: core.makeObserver(bufferSize: bufferSize, lifetime: lifetime))
  }

  /// Subscribes to fixes as `request` asks: how often, how good, whether it may power the
  /// receiver (docs/requests.md). All requests and plain subscriptions are merged: the
  /// receiver is powered for what they want together, sleeping between the fixes of interval
  /// requests. The sequence gets only fixes, each good enough for the request and due, and
  /// ends when the request does (``LocationRequest/maxUpdates``, ``LocationRequest/duration``,
  /// or as ``ReceiverEvents`` do. A request that cannot be met (a zero interval, one below
  /// ``LocationRequest/resolution``, a zero accuracy) throws ``LocationRequestRefused``
  /// saying why, and nothing is powered.
  public func subscribe(_ request: LocationRequest, bufferSize: Int? = nil)
    throws(LocationRequestRefused) -> ReceiverEvents
  {
    if let refusal = request.refusal { throw refusal }
    return ReceiverEvents(
      core: core.makeRequest(request, bufferSize: bufferSize, lifetime: lifetime).0)
  }

  /// ``subscribe(_:bufferSize:)`` with a callback, for code that is not async. Cancel the
  /// returned subscription, or let it go, to end the request; a request that cannot be met
  /// throws ``LocationRequestRefused``.
  public func subscribe(
    _ request: LocationRequest, bufferSize: Int? = nil,
    _ handler: @escaping @Sendable (ReceiverEvent) -> Void
  ) throws(LocationRequestRefused) -> Subscription {
    if let refusal = request.refusal { throw refusal }
    return Subscription(
      core: core.makeRequest(request, bufferSize: bufferSize, lifetime: lifetime).0,
      handler: { item in
        if case .event(let event) = item { handler(event) }
      })
  }

  /// One fix of `accuracy` metres or better (`nil`: any fix): the latest at once when it is
  /// no older than `maxAge` and good enough, else the first one the receiver makes, woken for
  /// it and released after it (no linger).
  ///
  /// - Throws: ``LocationRequestRefused`` at once, powering nothing, for an `accuracy` that
  ///   is not above 0 or a `timeout` below ``LocationRequest/resolution``;
  ///   ``LocationTimeout`` (with the best fix seen) when none was good enough within
  ///   `timeout`, or when the receiver shut down first; `CancellationError` when the task is
  ///   cancelled.
  public func location(
    accuracy: Double? = nil, timeout: Duration = .seconds(60), maxAge: Duration? = nil
  ) async throws -> FixUpdate {
    let request = LocationRequest(
      accuracy: accuracy, maxAge: maxAge, maxUpdates: 1, duration: timeout)
    if let refusal = request.refusal { throw refusal }
    let (subscription, record) = core.makeRequest(
      request, bufferSize: nil, lifetime: lifetime)
    defer { subscription.dispose() }
    for await event in ReceiverEvents(core: subscription) {
      if case .fix(let update) = event { return update }
    }
    try Task.checkCancellation()
    throw LocationTimeout(accuracy: accuracy, timeout: timeout, best: record.ended.best)
  }

  /// Subscribes with a callback, for code that is not async. The handler runs on a task, one
  /// event at a time. Cancel the returned subscription, or let it go, to unsubscribe.
  public func subscribe(
    bufferSize: Int? = nil, _ handler: @escaping @Sendable (ReceiverEvent) -> Void
  ) -> Subscription {
    Subscription(
      core: core.makeSubscription(bufferSize: bufferSize, rawData: false, lifetime: lifetime),
      handler: { item in
        if case .event(let event) = item { handler(event) }
      })
  }

  /// Subscribes like ``subscribe(bufferSize:)``, and also receives the bytes read from the
  /// device (for a server that passes NMEA through). The bytes are copied only while such a
  /// subscription exists.
  public func subscribeWithRawData(bufferSize: Int? = nil) -> ReceiverEventsWithRawData {
    ReceiverEventsWithRawData(
      core: core.makeSubscription(bufferSize: bufferSize, rawData: true, lifetime: lifetime))
  }

  /// ``subscribeWithRawData(bufferSize:)`` with a callback, for code that is not async.
  public func subscribeWithRawData(
    bufferSize: Int? = nil, _ handler: @escaping @Sendable (ReceiverEventOrRawData) -> Void
  ) -> Subscription {
    Subscription(
      core: core.makeSubscription(bufferSize: bufferSize, rawData: true, lifetime: lifetime),
      handler: handler)
  }

  /// Subscribes with a handler called on the thread that produced each event, with no task
  /// and no buffer in between: the reader thread for fixes, satellite views, bytes and
  /// sentences, the driver's thread for most status changes. For a consumer with a thread
  /// and a queue of its own (the gpsd server's event loop): the handler must return at once,
  /// never block, and bound its own queue. It may be called from two threads at a time.
  ///
  /// A newcomer's replay (the current status, the latest fix while fresh) comes first, as
  /// for every subscription. `rawData`: also the bytes read from the device, before the
  /// fixes decoded from them; `sentences`: also the NMEA sentences the reader framed
  /// (``ReceiverEventOrRawData/sentences(_:)``). Cancel the returned subscription, or let it
  /// go, to unsubscribe; a call already under way may still finish after that.
  public func subscribeOnReaderThread(
    rawData: Bool = false, sentences: Bool = false,
    _ handler: @escaping @Sendable (ReceiverEventOrRawData) -> Void
  ) -> Subscription {
    let core = core.makeSubscription(
      bufferSize: nil, rawData: rawData, sentences: sentences, forward: handler,
      lifetime: lifetime)
    core.queue.startForwarding()
    return Subscription(direct: core)
  }

  /// Keeps the receiver powered for `duration` even with no subscriber: the warm-up an app
  /// does at launch so that a later screen has a precise fix at once. Holds extend, never
  /// shorten, one another; when the hold ends the usual linger applies.
  public func hold(for duration: Duration) {
    core.hold(for: duration)
  }

  /// Writes `bytes` to the receiver as they are (a tool's own commands: u-center, RTKLIB),
  /// in order, between the driver's own command exchanges, never inside one: the driver's
  /// thread writes them when no wake-up, standby or probe is under way. Writes nothing, and
  /// counts the bytes in ``ReceiverStatistics/bytesNotWritten``, while the receiver is not
  /// open (powered off, or being opened): subscribe first. Returns at once.
  public func write(_ bytes: [UInt8]) {
    core.write(bytes)
  }

  /// ``write(_:)``, then `done` on the driver's thread once the bytes are written (or
  /// dropped and counted, the receiver not being open): for a writer that bounds what it
  /// hands on (the gpsd server's raw port). `done` must return at once.
  public func write(_ bytes: [UInt8], whenDone done: @escaping @Sendable () -> Void) {
    core.write(bytes, done: done)
  }

  /// Ends every subscription, powers the receiver off (sending its standby commands at once,
  /// without the linger) and returns when the port is closed.
  public func shutdown() async {
    await core.shutdown()
  }

  /// What a new subscriber would be replayed now: the latest fix with its age, while it is
  /// no older than ``Options/replayExpiry``; `nil` otherwise. For a consumer that serves many
  /// clients from one subscription (the gpsd server) and gives each newcomer the replay.
  public var replay: FixUpdate? { core.hub.replay }

  /// The latest fix heard, with its age, however old (gpsd's `?POLL` reports it so); `nil`
  /// before the first fix. Asking powers nothing.
  public var latestFix: FixUpdate? { core.hub.latestFix }

  /// The status subscribers were told last (``ReceiverStatus``): why a one-shot found no fix,
  /// say (`disconnected` with the reason the device could not be opened). `nil` before the
  /// first. Asking powers nothing.
  public var status: ReceiverStatus? { core.hub.status }

  /// Counters since the receiver was created.
  public var statistics: ReceiverStatistics { core.statistics }

  /// The last thing the driver had to say whether or not anyone subscribed
  /// (``ReceiverNotice``): a receiver left powered, a kept position ignored or not saved.
  /// `nil` before the first. Asking powers nothing.
  public var lastNotice: ReceiverNotice? { core.lastNotice.withLock { $0 } }

  /// What the receiver has said about itself: its chipset family and, where it named them,
  /// maker, model and firmware (``ChipsetIdentification``), however sure (a weak hint has
  /// `confidence: .low` and chooses no commands). `nil` until something it sent named a maker,
  /// and again once the connector reaches another receiver. Asking powers nothing.
  public var identification: ChipsetIdentification? {
    core.knowledge.identification.withLock { $0 }
  }

  /// The family whose commands wake the receiver and put it to standby now: the `chipset`
  /// option, else what the connector knows (USB IDs, a udev property), else what the receiver
  /// said about itself; ``ChipsetFamily/nmea`` (no commands: it is only opened and closed)
  /// while none of these names one.
  public var commandFamily: ChipsetFamily { core.knowledge.commandSet().family }

  /// Why no power commands would go to the receiver at `moment`, for want of knowing its
  /// chipset (what ``ReceiverStatus/commandsWithheld(_:)`` tells subscribers); `nil` when it
  /// has commands, or when the `chipset` option chose to send none. For a caller whose
  /// subscription has ended by the time the receiver powers off (after ``shutdown()``: was it
  /// put to standby?).
  public func commandsWithheld(at moment: CommandsWithheld.Moment = .powerOff)
    -> CommandsWithheld?
  {
    core.knowledge.withheld(moment)
  }

  /// The time service the reader feeds (docs/time.md): every read's system time and every
  /// epoch with the arrival of its first byte, on the reader thread; told when the port
  /// closes. `nil` (the default): no time service, and the reader does nothing of the kind.
  ///
  /// Read when the port opens: set it before subscribing (a change reaches the next
  /// connection). A time server also holds a subscription for as long as it serves time, so
  /// that the receiver stays powered (docs/time.md, "Why a time server keeps its receiver
  /// powered").
  public var timeService: TimeService? {
    get { core.timeService.withLock { $0 } }
    set { core.timeService.withLock { $0 = newValue } }
  }
}

/// Counters of a ``GPSReceiver``.
public struct ReceiverStatistics: Sendable, Hashable {
  /// Times the port was opened and the receiver powered on.
  public var powerOns = 0
  /// Times the receiver was powered off and the port closed (after a loss too).
  public var powerOffs = 0
  /// Connections lost while powered (unplugs, read errors).
  public var connectionsLost = 0
  /// Failed attempts to open the device.
  public var failedOpens = 0
  /// Fixes published (late ones included).
  public var fixes = 0
  /// Fixes read late: queued behind a newer one after the reader fell behind (a stopped
  /// process, a loaded board), sent only to subscriptions that asked for them.
  public var lateFixes = 0
  /// Events dropped by subscribers that fell behind (current subscribers).
  public var droppedEvents = 0
  /// Commands written, and those that failed after their retries.
  public var commandsSent = 0
  public var commandsFailed = 0
  /// Power-ons and power-offs that sent no commands because nothing named the receiver's
  /// chipset (``ReceiverStatus/commandsWithheld(_:)``): a receiver left running, or not woken.
  public var powerCommandsWithheld = 0
  /// Bytes of ``GPSReceiver/write(_:)`` written to the receiver, and those dropped because
  /// it was not open or the write failed.
  public var bytesWritten = 0
  public var bytesNotWritten = 0
  /// What the decoder accepted and rejected over all connections.
  public var decoder = DecoderStatistics()
  /// Events the power policy did not expect in its state: a bug, ignored (a debug build
  /// stops at the first with an assertion). 0 unless something is wrong.
  public var unexpectedPolicyEvents = 0
  /// Location requests the scheduler refused because they cannot be met
  /// (``LocationRequest/refusal``). 0 unless something is wrong: such a request throws
  /// ``LocationRequestRefused`` when it is made and never reaches the scheduler.
  public var refusedRequests = 0
  /// Wakes that told the receiver the time (and its last position) before its start, and
  /// aiding messages it refused or left unanswered (a chip that already has its time answers
  /// `$PMTK001,740,2`): information, the wake goes on.
  public var aidedWakes = 0
  public var aidingNotTaken = 0
  /// Sleeps deeper than the quick-wake standby that the receiver did not confirm entering
  /// (a `$PMTK225,4` refused or unanswered, a u-blox that kept sending after `UBX-RXM-PMREQ`,
  /// a wake line that would not go low): each time the receiver was taken as awake and got
  /// the quick-wake standby instead.
  public var sleepsNotEntered = 0
  /// Power-offs that may have left the receiver powered: its standby was refused or ignored
  /// while it kept talking, or followed a sleep it ignored with nothing to confirm it; each
  /// one told as ``ReceiverNotice/standbyFailed(reason:)``.
  public var standbysFailed = 0

  public init() {}
}

/// Ends the receiver when neither the ``GPSReceiver`` nor any subscription refers to it.
final class ReceiverLifetime: Sendable {
  let core: ReceiverCore
  init(core: ReceiverCore) { self.core = core }
  deinit { core.requestShutdown() }
}
