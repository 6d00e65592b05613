import NMEA
import SerialGPS

/// Counters of one NTRIP client since it was made.
public struct NTRIPStatistics: Sendable, Hashable {
  /// Bytes read from the caster, headers included.
  public var bytesReceived = 0
  /// Whole RTCM 3 frames whose CRC matched.
  public var framesReceived = 0
  /// Frames handed to the receiver (``framesReceived`` less those dropped while it stalled).
  public var framesForwarded = 0
  /// Frames dropped because the receiver's port had too much waiting to be written.
  public var framesDropped = 0
  /// Frames refused: whole, but their CRC did not match. Never written.
  public var framesRefused = 0
  /// Bytes that were no part of a valid frame (garbage, refused and cut-off frames).
  public var bytesSkipped = 0
  /// GGA sentences sent to the caster.
  public var positionsSent = 0
  /// Connections made to the caster (TCP connected).
  public var connections = 0
  /// How long those connections lasted together, and the longest of them.
  public var connectedTime = Duration.zero
  public var longestConnection = Duration.zero
  /// Connections that ended in a failure (not a standby).
  public var failures = 0
  /// Times the client's thread woke: for the receiver's power, the caster's socket, a
  /// deadline or the stop. None while the receiver sleeps and nothing changes.
  public var wakeUps = 0
  /// Of ``wakeUps``, those for a deadline of the session's (a retry, a position due, the
  /// silence check): only while a connection is wanted.
  public var timedWakeUps = 0

  public init() {}
}

/// The NTRIP client's decisions as a pure state machine, with no I/O and no clock of its own:
/// its event methods take the time and return the actions to run, in order (the I/O shell,
/// ``NTRIPClient``, runs them). It connects while the receiver is powered and not otherwise,
/// reconnects with the package's ``Backoff`` after a failure, drops a connection on which the
/// caster stayed silent for ``Configuration/silenceTimeout``, stops at a failure that a retry
/// cannot mend (a wrong password or mountpoint) until the next power-on, sends the rover's
/// position as GGA at the start and every ``Configuration/positionInterval``, and passes on
/// only whole RTCM 3 frames whose CRC matched.
public struct NTRIPSession: Sendable {
  public struct Configuration: Sendable {
    public var caster: NTRIPCaster
    /// The `User-Agent`; NTRIP asks that it begin with `NTRIP `.
    public var userAgent = "NTRIP SerialGPS"
    /// How often the rover's position goes to the caster once there is a fix; `nil`: never.
    public var positionInterval: Duration? = .seconds(10)
    /// A connection on which nothing came for this long (the connect and the answer
    /// included) is dropped and made again.
    public var silenceTimeout = Duration.seconds(30)
    /// The delay before the first attempt after a failure, doubled at each failure that
    /// follows, up to ``maximumReconnectDelay`` (the package's one ``Backoff``).
    public var reconnectDelay = Duration.seconds(1)
    public var maximumReconnectDelay = Duration.seconds(60)

    var backoff: Backoff { Backoff(initial: reconnectDelay, maximum: maximumReconnectDelay) }

    public init(caster: NTRIPCaster) { self.caster = caster }
  }

  public enum Action: Sendable, Equatable {
    /// Open a TCP connection to the caster; answer with ``NTRIPSession/connected(at:fix:)``
    /// or ``NTRIPSession/connectionEnded(at:reason:)``.
    case connect
    /// Send these bytes to the caster (the request, a GGA sentence).
    case send([UInt8])
    /// Write this whole, valid RTCM 3 frame to the receiver.
    case forward([UInt8])
    /// Close the connection to the caster.
    case disconnect
    /// Say this (log).
    case report(Report)
  }

  /// What happened, for the log.
  public enum Report: Sendable, Equatable, CustomStringConvertible {
    case connecting(NTRIPCaster)
    case streaming(NTRIPCaster, version: Int, chunked: Bool)
    /// A connection ended or failed; `retryIn`: the next attempt, `nil`: none until the
    /// receiver is powered again (a permanent failure, or the standby itself).
    case ended(NTRIPFailure?, after: Duration?, retryIn: Duration?)

