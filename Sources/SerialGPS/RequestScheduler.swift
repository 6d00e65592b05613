import NMEA

/// Every active ``LocationRequest`` merged into one demand for power, as a pure state
/// machine in ``PowerPolicy``'s style: it takes events (a request made or ended, a fix, the
/// receiver powered or not, a timer) with the time, and returns the actions to run, in order
/// (power wanted or not, a fix delivered to a request, a request ended by itself, timers). It
/// performs no I/O and reads no clock. docs/requests.md gives the rules; in short:
///
/// - A request without an interval that is not passive wants power continuously.
/// - An interval request wants power from the moment a wake started then would have its fix
///   ready when the request falls due: its due time less what a wake costs, learned from this
///   receiver's own starts (time from the wake to the first fix reaching the accuracy, per
///   kind of start), plus a margin. A fix answers a due time from half a second before it
///   (``Configuration/earliest``); one earlier is passed over for the receiver's next epoch,
///   so answers stay within half a second of their due time whatever the epochs' phase.
///   When the next due time is closer than a wake costs, the receiver stays on; otherwise it
///   sleeps at once after the delivery (no linger).
/// - A fix that answers an interval request on time goes to every request it is good enough
///   for that is due within half its interval: requests of different phases merge onto one
///   wake.
/// - A passive request receives what others cause and never wants power.
/// - Ephemeris: a wake is extended until the receiver has tracked for
///   ``Configuration/ephemerisCollection`` when the last such tracking would be older than
///   ``refreshAge`` by the next wake, or at once after a start that took far longer than
///   the learned hot start (the ephemeris had expired: the start was warm). A receiver whose
///   history is unknown and whose first start is hot has a usable ephemeris of unknown age:
///   it is taken as collected at that start (so refreshed a refresh age later); a warm start
///   that shows it older teaches no validity, only that one serves at least until the last
///   hot start, and collections then come before that.
struct RequestScheduler {
  typealias RequestID = UInt64
  typealias TimerID = UInt64

  struct Configuration: Equatable {
    /// The longest time between two ephemeris collections.
    var ephemerisRefresh: Duration = .seconds(2 * 3600)
    /// Continuous tracking a receiver needs to collect the ephemeris (about 30 s: one frame
    /// of the navigation message, 30 s at 50 bit/s).
    var ephemerisCollection: Duration = .seconds(30)
    /// How long a collected ephemeris serves a hot start (about 4 hours).
    var ephemerisValidity: Duration = .seconds(4 * 3600)
    /// How long before its due time a fix answers a request (a quarter of a shorter
    /// interval). Half a second: of a 1 Hz receiver's epochs, at whatever phase they fall
    /// against the due time, one is then within half a second of it, so a fix too early is
    /// passed over for the next epoch and the answer is never more than half a second off.
    var earliest: Duration = .milliseconds(500)
    /// Added to a learned wake cost: the fix is aimed this long before the due time, inside
    /// ``earliest``, so that a start a little faster or slower than the one learned still
    /// answers on time (a faster one by more waits an epoch, up to half a second late).
    var wakeMargin: Duration = .milliseconds(250)
    /// The shortest sleep worth a power cycle: a receiver that is on stays on when it would
    /// otherwise be woken again this soon (a wake that came early, its start faster than the
    /// ones learned, waits for its fix rather than sleeping a second and waking again).
    var minimumSleep: Duration = .seconds(5)
    /// What a start is taken to cost before any was seen reach the accuracy. The hot one
    /// also bounds a hot start's first fix until one was seen: data sheets give 1–2 s hot and
    /// 23–32 s warm or cold (`ReceiverFigures`), so 10 s tells them apart.
    var assumedHotStart: Duration = .seconds(10)
    var assumedWarmStart: Duration = .seconds(40)
  }

  /// The kinds of start the scheduler tells apart: with a valid ephemeris (hot), without
  /// (warm; a cold start looks the same to it, only longer).
  enum StartKind: Hashable, CaseIterable {
    case hot, warm
  }

  /// One fix seen on a wake: how long after the wake, and its horizontal error (`nil` when
  /// the receiver gave none).
  struct Sample: Equatable {
    var elapsed: Duration
    var error: Double?
  }

