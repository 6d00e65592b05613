import Glibc
import NMEA

/// How a simulated receiver's physics is set up: the chip's figures, the time scale, the
/// seed of its errors, whether a backup battery keeps its memory, and what it knows at the
/// start.
public struct PhysicsConfiguration: Sendable, Hashable, CustomStringConvertible {
  /// The chip's figures (times to first fix, currents, …). Change one and say so.
  public var figures: ReceiverFigures
  /// How many times faster than the data sheet the receiver's own timings run: every time
  /// of the physics (times to first fix, convergence, ephemeris collection and validity,
  /// time decoding) is divided by it. 1 is the data sheet. Commands carry their own times
  /// (a `UBX-RXM-PMREQ` duration, `$PMTK225` periods) and the recording its pace; neither is
  /// scaled. The energy meter integrates the times it is given.
  public var timeScale: Double
  /// The seed of the position errors: the same seed and the same inputs give the same bytes.
  public var seed: UInt64
  /// Whether a backup supply (a coin cell on V_BCKP) keeps time, almanac, ephemeris and the
  /// last position while the main supply is cut; without it every power-up is a cold start.
  public var backupPower: Bool
  /// What the receiver knows when the simulation starts.
  public var initialKnowledge: InitialKnowledge
  /// The UTC time at the model's time zero; `nil`: the recording's first time and date.
  public var utcAtStart: UTCTimestamp?

  /// What the receiver kept from before the simulation starts.
  public enum InitialKnowledge: Sendable, Hashable {
    /// Nothing: a new receiver, or one that lost its backup power. The first start is cold.
    case nothing
    /// Time, position and almanac, no usable ephemeris: the first start is warm.
    case almanac
    /// Everything, with ephemeris collected `age` ago (in the receiver's own time): hot while
    /// that is within the validity.
    case ephemeris(age: Duration)
  }

  public init(
    figures: ReceiverFigures, timeScale: Double = 1, seed: UInt64 = 1, backupPower: Bool = true,
    initialKnowledge: InitialKnowledge = .ephemeris(age: .zero), utcAtStart: UTCTimestamp? = nil
  ) {
    self.figures = figures
    self.timeScale = timeScale > 0 && timeScale.isFinite ? timeScale : 1
    self.seed = seed
    self.backupPower = backupPower
    self.initialKnowledge = initialKnowledge
    self.utcAtStart = utcAtStart
  }

  /// The physics of `profile`'s chip with the data sheet's figures; `nil` for a chip whose
  /// physics is not modelled (SiRF, generic).
  public static func dataSheet(for profile: ReceiverProfile) -> PhysicsConfiguration? {
    profile.figures.map { PhysicsConfiguration(figures: $0) }
  }

  /// A duration of the receiver's own time, on the model's time line.
  public func scaled(_ duration: Duration) -> Duration {
    timeScale == 1 ? duration : duration / timeScale
  }

  /// One line for people: the chip, the scale and what it makes of the main figures.
  public var description: String {
    var text = "\(figures.name)"
    let validity = figures.ephemerisValidity
    if timeScale != 1 {
      text +=
        ", timings ×\(formatFixed(timeScale, decimals: timeScale.rounded() == timeScale ? 0 : 2))"
        + " faster than the data sheet"
    }
    text += " (hot start \(Self.describe(scaled(figures.hotStart)))"
    text += ", cold \(Self.describe(scaled(figures.coldStart)))"
    text += ", ephemeris valid \(Self.describe(scaled(validity)))"
    if validity != ReceiverFigures.dataSheetValidity { text += " (data sheet: 4 h)" }
    text += backupPower ? ", backup battery" : ", no backup battery"
    return text + ")"
  }

