// The fix builder's state, grouped by how long it lives: the epoch in progress (until the
// epoch closes), the learning of the receiver's cycle, the dates held and carried, what one
// fix hands the next, and the receiver's settings (until changed).

/// What the sentences of the epoch in progress have said so far; cleared when it closes.
struct EpochInProgress {
  var fix = Fix()
  var time: UTCTime?
  /// The stream offset of the epoch's first sentence, when it came through a framer.
  var firstByteOffset: UInt64?
  var hasData = false
  /// Anything besides time, date and error statistics.
  var holdsFixData = false
  /// The time came from a ``CycleRole/position`` or ``CycleRole/untimed`` sentence's turn,
  /// not only from a ZDA, GST …
  var timedByFixSentence = false
  /// A ``CycleRole/position`` sentence (GGA, RMC, GLL, GNS, PUBX,00), valid or not.
  var holdsPositionSentence = false
  /// A position sentence said the receiver has no fix (GGA quality 0, RMC or GLL status `V`
  /// or mode `N`): the epoch is no fix, whatever the others say.
  var fixDenied = false
  /// An NMEA sentence joined the epoch (``Fix/fromBinaryMessagesOnly``).
  var sawSentence = false
  var explicitDate: UTCDate?
  var modeFromGSA: FixMode?
  /// The dimension GGA, GNS, PUBX,00 or PGRMZ state.
  var statedMode: FixMode?
  /// The mode gpsd gives the NMEA sentences so far, in their order (``noteNMEAMode``): the
  /// last sentence that sets one decides. `nil` before any.
  var nmeaMode: FixMode?
  var positionSource = PositionSource.none
  /// The sources of the altitude and of the speed and course, ranked as positions are.
  var altitudeSource = PositionSource.none
  var motionSource = PositionSource.none
  // Each error estimate's source (``AccuracySource``): latitude and longitude errors,
  // horizontal, vertical, spherical.
  var errorSource = AccuracySource.none
  var horizontalSource = AccuracySource.none
  var verticalSource = AccuracySource.none
  var sphericalSource = AccuracySource.none
  var usedFromGSA = 0
  var sawGSA = false
  /// `$PGRMZ`, metres: used when GGA gives none.
  var garminAltitude: Double?
  /// The receiver run time of the epoch's CASIC messages (``CASICMessage/add(to:emit:)``).
  var casicRunTime: UInt32?

  // Satellites.
  var satellites: [Satellite] = []
  /// The satellites the epoch's GSAs name as used.
  var used = UsedSet()
  /// A quick "certainly not" answer before the linear search of `satellites`.
  var satelliteFilter = KeyFilter()
  /// Which source the satellites are from (``SatelliteSource``); `.none` before any.
  var satelliteSource = SatelliteSource.none
  var viewHDOP: Double?
  var viewVDOP: Double?
  var viewPDOP: Double?
  /// NAV-DOP's dilutions, which the view carries beside GSA's.
  var viewDOP = BinaryDOP()

  /// How often each cycle key came in this epoch.
  var keyCounts = KeyCounts()

  init() { satellites.reserveCapacity(64) }

  /// Clears the epoch, keeping the buffers' capacity.
  mutating func reset() {
    fix = Fix()
    time = nil
    firstByteOffset = nil
    hasData = false
    holdsFixData = false
    timedByFixSentence = false
    holdsPositionSentence = false
    fixDenied = false
    sawSentence = false
    explicitDate = nil
    modeFromGSA = nil
    statedMode = nil
    nmeaMode = nil
    positionSource = .none
    altitudeSource = .none
    motionSource = .none
    errorSource = .none
    horizontalSource = .none
    verticalSource = .none
    sphericalSource = .none
    usedFromGSA = 0
    sawGSA = false
    garminAltitude = nil
    casicRunTime = nil
    satelliteSource = .none
    viewHDOP = nil
    viewVDOP = nil
    viewPDOP = nil
    viewDOP = BinaryDOP()
    satellites.removeAll(keepingCapacity: true)
    used.removeAll()
    satelliteFilter.removeAll()
    keyCounts.removeAll()
  }

  /// The position of `source`, unless a better source gave one (``PositionSource``).
  @inline(__always)
  mutating func takePosition(_ position: Position?, from source: PositionSource) {
    guard let position, source >= positionSource else { return }
    fix.position = position
    positionSource = source
  }