  /// What the receiver's starts of one kind were seen to cost: the fixes of the latest wake,
  /// completed by those of earlier ones that reached further.
  struct Timings: Equatable {
    var samples: [Sample] = []

    /// From the wake to the first fix reaching `accuracy` (any fix for `nil`; a fix without
    /// an estimate counts only from a receiver that gave none on these wakes, as a delivery
    /// does); `nil` when no wake seen reached it.
    func time(toReach accuracy: Double?) -> Duration? {
      let givesEstimates = samples.contains { $0.error != nil }
      return samples.first { sample in
        guard let accuracy else { return true }
        guard let error = sample.error else { return !givesEstimates }
        return error <= accuracy
      }?.elapsed
    }

    /// The first fix's time.
    var firstFix: Duration? { samples.first?.elapsed }

    /// `newer`'s samples, then the older ones past its end that reached a smaller error.
    mutating func learn(_ newer: [Sample]) {
      guard let last = newer.last else { return }
      let reached = newer.compactMap(\.error).min() ?? .infinity
      samples =
        newer
        + samples.filter { $0.elapsed > last.elapsed && ($0.error ?? .infinity) < reached }
    }
  }

  enum Event: Equatable {
    /// A request made now; `cached`: the latest fix the receiver has (what a request with a
    /// `maxAge` may be answered with at once).
    case add(RequestID, LocationRequest, cached: FixUpdate?)
    /// The request's owner ended it (a request that ended by itself is already gone).
    case remove(RequestID)
    case fix(FixUpdate)
    /// The receiver came on (a power-on completed) or went off (powered off, or lost).
    case receiverPowered(Bool)
    case timerFired(TimerID)
  }

  enum Action: Equatable {
    /// Power wanted now by the requests.
    case powerOn
    /// Power no longer wanted. `linger`: the demand ended because a continuous request left,
    /// which keeps the usual linger; after a scheduled wake or a one-shot, none.
    case powerOff(linger: Bool)
    case deliver(RequestID, FixUpdate)
    /// The request ended by itself (its updates or its duration are over, or it was refused);
    /// `best`: the best fix it saw that was not good enough, when it ends unserved.
    case finish(RequestID, best: FixUpdate?)
    case armTimer(TimerID, deadline: DriverInstant)
    case cancelTimer(TimerID)
  }

  private struct Active {
    var request: LocationRequest
    /// When its next fix is due (interval requests).
    var due: DriverInstant
    var delivered = 0
    var lastPosition: Position?
    var best: FixUpdate?
    var endTimer: TimerID?
  }

  /// The receiver's time powered, as the scheduler sees it.
  private struct Session {
    /// When the wake began (the scheduler asked for power, or the receiver came on).
    var start: DriverInstant
    var kind: StartKind
    /// Whether it began with the receiver off, so that its fixes measure a start.
    var measures: Bool
    var samples: [Sample] = []
    var firstFix: DriverInstant?
  }

  let configuration: Configuration
  private var requests: [RequestID: Active] = [:]
  private(set) var powerWanted = false
  private(set) var receiverPowered = false
  private var wakeAsked: DriverInstant?
  private var session: Session?
  private var wakeTimer: (id: TimerID, deadline: DriverInstant)?
  private var endTimers: [TimerID: RequestID] = [:]
  private var nextTimer: TimerID = 0
  /// The end of the last tracking long enough to collect the ephemeris, or the first hot
  /// start of a receiver whose history is unknown (`collectionAssumed`).
  private(set) var lastCollection: DriverInstant?
  /// `lastCollection` is a hot start's, not a collection seen: the ephemeris was usable then,
  /// of an age nobody knows, so its expiry says nothing of how long one serves.
  private(set) var collectionAssumed = false
  /// A start took far longer than the learned hot start: collect on the next wake.
  private(set) var collectionOverdue = false
  /// How long an ephemeris was seen to serve: the age of the last collection at a start
  /// that turned out warm (shorter than the configured validity, or `nil`).
  private(set) var learnedValidity: Duration?
  /// How long an ephemeris serves at least, when only that is known: an ephemeris of unknown
  /// age (`collectionAssumed`) that was usable at a hot start and had expired at a later warm
  /// one served longer than from the start it was assumed collected at to that hot start.
  private(set) var validityAtLeast: Duration?
  /// When the latest start classified hot began.
  private var lastHotStart: DriverInstant?
  private(set) var learned: [StartKind: Timings] = [:]
  /// The kinds of the starts measured, in order (for tests and the benchmark).
  private(set) var starts: [StartKind] = []
  /// Requests refused because they cannot be met (a non-positive interval or count).
  private(set) var refusedRequests = 0
  /// Whether the receiver's last fix came with an estimate of its error, and whether the one
  /// before it did (what the last fix was judged by): a receiver that gives estimates is
  /// expected to give one with every fix (``LocationRequest/accepts(_:estimateExpected:)``).
  private var lastFixHadEstimate = false
  private var estimateExpectedForLastFix = false
  private(set) var unexpectedEvents = 0
  var assertsOnUnexpectedEvents = true

