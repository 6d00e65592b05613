import Glibc
import NMEA

/// What one consumer wants of the receiver: how often a fix, how good, and whether it may
/// power the receiver at all. Every active request is merged by the driver's scheduler
/// (docs/requests.md), which powers the receiver for exactly the demand that exists.
///
/// ```swift
/// // One fix of 20 m or better a minute; the receiver sleeps in between.
/// for await event in receiver.subscribe(LocationRequest(interval: .seconds(60), accuracy: 20)) {
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
  /// counts: its `horizontalAccuracy` is `nil`, which says so.
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
  /// horizontal error reaches ``accuracy`` (or the receiver gives no estimate). A fix the
  /// receiver flags outside its own limits (``Fix/gnssFixOK`` `false`) counts only by an
  /// estimate that reaches the accuracy asked for, never for "any fix".
  public func accepts(_ fix: Fix) -> Bool {
    guard fix.position != nil, fix.mode != .noFix else { return false }
    guard let accuracy else { return fix.gnssFixOK != false }
    guard let error = fix.horizontalAccuracy else { return fix.gnssFixOK != false }
    return error <= accuracy
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