  static func describe(_ duration: Duration) -> String {
    let seconds = duration.seconds
    if seconds >= 3600 {
      return formatFixed(
        seconds / 3600, decimals: seconds.truncatingRemainder(dividingBy: 3600) == 0 ? 0 : 2) + " h"
    }
    if seconds >= 60 {
      return formatFixed(
        seconds / 60, decimals: seconds.truncatingRemainder(dividingBy: 60) == 0 ? 0 : 1) + " min"
    }
    return formatFixed(seconds, decimals: seconds.rounded() == seconds ? 0 : 2) + " s"
  }
}

extension ReceiverFigures {
  /// Ephemeris validity as the data sheets and integration manuals give it (4 h).
  public static let dataSheetValidity: Duration = .seconds(4 * 3600)
}

/// One start of a simulated receiver: from power-on (or GNSS start) to its first fix.
public struct StartRecord: Sendable, Hashable, CustomStringConvertible {
  /// What the receiver kept, and so how long the start takes.
  public internal(set) var kind: StartKind
  /// When it began (the wake, the power-up, the GNSS start).
  public let began: Duration
  /// When the model lets the first fix come: the first epoch at or after it carries it.
  public internal(set) var fixDue: Duration
  /// The epoch that carried the first fix; `nil` while acquiring, or when the receiver was
  /// stopped before.
  public internal(set) var firstFix: Duration?
  /// When the start ended without a fix (the receiver was put to sleep or lost power).
  public internal(set) var abandoned: Duration?

  /// From the start to its first fix.
  public var timeToFirstFix: Duration? { firstFix.map { $0 - began } }

  public var description: String {
    let result =
      timeToFirstFix.map { "first fix after \(PhysicsConfiguration.describe($0))" }
      ?? (abandoned != nil ? "stopped before a fix" : "acquiring")
    return "\(kind) start at \(PhysicsConfiguration.describe(began)): \(result)"
  }
}

/// Aiding a simulated receiver was given, decoded, with when it arrived.
public struct AidingReceived: Sendable, Hashable, CustomStringConvertible {
  public enum Content: Sendable, Hashable {
    /// UTC time (`UBX-MGA-INI-TIME_UTC`, `$PMTK740`), with its accuracy where the message
    /// carries one.
    case time(UTCTimestamp, accuracySeconds: Double?)
    /// A position (`UBX-MGA-INI-POS_LLH`, `$PMTK741`), degrees and metres.
    case position(latitude: Double, longitude: Double, altitude: Double?, accuracyMetres: Double?)
  }

  /// Where the receiver was in its start when the aiding arrived.
  public enum Phase: String, Sendable, Hashable {
    /// Not searching: GNSS stopped, or before the first start.
    case beforeAcquisition
    /// Searching, before the first fix.
    case duringAcquisition
    /// After the first fix: too late to help.
    case whileTracking
  }

  public let content: Content
  /// When it arrived, on the model's time line.
  public let at: Duration
  /// The simulator's UTC when it arrived, to compare with the time given.
  public let utcThen: UTCTimestamp
  public let phase: Phase
  /// Whether the receiver could use it: time within 10 s of its UTC, a position within
  /// 300 km of where it is.
  public let usable: Bool

  public var description: String {
    switch content {
    case .time(let utc, _):
      return "time \(utc) at \(PhysicsConfiguration.describe(at)) (\(phase.rawValue))"
    case .position(let latitude, let longitude, _, _):
      return "position \(latitude), \(longitude) at \(PhysicsConfiguration.describe(at)) "
        + "(\(phase.rawValue))"
    }
  }
}

