/// Counters of the fix builder.
public struct FixBuilderStatistics: Sendable, Hashable {
  /// Epochs emitted.
  public var epochs = 0
  /// Epochs closed by the learned last sentence of the cycle, without waiting for the next.
  public var epochsClosedAtCycleEnd = 0
  /// Timed sentences that arrived for an epoch already emitted (their data is not merged).
  public var lateSentences = 0
  /// Times the learned end of cycle proved wrong and was forgotten.
  public var cycleEndsForgotten = 0
  /// Epochs not emitted because they held only time, date or error statistics (ZDA, GST,
  /// GBS, GRS, PUBX,04): a ZDA running ahead of the fixes, or a cycle whose other sentences
  /// were lost. Their date is carried.
  public var timeOnlyEpochs = 0
  /// Epochs whose time came from a ZDA (or GST …) running ahead of the fixes and was replaced
  /// by the earlier time of the position sentences that followed (the Magellan AC12 stamps its
  /// ZDA two seconds ahead).
  public var retimedEpochs = 0
  /// Fixes without a date at the start of a stream, held until the next epoch and given its
  /// date: the tail of a cycle whose RMC was lost (a port opened, or a recording begun, in the
  /// middle of a cycle).
  public var epochsDatedByTheNext = 0

  public init() {}
}

/// Which sentence ends a receiver's measurement cycle, as a ``FixBuilder`` learned it.
public struct CycleKnowledge: Sendable, Hashable {
  /// The sentence known to end the cycle.
  let lastSentence: UInt32?
  /// The sentence seen last in one cycle so far, not yet confirmed by a second one.
  let candidate: UInt32?

  /// Whether the cycle end is known, not merely suspected.
  public var isLearned: Bool { lastSentence != nil }
}

/// Groups a receiver's sentences into epochs by UTC time and emits one ``Epoch`` per
/// measurement cycle.
///
/// An epoch is complete when a sentence with a different time arrives, or, once the builder
/// has learned which sentence ends the receiver's cycle (the same one, seen once per cycle,
/// twice in a row), as soon as that sentence arrives: no waiting for the next second.
/// Sentences without a time (GSA, GSV, VTG) belong to the epoch in progress. The date comes
/// from RMC or ZDA and is carried to later epochs, across midnight as well; nothing shifts a
/// date by GPS week rollovers on its own.
///
/// Steady-state operation allocates nothing: the satellite buffer is reused from epoch to
/// epoch unless the caller keeps an emitted ``SatelliteView``.
public struct FixBuilder {
  public private(set) var statistics = FixBuilderStatistics()

  // The epoch in progress.
  var fix = Fix()
  var epochTime: UTCTime?
  var hasData = false
  var holdsFixData = false  // anything besides time, date and error statistics
  var timedByFixSentence = false  // the time came from something else than ZDA, GST …
  var holdsPositionSentence = false  // GGA, RMC, GLL, GNS or PUBX,00, valid or not
  var explicitDate: UTCDate?
  var modeFromGSA: FixMode?
  var statedMode: FixMode?  // the dimension GGA, GNS, PUBX,00 or PGRMZ state
  var positionSourceRank = 0
  var usedFromGSA = 0
  var sawGSA = false
  var garminAltitude: Double?  // $PGRMZ, metres: used when GGA gives none

  // Satellites of the epoch in progress.
  var satellites: [Satellite] = []
  /// The satellites the epoch's GSAs name as used.
  var used = UsedSet()
  // A quick "certainly not" answer before the linear search of `satellites`.
  var satelliteFilter = KeyFilter()
  var sawGSV = false
  var viewHDOP: Double?
  var viewVDOP: Double?
  var viewPDOP: Double?

  // Carried across epochs.
  var carriedDate: UTCDate?
  var carriedDateTime: UTCTime?
  var lastEmittedTime: UTCTime?
  // The times of the last epochs emitted (nanoseconds of the day; -1 unused), so that a late
  // sentence never makes a second fix for a time.
  var recentTimes = InlineArray<8, Int64>(repeating: -1)
  var recentIndex = 0
  var previousAltitude: Double?
  var previousAltitudeTime: Double?  // seconds of the day
  // The dimension of the last epoch with a fix and its time (nanoseconds of the day), which an
  // epoch stating none keeps while the fix lasts.
  var lastDimension: FixMode?
  var lastDimensionTime: Int64 = 0
  // A fix without a date, held at the start of the stream until the next epoch shows whether
  // the receiver sends dates (see `deliver`).
  var heldEpoch: Epoch?
  var awaitingFirstDate = true
  var datum: InlineText?  // from $PGRMM or DTM

  /// The stream offset of the sentence being added, when it came through a framer (the
  /// decoder sets it before each sentence), and that of the epoch's first sentence.
  var sentenceOffset: UInt64?
  var epochFirstByteOffset: UInt64?

