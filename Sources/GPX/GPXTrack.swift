import NMEA

/// Decides where each fix of a stream goes in a GPX track, remembering only the last point.
///
/// An epoch without a position fix is left out and ends the segment; so does a gap in time
/// longer than ``gap`` or a step back in time, after which the next fix starts a new segment
/// (GPX 1.1: "start a new track segment for each continuous span of track data"). Across
/// midnight a track goes on: two fixes without dates are compared by their times of day, up
/// to a day apart.
///
/// ``GPXTrack`` keeps the points it places; ``GPXStreamWriter`` writes them as they come.
public struct GPXSegmenter: Sendable, Hashable {
  /// Where a fix went.
  public enum Placement: Sendable, Hashable {
    /// No position fix: not a point, and the segment, if any, is over.
    case leftOut
    /// The first point of a new segment.
    case startsSegment
    /// The next point of the open segment.
    case continuesSegment
  }

  /// A longer time between two fixes starts a new segment.
  public let gap: Duration
  /// The last point of the open segment; `nil` while no segment is open.
  private var lastPoint: Fix?

  public init(gap: Duration = .seconds(10)) {
    self.gap = gap
  }

  /// Whether a segment is open: the last fix placed was a point.
  public var isSegmentOpen: Bool { lastPoint != nil }

  /// Places the next epoch's fix.
  public mutating func place(_ fix: Fix) -> Placement {
    guard fix.mode != .noFix, fix.position != nil else {
      lastPoint = nil
      return .leftOut
    }
    defer { lastPoint = fix }
    guard let lastPoint else { return .startsSegment }
    if let step = Self.interval(from: lastPoint, to: fix), step <= .zero || step > gap {
      return .startsSegment
    }
    return .continuesSegment
  }

  /// The time from one fix to the next: by date and time when both have them, else by time
  /// of day (a day ahead at most, so across midnight too); `nil` without times.
  static func interval(from first: Fix, to second: Fix) -> Duration? {
    if let a = first.timestamp, let b = second.timestamp {
      let seconds = b.secondsSinceUnixEpoch - a.secondsSinceUnixEpoch
      return .seconds(seconds)
        + .nanoseconds(Int64(b.time.nanoseconds) - Int64(a.time.nanoseconds))
    }
    guard let a = first.time, let b = second.time else { return nil }
    var nanoseconds = b.nanosecondsOfDay - a.nanosecondsOfDay
    if nanoseconds < 0 { nanoseconds += 86_400 * 1_000_000_000 }
    return .nanoseconds(nanoseconds)
  }
}

/// The fixes of a recording or a session as GPX track segments, held in memory for
/// ``GPXDocument/text(of:metadata:)``.
///
/// Fixes are placed by a ``GPXSegmenter``: epochs without a position fix are left out and end
/// the segment, and a time gap longer than the segmenter's gap starts a new one.
///
/// ```swift
/// var track = GPXTrack(gap: .seconds(10))
/// for fix in fixes { track.append(fix) }
/// let gpx = GPXDocument.text(of: track, metadata: GPXMetadata(name: "Morning drive"))
/// ```
public struct GPXTrack: Sendable, Hashable {
  /// The segments, each one or more points in order.
  public private(set) var segments: [[Fix]] = []
  private var segmenter: GPXSegmenter

  /// An empty track; a time gap longer than `gap` between two fixes starts a new segment.
  public init(gap: Duration = .seconds(10)) {
    segmenter = GPXSegmenter(gap: gap)
  }

  /// The track of `fixes`, one per epoch in order.
  public init(fixes: some Sequence<Fix>, gap: Duration = .seconds(10)) {
    self.init(gap: gap)
    for fix in fixes { append(fix) }
  }

  /// Adds the next epoch's fix, if it is a point; where it went.
  @discardableResult
  public mutating func append(_ fix: Fix) -> GPXSegmenter.Placement {
    let placement = segmenter.place(fix)
    switch placement {
    case .leftOut: break
    case .startsSegment: segments.append([fix])
    case .continuesSegment: segments[segments.count - 1].append(fix)
    }
    return placement
  }

  /// The number of track points.
  public var pointCount: Int { segments.reduce(0) { $0 + $1.count } }
}
