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
  /// UBX-HNR-PVT solutions not made into a fix because the navigation epoch of the same time
  /// (NAV-PVT, due then) makes it.
  public var highRateSolutionsLeftToNavigation = 0

  public init() {}
}

/// Which sentence ends a receiver's measurement cycle, as a ``FixBuilder`` learned it.
public struct CycleKnowledge: Sendable, Hashable {
  /// The sentence known to end the cycle.
  let lastSentence: CycleKey?
  /// The sentence seen last in one cycle so far, not yet confirmed by a second one.
  let candidate: CycleKey?

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
/// The builder knows no sentence type: each type's descriptor (``SentenceDescriptor``) says
/// its place in the cycle, its time and key, and merges what it says (docs/nmea.md,
/// "Descriptors").
///
/// Steady-state operation allocates nothing: the satellite buffer is reused from epoch to
/// epoch unless the caller keeps an emitted ``SatelliteView``.
public struct FixBuilder {
  public private(set) var statistics = FixBuilderStatistics()

  /// What the sentences of the epoch in progress said.
  var epoch = EpochInProgress()
  /// Which sentence ends the cycle, and the epochs emitted last.
  var cycle = CycleLearning()
  /// The date carried across epochs, and a fix held for the next one's date.
  var dates = DateHolding()
  /// What the last fix hands this one (climb, dimension).
  var continuity = FixContinuity()
  /// The receiver's settings (the datum).
  var settings = ReceiverSettings()

  /// GPS − UTC leap seconds, as the receiver last stated them (``SentenceDescriptor/
  /// statedLeapSeconds``): what turns a binary message's GPS time of week into the UTC time
  /// of day of its epoch. `nil` until a message states them; until then such messages are
  /// untimed and join the epoch in progress.
  public private(set) var leapSeconds: Int?
  /// The GPS time of week (ms) at which the last leap second a binary message named (23:59:60)
  /// began.
  var leapSecondStart: UInt32?
  /// The leap seconds stated during it (GPS − UTC before it).
  var leapSecondCount: Int?
  /// When u-blox's navigation solutions (NAV-PVT) come, beside the high-rate HNR-PVT.
  var navigationCadence = NavigationCadence()

  /// The stream offset of the sentence being added, when it came through a framer (the
  /// decoder sets it before each sentence).
  var sentenceOffset: UInt64?

  public init() {}

  /// Whether the builder has learned which sentence ends the receiver's cycle.
  public var hasLearnedCycleEnd: Bool { cycle.learnedEnd != nil }

  /// What the builder has learned about the receiver's cycle (which sentence ends it).
  ///
  /// A driver that reopens the same receiver hands this to the new connection's builder, so
  /// the first epoch after a power-on is emitted as soon as it is complete rather than when
  /// the next one begins. Knowledge that proves wrong (data for an epoch already emitted) is
  /// forgotten as if it had been learned here.
  public var cycleKnowledge: CycleKnowledge? {
    get {
      guard cycle.learnedEnd != nil || cycle.candidateEnd != nil else { return nil }
      return CycleKnowledge(lastSentence: cycle.learnedEnd, candidate: cycle.candidateEnd)
    }
    set {
      cycle.learnedEnd = newValue?.lastSentence
      cycle.candidateEnd = newValue?.candidate
    }
  }

  /// Adds one sentence; calls `emit` for each epoch it completes (at most two: the previous
  /// one when the time changes, and this one if the sentence ends the cycle).
  public mutating func add(_ sentence: Sentence, emit: (Epoch) throws -> Void) rethrows {
    switch sentence {
    case .gga(let s): try add(s, emit: emit)
    case .rmc(let s): try add(s, emit: emit)
    case .gsa(let s): try add(s, emit: emit)
    case .gsv(let s): try add(s, emit: emit)
    case .gll(let s): try add(s, emit: emit)
    case .vtg(let s): try add(s, emit: emit)
    case .zda(let s): try add(s, emit: emit)
    case .gst(let s): try add(s, emit: emit)
    case .gns(let s): try add(s, emit: emit)
    case .gbs(let s): try add(s, emit: emit)
    case .grs(let s): try add(s, emit: emit)
    case .dtm(let s): try add(s, emit: emit)
    case .txt(let s): try add(s, emit: emit)
    case .pubxPosition(let s): try add(s, emit: emit)
    case .pubxSatellites(let s): try add(s, emit: emit)
    case .pubxTime(let s): try add(s, emit: emit)
    case .mtkAcknowledgement(let s): try add(s, emit: emit)
    case .mtkSystemMessage(let s): try add(s, emit: emit)
    case .garminErrorEstimates(let s): try add(s, emit: emit)
    case .garminAltitude(let s): try add(s, emit: emit)
    case .garminDatum(let s): try add(s, emit: emit)
    case .unknown: return  // nothing for a fix
    }
  }

