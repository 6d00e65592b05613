import Chipsets
import Foundation
import Glibc
import NMEA
import Replay
import SerialPort
import Simulator
import Testing

@testable import serialgps

// `serialgps replay`, `record` and `demo` run as the built executable: the device they make or
// read, their signals and exit status are the point. Real time throughout, with generous
// bounds.

/// Opens a device on a thread of its own (opening and reading a tty block).
func openDevice(_ path: String, baud: BaudRate) async throws -> SerialPort {
  try await withCheckedThrowingContinuation { continuation in
    Thread { continuation.resume(with: Result { try SerialPort.open(path: path, baudRate: baud) }) }
      .start()
  }
}

/// Reads a port on a thread of its own, decoding what arrives and keeping every byte.
final class DeviceReader: @unchecked Sendable {
  let port: SerialPort
  private let lock = NSLock()
  private var decoder = NMEADecoder()
  private var received: [UInt8] = []
  private var epochs: [Fix] = []
  private var acknowledgements: [ReceiverAcknowledgement] = []
  private var stopping = false
  private var ended = false

  init(_ port: SerialPort) {
    self.port = port
    Thread { [self] in run() }.start()
  }

  private func run() {
    var buffer = [UInt8](repeating: 0, count: 4096)
    defer { lock.withLock { ended = true } }
    while !lock.withLock({ stopping }) {
      let result = buffer.withUnsafeMutableBytes { raw in
        Result { () throws(SerialPortError) in try port.read(into: raw, timeout: nil) }
      }
      guard case .success(.received(let count)) = result else {
        if case .failure = result { return }
        continue
      }
      lock.withLock {
        received += buffer[..<count]
        decoder.decode(buffer[..<count]) { event in
          switch event {
          case .epoch(let epoch): epochs.append(epoch.fix)
          case .sentence(let sentence):
            if let answer = ReceiverAcknowledgement(sentence) { acknowledgements.append(answer) }
          default: break
          }
        }
      }
    }
  }

  var bytes: Int { lock.withLock { received.count } }

  /// Waits until nothing has arrived for `quiet`, however far behind a loaded machine left
  /// this reader; false if the bytes never stop.
  func drain(quiet: Duration = .milliseconds(300), timeout: Duration = .seconds(15)) async -> Bool {
    let deadline = ContinuousClock.now + timeout
    var last = bytes
    var since = ContinuousClock.now
    while ContinuousClock.now < deadline {
      try? await Task.sleep(for: .milliseconds(20))
      if bytes != last {
        last = bytes
        since = ContinuousClock.now
      } else if ContinuousClock.now - since >= quiet {
        return true
      }
    }
    return false
  }
  var fixes: [Fix] { lock.withLock { epochs } }
  var answers: [ReceiverAcknowledgement] { lock.withLock { acknowledgements } }
  var hasEnded: Bool { lock.withLock { ended } }

  func stop() {
    lock.withLock { stopping = true }
    port.interrupt()
  }
}

@Suite("serialgps replay, record and demo, as processes", .serialized)
struct ReplayCommandTests {
  @Test("replay: the device on stdout behaves like the chipset; Ctrl-C removes it")
  func replayBehavesLikeTheChipset() async throws {
    let directory = try TemporaryDirectory()
    let link = directory.file("gps0")
    let replay = try CLIProcess([
      "replay", "\(fixturesDirectory)/mtk-cold-start.nmea", "--speed", "10", "--link", link,
    ])
    #expect(await eventually { replay.standardOutput.hasSuffix("\n") })
    #expect(replay.standardOutput == link + "\n")
    #expect(replay.standardError.contains("as a virtual MediaTek receiver, at 10× speed"))

    let port = try await openDevice(link, baud: .b9600)
    let reader = DeviceReader(port)
    #expect(await eventually { reader.fixes.count >= 3 })

    // Standby: acknowledged, then silence; the replay says what it got.
    try port.write(MediaTekCommandSet.standby.bytes, timeout: .seconds(5))
    #expect(await eventually { reader.answers.contains { $0.isPositive } })
    #expect(
      await eventually {
        replay.standardError.contains("$PMTK161,0") || replay.standardError.contains("standby")
      })
    #expect(await eventually { replay.standardError.contains("the receiver is now in standby") })
    #expect(await reader.drain())  // whatever was under way has been read
    let before = reader.bytes
    try await Task.sleep(for: .seconds(1))  // ten epochs at 10×
    #expect(reader.bytes == before)