  // Learning which sentence ends the cycle.
  var lastKey: UInt32 = 0
  var keyCounts = KeyCounts()
  var candidateEnd: UInt32?
  var learnedEnd: UInt32?
  /// Keys seen followed by another within an epoch, while learning (used as a set).
  var followedKeys = KeyCounts()
  var lastKeyTimed = false  // whether the epoch had its time when `lastKey` was merged
  var lastClosedByCycleEnd = false  // how the epoch emitted last was closed

  public init() {
    satellites.reserveCapacity(64)
  }

  /// Whether the builder has learned which sentence ends the receiver's cycle.
  public var hasLearnedCycleEnd: Bool { learnedEnd != nil }

  /// What the builder has learned about the receiver's cycle (which sentence ends it).
  ///
  /// A driver that reopens the same receiver hands this to the new connection's builder, so
  /// the first epoch after a power-on is emitted as soon as it is complete rather than when
  /// the next one begins. Knowledge that proves wrong (data for an epoch already emitted) is
  /// forgotten as if it had been learned here.
  public var cycleKnowledge: CycleKnowledge? {
    get {
      guard learnedEnd != nil || candidateEnd != nil else { return nil }
      return CycleKnowledge(lastSentence: learnedEnd, candidate: candidateEnd)
    }
    set {
      learnedEnd = newValue?.lastSentence
      candidateEnd = newValue?.candidate
    }
  }

  /// Adds one sentence; calls `emit` for each epoch it completes (at most two: the previous
  /// one when the time changes, and this one if the sentence ends the cycle).
  public mutating func add(_ sentence: Sentence, emit: (Epoch) throws -> Void) rethrows {
    switch sentence {
    case .gga(let gga): try add(gga, emit: emit)
    case .rmc(let rmc): try add(rmc, emit: emit)
    case .gsa(let gsa): try add(gsa, emit: emit)
    case .gsv(let gsv): try add(gsv, emit: emit)
    // The datum is the receiver's setting, not a measurement of the epoch: kept until renamed,
    // whichever epoch its sentence arrives in, and no part of the cycle.
    case .garminDatum(let garmin):
      if let name = garmin.datum { datum = InlineText(name) }
    case .dtm(let dtm):
      if let code = dtm.datum { datum = InlineText(Self.datumName(code)) }
    default:
      guard let key = Self.cycleKey(sentence) else { return }  // carries nothing for a fix
      let onlyTime = Self.carriesOnlyTime(sentence)
      let normallyTimed = Self.normallyTimed(sentence)
      guard
        try begin(
          key: key, time: sentence.time, onlyTime: onlyTime, normallyTimed: normallyTimed,
          emit: emit)
      else { return }
      merge(sentence)
      try end(key: key, onlyTime: onlyTime, normallyTimed: normallyTimed, emit: emit)
    }
  }

  /// Adds a GGA, RMC, GSA or GSV without the `Sentence` around it (the decoder parses them
  /// straight into their own types; every copy of a sentence costs).
  ///
  /// Out of line on purpose: inlined into the decoder's dispatch, the pipeline took about
  /// 230 instructions more per sentence (`scripts/bench-instructions.sh`).
  @inline(never)
  mutating func add<S: FrequentSentence>(_ sentence: borrowing S, emit: (Epoch) throws -> Void)
    rethrows
  {
    let key = sentence.cycleKey
    let timed = S.isNormallyTimed
    guard
      try begin(key: key, time: sentence.time, onlyTime: false, normallyTimed: timed, emit: emit)
    else { return }
    sentence.merge(into: &self)
    try end(key: key, onlyTime: false, normallyTimed: timed, emit: emit)
  }

  /// What happens before a sentence's data is merged: a late sentence is counted and
  /// dropped (`false`); a new time, or a position sentence seen again, closes the epoch in
  /// progress.
  ///
  /// - Parameters:
  ///   - key: the sentence's place in the cycle (``cycleKey(_:)``).
  ///   - onlyTime: it carries a time, date or error statistics, nothing of the position.
  ///   - normallyTimed: its type normally carries the time of a position.
  @inline(__always)
  mutating func begin(
    key: UInt32, time: UTCTime?, onlyTime: Bool, normallyTimed: Bool,
    emit: (Epoch) throws -> Void
  ) rethrows -> Bool {
    if let time {
      if time != epochTime, wasEmittedRecently(time) {
        // Data for an epoch already emitted: merging it would make a second fix for that
        // time. If the learned cycle end closed that epoch, the guess was wrong: learn again.
        statistics.lateSentences += 1
        if lastClosedByCycleEnd, time == lastEmittedTime {
          statistics.cycleEndsForgotten += 1
          // This sentence followed it: never learn it again (it would lose data again).
          if let learnedEnd { followedKeys.increment(learnedEnd) }
          learnedEnd = nil
          candidateEnd = nil
          lastClosedByCycleEnd = false
        }
        return false
      }
      if let epochTime, time != epochTime {
        if !timedByFixSentence, !onlyTime, Self.isShortlyBefore(time, epochTime) {
          retime(to: time)
        } else {
          try closeEpoch(endedBy: nil, emit: emit)
        }
      }
      if epochTime == nil, normallyTimed, keyCounts.count(of: key) != nil {
        // The epoch so far is an untimed cycle (no fix yet) that already has this position
        // sentence: the first timed cycle after a cold start begins here, not inside it.
        try closeEpoch(endedBy: nil, emit: emit)
      }
      if epochTime == nil { epochTime = time }
      if !onlyTime { timedByFixSentence = true }
    } else if normallyTimed, keyCounts.count(of: key) != nil {
      // The same position sentence again, without a time (no fix yet): a new cycle.
      try closeEpoch(endedBy: nil, emit: emit)
    }
    return true
  }

