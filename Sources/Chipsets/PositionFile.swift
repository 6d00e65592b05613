import NMEA

/// The text of a kept position (``SerialGPS/PositionMemory``'s files): a version line, the
/// receiver it belongs to, then one `key value` line each, every line ended by a newline.
/// Here, beside the position it holds and apart from the files, so that the parser can be
/// fuzzed alone (Fuzz/, `FuzzPositionFile`).
///
/// ```
/// serialgps-position 1
/// receiver serial A1
/// time 1764769200.250
/// latitude 47.2852167
/// longitude 8.5652500
/// height 594.6
/// altitude 546.6
/// accuracy 5.0
/// ```
public enum PositionFile {
  /// The text that keeps `position` for the receiver known as `identity`.
  public static func text(_ position: KnownPosition, identity: String) -> String {
    var lines = ["serialgps-position 1", "receiver \(identity)"]
    let (seconds, nanoseconds) = (
      position.time.secondsSinceUnixEpoch, Int64(position.time.time.nanoseconds)
    )
    lines.append("time \(seconds).\(Self.digits(nanoseconds / 1_000_000, 3))")
    lines.append("latitude \(position.latitude)")
    lines.append("longitude \(position.longitude)")
    if let height = position.heightAboveEllipsoid { lines.append("height \(height)") }
    if let altitude = position.altitudeMSL { lines.append("altitude \(altitude)") }
    lines.append("accuracy \(position.accuracy)")
    return lines.joined(separator: "\n") + "\n"
  }

  /// The position a file's text holds, if it is this version's, for `identity`, and whole.
  public static func parse(_ text: String, identity: String) -> KnownPosition? {
    var values: [String: String] = [:]
    var lines = text.split(separator: "\n", omittingEmptySubsequences: false)
    guard lines.first == "serialgps-position 1", lines.last == "" else { return nil }
    lines.removeFirst()
    lines.removeLast()
    for line in lines {
      guard let space = line.firstIndex(of: " ") else { return nil }
      values[String(line[..<space])] = String(line[line.index(after: space)...])
    }
    guard values["receiver"] == identity, let time = values["time"].flatMap(Self.time),
      let latitude = values["latitude"].flatMap(Double.init),
      let longitude = values["longitude"].flatMap(Double.init),
      let accuracy = values["accuracy"].flatMap(Double.init)
    else { return nil }
    // A height that is there must parse; the ranges are the caller's to check.
    var heights: [Double?] = []
    for key in ["height", "altitude"] {
      guard let text = values[key] else {
        heights.append(nil)
        continue
      }
      guard let height = Double(text) else { return nil }
      heights.append(height)
    }
    return KnownPosition(
      latitude: latitude, longitude: longitude, heightAboveEllipsoid: heights[0],
      altitudeMSL: heights[1], accuracy: accuracy, time: time)
  }

  /// The last second a file may name: 9999-12-31 23:59:59 UTC, so that any sum with it (an
  /// age, a day later) stays far from overflowing.
  static let latestSecond: Int64 = 253_402_300_799

  /// `seconds.mmm` since the Unix epoch, up to ``latestSecond``.
  static func time(_ text: String) -> UTCTimestamp? {
    let parts = text.split(separator: ".", omittingEmptySubsequences: false)
    guard parts.count == 2, let seconds = Int64(parts[0]), (0...latestSecond).contains(seconds),
      parts[1].count == 3,
      let milliseconds = UInt32(parts[1])
    else { return nil }
    return UTCTimestamp(secondsSinceUnixEpoch: seconds, nanoseconds: milliseconds * 1_000_000)
  }

  static func digits(_ value: Int64, _ count: Int) -> String {
    var text = String(value)
    while text.count < count { text = "0" + text }
    return text
  }
}
