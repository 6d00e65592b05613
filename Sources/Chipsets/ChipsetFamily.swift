/// A family of GPS receiver chipsets that share one command language.
///
/// The family decides which bytes the driver may ever write to a receiver. ``nmea`` stands for
/// every receiver whose chipset is not known: it has no commands at all, so a port that is
/// not known to hold a commandable GPS receiver is never written to. Gating such a receiver is
/// opening and closing its port.
public enum ChipsetFamily: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
  /// A generic NMEA 0183 receiver, or one whose chipset is not known: no commands.
  case nmea
  /// u-blox (UBX binary protocol, `$PUBX`).
  case ublox
  /// MediaTek and the modules built on it (Quectel L70/L76/L80, GlobalTop, Fastrax …):
  /// `$PMTK` commands.
  case mediatek
  /// SiRF (SiRFstar II–V): `$PSRF` commands and SiRF binary.
  case sirf

  /// Parses the name used on the command line (`nmea`, `ublox`, `mtk`, `sirf`) and a few
  /// spellings people write (`u-blox`, `mediatek`, `quectel`, `generic`), ignoring case.
  public init?(cliName: String) {
    switch cliName.lowercased() {
    case "nmea", "generic": self = .nmea
    case "ublox", "u-blox", "ubx": self = .ublox
    case "mtk", "mediatek", "quectel": self = .mediatek
    case "sirf": self = .sirf
    default: return nil
    }
  }

  /// The name used on the command line: `nmea`, `ublox`, `mtk` or `sirf`.
  public var cliName: String {
    switch self {
    case .nmea: return "nmea"
    case .ublox: return "ublox"
    case .mediatek: return "mtk"
    case .sirf: return "sirf"
    }
  }

  /// The names ``init(cliName:)`` documents, for help texts: `nmea|ublox|mtk|sirf`.
  public static var cliNames: String { allCases.map(\.cliName).joined(separator: "|") }

  /// A name for people: `generic NMEA`, `u-blox`, `MediaTek/Quectel`, `SiRF`.
  public var displayName: String {
    switch self {
    case .nmea: return "generic NMEA"
    case .ublox: return "u-blox"
    case .mediatek: return "MediaTek/Quectel"
    case .sirf: return "SiRF"
    }
  }

  public var description: String { displayName }

  /// The name gpsd gives the driver it uses for this family, which gpsd clients show (the
  /// `driver` of a DEVICE report): the `type_name` of gpsd's drivers (drivers/driver_ubx.c
  /// "u-blox", driver_sirf.c "SiRF", drivers.c "MTK-3301" for MediaTek's NMEA with `$PMTK`,
  /// "NMEA0183" for the generic NMEA driver).
  public var gpsdDriverName: String {
    switch self {
    case .nmea: return "NMEA0183"
    case .ublox: return "u-blox"
    case .mediatek: return "MTK-3301"
    case .sirf: return "SiRF"
    }
  }

  /// Whether the driver has any command for this family. `false` only for ``nmea``.
  public var hasCommands: Bool { self != .nmea }
}
