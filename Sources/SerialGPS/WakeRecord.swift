import Chipsets
import NMEA
import POSIX

/// What the controller knows of the receiver's last sleep and wake, for planning the next
/// wake (``Chipsets/WakeContext``): since when it sleeps, and whether its last wake showed
/// that it had kept its backup power.
///
/// Two things judge a wake. First, a time of day in an epoch without a position that agrees
/// with UTC, within ``clockEvidenceBound`` of the wake's start, on a wake that did not tell
/// the receiver the time: its real-time clock ran through the sleep, so its backup power was
/// kept (a receiver that lost it cannot know the time that soon: it decodes it from the
/// first satellite's hand-over word, which comes every 6 s, after acquiring the satellite at
/// all). Else how long the receiver took from the start of the wake to its first fix: within
/// ``hotStartBound`` it had its ephemeris, so its backup power (a hot start); a wake that
/// reached no fix within that bound (slower, or none before the power-off) started warm or
/// cold, so the backup is taken as lost. A wake predicts the next one (a board that cuts the
/// receiver's supply does so at every sleep); a wrong "lost" costs a few aiding bytes that
/// the receiver ignores or refuses, a wrong "kept" a cold start it would have made anyway. A
/// lost connection (unplugged, supply cut) leaves it unknown, as on a first start.
///
/// A value inside ``ReceiverMachine``.
struct WakeRecord {
  /// The longest first fix of a hot start: 1–2 s in the data sheets (u-blox M8, M9, F9;
  /// MediaTek MT3339), where warm and cold starts take 25 s and more (docs/simulator.md,
  /// "Figures"); 10 s leaves a hot start under a poor sky its margin.
  static let hotStartBound: Duration = .seconds(10)
  /// How soon after the wake's start a time that agrees with UTC shows a running real-time
  /// clock: sooner than a receiver without one could decode a time from the sky (a 6-s
  /// subframe after its first satellite is acquired; IS-GPS-200). The wake's own commands
  /// come out of it first, so the receiver has had less time still.
  static let clockEvidenceBound: Duration = .seconds(3)
  /// How far a receiver's time of day may be from UTC and still agree: epochs are dated to
  /// the second or better; a receiver whose clock was lost reads hours or days off (or a
  /// sentinel such as 00:00:00 counted from its boot).
  static let clockAgreement: Duration = .seconds(2)

  /// When the driver last put the receiver to sleep with its commands; `nil` before its
  /// first wake and after a lost connection.
  private(set) var asleepSince: DriverInstant?
  /// Whether the last wake showed the backup kept; `nil`: not known.
  private(set) var keptBackup: Bool?
  /// When the wake under way began, until its judgement.
  private var wakeBegan: DriverInstant?
  /// Whether the wake under way told the receiver the time: its time then proves nothing.
  private var toldTheTime = false

  /// How long the receiver has slept at `now`; `nil` when not known.
  func slept(at now: DriverInstant) -> Duration? { asleepSince.map { now - $0 } }

  mutating func wakeBegins(at now: DriverInstant) {
    wakeBegan = now
    toldTheTime = false
  }

  /// The wake under way tells the receiver the time (aiding).
  mutating func tellsTheTime() {
    toldTheTime = true
  }

  /// A fix arrived at `arrival`: the wake under way is judged by its first.
  mutating func fixArrived(at arrival: DriverInstant) {
    guard let began = wakeBegan else { return }
    wakeBegan = nil
    keptBackup = arrival - began <= Self.hotStartBound
  }

  /// An epoch without a position, dated `time`, arrived at `arrival`; UTC is `utc` at `now`.
  /// A time that agrees with UTC as it was at the arrival, soon enough in a wake that did not
  /// tell it, judges the wake as one that kept its backup.
  mutating func timeHeard(
    _ time: UTCTime, at arrival: DriverInstant, utc: UTCTimestamp, now: DriverInstant
  ) {
    guard let began = wakeBegan, !toldTheTime, arrival - began <= Self.clockEvidenceBound,
      Self.agrees(time, with: utc, before: max(.zero, now - arrival))
    else { return }
    wakeBegan = nil
    keptBackup = true
  }

  /// Whether a time of day is within ``clockAgreement`` of `utc`'s as it was `lag` earlier,
  /// across midnight too.
  static func agrees(_ time: UTCTime, with utc: UTCTimestamp, before lag: Duration = .zero)
    -> Bool
  {
    let day: Int64 = 86_400_000_000_000
    let then = utc.time.nanosecondsOfDay - Int64(lag / .nanoseconds(1)) % day
    let difference = ((time.nanosecondsOfDay - then) % day + day) % day
    let apart = min(difference, day - difference)
    return apart <= Int64(clockAgreement / .nanoseconds(1))
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
