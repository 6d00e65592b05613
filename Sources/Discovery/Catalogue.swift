import Chipsets

/// The built-in table of USB IDs: GPS receivers with their chipset, and the generic
/// USB-serial bridges that GPS receivers are often (but not only) built on.
///
/// Sources, cited per entry below:
/// - [gpsd-rules] gpsd's udev rules, `gpsd.rules.in` in the gpsd tree (installed by Debian's
///   `gpsd` package as `/lib/udev/rules.d/60-gpsd.rules`).
/// - [usb.ids] the USB ID database (linux-usb.org `usb.ids`, shipped by systemd as
///   `/lib/udev/hwdb.d/20-usb-vendor-model.hwdb`).
/// - [pharos] "Pharos/Microsoft GPS-360 on Raspberry Pi",
///   http://astrobeano.blogspot.com/2012/10/pharosmicrosoft-gps-360-on-raspberry-pi.html
///   (067b:aaa0, the label reads "SiRF Powered").
/// - [lt20] Launchpad bug 111694 (DeLorme Earthmate LT-20, 1163:0200, "sends standard NMEA").
/// - [rpi-se] raspberrypi.stackexchange.com question 36938 (NMEA from a GPS module through
///   PL2303 067b:2303 and CH340 1a86:7523 leads).
public enum ReceiverCatalogue {
  /// One row of the table.
  public struct Entry: Sendable, Hashable {
    public var id: USBID
    /// `.known` for GPS receivers, `.possible` for generic bridges.
    public var kind: ReceiverKind
    /// The chipset family, when the product is a receiver and its family is known.
    public var chipset: ChipsetFamily?
    /// What the product is, for `serialgps list`.
    public var model: String

    public init(id: USBID, kind: ReceiverKind, chipset: ChipsetFamily?, model: String) {
      self.id = id
      self.kind = kind
      self.chipset = chipset
      self.model = model
    }
  }

  /// USB IDs that identify a GPS receiver.
  public static let receivers: [Entry] = [
    // u-blox AG. 01a5–01a9 are in [gpsd-rules] ("u-blox 5" … "u-blox 9", CDC-ACM);
    // 01a4 is the older Antaris 4 in [usb.ids], which already spoke UBX.
    receiver(0x1546, 0x01a4, "ublox", "u-blox Antaris 4"),
    receiver(0x1546, 0x01a5, "ublox", "u-blox 5"),
    receiver(0x1546, 0x01a6, "ublox", "u-blox 6"),
    receiver(0x1546, 0x01a7, "ublox", "u-blox 7"),
    receiver(0x1546, 0x01a8, "ublox", "u-blox 8"),
    receiver(0x1546, 0x01a9, "ublox", "u-blox 9"),
    // MediaTek, CDC-ACM: Holux M-1200E [gpsd-rules], Qstarz BT-Q1000XT [usb.ids].
    receiver(0x0e8d, 0x3329, "mediatek", "MediaTek GPS (Holux M-1200E, Qstarz BT-Q1000XT)"),
    // Garmin, garmin_gps driver [gpsd-rules]. These speak Garmin's binary protocol over
    // USB, not NMEA, so the family is left for the driver to identify.
    receiver(0x091e, 0x0003, nil, "Garmin USB GPS (Garmin binary protocol)"),
    // DeLorme Earthmate on Cypress M8, cypress_m8 driver [gpsd-rules]: the original
    // Earthmate and the LT-20/LT-40; the LT-20 sends standard NMEA [lt20].
    receiver(0x1163, 0x0100, "nmea", "DeLorme Earthmate"),
    receiver(0x1163, 0x0200, "nmea", "DeLorme Earthmate LT-20/LT-40"),
    // Prolific "Pharos" ID, a PL2303 programmed for the Pharos/Microsoft GPS-360
    // [gpsd-rules: "PS-360 OEM"], labelled "SiRF Powered" [pharos].
    receiver(0x067b, 0xaaa0, "sirf", "Pharos / Microsoft GPS-360"),
  ]