/// The physics of a simulated receiver as a state machine, driven by ``ReceiverModel``:
/// which kind of start a wake makes and when its first fix comes, the epochs without a fix
/// before it (with the time only while the receiver knows it), the position error after it
/// (shrinking from ``ReceiverFigures/firstFixError`` to ``ReceiverFigures/convergedError``,
/// carried by the positions and reported in GST), the ephemeris collected by continuous
/// tracking and ageing while asleep, aiding, and the charge drawn in each state.
///
/// Pure: times are the model's, as plain values; the errors come from a seeded generator, so
/// the same inputs at the same times give the same bytes. See docs/simulator.md.
public struct ReceiverPhysics: Sendable {
  public let configuration: PhysicsConfiguration
  public var figures: ReceiverFigures { configuration.figures }
  /// The charge meter.
  public private(set) var meter: EnergyMeter
  /// Every start so far (the newest ``historyLimit``).
  public private(set) var starts: [StartRecord] = []
  /// Aiding received so far (the newest ``historyLimit``).
  public private(set) var aiding: [AidingReceived] = []
  /// Whether the backup supply is there (``PhysicsConfiguration/backupPower`` until changed).
  public private(set) var backupPowered: Bool
  /// Whether the receiver knows the time (its RTC runs), and its position and almanac.
  public private(set) var knowsTime: Bool
  public private(set) var knowsPosition: Bool
  /// When the receiver last held freshly collected ephemeris; `nil`: none.
  public private(set) var ephemerisCollectedAt: Duration?
  /// Whether the chip tracks in its own power save mode (u-blox cyclic tracking).
  public internal(set) var powerSave = false {
    didSet { meter.enter(energyState, at: meter.since) }
  }

  public static let historyLimit = 1000

  private enum Phase: Sendable {
    case notNavigating
    case acquiring(timeKnownAt: Duration)
    case tracking(since: Duration)
  }
  private var phase = Phase.notNavigating
  private var power: SimulatedPowerState
  private var timeAidAt: Duration?
  private var positionAidAt: Duration?
  private let utcOrigin: UTCTimestamp
  private let epochInterval: Duration
  private var random: SplitMix64
  private var unitError: (north: Double, east: Double, up: Double) = (0, 0, 0)
  private var lastErrorAt: Duration?
  /// The recording's own position at the last fix epoch, degrees.
  private var truePosition: (latitude: Double, longitude: Double)?

  /// - Parameters:
  ///   - recordingStart: the recording's first UTC time, used when the configuration gives
  ///     none.
  ///   - epochInterval: the recording's epoch interval; epoch times are rounded to it.
  public init(
    configuration: PhysicsConfiguration, power: SimulatedPowerState, at start: Duration = .zero,
    recordingStart: UTCTimestamp? = nil, epochInterval: Duration = .seconds(1)
  ) {
    self.configuration = configuration
    self.power = power
    backupPowered = configuration.backupPower
    utcOrigin =
      configuration.utcAtStart ?? recordingStart
      ?? UTCTimestamp(
        date: UTCDate(year: 2026, month: 1, day: 1), time: UTCTime(hour: 0, minute: 0, second: 0))
    self.epochInterval = epochInterval > .zero ? epochInterval : .seconds(1)
    random = SplitMix64(seed: configuration.seed)
    switch configuration.initialKnowledge {
    case .nothing:
      knowsTime = false
      knowsPosition = false
    case .almanac:
      knowsTime = true
      knowsPosition = true
    case .ephemeris(let age):
      knowsTime = true
      knowsPosition = true
      ephemerisCollectedAt = start - configuration.scaled(age)
    }
    meter = EnergyMeter(currents: configuration.figures.currents, state: .off, at: start)
    if Self.isNavigating(power) { beginStart(at: start) }
    meter.restart(in: energyState)
  }

  // MARK: - Reading

  /// The simulator's UTC at `now`: the origin plus the time since, in the receiver's time.
  public func utc(at now: Duration) -> UTCTimestamp {
    utcOrigin.adding(now * configuration.timeScale)
  }

  /// The meter read at `now`.
  public func energy(at now: Duration) -> EnergyReport { meter.report(at: now) }

  /// The start under way or the last one.
  public var lastStart: StartRecord? { starts.last }

  /// Whether the receiver has a fix now (its current start reached its first fix).
  public var hasFix: Bool {
    if case .tracking = phase { return true }
    return false
  }

