import Foundation
import Testing

/// The gated receiver following a receiver (`GPSReceiver(selecting:)`), end to end under
/// umockdev: the `discovery-testbed` helper's `follow-…` scenarios plug mock receivers whose
/// nodes are ptys, stream NMEA into them, unplug and replug them, and print what the
/// subscriber saw and what each port was sent. In the same serialized suite as the other
/// umockdev tests. The scenarios give the receiver a reconnection backoff of a minute, longer
/// than any of their waits, so a receiver that opened in time opened on hotplug.
extension UmockdevTests {
  /// What one scenario printed.
  struct FollowRun {
    let lines: [[String: Any]]
    let output: String

    /// The line of a step, by name.
    func step(_ name: String) -> [String: Any]? {
      lines.first { $0["step"] as? String == name }
    }

    /// The steps in order, without the testbed's own (`port … closed`).
    var steps: [String] {
      lines.compactMap { $0["step"] as? String }.filter { !$0.hasPrefix("port of ") }
    }

    /// What the subscriber saw: `status NAME` and `fix SOURCE` (runs of fixes from one source
    /// as one entry; `replayed SOURCE` for the latest fix replayed to a newcomer).
    var events: [String] {
      lines.compactMap { line in
        if let status = line["status"] as? String, line["step"] == nil {
          return "status " + status
        }
        if let fix = line["fix"] as? String { return "fix " + fix }
        return nil
      }
    }

    /// The reasons given with each `disconnected`, in order.
    var disconnections: [String] {
      lines.filter { $0["status"] as? String == "disconnected" }.compactMap {
        $0["reason"] as? String
      }
    }

    /// What the mock behind `node` was sent.
    func mock(_ node: String) -> [String: Any]? {
      lines.first { $0["node"] as? String == node }
    }

    func commands(_ node: String) -> [String] {
      mock(node)?["commands"] as? [String] ?? []
    }
  }