  /// Generic USB-serial bridges. GPS pucks use them (GlobalSat BU-353S4 is a SiRF IV behind
  /// a PL2303; Holux M-241 a CP210x [gpsd-rules]; NEO-6M boards a CH340 [rpi-se]), and so do
  /// modems, 3-D printers and programming cables: Debian disables gpsd's own PL2303 and FTDI
  /// rules "as it matches too many other devices" [gpsd-rules].
  public static let bridges: [Entry] = [
    bridge(0x067b, 0x2303, "Prolific PL2303 USB-serial bridge (GlobalSat BU-353S4 and others)"),
    bridge(0x067b, 0x23a3, "Prolific PL2303GC USB-serial bridge"),
    bridge(0x0557, 0x2008, "ATEN UC-232A (PL2303) USB-serial adapter"),
    bridge(0x10c4, 0xea60, "Silicon Labs CP210x USB-UART bridge (Holux M-241 and others)"),
    bridge(0x10c4, 0xea71, "Silicon Labs CP2108 USB-UART bridge"),
    bridge(0x0403, 0x6001, "FTDI FT232R USB-UART bridge"),
    bridge(0x0403, 0x6015, "FTDI FT-X USB-UART bridge"),
    bridge(0x1a86, 0x7523, "QinHeng CH340 USB-serial bridge"),
    bridge(0x1a86, 0x5523, "QinHeng CH341 USB-serial bridge"),
  ]

  /// The catalogue entry for `id`, receivers first.
  public static func entry(for id: USBID) -> Entry? {
    receivers.first { $0.id == id } ?? bridges.first { $0.id == id }
  }

  /// Classifies a port from its USB IDs and the udev properties a rule may have set; for a
  /// kernel GNSS device, from the protocol its driver names (`gnssType`, sysfs `type`).
  ///
  /// Order of precedence: `SERIALGPS_IGNORE=1` (the user says it is not a receiver), then
  /// `SERIALGPS_CHIPSET` (the user says it is one), then the kernel (a GNSS device is a
  /// receiver whatever its USB IDs), then the table.
  public static func classify(
    usb id: USBID?, chipsetProperty: String?, ignoreProperty: String?, gnssType: String? = nil
  ) -> Classification {
    let entry = id.flatMap { ReceiverCatalogue.entry(for: $0) }
    if let ignore = ignoreProperty, isTrue(ignore) {
      return Classification(kind: .other, model: entry?.model, source: .udevProperty)
    }
    if let declared = chipsetProperty?.lowercased(), !declared.isEmpty {
      // Any value marks a receiver; an unrecognised family (a typo, or `auto`) leaves the
      // family to be identified by listening rather than rejecting the user's rule.
      let chipset = ChipsetFamily(cliName: declared) ?? entry?.chipset
      return Classification(
        kind: .known, chipset: chipset, model: entry?.model, source: .udevProperty)
    }
    if let gnssType {
      return Classification(
        kind: .known, chipset: chipset(forGNSSType: gnssType),
        model: entry?.model ?? "kernel GNSS device, \(gnssType) protocol", source: .kernel)
    }
    if let entry {
      return Classification(
        kind: entry.kind, chipset: entry.chipset, model: entry.model, source: .catalogue)
    }
    return Classification(kind: .other, source: .none)
  }

  /// The chipset family a kernel GNSS device's protocol names: the `type` attribute of
  /// drivers/gnss/core.c (`gnss_type_names`). `NMEA` says only that the receiver speaks NMEA,
  /// not which family it is: `nil`, identified by listening, as is a name this table does not
  /// know.
  public static func chipset(forGNSSType type: String) -> ChipsetFamily? {
    ChipsetRegistry.all.first { $0.kernelGNSSType == type }?.family
  }

  private static func isTrue(_ value: String) -> Bool {
    switch value.lowercased() {
    case "1", "y", "yes", "true", "on": return true
    default: return false
    }
  }

  /// A known receiver; `chipset` is its family's registry name (``ChipsetFamily/rawValue``,
  /// the name its driver in ``ChipsetRegistry/all`` gives it), so that a row names a family
  /// without the catalogue depending on each family's identifier.
  private static func receiver(
    _ vendor: UInt16, _ product: UInt16, _ chipset: String?, _ model: String
  ) -> Entry {
    Entry(
      id: USBID(vendor: vendor, product: product), kind: .known,
      chipset: chipset.map(ChipsetFamily.init(rawValue:)), model: model)
  }

  private static func bridge(_ vendor: UInt16, _ product: UInt16, _ model: String) -> Entry {
    Entry(id: USBID(vendor: vendor, product: product), kind: .possible, chipset: nil, model: model)
  }
}