  /// What happens after a sentence's data is merged: its key is counted, and the epoch is
  /// closed if the sentence is the learned end of the cycle.
  @inline(__always)
  mutating func end(
    key: UInt32, onlyTime: Bool, normallyTimed: Bool, emit: (Epoch) throws -> Void
  ) rethrows {
    // A key another one follows within an epoch does not end the cycle. (A receiver that sends
    // GGA every third second after an RMC every second has epochs of RMC alone; learned from
    // two of them, RMC would close each GGA epoch early and its GGA would be lost as late.)
    // Only once the epoch has its time: untimed sentences before it may be the tail of a
    // cycle whose start was lost (a recording or a connection that begins mid-cycle).
    if hasData, lastKeyTimed, learnedEnd == nil { followedKeys.increment(lastKey) }
    lastKeyTimed = epochTime != nil
    if !hasData { epochFirstByteOffset = sentenceOffset }
    hasData = true
    if !onlyTime { holdsFixData = true }
    if normallyTimed { holdsPositionSentence = true }
    keyCounts.increment(key)
    lastKey = key

    // At the learned end of the cycle, unless nothing of the cycle's position has come yet
    // (those sentences were lost): the epoch then waits for them or for the next time.
    if let learnedEnd, key == learnedEnd, holdsPositionSentence {
      try closeEpoch(endedBy: key, emit: emit)
    }
  }

  /// Emits the epoch in progress, if any (at the end of a recording).
  public mutating func flush(emit: (Epoch) throws -> Void) rethrows {
    try closeEpoch(endedBy: nil, emit: emit)
    if let held = heldEpoch {
      heldEpoch = nil
      statistics.epochs += 1
      try emit(held)
    }
  }

  // MARK: - Epochs

  mutating func closeEpoch(endedBy key: UInt32?, emit: (Epoch) throws -> Void) rethrows {
    if hasData && !holdsFixData {
      // Time, date or error statistics only: not a fix. Its date still counts.
      if let explicitDate, let epochTime {
        carriedDate = explicitDate
        carriedDateTime = epochTime
      }
      statistics.timeOnlyEpochs += 1
    } else if hasData {
      learn(endedBy: key)
      finishFix()
      var view: SatelliteView?
      if sawGSV || sawGSA {
        markUsedSatellites()
        view = SatelliteView(
          time: fix.time, satellites: satellites, hdop: viewHDOP, vdop: viewVDOP, pdop: viewPDOP)
      }
      if key != nil { statistics.epochsClosedAtCycleEnd += 1 }
      lastEmittedTime = fix.time
      lastClosedByCycleEnd = key != nil
      if let time = fix.time {
        recentTimes[recentIndex] = time.nanosecondsOfDay
        recentIndex = (recentIndex + 1) % recentTimes.count
      }
      let epoch = Epoch(fix: fix, satellites: view, firstByteOffset: epochFirstByteOffset)
      view = nil
      try deliver(epoch, emit: emit)
    }
    resetEpoch()
  }

  /// Emits a closed epoch, or holds it: at the start of a stream no date is known until an RMC
  /// or ZDA brings one, and a fix without a date there is most often the tail of a cycle whose
  /// RMC was lost (the port opened, or the recording began, in the middle of a cycle; after a
  /// wake-up that made a 3D fix without time). It waits for the next epoch: with a date, that
  /// one dates it (the day before if midnight fell between) and both go out in order; without
  /// one either, the receiver sends no dates, and both go out as they are.
  @inline(__always)
  mutating func deliver(_ epoch: Epoch, emit: (Epoch) throws -> Void) rethrows {
    if var held = heldEpoch {
      heldEpoch = nil
      awaitingFirstDate = false
      if let date = epoch.fix.date, let time = epoch.fix.time, let heldTime = held.fix.time {
        let midnightBetween =
          heldTime.nanosecondsOfDay - time.nanosecondsOfDay > 12 * 3600 * 1_000_000_000
        held.fix.date = midnightBetween ? date.previous : date
        statistics.epochsDatedByTheNext += 1
      }
      statistics.epochs += 1
      try emit(held)
    } else if awaitingFirstDate, epoch.fix.date == nil, epoch.fix.mode != .noFix {
      heldEpoch = epoch
      return
    }
    if epoch.fix.date != nil { awaitingFirstDate = false }
    statistics.epochs += 1
    try emit(epoch)
  }