    public var description: String {
      switch self {
      case .connecting(let caster): return "NTRIP: connecting to \(caster)"
      case .streaming(let caster, let version, let chunked):
        return "NTRIP: receiving corrections from \(caster) (NTRIP \(version)"
          + (chunked ? ", chunked)" : ")")
      case .ended(let failure, let after, let retryIn):
        var text = "NTRIP: "
        if let failure {
          text += failure.description
        } else {
          text += "disconnected: the receiver sleeps"
        }
        if let after { text += " (connected \(Self.seconds(after)))" }
        if let retryIn {
          text += "; trying again in \(Self.seconds(retryIn))"
        } else if failure?.isPermanent == true {
          text += "; not trying again until the receiver is next powered"
        }
        return text
      }
    }

    static func seconds(_ duration: Duration) -> String {
      let milliseconds =
        duration.components.seconds * 1000
        + duration.components.attoseconds / 1_000_000_000_000_000
      return "\(milliseconds / 1000).\(String(milliseconds % 1000 / 100)) s"
    }
  }

  private struct Link: Sendable {
    var lastHeard: DriverInstant
    var connected: DriverInstant?
    var decoder: NTRIPResponseDecoder
    var nextPosition: DriverInstant?
  }

  private enum State: Sendable {
    /// The receiver sleeps: no connection.
    case off
    /// Waiting to try again.
    case waiting(until: DriverInstant)
    /// Stopped at a failure a retry cannot mend, until the next power-on.
    case stopped(NTRIPFailure)
    /// Connecting, asking, or streaming.
    case linked(Link)
  }

  public let configuration: Configuration
  public private(set) var statistics = NTRIPStatistics()
  private var state = State.off
  /// The package's framer, which checks RTCM 3 frames (preamble, reserved bits, length,
  /// CRC-24Q); only those are passed on, whatever else the caster sends is skipped. It holds
  /// at most one RTCM 3 frame's worth of bytes.
  private var framer = NMEAFramer(
    configuration: FramerConfiguration(maximumBinaryFrameLength: RTCM3.maximumFrameLength))
  /// Consecutive failures, for the backoff; back to zero at the first valid frame.
  private var failures = 0

  public init(configuration: Configuration) { self.configuration = configuration }

  /// Whether a connection is wanted or open now.
  public var isLinked: Bool {
    if case .linked = state { return true }
    return false
  }

  /// The failure that stopped the client until the next power-on, if any.
  public var stoppedBy: NTRIPFailure? {
    if case .stopped(let failure) = state { return failure }
    return nil
  }

  /// When ``tick(at:fix:)`` has something to do next; `nil`: nothing before another event.
  public var nextDeadline: DriverInstant? {
    switch state {
    case .off, .stopped: return nil
    case .waiting(let until): return until
    case .linked(let link):
      let silence = link.lastHeard + configuration.silenceTimeout
      guard let position = link.nextPosition else { return silence }
      return min(silence, position)
    }
  }

  /// The receiver's status changed (``GPSReceiver/observe(bufferSize:)`` tells each change,
  /// the current one first, without powering it): powered from the first sign of a power-on
  /// until it is off or the device is gone. A command's failure says nothing about power.
  public mutating func receiverStatus(_ status: ReceiverStatus, at now: DriverInstant)
    -> [Action]
  {
    switch status {
    case .poweringOn, .streaming, .noFix, .reconnected: return power(true, at: now)
    case .poweredOff, .disconnected: return power(false, at: now)
    case .commandFailed, .commandsWithheld: return []
    }
  }

  /// The receiver was powered (`true`) or went to sleep.
  public mutating func power(_ powered: Bool, at now: DriverInstant) -> [Action] {
    switch (state, powered) {
    case (.off, true), (.stopped, true):
      failures = 0
      return connect(at: now)
    case (.waiting, false), (.stopped, false):
      state = .off
      return []
    case (.linked(let link), false):
      let after = end(link, at: now)
      state = .off
      framer.reset()
      return [.disconnect, .report(.ended(nil, after: after, retryIn: nil))]
    case (.off, false), (.waiting, true), (.linked, true):
      return []
    }
  }

  /// The TCP connection is up: the request goes out.
  public mutating func connected(at now: DriverInstant) -> [Action] {
    guard case .linked(var link) = state, link.connected == nil else { return [] }
    link.connected = now
    link.lastHeard = now
    statistics.connections += 1
    state = .linked(link)
    return [.send(configuration.caster.request(userAgent: configuration.userAgent))]
  }

