import Chipsets

/// Which commands wake the receiver and put it to standby.
public enum ChipsetChoice: Sendable {
  /// Decide from what is known about the device (its USB IDs or a udev property, passed by
  /// the connector) and, failing that, from what the receiver says about itself while it
  /// streams. Until then nothing is written: a port not known to hold a GPS receiver is only
  /// opened and closed.
  case automatic
  /// The user named the chipset family.
  case family(ChipsetFamily)
  /// A command set of the caller's own.
  case custom(any ReceiverCommandSet)

  /// Parses the CLI spelling: `auto`, `nmea`, `ublox`, `mtk`, `sirf`.
  public init?(cliName: String) {
    if cliName == "auto" || cliName == "automatic" {
      self = .automatic
    } else if let family = ChipsetFamily(cliName: cliName) {
      self = .family(family)
    } else {
      return nil
    }
  }
}
