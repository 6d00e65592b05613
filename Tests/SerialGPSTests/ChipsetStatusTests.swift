import Chipsets
import Foundation
import NMEA
import POSIX
import SerialPort
import Testing

@testable import SerialGPS

/// What the app is told about the receiver's chipset: that power commands are withheld and
/// what to set, what was identified, and why a connection or a command failed, typed.
@Suite struct ChipsetStatusTests {
  func makeReceiver(
    chipset: ChipsetChoice = .automatic, connector: MemoryConnector = MemoryConnector()
  ) -> (GPSReceiver, MemoryConnector) {
    var options = GPSReceiver.Options()
    options.linger = .zero
    options.chipset = chipset
    options.acknowledgementTimeout = .milliseconds(200)
    options.awakeMarkers = nil
    return (GPSReceiver(connector: connector, options: options, clock: SystemClock()), connector)
  }

  /// The statuses a subscription on the publishing thread gets: every one, in order, with no
  /// queue in between (a queued subscription loses what is still queued when the receiver
  /// shuts down).
  final class DirectStatuses: @unchecked Sendable {
    private let statuses = Locked<[ReceiverStatus]>([])
    var all: [ReceiverStatus] { statuses.withLock { $0 } }
    func subscribe(to receiver: GPSReceiver) -> Subscription {
      receiver.subscribeOnReaderThread { [statuses] item in
        if case .event(.status(let status)) = item { statuses.withLock { $0.append(status) } }
      }
    }
  }

  func isWithheld(_ status: ReceiverStatus, _ moment: CommandsWithheld.Moment) -> Bool {
    if case .commandsWithheld(let withheld) = status { return withheld.moment == moment }
    return false
  }

  /// Nothing names the chipset: subscribers are told at power-on, before the stream, and
  /// again at power-off, with what to set; nothing is ever written.
  @Test func withheldAtPowerOnAndAgainAtPowerOff() async throws {
    let (receiver, connector) = makeReceiver()
    let log = EventLog(receiver.subscribe())
    let direct = DirectStatuses()
    let subscription = direct.subscribe(to: receiver)
    #expect(await eventually { connector.opens == 1 })
    connector.latest!.feed(cycle(second: 1) + cycle(second: 2))
    #expect(await eventually { log.fixes.count >= 1 })
    let withheld = CommandsWithheld(moment: .powerOn, identification: nil)
    #expect(log.statuses.prefix(3) == [.poweringOn, .commandsWithheld(withheld), .streaming])
    #expect(withheld.description.contains("a receiver in standby stays asleep"))
    // An app developer reads the Swift API's words, a person at the terminal serialgps's.
    #expect(withheld.description.contains("or chipset: .probe to ask it"))
    #expect(!withheld.description.contains("--chipset"))
    let terminal = withheld.description(in: .commandLine)
    #expect(terminal.contains("give --chipset ublox|mtk|sirf|casic|airoha to name its family"))
    #expect(terminal.contains("or --chipset probe to ask it"))
    #expect(!terminal.contains("chipset: ."), "\(terminal)")
    #expect(receiver.commandFamily == .nmea)
    #expect(receiver.commandsWithheld(at: .powerOff)?.moment == .powerOff)
    // The subscription is still open while the shutdown powers off: it hears the repeat.
    await receiver.shutdown()
    #expect(direct.all.contains { isWithheld($0, .powerOff) }, "\(direct.all)")
    #expect(direct.all.filter { isWithheld($0, .powerOn) }.count == 1)
    subscription.cancel()
    #expect(receiver.statistics.powerCommandsWithheld == 2)
    #expect(connector.latest!.writes.isEmpty)
  }

  /// A user who chose "no commands" is not told that commands are withheld.
  @Test func aChosenGenericReceiverIsNotTold() async throws {
    let (receiver, connector) = makeReceiver(chipset: .family(.nmea))
    let log = EventLog(receiver.subscribe())
    #expect(await eventually { connector.opens == 1 })
    connector.latest!.feed(cycle(second: 1) + cycle(second: 2))
    #expect(await eventually { log.fixes.count >= 1 })
    await receiver.shutdown()
    #expect(!log.statuses.contains { isWithheld($0, .powerOn) || isWithheld($0, .powerOff) })
    #expect(receiver.statistics.powerCommandsWithheld == 0)
    #expect(receiver.commandsWithheld() == nil)
  }