  /// Adds a sentence of any type without the `Sentence` around it (the decoder parses each
  /// straight into its own type; every copy of a `Sentence` costs). Its descriptor says what
  /// it is to the cycle: ``CycleRole/none`` carries nothing, a ``CycleRole/setting`` is kept
  /// apart from the cycle, the rest join the epoch in progress.
  ///
  /// Out of line on purpose: inlined into the decoder's dispatch, each of the registry's rows
  /// would carry a copy of the cycle bookkeeping, and the pipeline costs more per sentence.
  @inline(never)
  mutating func add<S: SentenceDescriptor>(_ sentence: borrowing S, emit: (Epoch) throws -> Void)
    rethrows
  {
    switch S.role {
    case .none: return
    case .setting:
      sentence.merge(into: &self)
      return
    case .position, .untimed, .timeOnly: break
    }
    if let stated = sentence.statedLeapSeconds { leapSeconds = stated }
    var time = sentence.time
    if let timeOfWeek = sentence.timeOfWeek {
      if let start = leapSecondStart, Self.milliseconds(from: start, to: timeOfWeek) >= 1000 {
        // The leap second is over: GPS − UTC grew by one, whether or not a message said so.
        if leapSeconds == leapSecondCount, let count = leapSecondCount {
          leapSeconds = count + 1
        }
        leapSecondStart = nil
      }
      if let leapSecond = time, leapSecond.second == 60 {
        // A binary message that says 23:59:60: the rest of its second is the leap second too,
        // and so are the messages of its epoch that came before it.
        leapSecondStart = timeOfWeek &- leapSecond.nanoseconds / 1_000_000
        leapSecondCount = leapSeconds
        if let leapSeconds, let epochTime = epoch.time,
          epochTime == Self.utcTime(timeOfWeek: timeOfWeek, leapSeconds: leapSeconds)
        {
          epoch.time = leapSecond
        }
      } else if time == nil, let leapSeconds {
        time = Self.utcTime(
          timeOfWeek: timeOfWeek, leapSeconds: leapSeconds, leapSecondStart: leapSecondStart)
      }
    }
    let key = sentence.cycleKey
    let onlyTime = S.role == .timeOnly
    let normallyTimed = S.role == .position
    guard
      try begin(
        key: key, time: time, onlyTime: onlyTime, normallyTimed: normallyTimed, emit: emit)
    else { return }
    if S.isSentence {
      epoch.sawSentence = true
      epoch.fix.fromBinaryMessagesOnly = false
    } else if !epoch.sawSentence {
      epoch.fix.fromBinaryMessagesOnly = true
    }
    sentence.merge(into: &self)
    try end(key: key, onlyTime: onlyTime, normallyTimed: normallyTimed, emit: emit)
    if S.endsEpoch, epoch.hasData { try closeEpoch(endedBy: key, emit: emit) }
  }

  /// The UTC time of day of a GPS time of week (milliseconds) with `leapSeconds`: 23:59:60
  /// within the second that begins at `leapSecondStart` (a time of week).
  static func utcTime(timeOfWeek: UInt32, leapSeconds: Int, leapSecondStart: UInt32?)
    -> UTCTime
  {
    if let leapSecondStart {
      let into = milliseconds(from: leapSecondStart, to: timeOfWeek)
      if into < 1000 {
        return UTCTime(hour: 23, minute: 59, second: 60, nanoseconds: UInt32(into) * 1_000_000)
      }
    }
    return utcTime(timeOfWeek: timeOfWeek, leapSeconds: leapSeconds)
  }