  /// The altitude above mean sea level with the geoid separation, or above the ellipsoid,
  /// of `source`, unless a better source gave one: all of a source's altitudes, or none.
  @inline(__always)
  mutating func takeAltitude(
    msl: Double? = nil, geoidSeparation: Double? = nil, hae: Double? = nil,
    from source: PositionSource
  ) {
    guard msl != nil || hae != nil || geoidSeparation != nil, source >= altitudeSource else {
      return
    }
    if let msl { fix.altitudeMSL = msl }
    if let geoidSeparation { fix.geoidSeparation = geoidSeparation }
    if let hae { fix.reportedAltitudeHAE = hae }
    altitudeSource = source
  }

  /// The speed and course over ground of `source`, each unless a better source gave it.
  @inline(__always)
  mutating func takeMotion(speed: Double?, course: Double?, from source: PositionSource) {
    guard source >= motionSource else { return }
    if let speed { fix.speed = speed }
    if let course { fix.course = course }
    if speed != nil || course != nil { motionSource = source }
  }

  /// Latitude and longitude errors (gpsd's `epy`, `epx`) with their root sum of squares as
  /// the horizontal accuracy, each unless a better source gave it (``AccuracySource``).
  mutating func takeErrors(
    latitude: Double?, longitude: Double?, vertical: Double?, from source: AccuracySource
  ) {
    if let latitude, let longitude, source >= errorSource {
      fix.latitudeError = latitude
      fix.longitudeError = longitude
      errorSource = source
      takeHorizontalAccuracy(
        (latitude * latitude + longitude * longitude).squareRoot(), from: source)
    }
    takeVerticalAccuracy(vertical, from: source)
  }

  @inline(__always)
  mutating func takeHorizontalAccuracy(_ value: Double?, from source: AccuracySource) {
    Self.take(value, from: source, into: &fix.horizontalAccuracy, ranked: &horizontalSource)
  }

  @inline(__always)
  mutating func takeVerticalAccuracy(_ value: Double?, from source: AccuracySource) {
    Self.take(value, from: source, into: &fix.verticalAccuracy, ranked: &verticalSource)
  }

  @inline(__always)
  mutating func takeSphericalAccuracy(_ value: Double?, from source: AccuracySource) {
    Self.take(value, from: source, into: &fix.sphericalAccuracy, ranked: &sphericalSource)
  }

  /// The ranking rule, once: `value` replaces what `slot` holds unless a better source gave
  /// that.
  @inline(__always)
  static func take(
    _ value: Double?, from source: AccuracySource, into slot: inout Double?,
    ranked rank: inout AccuracySource
  ) {
    guard let value, source >= rank else { return }
    slot = value
    rank = source
  }

  /// A dimension a sentence states; the highest stated wins.
  @inline(__always)
  mutating func state(_ mode: FixMode) { statedMode = max(statedMode ?? .noFix, mode) }

  /// A valid position with an altitude is 3D, unless the receiver says it used one to three
  /// satellites: so few can only give a 2D fix with the altitude held. (A count of 0 beside a
  /// valid fix is a receiver that does not count, not a statement.)
  mutating func noteStatedMode(altitude: Double?, satellitesUsed: Int?) {
    let holdsAltitude = satellitesUsed.map { (1...3).contains($0) } ?? false
    state(altitude != nil && !holdsAltitude ? .threeD : .twoD)
  }

  /// Whether satellites of `source` go into the epoch's list (``SatelliteSource``): a
  /// better source than the list's clears it first; a worse one is left out.
  @inline(__always)
  mutating func takeSatellites(from source: SatelliteSource) -> Bool {
    guard source >= satelliteSource else { return false }
    if source > satelliteSource {
      satellites.removeAll(keepingCapacity: true)
      satelliteFilter.removeAll()
      satelliteSource = source
    }
    return true
  }

