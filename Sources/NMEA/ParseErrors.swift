/// Why a sentence could not be parsed.
public enum NMEAParseError: Error, Sendable, Hashable {
  /// The address field (`GPGGA`, `PUBX` …) is missing or not letters and digits.
  case badAddress
  /// Field `index` (1 is the first after the address) holds something its type cannot be.
  case badField(index: Int)
  /// Field `index` is well formed but holds a value no receiver can mean, and the value is
  /// what the sentence is about: a time of day that cannot be (the key of every timed
  /// sentence) or a GSV message number past its count. Any other impossible value is dropped
  /// alone (the field is absent, the sentence stands) and counted by reason
  /// (``DecoderStatistics/impossibleValues``).
  case impossibleValue(ImpossibleValue, index: Int)
}

/// Why a well-formed field was dropped (or, for a time of day or a message number, its
/// sentence refused), counted by ``ImpossibleValueStatistics``. A receiver's "unknown" that is
/// outside the field's range (a magnetic variation of `999.9`, a speed of `999.99` knots, an
/// altitude of `-9999.9`) is one of these; a dilution of precision of 99 or more is the
/// receivers' own way of writing "unknown" and is left out without being counted.
public enum ImpossibleValue: UInt8, Sendable, Hashable, CaseIterable, CustomStringConvertible {
  /// A time of day with hours over 23, minutes over 59 or seconds over 60.
  case timeOfDay
  /// A date not in the calendar: month 0 or over 12, day 0 or past the end of its month
  /// (31 April, 29 February 1999), or a four-digit year before GPS time began (1980).
  case date
  /// A latitude beyond 90°.
  case latitude
  /// A longitude beyond 180°.
  case longitude
  /// Minutes of arc of 60 or more in a latitude or longitude (exactly 60 with nothing after
  /// the point is taken as the next degree, as MediaTek writes the pole).
  case arcMinutes
  /// A negative speed over ground, or one of 999 knots or more (receivers write `999.99`
  /// for "unknown").
  case speed
  /// A course over ground outside 0° ..< 360°.
  case course
  /// A magnetic variation beyond 180° (`999.9` is "unknown" on survey and RTK receivers).
  case magneticVariation
  /// A negative dilution of precision or error estimate.
  case accuracy
  /// A GSV message number of 0 or past the message count, or a count of 0 or over 9 (NMEA
  /// allows 1 to 9).
  case messageNumber
  /// An altitude below −1 000 m or above 100 km (`-9999.9` is "unknown").
  case altitude
  /// A geoid separation beyond ±200 m (the geoid departs from the ellipsoid by −107 to
  /// +86 m).
  case geoidSeparation
  /// A GGA fix quality over 8 (NMEA defines 0 to 8).
  case fixQuality
  /// A fix type other than 1 (no fix), 2 (2D) or 3 (3D), in GSA or `$PGRMZ`.
  case fixMode
  /// An integer field (a satellite count, an elevation, a time zone …) beyond ±2 147 483 647,
  /// what a 32-bit signed integer holds: read the same on every build, a 32-bit board's
  /// included, instead of wrapping there and not on a 64-bit one.
  case integerRange

  public var description: String {
    switch self {
    case .timeOfDay: return "time of day"
    case .date: return "date"
    case .latitude: return "latitude"
    case .longitude: return "longitude"
    case .arcMinutes: return "minutes of arc"
    case .speed: return "speed"
    case .course: return "course"
    case .magneticVariation: return "magnetic variation"
    case .accuracy: return "accuracy"
    case .messageNumber: return "message number"
    case .altitude: return "altitude"
    case .geoidSeparation: return "geoid separation"
    case .fixQuality: return "fix quality"
    case .fixMode: return "fix type"
    case .integerRange: return "integer out of range"
    }
  }
}

/// The impossible values dropped from one sentence, by reason: four bits of count per
/// ``ImpossibleValue`` in one word (saturating at 15), so that a sentence with none costs a
/// zero and a test of it.
struct DroppedFields: Sendable, Hashable {
  var packed: UInt64 = 0

  var isEmpty: Bool { packed == 0 }

  @inline(__always)
  mutating func add(_ reason: ImpossibleValue) {
    let shift = UInt64(reason.rawValue) &* 4
    if (packed >> shift) & 0xF != 0xF { packed &+= 1 << shift }
  }

  func count(of reason: ImpossibleValue) -> Int {
    Int((packed >> (UInt64(reason.rawValue) &* 4)) & 0xF)
  }

  /// The first reason dropped, in ``ImpossibleValue``'s order.
  var first: ImpossibleValue? { ImpossibleValue.allCases.first { count(of: $0) > 0 } }
}