  init(configuration: Configuration) {
    self.configuration = configuration
  }

  /// Whether any request is active.
  var isEmpty: Bool { requests.isEmpty }

  /// When the requests next want power, while they do not now: the wake timer's deadline.
  var nextWake: DriverInstant? { wakeTimer?.deadline }

  mutating func handle(_ event: Event, now: DriverInstant) -> [Action] {
    var actions: [Action] = []
    var linger = false
    switch event {
    case .add(let id, let request, let cached):
      guard requests[id] == nil else { return unexpected(event) }
      guard Self.isValid(request) else {
        refusedRequests += 1
        return [.finish(id, best: nil)]
      }
      var active = Active(request: request, due: now)
      if let duration = request.duration {
        let timer = makeTimer()
        active.endTimer = timer
        endTimers[timer] = id
        actions.append(.armTimer(timer, deadline: now + duration))
      }
      requests[id] = active
      // The cached fix is the last one or older: an estimate was expected of it if the
      // receiver gave one with either of its last two fixes.
      let expected = lastFixHadEstimate || estimateExpectedForLastFix
      if let cached, let maxAge = request.maxAge, cached.age(at: now) <= maxAge,
        request.accepts(cached.fix, estimateExpected: expected)
      {
        let replay = FixUpdate(
          fix: cached.fix, age: cached.age(at: now), isReplay: true, arrival: cached.arrival)
        actions += offer(replay, to: id, reach: nil, estimateExpected: expected)
      }

    case .remove(let id):
      // Gone already when it ended by itself: expected.
      guard let active = requests.removeValue(forKey: id) else { return [] }
      if let timer = active.endTimer {
        endTimers[timer] = nil
        actions.append(.cancelTimer(timer))
      }
      linger = active.request.interval == nil && !active.request.passive

    case .fix(let update):
      guard !update.isLate, update.fix.position != nil, update.fix.mode != .noFix else {
        return []
      }
      if !receiverPowered {
        // A fix may come in before the power-on is reported complete.
        receiverPowered = true
        beginSession(now: now)
      }
      observe(update)
      let expected = lastFixHadEstimate
      estimateExpectedForLastFix = expected
      lastFixHadEstimate = update.fix.horizontalAccuracy != nil
      // A fix that serves an interval request on time is a scheduled wake's: it also goes
      // to the requests due within half their interval, which merges their phases onto
      // this wake. Otherwise only to those it is on time for.
      let merging = requests.values.contains { active in
        guard let interval = active.request.interval, !active.request.passive else {
          return false
        }
        return active.due <= update.arrival + onTime(interval)
          && active.request.accepts(update.fix, estimateExpected: expected)
      }
      for id in requests.keys.sorted() {
        let reach = requests[id]?.request.interval.map { merging ? $0 / 2 : onTime($0) }
        actions += offer(update, to: id, reach: reach ?? .zero, estimateExpected: expected)
      }

    case .receiverPowered(let powered):
      guard powered != receiverPowered else { return [] }  // told again: nothing new
      receiverPowered = powered
      if powered {
        beginSession(now: now)
      } else {
        endSession()
      }

    case .timerFired(let timer):
      if let wakeTimer, wakeTimer.id == timer {
        self.wakeTimer = nil
      } else if let id = endTimers.removeValue(forKey: timer) {
        if let active = requests.removeValue(forKey: id) {
          actions.append(.finish(id, best: active.best))
        }
      } else {
        return []  // a timer cancelled after it fired: expected
      }
    }
    return actions + replan(now: now, linger: linger)
  }