  /// Counts a high-rate solution left to the navigation epoch of its time.
  mutating func leaveToNavigation() { statistics.highRateSolutionsLeftToNavigation += 1 }

  /// Milliseconds from one time of week to a later one, across the end of the week.
  static func milliseconds(from start: UInt32, to time: UInt32) -> Int64 {
    (Int64(time) - Int64(start) + 604_800_000) % 604_800_000
  }

  /// The UTC time of day of a GPS time of week (milliseconds) with `leapSeconds`.
  static func utcTime(timeOfWeek: UInt32, leapSeconds: Int) -> UTCTime {
    var milliseconds = (Int64(timeOfWeek) - Int64(leapSeconds) * 1000) % 86_400_000
    if milliseconds < 0 { milliseconds += 86_400_000 }
    let seconds = milliseconds / 1000
    return UTCTime(
      hour: UInt8(seconds / 3600), minute: UInt8(seconds / 60 % 60), second: UInt8(seconds % 60),
      nanoseconds: UInt32(milliseconds % 1000) * 1_000_000)
  }

  /// The UTC date of a GPS week and time of week (milliseconds) with `leapSeconds`.
  static func utcDate(week: Int, timeOfWeek: UInt32, leapSeconds: Int) -> UTCDate {
    let milliseconds = Int64(timeOfWeek) - Int64(leapSeconds) * 1000
    var days = milliseconds / 86_400_000
    if milliseconds < 0 && milliseconds % 86_400_000 != 0 { days -= 1 }
    // GPS time began on 1980-01-06, 3657 days after the Unix epoch.
    return UTCDate(daysSinceUnixEpoch: 3657 + week * 7 + Int(days))
  }

  /// The leap seconds between a valid UTC time of day and the GPS time of week of the same
  /// instant, when they are whole seconds apart (within a few milliseconds: u-blox writes
  /// UTC to the nanosecond around the epoch's whole millisecond) and plausible.
  static func leapSeconds(timeOfWeek: UInt32, utc: UTCTime) -> Int? {
    let utcMilliseconds = (utc.nanosecondsOfDay + 500_000) / 1_000_000
    var difference = (Int64(timeOfWeek) - utcMilliseconds) % 86_400_000
    if difference < 0 { difference += 86_400_000 }
    let seconds = (difference + 500) / 1000
    guard abs(difference - seconds * 1000) <= 10, (0...60).contains(seconds) else { return nil }
    return Int(seconds)
  }

  /// What happens before a sentence's data is merged: a late sentence is counted and
  /// dropped (`false`); a new time, or a position sentence seen again, closes the epoch in
  /// progress.
  ///
  /// - Parameters:
  ///   - key: the sentence's place in the cycle (``SentenceDescriptor/cycleKey``).
  ///   - onlyTime: it carries a time, date or error statistics, nothing of the position.
  ///   - normallyTimed: its type normally carries the time of a position.
  @inline(__always)
  mutating func begin(
    key: CycleKey, time: UTCTime?, onlyTime: Bool, normallyTimed: Bool,
    emit: (Epoch) throws -> Void
  ) rethrows -> Bool {
    if let time {
      if time != epoch.time, cycle.wasEmittedRecently(time) {
        // Data for an epoch already emitted: merging it would make a second fix for that
        // time. If the learned cycle end closed that epoch, the guess was wrong: learn again.
        statistics.lateSentences += 1
        if cycle.lastClosedByCycleEnd, time == cycle.lastEmittedTime {
          statistics.cycleEndsForgotten += 1
          cycle.forget()
        }
        return false
      }
      if let epochTime = epoch.time, time != epochTime {
        if !epoch.timedByFixSentence, !onlyTime, Self.isShortlyBefore(time, epochTime) {
          retime(to: time)
        } else {
          try closeEpoch(endedBy: nil, emit: emit)
        }
      }
      if epoch.time == nil, normallyTimed, epoch.keyCounts.count(of: key) != nil {
        // The epoch so far is an untimed cycle (no fix yet) that already has this position
        // sentence: the first timed cycle after a cold start begins here, not inside it.
        try closeEpoch(endedBy: nil, emit: emit)
      }
      if epoch.time == nil { epoch.time = time }
      if !onlyTime { epoch.timedByFixSentence = true }
    } else if normallyTimed, epoch.keyCounts.count(of: key) != nil {
      // The same position sentence again, without a time (no fix yet): a new cycle.
      try closeEpoch(endedBy: nil, emit: emit)
    }
    return true
  }

