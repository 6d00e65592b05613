import NMEA

/// What the driver can tell a receiver as it wakes, so that a start without backup power (or
/// after the ephemeris expired) is shorter: the time of day and, when known, where the
/// receiver was. Time and position alone shorten a cold start far less than downloaded
/// ephemeris would; they spare the receiver the search for its own time and visible sky.
public struct AidingData: Sendable, Hashable {
  /// UTC now, from the wall clock.
  public var time: UTCTimestamp
  /// How far `time` may be from the truth.
  public var timeAccuracy: Duration
  /// The last position, with its accuracy already widened by its age; `nil` when unknown.
  public var position: AidingPosition?

  public init(time: UTCTimestamp, timeAccuracy: Duration, position: AidingPosition? = nil) {
    self.time = time
    self.timeAccuracy = timeAccuracy
    self.position = position
  }
}

/// A position to aid a receiver with.
public struct AidingPosition: Sendable, Hashable {
  /// Degrees, north and east positive.
  public var latitude: Double
  public var longitude: Double
  /// Metres above the WGS-84 ellipsoid (what `UBX-MGA-INI-POS_LLH` takes).
  public var altitude: Double
  /// Metres, one sigma.
  public var accuracy: Double

  public init(latitude: Double, longitude: Double, altitude: Double, accuracy: Double) {
    self.latitude = latitude
    self.longitude = longitude
    self.altitude = altitude
    self.accuracy = accuracy
  }

  /// The worst accuracy worth telling a receiver: 10 000 km, a quarter of the Earth's
  /// circumference; a vaguer position says nothing of where it is.
  public static let accuracyLimit = 10_000_000.0

  /// Whether this is a place on the Earth a receiver can be told of: every figure finite,
  /// latitude and longitude in their ranges, the altitude in ``KnownPosition/plausibleHeights``
  /// and the accuracy from 0 to ``accuracyLimit``. The encoders send nothing else, so that no
  /// figure reaches a conversion that cannot hold it (nor a receiver that would believe it).
  public var isPlausible: Bool {
    (-90.0...90.0).contains(latitude) && (-180.0...180.0).contains(longitude)
      && KnownPosition.plausibleHeights.contains(altitude)
      && (0...Self.accuracyLimit).contains(accuracy)
  }
}

/// The aiding encoders: u-blox's and MediaTek's. Which a family uses is its driver's
/// (``ChipsetDriver/aiding(_:at:acknowledged:)``), time first and then position, as the
/// integration manuals order them (a position is placed in time by the receiver's clock, which
/// the time sets).
public enum Aiding {
  // MARK: u-blox

  /// `UBX-MGA-INI-TIME_UTC` then, with a position, `UBX-MGA-INI-POS_LLH` (u-blox 8 and later;
  /// u-blox 8 / M8 Receiver Description, UBX-13003221, "UBX-MGA-INI"; the same layout in the
  /// u-blox 9 and 10 interface descriptions). Each is answered by `UBX-MGA-ACK-DATA0` when the
  /// receiver's `ackAiding` is on, else by nothing.
  public static func ublox(_ data: AidingData) -> [[UInt8]] {
    var commands = [ubloxTime(data.time, accuracy: data.timeAccuracy)]
    if let position = data.position.flatMap(ubloxPosition) { commands.append(position) }
    return commands
  }

  /// `UBX-MGA-INI-TIME_UTC` saying `time`, within `accuracy`.
  public static func ubloxTime(_ time: UTCTimestamp, accuracy: Duration) -> [UInt8] {
    UBX.unchecked(
      .mgaIni, payload: timeUTCPayload(AidingData(time: time, timeAccuracy: accuracy)))
  }

  /// `UBX-MGA-INI-POS_LLH` placing the receiver at `position`; `nil` when `position` is not
  /// ``AidingPosition/isPlausible``.
  public static func ubloxPosition(_ position: AidingPosition) -> [UInt8]? {
    positionPayload(position).map { UBX.unchecked(.mgaIni, payload: $0) }
  }

  /// TIME_UTC, 24 bytes: type 0x10, version 0, ref 0 (the time applies on receipt), leap
  /// seconds -128 (unknown: the receiver's own), year, month, day, hour, minute, second, a
  /// reserved byte, nanoseconds, then the accuracy as seconds and nanoseconds around two
  /// reserved bytes; little-endian.
  static func timeUTCPayload(_ data: AidingData) -> [UInt8] {
    let date = data.time.date
    let time = data.time.time
    var payload: [UInt8] = [0x10, 0x00, 0x00, 0x80]
    payload.append(contentsOf: UBX.littleEndian(UInt16(clamping: date.year)))
    payload += [date.month, date.day, time.hour, time.minute, min(time.second, 59), 0x00]
    payload.append(contentsOf: UBX.littleEndian(time.nanoseconds))
    let (seconds, attoseconds) = data.timeAccuracy.components
    payload.append(contentsOf: UBX.littleEndian(UInt16(clamping: max(seconds, 0))))
    payload += [0x00, 0x00]
    payload.append(
      contentsOf: UBX.littleEndian(UInt32(clamping: max(attoseconds, 0) / 1_000_000_000)))
    return payload
  }

  /// POS_LLH, 20 bytes: type 0x01, version 0, two reserved bytes, latitude and longitude in
  /// 1e-7°, altitude in centimetres, accuracy in centimetres; little-endian. `nil` for a
  /// position that is not ``AidingPosition/isPlausible`` (every plausible figure fits its
  /// field).
  static func positionPayload(_ position: AidingPosition) -> [UInt8]? {
    guard position.isPlausible else { return nil }
    var payload: [UInt8] = [0x01, 0x00, 0x00, 0x00]
    payload.append(
      contentsOf: UBX.littleEndian(Int32(clamping: Int64((position.latitude * 1e7).rounded()))))
    payload.append(
      contentsOf: UBX.littleEndian(Int32(clamping: Int64((position.longitude * 1e7).rounded()))))
    payload.append(
      contentsOf: UBX.littleEndian(Int32(clamping: Int64((position.altitude * 100).rounded()))))
    payload.append(
      contentsOf: UBX.littleEndian(UInt32(clamping: Int64((position.accuracy * 100).rounded()))))
    return payload
  }