  /// The cycle's last sentence is the one before the time changes; trust it once it has been
  /// the last, and seen once only, in two cycles in a row.
  mutating func learn(endedBy key: UInt32?) {
    guard key == nil, learnedEnd == nil, epochTime != nil else { return }
    guard keyCounts.count(of: lastKey) == 1, followedKeys.count(of: lastKey) == nil else {
      candidateEnd = nil
      return
    }
    if candidateEnd == lastKey {
      learnedEnd = lastKey
    } else {
      candidateEnd = lastKey
    }
  }

  func wasEmittedRecently(_ time: UTCTime) -> Bool {
    let value = time.nanosecondsOfDay
    for index in 0..<recentTimes.count where recentTimes[index] == value { return true }
    return false
  }

  /// The epoch's time came only from a ZDA (or GST …) running ahead of the fixes, and a
  /// position sentence with an earlier time arrived: the position sentence's time is the
  /// epoch's (the Magellan AC12 stamps its ZDA two seconds ahead of its GGA and RMC). The
  /// ZDA's date is kept as the carried one.
  mutating func retime(to time: UTCTime) {
    if let explicitDate, let epochTime {
      carriedDate = explicitDate
      carriedDateTime = epochTime
    }
    explicitDate = nil
    epochTime = time
    statistics.retimedEpochs += 1
  }

  /// Whether `time` is earlier than `reference` by less than twelve hours (so not the next
  /// day after midnight).
  static func isShortlyBefore(_ time: UTCTime, _ reference: UTCTime) -> Bool {
    let difference = reference.nanosecondsOfDay - time.nanosecondsOfDay
    return difference > 0 && difference < 12 * 3600 * 1_000_000_000
  }

  /// Sentences that carry a time, a date or error statistics, but nothing of the position.
  static func carriesOnlyTime(_ sentence: Sentence) -> Bool {
    switch sentence {
    case .zda, .gst, .gbs, .grs, .pubxTime, .garminErrorEstimates: return true
    default: return false
    }
  }

  mutating func resetEpoch() {
    fix = Fix()
    epochTime = nil
    epochFirstByteOffset = nil
    hasData = false
    holdsFixData = false
    timedByFixSentence = false
    holdsPositionSentence = false
    explicitDate = nil
    modeFromGSA = nil
    statedMode = nil
    positionSourceRank = 0
    usedFromGSA = 0
    sawGSA = false
    garminAltitude = nil
    sawGSV = false
    viewHDOP = nil
    viewVDOP = nil
    viewPDOP = nil
    satellites.removeAll(keepingCapacity: true)
    used.removeAll()
    satelliteFilter.removeAll()
    keyCounts.removeAll()
  }

  mutating func finishFix() {
    fix.time = epochTime
    fix.storedDatum = datum
    if fix.altitudeMSL == nil, let garminAltitude { fix.altitudeMSL = garminAltitude }

    // Date: explicit in this epoch, else carried, advanced by a day across midnight.
    if let explicitDate {
      fix.date = explicitDate
      carriedDate = explicitDate
      carriedDateTime = epochTime
    } else if let carriedDate, let time = epochTime {
      if let carriedTime = carriedDateTime,
        carriedTime.nanosecondsOfDay - time.nanosecondsOfDay > 12 * 3600 * 1_000_000_000
      {
        self.carriedDate = carriedDate.next  // midnight passed
      }
      carriedDateTime = time
      fix.date = self.carriedDate
    }

    // Mode: no position, no fix. With a position, the receiver's own fix type from GSA when it
    // gave one, else the dimension GGA, GNS, PUBX,00 or PGRMZ state (see `noteStatedMode`).
    // RMC and GLL state none: an epoch of those alone (receivers that send GGA every few
    // seconds and RMC every second) keeps the dimension of the fix before it while the fix
    // lasts, instead of flickering to 2D; else 2D.
    // A fix has a time: a position without one (sentences with an empty time field) cannot
    // be placed, and is not reported as a fix.
    let mode: FixMode
    if fix.position == nil || epochTime == nil {
      mode = .noFix
    } else if let fromGSA = modeFromGSA, fromGSA != .noFix {
      mode = fromGSA
    } else if let statedMode {
      mode = statedMode
    } else if let kept = dimensionKept(at: epochTime) {
      mode = kept
    } else {
      mode = .twoD
    }
    // A lost fix ends it; so does a fix without a time (nothing says the fix lasted).
    if mode != .noFix, let time = epochTime {
      lastDimension = mode
      lastDimensionTime = time.nanosecondsOfDay
    } else {
      lastDimension = nil
    }
    fix.mode = mode
    if mode == .noFix {
      fix.position = nil
      fix.altitudeMSL = nil
      fix.reportedAltitudeHAE = nil
    }
    if fix.satellitesUsed == nil && sawGSA { fix.satellitesUsed = usedFromGSA }

    // Without GGA, the quality the mode indicator stands for.
    if fix.quality == nil, mode != .noFix, let indicator = fix.modeIndicator {
      fix.quality = Self.quality(of: indicator)
    }

    // Climb from successive 3D altitudes when the receiver does not report it. Times of day
    // suffice (no date needed); an interval that looks negative crossed midnight.
    let altitude = fix.altitudeMSL ?? fix.altitudeHAE
    if mode == .threeD, let altitude, let time = epochTime {
      let seconds = Double(time.nanosecondsOfDay) / 1e9
      if fix.climb == nil, let previousAltitude, let previousAltitudeTime {
        var interval = seconds - previousAltitudeTime
        if interval < 0 { interval += 86_400 }
        if interval > 0 && interval <= 10 { fix.climb = (altitude - previousAltitude) / interval }
      }
      previousAltitude = altitude
      previousAltitudeTime = seconds
    } else {
      previousAltitude = nil
      previousAltitudeTime = nil
    }
  }