  /// The kind of start a wake at `now` would make, from what the receiver keeps.
  public func startKind(at now: Duration) -> StartKind {
    if knowsTime && knowsPosition {
      if let collected = ephemerisCollectedAt,
        now - collected < configuration.scaled(figures.ephemerisValidity)
      {
        return .hot
      }
      return .warm
    }
    if timeAidAt != nil && positionAidAt != nil { return .aided }
    return .cold
  }

  /// The error the receiver reports, and its positions carry, at `now` (horizontal, metres,
  /// radial RMS); `nil` without a fix.
  public func horizontalError(at now: Duration) -> Double? {
    guard case .tracking(let since) = phase, let kind = starts.last?.kind else { return nil }
    let tau = configuration.scaled(figures.convergence(after: kind)).seconds
    let t = max(0, (now - since).seconds)
    let decay = tau > 0 ? exp(-t / tau) : 0
    return figures.convergedError + (figures.firstFixError - figures.convergedError) * decay
  }

  // MARK: - Events from the model

  /// The chip's power state changed.
  mutating func powerChanged(to new: SimulatedPowerState, at now: Duration) {
    let was = Self.isNavigating(power)
    power = new
    let isOn = Self.isNavigating(new)
    // Every boot (a wake, a reset, a power-up) begins a start, as does a GNSS start.
    if was && (!isOn || new == .booting) { stopNavigating(at: now) }
    if isOn && (!was || new == .booting) { beginStart(at: now) }
    meter.enter(energyState, at: now)
  }

  /// A reset that clears part of what the receiver keeps (`UBX-CFG-RST` with a BBR mask,
  /// `$PMTK102`–`104`).
  mutating func clear(ephemeris: Bool, almanacAndPosition: Bool, time: Bool) {
    if ephemeris { ephemerisCollectedAt = nil }
    if almanacAndPosition { knowsPosition = false }
    if time { knowsTime = false }
  }

  /// The main supply was cut (unplugged, power cycle): without backup power everything the
  /// receiver knew is lost.
  mutating func lostMainPower(at now: Duration) {
    guard !backupPowered else { return }
    forget()
  }

  /// The backup supply is connected or removed. Removing it while the main supply is off
  /// (``SimulatedPowerState/off``) loses what the receiver knew at once; while powered, the
  /// loss shows at the next power cut.
  mutating func setBackupPower(_ on: Bool, at now: Duration) {
    backupPowered = on
    if !on, power == .off { forget() }
  }

  private mutating func forget() {
    knowsTime = false
    knowsPosition = false
    ephemerisCollectedAt = nil
    timeAidAt = nil
    positionAidAt = nil
  }

  /// Aiding arrived at `now`.
  mutating func receive(_ content: AidingReceived.Content, at now: Duration) {
    let utcNow = utc(at: now)
    var usable: Bool
    switch content {
    case .time(let given, _):
      let difference =
        Double(given.secondsSinceUnixEpoch - utcNow.secondsSinceUnixEpoch)
        + (Double(given.time.nanoseconds) - Double(utcNow.time.nanoseconds)) / 1e9
      usable = abs(difference) <= 10
    case .position(let latitude, let longitude, _, _):
      usable = (-90...90).contains(latitude) && (-180...180).contains(longitude)
      if usable, let truth = truePosition {
        usable = Self.distance(latitude, longitude, truth.latitude, truth.longitude) <= 300_000
      }
    }
    let phaseNow: AidingReceived.Phase
    switch phase {
    case .notNavigating: phaseNow = .beforeAcquisition
    case .acquiring: phaseNow = .duringAcquisition
    case .tracking: phaseNow = .whileTracking
    }
    aiding.append(
      AidingReceived(content: content, at: now, utcThen: utcNow, phase: phaseNow, usable: usable))
    if aiding.count > Self.historyLimit { aiding.removeFirst(aiding.count - Self.historyLimit) }
    guard usable else { return }
    switch content {
    case .time: timeAidAt = now
    case .position: positionAidAt = now
    }
    // A cold start under way uses aiding as it arrives: the aided start counts from the
    // later of the two messages.
    if case .acquiring = phase, let index = starts.indices.last, starts[index].kind == .cold,
      let time = timeAidAt, let position = positionAidAt
    {
      let due = max(time, position) + configuration.scaled(figures.aidedStart)
      if due < starts[index].fixDue {
        starts[index].fixDue = due
        starts[index].kind = .aided
      }
    }
  }

