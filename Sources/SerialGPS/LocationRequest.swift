import Glibc
import NMEA

/// What one consumer wants of the receiver: how often a fix, how good, and whether it may
/// power the receiver at all. Every active request is merged by the driver's scheduler
/// (docs/requests.md), which powers the receiver for exactly the demand that exists.
///
/// ```swift
/// // One fix of 20 m or better a minute; the receiver sleeps in between.
/// for await event in try receiver.subscribe(LocationRequest(interval: .seconds(60), accuracy: 20)) {
///   if case .fix(let update) = event { print(update.fix.horizontalAccuracy ?? -1) }
/// }
/// ```
public struct LocationRequest: Sendable, Hashable {
  /// The time between fixes; `nil`: every fix the receiver makes (it stays powered, as for
  /// ``GPSReceiver/subscribe(bufferSize:includingLateFixes:)``). The first fix comes as soon
  /// as there is one; each next is due `interval` after the one before, and comes within half
  /// a second of that (a quarter of a shorter interval), or up to half the interval early when
  /// another request's wake provides it.
  public var interval: Duration?
  /// The horizontal error, in metres, a fix must reach to count for this request
  /// (``Fix/horizontalAccuracy``); `nil`: any fix. A fix whose receiver gives no estimate
  /// counts: its `horizontalAccuracy` is `nil`, which says so; a fix without one from a
  /// receiver that gave one with its fix before does not (its estimate was lost).
  public var accuracy: Double?
  /// How old the latest fix may be and still answer at once, without waking the receiver
  /// (``GPSReceiver/location(accuracy:timeout:maxAge:)``). `nil`: never from the cache.
  public var maxAge: Duration?
  /// Receives the fixes that other requests cause, never powering the receiver itself.
  public var passive: Bool
  /// The request ends by itself after this many fixes; `nil`: never.
  public var maxUpdates: Int?
  /// The request ends by itself this long after it was made; `nil`: never.
  public var duration: Duration?
  /// A fix is delivered only once the position moved this far, in metres, from the last one
  /// delivered; `nil` (or 0): every fix that falls due.
  public var minDistance: Double?

  /// A request; the defaults are today's continuous subscription.
  public init(
    interval: Duration? = nil, accuracy: Double? = nil, maxAge: Duration? = nil,
    passive: Bool = false, maxUpdates: Int? = nil, duration: Duration? = nil,
    minDistance: Double? = nil
  ) {
    self.interval = interval
    self.accuracy = accuracy
    self.maxAge = maxAge
    self.passive = passive
    self.maxUpdates = maxUpdates
    self.duration = duration
    self.minDistance = minDistance
  }

  /// Whether `fix` is good enough for this request: it has a position, and its estimated
  /// horizontal error reaches ``accuracy`` (or the receiver gives no estimate: the driver's
  /// scheduler also refuses a fix without one from a receiver that gave one with its fix
  /// before). A fix the
  /// receiver flags outside its own limits (``Fix/gnssFixOK`` `false`) counts only by an
  /// estimate that reaches the accuracy asked for, never for "any fix".
  public func accepts(_ fix: Fix) -> Bool {
    accepts(fix, estimateExpected: false)
  }

  /// ``accepts(_:)`` knowing whether the receiver gave an estimate with its fix before this
  /// one: if it did, a fix without one had its estimate lost on the way (a sentence outside
  /// its epoch, a dropped frame), not a receiver that gives none, and it does not meet an
  /// ``accuracy``. A receiver that gives none keeps being served from its second fix on.
  func accepts(_ fix: Fix, estimateExpected: Bool) -> Bool {
    guard fix.position != nil, fix.mode != .noFix else { return false }
    guard let accuracy else { return fix.gnssFixOK != false }
    guard let error = fix.horizontalAccuracy else {
      return !estimateExpected && fix.gnssFixOK != false
    }
    return error <= accuracy
  }
}

extension LocationRequest {
  /// The shortest duration a request's terms can have (its interval, its duration, a
  /// one-shot's timeout): the driver counts time in milliseconds, so anything shorter would
  /// be rounded to nothing.
  public static let resolution: Duration = .milliseconds(1)

  /// A number of seconds as a request's duration, to the millisecond; `nil` for what the
  /// driver refuses: not a number, 0 or less, shorter than ``resolution``, or too long to
  /// count. The one reading the command line's options and the MQTT demands share.
  public static func duration(seconds: Double) -> Duration? {
    guard seconds.isFinite, seconds >= 0.001, seconds * 1000 < Double(Int64.max) else {
      return nil
    }
    return .milliseconds(Int64((seconds * 1000).rounded()))
  }

