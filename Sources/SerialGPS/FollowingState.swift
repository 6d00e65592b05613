import Discovery

/// What ``DiscoveringConnector`` knows, as a pure state machine: which device the tracker
/// chose, whether the devices present are listed yet, and the open under way or the
/// connection open on it.
///
/// It takes hotplug events and the steps of an open in the order they happened and returns
/// the actions to run, in order; it performs no I/O. The connector keeps it under its lock and
/// runs the actions outside it. Generic over the connection and port it hands back in actions,
/// so that tests drive it with stand-ins and compare exact action lists.
struct FollowingState<Connection: AnyObject, Port: AnyObject> {
  /// Whether the devices present when watching started are known.
  enum Listing {
    /// Not yet: an open waits (``Action/releaseWaiters`` ends the wait).
    case pending
    /// Every device present was reported.
    case complete
    /// Discovery stopped (no udev in a container, for example): every open fails with it.
    case ended(DiscoveryError)
  }

  /// The device the tracker chose.
  struct Attachment {
    let device: SerialDevice
    /// Whether the driver may write to it: named by the user or known to be a receiver (a
    /// possible receiver heard speaking NMEA counts too, see ``mayWrite``).
    let mayWrite: Bool
    /// Which attachment this is (they are counted), so that an open knows whether the device
    /// attached now is the one it chose.
    let number: Int
  }

  /// Why the device was last lost or could not be opened, and the attachment then. While
  /// nothing has been attached since, a retry fails the same way, so subscribers are told once
  /// (the receiver repeats no status whose reason is unchanged).
  struct Failure {
    let attachment: Int
    let error: any Error
  }

  /// The connection side.
  enum Phase {
    /// Nothing is being opened or open.
    case idle(lastFailure: Failure?)
    /// An open was asked for and waits for the devices present to be listed: a device that
    /// attaches meanwhile is the open's to take, not news for the receiver.
    case waitingForListing(lastFailure: Failure?)
    /// An open of `attachment` is under way; `listening` is the port of a possible receiver
    /// being listened to (an unplug interrupts it). `attachedMeanwhile`: another device was
    /// attached meanwhile, so if this open fails the receiver is told at once.
    case opening(
      attachment: Int, listening: (sysPath: String, port: Port)?, attachedMeanwhile: Bool)
    /// `connection` is open on `device`; `lost` is why its reads failed, if they did.
    case open(Connection, device: SerialDevice, attachment: Int, lost: (any Error)?)
  }

  enum Action {
    /// Tell the receiver a device appeared: it tries it now rather than after its backoff.
    case announce
    /// udev says the connection's device is gone (or no longer matches): end its reads.
    case end(Connection, why: String)
    /// Stop listening to the port of a possible receiver that is gone.
    case interrupt(Port)
    /// The devices present are listed (or discovery ended): opens waiting for that go on.
    case releaseWaiters
    /// Another process owns the device of `attachment` (at `path`): watch, without opening
    /// it, for the owner to let it go, then report ``ownerLeft(attachment:)``.
    case awaitOwner(path: String, attachment: Int)
  }

  /// What an open is to do.
  enum Open {
    /// Open `device` (only listening to it unless `mayWrite`).
    case open(SerialDevice, mayWrite: Bool, attachment: Int)
    /// Fail at once with `error`: discovery ended, nothing is attached, or nothing was
    /// attached since the last failure (the same news again).
    case fail(any Error)
  }

  private(set) var tracker: ReceiverTracker
  private(set) var listing = Listing.pending
  private(set) var phase = Phase.idle(lastFailure: nil)
  /// The device in use, if one was found.
  private(set) var attached: Attachment?
  /// Attachments so far.
  private var attachments = 0
  /// Ports (sysfs paths) on which valid NMEA was heard since they were plugged in: possible
  /// receivers that proved themselves.
  private var heard: Set<String> = []
  /// The attached device is another process's (its open was refused so): opens fail at once
  /// with that refusal, not touching the device, until the owner lets it go.
  private var ownedElsewhere: (attachment: Int, refusal: any Error)?
  /// Hotplug events handled so far (for tests that must know one was seen).
  private(set) var eventsHandled = 0
  /// Steps that came in a phase that does not expect them (a bug in the connector): ignored,
  /// and counted here. A debug build stops at the first with an assertion unless
  /// ``assertsOnUnexpectedEvents`` is off.
  private(set) var unexpectedEvents = 0
  /// Off only in tests that feed unexpected steps on purpose, to check they are counted by
  /// the same code a release build runs.
  var assertsOnUnexpectedEvents = true

  init(selector: ReceiverSelector) {
    tracker = ReceiverTracker(selector: selector)
  }

  var selector: ReceiverSelector { tracker.selector }

  /// Whether an open is under way (or waits for the listing).
  var isOpening: Bool {
    switch phase {
    case .waitingForListing, .opening: return true
    case .idle, .open: return false
    }
  }

  var isListed: Bool {
    if case .pending = listing { return false }
    return true
  }

