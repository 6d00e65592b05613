import Chipsets
import Glibc
import NMEA

/// How a chip writes an epoch without a fix: the fields it leaves empty or fills. Named by
/// what it writes, not by whose it is: a profile says which it uses
/// (``ReceiverProfile/epochStyle``).
public enum EpochStyle: Sendable, Hashable {
  /// Satellites `00`, DOPs `99.99`, units left empty (u-blox).
  case emptyUnitsDOPs99
  /// Satellites `0`, DOPs empty, units kept (MediaTek).
  case oneDigitSatellites
  /// Anything else: satellites `00`, DOPs empty, units kept.
  case generic
}

/// The offsets a fix epoch's positions carry, metres.
struct FixOffsets {
  var north: Double
  var east: Double
  var up: Double
}

/// What the physics decided about one epoch.
struct EpochContext {
  var style: EpochStyle
  /// The receiver's UTC for the epoch; `nil`: it does not know the time.
  var utc: UTCTimestamp?
  /// The error to add to the positions; `nil`: no fix.
  var fix: FixOffsets?
  /// One-sigma latitude/longitude error and vertical error, metres, for GST and PGRME.
  var errorEstimate: (axis: Double, vertical: Double)?
  /// Whether to add a GST where the recording's epoch has none (the host switched it on).
  var addsErrorEstimate = false

  init(style: EpochStyle) { self.style = style }
}

/// Rewrites one epoch of a recording as the physics says it is: each sentence in its no-fix
/// form while acquiring, or with the positions offset by the modelled error and GST/PGRME
/// carrying its estimate; times and dates replaced by the receiver's UTC. Bytes that are no
/// checksum-valid sentence pass unchanged, except UBX navigation frames (class 0x01), which
/// would contradict the rewritten sentences and are left out.
enum EpochRewriter {
  struct Rendered {
    var bytes: [UInt8]
    /// The recording's own position in the epoch (before the offset), degrees.
    var truePosition: (latitude: Double, longitude: Double)?
  }

  static func render(_ burst: ArraySlice<UInt8>, _ context: EpochContext) -> Rendered {
    var out: [UInt8] = []
    out.reserveCapacity(burst.count + 80)
    var truth: (latitude: Double, longitude: Double)?
    var sawErrorEstimate = false
    var ggaTalker: String?
    var afterGGA: Int?
    var index = burst.startIndex
    while index < burst.endIndex {
      let byte = burst[index]
      if byte == 0x24, let end = burst[index...].firstIndex(of: 0x0A),
        let sentence = NMEALine(burst[index...end])
      {
        if let rewritten = rewrite(sentence, context, truth: &truth) {
          out += rewritten
        }
        let type = sentence.type
        if type == "GST" || sentence.address == "PGRME" { sawErrorEstimate = true }
        if type == "GGA" {
          ggaTalker = String(sentence.address.prefix(2))
          afterGGA = out.count
        }
        index = end + 1
        continue
      }
      if byte == 0xB5, let length = ubxFrameLength(burst[index...]) {
        let messageClass = burst[index + 2]
        if messageClass != 0x01 { out += burst[index..<(index + length)] }
        index += length
        continue
      }
      out.append(byte)
      index += 1
    }
    if context.addsErrorEstimate, !sawErrorEstimate, let estimate = context.errorEstimate,
      let talker = ggaTalker, let position = afterGGA, let utc = context.utc
    {
      let fields = [timeField(utc.time, like: "000000.00")] + gstFields(estimate)
      out.insert(
        contentsOf: NMEAChecksum.frame(talker + "GST," + fields.joined(separator: ",")) + [
          0x0D, 0x0A,
        ], at: position)
    }
    return Rendered(bytes: out, truePosition: truth)
  }

  /// The length of the checksum-valid UBX frame at the start of `bytes`, else `nil`.
  static func ubxFrameLength(_ bytes: ArraySlice<UInt8>) -> Int? {
    let start = bytes.startIndex
    guard bytes.count >= 8, bytes[start + 1] == 0x62 else { return nil }
    let length = Int(bytes[start + 4]) | Int(bytes[start + 5]) << 8
    guard bytes.count >= length + 8 else { return nil }
    let sum = UBX.checksum(bytes[(start + 2)..<(start + 6 + length)])
    guard bytes[start + 6 + length] == sum.a, bytes[start + 7 + length] == sum.b else {
      return nil
    }
    return length + 8
  }

  // MARK: Sentences

  /// A checksum-valid sentence split into its address and fields.
  struct NMEALine {
    var address: String
    var fields: [String]
    /// The sentence formatter: `GGA` for `GNGGA`; the whole address for a proprietary one.
    var type: String {
      address.hasPrefix("P") || address.count != 5 ? address : String(address.suffix(3))
    }

