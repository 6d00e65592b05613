/// The physical figures of one receiver that the simulator's physics (``ReceiverPhysics``)
/// runs on: times to first fix by kind of start, how long ephemeris takes to collect and how
/// long it stays valid, how the position error converges, and the supply current in each
/// state. Each preset cites its data sheet in docs/simulator.md ("Figures"); a test or a
/// benchmark may change any of them, and says so.
public struct ReceiverFigures: Sendable, Hashable, CustomStringConvertible {
  /// The module the figures are from, for people (`u-blox M8 (SAM-M8Q)`).
  public var name: String
  /// Time from power-on to the first fix with valid ephemeris, time and position kept.
  public var hotStart: Duration
  /// With time, position and almanac kept, ephemeris expired.
  public var warmStart: Duration
  /// With nothing kept (no backup power).
  public var coldStart: Duration
  /// A cold start given UTC time and a position (u-blox `UBX-MGA-INI-TIME_UTC` and
  /// `-POS_LLH`, MediaTek `$PMTK740`/`$PMTK741`) but no almanac and no ephemeris: no faster
  /// than a warm start, since the ephemeris must still be downloaded.
  public var aidedStart: Duration
  /// How long into a cold start the receiver first knows the time (decoded from the first
  /// satellite's hand-over word): no-fix epochs before it carry no time.
  public var timeDecodedAfter: Duration
  /// Continuous tracking needed to collect every tracked satellite's ephemeris.
  public var ephemerisCollection: Duration
  /// How long collected ephemeris allows a hot start.
  public var ephemerisValidity: Duration
  /// Horizontal error (metres, the radius that GST's latitude and longitude sigmas give) of
  /// the first fix of a start.
  public var firstFixError: Double
  /// Horizontal error once converged, as a radial RMS: 1.2 × a data sheet's CEP, or its
  /// 2-D RMS as it is.
  public var convergedError: Double
  /// The time constant of the error's convergence after a hot start, and after a warm,
  /// aided or cold one.
  public var hotConvergence: Duration
  public var coldConvergence: Duration
  /// Vertical error as a multiple of the horizontal one.
  public var verticalErrorRatio: Double
  /// Supply current by state, milliamperes.
  public var currents: Currents
  /// The supply voltage the currents are given at.
  public var supplyVolts: Double

  /// Supply current in each ``EnergyState``, milliamperes.
  public struct Currents: Sendable, Hashable {
    public var acquisition: Double
    public var tracking: Double
    /// Tracking in the chip's own power save mode (u-blox cyclic tracking at 1 Hz); `nil`
    /// where the chip has none this simulator models.
    public var powerSaveTracking: Double?
    /// MediaTek standby (`$PMTK161,0`).
    public var standby: Double
    /// Backup: MediaTek `$PMTK225,4`, u-blox `UBX-RXM-PMREQ`. For u-blox this is the data
    /// sheet's software backup current (drawn from VCC), not its hardware backup current
    /// (drawn from V_BCKP with VCC off, which the meter does not count).
    public var backup: Double
    /// u-blox controlled GNSS stop (`UBX-CFG-RST` 0x08): processor and interfaces on, RF off.
    public var gnssStopped: Double

    public init(
      acquisition: Double, tracking: Double, powerSaveTracking: Double? = nil, standby: Double,
      backup: Double, gnssStopped: Double
    ) {
      self.acquisition = acquisition
      self.tracking = tracking
      self.powerSaveTracking = powerSaveTracking
      self.standby = standby
      self.backup = backup
      self.gnssStopped = gnssStopped
    }

    /// The current in `state`, milliamperes.
    public func milliamperes(in state: EnergyState) -> Double {
      switch state {
      case .off: return 0
      case .acquisition: return acquisition
      case .tracking: return tracking
      case .powerSaveTracking: return powerSaveTracking ?? tracking
      case .standby: return standby
      case .backup: return backup
      case .gnssStopped: return gnssStopped
      }
    }
  }

  public init(
    name: String, hotStart: Duration, warmStart: Duration, coldStart: Duration,
    aidedStart: Duration, timeDecodedAfter: Duration = .seconds(6),
    ephemerisCollection: Duration = .seconds(30), ephemerisValidity: Duration = .seconds(4 * 3600),
    firstFixError: Double = 25, convergedError: Double, hotConvergence: Duration = .seconds(3),
    coldConvergence: Duration = .seconds(10), verticalErrorRatio: Double = 1.6,
    currents: Currents, supplyVolts: Double
  ) {
    self.name = name
    self.hotStart = hotStart
    self.warmStart = warmStart
    self.coldStart = coldStart
    self.aidedStart = aidedStart
    self.timeDecodedAfter = timeDecodedAfter
    self.ephemerisCollection = ephemerisCollection
    self.ephemerisValidity = ephemerisValidity
    self.firstFixError = firstFixError
    self.convergedError = convergedError
    self.hotConvergence = hotConvergence
    self.coldConvergence = coldConvergence
    self.verticalErrorRatio = verticalErrorRatio
    self.currents = currents
    self.supplyVolts = supplyVolts
  }

  public var description: String { name }

  /// The time to first fix of a start of `kind`.
  public func timeToFirstFix(_ kind: StartKind) -> Duration {
    switch kind {
    case .hot: return hotStart
    case .warm: return warmStart
    case .cold: return coldStart
    case .aided: return aidedStart
    }
  }