  private func follow(_ scenario: String, source: String) throws -> FollowRun {
    let helper = try TestSupport.product("discovery-testbed")
    let result = try TestSupport.run(
      TestSupport.which("umockdev-wrapper") ?? "umockdev-wrapper",
      [
        helper, "--fixtures", TestSupport.fixtures.path, "--source", source, "--scenario",
        scenario,
      ], timeout: 300)
    let lines = try TestSupport.jsonLines(result.output)
    #expect(
      result.status == 0, "helper failed (\(result.status)): \(result.output)\n\(result.error)")
    #expect(lines.first?["source"] as? String == source)
    return FollowRun(lines: lines, output: result.output)
  }

  /// Splits `events` at each `status disconnected`: the first part, then one per
  /// disconnection (starting after it).
  private func segments(_ events: [String]) -> [[String]] {
    var parts: [[String]] = [[]]
    for event in events {
      if event == "status disconnected" {
        parts.append([])
      } else {
        parts[parts.count - 1].append(event)
      }
    }
    return parts
  }

  @Test(
    "`.first` before any receiver: waits, opens the u-blox on hotplug, follows two unplugs, closes the port",
    arguments: ["udev", "kernel"])
  func followFirstReceiver(source: String) throws {
    let run = try follow("follow-first", source: source)
    #expect(
      run.steps == [
        "waiting", "plugged", "open while streaming", "unplugged", "replugged",
        "unplugged with hang-up", "replugged again", "powered off", "closed", "done",
      ], "\(run.output)")

    // Waiting: told there is no receiver, and nothing else.
    let parts = segments(run.events)
    #expect(parts.count == 4, "\(run.events)")
    #expect(parts.first == ["status poweringOn"])
    let reasons = run.disconnections
    #expect(reasons.count == 3)
    #expect(reasons.first?.contains("no GPS receiver is attached; waiting") == true)
    // Unplugged with the pty still open (udev alone says so), then with a hang-up.
    #expect(reasons.dropFirst().first?.contains("/dev/ttyACM0 was unplugged") == true)
    #expect(reasons.last?.contains("/dev/ttyACM2") == true)
    #expect(reasons.last?.contains("hang-up") == true)

    // After each disconnection: nothing until the replugged receiver streams, then its fixes
    // and `reconnected`, without the subscriber doing anything.
    for part in parts.dropFirst() {
      #expect(
        part.first == "status streaming" || part.first == "status reconnected", "\(part)")
      #expect(part.contains("status reconnected"), "\(part)")
      #expect(part.contains("fix ublox"), "\(part)")
      #expect(part.allSatisfy { $0 == "fix ublox" || $0.hasPrefix("status ") }, "\(part)")
      #expect(!part.contains("status poweredOff"))
    }

    // One descriptor on the port while streaming; none once the subscriber left.
    let streaming = try #require(run.step("open while streaming"))
    #expect(streaming["descriptors"] as? Int == 1)
    let closed = try #require(run.step("closed"))
    #expect(closed["descriptorsWhileStreaming"] as? Int == 1)
    #expect(closed["descriptors"] as? Int == 0)
    #expect(closed["powerOns"] as? Int == 3)
    #expect(closed["powerOffs"] as? Int == 3)
    #expect(closed["failedOpens"] as? Int == 1)  // the open before any receiver was plugged
    #expect(closed["connectionsLost"] as? Int == 2)

    // Each u-blox was woken with u-blox commands (chipset from the USB IDs); the last one was
    // put to GNSS stop when the subscriber left.
    for node in ["/dev/ttyACM0", "/dev/ttyACM2", "/dev/ttyACM3"] {
      #expect(run.commands(node).contains("ubxReset(navBbrMask: 0, resetMode: 9)"), "\(node)")
    }
    #expect(run.commands("/dev/ttyACM3").last == "ubxReset(navBbrMask: 0, resetMode: 8)")
    #expect(run.mock("/dev/ttyACM3")?["power"] as? String == "gnssStopped")

    // The other serial ports (on-board UART, FTDI adapter) were never written to.
    #expect(streaming["othersWritten"] as? Int == 0)
    for node in ["/dev/ttyS0", "/dev/ttyUSB1", "/dev/ttyUSB2"] {
      #expect(run.mock(node)?["bytesWritten"] as? Int == 0, "\(node)")
    }
  }

  @Test("`.serialNumber`: only the named receiver is used, waited for and picked up again")
  func followSerialNumber() throws {
    let run = try follow("follow-serial", source: "udev")
    #expect(
      run.steps == [
        "streaming", "woken", "unplugged", "while unplugged", "replugged", "powered off",
        "closed", "done",
      ], "\(run.output)")

    // Fixes only ever come from the MediaTek, never from the u-blox that sorts first.
    #expect(run.events.filter { $0.hasPrefix("fix ") }.allSatisfy { $0 == "fix mediatek" })
    #expect(run.events.contains("fix mediatek"))
    #expect(run.disconnections.count == 1)
    #expect(
      run.disconnections.first?.contains("/dev/ttyACM1 was unplugged; waiting for it") == true)
    let parts = segments(run.events)
    #expect(parts.count == 2)
    #expect(parts.last?.contains("status reconnected") == true)
    #expect(parts.last?.first == "status streaming" || parts.last?.first == "status reconnected")

    // While it was unplugged the u-blox was there, and left alone.
    let unplugged = try #require(run.step("while unplugged"))
    #expect(unplugged["ubloxWritten"] as? Int == 0)
    #expect(unplugged["ubloxDescriptors"] as? Int == 0)
    #expect(unplugged["fixes"] as? Int == 0)
    #expect(run.step("closed")?["ubloxWritten"] as? Int == 0)
    #expect(run.mock("/dev/ttyACM0")?["bytesWritten"] as? Int == 0)

    // MediaTek commands (the catalogue's `mtk` chipset): its sentence selection on each power
    // on, standby when the subscriber left.
    #expect(run.commands("/dev/ttyACM1").contains { $0.hasPrefix("mtkSetNMEAOutput") })
    #expect(run.commands("/dev/ttyACM3").contains { $0.hasPrefix("mtkSetNMEAOutput") })
    #expect(run.commands("/dev/ttyACM3").last == "mtkStandby(mode: 0)")
    #expect(run.mock("/dev/ttyACM3")?["power"] as? String == "standby")
  }

  @Test(
    "Generic bridges with `.first`: a silent one is left alone, one streaming NMEA is never written to, one that says it is a u-blox is, after it said so"
  )
  func followPossibleReceivers() throws {
    let run = try follow("follow-possible", source: "kernel")
    #expect(
      run.steps == [
        "rejected", "silent", "streaming", "powered off", "nmea bridge closed",
        "bridged u-blox attached", "bridged u-blox streaming", "standby sent",
        "bridged u-blox off", "bridged u-blox woken", "bridged u-blox off again",
        "second bridge attached", "second bridge streaming", "second bridge off",
        "written at the end", "done",
      ], "\(run.output)")

    // The silent PL2303: listened to at both rates, never written to, closed, and the
    // subscriber told why. It is not tried again.
    #expect(run.disconnections.count == 1, "\(run.disconnections)")
    let reason = try #require(run.disconnections.first)
    #expect(reason.contains("/dev/ttyUSB0"))
    #expect(reason.contains("sent no NMEA at 9600, 4800 baud"))
    let silent = try #require(run.step("silent"))
    #expect(silent["written"] as? Int == 0)
    #expect(silent["descriptors"] as? Int == 0)
    #expect(run.step("written at the end")?["silent"] as? Int == 0)

    // The bridge streaming plain NMEA: opened on hotplug, its fixes delivered, nothing
    // written at power-on, while streaming or at power-off.
    #expect(run.events.contains("fix nmea bridge"))
    let nmea = try #require(run.step("nmea bridge closed"))
    #expect(nmea["written"] as? Int == 0)
    #expect(nmea["descriptorsWhileStreaming"] as? Int == 1)
    #expect(run.mock("/dev/ttyUSB4")?["bytesWritten"] as? Int == 0)

    // The u-blox behind a bridge: nothing written until its banner was heard; then standby
    // (backup, on a UART) at power-off, and the wake-up and start at the next power-on.
    let off = try #require(run.step("bridged u-blox off"))
    #expect(off["writtenWhileStreaming"] as? Int == 0)
    #expect(
      off["commands"] as? [String] == [
        "ubxPowerRequest(durationMilliseconds: 0, flags: 2, wakeupSources: nil)"
      ])
    #expect(off["power"] as? String == "backup")
    let commands = run.commands("/dev/ttyUSB5")
    #expect(commands.first?.hasPrefix("ubxPowerRequest") == true)
    #expect(commands.dropFirst().contains("ubxReset(navBbrMask: 0, resetMode: 9)"))
    #expect(commands.last?.hasPrefix("ubxPowerRequest") == true)
    #expect(run.events.contains("fix ublox bridge"))

    // A second plain bridge after the identified u-blox: the u-blox's identification is not
    // applied to it.
    #expect(run.events.contains("fix second nmea bridge"))
    #expect(run.step("written at the end")?["secondBridge"] as? Int == 0)
    #expect(run.mock("/dev/ttyUSB6")?["bytesWritten"] as? Int == 0)
  }
}
