import Chipsets
import NMEA
import POSIX

/// What the controller knows of the receiver's last sleep and wake, for planning the next
/// wake (``Chipsets/WakeContext``): since when it sleeps, and whether its last wake showed
/// that it had kept its backup power.
///
/// The judgement is small and uses one thing: how long the receiver took from the start of
/// the wake to its first fix. Within ``hotStartBound`` it had its ephemeris, so its backup
/// power (a hot start); a wake that reached no fix within that bound (slower, or none before
/// the power-off) started warm or cold, so the backup is taken as lost. A wake predicts the
/// next one (a board that cuts the receiver's supply does so at every sleep); a wrong "lost"
/// costs a few aiding bytes that the receiver ignores or refuses, a wrong "kept" a cold start
/// it would have made anyway. A lost connection (unplugged, supply cut) leaves it unknown,
/// as on a first start.
///
/// Owned by the controller's task (a value inside ``ReceiverController``).
struct WakeRecord {
  /// The longest first fix of a hot start: 1–2 s in the data sheets (u-blox M8, M9, F9;
  /// MediaTek MT3339), where warm and cold starts take 25 s and more (docs/simulator.md,
  /// "Figures"); 10 s leaves a hot start under a poor sky its margin.
  static let hotStartBound: Duration = .seconds(10)

  /// When the driver last put the receiver to sleep with its commands; `nil` before its
  /// first wake and after a lost connection.
  private(set) var asleepSince: DriverInstant?
  /// Whether the last wake showed the backup kept; `nil`: not known.
  private(set) var keptBackup: Bool?
  /// When the wake under way began, until its judgement.
  private var wakeBegan: DriverInstant?

  /// How long the receiver has slept at `now`; `nil` when not known.
  func slept(at now: DriverInstant) -> Duration? { asleepSince.map { now - $0 } }

  mutating func wakeBegins(at now: DriverInstant) {
    wakeBegan = now
  }

  /// A fix arrived at `arrival`: the wake under way is judged by its first.
  mutating func fixArrived(at arrival: DriverInstant) {
    guard let began = wakeBegan else { return }
    wakeBegan = nil
    keptBackup = arrival - began <= Self.hotStartBound
  }

  /// The receiver was put to sleep (`commanded`) or its connection closed after a loss.
  mutating func poweredOff(at now: DriverInstant, commanded: Bool) {
    if let began = wakeBegan, now - began > Self.hotStartBound { keptBackup = false }
    wakeBegan = nil
    asleepSince = commanded ? now : nil
    if !commanded { keptBackup = nil }
  }
}

extension GPSReceiver.Options {
  /// UTC now from ``wallClock``; `nil` for a clock before 1970.
  func utcNow() -> UTCTimestamp? {
    let (seconds, nanoseconds) = wallClock.now().secondsAndNanoseconds
    guard seconds >= 0 else { return nil }
    return UTCTimestamp(secondsSinceUnixEpoch: seconds, nanoseconds: UInt32(nanoseconds))
  }
}

extension KnownPosition {
  /// What HDOP scales into a horizontal error when the receiver gives no estimate of its
  /// own: gpsd's `H_UERE_NO_DGPS`, 15 m (95 %), as gpsd makes its `eph`.
  static let horizontalUERE = 15.0

  /// The position of `fix` for aiding: ``init(_:)``, or with an accuracy from its HDOP when
  /// the receiver sent no estimate (no GST).
  init?(aidingFrom fix: Fix) {
    if let known = KnownPosition(fix) {
      self = known
      return
    }
    guard let position = fix.position, let hdop = fix.hdop, let time = fix.timestamp else {
      return nil
    }
    self.init(
      latitude: position.latitude.decimalDegrees, longitude: position.longitude.decimalDegrees,
      heightAboveEllipsoid: fix.altitudeHAE, altitudeMSL: fix.altitudeMSL,
      accuracy: hdop * Self.horizontalUERE, time: time)
  }
}
