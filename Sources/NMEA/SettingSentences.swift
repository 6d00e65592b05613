// The sentences that state a receiver setting, kept in every later fix until changed
// (``CycleRole/setting``: DTM, `$PGRMM`).

/// DTM: datum reference.
public struct DTM: Sendable, Hashable {
  public var talker: Talker
  public var datum: String?
  public var subDatum: String?
  /// Offsets in minutes, north and east positive.
  public var latitudeOffset: Double?
  public var longitudeOffset: Double?
  public var altitudeOffset: Double?
  public var referenceDatum: String?
}

/// `$PGRMM`: the map datum a Garmin receiver's positions are in (Garmin, *GPS 18x Technical
/// Specifications*, 190-00879-08 Rev. B, §4.2.12 "Map Datum": a name such as `WGS 84`).
public struct GarminDatum: Sendable, Hashable {
  public var datum: String?

  public init(datum: String?) { self.datum = datum }
}

// $GPDTM,W84,C*52
extension DTM: NMEASentenceDescriptor {
  static var address: SentenceAddress { "DTM" }
  static var role: CycleRole { .setting }
  init(talker: Talker) { self.talker = talker }
  var sentence: Sentence { .dtm(self) }
  var time: UTCTime? { nil }

  static func parse(_ f: inout FieldReader, commas: Int, into dtm: inout DTM)
    throws(NMEAParseError)
  {
    dtm.datum = f.text()
    dtm.subDatum = f.text()
    dtm.latitudeOffset = try f.signedByHemisphere(negative: 0x53)  // S
    dtm.longitudeOffset = try f.signedByHemisphere(negative: 0x57)  // W
    dtm.altitudeOffset = try f.decimal()
    dtm.referenceDatum = f.text()
  }

  func merge(into builder: inout FixBuilder) {
    if let datum { builder.settings.datum = InlineText(Self.datumName(datum)) }
  }

  /// A DTM local datum code by the name gpsd gives it (`W84` is `WGS84`); other codes (IHO
  /// datum codes) as they are.
  static func datumName(_ code: String) -> String {
    switch code {
    case "W84": return "WGS84"
    case "W72": return "WGS72"
    case "S85": return "SGS85"
    case "P90": return "PE90"
    case "999": return "User Defined"
    default: return code
    }
  }
}

// $PGRMM,WGS 84*06
extension GarminDatum: NMEASentenceDescriptor {
  static var address: SentenceAddress { "PGRMM" }
  static var role: CycleRole { .setting }
  init(talker: Talker) {}
  var sentence: Sentence { .garminDatum(self) }
  var time: UTCTime? { nil }

  static func parse(_ f: inout FieldReader, commas: Int, into garmin: inout GarminDatum)
    throws(NMEAParseError)
  {
    garmin.datum = f.text()
  }

  func merge(into builder: inout FixBuilder) {
    if let datum { builder.settings.datum = InlineText(datum) }
  }
}