  /// Whether the attached device may be written to: the tracker says so (named, or known to
  /// be a receiver), or valid NMEA was heard on it since it was plugged in.
  var mayWrite: Bool {
    guard let attached else { return false }
    return attached.mayWrite || heard.contains(attached.device.sysPath)
  }

  // MARK: Hotplug

  /// Takes one hotplug event.
  mutating func handle(_ event: HotplugEvent) -> [Action] {
    eventsHandled += 1
    var actions: [Action] = []
    var releases = false
    switch event {
    case .enumerationComplete:
      if case .pending = listing { listing = .complete }
      releases = true
    case .removed(let device):
      heard.remove(device.sysPath)
    case .added, .changed:
      break
    }
    let (didAttach, detached) = apply(tracker.handle(event))
    if let detached {
      let why: String
      if case .removed = event {
        why = unpluggedWaiting
      } else {
        why = "no longer matches \(selector) (a udev rule changed it)"
      }
      switch phase {
      case .open(let connection, let device, _, _) where device.sysPath == detached.sysPath:
        actions.append(.end(connection, why: why))
      case .opening(_, let listening?, _) where listening.sysPath == detached.sysPath:
        actions.append(.interrupt(listening.port))
      default:
        break  // not in use
      }
    }
    if releases { actions.append(.releaseWaiters) }
    // An open under way may have chosen its device before this one came: it tells the
    // receiver if it fails. A receiver with a connection open ignores the news; it is told
    // again when that connection closes (`closed`).
    if didAttach {
      switch phase {
      case .waitingForListing:
        break  // the open takes what is attached when the listing is complete
      case .opening(let attachment, let listening, _):
        phase = .opening(attachment: attachment, listening: listening, attachedMeanwhile: true)
      case .idle, .open:
        actions.append(.announce)
      }
    }
    return actions
  }

  /// Discovery stopped for good: opens fail with `failure` from now on, and a waiting
  /// receiver retries now and reports why.
  mutating func discoveryEnded(_ failure: DiscoveryError) -> [Action] {
    listing = .ended(failure)
    return [.releaseWaiters, .announce]
  }

  // MARK: Opening

  /// An open was asked for: it waits for the listing before choosing.
  mutating func openRequested() {
    switch phase {
    case .idle(let lastFailure): phase = .waitingForListing(lastFailure: lastFailure)
    case .open(_, _, let attachment, let lost):
      // Reopened before the old connection closed: it is forgotten here.
      phase = .waitingForListing(
        lastFailure: lost.map { Failure(attachment: attachment, error: $0) })
    case .waitingForListing, .opening:
      unexpected("an open while another is under way")
    }
  }

  /// The listing is complete (or discovery ended): what the open is to do.
  mutating func beginOpen() -> Open {
    guard case .waitingForListing(let lastFailure) = phase else {
      unexpected("an open that was not asked for")
      return .fail(DiscoveringConnector.NoReceiver(selector: selector))
    }
    let error: any Error
    if case .ended(let failure) = listing {
      error = failure
    } else if let attached, let owned = ownedElsewhere, owned.attachment == attached.number {
      // Waiting for the owner: no fight over the device, and the same news again.
      error = owned.refusal
    } else if let attached {
      phase = .opening(attachment: attached.number, listening: nil, attachedMeanwhile: false)
      return .open(attached.device, mayWrite: mayWrite, attachment: attached.number)
    } else {
      // Nothing attached since the last loss: the same news (a retry, or a wake-up for a
      // device an open already tried).
      let same = lastFailure.flatMap { $0.attachment == attachments ? $0.error : nil }
      error = same ?? DiscoveringConnector.NoReceiver(selector: selector)
    }
    phase = .idle(lastFailure: Failure(attachment: attachments, error: error))
    return .fail(error)
  }

  /// The port of the possible receiver at `sysPath` is open and about to be listened to.
  /// Returns false when that device is gone already (the caller closes the port).
  mutating func listening(to sysPath: String, on port: Port) -> Bool {
    guard case .opening(let attachment, nil, let attachedMeanwhile) = phase else {
      unexpected("listening outside an open")
      return false
    }
    guard attached?.device.sysPath == sysPath else { return false }
    phase = .opening(
      attachment: attachment, listening: (sysPath, port), attachedMeanwhile: attachedMeanwhile)
    return true
  }

  /// Listening ended; `heardNMEA` at `sysPath`: the possible receiver proved itself and may
  /// be written to from now on.
  mutating func listeningEnded(at sysPath: String, heardNMEA: Bool) {
    if heardNMEA { heard.insert(sysPath) }
    guard case .opening(let attachment, _, let attachedMeanwhile) = phase else {
      unexpected("listening ended outside an open")
      return
    }
    phase = .opening(attachment: attachment, listening: nil, attachedMeanwhile: attachedMeanwhile)
  }

  /// The device at `sysPath` sent no NMEA: the tracker takes the next candidate, if any
  /// (announced once the open under way has failed).
  mutating func reject(_ device: SerialDevice) {
    let didAttach = apply(tracker.reject(device)).attached
    if didAttach, case .opening(let attachment, let listening, _) = phase {
      phase = .opening(attachment: attachment, listening: listening, attachedMeanwhile: true)
    }
  }

