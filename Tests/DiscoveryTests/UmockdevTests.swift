import Foundation
import Testing

/// Mock devices through umockdev: `serialgps list` under `umockdev-run`, hotplug through the
/// testbed library (the `discovery-testbed` helper under `umockdev-wrapper`), and the udev
/// rules under `udevadm test`. Each run has its own testbed directory (`UMOCKDEV_DIR` is per
/// process); the suite is serialized anyway, to keep a 2-core CI machine from thrashing.
@Suite(
  "Mock devices (umockdev)", .serialized,
  .enabled(
    if: TestSupport.hasUmockdev || TestSupport.isCI,
    "umockdev is not installed (Debian packages umockdev, libumockdev-dev; `make test` installs them)"
  ))
struct UmockdevTests {
  static let everything = [
    "usb-host-controller", "ublox7-cdc-acm", "mediatek-cdc-acm", "pl2303-bridge",
    "ftdi-ft2232h-adapter", "ch340-declared-by-rule", "builtin-ports",
  ]

  /// `serialgps list ARGUMENTS` with the given fixtures loaded.
  private func list(_ fixtures: [String], _ arguments: [String]) throws -> TestSupport.Result {
    let serialgps = try TestSupport.product("serialgps")
    var command: [String] = []
    for fixture in fixtures { command += ["-d", TestSupport.fixture(fixture)] }
    command += ["--", serialgps, "list"] + arguments
    return try TestSupport.run(TestSupport.which("umockdev-run") ?? "umockdev-run", command)
  }

  private func listJSON(_ fixtures: [String], all: Bool) throws -> [[String: Any]] {
    let result = try list(fixtures, all ? ["--json", "--all"] : ["--json"])
    guard result.status == 0 else {
      throw TestSupport.Failure("serialgps list failed (\(result.status)): \(result.error)")
    }
    guard
      let array = try JSONSerialization.jsonObject(with: Data(result.output.utf8))
        as? [[String: Any]]
    else { throw TestSupport.Failure("not a JSON array: \(result.output)") }
    return array
  }

  @Test("watch with no DEVICE and no receiver: says so, lists the ports it saw, exits 1")
  func watchWithoutReceiver() throws {
    let serialgps = try TestSupport.product("serialgps")
    var command: [String] = []
    for fixture in ["usb-host-controller", "ftdi-ft2232h-adapter", "builtin-ports"] {
      command += ["-d", TestSupport.fixture(fixture)]
    }
    command += ["--", serialgps, "watch", "--count", "1"]
    let result = try TestSupport.run(TestSupport.which("umockdev-run") ?? "umockdev-run", command)
    #expect(result.status == 1, "stderr: \(result.error)")
    #expect(result.error.contains("no GPS receiver found"), "\(result.error)")
    #expect(result.error.contains("/dev/ttyS0"), "\(result.error)")
    #expect(result.error.contains("/dev/ttyUSB1"), "\(result.error)")
    #expect(result.output.isEmpty)
  }

  @Test("Every port is enumerated and classified, receivers first")
  func enumerateAll() throws {
    let devices = try listJSON(Self.everything, all: true)
    let paths = devices.map { $0["path"] as? String }
    // Known receivers, then the possible one, then other ports; each group in node order.
    // ttyS1 (an empty 8250 slot) and tty1 (a virtual console) are not serial ports.
    #expect(
      paths == [
        "/dev/ttyACM0", "/dev/ttyACM1", "/dev/ttyUSB3", "/dev/ttyUSB0", "/dev/ttyS0",
        "/dev/ttyUSB1", "/dev/ttyUSB2",
      ])
    let byPath = Dictionary(
      devices.map { ($0["path"] as? String ?? "", $0) }, uniquingKeysWith: { a, _ in a })