  /// The dimension of the last fix, if the fix lasts to `time`: the epoch before had one, at
  /// most `dimensionKeptFor` earlier (by time of day; midnight handled).
  func dimensionKept(at time: UTCTime?) -> FixMode? {
    guard let lastDimension, let time else { return nil }
    var interval = time.nanosecondsOfDay - lastDimensionTime
    if interval < 0 { interval += 86_400 * 1_000_000_000 }
    guard interval > 0, interval <= Self.dimensionKeptFor else { return nil }
    return lastDimension
  }

  /// How long a fix's dimension is kept without a sentence stating one, nanoseconds, from
  /// one epoch to the next: the interval a climb is still derived over.
  static let dimensionKeptFor: Int64 = 10 * 1_000_000_000

  static func quality(of indicator: ModeIndicator) -> FixQuality? {
    switch indicator {
    case .autonomous: return .gps
    case .differential, .precise: return .differential
    case .rtkFixed: return .rtkFixed
    case .rtkFloat: return .rtkFloat
    case .estimated: return .deadReckoning
    case .manual: return .manual
    case .simulator: return .simulated
    default: return nil
    }
  }

  /// Receivers write 99.0 or 99.99 for a DOP they do not know.
  static func dop(_ value: Double?) -> Double? {
    guard let value, value < 99 else { return nil }
    return value
  }

  mutating func markUsedSatellites() {
    guard !used.isEmpty else { return }
    for index in satellites.indices
    where used.contains(satellites[index].constellation, satellites[index].svid) {
      satellites[index].used = true
    }
  }

  // MARK: - Merging sentences

