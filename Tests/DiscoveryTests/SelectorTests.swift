import Chipsets
import Discovery
import Testing

/// Devices as discovery reports them, for the selector and tracker tests.
enum Sample {
  static func device(
    _ node: String, kind: ReceiverKind, chipset: ChipsetFamily? = nil, id: USBID? = nil,
    serial: String? = nil, stable: String? = nil, links: [String] = [], sysPath: String? = nil
  ) -> SerialDevice {
    SerialDevice(
      path: node, sysPath: sysPath ?? "/sys/devices/mock/" + node.split(separator: "/").last!,
      stablePath: stable, stablePathFromUdev: links.contains(stable ?? "\u{0}"), links: links,
      usb: id.map { USBDeviceInfo(id: $0, serialNumber: serial, interfaceNumber: 0) },
      driver: nil,
      classification: Classification(
        kind: kind, chipset: chipset, source: kind == .other ? .none : .catalogue))
  }

  static let ublox = device(
    "/dev/ttyACM0", kind: .known, chipset: .ublox, id: USBID(vendor: 0x1546, product: 0x01a8),
    stable: "/dev/serial/by-id/usb-u-blox_AG_-_www.u-blox.com_u-blox_GNSS_receiver-if00")
  static let mediatek = device(
    "/dev/ttyACM1", kind: .known, chipset: .mediatek, id: USBID(vendor: 0x0e8d, product: 0x3329),
    serial: "0000MT3329 A7", stable: "/dev/serial/by-id/usb-MTK_GPS_Receiver_0000MT3329_A7-if00")
  static let pl2303 = device(
    "/dev/ttyUSB0", kind: .possible, id: USBID(vendor: 0x067b, product: 0x2303),
    stable: "/dev/serial/by-id/usb-Prolific_Technology_Inc._USB-Serial_Controller-if00-port0",
    links: [
      "/dev/serial/by-id/usb-Prolific_Technology_Inc._USB-Serial_Controller-if00-port0",
      "/dev/serialgps/pci-0000_00_14_0-usb-0_4_1_0",
    ])
  static let ftdi = device(
    "/dev/ttyUSB1", kind: .other, id: USBID(vendor: 0x0403, product: 0x6010), serial: "FT5ZK3QB")
  static let uart = device("/dev/ttyS0", kind: .other)
}

@Suite("Receiver selector")
struct SelectorTests {
  @Test("Command-line arguments: auto, paths, bare tty names, serial numbers")
  func parsing() {
    #expect(ReceiverSelector(argument: nil) == .first)
    #expect(ReceiverSelector(argument: "") == .first)
    #expect(ReceiverSelector(argument: "auto") == .first)
    #expect(ReceiverSelector(argument: "/dev/ttyUSB0") == .path("/dev/ttyUSB0"))
    #expect(ReceiverSelector(argument: "ttyACM1") == .path("/dev/ttyACM1"))
    #expect(ReceiverSelector(argument: "serial/by-id/x") == .path("serial/by-id/x"))
    #expect(ReceiverSelector(argument: "0000MT3329_A7") == .serialNumber("0000MT3329_A7"))
  }

  @Test("`first` takes known and possible receivers, never other ports")
  func firstMatches() {
    #expect(ReceiverSelector.first.matches(Sample.ublox))
    #expect(ReceiverSelector.first.matches(Sample.pl2303))
    #expect(!ReceiverSelector.first.matches(Sample.ftdi))
    #expect(!ReceiverSelector.first.matches(Sample.uart))
  }

  @Test("Candidates: known before possible, then natural order of the node")
  func ordering() {
    let late = Sample.device("/dev/ttyACM10", kind: .known, chipset: .ublox)
    let early = Sample.device("/dev/ttyACM2", kind: .known, chipset: .ublox)
    let devices = [Sample.pl2303, late, Sample.uart, early, Sample.ftdi]
    #expect(
      ReceiverSelector.first.candidates(in: devices).map(\.path) == [
        "/dev/ttyACM2", "/dev/ttyACM10", "/dev/ttyUSB0",
      ])
  }

  @Test("A serial number matches as reported or as udev sanitises it")
  func serialNumbers() {
    #expect(ReceiverSelector.serialNumber("0000MT3329 A7").matches(Sample.mediatek))
    #expect(ReceiverSelector.serialNumber("0000MT3329_A7").matches(Sample.mediatek))
    #expect(!ReceiverSelector.serialNumber("0000MT3329").matches(Sample.mediatek))
    #expect(!ReceiverSelector.serialNumber("0000MT3329 A7").matches(Sample.ublox))
    // Named devices match whatever their classification.
    #expect(ReceiverSelector.serialNumber("FT5ZK3QB").matches(Sample.ftdi))
  }

  @Test("A path matches the node, the stable path or any udev link")
  func paths() {
    #expect(ReceiverSelector.path("/dev/ttyUSB0").matches(Sample.pl2303))
    #expect(
      ReceiverSelector.path(
        "/dev/serial/by-id/usb-Prolific_Technology_Inc._USB-Serial_Controller-if00-port0"
      ).matches(Sample.pl2303))
    #expect(
      ReceiverSelector.path("/dev/serialgps/pci-0000_00_14_0-usb-0_4_1_0").matches(Sample.pl2303))
    #expect(!ReceiverSelector.path("/dev/ttyUSB0").matches(Sample.ublox))
    #expect(!ReceiverSelector.path("/dev/does-not-exist").matches(Sample.uart))
    #expect(ReceiverSelector.path("/dev/ttyS0").matches(Sample.uart))
  }

  @Test("Writing needs a known receiver, or a device the user named")
  func writePermission() {
    #expect(ReceiverSelector.first.mayWrite(to: Sample.ublox))
    #expect(!ReceiverSelector.first.mayWrite(to: Sample.pl2303))
    #expect(ReceiverSelector.path("/dev/ttyUSB0").mayWrite(to: Sample.pl2303))
    #expect(ReceiverSelector.serialNumber("x").namesDevice)
    #expect(!ReceiverSelector.first.namesDevice)
  }

  @Test("Identity: serial number, else stable path, else node")
  func identity() {
    #expect(ReceiverSelector.identity(of: Sample.mediatek) == .serialNumber("0000MT3329 A7"))
    #expect(ReceiverSelector.identity(of: Sample.ublox) == .path(Sample.ublox.stablePath!))
    #expect(ReceiverSelector.identity(of: Sample.uart) == .path("/dev/ttyS0"))
  }
}