  /// Adds a satellite to the list, or replaces the entry of the same satellite and signal
  /// (a resent GSV part); with `combining`, a second signal of a satellite (NAV-SIG) is
  /// folded into its entry: used if any signal is, the strongest C/N0.
  @inline(__always)
  mutating func addSatellite(_ entry: Satellite, combining: Bool = false) {
    let filterHash = entry.prn
    if satelliteFilter.mayContain(filterHash),
      let index = satellites.firstIndex(where: {
        $0.prn == entry.prn && $0.signalID == entry.signalID
          && $0.constellation == entry.constellation
      })
    {
      if combining {
        satellites[index].used = satellites[index].used || entry.used
        if let snr = entry.snr, snr > satellites[index].snr ?? -1 {
          satellites[index].snr = snr
        }
      } else {
        satellites[index] = entry
      }
    } else {
      satellites.append(entry)
      satelliteFilter.insert(filterHash)
    }
  }

  /// Marks the satellites GSA named as used; UBX lists say it themselves.
  mutating func markUsedSatellites() {
    guard !used.isEmpty, satelliteSource == .nmea else { return }
    for index in satellites.indices
    where used.contains(satellites[index].constellation, satellites[index].svid) {
      satellites[index].used = true
    }
  }
}

/// The dilutions of precision only UBX-NAV-DOP gives, for the satellite view.
struct BinaryDOP {
  var gdop: Double?
  var tdop: Double?
  var edop: Double?
  var ndop: Double?
  var hdop: Double?
  var vdop: Double?
  var pdop: Double?
  var isEmpty: Bool { gdop == nil && tdop == nil && hdop == nil && vdop == nil && pdop == nil }
}

/// Which sentence ends the receiver's cycle, as learned so far, and the epochs emitted last
/// (never two fixes for one time).
struct CycleLearning {
  var lastKey = CycleKey.none
  var candidateEnd: CycleKey?
  var learnedEnd: CycleKey?
  /// Keys seen followed by another within an epoch, while learning (used as a set).
  var followedKeys = KeyCounts()
  /// Whether the epoch had its time when `lastKey` was merged.
  var lastKeyTimed = false
  /// How the epoch emitted last was closed.
  var lastClosedByCycleEnd = false
  var lastEmittedTime: UTCTime?
  /// The times of the last epochs emitted (nanoseconds of the day; -1 unused), so that a
  /// late sentence never makes a second fix for a time.
  var recentTimes = InlineArray<8, Int64>(repeating: -1)
  var recentIndex = 0

  func wasEmittedRecently(_ time: UTCTime) -> Bool {
    let value = time.nanosecondsOfDay
    for index in 0..<recentTimes.count where recentTimes[index] == value { return true }
    return false
  }

  mutating func remember(_ time: UTCTime?, closedByCycleEnd: Bool) {
    lastEmittedTime = time
    lastClosedByCycleEnd = closedByCycleEnd
    if let time {
      recentTimes[recentIndex] = time.nanosecondsOfDay
      recentIndex = (recentIndex + 1) % recentTimes.count
    }
  }

  /// The learned end proved wrong (a sentence came for the epoch it closed): forget it, and
  /// never learn it again (it would lose data again).
  mutating func forget() {
    if let learnedEnd { followedKeys.increment(learnedEnd) }
    learnedEnd = nil
    candidateEnd = nil
    lastClosedByCycleEnd = false
  }

  /// The cycle's last sentence is the one before the time changes; trust it once it has been
  /// the last, and seen once only, in two cycles in a row.
  mutating func learn(endedBy key: CycleKey?, in epoch: EpochInProgress) {
    guard key == nil, learnedEnd == nil, epoch.time != nil else { return }
    guard epoch.keyCounts.count(of: lastKey) == 1, followedKeys.count(of: lastKey) == nil else {
      candidateEnd = nil
      return
    }
    if candidateEnd == lastKey {
      learnedEnd = lastKey
    } else {
      candidateEnd = lastKey
    }
  }
}

/// The date carried from the last dated epoch, and a fix held at the start of a stream until
/// the next epoch shows whether the receiver sends dates (``FixBuilder/deliver(_:emit:)``).
struct DateHolding {
  var carriedDate: UTCDate?
  var carriedDateTime: UTCTime?
  var heldEpoch: Epoch?
  var awaitingFirstDate = true

  /// Carries `date`, given at `time`.
  @inline(__always)
  mutating func carry(_ date: UTCDate, at time: UTCTime?) {
    carriedDate = date
    carriedDateTime = time
  }
}