  /// The convergence time constant after a start of `kind`.
  public func convergence(after kind: StartKind) -> Duration {
    kind == .hot ? hotConvergence : coldConvergence
  }

  /// These figures with a different hot start and error convergence, for a receiver the
  /// presets do not describe (a benchmark's spread of receivers, `serialgps replay --hot-start`):
  /// each value given replaces the preset's, the others stay. The name says what changed, so
  /// that a report shows it.
  ///
  /// - Returns: `nil` when the values make no receiver: times not above zero, errors not
  ///   above zero, or a converged error not below the first fix's.
  public func adjusted(
    hotStart: Duration? = nil, firstFixError: Double? = nil, convergedError: Double? = nil,
    hotConvergence: Duration? = nil
  ) -> ReceiverFigures? {
    var figures = self
    var changes: [String] = []
    if let hotStart {
      figures.hotStart = hotStart
      changes.append("hot start \(PhysicsConfiguration.describe(hotStart))")
    }
    if let firstFixError {
      figures.firstFixError = firstFixError
      changes.append("first error \(ReceiverPhysics.number(firstFixError)) m")
    }
    if let convergedError {
      figures.convergedError = convergedError
      changes.append("converged \(ReceiverPhysics.number(convergedError)) m")
    }
    if let hotConvergence {
      figures.hotConvergence = hotConvergence
      changes.append("tau \(PhysicsConfiguration.describe(hotConvergence))")
    }
    guard figures.hotStart > .zero, figures.hotConvergence > .zero,
      figures.convergedError > 0, figures.convergedError < figures.firstFixError,
      figures.firstFixError.isFinite
    else { return nil }
    if !changes.isEmpty { figures.name += " [" + changes.joined(separator: ", ") + "]" }
    return figures
  }

  // MARK: - Presets (docs/simulator.md, "Figures", gives each source)

  /// GlobalTop PA6H / Quectel L80 (MediaTek MT3339), GPS only, 3.3 V. The times and the
  /// accuracy are the MT3339 figures of the LOCOSYS LS20031 data sheet (its 3 m is a 2-D RMS,
  /// used as it is); no warm figure, so warm is cold.
  public static let mediatekMT3339 = ReceiverFigures(
    name: "MediaTek MT3339 (GlobalTop PA6H)", hotStart: .seconds(1), warmStart: .seconds(32),
    coldStart: .seconds(32), aidedStart: .seconds(32), convergedError: 3.0,
    currents: Currents(
      acquisition: 25, tracking: 20, standby: 0.2, backup: 0.007, gnssStopped: 0.2),
    supplyVolts: 3.3)

  /// u-blox M8 (SAM-M8Q / NEO-M8N), GPS and GLONASS, 3.0 V.
  public static let ubloxM8 = ReceiverFigures(
    name: "u-blox M8 (SAM-M8Q)", hotStart: .seconds(1), warmStart: .seconds(26),
    coldStart: .seconds(26), aidedStart: .seconds(26), convergedError: 2.5 * 1.2,
    currents: Currents(
      acquisition: 32, tracking: 29, powerSaveTracking: 9.5, standby: 5, backup: 0.030,
      gnssStopped: 5),
    supplyVolts: 3.0)

  /// u-blox M9 (NEO-M9N), four GNSS, 3.0 V.
  public static let ubloxM9 = ReceiverFigures(
    name: "u-blox M9 (NEO-M9N)", hotStart: .seconds(2), warmStart: .seconds(24),
    coldStart: .seconds(24), aidedStart: .seconds(24), convergedError: 2.0 * 1.2,
    currents: Currents(
      acquisition: 36, tracking: 32, powerSaveTracking: 12, standby: 5, backup: 0.036,
      gnssStopped: 5),
    supplyVolts: 3.0)

  /// u-blox M10 (MAX-M10S), GPS, Galileo, GLONASS and BeiDou, 3.0 V.
  public static let ubloxM10 = ReceiverFigures(
    name: "u-blox M10 (MAX-M10S)", hotStart: .seconds(1), warmStart: .seconds(23),
    coldStart: .seconds(23), aidedStart: .seconds(23), convergedError: 1.5 * 1.2,
    currents: Currents(
      acquisition: 13, tracking: 10, powerSaveTracking: 4, standby: 5, backup: 0.032,
      gnssStopped: 5),
    supplyVolts: 3.0)
}

/// What kind of start a receiver makes, from what it kept.
public enum StartKind: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
  /// Ephemeris younger than its validity, time and position kept.
  case hot
  /// Time, position and almanac kept; ephemeris expired or never collected.
  case warm
  /// Nothing kept: the first start, or backup power lost.
  case cold
  /// A cold start given time and position by the host.
  case aided

  public var description: String { rawValue }
}

/// The states whose supply current the energy meter integrates.
public enum EnergyState: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
  /// No supply (unplugged, or power cut): nothing drawn from the supply.
  case off
  /// Powered and searching: from power-on (booting included) to the first fix.
  case acquisition
  /// Navigating after the first fix.
  case tracking
  /// Navigating in the chip's own power save mode.
  case powerSaveTracking
  /// MediaTek standby.
  case standby
  /// MediaTek backup, u-blox software backup, the sleep phase of a periodic backup mode.
  case backup
  /// u-blox controlled GNSS stop.
  case gnssStopped

  public var description: String { rawValue }
}