  /// What the receiver says about itself is readable (family, model, firmware, the lines
  /// after the one that names the maker included), and chooses the standby.
  @Test func theIdentificationIsReadableAndChoosesTheStandby() async throws {
    let (receiver, connector) = makeReceiver()
    let log = EventLog(receiver.subscribe())
    #expect(await eventually { connector.opens == 1 })
    #expect(receiver.identification == nil)
    connector.latest!.feed(
      sentence("GPTXT,01,01,02,u-blox ag - www.u-blox.com")
        + sentence("GPTXT,01,01,02,HW  UBX-G50xx  00040005 ")
        + sentence("GPTXT,01,01,02,EXT CORE 6.00 (33247) May 13 2009 17:35:46")
        + sentence("GPTXT,01,01,02,MOD LEA-5H-0") + cycle(second: 1) + cycle(second: 2))
    #expect(await eventually { receiver.identification?.model != nil })
    let identification = try #require(receiver.identification)
    #expect(identification.family == .ublox)
    #expect(identification.confidence == .high)
    #expect(identification.model == "LEA-5H-0")
    #expect(identification.firmware == "EXT CORE 6.00 (33247)")
    #expect(identification.hardware == "00040005")
    #expect(receiver.commandFamily == .ublox)
    #expect(receiver.commandsWithheld() == nil)
    await receiver.shutdown()
    // Unknown at power-on (told), known at power-off: the u-blox standby went out.
    #expect(log.statuses.contains { isWithheld($0, .powerOn) })
    #expect(!log.statuses.contains { isWithheld($0, .powerOff) })
    #expect(receiver.statistics.powerCommandsWithheld == 1)
    let standby = UbloxCommandSet(UbloxOptions(port: .uart1)).powerOffSteps.map(\.bytes)
    #expect(connector.latest!.writes == standby)
  }

