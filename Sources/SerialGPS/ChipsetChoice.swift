import Chipsets

/// Which commands wake the receiver and put it to standby.
public enum ChipsetChoice: Sendable {
  /// Decide from what is known about the device (its USB IDs or a udev property, passed by
  /// the connector) and, failing that, from what the receiver says about itself while it
  /// streams. Until then nothing is written: a port not known to hold a GPS receiver is only
  /// opened and closed.
  case automatic
  /// As ``automatic``, and when that names no chipset, ask the receiver: at power-on the
  /// driver writes polls that one family answers and the others ignore (u-blox `UBX-MON-VER`,
  /// MediaTek `$PMTK605`) and waits for an answer, retrying as for a command. This writes to
  /// the device before anything names its chipset: use it only for a device you named and
  /// know to be a GPS receiver. A receiver that answers neither (SiRF, a generic one) is
  /// treated as generic NMEA and not asked again.
  case probe
  /// The user named the chipset family.
  case family(ChipsetFamily)
  /// The user named a maker whose modules are built on several families (`quectel`:
  /// MediaTek L70/L76/L80, CASIC L76K, Airoha LC76G). As ``automatic``, except that only
  /// these families' commands are ever sent: nothing is written until what the receiver says
  /// unasked identifies it as one of them, and subscribers are told which to name meanwhile.
  case oneOf(maker: String, families: [ChipsetFamily])
  /// A command set of the caller's own.
  case custom(any ReceiverCommandSet)

  /// Parses the CLI spelling: `auto`, `probe`, a family's name (`nmea`, `ublox`, `mtk` …) or
  /// a maker's (`quectel`, ``ChipsetRegistry/drivers(maker:)``).
  public init?(cliName: String) {
    if cliName == "auto" || cliName == "automatic" {
      self = .automatic
    } else if cliName == "probe" {
      self = .probe
    } else if let family = ChipsetFamily(cliName: cliName) {
      self = .family(family)
    } else if case let drivers = ChipsetRegistry.drivers(maker: cliName), !drivers.isEmpty {
      self = .oneOf(maker: cliName.lowercased(), families: drivers.map(\.family))
    } else {
      return nil
    }
  }
}