  // MARK: - Epochs

  /// The epoch the receiver sends at `now`, made from the recording's `burst`: without a
  /// fix (and without time while the receiver does not know it) while acquiring; with the
  /// modelled error and its estimate after the first fix.
  mutating func render(
    _ burst: ArraySlice<UInt8>, at now: Duration, style: EpochStyle, addsErrorEstimate: Bool
  ) -> [UInt8] {
    advanceKnowledge(to: now)
    var context = EpochContext(style: style)
    let utcNow = utc(at: now).rounded(to: epochInterval)
    switch phase {
    case .tracking:
      context.utc = utcNow
      guard let sigma = horizontalError(at: now) else { break }
      updateUnitError(at: now)
      let axis = sigma / 2.0.squareRoot()
      context.fix = FixOffsets(
        north: axis * unitError.north, east: axis * unitError.east,
        up: figures.verticalErrorRatio * axis * unitError.up)
      context.errorEstimate = (axis, figures.verticalErrorRatio * axis)
      context.addsErrorEstimate = addsErrorEstimate
    case .acquiring(let timeKnownAt):
      if knowsTime || now >= timeKnownAt { context.utc = utcNow }
    case .notNavigating:
      break
    }
    let rendered = EpochRewriter.render(burst, context)
    if let position = rendered.truePosition { truePosition = position }
    return rendered.bytes
  }

  /// The first fix comes when it is due; ephemeris is collected by tracking long enough.
  private mutating func advanceKnowledge(to now: Duration) {
    switch phase {
    case .acquiring:
      guard let index = starts.indices.last, now >= starts[index].fixDue else { return }
      starts[index].firstFix = now
      phase = .tracking(since: now)
      knowsTime = true
      knowsPosition = true
      timeAidAt = nil
      positionAidAt = nil
      lastErrorAt = nil
      meter.enter(energyState, at: now)
    case .tracking(let since):
      if now - since >= configuration.scaled(figures.ephemerisCollection) {
        ephemerisCollectedAt = now
      }
    case .notNavigating:
      break
    }
  }

  private mutating func beginStart(at now: Duration) {
    let kind = startKind(at: now)
    let due = now + configuration.scaled(figures.timeToFirstFix(kind))
    starts.append(StartRecord(kind: kind, began: now, fixDue: due))
    if starts.count > Self.historyLimit { starts.removeFirst(starts.count - Self.historyLimit) }
    let timeKnownAt =
      knowsTime || kind == .aided
      ? now : min(due, now + configuration.scaled(figures.timeDecodedAfter))
    phase = .acquiring(timeKnownAt: timeKnownAt)
  }

  private mutating func stopNavigating(at now: Duration) {
    switch phase {
    case .tracking(let since):
      if now - since >= configuration.scaled(figures.ephemerisCollection) {
        ephemerisCollectedAt = now
      }
    case .acquiring:
      if let index = starts.indices.last { starts[index].abandoned = now }
    case .notNavigating:
      break
    }
    phase = .notNavigating
  }

  private var energyState: EnergyState {
    switch power {
    case .off: return .off
    case .booting: return .acquisition
    case .running:
      if case .tracking = phase { return powerSave ? .powerSaveTracking : .tracking }
      return .acquisition
    case .gnssStopped: return .gnssStopped
    case .standby: return .standby
    case .backup, .hibernate: return .backup
    }
  }