  /// Bytes from the caster.
  public mutating func received(_ bytes: ArraySlice<UInt8>, at now: DriverInstant, fix: Fix?)
    -> [Action]
  {
    guard case .linked(var link) = state else { return [] }
    statistics.bytesReceived += bytes.count
    link.lastHeard = now
    var actions: [Action] = []
    var failure: NTRIPFailure?
    var startedStreaming = false
    link.decoder.append(bytes) { output in
      switch output {
      case .streaming(let version, let chunked):
        startedStreaming = true
        actions.append(
          .report(.streaming(configuration.caster, version: version, chunked: chunked)))
      case .data(let data):
        let before = framer.statistics
        let pendingBefore = framer.bytesInProgress
        var framed = 0
        framer.feed(data) { frame in
          guard case .rtcm3 = frame else { return }
          let whole = frame.bytes
          framed += whole.count
          actions.append(.forward(whole))
        }
        let after = framer.statistics
        statistics.framesReceived += after.rtcm3Frames - before.rtcm3Frames
        statistics.framesRefused += after.badBinaryFrames - before.badBinaryFrames
        statistics.bytesSkipped += data.count + pendingBefore - framer.bytesInProgress - framed
        if after.rtcm3Frames > before.rtcm3Frames { failures = 0 }
      case .failure(let reason):
        failure = reason
      }
    }
    if startedStreaming && configuration.positionInterval != nil {
      link.nextPosition = now
      actions += position(&link, at: now, fix: fix)
    }
    state = .linked(link)
    if let failure { actions += fail(failure, at: now) }
    return actions
  }

  /// The connection could not be made, or it ended (`reason`; `nil`: the caster closed it).
  public mutating func connectionEnded(at now: DriverInstant, reason: String?) -> [Action] {
    guard case .linked(var link) = state else { return [] }
    if let reason {
      return fail(.connectionFailed(reason), at: now, alreadyClosed: true)
    }
    var last: NTRIPFailure?
    link.decoder.end { if case .failure(let failure) = $0 { last = failure } }
    state = .linked(link)
    return fail(last ?? .closedByCaster, at: now, alreadyClosed: true)
  }

  /// Time passed: a retry due, a silent caster, a position due.
  public mutating func tick(at now: DriverInstant, fix: Fix?) -> [Action] {
    switch state {
    case .off, .stopped:
      return []
    case .waiting(let until):
      return now >= until ? connect(at: now) : []
    case .linked(var link):
      if now >= link.lastHeard + configuration.silenceTimeout {
        return fail(.silent(configuration.silenceTimeout), at: now)
      }
      let actions = position(&link, at: now, fix: fix)
      state = .linked(link)
      return actions
    }
  }

  /// A GGA of `fix` when one is due; with no fix yet, the next look is a second later.
  private mutating func position(_ link: inout Link, at now: DriverInstant, fix: Fix?)
    -> [Action]
  {
    guard let interval = configuration.positionInterval, let due = link.nextPosition,
      now >= due
    else { return [] }
    var sentence: [UInt8] = []
    if let fix { NMEAEncoder.appendGGA(fix, to: &sentence) }
    guard !sentence.isEmpty else {
      link.nextPosition = now + .seconds(1)
      return []
    }
    link.nextPosition = now + interval
    statistics.positionsSent += 1
    return [.send(sentence)]
  }

  private mutating func connect(at now: DriverInstant) -> [Action] {
    framer.reset()
    state = .linked(
      Link(
        lastHeard: now,
        decoder: NTRIPResponseDecoder(
          mountpoint: configuration.caster.mountpoint)))
    return [.report(.connecting(configuration.caster)), .connect]
  }

  /// Ends the link after `failure`: waits before the next attempt, or stops for good.
  private mutating func fail(
    _ failure: NTRIPFailure, at now: DriverInstant, alreadyClosed: Bool = false
  )
    -> [Action]
  {
    guard case .linked(let link) = state else { return [] }
    let after = end(link, at: now)
    statistics.failures += 1
    framer.reset()
    var actions: [Action] = alreadyClosed ? [] : [.disconnect]
    if failure.isPermanent {
      state = .stopped(failure)
      actions.append(.report(.ended(failure, after: after, retryIn: nil)))
    } else {
      failures += 1
      let delay = configuration.backoff.delay(attempt: failures)
      state = .waiting(until: now + delay)
      actions.append(.report(.ended(failure, after: after, retryIn: delay)))
    }
    return actions
  }

  /// Counts the connection's time; `nil` when it never connected.
  private mutating func end(_ link: Link, at now: DriverInstant) -> Duration? {
    guard let connected = link.connected else { return nil }
    let duration = now - connected
    statistics.connectedTime += duration
    statistics.longestConnection = max(statistics.longestConnection, duration)
    return duration
  }
}
