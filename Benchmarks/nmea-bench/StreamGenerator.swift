import Glibc

/// A synthetic NMEA 4.10 stream shaped like a u-blox M8 receiver's default multi-GNSS output.
///
/// One epoch per second: `$GNRMC`, `$GNGGA`, one `$GNGSA` per system with its system ID
/// (GPS, GLONASS, Galileo), then `$GPGSV`, `$GLGSV` and `$GAGSV` groups with their signal ID
/// (GPS and GLONASS L1 = 1, Galileo E1 = 7). The receiver drives at about 50 km/h on a slowly
/// turning course; satellites rise and set so the number of GSV sentences varies. The first
/// epoch is at 23:40 UTC so the stream crosses midnight. Field widths and decimals are the
/// M8's: five decimal minutes, two decimal seconds, three decimal knots.
struct StreamGenerator {
  /// A small, fast, deterministic generator (SplitMix64), so every run measures the same
  /// bytes.
  struct SplitMix64 {
    var state: UInt64
    mutating func next() -> UInt64 {
      state &+= 0x9E37_79B9_7F4A_7C15
      var z = state
      z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
      z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
      return z ^ (z >> 31)
    }
    mutating func below(_ bound: Int) -> Int { Int(next() % UInt64(bound)) }
  }

  struct SatelliteTrack {
    var id: Int
    var elevation: Int
    var azimuth: Int
    var snr: Int?
  }

  var random = SplitMix64(state: 0x5EED_0F5E_1A16_B500)
  var out: [UInt8] = []
  var sentences = 0

  // Kinematic state: Zurich, 408 m above MSL.
  var latitudeMicroMinutes: Int64 = 47 * 60_000_000 + 22_614_200  // 47°22.61420' (µ-minutes)
  var longitudeMicroMinutes: Int64 = 8 * 60_000_000 + 32_502_100
  var altitudeDecimetres = 4083
  var course = 37.5
  var secondOfDay = 23 * 3600 + 40 * 60
  var day = 17
  var month = 3
  var year = 2026

  /// Generates exactly `count` sentences (the last epoch may be cut short).
  static func generate(sentences count: Int) -> (bytes: [UInt8], sentences: Int) {
    var generator = StreamGenerator()
    generator.out.reserveCapacity(count * 72)
    while generator.sentences < count {
      generator.epoch(limit: count)
    }
    return (generator.out, generator.sentences)
  }

  mutating func epoch(limit: Int) {
    let gps = satellites(system: 0, count: 9 + (secondOfDay / 97) % 4, firstID: 1, idRange: 32)
    let glonass = satellites(
      system: 1, count: 5 + (secondOfDay / 131) % 4, firstID: 65, idRange: 24)
    let galileo = satellites(system: 2, count: 4 + (secondOfDay / 173) % 4, firstID: 1, idRange: 36)
    let used = [gps, glonass, galileo].map { $0.filter { ($0.snr ?? 0) >= 22 }.prefix(12) }
    let usedCount = used.reduce(0) { $0 + $1.count }
    let hdop = 0.6 + Double(random.below(60)) / 100
    let pdop = hdop + 0.3 + Double(random.below(40)) / 100
    let vdop = (pdop * pdop - hdop * hdop).squareRoot()

    let time = timeField()
    let speedKnots = 26.0 + Double(random.below(2000)) / 1000
    emit(
      "GNRMC,\(time),A,\(latitudeField()),\(longitudeField()),\(fixed(speedKnots, 3)),"
        + "\(fixed(course, 2)),\(dateField()),,,A,V", limit: limit)
    emit(
      "GNGGA,\(time),\(latitudeField()),\(longitudeField()),1,\(twoDigits(min(usedCount, 99))),"
        + "\(fixed(hdop, 2)),\(fixed(Double(altitudeDecimetres) / 10, 1)),M,47.4,M,,", limit: limit)
    for (index, list) in used.enumerated() {
      var fields = "GNGSA,A,3"
      for slot in 0..<12 {
        fields += slot < list.count ? "," + twoDigits(list[list.startIndex + slot].id) : ","
      }
      fields += ",\(fixed(pdop, 2)),\(fixed(hdop, 2)),\(fixed(vdop, 2)),\(index + 1)"
      emit(fields, limit: limit)
    }
    emitGSV("GP", gps, signal: "1", limit: limit)
    emitGSV("GL", glonass, signal: "1", limit: limit)
    emitGSV("GA", galileo, signal: "7", limit: limit)
    advance(speedKnots: speedKnots)
  }