  mutating func merge(_ sentence: Sentence) {
    switch sentence {
    case .gga(let gga): merge(gga)
    case .rmc(let rmc): merge(rmc)

    case .gll(let gll):
      let valid = gll.isValid != false && gll.mode?.isValid != false
      if valid {
        takePosition(gll.position, rank: 1)
      }
      if let mode = gll.mode, fix.modeIndicator == nil { fix.modeIndicator = mode }

    case .gns(let gns):
      let mode = gns.bestMode
      let valid = mode?.isValid ?? false
      if valid {
        takePosition(gns.position, rank: 3)
        if let altitude = gns.altitudeMSL { fix.altitudeMSL = altitude }
        if let separation = gns.geoidSeparation { fix.geoidSeparation = separation }
        noteStatedMode(altitude: gns.altitudeMSL, satellitesUsed: gns.satellitesUsed)
      }
      if let mode, fix.modeIndicator == nil { fix.modeIndicator = mode }
      if let used = gns.satellitesUsed { fix.satellitesUsed = used }
      if let hdop = Self.dop(gns.hdop) { fix.hdop = hdop }
      if let age = gns.differentialAge { fix.differentialAge = age }

    case .vtg(let vtg):
      if vtg.mode?.isValid != false {
        if let knots = vtg.speedKnots {
          fix.speed = knots * Self.metresPerSecondPerKnot
        } else if let kmh = vtg.speedKilometresPerHour {
          fix.speed = kmh / 3.6
        }
        if let course = vtg.courseTrue { fix.course = course }
      }

    case .gsa(let gsa): merge(gsa)
    case .gsv(let gsv): merge(gsv)

    case .zda(let zda):
      if let date = zda.date { explicitDate = date }

    case .gst(let gst):
      if let latitude = gst.latitudeError { fix.latitudeError = latitude }
      if let longitude = gst.longitudeError { fix.longitudeError = longitude }
      if let latitude = gst.latitudeError, let longitude = gst.longitudeError {
        fix.horizontalAccuracy = (latitude * latitude + longitude * longitude).squareRoot()
      }
      if let altitude = gst.altitudeError { fix.verticalAccuracy = altitude }

    case .pubxPosition(let pubx):
      let status = pubx.navigationStatus
      let valid = status != nil && status != Self.pubxNoFix && status != Self.pubxTimeOnly
      if valid {
        takePosition(pubx.position, rank: 2)
        if let altitude = pubx.altitudeHAE { fix.reportedAltitudeHAE = altitude }
        let threeD =
          status == Self.pubx3D || status == Self.pubxDifferential3D
          || status == Self.pubxRTK
        statedMode = max(statedMode ?? .noFix, threeD ? .threeD : .twoD)
        if let kmh = pubx.speedKilometresPerHour { fix.speed = kmh / 3.6 }
        if let course = pubx.course { fix.course = course }
        if let down = pubx.verticalVelocityDown { fix.climb = -down }
      }
      if let h = pubx.horizontalAccuracy { fix.horizontalAccuracy = h }
      if let v = pubx.verticalAccuracy { fix.verticalAccuracy = v }
      if let hdop = Self.dop(pubx.hdop) { fix.hdop = hdop }
      if let vdop = Self.dop(pubx.vdop) { fix.vdop = vdop }
      if let tdop = Self.dop(pubx.tdop) { fix.tdop = tdop }
      if let used = pubx.satellitesUsed { fix.satellitesUsed = used }

    case .pubxTime(let pubx):
      if let date = pubx.date { explicitDate = date }

    case .garminErrorEstimates(let garmin):
      // Garmin's own figures, unscaled (gpsd multiplies them by 2.45 / 1.18, taking them for
      // 50 % errors and making them 95 %; Garmin states no confidence level).
      if let horizontal = garmin.horizontal { fix.horizontalAccuracy = horizontal }
      if let vertical = garmin.vertical { fix.verticalAccuracy = vertical }
      if let spherical = garmin.spherical { fix.sphericalAccuracy = spherical }

    case .garminAltitude(let garmin):
      // The altitude counts unless the receiver says it has no fix; GGA's, when the epoch
      // has one, wins (`finishFix`). Its dimension is a statement like GGA's.
      if garmin.fixMode != .noFix {
        if let altitude = garmin.altitudeMetres { garminAltitude = altitude }
        if let mode = garmin.fixMode { statedMode = max(statedMode ?? .noFix, mode) }
      }

    default:
      break
    }
  }

  @inline(__always)
  mutating func merge(_ gga: GGA) {
    let valid = (gga.quality?.rawValue ?? 0) > 0
    if valid {
      takePosition(gga.position, rank: 3)
      if let altitude = gga.altitudeMSL { fix.altitudeMSL = altitude }
      if let separation = gga.geoidSeparation { fix.geoidSeparation = separation }
      noteStatedMode(altitude: gga.altitudeMSL, satellitesUsed: gga.satellitesUsed)
    }
    if let quality = gga.quality { fix.quality = quality }
    if let used = gga.satellitesUsed { fix.satellitesUsed = used }
    if let hdop = Self.dop(gga.hdop) { fix.hdop = hdop }
    if let age = gga.differentialAge { fix.differentialAge = age }
    if let station = gga.differentialStation { fix.differentialStation = station }
  }

  @inline(__always)
  mutating func merge(_ rmc: RMC) {
    let valid = rmc.isValid != false && rmc.mode?.isValid != false
    if let date = rmc.date { explicitDate = date }
    if valid {
      takePosition(rmc.position, rank: 2)
      if let knots = rmc.speedKnots { fix.speed = knots * Self.metresPerSecondPerKnot }
      if let course = rmc.course { fix.course = course }
    }
    if let variation = rmc.magneticVariation { fix.magneticVariation = variation }
    if let mode = rmc.mode { fix.modeIndicator = mode }
  }

  @inline(__always)
  mutating func merge(_ gsa: GSA) {
    sawGSA = true
    if let mode = gsa.fixMode { modeFromGSA = max(modeFromGSA ?? .noFix, mode) }
    if let pdop = Self.dop(gsa.pdop) {
      fix.pdop = pdop
      viewPDOP = pdop
    }
    if let hdop = Self.dop(gsa.hdop) {
      fix.hdop = hdop
      viewHDOP = hdop
    }
    if let vdop = Self.dop(gsa.vdop) {
      fix.vdop = vdop
      viewVDOP = vdop
    }
    for id in gsa.satellites {
      let identity = SatelliteNumbering.identify(
        id: Int(id), talker: gsa.talker, systemID: gsa.systemID)
      if used.insert(identity.constellation, identity.svid) { usedFromGSA += 1 }
    }
  }

