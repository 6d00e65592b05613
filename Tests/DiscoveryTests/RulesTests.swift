import Foundation
import Testing

/// `udev-rules/60-serialgps.rules` under `udevadm test`, against umockdev devices, in a
/// private mount namespace (see Support/udevadm-test.sh). Needs root for the namespace.
@Suite(
  "udev rules (udevadm test)", .serialized,
  .enabled(
    if: (TestSupport.hasUmockdev && TestSupport.hasUdevadm && TestSupport.isRoot)
      || TestSupport.isCI,
    "needs root, udevadm (Debian: udev), unshare (util-linux) and umockdev"))
struct RulesTests {
  struct Outcome {
    var log: [String]
    var properties: [String: String]

    /// Lines in which udev reports a problem with a rules file: when it parses the rules it
    /// logs `FILE:LINE message` with no device name in front (rule execution lines start with
    /// the device name). `udevadm test` exits 0 regardless.
    var diagnostics: [String] {
      log.filter { $0.hasPrefix("/run/udev/rules.d/") }
    }

    var links: Set<String> {
      Set((properties["DEVLINKS"] ?? "").split(separator: " ").map(String.init))
    }

    /// Whether a line logged for our file applied `assignment` (for example `MODE 0660`).
    func ourFileApplied(_ assignment: String) -> Bool {
      log.contains { $0.contains("60-serialgps.rules:") && $0.hasSuffix(" " + assignment) }
    }
  }

  private func udevadmTest(
    device: String, fixtures: [String], rules: URL = TestSupport.rulesFile,
    userRules: String? = nil
  ) throws -> Outcome {
    var userRulesPath = "-"
    if let userRules {
      let file = FileManager.default.temporaryDirectory
        .appendingPathComponent("serialgps-user-\(UUID().uuidString).rules")
      try userRules.write(to: file, atomically: true, encoding: .utf8)
      userRulesPath = file.path
    }
    defer { if userRulesPath != "-" { try? FileManager.default.removeItem(atPath: userRulesPath) } }
    let script = TestSupport.support.appendingPathComponent("udevadm-test.sh").path
    let result = try TestSupport.run(
      "/bin/sh",
      [script, rules.path, userRulesPath, device] + fixtures.map(TestSupport.fixture))
    guard result.status == 0 else {
      throw TestSupport.Failure(
        "udevadm-test.sh exited \(result.status): \(result.error)\(result.output)")
    }
    let log = result.output.split(separator: "\n").map(String.init)
    var properties: [String: String] = [:]
    for line in log {
      guard let equals = line.firstIndex(of: "="),
        line[..<equals].allSatisfy({ $0.isUppercase || $0.isNumber || $0 == "_" }),
        !line[..<equals].isEmpty
      else { continue }
      properties[String(line[..<equals])] = String(line[line.index(after: equals)...])
    }
    return Outcome(log: log, properties: properties)
  }