  private static func isNavigating(_ power: SimulatedPowerState) -> Bool {
    power == .running || power == .booting
  }

  // MARK: Errors

  /// A first-order Gauss–Markov process per axis (unit variance, correlated over 5 s of the
  /// receiver's time): the error wanders as multipath and atmosphere change, rather than
  /// jumping each epoch.
  private mutating func updateUnitError(at now: Duration) {
    guard let last = lastErrorAt else {
      unitError = (random.normal(), random.normal(), random.normal())
      lastErrorAt = now
      return
    }
    let step = max(0, (now - last).seconds)
    let correlation = configuration.scaled(.seconds(5)).seconds
    let rho = exp(-step / correlation)
    let keep = (1 - rho * rho).squareRoot()
    unitError = (
      rho * unitError.north + keep * random.normal(),
      rho * unitError.east + keep * random.normal(),
      rho * unitError.up + keep * random.normal()
    )
    lastErrorAt = now
  }

  /// Great-circle distance, metres.
  static func distance(_ lat1: Double, _ lon1: Double, _ lat2: Double, _ lon2: Double) -> Double {
    let radians = Double.pi / 180
    let dLat = (lat2 - lat1) * radians
    let dLon = (lon2 - lon1) * radians
    let a =
      sin(dLat / 2) * sin(dLat / 2) + cos(lat1 * radians) * cos(lat2 * radians) * sin(dLon / 2)
      * sin(dLon / 2)
    return 2 * 6_371_000 * asin(min(1, a.squareRoot()))
  }
}

/// A small, fast, seedable generator (SplitMix64): the same seed gives the same sequence on
/// every platform. Tests that need a seeded `RandomNumberGenerator` use it too.
package struct SplitMix64: RandomNumberGenerator, Sendable {
  private var state: UInt64

  package init(seed: UInt64) { state = seed }

  package mutating func next() -> UInt64 {
    state &+= 0x9E37_79B9_7F4A_7C15
    var z = state
    z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
    z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
    return z ^ (z >> 31)
  }

  /// Uniform in (0, 1).
  mutating func uniform() -> Double {
    (Double(next() >> 11) + 0.5) / Double(1 << 53)
  }

  /// Standard normal (Box–Muller).
  mutating func normal() -> Double {
    (-2 * log(uniform())).squareRoot() * cos(2 * Double.pi * uniform())
  }
}

extension UTCTimestamp {
  /// This time plus `duration` (which may be negative).
  func adding(_ duration: Duration) -> UTCTimestamp {
    let (seconds, attoseconds) = duration.components
    var nanoseconds = Int64(time.nanoseconds) + attoseconds / 1_000_000_000
    var whole = secondsSinceUnixEpoch + seconds
    whole +=
      nanoseconds >= 0 ? nanoseconds / 1_000_000_000 : (nanoseconds - 999_999_999) / 1_000_000_000
    nanoseconds = ((nanoseconds % 1_000_000_000) + 1_000_000_000) % 1_000_000_000
    return UTCTimestamp(secondsSinceUnixEpoch: whole, nanoseconds: UInt32(nanoseconds))
  }

  /// Rounded to the nearest multiple of `interval` within the day (epochs fall on whole
  /// seconds, or tenths at 10 Hz).
  func rounded(to interval: Duration) -> UTCTimestamp {
    let step = max(
      1,
      interval.components.seconds * 1_000_000_000 + interval.components.attoseconds / 1_000_000_000)
    let nanos = Int64(time.nanoseconds) + (secondsSinceUnixEpoch % 86_400) * 1_000_000_000
    let rounded = (nanos + step / 2) / step * step
    let dayStart = secondsSinceUnixEpoch - secondsSinceUnixEpoch % 86_400
    return UTCTimestamp(
      secondsSinceUnixEpoch: dayStart + rounded / 1_000_000_000,
      nanoseconds: UInt32(rounded % 1_000_000_000))
  }
}