  @inline(__always)
  mutating func merge(_ gsv: GSV) {
    sawGSV = true
    for position in 0..<gsv.count {
      let satellite = gsv[position]
      let identity = SatelliteNumbering.identify(
        id: satellite.id, talker: gsv.talker, systemID: gsv.systemID)
      let entry = Satellite(
        constellation: identity.constellation, prn: identity.prn, svid: identity.svid,
        signalID: gsv.signalID, elevation: satellite.elevation, azimuth: satellite.azimuth,
        snr: satellite.snr, used: false)
      // A satellite repeated for the same signal (a resent GSV part) replaces itself.
      let filterHash = entry.prn
      if satelliteFilter.mayContain(filterHash),
        let index = satellites.firstIndex(where: {
          $0.prn == entry.prn && $0.signalID == entry.signalID
            && $0.constellation == entry.constellation
        })
      {
        satellites[index] = entry
      } else {
        satellites.append(entry)
        satelliteFilter.insert(filterHash)
      }
    }
  }

  /// A valid position with an altitude is 3D, unless the receiver says it used one to three
  /// satellites: so few can only give a 2D fix with the altitude held. (A count of 0 beside a
  /// valid fix is a receiver that does not count, not a statement.)
  mutating func noteStatedMode(altitude: Double?, satellitesUsed: Int?) {
    let holdsAltitude = satellitesUsed.map { (1...3).contains($0) } ?? false
    let mode: FixMode = altitude != nil && !holdsAltitude ? .threeD : .twoD
    statedMode = max(statedMode ?? .noFix, mode)
  }

  /// Positions from GGA and GNS (which carry altitude) win over RMC, RMC over GLL.
  mutating func takePosition(_ position: Position?, rank: Int) {
    guard let position, rank >= positionSourceRank else { return }
    fix.position = position
    positionSourceRank = rank
  }

  static let metresPerSecondPerKnot = 1852.0 / 3600.0

  /// A DTM local datum code by the name gpsd gives it (`W84` is `WGS84`); other codes (IHO
  /// datum codes) as they are.
  static func datumName(_ code: String) -> String {
    switch code {
    case "W84": return "WGS84"
    case "W72": return "WGS72"
    case "S85": return "SGS85"
    case "P90": return "PE90"
    case "999": return "User Defined"
    default: return code
    }
  }
  static let pubxNoFix: UInt16 = 0x4E46  // NF
  static let pubxTimeOnly: UInt16 = 0x5454  // TT
  static let pubx3D: UInt16 = 0x4733  // G3
  static let pubxDifferential3D: UInt16 = 0x4433  // D3
  static let pubxRTK: UInt16 = 0x524B  // RK

  /// A cycle key: kind, talker and a variant (GSV last part or not, GSA system).
  @inline(__always)
  static func key(_ kind: UInt32, _ talker: Talker, _ variant: UInt32 = 0) -> UInt32 {
    kind << 24 | UInt32(talker.rawValue) << 8 | variant
  }

  /// Whether the sentence type normally carries the time of a position (as
  /// ``FrequentSentence/isNormallyTimed`` says for GGA, RMC, GSA and GSV).
  @inline(__always)
  static func normallyTimed(_ sentence: Sentence) -> Bool {
    switch sentence {
    case .gga: return GGA.isNormallyTimed
    case .rmc: return RMC.isNormallyTimed
    case .gll, .gns, .pubxPosition: return true
    default: return false
    }
  }

  /// Identifies a sentence's place in the cycle: kind, talker, and for GSV whether it is the
  /// last part, for GSA its system. `nil` for sentences that carry nothing for a fix.
  @inline(__always)
  static func cycleKey(_ sentence: Sentence) -> UInt32? {
    switch sentence {
    case .gga(let s): return s.cycleKey
    case .rmc(let s): return s.cycleKey
    case .gsa(let s): return s.cycleKey
    case .gsv(let s): return s.cycleKey
    case .gll(let s): return key(5, s.talker)
    case .vtg(let s): return key(6, s.talker)
    case .zda(let s): return key(7, s.talker)
    case .gst(let s): return key(8, s.talker)
    case .gns(let s): return key(9, s.talker)
    case .gbs(let s): return key(10, s.talker)
    case .grs(let s): return key(11, s.talker)
    case .pubxPosition: return key(12, .proprietary)
    case .pubxTime: return key(13, .proprietary)
    case .pubxSatellites: return key(14, .proprietary)
    case .garminErrorEstimates: return key(15, .proprietary)
    case .garminAltitude: return key(16, .proprietary)
    case .dtm, .txt, .mtkAcknowledgement, .mtkSystemMessage, .garminDatum, .unknown: return nil
    }
  }
}

// The fix builder's side of ``FrequentSentence``: each type's place in the cycle and its merge.

extension GGA {
  var cycleKey: UInt32 { FixBuilder.key(1, talker) }
  static var isNormallyTimed: Bool { true }
  @inline(__always)
  func merge(into builder: inout FixBuilder) { builder.merge(self) }
}

extension RMC {
  var cycleKey: UInt32 { FixBuilder.key(2, talker) }
  static var isNormallyTimed: Bool { true }
  @inline(__always)
  func merge(into builder: inout FixBuilder) { builder.merge(self) }
}