  // MARK: MediaTek

  /// `$PMTK740,YYYY,MM,DD,hh,mm,ss` (UTC) then, with a position,
  /// `$PMTK741,Lat,Long,Alt,YYYY,MM,DD,hh,mm,ss` (degrees to six decimals, metres), as the
  /// MT3339 platform's PMTK command packet describes them; each acknowledged by `$PMTK001`.
  /// MediaTek asks for a position better than 30 km for a shorter start; a worse one is not
  /// sent, nor one that is not ``AidingPosition/isPlausible``.
  public static func mediatek(_ data: AidingData) -> [[UInt8]] {
    var commands = [mediatekTime(data.time)]
    if let position = data.position, let command = mediatekPosition(position, at: data.time) {
      commands.append(command)
    }
    return commands
  }

  /// The worst position accuracy MediaTek takes: 30 km.
  public static let mediatekPositionLimit = 30_000.0

  /// `$PMTK740` saying `time`.
  public static func mediatekTime(_ time: UTCTimestamp) -> [UInt8] {
    NMEAChecksum.frame("PMTK740," + mediatekStamp(time))
  }

  /// `$PMTK741` placing the receiver at `position` at `time`; `nil` when `position` is no
  /// better than ``mediatekPositionLimit`` or not ``AidingPosition/isPlausible``.
  public static func mediatekPosition(_ position: AidingPosition, at time: UTCTimestamp)
    -> [UInt8]?
  {
    guard position.isPlausible, position.accuracy < mediatekPositionLimit,
      let latitude = decimal(position.latitude, digits: 6),
      let longitude = decimal(position.longitude, digits: 6),
      let altitude = decimal(position.altitude, digits: 0)
    else { return nil }
    return NMEAChecksum.frame(
      "PMTK741,\(latitude),\(longitude),\(altitude)," + mediatekStamp(time))
  }

  static func mediatekStamp(_ time: UTCTimestamp) -> String {
    let date = time.date
    let clock = time.time
    return [
      String(date.year), two(Int(date.month)), two(Int(date.day)), two(Int(clock.hour)),
      two(Int(clock.minute)), two(Int(min(clock.second, 59))),
    ].joined(separator: ",")
  }

  static func two(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }

  /// `value` with `digits` decimals (0 to 9), rounded half away from zero, without
  /// Foundation; `nil` when `value` is not finite or too large for that many digits.
  static func decimal(_ value: Double, digits: Int) -> String? {
    guard (0...9).contains(digits) else { return nil }
    var scale: Int64 = 1
    for _ in 0..<digits { scale *= 10 }
    let magnitude = (abs(value) * Double(scale)).rounded()
    // 2^63 is exact as a Double; anything below it converts.
    guard magnitude.isFinite, magnitude < 9_223_372_036_854_775_808.0 else { return nil }
    let scaled = Int64(magnitude)
    let sign = value < 0 && scaled != 0 ? "-" : ""
    guard digits > 0 else { return sign + String(scaled) }
    var fraction = String(scaled % scale)
    while fraction.count < digits { fraction = "0" + fraction }
    return sign + String(scaled / scale) + "." + fraction
  }
}

/// A command whose bytes say what "now" is: aiding, made anew for every attempt from UTC as it
/// is when the attempt is written (``CommandStep/bytes(at:)``), so that a retry does not
/// carry a time already stale.
public struct TimedCommand: Sendable, Hashable {
  /// What the command tells the receiver.
  public enum Content: Sendable, Hashable {
    /// UTC at the time of writing, within `accuracy`.
    case time(accuracy: Duration)
    /// Where the receiver was (`UBX-MGA-INI-POS_LLH`, `$PMTK741`), its accuracy widened by
    /// its age at the time of writing.
    case position(KnownPosition)
  }

  public let family: ChipsetFamily
  public let content: Content

  public init(family: ChipsetFamily, content: Content) {
    self.family = family
    self.content = content
  }

  /// The bytes to write at `now`; `nil` for a family that takes no aiding, or a position
  /// measured after `now` (or, for MediaTek, grown too vague by then).
  public func bytes(at now: UTCTimestamp) -> [UInt8]? {
    family.driver.aiding(content, at: now, acknowledged: false)?.bytes
  }

  /// The step that writes this command, planned at `now` (its ``CommandStep/bytes`` are made
  /// then; each attempt makes its own); `nil` when there is nothing to write at `now`.
  /// `acknowledged`: whether a u-blox receiver was asked to answer aiding
  /// (`UBX-MGA-ACK-DATA0`); MediaTek always answers with `$PMTK001`.
  public func step(at now: UTCTimestamp, acknowledged: Bool) -> CommandStep? {
    guard let command = family.driver.aiding(content, at: now, acknowledged: acknowledged) else {
      return nil
    }
    return CommandStep(
      bytes: command.bytes, summary: command.summary, acknowledgement: command.acknowledgement,
      timed: self)
  }

  /// `, within N m` for a summary: the position's accuracy at `now`.
  public static func within(_ known: KnownPosition, _ now: UTCTimestamp) -> String {
    guard let position = known.aiding(at: now), position.isPlausible else { return "" }
    let accuracy = position.accuracy
    return ", within \(Int(accuracy.rounded())) m"
  }
}
