/// A standard NMEA sentence a receiver can be told to send.
public enum NMEASentenceType: String, Sendable, Hashable, CaseIterable, Comparable {
  case gga = "GGA"
  case gll = "GLL"
  case gsa = "GSA"
  case gsv = "GSV"
  case rmc = "RMC"
  case vtg = "VTG"
  case zda = "ZDA"
  case gst = "GST"
  case gns = "GNS"
  case grs = "GRS"
  case gbs = "GBS"
  case dtm = "DTM"

  public static func < (lhs: Self, rhs: Self) -> Bool {
    allCases.firstIndex(of: lhs)! < allCases.firstIndex(of: rhs)!
  }
}

/// The NMEA sentences to turn on when a receiver is powered on.
///
/// On u-blox and SiRF the listed sentences are switched on once per navigation epoch and the
/// others are left as the receiver has them; on MediaTek `$PMTK314` sets every sentence at
/// once, so the others are switched off. Sentences a family cannot select are skipped (for
/// example GNS on MediaTek); ``unsupported(by:)`` names them.
public struct NMEASelection: Sendable, Hashable, CustomStringConvertible {
  /// The sentences, in a fixed order (the order of ``NMEASentenceType/allCases``), so the
  /// commands built from a selection never depend on how it was written.
  public let sentences: [NMEASentenceType]

  public init<S: Sequence>(_ sentences: S) where S.Element == NMEASentenceType {
    self.sentences = Array(Set(sentences)).sorted()
  }

  /// RMC, GGA, GSA and GSV: time, date, position, speed, fix quality, DOPs and the
  /// satellites in view, everything the fix builder reports.
  public static let standard = NMEASelection([.gga, .gsa, .gsv, .rmc])

  public func contains(_ sentence: NMEASentenceType) -> Bool { sentences.contains(sentence) }

  /// The selected sentences `family` has no way to switch on.
  public func unsupported(by family: ChipsetFamily) -> [NMEASentenceType] {
    family.driver.unsupported(self)
  }

  public var description: String { sentences.map(\.rawValue).joined(separator: ",") }
}