  /// What happens after a sentence's data is merged: its key is counted, and the epoch is
  /// closed if the sentence is the learned end of the cycle.
  @inline(__always)
  mutating func end(
    key: CycleKey, onlyTime: Bool, normallyTimed: Bool, emit: (Epoch) throws -> Void
  ) rethrows {
    // A key another one follows within an epoch does not end the cycle. (A receiver that sends
    // GGA every third second after an RMC every second has epochs of RMC alone; learned from
    // two of them, RMC would close each GGA epoch early and its GGA would be lost as late.)
    // Only once the epoch has its time: untimed sentences before it may be the tail of a
    // cycle whose start was lost (a recording or a connection that begins mid-cycle).
    if epoch.hasData, cycle.lastKeyTimed, cycle.learnedEnd == nil {
      cycle.followedKeys.increment(cycle.lastKey)
    }
    cycle.lastKeyTimed = epoch.time != nil
    if !epoch.hasData { epoch.firstByteOffset = sentenceOffset }
    epoch.hasData = true
    if !onlyTime { epoch.holdsFixData = true }
    if normallyTimed { epoch.holdsPositionSentence = true }
    epoch.keyCounts.increment(key)
    cycle.lastKey = key

    // At the learned end of the cycle, unless nothing of the cycle's position has come yet
    // (those sentences were lost): the epoch then waits for them or for the next time.
    if let learnedEnd = cycle.learnedEnd, key == learnedEnd, epoch.holdsPositionSentence {
      try closeEpoch(endedBy: key, emit: emit)
    }
  }

  /// Emits the epoch in progress, if any (at the end of a recording).
  public mutating func flush(emit: (Epoch) throws -> Void) rethrows {
    try closeEpoch(endedBy: nil, emit: emit)
    if let held = dates.heldEpoch {
      dates.heldEpoch = nil
      statistics.epochs += 1
      try emit(held)
    }
  }

  // MARK: - Epochs

  mutating func closeEpoch(endedBy key: CycleKey?, emit: (Epoch) throws -> Void) rethrows {
    if epoch.hasData && !epoch.holdsFixData {
      // Time, date or error statistics only: not a fix. Its date still counts.
      if let explicitDate = epoch.explicitDate, let time = epoch.time {
        dates.carry(explicitDate, at: time)
      }
      statistics.timeOnlyEpochs += 1
    } else if epoch.hasData {
      cycle.learn(endedBy: key, in: epoch)
      finishFix()
      var view: SatelliteView?
      if epoch.satelliteSource != .none || epoch.sawGSA || !epoch.viewDOP.isEmpty {
        epoch.markUsedSatellites()
        let dop = epoch.viewDOP
        // GSA's dilutions are the view's where it sent them, NAV-DOP's otherwise.
        view = SatelliteView(
          time: epoch.fix.time, satellites: epoch.satellites, hdop: epoch.viewHDOP ?? dop.hdop,
          vdop: epoch.viewVDOP ?? dop.vdop, pdop: epoch.viewPDOP ?? dop.pdop, gdop: dop.gdop,
          tdop: dop.tdop, edop: dop.edop, ndop: dop.ndop)
      }
      if key != nil { statistics.epochsClosedAtCycleEnd += 1 }
      cycle.remember(epoch.fix.time, closedByCycleEnd: key != nil)
      let closed = Epoch(fix: epoch.fix, satellites: view, firstByteOffset: epoch.firstByteOffset)
      view = nil
      try deliver(closed, emit: emit)
    }
    epoch.reset()
  }