/// What one fix hands the next: the altitude a climb is derived from, and the dimension an
/// epoch stating none keeps while the fix lasts.
struct FixContinuity {
  var previousAltitude: Double?
  /// Seconds of the day.
  var previousAltitudeTime: Double?
  var lastDimension: FixMode?
  /// Nanoseconds of the day.
  var lastDimensionTime: Int64 = 0
  /// The last epoch's fix had an altitude: an RMC or GLL that opens the next epoch sees it,
  /// as gpsd's fix still holds it then.
  var lastFixHadAltitude = false
  /// The satellites the last epoch with a GSA named as used (gpsd's `satellites_used`,
  /// kept until the next GSA).
  var satellitesUsedByGSA = 0
}

/// The receiver's settings, kept in every later fix until changed, whichever epoch their
/// sentence arrives in (``CycleRole/setting``).
struct ReceiverSettings {
  /// From `$PGRMM` or DTM.
  var datum: InlineText?
  /// The jamming indicator and the antenna's state and power of the last UBX MON-RF or
  /// MON-HW, as ``Fix`` stores them (``Int16/min`` and ``UInt8/max`` for none).
  var jammingIndicator = Int16.min
  var antennaStatus = UInt8.max
  var antennaPower = UInt8.max
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
  var keys = InlineArray<16, CycleKey>(repeating: .none)
  var counts = InlineArray<16, Int>(repeating: 0)
  var stored = 0
  var overflow: [CycleKey: Int] = [:]

  /// How often `key` was seen, `nil` if never.
  @inline(__always)
  func count(of key: CycleKey) -> Int? {
    for index in 0..<stored where keys[index] == key { return counts[index] }
    return overflow.isEmpty ? nil : overflow[key]
  }

  @inline(__always)
  mutating func increment(_ key: CycleKey) {
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

/// gpsd's mode for NMEA (driver_nmea0183.c; docs/conformance.md, "Mode"): each position or
/// GSA sentence sets the mode in turn, from what it says and what gpsd's fix holds so far,
/// and the last one of the epoch decides.
extension FixBuilder {
  /// GGA or GNS with a valid fix: 3D with an altitude and four or more satellites used;
  /// else it keeps a 3D it had, and is 2D. GGA with fewer than three (an empty count is
  /// none) is no fix; gpsd's GNS handler has no such test.
  mutating func noteNMEAMode(
    positionWithSatellites used: Int?, altitude: Double?, fewerThanThreeIsNoFix: Bool = true
  ) {
    let used = used ?? 0
    let mode: FixMode =
      fewerThanThreeIsNoFix && used < 3
      ? .noFix
      : (altitude != nil && used >= 4) || currentNMEAMode == .threeD ? .threeD : .twoD
    setNMEAMode(mode)
  }

  /// gpsd's mode before this sentence: the epoch's so far, else the last fix's.
  private var currentNMEAMode: FixMode? { epoch.nmeaMode ?? continuity.lastDimension }

  /// RMC or GLL with a valid position: 3D when the last GSA named four or more satellites or
  /// gpsd's fix has an altitude (this epoch's, or the last epoch's when nothing set a mode in
  /// this one yet); else RMC keeps a 3D it had, and is 2D.
  mutating func noteNMEAModeOfPositionOnly() {
    let hasAltitude =
      epoch.fix.altitudeMSL != nil || epoch.fix.reportedAltitudeHAE != nil
      || (epoch.nmeaMode == nil && continuity.lastFixHadAltitude)
    let promoted = hasAltitude || continuity.satellitesUsedByGSA > 3
    setNMEAMode(promoted || currentNMEAMode == .threeD ? .threeD : .twoD)
  }

  /// GSA: raises the mode to its fix type, never lowers it (the corpus' gpsd keeps a 3D
  /// past a GSA that says 2D; no capture has a GSA saying no fix after a valid position).
  mutating func noteNMEAMode(gsa mode: FixMode, satellitesUsed: Int) {
    setNMEAMode(max(currentNMEAMode ?? .noFix, mode))
    continuity.satellitesUsedByGSA = satellitesUsed
  }

  /// A dimension a sentence states outright (PGRMZ, PUBX,00), in its turn.
  mutating func noteNMEAMode(stated mode: FixMode) { setNMEAMode(mode) }

  /// A position sentence saying there is no fix.
  mutating func noteNMEANoFix() { setNMEAMode(.noFix) }

  private mutating func setNMEAMode(_ mode: FixMode) { epoch.nmeaMode = mode }
}