  /// `connection` is open on `device`. Returns false when the device was unplugged (or
  /// replaced) while it was being opened: the caller closes it and fails the open.
  mutating func opened(_ connection: Connection, on device: SerialDevice, attachment: Int)
    -> Bool
  {
    guard case .opening = phase else {
      unexpected("a connection opened outside an open")
      return false
    }
    guard attachments == attachment, attached != nil else { return false }
    phase = .open(connection, device: device, attachment: attachment, lost: nil)
    return true
  }

  /// The open of `attachment` failed with `error`. Announces a device attached meanwhile (the
  /// next candidate after a rejection, a replug), to be tried at once rather than after the
  /// backoff.
  mutating func openFailed(_ error: any Error, attachment: Int) -> [Action] {
    let attachedMeanwhile: Bool
    switch phase {
    case .opening(_, _, let meanwhile): attachedMeanwhile = meanwhile
    case .waitingForListing, .idle, .open:
      unexpected("an open failed that was not under way")
      attachedMeanwhile = false
    }
    phase = .idle(lastFailure: Failure(attachment: attachment, error: error))
    return attachedMeanwhile && attached != nil ? [.announce] : []
  }

  /// The open of `attachment` was refused because another process owns the device: like
  /// ``openFailed(_:attachment:)``, and the device is left alone (opens fail at once with
  /// `refusal`) until ``ownerLeft(attachment:)``.
  mutating func ownedElsewhere(_ refusal: any Error, attachment: Int) -> [Action] {
    var actions = openFailed(refusal, attachment: attachment)
    guard let attached, attached.number == attachment else { return actions }
    let watching = ownedElsewhere?.attachment == attachment
    ownedElsewhere = (attachment, refusal)
    if !watching { actions.append(.awaitOwner(path: attached.device.path, attachment: attachment)) }
    return actions
  }

  /// Whether the device of `attachment` is still attached and waited for.
  func awaitsOwner(attachment: Int) -> Bool {
    ownedElsewhere?.attachment == attachment && attached?.number == attachment
  }

  /// The owner of `attachment`'s device let it go: the receiver is told, to take it now.
  mutating func ownerLeft(attachment: Int) -> [Action] {
    guard awaitsOwner(attachment: attachment) else { return [] }
    ownedElsewhere = nil
    return [.announce]
  }

  // MARK: The connection

  /// The reads of `connection` failed with `error` (unplugged, hung up).
  mutating func lost(_ connection: Connection, attachment: Int, _ error: any Error) {
    switch phase {
    case .open(let open, let device, let number, _) where open === connection:
      phase = .open(open, device: device, attachment: number, lost: error)
    case .idle:
      phase = .idle(lastFailure: Failure(attachment: attachment, error: error))
    default:
      break  // an old connection, replaced by an open since
    }
  }

  /// `connection` (opened on `attachment`) closed. If another device was attached while it
  /// was open, the receiver (which ignored that appearance while still connected) is told
  /// now: it is about to wait for its backoff, and should try the new device at once.
  mutating func closed(_ connection: Connection, attachment: Int) -> [Action] {
    if case .open(let open, _, let number, let lost) = phase, open === connection {
      phase = .idle(lastFailure: lost.map { Failure(attachment: number, error: $0) })
    }
    guard attached != nil, attachments != attachment else { return [] }
    return [.announce]
  }

  // MARK: Private

  /// Runs the tracker's actions on the attachment.
  private mutating func apply(_ actions: [ReceiverTracker.Action]) -> (
    attached: Bool, detached: SerialDevice?
  ) {
    var didAttach = false
    var detached: SerialDevice?
    for action in actions {
      switch action {
      case .attach(let device, let mayWrite):
        attachments += 1
        attached = Attachment(device: device, mayWrite: mayWrite, number: attachments)
        didAttach = true
      case .update(let device, let mayWrite):
        attached = Attachment(device: device, mayWrite: mayWrite, number: attachments)
      case .detach(let device):
        attached = nil
        detached = device
        ownedElsewhere = nil
      }
    }
    return (didAttach, detached)
  }

  /// What a subscriber is told when the device was unplugged.
  var unpluggedWaiting: String {
    if case .first = selector { return "was unplugged; waiting for a receiver to be plugged in" }
    return "was unplugged; waiting for it to be plugged in again"
  }

  private mutating func unexpected(_ what: String) {
    unexpectedEvents += 1
    if assertsOnUnexpectedEvents {
      assertionFailure("FollowingState: unexpected \(what) in \(phase)")
    }
  }
}

extension FollowingState.Action: Equatable {
  static func == (lhs: Self, rhs: Self) -> Bool {
    switch (lhs, rhs) {
    case (.announce, .announce), (.releaseWaiters, .releaseWaiters): return true
    case (.end(let a, let whyA), .end(let b, let whyB)): return a === b && whyA == whyB
    case (.interrupt(let a), .interrupt(let b)): return a === b
    case (.awaitOwner(let pathA, let a), .awaitOwner(let pathB, let b)):
      return pathA == pathB && a == b
    default: return false
    }
  }
}