  /// Why the driver refuses this request, or `nil` when it can be met: the one check, made
  /// when the request is made (``GPSReceiver/subscribe(_:bufferSize:)``,
  /// ``GPSReceiver/location(accuracy:timeout:maxAge:)``) and again by the scheduler.
  public var refusal: LocationRequestRefused? {
    if let interval, interval < Self.resolution {
      return LocationRequestRefused(.interval(interval))
    }
    if let maxUpdates, maxUpdates <= 0 { return LocationRequestRefused(.maxUpdates(maxUpdates)) }
    if let duration, duration < Self.resolution {
      return LocationRequestRefused(.duration(duration))
    }
    if let accuracy, !(accuracy > 0) { return LocationRequestRefused(.accuracy(accuracy)) }
    return nil
  }
}

/// A location request the driver cannot meet, and why: thrown by
/// ``GPSReceiver/subscribe(_:bufferSize:)`` and ``GPSReceiver/location(accuracy:timeout:maxAge:)``
/// before anything is powered (``LocationRequest/refusal``).
public struct LocationRequestRefused: Error, Sendable, Hashable, CustomStringConvertible {
  /// The term that cannot be met, with the value asked for.
  public enum Reason: Sendable, Hashable {
    /// An interval below ``LocationRequest/resolution`` (0 or negative included).
    case interval(Duration)
    /// A duration (a one-shot's timeout) below ``LocationRequest/resolution``.
    case duration(Duration)
    /// A count of updates below 1.
    case maxUpdates(Int)
    /// An accuracy that is not a number of metres above 0.
    case accuracy(Double)
  }

  public var reason: Reason

  public init(_ reason: Reason) { self.reason = reason }

  public var description: String {
    let problem: String
    switch reason {
    case .interval(let interval):
      problem =
        "an interval of \(Self.seconds(interval)) is not one the driver can count: ask "
        + "for one of at least 0.001 s"
    case .duration(let duration):
      problem =
        "a duration (a timeout) of \(Self.seconds(duration)) is not one the driver can "
        + "count: give it at least 0.001 s"
    case .maxUpdates(let count):
      problem = "\(count) updates is not a count of fixes: ask for 1 or more"
    case .accuracy(let metres):
      problem = "an accuracy of \(metres) m cannot be reached: ask for a number of metres above 0"
    }
    return "location request refused: " + problem
  }

  private static func seconds(_ duration: Duration) -> String {
    let (seconds, attoseconds) = duration.components
    return "\(Double(seconds) + Double(attoseconds) / 1e18) s"
  }
}

/// Why ``GPSReceiver/location(accuracy:timeout:maxAge:)`` returned no fix.
public struct LocationTimeout: Error, Sendable, Hashable, CustomStringConvertible {
  /// The accuracy asked for, in metres.
  public var accuracy: Double?
  /// How long the receiver was given.
  public var timeout: Duration
  /// The best fix seen meanwhile (the smallest horizontal error), if any: a caller that can
  /// live with it may use it.
  public var best: FixUpdate?

  public init(accuracy: Double?, timeout: Duration, best: FixUpdate?) {
    self.accuracy = accuracy
    self.timeout = timeout
    self.best = best
  }

  public var description: String {
    let wanted = accuracy.map { "fix of \($0) m or better" } ?? "fix"
    let seen: String
    if let best {
      let error = best.fix.horizontalAccuracy.map { "\($0) m" } ?? "unknown accuracy"
      seen = "the best seen had \(error)"
    } else {
      seen = "no fix at all was seen"
    }
    return
      "no \(wanted) within \(timeout) (\(seen)): give it longer (a cold start takes "
      + "about 30 s, under open sky), ask for less accuracy, or check the antenna's view of the sky"
  }
}

extension Position {
  /// The great-circle distance to `other`, in metres (a spherical Earth: well within a
  /// receiver's own error at the distances a request's `minDistance` compares).
  func distance(to other: Position) -> Double {
    let radius = 6_371_008.8
    let toRadians = Double.pi / 180
    let lat1 = latitude.decimalDegrees * toRadians
    let lat2 = other.latitude.decimalDegrees * toRadians
    let dLat = lat2 - lat1
    let dLon = (other.longitude.decimalDegrees - longitude.decimalDegrees) * toRadians
    let s1 = sin(dLat / 2)
    let s2 = sin(dLon / 2)
    let a = s1 * s1 + cos(lat1) * cos(lat2) * s2 * s2
    return 2 * radius * asin(min(1, a.squareRoot()))
  }
}