  /// Emits a closed epoch, or holds it: at the start of a stream no date is known until an RMC
  /// or ZDA brings one, and a fix without a date there is most often the tail of a cycle whose
  /// RMC was lost (the port opened, or the recording began, in the middle of a cycle; after a
  /// wake-up that made a 3D fix without time). It waits for the next epoch: with a date, that
  /// one dates it (the day before if midnight fell between) and both go out in order; without
  /// one either, the receiver sends no dates, and both go out as they are.
  @inline(__always)
  mutating func deliver(_ closed: Epoch, emit: (Epoch) throws -> Void) rethrows {
    if var held = dates.heldEpoch {
      dates.heldEpoch = nil
      dates.awaitingFirstDate = false
      if let date = closed.fix.date, let time = closed.fix.time, let heldTime = held.fix.time {
        let midnightBetween =
          heldTime.nanosecondsOfDay - time.nanosecondsOfDay > 12 * 3600 * 1_000_000_000
        held.fix.date = midnightBetween ? date.previous : date
        statistics.epochsDatedByTheNext += 1
      }
      statistics.epochs += 1
      try emit(held)
    } else if dates.awaitingFirstDate, closed.fix.date == nil, closed.fix.mode != .noFix {
      dates.heldEpoch = closed
      return
    }
    if closed.fix.date != nil { dates.awaitingFirstDate = false }
    statistics.epochs += 1
    try emit(closed)
  }

  /// The epoch's time came only from a ZDA (or GST …) running ahead of the fixes, and a
  /// position sentence with an earlier time arrived: the position sentence's time is the
  /// epoch's (the Magellan AC12 stamps its ZDA two seconds ahead of its GGA and RMC). The
  /// ZDA's date is kept as the carried one.
  mutating func retime(to time: UTCTime) {
    if let explicitDate = epoch.explicitDate, let epochTime = epoch.time {
      dates.carry(explicitDate, at: epochTime)
    }
    epoch.explicitDate = nil
    epoch.time = time
    statistics.retimedEpochs += 1
  }

  /// Where the receiver gave one height but no geoid separation (u-blox's NAV-SOL and ECEF
  /// messages give only the ellipsoidal height, a GGA may leave the separation empty): the
  /// separation of gpsd's model (``GeoidModel``) and the other height from it, as gpsd's
  /// error model fills them. Never where the receiver gave its own separation or both heights.
  mutating func fillGeoidSeparation() {
    guard epoch.fix.geoidSeparation == nil, let latitude = epoch.fix.latitude,
      let longitude = epoch.fix.longitude
    else { return }
    let hae = epoch.fix.reportedAltitudeHAE
    guard (epoch.fix.altitudeMSL == nil) != (hae == nil),
      let separation = GeoidModel.separation(latitude: latitude, longitude: longitude)
    else { return }
    epoch.fix.geoidSeparation = separation
    if let hae { epoch.fix.altitudeMSL = hae - separation }
  }

  /// Whether `time` is earlier than `reference` by less than twelve hours (so not the next
  /// day after midnight).
  static func isShortlyBefore(_ time: UTCTime, _ reference: UTCTime) -> Bool {
    let difference = reference.nanosecondsOfDay - time.nanosecondsOfDay
    return difference > 0 && difference < 12 * 3600 * 1_000_000_000
  }

