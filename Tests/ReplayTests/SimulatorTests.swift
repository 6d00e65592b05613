import Chipsets
import Glibc
import NMEA
import Replay
import SerialPort
import Simulator
import Testing

/// The simulator driven through a real ``SerialPort``, as the driver uses it. Paces are ten
/// times the recording's, so a silent window of 1.5 s covers fifteen epochs.
@Suite struct SimulatorTests {
  static let silence = Duration.milliseconds(1500)

  /// Writes each step, waits for its acknowledgement where it has one, then its settle time;
  /// returns the acknowledgements seen.
  @discardableResult
  func run(_ steps: [CommandStep], on listener: PortListener, _ simulator: ReceiverSimulator)
    async throws
    -> [ReceiverAcknowledgement]
  {
    var answers: [ReceiverAcknowledgement] = []
    for step in steps {
      let before = listener.acknowledgements.count
      try await write(step.bytes, to: listener.port)
      if step.acknowledgement.expectsAnswer {
        let answered = await eventually {
          listener.acknowledgements.dropFirst(before).contains {
            step.isAcknowledged(by: $0) != nil
          }
        }
        let diagnostic =
          "no acknowledgement for \(step.summary): \(simulator.received) \(simulator.counters) "
          + "\(listener.acknowledgements) \(listener.framerStatistics)"
        #expect(answered, "\(diagnostic)")
        answers += listener.acknowledgements.dropFirst(before).filter {
          step.isAcknowledged(by: $0) != nil
        }
      }
      if step.settle > .zero { try await Task.sleep(for: step.settle) }
    }
    return answers
  }

  /// Enable → streaming → standby → silence → wake → streaming, with the command set's own
  /// bytes, for each profile that has a standby.
  @Test(arguments: [
    ("mtk-cold-start", ReceiverProfile.mediatek, ChipsetFamily.mediatek, HostInterface.uart),
    ("ublox-m8-drive", .ublox(.m8), .ublox, .uart),  // backup and the 0xFF wake
    ("ublox-m8-drive", .ublox(.m8), .ublox, .usb),  // GNSS stop and start
  ])
  func standbyIsSilentAndWakeResumes(
    fixture: String, profile: ReceiverProfile, family: ChipsetFamily, interface: HostInterface
  ) async throws {
    let simulator = try makeSimulator(fixture, profile: profile)
    defer { simulator.stop() }
    let port = try await openPort(simulator, baud: .b115200)
    let listener = PortListener(port, keepingBytes: true)
    let set = family.commandSet(interface: interface)

    let enable = try await run(set.powerOnSteps, on: listener, simulator)
    #expect(enable.allSatisfy { $0.isPositive })
    #expect(await eventually { listener.sentences >= 20 })
    #expect(simulator.powerState == .running)

    try await run(set.powerOffSteps, on: listener, simulator)
    let expectedOff: SimulatedPowerState =
      switch set.powerProfile.offState {
      case .gnssStopped: .gnssStopped
      case .backup: .backup
      default: .standby
      }
    #expect(await simulator.waitForPowerState(expectedOff))
    let sentBefore = simulator.counters.bytesSent
    #expect(await listener.staysSilent(for: Self.silence))
    #expect(simulator.counters.bytesSent == sentBefore)

    let sentences = listener.sentences
    let wake = try await run(set.powerOnSteps, on: listener, simulator)
    #expect(wake.allSatisfy { $0.isPositive })
    #expect(await eventually { listener.sentences >= sentences + 20 })
    #expect(simulator.powerState == .running)
    #expect(simulator.counters.powerOffs == 1)
    #expect(simulator.counters.powerOns == 1)
    // The stream around the power changes is whole. Decoded in one piece from the first line
    // end on (the port opened mid-stream; the listener's own counts depend on where its reads
    // split the stream, see docs/simulator.md).
    let bytes = listener.receivedBytes
    var decoder = NMEADecoder()
    decoder.decode(bytes[((bytes.firstIndex(of: 0x0A) ?? 0) + 1)...]) { _ in }
    #expect(decoder.statistics.framer.rejectedSentences == 0)
    #expect(decoder.statistics.framer.badBinaryFrames == 0)

    // Everything the port wrote, recorded in order, byte for byte.
    let written = (set.powerOnSteps + set.powerOffSteps + set.powerOnSteps).map(\.bytes)
    #expect(await simulator.waitUntil { $0.received.count >= written.count })
    #expect(simulator.received.map(\.bytes) == written)
    #expect(zip(simulator.received, simulator.received.dropFirst()).allSatisfy { $0.at <= $1.at })
    await listener.stop()
    port.close()
  }