  /// How long before its due time a fix counts as on time: ``Configuration/earliest``, or a
  /// quarter of a shorter interval (a 1-s request on a 1-Hz receiver takes every fix, not two
  /// at once).
  func onTime(_ interval: Duration) -> Duration {
    min(configuration.earliest, interval / 4)
  }

  static func isValid(_ request: LocationRequest) -> Bool { request.refusal == nil }

  /// What a wake started now would cost before a fix reaching `accuracy` is ready.
  func wakeCost(accuracy: Double?, now: DriverInstant) -> Duration {
    let kind = expectedStart(now: now)
    let assumed = kind == .hot ? configuration.assumedHotStart : configuration.assumedWarmStart
    return (learned[kind]?.time(toReach: accuracy) ?? assumed) + configuration.wakeMargin
  }

  /// The start a wake now would make.
  func expectedStart(now: DriverInstant) -> StartKind {
    if collectionOverdue { return .warm }
    if let lastCollection, now - lastCollection > validity { return .warm }
    return .hot
  }

  /// How long an ephemeris serves: as configured, or as short as a warm start showed.
  var validity: Duration {
    min(learnedValidity ?? configuration.ephemerisValidity, configuration.ephemerisValidity)
  }

  private mutating func makeTimer() -> TimerID {
    nextTimer += 1
    return nextTimer
  }

  private mutating func beginSession(now: DriverInstant) {
    let measures = wakeAsked != nil
    session = Session(
      start: wakeAsked ?? now, kind: expectedStart(now: wakeAsked ?? now), measures: measures)
    wakeAsked = nil
  }

  private mutating func endSession() {
    session = nil
  }

  /// A fix seen while powered: what it says of the start, and of the ephemeris.
  private mutating func observe(_ update: FixUpdate) {
    guard var current = session else { return }
    defer { session = current }
    let arrival = update.arrival
    if current.firstFix == nil {
      current.firstFix = arrival
      if current.measures {
        starts.append(classify(current, firstFix: arrival - current.start))
        current.kind = starts[starts.count - 1]
      }
    }
    if current.measures, current.samples.count < 256 {
      current.samples.append(
        Sample(elapsed: arrival - current.start, error: update.fix.horizontalAccuracy))
      // Learned as it is seen, so that this wake's own decisions use it.
      learned[current.kind, default: Timings()].learn(current.samples)
    }
    if let first = current.firstFix, arrival - first >= configuration.ephemerisCollection {
      lastCollection = arrival
      collectionAssumed = false
      collectionOverdue = false
    }
  }

  /// A start expected hot that took far longer than the hot starts seen (before any was
  /// seen: than `assumedHotStart`) was warm: the ephemeris had expired, or the receiver had
  /// none, so this wake collects a new one. A hot start of a receiver whose history is
  /// unknown shows its ephemeris usable: it counts as collected now (docs/requests.md).
  private mutating func classify(_ session: Session, firstFix: Duration) -> StartKind {
    guard session.kind == .hot else { return session.kind }
    let bound =
      learned[.hot]?.firstFix.map { $0 * 3 + .seconds(5) } ?? configuration.assumedHotStart
    if firstFix > bound {
      collectionOverdue = true
      if let lastCollection, !collectionAssumed {
        learnedValidity = min(validity, session.start - lastCollection)
      } else if let lastCollection, let lastHotStart, lastHotStart > lastCollection {
        validityAtLeast = max(validityAtLeast ?? .zero, lastHotStart - lastCollection)
      }
      return .warm
    }
    if lastCollection == nil {
      lastCollection = session.start
      collectionAssumed = true
    }
    lastHotStart = session.start
    return .hot
  }