    init?(_ bytes: ArraySlice<UInt8>) {
      guard let star = bytes.lastIndex(of: 0x2A), star > bytes.startIndex,
        star + 2 < bytes.endIndex
      else { return nil }
      let body = bytes[(bytes.startIndex + 1)..<star]
      let digits = bytes[(star + 1)...(star + 2)]
      guard let given = UInt8(String(decoding: digits, as: UTF8.self), radix: 16),
        NMEAChecksum.compute(body) == given
      else { return nil }
      let words = String(decoding: body, as: UTF8.self).split(
        separator: ",", omittingEmptySubsequences: false)
      address = String(words[0])
      fields = words.dropFirst().map(String.init)
    }

    func framed() -> [UInt8] {
      NMEAChecksum.frame(([address] + fields).joined(separator: ","))
    }
  }

  /// The sentence as the physics says it is, or `nil` to leave it out.
  static func rewrite(
    _ line: NMEALine, _ context: EpochContext,
    truth: inout (latitude: Double, longitude: Double)?
  ) -> [UInt8]? {
    var line = line
    var f = line.fields
    func set(_ index: Int, _ value: String) { if index < f.count { f[index] = value } }
    func time(_ index: Int) {
      guard index < f.count else { return }
      f[index] = context.utc.map { timeField($0.time, like: f[index]) } ?? ""
    }
    let dops99 = context.style == .emptyUnitsDOPs99
    let fix = context.fix
    switch line.type {
    case "GGA":
      time(0)
      if let fix {
        if let moved = offset(f, latitude: 1, longitude: 3, by: fix, truth: &truth) {
          (f[1], f[2], f[3], f[4]) = moved
        }
        if f.count > 8, let altitude = Double(f[8]) {
          f[8] = formatFixed(altitude + fix.up, decimals: decimals(f[8]))
        }
      } else {
        for i in 1...4 { set(i, "") }
        set(5, "0")
        set(6, context.style == .oneDigitSatellites ? "0" : "00")
        set(7, dops99 ? "99.99" : "")
        set(8, "")
        set(10, "")
        if dops99 {
          set(9, "")
          set(11, "")
        }
        set(12, "")
        set(13, "")
      }
    case "RMC":
      time(0)
      if f.count > 8 { f[8] = context.utc.map { dateField($0.date) } ?? "" }
      if let fix {
        if let moved = offset(f, latitude: 2, longitude: 4, by: fix, truth: &truth) {
          (f[2], f[3], f[4], f[5]) = moved
        }
      } else {
        set(1, "V")
        for i in 2...7 { set(i, "") }
        set(9, "")
        set(10, "")
        set(11, "N")
        set(12, "V")
      }
    case "GLL":
      time(4)
      if let fix {
        if let moved = offset(f, latitude: 0, longitude: 2, by: fix, truth: &truth) {
          (f[0], f[1], f[2], f[3]) = moved
        }
      } else {
        for i in 0...3 { set(i, "") }
        set(5, "V")
        set(6, "N")
      }
    case "GNS":
      time(0)
      if let fix {
        if let moved = offset(f, latitude: 1, longitude: 3, by: fix, truth: &truth) {
          (f[1], f[2], f[3], f[4]) = moved
        }
      } else {
        for i in 1...4 { set(i, "") }
        if f.count > 5 { f[5] = String(repeating: "N", count: max(1, f[5].count)) }
        set(6, "00")
        for i in 7...11 { set(i, "") }
        set(12, "V")
      }
    case "VTG":
      guard fix == nil else { break }
      for i in [0, 2, 4, 6] { set(i, "") }
      if dops99 { for i in [1, 3, 5, 7] { set(i, "") } }
      set(8, "N")
    case "GSA":
      guard fix == nil else { break }
      set(1, "1")
      for i in 2...13 { set(i, "") }
      for i in 14...16 { set(i, dops99 ? "99.99" : "") }
    case "GST":
      time(0)
      // Without a fix the sentence stays, its fields empty, as receivers send it (gpsd's
      // corpus, skytraq.log): the epoch keeps its shape, so a fix builder that learned where
      // a cycle ends from no-fix epochs still finds the first fix's estimate inside it.
      guard let estimate = context.errorEstimate, fix != nil else {
        f = [f.first ?? ""] + Array(repeating: "", count: 7)
        break
      }
      f = [f.first ?? ""] + gstFields(estimate)
    case "PGRME":
      guard let estimate = context.errorEstimate, fix != nil else { return nil }
      let horizontal = estimate.axis * 2.0.squareRoot()
      let spherical = (horizontal * horizontal + estimate.vertical * estimate.vertical)
        .squareRoot()
      f = [
        formatFixed(horizontal, decimals: 1), "M", formatFixed(estimate.vertical, decimals: 1),
        "M", formatFixed(spherical, decimals: 1), "M",
      ]
    case "ZDA":
      time(0)
      if let utc = context.utc {
        set(1, twoDigits(Int(utc.date.day)))
        set(2, twoDigits(Int(utc.date.month)))
        set(3, String(utc.date.year))
      } else {
        for i in 1...3 { set(i, "") }
      }
    case "PUBX":
      // `$PUBX,00` carries the recording's position; the physics does not rewrite it.
      if f.first == "00" { return nil }
    default:
      break
    }
    line.fields = f
    return line.framed()
  }