    // Any byte wakes it; epochs resume.
    try port.write(MediaTekCommandSet.wakeBytes, timeout: .seconds(5))
    #expect(await eventually { reader.bytes > before })
    #expect(await eventually { replay.standardError.contains("woke the receiver") })
    // Standard error is a pipe, not a terminal: no progress line.
    #expect(!replay.standardError.contains("\u{1B}[K"))

    replay.signal(SIGINT)
    #expect(await replay.exitStatus() == 0)
    #expect(replay.standardError.contains("the device is gone"))
    #expect(await eventually { reader.hasEnded })  // the reader saw the hang-up
    #expect(access(link, F_OK) != 0)
    reader.stop()
    port.close()
  }

  @Test("replay --physics: a cold start, the energy file, the control FIFO, the summary")
  func replayWithPhysics() async throws {
    let directory = try TemporaryDirectory()
    let link = directory.file("gps0")
    let energy = directory.file("energy.json")
    let control = directory.file("control")
    let replay = try CLIProcess([
      "replay", "\(fixturesDirectory)/mtk-cold-start.nmea", "--speed", "10", "--link", link,
      "--physics", "--start", "cold", "--energy-file", energy, "--control", control,
    ])
    #expect(await eventually { replay.standardOutput.hasSuffix("\n") })
    // Standard error is read apart from standard output: its line may come in a moment later.
    #expect(
      await eventually {
        replay.standardError.contains(
          "physics: MediaTek MT3339 (GlobalTop PA6H), timings ×10 faster than the data sheet")
      })
    let port = try await openDevice(link, baud: .b9600)
    let reader = DeviceReader(port)
    // The data sheet's cold start at ×10 (32 s: the first fix comes after 3.2 s).
    let ttff = ReceiverFigures.mediatekMT3339.coldStart / .seconds(10)
    #expect(
      await eventually(timeout: .seconds(20)) { reader.fixes.contains { $0.position != nil } })
    func summary() -> String {
      String(
        decoding: (try? Data(contentsOf: URL(fileURLWithPath: energy))) ?? Data(), as: UTF8.self)
    }
    #expect(await eventually { summary().contains("\"ttff_s\":\(ttff)") })
    #expect(summary().contains("\"kind\":\"cold\""))
    #expect(summary().contains("\"tracking\":{"))
    // The control FIFO: the backup battery removed, then a power cut: the next start is cold.
    let fifo = try FileHandle(forWritingTo: URL(fileURLWithPath: control))
    fifo.write(Data("backup off\npower-cycle\nfrobnicate\n".utf8))
    try fifo.close()
    #expect(
      await eventually { replay.standardError.contains("control: main power cut and restored") })
    #expect(
      await eventually {
        replay.standardError.contains("control: 'frobnicate': say 'backup on|off'")
      })
    #expect(await eventually { summary().contains("\"backup_power\":false") })
    #expect(await eventually { summary().components(separatedBy: "\"kind\":\"cold\"").count == 3 })
    replay.signal(SIGINT)
    #expect(await replay.exitStatus() == 0)
    #expect(replay.standardError.contains("serialgps replay: charge "))
    #expect(
      replay.standardError.contains(
        "starts: cold start at 0 s: first fix after \(String(format: "%.2f", ttff)) s"))
    #expect(access(control, F_OK) != 0)
    reader.stop()
    port.close()
  }

  @Test("replay --physics options, and what belongs to it")
  func physicsOptions() {
    var expected = ReplayOptions(path: "f", pace: .recorded(speed: 2))
    expected.physics = .init(
      timeScale: 60, ephemerisValidity: 300, start: .warm, backupPower: false, seed: 7,
      energyFile: "e.json", control: "c")
    #expect(
      ReplayOptions.parse([
        "f", "--speed", "2", "--physics", "--time-scale", "60", "--ephemeris-validity", "300",
        "--start", "warm", "--no-backup", "--seed", "7", "--energy-file", "e.json", "--control",
        "c",
      ]) == .options(expected))
    #expect(
      ReplayOptions.parse(["f", "--energy-file", "e.json"])
        == .invalid("--energy-file belongs to --physics; add --physics"))
    #expect(
      ReplayOptions.parse(["f", "--physics", "--start", "aided"])
        == .invalid("--start needs hot, warm or cold, not 'aided'"))
    var receiver = ReplayOptions(path: "f")
    receiver.physics = .init(hotStart: 2.5, firstFixError: 30, convergedError: 4, convergence: 2)
    #expect(
      ReplayOptions.parse([
        "f", "--physics", "--hot-start", "2.5", "--first-error", "30", "--converged-error", "4",
        "--convergence", "2",
      ]) == .options(receiver))
    #expect(
      ReplayOptions.parse(["f", "--convergence", "2"])
        == .invalid("--convergence belongs to --physics; add --physics"))
    #expect(
      ReplayOptions.parse(["f", "--physics", "--first-error", "5", "--converged-error", "6"])
        == .invalid(
          "--converged-error (6.0 m) must be below --first-error (5.0 m): the error shrinks "
            + "after the first fix"))
    #expect(DemoOptions.parse(["--no-physics"]) == .options(DemoOptions(physics: false)))
  }

  @Test("replay on a terminal shows its progress in place")
  func replayProgressOnATerminal() async throws {
    let terminal = try PseudoTerminal()
    let handle = try #require(FileHandle(forWritingAtPath: terminal.devicePath))
    let replay = try CLIProcess(
      ["replay", "\(fixturesDirectory)/midnight-rollover.nmea", "--speed", "40"],
      standardError: handle)
    let lines = LockedBytes()
    Thread {
      var buffer = [UInt8](repeating: 0, count: 4096)
      while true {
        let result = buffer.withUnsafeMutableBytes { raw in
          Result { () throws(SerialPortError) in
            try terminal.read(into: raw, timeout: .seconds(20))
          }
        }
        guard case .success(.received(let count)) = result else { return }
        lines.append(buffer[..<count])
      }
    }.start()
    #expect(await replay.exitStatus() == 0)
    #expect(await eventually { lines.text.contains("end of the recording (61 epochs)") })
    let text = lines.text
    #expect(text.contains("\r\u{1B}[Kepoch "))
    #expect(text.contains("/61 · receiver running"))
    terminal.hangUp()
  }

  @Test("record: every byte after a header; the recording decodes to the same fixes")
  func recordKeepsEveryByte() async throws {
    let recording = try Recording.load(path: "\(fixturesDirectory)/noisy-ublox.nmea")
    // Off until the recorder has the port open, so that it hears the very first epoch.
    let simulator = try ReceiverSimulator(
      recording: recording,
      configuration: .init(
        profile: .generic, pace: .recorded(speed: 20), loops: false, initialPowerState: .off))
    defer { simulator.stop() }
    let directory = try TemporaryDirectory()
    let output = directory.file("noisy.nmea")
    let record = try CLIProcess([
      "record", simulator.devicePath, "-o", output, "--baud", "38400", "--name", "noisy test",
    ])
    // The header is written once the port is open.
    #expect(
      await eventually { (try? Data(contentsOf: URL(fileURLWithPath: output)).count) ?? 0 > 0 })
    simulator.powerCycle()
    #expect(await simulator.waitUntil(timeout: .seconds(30)) { $0.isPlaybackFinished })
    #expect(
      await eventually {
        let size = (try? Data(contentsOf: URL(fileURLWithPath: output)).count) ?? 0
        return size >= recording.body.count
      })
    record.signal(SIGINT)
    #expect(await record.exitStatus() == 0)
    #expect(record.standardError.contains("60 epochs"))

    let written = try Recording.load(path: output)
    #expect(written.name == "noisy test")
    #expect(written.headerValue("Device") == simulator.devicePath)
    #expect(written.headerValue("Baud") == "38400")
    #expect(written.headerValue("Recorder") == "serialgps \(Version.serialgps)")
    #expect(written.headerValue("Date")?.count == 10)
    #expect(written.header.map(\.key) == ["Name", "Device", "Baud", "Date", "Started", "Recorder"])
    // Binary frames, corrupted bytes and all: exactly what the receiver sent.
    #expect(written.body == recording.body)
    let original = decode(
      [UInt8](try Data(contentsOf: URL(fileURLWithPath: "\(fixturesDirectory)/noisy-ublox.nmea"))),
      json: true
    ).output
    let again = decode([UInt8](try Data(contentsOf: URL(fileURLWithPath: output))), json: true)
      .output
    #expect(again == original)
    #expect(again.components(separatedBy: "\"class\":\"TPV\"").count - 1 == 60)
  }

  @Test("record --duration stops by itself; --chipset wakes the receiver and puts it back to sleep")
  func recordWithDurationAndChipset() async throws {
    let simulator = try ReceiverSimulator(
      recording: try Recording.load(path: "\(fixturesDirectory)/mtk-cold-start.nmea"),
      configuration: .init(
        profile: .mediatek, pace: .recorded(speed: 10), initialPowerState: .standby,
        wakeDelay: .milliseconds(20)))
    defer { simulator.stop() }
    let directory = try TemporaryDirectory()
    let output = directory.file("mtk.nmea")
    let record = try CLIProcess([
      "record", simulator.devicePath, "-o", output, "--baud", "9600", "--duration", "2",
      "--chipset", "mtk",
    ])
    #expect(await record.exitStatus() == 0)
    #expect(await simulator.waitForCommand { $0 == .mtkStandby(mode: 0) } != nil)
    let commands = simulator.receivedCommands
    #expect(commands.contains { if case .mtkSetNMEAOutput = $0 { true } else { false } })
    #expect(commands.last == .mtkStandby(mode: 0))
    #expect(await simulator.waitForPowerState(.standby))
    let written = try Recording.load(path: output)
    #expect(written.headerValue("Chipset") == "MediaTek/Quectel")
    // The chip's answers are in the recording with the epochs.
    #expect(String(decoding: written.body, as: UTF8.self).contains("$PMTK001,314,3"))
    #expect(written.bursts.count >= 5)
  }

  @Test("record --baud auto keeps the sentences it heard while finding the rate")
  func recordKeepsWhatTheRateSearchHeard() async throws {
    let terminal = try PseudoTerminal()
    let directory = try TemporaryDirectory()
    let output = directory.file("auto.nmea")
    let record = try CLIProcess([
      "record", terminal.devicePath, "-o", output, "--baud", "auto", "--duration", "2",
    ])
    // A pair of sentences is what the search needs. The search flushes the input when it sets
    // a rate, so a pair sent before that is lost: send numbered pairs until it has decided.
    var pair = 0
    while !record.standardError.contains("baud → \(output)") && pair < 100 {
      pair += 1
      try terminal.write(
        Array(
          (sentence("GPTXT,01,01,02,pair \(pair) A") + sentence("GPTXT,01,01,02,pair \(pair) B"))
            .utf8))
      try await Task.sleep(for: .milliseconds(150))
    }
    #expect(record.standardError.contains("baud → \(output)"))
    let after = sentence("GPTXT,01,01,02,after the search")
    try terminal.write(Array(after.utf8))
    #expect(await record.exitStatus() == 0)
    let body = String(decoding: try Recording.load(path: output).body, as: UTF8.self)
    // The pair the search recognised is in the recording, before what came after it.
    let recognised = sentence("GPTXT,01,01,02,pair \(pair) B")
    #expect(body.contains(recognised))
    #expect(body.contains(after))
    if let a = body.range(of: recognised), let b = body.range(of: after) {
      #expect(a.upperBound <= b.lowerBound)
    }
  }

  @Test("record names what is wrong: a missing device, an unwritable file")
  func recordErrors() async throws {
    let directory = try TemporaryDirectory()
    let missing = try CLIProcess(["record", directory.file("ttyNONE"), "-o", directory.file("x")])
    #expect(await missing.exitStatus() == 2)
    #expect(missing.standardError.contains(directory.file("ttyNONE")))
    #expect(access(directory.file("x"), F_OK) != 0)  // nothing written without a device

    let simulator = try ReceiverSimulator(
      recording: try Recording.load(path: "\(fixturesDirectory)/sirf-4800.nmea"),
      configuration: .init(profile: .generic))
    defer { simulator.stop() }
    let unwritable = try CLIProcess([
      "record", simulator.devicePath, "-o", directory.file("no/such/dir.nmea"), "--baud", "4800",
    ])
    #expect(await unwritable.exitStatus() == 2)
    #expect(unwritable.standardError.contains("cannot write \(directory.file("no/such/dir.nmea"))"))
  }

  @Test("demo: labelled, power on, live fixes through the driver, power off, exit 0")
  func demo() async throws {
    let demo = try CLIProcess(["demo", "--speed", "20", "--fixes", "6"])
    #expect(await demo.exitStatus() == 0)
    let text = demo.standardOutput
    #expect(text.contains("this is a DEMO, not a real receiver"))
    #expect(text.contains("status: powering on"))
    #expect(text.contains("→ receiver got wake from backup"))
    #expect(
      text.contains("→ receiver got UBX-CFG-RST controlled GNSS start (hot start): carried out"))
    let positions = text.split(separator: "\n").filter {
      $0.hasPrefix("  fix ") && $0.contains("  3D  ")
    }
    #expect(positions.count == 6)
    #expect(text.contains("→ receiver got UBX-RXM-PMREQ backup"))
    #expect(text.contains("The virtual receiver is in backup again"))
    #expect(demo.standardError.isEmpty)
  }

  @Test("demo: every command by its name, a line of plain words, where the binary is")
  func demoSpeaksPlainly() async throws {
    let demo = try CLIProcess(["demo", "--speed", "20", "--fixes", "3"])
    #expect(await demo.exitStatus() == 0, "\(demo.standardError)")
    let text = demo.standardOutput
    // The aiding the wake sends, by its name, never as a dump of the decoded case.
    #expect(text.contains("→ receiver got UBX-MGA-INI-TIME_UTC (the time, for a faster fix)"))
    #expect(!text.contains("ubxOther"), "\(text)")
    #expect(!text.contains("payload:"), "\(text)")
    let got = text.split(separator: "\n").filter { $0.contains("→ receiver got ") }
    #expect(got.count >= 7, "\(got)")
    // Plain words for what the physics lines and the fixes say.
    for word in ["backup is", "ephemeris", "acc is", "charge is"] {
      #expect(text.contains(word), "\(word)")
    }
    // Where this binary is, and how to install it.
    let binary = try serialgpsBinary().resolvingSymlinksInPath().path
    #expect(text.contains("This serialgps is \(binary)."), "\(text)")
    #expect(text.contains("`sudo make install`"))
    #expect(text.contains("`make deb`"))
  }

  @Test("the options, and clear complaints")
  func options() {
    #expect(
      ReplayOptions.parse(["f.nmea", "--speed", "5", "--chipset", "mtk", "--loop"])
        == .options(
          ReplayOptions(path: "f.nmea", pace: .recorded(speed: 5), chipset: .mediatek, loops: true))
    )
    #expect(
      ReplayOptions.parse(["f", "--fast"])
        == .options(ReplayOptions(path: "f", pace: .asFastAsPossible)))
    #expect(
      ReplayOptions.parse(["f", "--fast", "--speed", "2"])
        == .invalid("--speed and --fast exclude each other"))
    #expect(
      ReplayOptions.parse(["f", "--speed", "0"])
        == .invalid("--speed needs a factor above 0, such as 5 or 0.5"))
    #expect(
      ReplayOptions.parse(["f", "--chipset", "garmin"])
        == .invalid("unknown chipset 'garmin'; use nmea|ublox|mtk|sirf|casic|airoha"))
    // A maker names no family: the user is told which names to give.
    #expect(
      ReplayOptions.parse(["f", "--chipset", "quectel"])
        == .invalid(
          "'quectel' makes receivers of more than one chipset family; name the family: "
            + ChipsetRegistry.choices(ChipsetRegistry.drivers(maker: "quectel").map(\.family))))
    #expect(
      ChipsetRegistry.choices(ChipsetRegistry.drivers(maker: "quectel").map(\.family))
        .contains("mtk (MediaTek/Quectel)"))
    #expect(
      RecordOptions.parse(["/dev/ttyACM0", "-o", "x.nmea", "--duration", "1.5", "--baud", "auto"])
        == .options(
          RecordOptions(device: "/dev/ttyACM0", output: "x.nmea", duration: .milliseconds(1500))))
    #expect(
      RecordOptions.parse(["/dev/ttyACM0"]) == .invalid("give the file to write with -o FILE"))
    #expect(
      RecordOptions.parse(["-o", "x"])
        == .invalid("give the device to record, such as /dev/ttyACM0"))
    #expect(DemoOptions.parse(["--fixes", "0"]) == .invalid("--fixes needs a number above 0"))
    // Numbers out of range, or no number at all, are refused with the option's message; a
    // duration too long to count in milliseconds used to crash the conversion.
    for text in ["1e300", "nan", "inf", "-1", "", "soon"] {
      #expect(
        RecordOptions.parse(["/dev/ttyACM0", "-o", "x", "--duration", text])
          == .invalid("--duration needs a number of seconds from 0.001, such as 60"))
      #expect(
        ReplayOptions.parse(["f", "--speed", text])
          == .invalid("--speed needs a factor above 0, such as 5 or 0.5"))
    }
    #expect(
      RecordOptions.parse(["/dev/ttyACM0", "-o", "x", "--duration"])
        == .invalid("--duration needs a number of seconds from 0.001, such as 60"))
    #expect(
      RecordOptions.parse(["/dev/ttyACM0", "-o", "x", "--baud", "1234"])
        == .invalid(
          "--baud 1234 is not a rate serialgps can set; use "
            + BaudRate.supported.map(\.description).joined(separator: ", ") + " or auto"))
    #expect(
      ReplayOptions.parse(["f", "--chipset"]) == .invalid("--chipset needs a name"))
  }
}

/// Bytes collected from another thread.
final class LockedBytes: @unchecked Sendable {
  private let lock = NSLock()
  private var bytes: [UInt8] = []
  func append(_ more: ArraySlice<UInt8>) { lock.withLock { bytes += more } }
  var text: String { lock.withLock { String(decoding: bytes, as: UTF8.self) } }
}
