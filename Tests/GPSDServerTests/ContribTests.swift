import Foundation
import Glibc
import Testing

/// The systemd unit and the udev rule that starts it (contrib/systemd), checked with the
/// tools that will read them: `systemd-analyze verify` and `udevadm test` (the latter through
/// DiscoveryTests' private-namespace script, on its umockdev devices).
@Suite(.serialized) struct ContribTests {
  static let repository: URL = {
    var url = URL(fileURLWithPath: #filePath)
    for _ in 0..<3 { url.deleteLastPathComponent() }
    return url
  }()
  static let contrib = repository.appendingPathComponent("contrib/systemd")
  static let isCI = ProcessInfo.processInfo.environment["CI"] == "true"
  static let isRoot = geteuid() == 0
  static func installed(_ path: String) -> Bool {
    FileManager.default.isExecutableFile(atPath: path)
  }

  @Test(
    .enabled(
      if: installed("/usr/bin/systemd-analyze") || isCI, "systemd-analyze is not installed"))
  func theUnitVerifies() throws {
    let binary = try #require(
      ClientCompatibilityTests.binary, "serialgps is not built beside the tests")
    let unit = try String(
      contentsOf: Self.contrib.appendingPathComponent("serialgps.service"), encoding: .utf8)
    #expect(unit.contains("ExecStart=/usr/local/bin/serialgps serve\n"))
    #expect(unit.contains("SupplementaryGroups=dialout"))
    // verify checks that ExecStart exists: point it at the binary just built.
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
      "serialgps-unit-\(getpid())")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    let copy = directory.appendingPathComponent("serialgps.service")
    try unit.replacingOccurrences(of: "/usr/local/bin/serialgps", with: binary)
      .write(to: copy, atomically: true, encoding: .utf8)
    // The socket beside it: verify loads the service it activates from the same directory.
    let socketUnit = try String(
      contentsOf: Self.contrib.appendingPathComponent("serialgps.socket"), encoding: .utf8)
    #expect(socketUnit.contains("ListenStream=127.0.0.1:2947\n"))
    #expect(socketUnit.contains("ListenStream=[::1]:2947\n"))
    // Without it, a [::1] that sysctl disabled fails the whole socket unit (EADDRNOTAVAIL).
    #expect(socketUnit.contains("FreeBind=yes\n"))
    let socketCopy = directory.appendingPathComponent("serialgps.socket")
    try socketUnit.write(to: socketCopy, atomically: true, encoding: .utf8)
    // Documentation=man:serialgps(1) is installed by the Debian package, whose check
    // (scripts/check-deb.sh) verifies the installed units with it; here it is not installed.
    let run = try Tools.run(
      "/usr/bin/systemd-analyze", ["verify", "--man=no", copy.path, socketCopy.path])
    // verify exits 0 after ignoring lines it could not parse: any complaint about the files
    // fails the test.
    #expect(run.status == 0, "\(run.error)")
    let complaints = (run.output + run.error).split(whereSeparator: \.isNewline)
      .filter { $0.contains("serialgps.service") || $0.contains("serialgps.socket") }
    #expect(complaints.isEmpty, "\(complaints)")
  }

  @Test(
    .enabled(
      if: (installed("/usr/bin/udevadm") && installed("/usr/bin/umockdev-run") && isRoot) || isCI,
      "needs root, udevadm, unshare and umockdev"))
  func theRuleStartsTheServiceForReceiversOnly() throws {
    let discovery = Self.repository.appendingPathComponent("Tests/DiscoveryTests")
    let script = discovery.appendingPathComponent("Support/udevadm-test.sh").path
    func fixture(_ name: String) -> String {
      discovery.appendingPathComponent("Fixtures/\(name).umockdev").path
    }
    // The script installs one file as 60-serialgps.rules: ours follows the project's rules in
    // it, which is where 61-… sorts.
    let combined = FileManager.default.temporaryDirectory.appendingPathComponent(
      "serialgps-rules-\(getpid()).rules")
    let rules =
      try String(
        contentsOf: Self.repository.appendingPathComponent("udev-rules/60-serialgps.rules"),
        encoding: .utf8)
      + "\n"
      + String(
        contentsOf: Self.contrib.appendingPathComponent("61-serialgps-serve.rules"), encoding: .utf8
      )
    try rules.write(to: combined, atomically: true, encoding: .utf8)
    defer { try? FileManager.default.removeItem(at: combined) }

    func test(_ device: String, _ fixtures: [String]) throws -> (
      properties: [String: String], log: String
    ) {
      let run = try Tools.run(
        "/bin/sh", [script, combined.path, "-", device] + fixtures.map(fixture))
      #expect(run.status == 0, "\(run.error)\(run.output)")
      var properties: [String: String] = [:]
      for line in run.output.split(whereSeparator: \.isNewline) {
        guard let equals = line.firstIndex(of: "=") else { continue }
        let key = line[..<equals]
        guard !key.isEmpty, key.allSatisfy({ $0.isUppercase || $0.isNumber || $0 == "_" }) else {
          continue
        }
        properties[String(key)] = String(line[line.index(after: equals)...])
      }
      return (properties, run.output)
    }

    let receiver = try test("/sys/class/tty/ttyACM0", ["usb-host-controller", "ublox7-cdc-acm"])
    // `+=`: other rules (gpsd's, if installed) may want their own units too.
    let wanted = { (properties: [String: String]) in
      Set((properties["SYSTEMD_WANTS"] ?? "").split(separator: " ").map(String.init))
    }
    #expect(wanted(receiver.properties).contains("serialgps.service"), "\(receiver.log)")
    #expect(receiver.properties["TAGS"]?.contains(":systemd:") == true)
    // Parse problems are logged as FILE:LINE lines and do not change the exit status.
    #expect(
      !receiver.log.split(whereSeparator: \.isNewline).contains {
        $0.hasPrefix("/run/udev/rules.d/")
      })

    let bridge = try test("/sys/class/tty/ttyUSB0", ["usb-host-controller", "pl2303-bridge"])
    #expect(
      !wanted(bridge.properties).contains("serialgps.service"), "a generic bridge starts nothing")

    let gnss = try test("/sys/class/gnss/gnss0", ["gnss-serdev"])
    #expect(wanted(gnss.properties).contains("serialgps.service"), "\(gnss.log)")
  }
}