  mutating func finishFix() {
    let epochTime = epoch.time
    epoch.fix.time = epochTime
    epoch.fix.storedDatum = settings.datum
    epoch.fix.storedJammingIndicator = settings.jammingIndicator
    epoch.fix.storedAntennaStatus = settings.antennaStatus
    epoch.fix.storedAntennaPower = settings.antennaPower
    if epoch.fix.altitudeMSL == nil, let garminAltitude = epoch.garminAltitude {
      epoch.fix.altitudeMSL = garminAltitude
    }

    // Date: explicit in this epoch, else carried, advanced by a day across midnight.
    if let explicitDate = epoch.explicitDate {
      epoch.fix.date = explicitDate
      dates.carry(explicitDate, at: epochTime)
    } else if let carriedDate = dates.carriedDate, let time = epochTime {
      if let carriedTime = dates.carriedDateTime,
        carriedTime.nanosecondsOfDay - time.nanosecondsOfDay > 12 * 3600 * 1_000_000_000
      {
        dates.carriedDate = carriedDate.next  // midnight passed
      }
      dates.carriedDateTime = time
      epoch.fix.date = dates.carriedDate
    }

    // Mode: no position, no fix; nor when a position sentence says there is none (an RMC of
    // status V beside a GGA of quality 1: the receiver does not stand behind the fix). With a
    // position, gpsd's reading of the NMEA sentences in their order (`noteNMEAMode`); without
    // one of those (PUBX,00, UBX), the receiver's GSA fix type, else the dimension the
    // messages state, else the dimension of the fix before it while the fix lasts, else 2D.
    // A fix has a time: a position without one (sentences with an empty time field) cannot
    // be placed, and is not reported as a fix.
    let mode: FixMode
    if epoch.fix.position == nil || epochTime == nil || epoch.fixDenied {
      mode = .noFix
    } else if let nmeaMode = epoch.nmeaMode {
      mode = nmeaMode
    } else if let fromGSA = epoch.modeFromGSA, fromGSA != .noFix {
      mode = fromGSA
    } else if let statedMode = epoch.statedMode {
      mode = statedMode
    } else if let kept = dimensionKept(at: epochTime) {
      mode = kept
    } else {
      mode = .twoD
    }
    // A lost fix ends it; so does a fix without a time (nothing says the fix lasted).
    if mode != .noFix, let time = epochTime {
      continuity.lastDimension = mode
      continuity.lastDimensionTime = time.nanosecondsOfDay
    } else {
      continuity.lastDimension = nil
    }
    epoch.fix.mode = mode
    epoch.fix.receiverFixMode = epoch.modeFromGSA
    continuity.lastFixHadAltitude = mode != .noFix && epoch.fix.altitudeMSL != nil
    if mode == .noFix {
      epoch.fix.position = nil
      epoch.fix.altitudeMSL = nil
      epoch.fix.reportedAltitudeHAE = nil
    }
    if mode != .noFix { fillGeoidSeparation() }
    if epoch.fix.satellitesUsed == nil && epoch.sawGSA {
      epoch.fix.satellitesUsed = epoch.usedFromGSA
    }

    // Without GGA, the quality the mode indicator stands for.
    if epoch.fix.quality == nil, mode != .noFix, let indicator = epoch.fix.modeIndicator {
      epoch.fix.quality = Self.quality(of: indicator)
    }

    // Climb from successive 3D altitudes when the receiver does not report it. Times of day
    // suffice (no date needed); an interval that looks negative crossed midnight.
    let altitude = epoch.fix.altitudeMSL ?? epoch.fix.altitudeHAE
    if mode == .threeD, let altitude, let time = epochTime {
      let seconds = Double(time.nanosecondsOfDay) / 1e9
      if epoch.fix.climb == nil, let previousAltitude = continuity.previousAltitude,
        let previousAltitudeTime = continuity.previousAltitudeTime
      {
        var interval = seconds - previousAltitudeTime
        if interval < 0 { interval += 86_400 }
        if interval > 0 && interval <= 10 {
          epoch.fix.climb = (altitude - previousAltitude) / interval
        }
      }
      continuity.previousAltitude = altitude
      continuity.previousAltitudeTime = seconds
    } else {
      continuity.previousAltitude = nil
      continuity.previousAltitudeTime = nil
    }
  }

  /// The dimension of the last fix, if the fix lasts to `time`: the epoch before had one, at
  /// most `dimensionKeptFor` earlier (by time of day; midnight handled).
  func dimensionKept(at time: UTCTime?) -> FixMode? {
    guard let lastDimension = continuity.lastDimension, let time else { return nil }
    var interval = time.nanosecondsOfDay - continuity.lastDimensionTime
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

  static let metresPerSecondPerKnot = 1852.0 / 3600.0
}
