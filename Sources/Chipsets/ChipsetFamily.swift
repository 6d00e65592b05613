/// A family of GPS receiver chipsets that share one command language: an identifier, whose
/// driver (``driver``, one of ``ChipsetRegistry/all``) knows everything about the family.
///
/// The family decides which bytes the driver may ever write to a receiver. ``nmea`` stands for
/// every receiver whose chipset is not known: it has no commands at all, so a port that is
/// not known to hold a commandable GPS receiver is never written to. Gating such a receiver is
/// opening and closing its port.
///
/// The families are static members (one per driver file) declared beside their drivers;
/// code outside the Chipsets module asks ``driver`` rather than testing which family it has.
public struct ChipsetFamily: RawRepresentable, Sendable, Hashable, CaseIterable,
  CustomStringConvertible
{
  /// The identifier as Swift code spells it (`ublox`, `mediatek`), unique in the registry.
  public let rawValue: String

  /// A family named `rawValue`; its driver must be in ``ChipsetRegistry/all``.
  public init(rawValue: String) { self.rawValue = rawValue }

  /// The driver of this family; the generic NMEA driver (no commands) for an identifier no
  /// registered driver has, so that an unknown family is never written to.
  public var driver: any ChipsetDriver { ChipsetRegistry.driver(for: self) }

  /// Every family of the registry, in its order.
  public static var allCases: [ChipsetFamily] { ChipsetRegistry.all.map(\.family) }

  /// Parses the name used on the command line or one of its aliases (`ublox`, `u-blox`,
  /// `mtk`, `mediatek` …: ``ChipsetDriver/cliName`` and ``ChipsetDriver/aliases``), ignoring
  /// case; `nil` for a name no driver has, and for a maker's (`quectel`,
  /// ``ChipsetRegistry/drivers(maker:)``), which names no one family.
  public init?(cliName: String) {
    guard let driver = ChipsetRegistry.driver(cliName: cliName) else { return nil }
    self = driver.family
  }

  /// The name used on the command line: `nmea`, `ublox`, `mtk`, `sirf` …
  public var cliName: String { driver.cliName }

  /// The names ``init(cliName:)`` documents, for help texts: `nmea|ublox|mtk|sirf…`.
  public static var cliNames: String { allCases.map(\.cliName).joined(separator: "|") }

  /// A name for people: `generic NMEA`, `u-blox`, `MediaTek/Quectel`, `SiRF` …
  public var displayName: String { driver.displayName }

  public var description: String { displayName }

  /// The name gpsd gives the driver it uses for this family, which gpsd clients show (the
  /// `driver` of a DEVICE report).
  public var gpsdDriverName: String { driver.gpsdDriverName }

  /// Whether the driver has any command for this family. `false` only for ``nmea``.
  public var hasCommands: Bool { driver.hasCommands }
}
