import Chipsets
import Glibc
import NMEA
import POSIX

/// Where the receivers' last positions are kept across restarts (`serve --state-dir`), so
/// that a receiver's first start after one can be aided with where it was.
///
/// One small text file per receiver, named after its stable identity as the awake markers
/// are, written whole (``POSIX/FileSystem/writeWhole(_:to:durable:)``: the old content or the
/// new, never half) and flushed to the disk, as a board may lose power at any moment. A file
/// is ignored when it names another receiver, is older than ``maximumAge`` or from the future,
/// or does not parse: a wrong position is worse than none.
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
public struct PositionMemory: Sendable, Hashable {
  /// The directory holding the files.
  public let directory: String

  /// How old a kept position may be and still be used: a day.
  public static let maximumAge: Duration = .seconds(86_400)

  public init(directory: String) { self.directory = directory }

  /// The memory in `directory`, made when missing (mode 0755); `nil` when this process cannot
  /// write there (a directory of root's for a user's process): then nothing is kept, and
  /// nothing fails.
  public static func writable(directory: String) -> PositionMemory? {
    AwakeMarkers.prepare(directory) ? PositionMemory(directory: directory) : nil
  }

  /// The file of the receiver known as `identity`.
  func path(for identity: String) -> String {
    directory + "/" + AwakeMarkers.fileName(for: identity) + ".position"
  }

  /// Keeps `position` as the last one of the receiver known as `identity`.
  public func save(_ position: KnownPosition, identity: String) throws(Errno) {
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
    let text = lines.joined(separator: "\n") + "\n"
    try FileSystem.writeWhole(Array(text.utf8), to: path(for: identity), durable: true)
  }

  /// The last position kept for the receiver known as `identity`, if it is at most
  /// ``maximumAge`` old at `now` and not from the future.
  public func position(identity: String, now: UTCTimestamp) -> KnownPosition? {
    guard let bytes = try? FileDescriptor.contents(of: path(for: identity)),
      bytes.count < 4096,
      let position = Self.parse(String(decoding: bytes, as: UTF8.self), identity: identity)
    else { return nil }
    let age = now.unixTime - position.time.unixTime
    guard age >= -60, age <= Double(Self.maximumAge.components.seconds) else { return nil }
    return position
  }

  /// The position a file's text holds, if it is this version's, for `identity`, and whole.
  static func parse(_ text: String, identity: String) -> KnownPosition? {
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
      let latitude = values["latitude"].flatMap(Double.init), abs(latitude) <= 90,
      let longitude = values["longitude"].flatMap(Double.init), abs(longitude) <= 180,
      let accuracy = values["accuracy"].flatMap(Double.init), accuracy >= 0
    else { return nil }
    return KnownPosition(
      latitude: latitude, longitude: longitude,
      heightAboveEllipsoid: values["height"].flatMap(Double.init),
      altitudeMSL: values["altitude"].flatMap(Double.init), accuracy: accuracy, time: time)
  }

  /// `seconds.mmm` since the Unix epoch.
  static func time(_ text: String) -> UTCTimestamp? {
    let parts = text.split(separator: ".", omittingEmptySubsequences: false)
    guard parts.count == 2, let seconds = Int64(parts[0]), seconds >= 0, parts[1].count == 3,
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