  /// Hands `update` to request `id` if it is good enough and due; ends the request when that
  /// was its last update.
  /// `reach`: how long before its due time the fix may come (`nil`: whenever it comes, for
  /// the cached fix a new request is answered with).
  /// `estimateExpected`: the receiver gave an estimate with the fix before this one.
  private mutating func offer(
    _ update: FixUpdate, to id: RequestID, reach: Duration?, estimateExpected: Bool
  ) -> [Action] {
    guard var active = requests[id] else { return [] }
    let request = active.request
    guard request.accepts(update.fix, estimateExpected: estimateExpected) else {
      if Self.isBetter(update, than: active.best) { active.best = update }
      requests[id] = active
      return []
    }
    if let reach, request.interval != nil, active.due > update.arrival + reach {
      return []  // not due yet
    }
    var actions: [Action] = []
    // Early (another request's wake, or the margin): the phase is kept. Late: the next is
    // an interval after this one.
    if let interval = request.interval { active.due = max(active.due, update.arrival) + interval }
    if let minDistance = request.minDistance, minDistance > 0, let last = active.lastPosition,
      let position = update.fix.position, last.distance(to: position) < minDistance
    {
      requests[id] = active  // not far enough: this one is skipped
      return []
    }
    active.delivered += 1
    active.lastPosition = update.fix.position
    active.best = nil
    actions.append(.deliver(id, update))
    if let most = request.maxUpdates, active.delivered >= most {
      requests[id] = nil
      if let timer = active.endTimer {
        endTimers[timer] = nil
        actions.append(.cancelTimer(timer))
      }
      actions.append(.finish(id, best: nil))
    } else {
      requests[id] = active
    }
    return actions
  }

  private static func isBetter(_ update: FixUpdate, than best: FixUpdate?) -> Bool {
    guard let best else { return true }
    return (update.fix.horizontalAccuracy ?? .infinity) < (best.fix.horizontalAccuracy ?? .infinity)
  }

  /// Whether the requests want power at `now`, and when they next will if not.
  private func demand(now: DriverInstant) -> (now: Bool, next: DriverInstant?) {
    var next: DriverInstant?
    var anyActive = false
    for active in requests.values where !active.request.passive {
      anyActive = true
      guard active.request.interval != nil else { return (true, nil) }
      let wake = active.due - wakeCost(accuracy: active.request.accuracy, now: now)
      if wake <= now || (receiverPowered && wake - configuration.minimumSleep <= now) {
        return (true, nil)
      }
      next = min(next ?? wake, wake)
    }
    // Collected on the last wake before the refresh age passes: by the next wake it would
    // have (or now, when no wake is planned).
    if anyActive, receiverPowered, session != nil, needsCollection(by: max(now, next ?? now)) {
      return (true, next)
    }
    return (false, next)
  }

  /// Whether the ephemeris must be collected before `moment`.
  private func needsCollection(by moment: DriverInstant) -> Bool {
    if collectionOverdue { return true }
    guard let lastCollection else { return true }
    return moment - lastCollection >= refreshAge
  }

  /// The longest time between two collections: the configured refresh age; before three
  /// quarters of a validity seen (the age at a warm start: the ephemeris served less); before
  /// the least an ephemeris was seen to serve (it serves more), unless that is shorter than
  /// ``minimumValidityBound``.
  var refreshAge: Duration {
    var refresh = configuration.ephemerisRefresh
    if let learnedValidity { refresh = min(refresh, learnedValidity * 3 / 4) }
    if let validityAtLeast, validityAtLeast >= minimumValidityBound {
      refresh = min(refresh, validityAtLeast)
    }
    return refresh
  }

  /// A lower bound on the validity shorter than this is not used: it says more of the unknown
  /// age of the ephemeris found at the first start (one nearly expired then) than of how long
  /// one serves, and refreshing that often would track for a collection most of the time.
  var minimumValidityBound: Duration { configuration.ephemerisCollection * 4 }

  private mutating func replan(now: DriverInstant, linger: Bool) -> [Action] {
    var actions: [Action] = []
    let wanted = demand(now: now)
    if wanted.now != powerWanted {
      powerWanted = wanted.now
      if wanted.now {
        if !receiverPowered { wakeAsked = now }
        actions.append(.powerOn)
      } else {
        wakeAsked = nil
        actions.append(.powerOff(linger: linger))
      }
    }
    let deadline = wanted.now ? nil : wanted.next
    if wakeTimer?.deadline != deadline {
      if let wakeTimer { actions.append(.cancelTimer(wakeTimer.id)) }
      wakeTimer = nil
      if let deadline {
        let timer = makeTimer()
        wakeTimer = (timer, deadline)
        actions.append(.armTimer(timer, deadline: deadline))
      }
    }
    return actions
  }

  private mutating func unexpected(_ what: some Any) -> [Action] {
    unexpectedEvents += 1
    if assertsOnUnexpectedEvents {
      assertionFailure("RequestScheduler: unexpected \(what)")
    }
    return []
  }
}
