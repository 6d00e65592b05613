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

  public init() {}
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
  var explicitDate: UTCDate?
  var positionValid: Bool?
  var modeFromGSA: FixMode?
  var derivedMode: FixMode?
  var positionSourceRank = 0
  var usedFromGSA = 0
  var sawGSA = false
  var timelessRepeatKeys = 0 as UInt64  // bit per sentence kind seen without a time

  // Satellites of the epoch in progress.
  var satellites: [Satellite] = []
  var used: [UsedKey] = []
  // Quick "certainly not" answers before the linear searches of `used` and `satellites`.
  var usedFilter = KeyFilter()
  var satelliteFilter = KeyFilter()
  var sawGSV = false
  var viewHDOP: Double?
  var viewVDOP: Double?
  var viewPDOP: Double?

  // Carried across epochs.
  var carriedDate: UTCDate?
  var carriedDateTime: UTCTime?
  var lastEmittedTime: UTCTime?
  var previousAltitude: Double?
  var previousTimestamp: Double?

  // Learning which sentence ends the cycle.
  var lastKey: UInt32 = 0
  var lastKeyCount = 0
  var keyCounts: [UInt32: Int] = [:]
  var candidateEnd: UInt32?
  var learnedEnd: UInt32?
  var closedByCycleEnd = false

  struct UsedKey: Hashable {
    var constellation: Constellation?
    var svid: Int

    /// Input for a ``KeyFilter``: equal keys give equal values.
    var filterHash: Int { svid &* 9 &+ Int(constellation?.rawValue ?? 8) }
  }

  public init() {
    satellites.reserveCapacity(64)
    used.reserveCapacity(32)
    keyCounts.reserveCapacity(32)
  }

  /// Whether the builder has learned which sentence ends the receiver's cycle.
  public var hasLearnedCycleEnd: Bool { learnedEnd != nil }

  /// Adds one sentence; calls `emit` for each epoch it completes (at most two: the previous
  /// one when the time changes, and this one if the sentence ends the cycle).
  public mutating func add(_ sentence: Sentence, emit: (Epoch) throws -> Void) rethrows {
    guard let key = Self.cycleKey(sentence) else { return }  // carries nothing for a fix
    let time = sentence.time

    if let time {
      if let epochTime, time != epochTime {
        try closeEpoch(endedBy: nil, emit: emit)
      } else if epochTime == nil, closedByCycleEnd, let lastEmittedTime, time == lastEmittedTime {
        // Data for the epoch just emitted at the learned cycle end: the guess was wrong.
        statistics.lateSentences += 1
        statistics.cycleEndsForgotten += 1
        learnedEnd = nil
        candidateEnd = nil
        return
      } else if epochTime == nil, hasData, let lastEmittedTime, time == lastEmittedTime {
        statistics.lateSentences += 1
        return
      }
      if epochTime == nil { epochTime = time }
    } else if Self.normallyTimed(sentence) {
      // A position sentence without time (no fix yet): a repeat means a new cycle.
      let bit: UInt64 = 1 << UInt64(key >> 24)
      if timelessRepeatKeys & bit != 0 { try closeEpoch(endedBy: nil, emit: emit) }
      timelessRepeatKeys |= bit
    }

    closedByCycleEnd = false
    merge(sentence)
    hasData = true
    keyCounts[key, default: 0] += 1
    lastKey = key

    if let learnedEnd, key == learnedEnd {
      try closeEpoch(endedBy: key, emit: emit)
    }
  }

  /// Emits the epoch in progress, if any (at the end of a recording).
  public mutating func flush(emit: (Epoch) throws -> Void) rethrows {
    try closeEpoch(endedBy: nil, emit: emit)
  }

  // MARK: - Epochs

  mutating func closeEpoch(endedBy key: UInt32?, emit: (Epoch) throws -> Void) rethrows {
    if hasData {
      learn(endedBy: key)
      finishFix()
      var view: SatelliteView?
      if sawGSV || sawGSA {
        markUsedSatellites()
        view = SatelliteView(
          time: fix.time, satellites: satellites, hdop: viewHDOP, vdop: viewVDOP, pdop: viewPDOP)
      }
      statistics.epochs += 1
      if key != nil { statistics.epochsClosedAtCycleEnd += 1 }
      lastEmittedTime = fix.time
      closedByCycleEnd = key != nil
      let epoch = Epoch(fix: fix, satellites: view)
      view = nil
      try emit(epoch)
    }
    resetEpoch()
  }

  /// The cycle's last sentence is the one before the time changes; trust it once it has been
  /// the last, and seen once only, in two cycles in a row.
  mutating func learn(endedBy key: UInt32?) {
    guard key == nil, learnedEnd == nil, epochTime != nil else { return }
    guard keyCounts[lastKey] == 1 else {
      candidateEnd = nil
      return
    }
    if candidateEnd == lastKey {
      learnedEnd = lastKey
    } else {
      candidateEnd = lastKey
    }
  }

  mutating func resetEpoch() {
    fix = Fix()
    epochTime = nil
    hasData = false
    explicitDate = nil
    positionValid = nil
    modeFromGSA = nil
    derivedMode = nil
    positionSourceRank = 0
    usedFromGSA = 0
    sawGSA = false
    sawGSV = false
    timelessRepeatKeys = 0
    viewHDOP = nil
    viewVDOP = nil
    viewPDOP = nil
    satellites.removeAll(keepingCapacity: true)
    used.removeAll(keepingCapacity: true)
    usedFilter.removeAll()
    satelliteFilter.removeAll()
    keyCounts.removeAll(keepingCapacity: true)
  }

  mutating func finishFix() {
    fix.time = epochTime

    // Date: explicit in this epoch, else carried, advanced by a day across midnight.
    if let explicitDate {
      fix.date = explicitDate
      carriedDate = explicitDate
      carriedDateTime = epochTime
    } else if let carriedDate, let time = epochTime {
      if let carriedTime = carriedDateTime,
        carriedTime.nanosecondsOfDay - time.nanosecondsOfDay > 12 * 3600 * 1_000_000_000
      {
        self.carriedDate = carriedDate.next
      }
      carriedDateTime = time
      fix.date = self.carriedDate
    }

    // Mode: the GSA's, unless the position sentences disagree about having a fix at all.
    var mode = modeFromGSA ?? derivedMode ?? .noFix
    if positionValid == false && modeFromGSA == nil { mode = .noFix }
    if mode == .noFix, positionValid == true, fix.position != nil {
      mode = derivedMode ?? .twoD
    }
    fix.mode = mode
    if mode == .noFix {
      fix.position = nil
      fix.altitudeMSL = nil
      fix.reportedAltitudeHAE = nil
    }
    if fix.satellitesUsed == nil && sawGSA { fix.satellitesUsed = usedFromGSA }

    // Climb from successive 3D altitudes when the receiver does not report it.
    let altitude = fix.altitudeHAE ?? fix.altitudeMSL
    let seconds = fix.timestamp.map(\.unixTime)
    if mode == .threeD, let altitude, let seconds {
      if fix.climb == nil, let previousAltitude, let previousTimestamp {
        let interval = seconds - previousTimestamp
        if interval > 0 && interval <= 10 { fix.climb = (altitude - previousAltitude) / interval }
      }
      previousAltitude = altitude
      previousTimestamp = seconds
    } else if mode != .threeD {
      previousAltitude = nil
      previousTimestamp = nil
    }
  }

  mutating func markUsedSatellites() {
    guard !used.isEmpty else { return }
    for index in satellites.indices {
      let key = UsedKey(constellation: satellites[index].constellation, svid: satellites[index].svid)
      if usedFilter.mayContain(key.filterHash) && used.contains(key) {
        satellites[index].used = true
      }
    }
  }

  // MARK: - Merging sentences

  mutating func merge(_ sentence: Sentence) {
    switch sentence {
    case .gga(let gga):
      let valid = (gga.quality?.rawValue ?? 0) > 0
      notePositionValidity(valid)
      if valid {
        takePosition(gga.position, rank: 3)
        if let altitude = gga.altitudeMSL { fix.altitudeMSL = altitude }
        if let separation = gga.geoidSeparation { fix.geoidSeparation = separation }
        derivedMode = max(derivedMode ?? .noFix, gga.altitudeMSL != nil ? .threeD : .twoD)
      }
      if let quality = gga.quality { fix.quality = quality }
      if let used = gga.satellitesUsed { fix.satellitesUsed = used }
      if let hdop = gga.hdop { fix.hdop = hdop }
      if let age = gga.differentialAge { fix.differentialAge = age }
      if let station = gga.differentialStation { fix.differentialStation = station }

    case .rmc(let rmc):
      let valid = rmc.isValid != false && rmc.mode?.isValid != false
      notePositionValidity(valid)
      if let date = rmc.date { explicitDate = date }
      if valid {
        takePosition(rmc.position, rank: 2)
        derivedMode = max(derivedMode ?? .noFix, .twoD)
        if let knots = rmc.speedKnots { fix.speed = knots * Self.metresPerSecondPerKnot }
        if let course = rmc.course { fix.course = course }
      }
      if let variation = rmc.magneticVariation { fix.magneticVariation = variation }
      if let mode = rmc.mode { fix.modeIndicator = mode }

    case .gll(let gll):
      let valid = gll.isValid != false && gll.mode?.isValid != false
      notePositionValidity(valid)
      if valid {
        takePosition(gll.position, rank: 1)
        derivedMode = max(derivedMode ?? .noFix, .twoD)
      }
      if let mode = gll.mode, fix.modeIndicator == nil { fix.modeIndicator = mode }

    case .gns(let gns):
      let mode = gns.bestMode
      let valid = mode?.isValid ?? false
      notePositionValidity(valid)
      if valid {
        takePosition(gns.position, rank: 3)
        if let altitude = gns.altitudeMSL { fix.altitudeMSL = altitude }
        if let separation = gns.geoidSeparation { fix.geoidSeparation = separation }
        derivedMode = max(derivedMode ?? .noFix, gns.altitudeMSL != nil ? .threeD : .twoD)
      }
      if let mode, fix.modeIndicator == nil { fix.modeIndicator = mode }
      if let used = gns.satellitesUsed { fix.satellitesUsed = used }
      if let hdop = gns.hdop { fix.hdop = hdop }
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

    case .gsa(let gsa):
      sawGSA = true
      if let mode = gsa.fixMode { modeFromGSA = max(modeFromGSA ?? .noFix, mode) }
      if let pdop = gsa.pdop { fix.pdop = pdop; viewPDOP = pdop }
      if let hdop = gsa.hdop { fix.hdop = hdop; viewHDOP = hdop }
      if let vdop = gsa.vdop { fix.vdop = vdop; viewVDOP = vdop }
      for id in gsa.satellites {
        let identity = SatelliteNumbering.identify(
          id: Int(id), talker: gsa.talker, systemID: gsa.systemID)
        let key = UsedKey(constellation: identity.constellation, svid: identity.svid)
        if !usedFilter.mayContain(key.filterHash) || !used.contains(key) {
          used.append(key)
          usedFilter.insert(key.filterHash)
          usedFromGSA += 1
        }
      }

    case .gsv(let gsv):
      sawGSV = true
      for satellite in gsv {
        let identity = SatelliteNumbering.identify(id: satellite.id, talker: gsv.talker, systemID: nil)
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
      notePositionValidity(valid)
      if valid {
        takePosition(pubx.position, rank: 2)
        if let altitude = pubx.altitudeHAE { fix.reportedAltitudeHAE = altitude }
        let threeD = status == Self.pubx3D || status == Self.pubxDifferential3D
          || status == Self.pubxRTK
        derivedMode = max(derivedMode ?? .noFix, threeD ? .threeD : .twoD)
        if let kmh = pubx.speedKilometresPerHour { fix.speed = kmh / 3.6 }
        if let course = pubx.course { fix.course = course }
        if let down = pubx.verticalVelocityDown { fix.climb = -down }
      }
      if let h = pubx.horizontalAccuracy { fix.horizontalAccuracy = h }
      if let v = pubx.verticalAccuracy { fix.verticalAccuracy = v }
      if let hdop = pubx.hdop { fix.hdop = hdop }
      if let vdop = pubx.vdop { fix.vdop = vdop }
      if let tdop = pubx.tdop { fix.tdop = tdop }
      if let used = pubx.satellitesUsed { fix.satellitesUsed = used }

    case .pubxTime(let pubx):
      if let date = pubx.date { explicitDate = date }

    default:
      break
    }
  }

  mutating func notePositionValidity(_ valid: Bool) {
    positionValid = (positionValid ?? false) || valid
  }

  /// Positions from GGA and GNS (which carry altitude) win over RMC, RMC over GLL.
  mutating func takePosition(_ position: Position?, rank: Int) {
    guard let position, rank >= positionSourceRank else { return }
    fix.position = position
    positionSourceRank = rank
  }

  static let metresPerSecondPerKnot = 1852.0 / 3600.0
  static let pubxNoFix: UInt16 = 0x4E46  // NF
  static let pubxTimeOnly: UInt16 = 0x5454  // TT
  static let pubx3D: UInt16 = 0x4733  // G3
  static let pubxDifferential3D: UInt16 = 0x4433  // D3
  static let pubxRTK: UInt16 = 0x524B  // RK

  /// Whether the sentence type normally carries the time of a position.
  @inline(__always)
  static func normallyTimed(_ sentence: Sentence) -> Bool {
    switch sentence {
    case .gga, .rmc, .gll, .gns, .pubxPosition: return true
    default: return false
    }
  }

  /// Identifies a sentence's place in the cycle: kind, talker, and for GSV whether it is the
  /// last part, for GSA its system. `nil` for sentences that carry nothing for a fix.
  @inline(__always)
  static func cycleKey(_ sentence: Sentence) -> UInt32? {
    func key(_ kind: UInt32, _ talker: Talker, _ variant: UInt32 = 0) -> UInt32 {
      kind << 24 | UInt32(talker.rawValue) << 8 | variant
    }
    switch sentence {
    case .gga(let s): return key(1, s.talker)
    case .rmc(let s): return key(2, s.talker)
    case .gsa(let s): return key(3, s.talker, UInt32(s.systemID ?? 15) + 1)
    case .gsv(let s): return key(4, s.talker, s.messageNumber == s.messageCount ? 1 : 2)
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
    case .dtm, .txt, .mtkAcknowledgement, .mtkSystemMessage, .unknown: return nil
    }
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
