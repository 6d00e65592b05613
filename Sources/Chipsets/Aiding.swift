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
}

/// The aiding each family takes, time first and then position, as the integration manuals
/// order them (a position is placed in time by the receiver's clock, which the time sets).
public enum Aiding {
  /// The commands that give `data` to a receiver of `family`, in order; `nil` for a family
  /// that takes none (SiRF and plain NMEA receivers, and a receiver whose family is unknown:
  /// nothing is written to a device the driver cannot name).
  public static func commands(for family: ChipsetFamily, _ data: AidingData) -> [[UInt8]]? {
    switch family {
    case .ublox: return ublox(data)
    case .mediatek: return mediatek(data)
    case .nmea, .sirf: return nil
    }
  }

  // MARK: u-blox

  /// `UBX-MGA-INI-TIME_UTC` then, with a position, `UBX-MGA-INI-POS_LLH` (u-blox 8 and later;
  /// u-blox 8 / M8 Receiver Description, UBX-13003221, "UBX-MGA-INI"; the same layout in the
  /// u-blox 9 and 10 interface descriptions). Each is answered by `UBX-MGA-ACK-DATA0` when the
  /// receiver's `ackAiding` is on, else by nothing.
  public static func ublox(_ data: AidingData) -> [[UInt8]] {
    var commands = [UBX.unchecked(.mgaIni, payload: timeUTCPayload(data))]
    if let position = data.position {
      commands.append(UBX.unchecked(.mgaIni, payload: positionPayload(position)))
    }
    return commands
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
  /// 1e-7°, altitude in centimetres, accuracy in centimetres; little-endian.
  static func positionPayload(_ position: AidingPosition) -> [UInt8] {
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
  /// sent.
  public static func mediatek(_ data: AidingData) -> [[UInt8]] {
    let stamp = mediatekTime(data.time)
    var commands = [NMEAChecksum.frame("PMTK740," + stamp)]
    if let position = data.position, position.accuracy < 30_000 {
      let fields = [
        decimal(position.latitude, digits: 6), decimal(position.longitude, digits: 6),
        decimal(position.altitude, digits: 0),
      ]
      commands.append(NMEAChecksum.frame("PMTK741," + fields.joined(separator: ",") + "," + stamp))
    }
    return commands
  }

  static func mediatekTime(_ time: UTCTimestamp) -> String {
    let date = time.date
    let clock = time.time
    return [
      String(date.year), two(Int(date.month)), two(Int(date.day)), two(Int(clock.hour)),
      two(Int(clock.minute)), two(Int(min(clock.second, 59))),
    ].joined(separator: ",")
  }

  static func two(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }

  /// `value` with `digits` decimals, rounded half away from zero, without Foundation.
  static func decimal(_ value: Double, digits: Int) -> String {
    var scale: Int64 = 1
    for _ in 0..<digits { scale *= 10 }
    let scaled = Int64((abs(value) * Double(scale)).rounded())
    let sign = value < 0 && scaled != 0 ? "-" : ""
    guard digits > 0 else { return sign + String(scaled) }
    var fraction = String(scaled % scale)
    while fraction.count < digits { fraction = "0" + fraction }
    return sign + String(scaled / scale) + "." + fraction
  }
}