  @Test("A known u-blox: access, ModemManager kept off, chipset, link by USB path")
  func ublox() throws {
    let outcome = try udevadmTest(
      device: "/sys/class/tty/ttyACM0", fixtures: ["usb-host-controller", "ublox7-cdc-acm"])
    #expect(outcome.diagnostics == [])
    #expect(outcome.properties["SERIALGPS_CHIPSET"] == "ublox")
    #expect(outcome.properties["ID_MM_DEVICE_IGNORE"] == "1")
    #expect(outcome.properties["TAGS"]?.contains(":uaccess:") == true)
    #expect(outcome.ourFileApplied("MODE 0660"))
    #expect(outcome.log.contains { $0.contains("60-serialgps.rules:") && $0.contains(" GROUP ") })
    // No serial number on this receiver: the link is named after its USB path.
    #expect(outcome.links.contains("/dev/serialgps/pci-0000_00_14_0-usb-0_2_1_0"))
    // gpsd's rules claim gps<N>; ours must not.
    #expect(
      !outcome.log.contains { $0.contains("60-serialgps.rules:") && $0.contains("LINK 'gps") })
  }

  @Test("A known receiver with a serial number is linked by it")
  func mediatek() throws {
    let outcome = try udevadmTest(
      device: "/sys/class/tty/ttyACM1", fixtures: ["usb-host-controller", "mediatek-cdc-acm"])
    #expect(outcome.diagnostics == [])
    #expect(outcome.properties["SERIALGPS_CHIPSET"] == "mtk")
    #expect(outcome.links.contains("/dev/serialgps/0000MT3329_A7"))
  }

  @Test("A generic bridge is left alone")
  func bridgeUntouched() throws {
    let outcome = try udevadmTest(
      device: "/sys/class/tty/ttyUSB0", fixtures: ["usb-host-controller", "pl2303-bridge"])
    #expect(outcome.diagnostics == [])
    #expect(outcome.properties["SERIALGPS_CHIPSET"] == nil)
    #expect(outcome.properties["ID_MM_DEVICE_IGNORE"] == nil)
    #expect(!outcome.ourFileApplied("MODE 0660"))
    #expect(!outcome.links.contains { $0.hasPrefix("/dev/serialgps/") })
  }

  @Test("A user's rule declaring a bridge a receiver gets the full treatment")
  func userDeclaredReceiver() throws {
    let outcome = try udevadmTest(
      device: "/sys/class/tty/ttyUSB0", fixtures: ["usb-host-controller", "pl2303-bridge"],
      userRules:
        "SUBSYSTEM==\"tty\", ATTRS{idVendor}==\"067b\", ATTRS{idProduct}==\"2303\", ENV{SERIALGPS_CHIPSET}=\"sirf\"\n"
    )
    #expect(outcome.diagnostics == [])
    #expect(outcome.properties["SERIALGPS_CHIPSET"] == "sirf")
    #expect(outcome.properties["ID_MM_DEVICE_IGNORE"] == "1")
    #expect(outcome.ourFileApplied("MODE 0660"))
    #expect(outcome.links.contains("/dev/serialgps/pci-0000_00_14_0-usb-0_4_1_0"))
  }

  @Test("A user's SERIALGPS_IGNORE rule keeps even a known receiver out")
  func userIgnoredReceiver() throws {
    let outcome = try udevadmTest(
      device: "/sys/class/tty/ttyACM0", fixtures: ["usb-host-controller", "ublox7-cdc-acm"],
      userRules:
        "SUBSYSTEM==\"tty\", ATTRS{idVendor}==\"1546\", ENV{SERIALGPS_IGNORE}=\"1\"\n")
    #expect(outcome.diagnostics == [])
    #expect(outcome.properties["SERIALGPS_CHIPSET"] == nil)
    #expect(!outcome.links.contains { $0.hasPrefix("/dev/serialgps/") })
  }

  @Test("A kernel GNSS device gets the ttys' access, and no link its path tag would not keep apart")
  func gnssDevice() throws {
    for device in ["gnss0", "gnss1"] {
      let outcome = try udevadmTest(device: "/sys/class/gnss/\(device)", fixtures: ["gnss-serdev"])
      #expect(outcome.diagnostics == [])
      #expect(outcome.ourFileApplied("MODE 0660"), "\(device): \(outcome.log)")
      #expect(outcome.log.contains { $0.contains("60-serialgps.rules:") && $0.contains(" GROUP ") })
      #expect(outcome.properties["TAGS"]?.contains(":uaccess:") == true)
      // ModemManager does not probe gnss nodes; the property is for ttys.
      #expect(outcome.properties["ID_MM_DEVICE_IGNORE"] == nil)
      #expect(!outcome.links.contains { $0.hasPrefix("/dev/serialgps/") }, "\(outcome.links)")
    }
    let ignored = try udevadmTest(
      device: "/sys/class/gnss/gnss1", fixtures: ["gnss-serdev"],
      userRules: "SUBSYSTEM==\"gnss\", KERNEL==\"gnss1\", ENV{SERIALGPS_IGNORE}=\"1\"\n")
    #expect(!ignored.ourFileApplied("MODE 0660"))
  }

  @Test("udev's by-id links are the ones discovery computes without udevd")
  func byIDAgreesWithUdev() throws {
    let cases = [
      (
        "/sys/class/tty/ttyACM0", "ublox7-cdc-acm",
        "/dev/serial/by-id/usb-u-blox_AG_-_www.u-blox.com_u-blox_7_-_GPS_GNSS_Receiver-if00"
      ),
      (
        "/sys/class/tty/ttyACM1", "mediatek-cdc-acm",
        "/dev/serial/by-id/usb-MTK_GPS_Receiver_0000MT3329_A7-if00"
      ),
      (
        "/sys/class/tty/ttyUSB2", "ftdi-ft2232h-adapter",
        "/dev/serial/by-id/usb-FTDI_Dual_RS232-HS_FT5ZK3QB-if01-port0"
      ),
    ]
    // The computed names are what UmockdevTests checks `serialgps list` prints.
    for (device, fixture, computed) in cases {
      let outcome = try udevadmTest(device: device, fixtures: ["usb-host-controller", fixture])
      #expect(outcome.links.contains(computed), "\(fixture): \(outcome.links)")
    }
  }

  @Test("The check catches parse errors: a broken copy of the rules is reported")
  func brokenRulesAreCaught() throws {
    let broken = FileManager.default.temporaryDirectory
      .appendingPathComponent("serialgps-broken-\(UUID().uuidString).rules")
    defer { try? FileManager.default.removeItem(at: broken) }
    var text = try String(contentsOf: TestSupport.rulesFile, encoding: .utf8)
    text += "ENV{SERIALGPS_CHIPSET}==\"ublox\", BOGUS=\"1\"\n"
    text += "ATTRS{idVendor}=\"1546\", ENV{SERIALGPS_CHIPSET}=\"ublox\"\n"
    try text.write(to: broken, atomically: true, encoding: .utf8)
    let outcome = try udevadmTest(
      device: "/sys/class/tty/ttyACM0", fixtures: ["usb-host-controller", "ublox7-cdc-acm"],
      rules: broken)
    #expect(outcome.diagnostics.count == 2, "\(outcome.diagnostics)")
    #expect(outcome.diagnostics.contains { $0.contains("BOGUS") })
  }
}