  static func gstFields(_ estimate: (axis: Double, vertical: Double)) -> [String] {
    let axis = formatFixed(estimate.axis, decimals: 1)
    return [axis, axis, axis, "0.0", axis, axis, formatFixed(estimate.vertical, decimals: 1)]
  }

  /// The latitude and longitude fields moved by `fix`, with the same number of decimals of
  /// minutes; records the original position in `truth`.
  static func offset(
    _ f: [String], latitude: Int, longitude: Int, by fix: FixOffsets,
    truth: inout (latitude: Double, longitude: Double)?
  ) -> (String, String, String, String)? {
    guard f.count > longitude + 1,
      let lat = degrees(f[latitude], hemisphere: f[latitude + 1], digits: 2),
      let lon = degrees(f[longitude], hemisphere: f[longitude + 1], digits: 3)
    else { return nil }
    truth = (lat, lon)
    let metresPerDegree = 6_371_000 * Double.pi / 180
    let newLat = max(-89.999_999, min(89.999_999, lat + fix.north / metresPerDegree))
    var newLon = lon + fix.east / (metresPerDegree * max(0.01, cosDegrees(lat)))
    if newLon > 180 { newLon -= 360 }
    if newLon < -180 { newLon += 360 }
    let (latText, latHemisphere) = coordinate(
      newLat, digits: 2, decimals: decimals(f[latitude]), positive: "N", negative: "S")
    let (lonText, lonHemisphere) = coordinate(
      newLon, digits: 3, decimals: decimals(f[longitude]), positive: "E", negative: "W")
    return (latText, latHemisphere, lonText, lonHemisphere)
  }

  static func cosDegrees(_ degrees: Double) -> Double { cos(degrees * Double.pi / 180) }

  /// `ddmm.mmmm` / `dddmm.mmmm` with its hemisphere, as decimal degrees.
  static func degrees(_ text: String, hemisphere: String, digits: Int) -> Double? {
    guard text.count > digits, let whole = Double(text) else { return nil }
    let degrees = (whole / 100).rounded(.towardZero)
    let minutes = whole - degrees * 100
    let value = degrees + minutes / 60
    switch hemisphere {
    case "S", "W": return -value
    case "N", "E": return value
    default: return nil
    }
  }

  static func coordinate(
    _ value: Double, digits: Int, decimals: Int, positive: String, negative: String
  ) -> (String, String) {
    let magnitude = abs(value)
    var degrees = Int(magnitude)
    var minutesText = formatFixed((magnitude - Double(degrees)) * 60, decimals: decimals)
    if minutesText.hasPrefix("60") {
      degrees += 1
      minutesText = formatFixed(0, decimals: decimals)
    }
    if minutesText.firstIndex(of: ".").map({
      minutesText.distance(from: minutesText.startIndex, to: $0)
    }) ?? minutesText.count < 2 {
      minutesText = "0" + minutesText
    }
    var degreesText = String(degrees)
    while degreesText.count < digits { degreesText = "0" + degreesText }
    return (degreesText + minutesText, value < 0 ? negative : positive)
  }

  /// Digits after the point in a number field.
  static func decimals(_ text: String) -> Int {
    guard let dot = text.firstIndex(of: ".") else { return 0 }
    return text.distance(from: dot, to: text.endIndex) - 1
  }

  /// `hhmmss` with as many decimals of seconds as `like` has.
  static func timeField(_ time: UTCTime, like: String) -> String {
    var text = twoDigits(Int(time.hour)) + twoDigits(Int(time.minute)) + twoDigits(Int(time.second))
    let digits = like.isEmpty ? 2 : decimals(like)
    if digits > 0 {
      var fraction = Int(time.nanoseconds)
      for _ in digits..<9 { fraction /= 10 }
      var fractionText = String(fraction)
      while fractionText.count < digits { fractionText = "0" + fractionText }
      text += "." + fractionText
    }
    return text
  }

  static func dateField(_ date: UTCDate) -> String {
    twoDigits(Int(date.day)) + twoDigits(Int(date.month)) + twoDigits(date.year % 100)
  }

  static func twoDigits(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }
}
