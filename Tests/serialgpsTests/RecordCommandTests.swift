import Chipsets
import Foundation
import Glibc
import NMEA
import Replay
import SerialPort
import Simulator
import Testing

@testable import serialgps

@Suite("serialgps record: waking and stopping")
struct RecordCommandTests {
  @Test(
    "record --chipset mtk without --baud wakes a sleeping receiver at once, as watch does, instead of searching for its rate"
  )
  func aChipsetWakesBeforeAnySearch() async throws {
    let simulator = try ReceiverSimulator(
      recording: try Recording.load(path: "\(fixturesDirectory)/mtk-cold-start.nmea"),
      configuration: .init(
        profile: .mediatek, pace: .recorded(speed: 10), initialPowerState: .standby,
        wakeDelay: .milliseconds(20)))
    defer { simulator.stop() }
    let directory = try TemporaryDirectory()
    let output = directory.file("mtk.nmea")
    let record = try CLIProcess([
      "record", simulator.devicePath, "-o", output, "--duration", "2", "--chipset", "mtk",
    ])
    #expect(await record.exitStatus() == 0)
    // No search: it says "listening to … for its baud rate" when it searches (18 s at 9 rates
    // for a receiver in standby). Said, not timed: the full test run on two shared cores has
    // taken 18 s to start and stop this command without any search.
    #expect(!record.standardError.contains("for its baud rate"), "\(record.standardError)")
    #expect(!record.standardError.contains("pass --chipset"), "\(record.standardError)")
    #expect(!record.standardError.contains("heard no NMEA"), "\(record.standardError)")
    #expect(record.standardError.contains("at 9600 baud → \(output)"), "\(record.standardError)")
    #expect(simulator.receivedCommands.last == .mtkStandby(mode: 0))
    let written = try Recording.load(path: output)
    #expect(written.headerValue("Baud") == "9600")
    #expect(String(decoding: written.body, as: UTF8.self).contains("$PMTK001,314,3"))
  }

  @Test(
    "record's wake goes through the command driver: a command lost while the chip boots is sent again until acknowledged"
  )
  func aCommandLostWhileBootingIsRetried() async throws {
    // The chip boots for 700 ms after the byte that wakes it, longer than the 200 ms the wake
    // step settles: the sentence selection written then is lost, and only its retry, a
    // second later, is answered.
    let simulator = try ReceiverSimulator(
      recording: try Recording.load(path: "\(fixturesDirectory)/mtk-cold-start.nmea"),
      configuration: .init(
        profile: .mediatek, pace: .recorded(speed: 10), initialPowerState: .standby,
        wakeDelay: .milliseconds(700)))
    defer { simulator.stop() }
    let directory = try TemporaryDirectory()
    let output = directory.file("mtk.nmea")
    let record = try CLIProcess([
      "record", simulator.devicePath, "-o", output, "--duration", "4", "--chipset", "mtk",
      "--baud", "9600",
    ])
    #expect(await record.exitStatus() == 0, "\(record.standardError)")
    let selections = simulator.receivedCommands.filter {
      if case .mtkSetNMEAOutput = $0 { return true }
      return false
    }
    #expect(selections.count >= 1, "\(simulator.receivedCommands)")
    let body = String(decoding: try Recording.load(path: output).body, as: UTF8.self)
    #expect(body.contains("$PMTK001,314,3"), "\(record.standardError)")
    #expect(!record.standardError.contains("no answer"), "\(record.standardError)")
    #expect(simulator.receivedCommands.last == .mtkStandby(mode: 0))
  }

  @Test("a receiver woken at a guessed rate that stays unreadable is said, with what to do")
  func aSilentReceiverAfterWakingIsSaid() async throws {
    let terminal = try PseudoTerminal()
    let directory = try TemporaryDirectory()
    let output = directory.file("silent.nmea")
    let record = try CLIProcess([
      "record", terminal.devicePath, "-o", output, "--duration", "6", "--chipset", "ublox",
    ])
    #expect(await record.exitStatus() == 0)
    #expect(
      record.standardError.contains(
        "heard no NMEA from \(terminal.devicePath) at 9600 baud since waking it: if it is set to another rate, pass --baud N"
      ),
      "\(record.standardError)")
    terminal.hangUp()
  }

  @Test("a signal while record listens for the baud rate says that nothing was recorded")
  func aSignalDuringTheSearch() async throws {
    let terminal = try PseudoTerminal()  // a receiver that says nothing
    let directory = try TemporaryDirectory()
    let output = directory.file("never.nmea")
    let record = try CLIProcess(["record", terminal.devicePath, "-o", output])
    #expect(await eventually { record.standardError.contains("for its baud rate") })
    record.signal(SIGINT)
    #expect(await record.exitStatus() == 0)
    #expect(
      record.standardError.contains("nothing recorded, \(output) not written"),
      "\(record.standardError)")
    #expect(access(output, F_OK) != 0)
    terminal.hangUp()
  }
}