  /// A hint too weak to write to (Quectel's own sentences, which newer Quectel modules on
  /// other chips send too) is named in the advice: what to set if it is right.
  @Test func aWeakHintNamesTheLikelyFamily() async throws {
    let (receiver, connector) = makeReceiver()
    let log = EventLog(receiver.subscribe())
    let direct = DirectStatuses()
    let subscription = direct.subscribe(to: receiver)
    #expect(await eventually { connector.opens == 1 })
    connector.latest!.feed(
      sentence("PQTMVERNO,L76LNR01A01S,2019/01/01,12:00:00") + cycle(second: 1)
        + cycle(second: 2))
    #expect(await eventually { receiver.identification?.confidence == .low })
    #expect(receiver.commandFamily == .nmea)
    let withheld = try #require(receiver.commandsWithheld())
    #expect(withheld.likelyFamily == .mediatek)
    #expect(withheld.description.contains("set chipset: .family(.mediatek); or chipset: .probe"))
    #expect(
      withheld.description(in: .commandLine).contains("give --chipset mtk; or --chipset probe"))
    #expect(withheld.description.contains("Quectel $PQTMVERNO sentence"))
    await receiver.shutdown()
    #expect(direct.all.contains { isWithheld($0, .powerOff) }, "\(direct.all)")
    #expect(connector.latest!.writes.isEmpty)
    _ = log
    subscription.cancel()
  }

  /// `--chipset quectel` names a maker whose modules are on several families: nothing is
  /// written while what the receiver says names none of them, and the status says which names
  /// to give; a Quectel hint (`$PQTM…`, sent by its modules on other chips too) is not enough.
  @Test func aMakerWritesNothingUntilIdentifiedAndSaysWhichToName() async throws {
    let choice = try #require(ChipsetChoice(cliName: "quectel"))
    guard case .oneOf(let maker, let families) = choice else {
      Issue.record("quectel parsed as \(choice)")
      return
    }
    #expect(maker == "quectel")
    #expect(families.contains(.mediatek))
    let (receiver, connector) = makeReceiver(chipset: choice)
    let log = EventLog(receiver.subscribe())
    #expect(await eventually { connector.opens == 1 })
    connector.latest!.feed(
      sentence("PQTMVERNO,L76KNR01A01S,2023/01/01,12:00:00") + cycle(second: 1)
        + cycle(second: 2))
    #expect(await eventually { log.fixes.count >= 1 })
    #expect(receiver.commandFamily == .nmea)
    let withheld = try #require(receiver.commandsWithheld())
    #expect(withheld.choices == families)
    let terminal = withheld.description(in: .commandLine)
    #expect(terminal.contains("give " + ChipsetRegistry.choices(families)), "\(terminal)")
    #expect(terminal.contains("--chipset mtk (MediaTek/Quectel)"), "\(terminal)")
    #expect(withheld.description.contains("set chipset: .family(.mediatek)"))
    await receiver.shutdown()
    #expect(connector.latest!.writes.isEmpty)
  }

  /// Once the receiver names itself as one of the maker's families (`$PMTK011`), that
  /// family's commands go out: the MediaTek standby at power-off.
  @Test func aMakerIdentifiedAsOneOfItsFamiliesGetsItsCommands() async throws {
    let choice = try #require(ChipsetChoice(cliName: "Quectel"))
    let (receiver, connector) = makeReceiver(chipset: choice)
    _ = EventLog(receiver.subscribe())
    #expect(await eventually { connector.opens == 1 })
    connector.latest!.feed(sentence("PMTK011,MTKGPS") + cycle(second: 1) + cycle(second: 2))
    #expect(await eventually { receiver.identification?.family == .mediatek })
    #expect(receiver.commandFamily == .mediatek)
    #expect(receiver.commandsWithheld() == nil)
    await receiver.shutdown()
    #expect(connector.latest!.writes.first == MediaTekCommandSet.standby.bytes)
  }

  /// A receiver that names another maker's chip (u-blox) is not one of the user's: it gets
  /// no commands, and the status still names the choices.
  @Test func aMakerIdentifiedAsAnotherFamilyGetsNothing() async throws {
    let choice = try #require(ChipsetChoice(cliName: "quectel"))
    let (receiver, connector) = makeReceiver(chipset: choice)
    _ = EventLog(receiver.subscribe())
    #expect(await eventually { connector.opens == 1 })
    connector.latest!.feed(
      sentence("GPTXT,01,01,02,u-blox ag - www.u-blox.com") + cycle(second: 1) + cycle(second: 2))
    #expect(await eventually { receiver.identification?.family == .ublox })
    #expect(receiver.commandFamily == .nmea)
    #expect(receiver.commandsWithheld()?.choices.isEmpty == false)
    await receiver.shutdown()
    #expect(connector.latest!.writes.isEmpty)
  }

  /// Every way a serial port fails to open arrives as a kind an app can act on, with the
  /// port's own message.
  @Test func serialPortFailuresAreTyped() {
    func kind(_ errno: Errno) -> FailureReason.Kind {
      FailureReason(SerialPortError(device: "/dev/ttyUSB0", operation: .open, errno: errno)).kind
    }
    #expect(kind(.noSuchFileOrDirectory) == .missing)
    #expect(kind(.permissionDenied) == .permissionDenied)
    #expect(kind(.notPermitted) == .permissionDenied)
    #expect(kind(.deviceBusy) == .busy)
    #expect(kind(.noSuchDevice) == .unplugged)
    #expect(kind(.notATerminal) == .notASerialPort)
    let silent = SerialPortError(
      device: "/dev/ttyUSB0", operation: .autobaud,
      reason: .nothingRecognised(triedRates: [.b9600], timePerRate: .seconds(1)))
    #expect(FailureReason(silent).kind == .noData)
    #expect(FailureReason(silent).message == silent.description)
    struct Other: Error, CustomStringConvertible { var description: String { "odd" } }
    #expect(FailureReason(Other()) == FailureReason(.other, "odd"))
  }

  /// The producer end to end: a device that does not exist is `missing`, told once.
  @Test func aMissingDeviceIsToldAsMissing() async throws {
    let path = "/tmp/serialgps-no-such-device-\(UUID().uuidString)"
    var options = GPSReceiver.Options()
    options.awakeMarkers = nil
    options.reconnectDelay = .milliseconds(50)
    let receiver = GPSReceiver(
      connector: SerialConnector(path: path, baud: .fixed(.b9600)), options: options)
    let log = EventLog(receiver.subscribe())
    #expect(
      await eventually {
        log.statuses.contains { if case .disconnected = $0 { true } else { false } }
      })
    try await Task.sleep(for: .milliseconds(200))  // retries fail alike: said once
    let reasons = log.statuses.compactMap {
      if case .disconnected(let reason) = $0 { reason } else { nil }
    }
    #expect(reasons.count == 1)
    #expect(reasons.first?.kind == .missing)
    #expect(reasons.first?.message.contains("\(path) does not exist") == true)
    await receiver.shutdown()
  }

  /// Library apps mark the receivers they wake by default, so that one that exits without
  /// `shutdown()` leaves a receiver the next process puts to standby.
  @Test func awakeMarkersAreOnByDefault() async throws {
    let standard = try #require(AwakeMarkers.standard())
    #expect(GPSReceiver.Options().awakeMarkers == standard)
    let identity = "serial identify-\(UUID().uuidString)"
    let dead = Process()
    dead.executableURL = URL(fileURLWithPath: "/bin/true")
    try dead.run()
    dead.waitUntilExit()
    try "\(dead.processIdentifier)\n".write(
      toFile: standard.path(for: identity), atomically: true, encoding: .utf8)
    defer { standard.clear(identity) }
    let connector = slowAcknowledgingConnector(delay: .milliseconds(5), markerIdentity: identity)
    var options = GPSReceiver.Options()  // awakeMarkers left at its default
    options.chipset = .custom(AcknowledgedPowerCommands())
    let receiver = GPSReceiver(connector: connector, options: options)
    #expect(await eventually { connector.opens == 1 && connector.openCount == 0 })
    #expect(
      connector.latest?.writes.map { String(decoding: $0, as: UTF8.self) } == [
        AcknowledgedPowerCommands.standby
      ])
    #expect(standard.owner(of: identity) == nil)
    await receiver.shutdown()
  }

  /// Neither directory writable: no markers, and nothing fails.
  @Test func noWritableDirectoryMeansNoMarkers() {
    #expect(AwakeMarkers.firstWritable(of: ["/dev/null/serialgps", "/proc/serialgps"]) == nil)
    let directory = NSTemporaryDirectory() + "serialgps-markers-\(UUID().uuidString)"
    #expect(
      AwakeMarkers.firstWritable(of: ["/dev/null/serialgps", directory])?.directory == directory)
  }
}