  mutating func satellites(system: Int, count: Int, firstID: Int, idRange: Int) -> [SatelliteTrack]
  {
    // Which satellites are up changes slowly with the time of day; their signal strength
    // flickers from second to second, and some have none (tracked but not locked).
    let rotation = secondOfDay / 600
    var list: [SatelliteTrack] = []
    for index in 0..<count {
      let id = firstID + (index * 5 + rotation + system * 3) % idRange
      let elevation = 5 + (index * 23 + rotation * 7) % 80
      let azimuth = (index * 67 + rotation * 11 + system * 40) % 360
      let snr: Int? = random.below(8) == 0 ? nil : 15 + random.below(34)
      list.append(SatelliteTrack(id: id, elevation: elevation, azimuth: azimuth, snr: snr))
    }
    return list
  }

  mutating func emitGSV(_ talker: String, _ list: [SatelliteTrack], signal: String, limit: Int) {
    let messages = (list.count + 3) / 4
    for message in 0..<messages {
      var fields = "\(talker)GSV,\(messages),\(message + 1),\(twoDigits(list.count))"
      for satellite in list[(message * 4)..<min(list.count, message * 4 + 4)] {
        fields += ",\(twoDigits(satellite.id)),\(twoDigits(satellite.elevation)),"
        fields += threeDigits(satellite.azimuth) + ","
        if let snr = satellite.snr { fields += twoDigits(snr) }
      }
      fields += "," + signal
      emit(fields, limit: limit)
    }
  }

  mutating func emit(_ body: String, limit: Int) {
    guard sentences < limit else { return }
    var checksum: UInt8 = 0
    for byte in body.utf8 { checksum ^= byte }
    out.append(0x24)
    out.append(contentsOf: body.utf8)
    out.append(0x2A)
    let hex = Array("0123456789ABCDEF".utf8)
    out.append(hex[Int(checksum >> 4)])
    out.append(hex[Int(checksum & 0x0F)])
    out.append(0x0D)
    out.append(0x0A)
    sentences += 1
  }

  mutating func advance(speedKnots: Double) {
    let metres = speedKnots * 1852 / 3600
    let radians = course * Double.pi / 180
    // One minute of latitude is 1852 m; of longitude, 1852 m times cos(latitude).
    let northMinutes = metres * cos(radians) / 1852
    let eastMinutes = metres * sin(radians) / (1852 * 0.6777)
    latitudeMicroMinutes += Int64((northMinutes * 1_000_000).rounded())
    longitudeMicroMinutes += Int64((eastMinutes * 1_000_000).rounded())
    altitudeDecimetres += random.below(5) - 2
    course += Double(random.below(200) - 90) / 100
    if course >= 360 { course -= 360 }
    if course < 0 { course += 360 }
    secondOfDay += 1
    if secondOfDay == 86_400 {
      secondOfDay = 0
      day += 1
    }
  }

  // MARK: - Fields

  func timeField() -> String {
    let hour = secondOfDay / 3600
    let minute = secondOfDay / 60 % 60
    let second = secondOfDay % 60
    return twoDigits(hour) + twoDigits(minute) + twoDigits(second) + ".00"
  }

  func dateField() -> String { twoDigits(day) + twoDigits(month) + twoDigits(year % 100) }

  func latitudeField() -> String {
    angleField(latitudeMicroMinutes, degreeDigits: 2) + ",N"
  }

  func longitudeField() -> String {
    angleField(longitudeMicroMinutes, degreeDigits: 3) + ",E"
  }

  /// `[d]ddmm.mmmmm` from micro-minutes (the M8 writes five decimals).
  func angleField(_ microMinutes: Int64, degreeDigits: Int) -> String {
    let degrees = Int(microMinutes / 60_000_000)
    let minutes = microMinutes % 60_000_000
    let whole = Int(minutes / 1_000_000)
    let fraction = Int((minutes % 1_000_000) / 10)
    return padded(degrees, degreeDigits) + twoDigits(whole) + "." + padded(fraction, 5)
  }

  func twoDigits(_ value: Int) -> String { padded(value, 2) }
  func threeDigits(_ value: Int) -> String { padded(value, 3) }

  func padded(_ value: Int, _ width: Int) -> String {
    let digits = String(value)
    return String(repeating: "0", count: max(0, width - digits.count)) + digits
  }

  /// `value` with exactly `decimals` decimals (non-negative values only).
  func fixed(_ value: Double, _ decimals: Int) -> String {
    var scale = 1
    for _ in 0..<decimals { scale *= 10 }
    let scaled = Int((value * Double(scale)).rounded())
    return String(scaled / scale) + "." + padded(scaled % scale, decimals)
  }
}