  @Test func mediatekWakeAnnouncesItselfAndOnlyAfterTheWakeDelay() async throws {
    let simulator = try makeSimulator(
      "mtk-cold-start", profile: .mediatek, initialPowerState: .standby,
      wakeDelay: .milliseconds(150))
    defer { simulator.stop() }
    let listener = PortListener(try await openPort(simulator))
    #expect(await listener.staysSilent(for: Self.silence))
    try await write([0x0D, 0x0A], to: listener.port)
    #expect(await simulator.waitForPowerState(.running))
    // The first sentence after the wake is the start-up message; the stream follows.
    #expect(await eventually { listener.sentences >= 1 })
    #expect(listener.firstSentenceAddress == "PMTK010")
    #expect(simulator.received.first?.outcome == .wokeReceiver)
    #expect(await eventually { listener.epochs >= 2 })
    await listener.stop()
  }

  @Test func aCommandSentWhileTheReceiverBootsIsLostAndItsRetryAnswered() async throws {
    let simulator = try makeSimulator(
      "mtk-cold-start", profile: .mediatek, initialPowerState: .standby,
      wakeDelay: .milliseconds(300))
    defer { simulator.stop() }
    let listener = PortListener(try await openPort(simulator))
    let select = MediaTekCommandSet().sentenceSelection
    // Wake bytes and the command in one write: the command arrives while the chip boots.
    try await write(MediaTekCommandSet.wakeBytes + select.bytes, to: listener.port)
    #expect(await simulator.waitForPowerState(.running))
    #expect(simulator.received.map(\.outcome) == [.wokeReceiver, .lost], "\(simulator.received)")
    #expect(simulator.received.map(\.bytes) == [MediaTekCommandSet.wakeBytes, select.bytes])
    #expect(listener.acknowledgements.isEmpty)
    try await write(select.bytes, to: listener.port)
    #expect(
      await eventually { listener.acknowledgements == [.mtk(command: 314, result: .succeeded)] })
    await listener.stop()
  }

  @Test func ubloxAcknowledgementsAndRejectionsReachThePort() async throws {
    let simulator = try makeSimulator("ublox-m8-drive", profile: .ublox(.m8))
    defer { simulator.stop() }
    let listener = PortListener(try await openPort(simulator, baud: .b115200))
    let valset = UbloxCommandSet(UbloxOptions(generation: .m9AndLater)).selectionSteps[0]
    try await write(valset.bytes, to: listener.port)
    #expect(
      await eventually { listener.acknowledgements.contains(.ubx(.cfgValset, accepted: false)) })
    try await write(UbloxCommandSet.versionQuery.bytes, to: listener.port)
    #expect(await eventually { listener.ubxFrames.contains { $0.0 == .monVer } })
    let payload = try #require(listener.ubxFrames.first { $0.0 == .monVer }?.1)
    #expect(payload.count == 40 + 30 * UbloxModel.m8.version.extensions.count)
    #expect(simulator.counters.rejections == 1)
    #expect(simulator.counters.repliesSent == 2)
    await listener.stop()
  }

  @Test func anUnresponsiveReceiverNeverAnswersAndARejectingOneNaks() async throws {
    let simulator = try makeSimulator(
      "mtk-cold-start", profile: .mediatek, responses: .unresponsive)
    defer { simulator.stop() }
    let listener = PortListener(try await openPort(simulator))
    try await write(MediaTekCommandSet.standby.bytes, to: listener.port)
    #expect(await simulator.waitUntil { $0.received.count == 1 })
    try await Task.sleep(for: .seconds(1))  // well past any acknowledgement
    #expect(listener.acknowledgements.isEmpty)
    #expect(simulator.powerState == .running)
    simulator.setResponses(.rejecting)
    try await write(MediaTekCommandSet.standby.bytes, to: listener.port)
    #expect(await eventually { listener.acknowledgements == [.mtk(command: 161, result: .failed)] })
    #expect(simulator.powerState == .running)
    #expect(await eventually { listener.sentences >= 10 })  // still streaming
    await listener.stop()
  }

  @Test func genericAndSiRFReceiversNeverAcknowledge() async throws {
    let generic = try makeSimulator("midnight-rollover", profile: .generic)
    defer { generic.stop() }
    let listener = PortListener(try await openPort(generic))
    try await write(
      MediaTekCommandSet.standby.bytes + UbloxCommandSet.gnssStop.bytes, to: listener.port)
    #expect(await generic.waitUntil { $0.received.count == 2 })
    let sentences = listener.sentences
    #expect(await eventually { listener.sentences >= sentences + 20 })
    #expect(listener.acknowledgements.isEmpty)
    await listener.stop()

    let sirf = try makeSimulator("sirf-4800", profile: .sirf)
    defer { sirf.stop() }
    let sirfListener = PortListener(try await openPort(sirf, baud: .b4800))
    for step in SiRFCommandSet().powerOnSteps { try await write(step.bytes, to: sirfListener.port) }
    try await write(SiRFCommandSet.hibernate.bytes, to: sirfListener.port)
    #expect(await sirf.waitForPowerState(.hibernate))
    #expect(sirf.received.map(\.outcome) == Array(repeating: .carriedOut, count: 5))
    #expect(await eventually { sirfListener.framerStatistics.sentences > 0 })
    #expect(await sirfListener.staysSilent(for: Self.silence))
    try await write([0xFF], to: sirfListener.port)  // a byte does not wake hibernate
    #expect(await sirfListener.staysSilent(for: Self.silence))
    sirf.powerCycle()  // the ON_OFF pin does
    let before = sirfListener.sentences
    #expect(await eventually { sirfListener.sentences >= before + 10 })
    await sirfListener.stop()
  }

  /// A port blocked in `read` sees the unplug as a disconnection; the device is gone until it
  /// is plugged back in, then opens again under the same path and streams.
  @Test func hangUpInTheMiddleOfAReadAndReturn() async throws {
    let simulator = try makeSimulator("ublox-m8-drive", profile: .ublox(.m8))
    defer { simulator.stop() }
    let listener = PortListener(try await openPort(simulator, baud: .b115200))
    #expect(await eventually { listener.sentences >= 10 })
    simulator.hangUp()
    #expect(await listener.waitForEnd())
    let error = try #require(listener.error)
    #expect(error.isDisconnected, "\(error)")
    #expect(simulator.powerState == .off)
    #expect(!simulator.isPluggedIn)
    await #expect(throws: SerialPortError.self) { _ = try await openPort(simulator) }
    listener.port.close()

    try simulator.replug()
    #expect(simulator.pseudoTerminalPath != nil)  // a new pty (the kernel may reuse the number)
    let again = PortListener(try await openPort(simulator, baud: .b115200))
    #expect(await eventually { again.sentences >= 10 })
    #expect(simulator.counters.hangUps == 1)
    #expect(simulator.counters.replugs == 1)
    await again.stop()
  }

  /// The recording's own pace, bounded from above only: load can slow the simulator down,
  /// never speed it up.
  @Test func realTimePaceSendsAboutOneEpochPerSecond() async throws {
    let simulator = try makeSimulator("sirf-4800", profile: .sirf, pace: .realTime)
    defer { simulator.stop() }
    let start = ContinuousClock.now
    try await Task.sleep(for: .milliseconds(2500))
    let bursts = simulator.counters.burstsSent
    let elapsed = ContinuousClock.now - start
    #expect(bursts >= 1)
    #expect(Double(bursts) <= elapsed / .seconds(1) + 2)
  }

  /// As fast as possible and without looping, every byte of the recording arrives, in order,
  /// and then the receiver falls silent.
  @Test func fastPaceDeliversTheWholeRecording() async throws {
    let simulator = try makeSimulator(
      "ublox-m8-drive", profile: .ublox(.m8), pace: .asFastAsPossible,
      initialPowerState: .off, loops: false)
    defer { simulator.stop() }
    let listener = PortListener(try await openPort(simulator, baud: .b115200), keepingBytes: true)
    simulator.powerCycle()
    let recording = simulator.recording
    #expect(await eventually(timeout: .seconds(60)) { listener.bytes == recording.body.count })
    #expect(listener.receivedBytes == recording.body)
    #expect(simulator.counters.sentencesSent == recording.sentenceCount)
    #expect(simulator.counters.burstsSent == recording.bursts.count)
    #expect(simulator.counters.bytesDropped == 0)
    #expect(await listener.staysSilent(for: .milliseconds(500)))
    // Decoded in one piece: the listener's own count depends on where its reads split the
    // stream (NMEAFramer loses a sentence whose `$` ends a read; see docs/simulator.md).
    var decoder = NMEADecoder()
    decoder.decode(listener.receivedBytes) { _ in }
    #expect(decoder.statistics.framer.sentences == recording.sentenceCount)
    await listener.stop()
  }

  @Test func theDeviceLinkIsStableAndRemovedAtStop() async throws {
    let simulator = try makeSimulator("midnight-rollover", profile: .generic)
    let path = simulator.devicePath
    #expect(path.hasPrefix("/tmp/serialgps-sim-"))
    simulator.hangUp()
    try simulator.replug()
    #expect(simulator.devicePath == path)
    simulator.stop()
    var status = stat()
    #expect(lstat(path, &status) != 0)
  }
}
