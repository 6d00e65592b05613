import Chipsets
import Discovery
import Testing

@testable import GPSDServer

/// `DiscoveredDevices`: which devices discovery reports the server serves, as exact action
/// lists.
@Suite struct DiscoveredDevicesTests {
  /// A device as discovery reports it (as DiscoveryTests' `Sample.device`).
  static func device(
    _ node: String, kind: ReceiverKind, chipset: ChipsetFamily? = nil, stable: String? = nil,
    links: [String] = []
  ) -> SerialDevice {
    SerialDevice(
      path: node, sysPath: "/sys/devices/mock/" + node.split(separator: "/").last!,
      stablePath: stable, stablePathFromUdev: false, links: links, usb: nil, driver: nil,
      classification: Classification(
        kind: kind, chipset: chipset, source: kind == .other ? .none : .catalogue))
  }

  static let ublox = device(
    "/dev/ttyACM0", kind: .known, chipset: .ublox, stable: "/dev/serial/by-id/usb-u-blox-if00")
  static let bridge = device("/dev/ttyUSB0", kind: .possible)
  static let modem = device("/dev/ttyS0", kind: .other)

  @Test func candidatesAreServedOnceUntilUnplugged() {
    var devices = DiscoveredDevices()
    #expect(
      devices.handle(.added(Self.ublox), newID: 1) == [
        .log("/dev/ttyACM0 appeared (known receiver)"), .serve(1, Self.ublox),
      ])
    #expect(devices.handle(.added(Self.ublox), newID: 2).isEmpty, "served already")
    #expect(devices.handle(.added(Self.modem), newID: 2).isEmpty, "not a receiver")
    #expect(
      devices.handle(.added(Self.bridge), newID: 2) == [
        .log("/dev/ttyUSB0 appeared (possible receiver)"), .serve(2, Self.bridge),
      ])
    #expect(devices.handle(.enumerationComplete, newID: 3) == [.log("serving 2 receivers")])
    #expect(
      devices.handle(.removed(Self.ublox), newID: 3) == [
        .log("stopped serving /sys/devices/mock/ttyACM0: unplugged"), .stop(1),
      ])
    #expect(devices.handle(.removed(Self.ublox), newID: 3).isEmpty, "stopped once")
    #expect(devices.handle(.removed(Self.modem), newID: 3).isEmpty)
    #expect(devices.count == 1)
  }

  /// A change reaches a served device's receiver and renames it; one that makes it another
  /// kind of port stops serving it; a change of a device not served may make it a candidate.
  @Test func changesRenameStopOrServe() {
    var devices = DiscoveredDevices()
    _ = devices.handle(.added(Self.bridge), newID: 1)
    var declared = Self.bridge
    declared.classification = Classification(kind: .known, chipset: .mediatek, source: .catalogue)
    declared.links = ["/dev/gps0"]
    #expect(
      devices.handle(.changed(declared), newID: 2) == [
        .changed(1, .changed(declared), declared),
        .rename(1, DeviceDescription(path: "/dev/ttyUSB0", aliases: ["/dev/gps0"])),
      ])
    var other = Self.bridge
    other.classification = Classification(kind: .other, chipset: nil, source: .none)
    #expect(
      devices.handle(.changed(other), newID: 2) == [
        .changed(1, .changed(other), other),
        .log("stopped serving /sys/devices/mock/ttyUSB0: no longer classified as a receiver"),
        .stop(1),
      ])
    #expect(devices.handle(.changed(other), newID: 2).isEmpty)
    #expect(
      devices.handle(.changed(declared), newID: 2) == [
        .log("/dev/ttyUSB0 appeared (known receiver)"), .serve(2, declared),
      ])
  }

  @Test func nothingAttachedIsSaid() {
    var devices = DiscoveredDevices()
    #expect(
      devices.handle(.enumerationComplete, newID: 1) == [
        .log("no receiver attached; waiting for one to be plugged in")
      ])
    _ = devices.handle(.added(Self.ublox), newID: 1)
    #expect(devices.handle(.enumerationComplete, newID: 2) == [.log("serving 1 receiver")])
  }

  @Test func aDeviceAnswersToItsLinksAndStablePath() {
    var device = Self.ublox
    device.links = ["/dev/gps0", "/dev/ttyACM0"]
    #expect(
      DiscoveredDevices.description(of: device)
        == DeviceDescription(
          path: "/dev/ttyACM0", aliases: ["/dev/gps0", "/dev/serial/by-id/usb-u-blox-if00"]))
  }
}