extension GSA {
  /// One key per system (NMEA 4.10 sends a GSA for each).
  var cycleKey: UInt32 { FixBuilder.key(3, talker, UInt32(systemID ?? 15) + 1) }
  var time: UTCTime? { nil }
  static var isNormallyTimed: Bool { false }
  @inline(__always)
  func merge(into builder: inout FixBuilder) { builder.merge(self) }
}

extension GSV {
  /// The last part of a GSV group and the others are told apart.
  var cycleKey: UInt32 { FixBuilder.key(4, talker, messageNumber == messageCount ? 1 : 2) }
  var time: UTCTime? { nil }
  static var isNormallyTimed: Bool { false }
  @inline(__always)
  func merge(into builder: inout FixBuilder) { builder.merge(self) }
}

/// A set of satellites (system and number within it), for the used ones of an epoch. Exact
/// bits for numbers 0...191 of each system (every one a receiver gives except a few odd
/// numberings), a list for the rest; it replaced a list searched for each satellite of each
/// epoch.
struct UsedSet {
  /// Three words per system, the ninth for satellites of no known system.
  static let wordsPerSystem = 3
  static let wordCount = 27
  // An array, allocated once: reading an InlineArray element through a borrowed value made
  // a copy of the whole InlineArray for each read.
  var words = [UInt64](repeating: 0, count: UsedSet.wordCount)
  var others: [(constellation: Constellation?, svid: Int)] = []
  var count = 0

  var isEmpty: Bool { count == 0 }

  /// The word and bit of a satellite, or `nil` when its number is outside the bits.
  @inline(__always)
  static func bit(_ constellation: Constellation?, _ svid: Int) -> (word: Int, mask: UInt64)? {
    guard svid >= 0, svid < wordsPerSystem * 64 else { return nil }
    let system = Int(constellation?.rawValue ?? 8)
    return (system &* wordsPerSystem &+ svid >> 6, 1 << UInt64(svid & 63))
  }

  @inline(__always)
  func contains(_ constellation: Constellation?, _ svid: Int) -> Bool {
    if let (word, mask) = Self.bit(constellation, svid) { return words[word] & mask != 0 }
    return others.contains { $0.constellation == constellation && $0.svid == svid }
  }

  /// Adds the satellite; `false` if it was already there.
  @inline(__always)
  mutating func insert(_ constellation: Constellation?, _ svid: Int) -> Bool {
    if let (word, mask) = Self.bit(constellation, svid) {
      guard words[word] & mask == 0 else { return false }
      words[word] |= mask
    } else {
      guard !contains(constellation, svid) else { return false }
      others.append((constellation, svid))
    }
    count += 1
    return true
  }

  mutating func removeAll() {
    guard count > 0 else { return }
    words.withUnsafeMutableBufferPointer { $0.update(repeating: 0) }
    if !others.isEmpty { others.removeAll(keepingCapacity: true) }
    count = 0
  }
}

/// How often each cycle key was seen in the epoch in progress: a dozen keys or so per epoch,
/// found by a linear search of an inline array (hashing each key into a dictionary cost more
/// than the rest of the bookkeeping); keys beyond the sixteenth go to a dictionary.
struct KeyCounts {
  static let capacity = 16
  var keys = InlineArray<16, UInt32>(repeating: 0)
  var counts = InlineArray<16, Int>(repeating: 0)
  var stored = 0
  var overflow: [UInt32: Int] = [:]

  /// How often `key` was seen, `nil` if never.
  @inline(__always)
  func count(of key: UInt32) -> Int? {
    for index in 0..<stored where keys[index] == key { return counts[index] }
    return overflow.isEmpty ? nil : overflow[key]
  }

  @inline(__always)
  mutating func increment(_ key: UInt32) {
    for index in 0..<stored where keys[index] == key {
      counts[index] += 1
      return
    }
    if stored < Self.capacity {
      keys[stored] = key
      counts[stored] = 1
      stored &+= 1
    } else {
      overflow[key, default: 0] += 1
    }
  }

  mutating func removeAll() {
    stored = 0
    if !overflow.isEmpty { overflow.removeAll(keepingCapacity: true) }
  }
}

/// A 256-bit set of hashed keys in front of a linear search: when it says a key is absent,
/// the key is absent and the search is skipped; when it says "maybe", the search decides.
/// Keeps the per-epoch satellite bookkeeping from growing with the square of the satellites.
struct KeyFilter {
  var words = InlineArray<4, UInt64>(repeating: 0)

  @inline(__always)
  mutating func insert(_ hash: Int) {
    let bit = hash & 255
    words[bit >> 6] |= 1 << UInt64(bit & 63)
  }

  @inline(__always)
  func mayContain(_ hash: Int) -> Bool {
    let bit = hash & 255
    return words[bit >> 6] & (1 << UInt64(bit & 63)) != 0
  }

  mutating func removeAll() {
    words = InlineArray<4, UInt64>(repeating: 0)
  }
}
