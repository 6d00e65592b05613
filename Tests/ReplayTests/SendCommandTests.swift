import Chipsets
import Foundation
import NMEA
import Replay
import SerialPort
import Simulator
import Testing

/// `serialgps send`, the built binary, against the simulator.
@Suite(.serialized) struct SendCommandTests {
  struct Run {
    var status: Int32
    var output: String
    var error: String
  }

  /// The `serialgps` binary built beside this test bundle (`swift build --build-tests` builds
  /// it).
  static let binary: String? = {
    guard let test = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
    else { return nil }
    let path = URL(fileURLWithPath: test).deletingLastPathComponent()
      .appendingPathComponent("serialgps").path
    return FileManager.default.isExecutableFile(atPath: path) ? path : nil
  }()

  func serialgps(_ arguments: [String]) async throws -> Run {
    let binary = try #require(
      Self.binary, "serialgps is not built beside the tests; run `swift build --build-tests`")
    return try await onOwnThread {
      let process = Process()
      process.executableURL = URL(fileURLWithPath: binary)
      process.arguments = ["send"] + arguments
      let output = Pipe()
      let error = Pipe()
      process.standardOutput = output
      process.standardError = error
      try process.run()
      let out = output.fileHandleForReading.readDataToEndOfFile()
      let err = error.fileHandleForReading.readDataToEndOfFile()
      process.waitUntilExit()
      return Run(
        status: process.terminationStatus, output: String(decoding: out, as: UTF8.self),
        error: String(decoding: err, as: UTF8.self))
    }
  }

  @Test func mediatekStandbyAndWakeAreAcknowledged() async throws {
    let simulator = try makeSimulator("mtk-cold-start", profile: .mediatek)
    defer { simulator.stop() }
    let standby = try await serialgps([
      simulator.devicePath, "standby", "--chipset", "mtk", "--timeout", "5",
    ])
    #expect(standby.status == 0, "\(standby)")
    #expect(standby.output.contains("acknowledged ($PMTK001,161,3)"))
    #expect(standby.output.contains("standby: done."))
    #expect(simulator.powerState == .standby)

    let wake = try await serialgps([
      simulator.devicePath, "wake", "--chipset", "mtk", "--timeout", "5",
    ])
    #expect(wake.status == 0, "\(wake)")
    #expect(wake.output.contains("acknowledged ($PMTK001,314,3)"))
    #expect(simulator.powerState == .running)
    let steps =
      MediaTekCommandSet.standby.bytes + MediaTekCommandSet().powerOnSteps.flatMap(\.bytes)
    #expect(simulator.received.flatMap(\.bytes) == steps)
  }

  @Test func rejectionsAndSilenceAreReportedWithExitStatusOne() async throws {
    let simulator = try makeSimulator("mtk-cold-start", profile: .mediatek)
    defer { simulator.stop() }
    let unknown = try await serialgps([
      simulator.devicePath, "PMTK999,1", "--chipset", "mtk", "--timeout", "5",
    ])
    #expect(unknown.status == 1, "\(unknown)")
    #expect(unknown.output.contains("rejected: the receiver does not support $PMTK999"))

    simulator.setResponses(.unresponsive)
    let silent = try await serialgps([
      simulator.devicePath, "standby", "--chipset", "mtk", "--timeout", "0.3",
    ])
    #expect(silent.status == 1, "\(silent)")
    #expect(silent.output.contains("no answer within 0.3 seconds after 3 attempts"))
    #expect(silent.output.contains("--baud auto"))
    #expect(simulator.receivedCommands.filter { $0 == .mtkStandby(mode: 0) }.count == 3)
  }

  /// A MediaTek that answers `$PMTK161,0` only after 1.3 s and says nothing else (issue 11):
  /// the answer is the first standby's, late; no second standby goes out (it would wake the
  /// chip), and the user is told the timeout is too short.
  @Test func aLateAnswerToAStandbyIsCreditedAndNotRetried() async throws {
    let terminal = try PseudoTerminal()
    let heard = LockedText()
    let answerer = Thread {
      var buffer = [UInt8](repeating: 0, count: 256)
      while true {
        let result = buffer.withUnsafeMutableBytes { raw in
          Result { () throws(SerialPortError) in try terminal.read(into: raw, timeout: .seconds(20))
          }
        }
        guard case .success(.received(let count)) = result else { return }
        heard.append(String(decoding: buffer[..<count], as: UTF8.self))
        if heard.text.hasSuffix("\r\n") && heard.text.contains("PMTK161,0") {
          Thread.sleep(forTimeInterval: 1.3)
          try? terminal.write(NMEAChecksum.frame("PMTK001,161,3"))
        }
      }
    }
    answerer.start()
    defer { terminal.hangUp() }
    let standby = try await serialgps([
      terminal.devicePath, "standby", "--chipset", "mtk", "--timeout", "1",
    ])
    #expect(standby.status == 0, "\(standby)")
    #expect(standby.output.contains("acknowledged ($PMTK001,161,3)"), "\(standby.output)")
    #expect(standby.output.contains("raise --timeout"), "\(standby.output)")
    #expect(heard.text.components(separatedBy: "PMTK161,0").count - 1 == 1, "\(heard.text)")
  }

  @Test func ubloxRawCommandsAreFramedAndAnswered() async throws {
    let simulator = try makeSimulator("ublox-m8-drive", profile: .ublox(.m8))
    defer { simulator.stop() }
    let path = simulator.devicePath
    let rate = try await serialgps([
      path, "CFG-MSG F0 00 01", "--chipset", "ublox", "--timeout", "5",
    ])
    #expect(rate.status == 0, "\(rate)")
    #expect(rate.output.contains("acknowledged (UBX-ACK-ACK UBX-CFG-MSG)"))
    #expect(simulator.received.last?.bytes == (try UBX.frame(.cfgMsg, payload: [0xF0, 0, 1])))

    let valset = try await serialgps([
      path, "06 8A 00 01 00 00 BB 00 91 20 01", "--chipset", "ublox", "--timeout", "5",
    ])
    #expect(valset.status == 1, "\(valset)")
    #expect(valset.output.contains("rejected: the receiver rejected UBX-CFG-VALSET (UBX-ACK-NAK)"))

    let standby = try await serialgps([path, "standby", "--chipset", "ublox"])
    #expect(standby.status == 0, "\(standby)")
    #expect(standby.output.contains("UBX-RXM-PMREQ"))
    #expect(standby.output.contains("sent; the receiver fell silent after it"), "\(standby)")
    #expect(await simulator.waitForPowerState(.backup))

    let wake = try await serialgps([path, "wake", "--chipset", "ublox", "--timeout", "5"])
    #expect(wake.status == 0, "\(wake)")
    #expect(await simulator.waitForPowerState(.running))
  }

  @Test func aStandbyTheReceiverIgnoresIsReported() async throws {
    let simulator = try makeSimulator(
      "ublox-m8-drive", profile: .ublox(.m8), responses: .ignoringBackupRequest)
    defer { simulator.stop() }
    let standby = try await serialgps([simulator.devicePath, "standby", "--chipset", "ublox"])
    #expect(standby.status == 1, "\(standby)")
    #expect(
      standby.output.contains(
        "the receiver kept sending after 3 attempts, so the command did "
          + "not take"), "\(standby)")
    #expect(standby.output.contains("USB port is connected"), "\(standby)")
    #expect(simulator.powerState == .running)
    let backups = simulator.received.filter {
      if case .ubxPowerRequest = $0.command { return true }
      return false
    }
    #expect(backups.count == 3)
  }

  @Test func theChipsetIsFoundByListening() async throws {
    // noisy-ublox carries a UBX NAV-PVT frame every epoch: u-blox, high confidence.
    let ublox = try makeSimulator("noisy-ublox", profile: .ublox(.m8))
    defer { ublox.stop() }
    let run = try await serialgps([ublox.devicePath, "CFG-MSG F0 02 01", "--timeout", "5"])
    #expect(run.status == 0, "\(run)")
    #expect(run.output.contains("u-blox, identified by listening"))
    #expect(run.output.contains("acknowledged"))

    let generic = try makeSimulator("midnight-rollover", profile: .generic)
    defer { generic.stop() }
    let unknown = try await serialgps([generic.devicePath, "standby"])
    #expect(unknown.status == 2, "\(unknown)")
    #expect(unknown.error.contains("could not tell the chipset of \(generic.devicePath)"))
    #expect(unknown.error.contains("--chipset"))
    #expect(generic.received.isEmpty)
  }

  @Test func genericNMEAHasNothingToSendButRawSentencesGoOut() async throws {
    let simulator = try makeSimulator("midnight-rollover", profile: .generic)
    defer { simulator.stop() }
    let standby = try await serialgps([simulator.devicePath, "standby", "--chipset", "nmea"])
    #expect(standby.status == 2)
    #expect(standby.error.contains("no standby command: there is nothing to send"))
    let raw = try await serialgps([simulator.devicePath, "PGRMO,,3", "--chipset", "nmea"])
    #expect(raw.status == 0, "\(raw)")
    #expect(raw.output.contains("sent; generic NMEA receivers acknowledge nothing"))
    #expect(await simulator.waitUntil { !$0.received.isEmpty })
    #expect(simulator.received.map(\.bytes) == [NMEAChecksum.frame("PGRMO,,3")])

    let sirf = try await serialgps([simulator.devicePath, "standby", "--chipset", "sirf"])
    #expect(sirf.status == 2)
    #expect(sirf.error.contains("PSRF117,16"))
    #expect(simulator.received.count == 1)  // refused before anything was written
  }

  @Test func usageAndDeviceErrorsExitWithTwo() async throws {
    let missing = try await serialgps(["/dev/serialgps-nonexistent", "standby", "--chipset", "mtk"])
    #expect(missing.status == 2)
    #expect(missing.error.contains("/dev/serialgps-nonexistent does not exist"))
    let noAction = try await serialgps(["/dev/ttyUSB0"])
    #expect(noAction.status == 2)
    #expect(noAction.error.contains("give a device and what to send"))
    let badRate = try await serialgps(["/dev/ttyUSB0", "wake", "--baud", "1234"])
    #expect(badRate.status == 2)
    #expect(badRate.error.contains("--baud 1234"))
    let badChecksum = try await serialgps(["/dev/ttyUSB0", "$PMTK161,0*29", "--chipset", "mtk"])
    #expect(badChecksum.status == 2)
    #expect(badChecksum.error.contains("checksum"))
    let help = try await serialgps(["--help"])
    #expect(help.status == 0)
    #expect(help.output.contains("Exit status"))
  }
}

/// Text appended from one thread and read from another.
final class LockedText: @unchecked Sendable {
  private let lock = NSLock()
  private var value = ""
  func append(_ more: String) { lock.withLock { value += more } }
  var text: String { lock.withLock { value } }
}