    let ublox = try #require(byPath["/dev/ttyACM0"])
    #expect(ublox["kind"] as? String == "known")
    #expect(ublox["chipset"] as? String == "ublox")
    #expect(ublox["source"] as? String == "catalogue")
    #expect(ublox["vendorId"] as? String == "1546")
    #expect(ublox["productId"] as? String == "01a7")
    #expect(ublox["driver"] as? String == "cdc_acm")
    #expect(ublox["interface"] as? Int == 0)
    #expect(ublox["serialNumber"] is NSNull)
    #expect(ublox["manufacturer"] as? String == "u-blox AG - www.u-blox.com")
    #expect(
      ublox["stablePath"] as? String
        == "/dev/serial/by-id/usb-u-blox_AG_-_www.u-blox.com_u-blox_7_-_GPS_GNSS_Receiver-if00")
    #expect(ublox["stablePathFromUdev"] as? Bool == false)

    let mediatek = try #require(byPath["/dev/ttyACM1"])
    #expect(mediatek["kind"] as? String == "known")
    #expect(mediatek["chipset"] as? String == "mtk")
    #expect(mediatek["serialNumber"] as? String == "0000MT3329 A7")
    #expect(
      mediatek["stablePath"] as? String
        == "/dev/serial/by-id/usb-MTK_GPS_Receiver_0000MT3329_A7-if00")

    let bridge = try #require(byPath["/dev/ttyUSB0"])
    #expect(bridge["kind"] as? String == "possible")
    #expect(bridge["chipset"] is NSNull)
    #expect(bridge["driver"] as? String == "pl2303")
    // This fixture was recorded where udevd ran: the links come from DEVLINKS.
    #expect(bridge["stablePathFromUdev"] as? Bool == true)
    #expect(
      bridge["stablePath"] as? String
        == "/dev/serial/by-id/usb-Prolific_Technology_Inc._USB-Serial_Controller-if00-port0")
    #expect(
      (bridge["links"] as? [String])?.contains(
        "/dev/serial/by-path/pci-0000:00:14.0-usb-0:4:1.0-port0") == true)

    let declared = try #require(byPath["/dev/ttyUSB3"])
    #expect(declared["kind"] as? String == "known")
    #expect(declared["chipset"] as? String == "mtk")
    #expect(declared["source"] as? String == "udev")
    #expect(declared["driver"] as? String == "ch341")
    #expect(declared["stablePath"] as? String == "/dev/serial/by-id/usb-1a86_USB_Serial-if00-port0")

    for (path, interface, port) in [("/dev/ttyUSB1", 0, "if00"), ("/dev/ttyUSB2", 1, "if01")] {
      let ftdi = try #require(byPath[path])
      #expect(ftdi["kind"] as? String == "other")
      #expect(ftdi["driver"] as? String == "ftdi_sio")
      #expect(ftdi["interface"] as? Int == interface)
      #expect(ftdi["serialNumber"] as? String == "FT5ZK3QB")
      #expect(
        ftdi["stablePath"] as? String
          == "/dev/serial/by-id/usb-FTDI_Dual_RS232-HS_FT5ZK3QB-\(port)-port0")
    }

    let uart = try #require(byPath["/dev/ttyS0"])
    #expect(uart["kind"] as? String == "other")
    #expect(uart["vendorId"] is NSNull)
    #expect(uart["stablePath"] is NSNull)
    #expect(uart["driver"] as? String == "port")
  }

  @Test("Without --all only known and possible receivers are listed")
  func receiversOnly() throws {
    let devices = try listJSON(Self.everything, all: false)
    #expect(
      devices.map { $0["path"] as? String } == [
        "/dev/ttyACM0", "/dev/ttyACM1", "/dev/ttyUSB3", "/dev/ttyUSB0",
      ])
  }

  @Test("Text output names the receiver, its chipset and stable path")
  func textListing() throws {
    let result = try list(["usb-host-controller", "ublox7-cdc-acm", "pl2303-bridge"], [])
    #expect(result.status == 0)
    #expect(result.output.contains("/dev/ttyACM0  known receiver, chipset ublox — u-blox 7\n"))
    #expect(
      result.output.contains(
        "  stable path  /dev/serial/by-id/usb-u-blox_AG_-_www.u-blox.com_u-blox_7_-_GPS_GNSS_Receiver-if00  (computed; udev made no such link)\n"
      ))
    #expect(result.output.contains("/dev/ttyUSB0  possible receiver"))
    #expect(result.output.contains("  usb          067b:2303, interface 0, driver pl2303\n"))
  }

  @Test("Kernel GNSS devices are listed beside the ttys, with their protocol as the chipset")
  func gnssDevices() throws {
    let devices = try listJSON(["builtin-ports", "gnss-serdev"], all: true)
    // Receivers first: the kernel says a gnss device is one.
    #expect(
      devices.map { $0["path"] as? String } == ["/dev/gnss0", "/dev/gnss1", "/dev/ttyS0"])
    let ublox = try #require(devices.first)
    #expect(ublox["subsystem"] as? String == "gnss")
    #expect(ublox["protocol"] as? String == "UBX")
    #expect(ublox["kind"] as? String == "known")
    #expect(ublox["chipset"] as? String == "ublox")
    #expect(ublox["source"] as? String == "kernel")
    #expect(ublox["driver"] as? String == "gnss-ubx")
    // udev makes no /dev/serial/by-id link for a gnss node: none is made up.
    #expect(ublox["stablePath"] is NSNull)
    let mediatek = try #require(devices.dropFirst().first)
    #expect(mediatek["protocol"] as? String == "MTK")
    #expect(mediatek["chipset"] as? String == "mtk")
    let uart = try #require(devices.last)
    #expect(uart["subsystem"] as? String == "tty")
    #expect(uart["protocol"] is NSNull)

    let text = try list(["gnss-serdev"], [])
    #expect(text.status == 0)
    #expect(
      text.output.contains(
        "/dev/gnss0  known receiver, chipset ublox — kernel GNSS device, UBX protocol\n"),
      "\(text.output)")
    #expect(text.output.contains("  gnss         protocol UBX; no baud rate,"), "\(text.output)")
  }

  @Test(
    "Kernel GNSS devices are followed through hotplug as ttys are", arguments: ["udev", "kernel"])
  func gnssHotplug(source: String) throws {
    let helper = try TestSupport.product("discovery-testbed")
    let result = try TestSupport.run(
      TestSupport.which("umockdev-wrapper") ?? "umockdev-wrapper",
      [helper, "--fixtures", TestSupport.fixtures.path, "--source", source, "--scenario", "gnss"])
    #expect(result.status == 0, "helper failed: \(result.error)")
    let lines = try TestSupport.jsonLines(result.output)
    let summary = lines.compactMap { line -> String? in
      if let event = line["event"] as? String, let path = line["path"] as? String {
        guard path.hasPrefix("/dev/gnss") else { return nil }
        return "\(event) \(path) \(line["protocol"] as? String ?? "-") "
          + (line["chipset"] as? String ?? "-")
      }
      if let action = line["action"] as? String {
        return "\(action) \(line["path"] as? String ?? "?")"
      }
      return (line["step"] as? String).map { "- " + $0 }
    }
    #expect(
      summary == [
        "- threadAlive",
        "- plug gnss",
        "added /dev/gnss0 UBX ublox",
        "attach /dev/gnss0",
        "added /dev/gnss1 MTK mtk",
        "- unplug gnss0",
        "removed /dev/gnss0 UBX ublox",
        "detach /dev/gnss0",
        "attach /dev/gnss1",
        "- done",
      ])
  }

  @Test("With no receiver the text says so and points at the other ports")
  func noReceiver() throws {
    let withPorts = try list(["ftdi-ft2232h-adapter", "builtin-ports"], [])
    #expect(withPorts.status == 0)
    #expect(withPorts.output.hasPrefix("No GPS receiver found.\n"))
    #expect(
      withPorts.output.contains("3 other serial ports found: `serialgps list --all` shows them."))
    #expect(!withPorts.output.contains("/dev/ttyUSB1"))

    let nothing = try list([], [])
    #expect(nothing.status == 0)
    #expect(nothing.output.hasPrefix("No GPS receiver found.\n"))
    #expect(!nothing.output.contains("other serial port"))
    #expect(try listJSON([], all: true).isEmpty)
  }

  @Test(
    "Hotplug through the testbed: add, stream, remove, replug, hand-over, shutdown",
    arguments: ["udev", "kernel"])
  func hotplug(source: String) throws {
    let helper = try TestSupport.product("discovery-testbed")
    let result = try TestSupport.run(
      TestSupport.which("umockdev-wrapper") ?? "umockdev-wrapper",
      [helper, "--fixtures", TestSupport.fixtures.path, "--source", source])
    #expect(result.status == 0, "helper failed: \(result.error)")
    let lines = try TestSupport.jsonLines(result.output)

    // What happened, in order: events with the device's class, the tracker's actions, and
    // the helper's steps.
    let summary = lines.compactMap { line -> String? in
      if let event = line["event"] as? String {
        guard let path = line["path"] as? String else { return event }
        let chipset = line["chipset"] as? String ?? "-"
        return "\(event) \(path) \(line["kind"] as? String ?? "?") \(chipset)"
      }
      if let action = line["action"] as? String {
        let write = (line["mayWrite"] as? Bool).map { $0 ? " write" : " listen" } ?? ""
        return "\(action) \(line["path"] as? String ?? "?")\(write)"
      }
      if let step = line["step"] as? String, step != "stream", step != "threadAlive",
        step != "finished", step != "afterShutdown"
      {
        return "- \(step)"
      }
      return nil
    }
    #expect(
      summary == [
        "added /dev/ttyS0 other -",
        "added /dev/ttyUSB1 other -",
        "added /dev/ttyUSB2 other -",
        "enumerationComplete",
        "- plug ublox",
        "added /dev/ttyACM0 known ublox",
        "attach /dev/ttyACM0 write",
        "- unplug ublox",
        "removed /dev/ttyACM0 known ublox",
        "detach /dev/ttyACM0",
        "- replug ublox",
        "added /dev/ttyACM2 known ublox",
        "attach /dev/ttyACM2 write",
        "- plug pl2303",
        "added /dev/ttyUSB0 possible -",
        "- unplug ublox",
        "removed /dev/ttyACM2 known ublox",
        "detach /dev/ttyACM2",
        "attach /dev/ttyUSB0 listen",
        "- shutdown",
        "- done",
      ])
    #expect(lines.first?["source"] as? String == source)

    // The replugged receiver keeps its by-id path although its node changed.
    let added = lines.filter { $0["event"] as? String == "added" }
    let byID = added.filter { ($0["path"] as? String)?.hasPrefix("/dev/ttyACM") == true }
      .map { $0["stablePath"] as? String }
    #expect(byID.count == 2)
    #expect(Set(byID).count == 1)

    // The node is a pty: bytes flow both ways, unchanged.
    let stream = try #require(lines.first { $0["step"] as? String == "stream" })
    #expect(stream["received"] as? String == stream["sent"] as? String)
    #expect(stream["commandReceived"] as? String == stream["commandSent"] as? String)
    #expect((stream["sent"] as? String)?.hasPrefix("$GPGGA") == true)

    // Shutdown finishes the stream, ends the thread and fails later requests.
    let alive = lines.filter { $0["step"] as? String == "threadAlive" }.map { $0["alive"] as? Bool }
    #expect(alive == [true, false])
    let finished = try #require(lines.first { $0["step"] as? String == "finished" })
    #expect(finished["eventsAfterShutdown"] as? Int == 0)
    let after = try #require(lines.first { $0["step"] as? String == "afterShutdown" })
    #expect((after["error"] as? String)?.contains("shut down") == true)
  }
}
