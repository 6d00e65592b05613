import Foundation
import NMEA
import Testing

@testable import Chipsets

/// The CASIC and Airoha drivers: their bytes against published ones, their acknowledgements
/// read as data, their sleeps per context, how they are named and identified.
@Suite struct FamilyDriverTests {
  func sentence(_ text: String) throws -> Sentence {
    try #require(Framed(ascii(text + "\r\n")).sentences.first, "\(text) did not parse")
  }

  // MARK: Bytes

  /// Frames published by others: `$PAIR002*38`, `$PAIR003*39` and `$PAIR001,002,0*39` as the
  /// LC29H's protocol specification prints them (quoted in a driver library's README);
  /// `$PAIR650,0*25` and `$PAIR001,650,0*38` as Quectel's forum quotes the LC76G; `$PAIR062,0,1*3F`
  /// as several LC29H/AG3335 programs send it; `$PCAS10,0*1C`, the CASIC specification's example.
  @Test func commandsMatchPublishedFrames() {
    #expect(AirohaCommandSet.gnssOn.bytes == ascii("$PAIR002*38\r\n"))
    #expect(AirohaCommandSet.gnssOff.bytes == ascii("$PAIR003*39\r\n"))
    #expect(AirohaCommandSet.backup.bytes == ascii("$PAIR650,0*25\r\n"))
    let selection = AirohaCommandSet(sentences: .standard).selectionSteps.map(\.bytes)
    #expect(selection.first == ascii("$PAIR062,0,1*3F\r\n"))
    // Every switchable sentence, in type order: GGA on, GLL off, GSA, GSV, RMC on, VTG off.
    #expect(
      selection
        == [
          "PAIR062,0,1", "PAIR062,1,0", "PAIR062,2,1", "PAIR062,3,1", "PAIR062,4,1",
          "PAIR062,5,0",
        ].map(referenceNMEA))
    #expect(referenceNMEA("PCAS10,0") == ascii("$PCAS10,0*1C\r\n"))
    // $PCAS03: GGA, GSA, GSV, RMC on; GLL, VTG, ZDA, GST off; the other ten fields kept.
    #expect(
      CASICCommandSet(sentences: .standard).sentenceSelection.bytes
        == referenceNMEA("PCAS03,1,0,1,1,1,0,0,,,,,,,0,,,,"))
    #expect(CASICCommandSet().powerOnSteps.allSatisfy { $0.acknowledgement == .none })
  }

  @Test func airohaAidingSaysTheTimeAndThePosition() throws {
    let driver = AirohaDriver()
    let now = UTCTimestamp(
      date: UTCDate(year: 2026, month: 12, day: 7), time: UTCTime(hour: 14, minute: 5, second: 9))
    let time = try #require(
      driver.aiding(.time(accuracy: .seconds(1)), at: now, acknowledged: true))
    #expect(time.bytes == referenceNMEA("PAIR590,2026,12,07,14,05,09"))
    #expect(time.acknowledgement == .pair(590))
    let known = KnownPosition(
      latitude: 47.66, longitude: -122.33, heightAboveEllipsoid: 56.0, altitudeMSL: nil,
      accuracy: 10, time: now)
    let position = try #require(driver.aiding(.position(known), at: now, acknowledged: true))
    #expect(
      position.bytes == referenceNMEA("PAIR600,47.660000,-122.330000,56.0,10.0,10.0,0.0,20.0"))
    #expect(position.acknowledgement == .pair(600))
  }

  // MARK: Acknowledgements

  @Test func pair001IsReadAsData() throws {
    let accepted = try #require(ReceiverAcknowledgement(try sentence("$PAIR001,002,0*39")))
    #expect(AirohaCommandSet.gnssOn.isAcknowledged(by: accepted) == true)
    // About another command: no answer to this step.
    #expect(AirohaCommandSet.gnssOff.isAcknowledged(by: accepted) == nil)
    // Still being processed: no answer yet, the final one follows.
    #expect(ReceiverAcknowledgement(try sentence("$PAIR001,650,1*39")) == nil)
    let refused = try #require(ReceiverAcknowledgement(try sentence("$PAIR001,062,4*3B")))
    #expect(AirohaCommandSet().selectionSteps[0].isAcknowledged(by: refused) == false)
    #expect(refused.failureReason?.contains("$PAIR062") == true)
    #expect(refused.failureReason?.contains("parameter") == true)
    let unsupported = try #require(ReceiverAcknowledgement(try sentence("$PAIR001,650,3*3B")))
    #expect(AirohaCommandSet.backup.isAcknowledged(by: unsupported) == false)
    #expect(unsupported.failureReason?.contains("does not support $PAIR650") == true)
    // `serialgps send PAIR050,1000` expects the same answer.
    #expect(AirohaDriver().expectedAcknowledgement(forAddress: "PAIR050") == .pair(50))
    #expect(AirohaDriver().expectedAcknowledgement(forAddress: "PAIR001") == nil)
    #expect(CASICDriver().expectedAcknowledgement(forAddress: "PCAS03") == nil)
  }

  /// ACK-ACK and ACK-NAK for CFG-MSG (06 01), framed by hand from the CASIC specification
  /// (§2.1: checksum = (ID << 24) + (class << 16) + length, plus the payload as little-endian
  /// words): ACK-ACK `BA CE 04 00 05 01 06 01 00 00` sum 0x0105010A; ACK-NAK sum 0x0005010A.
  @Test func casicBinaryAcknowledgementEndsTheStep() throws {
    let ackFrame = hexBytes("BA CE 04 00 05 01 06 01 00 00 0A 01 05 01")
    let nakFrame = hexBytes("BA CE 04 00 05 00 06 01 00 00 0A 01 05 00")
    let step = CommandStep(
      bytes: [0xBA, 0xCE], summary: "CFG-MSG", acknowledgement: .casic(0x06, 0x01))
    let accepted = try #require(Framed(ackFrame).acknowledgements.first)
    let refused = try #require(Framed(nakFrame).acknowledgements.first)
    #expect(step.isAcknowledged(by: refused) == false)
    #expect(refused.failureReason?.contains("06-01") == true)
    // Another message's answer is no answer to this step.
    let other = try #require(
      Framed(hexBytes("BA CE 04 00 05 01 06 07 00 00 0A 07 05 01")).acknowledgements.first)
    #expect(step.isAcknowledged(by: other) == nil)

    var exchange = CommandExchange<TestInstant>(step: step, attempts: 2, timeout: .seconds(1))
    #expect(exchange.start() == .write(step.bytes))
    #expect(exchange.written(now: .zero) == .wait(until: .seconds(1)))
    #expect(exchange.answered(other, now: .milliseconds(10)) == nil)
    #expect(exchange.answered(refused, now: .milliseconds(20)) == .write(step.bytes))
    _ = exchange.written(now: .milliseconds(20))
    #expect(
      exchange.answered(accepted, now: .milliseconds(40))
        == .finished(.acknowledged(accepted, attempt: 2, written: 2, late: nil)))
  }

  @Test func everyDecoderEventIsReadForAcknowledgementsByOneCall() {
    // A CASIC ACK, a $PMTK001 and a UBX-ACK-ACK in one stream: each reader (the receiver's,
    // send's, record's) asks the same initialiser, so each family's answers reach all of them.
    let stream =
      hexBytes("BA CE 04 00 05 01 06 01 00 00 0A 01 05 01")
      + Array("$PMTK001,161,3*36\r\n".utf8)
      + hexBytes("B5 62 05 01 02 00 06 04 12 3B")
    var decoder = NMEADecoder()
    var found: [ReceiverAcknowledgement] = []
    decoder.decode(stream) { event in
      if let acknowledgement = ReceiverAcknowledgement(event) { found.append(acknowledgement) }
    }
    #expect(found.count == 3, "\(found)")
    #expect(found.allSatisfy { $0.isPositive }, "\(found)")
  }

  // MARK: Sleeps

  @Test func airohaBacksUpOnlyWithTheLineAndALongSleep() {
    let set = AirohaCommandSet()
    let long = SleepContext(expected: .seconds(600), wakePin: true)
    #expect(
      set.sleep(for: long)
        == SleepChoice(
          state: .backup, steps: [AirohaCommandSet.backup], needsWakePin: true))
    let gnssOff = SleepChoice(state: .gnssStopped, steps: [AirohaCommandSet.gnssOff])
    #expect(set.sleep(for: SleepContext(expected: .seconds(600))) == gnssOff)
    #expect(set.sleep(for: SleepContext(expected: .seconds(10), wakePin: true)) == gnssOff)
    // Backup repays its reboot (41 mA·s) over GNSS off (600 µA against 14 µA) from 70 s.
    #expect(set.sleep(for: SleepContext(expected: .seconds(69), wakePin: true)) == gnssOff)
    #expect(
      set.sleep(for: SleepContext(expected: .seconds(70), wakePin: true)).state == .backup)
    #expect(set.sleep(for: SleepContext(expected: nil, wakePin: true)) == gnssOff)
    #expect(
      set.sleep(for: SleepContext(expected: .seconds(600), wakePin: true, depth: .standby))
        == gnssOff)
  }

  @Test func casicSleepsOnlyThroughTheLine() {
    let set = CASICCommandSet()
    let running = SleepChoice(state: .running, steps: [])
    #expect(set.sleep(for: SleepContext(expected: .seconds(600))) == running)
    #expect(set.sleep(for: SleepContext(expected: nil)) == running)
    let byLine = SleepChoice(
      state: .standby, steps: [CASICCommandSet.pinStandby], needsWakePin: true)
    #expect(set.sleep(for: SleepContext(expected: nil, wakePin: true)) == byLine)
    #expect(set.sleep(for: SleepContext(expected: .seconds(5), wakePin: true)) == byLine)
    #expect(set.sleep(for: SleepContext(expected: nil, wakePin: true, depth: .standby)) == running)
    // The line's standby writes nothing and counts only when the receiver falls silent.
    #expect(CASICCommandSet.pinStandby.bytes.isEmpty)
    guard case .silence = CASICCommandSet.pinStandby.acknowledgement else {
      Issue.record("not confirmed by silence: \(CASICCommandSet.pinStandby.acknowledgement)")
      return
    }
  }

  // MARK: Names and identification

  @Test func namesComeFromTheRegistry() {
    #expect(ChipsetRegistry.driver(cliName: "casic")?.family == .casic)
    #expect(ChipsetRegistry.driver(cliName: "AIROHA")?.family == .airoha)
    #expect(ChipsetRegistry.driver(cliName: "l76k")?.family == .casic)
    #expect(ChipsetRegistry.driver(cliName: "lc76g")?.family == .airoha)
    // `quectel` is the MediaTek L70/L76/L80, the CASIC L76K and the Airoha LC76G: none alone.
    #expect(ChipsetRegistry.driver(cliName: "quectel") == nil)
    let quectel = ChipsetRegistry.drivers(maker: "quectel").map(\.family)
    #expect(Set(quectel) == [.mediatek, .casic, .airoha])
    #expect(CASICDriver().factoryBaudRate == 9600)
    #expect(AirohaDriver().factoryBaudRate == 115200)
    // Hot starts as published: the L76K's 5.5 s unaided (Seeed); none for the LC76G.
    #expect(CASICCommandSet().powerProfile.hotStartMilliseconds == 5500)
    #expect(AirohaCommandSet().powerProfile.hotStartMilliseconds == nil)
    #expect(CASICDriver().gpsdDriverName == "CASIC")
  }

  func identified(_ lines: [String]) -> ChipsetIdentification {
    var identifier = ChipsetIdentifier()
    var framer = NMEAFramer()
    framer.feed(ascii(lines.map { $0 + "\r\n" }.joined())) { identifier.observe($0) }
    return identifier.identification
  }

  @Test func casicIsIdentifiedByWhatItWritesUnasked() {
    // The L76K's antenna line, once a second in gpsd's captures: enough for $PCAS03.
    let antenna = identified(["$GPTXT,01,01,01,ANTENNA OK*35"])
    #expect(antenna.family == .casic)
    #expect(antenna.confidence == .medium)
    #expect(antenna.familyForCommands() == .casic)
    // The start-up banner names the maker and the chip.
    let banner = identified([
      referenceString("GPTXT,01,01,02,MA=CASIC"),
      referenceString("GPTXT,01,01,02,IC=AT6558R-5N-32-1C580901"),
      referenceString("GPTXT,01,01,02,SW=URANUS5,V5.3.0.0"),
    ])
    #expect(banner.family == .casic)
    #expect(banner.confidence == .high)
    #expect(banner.hardware == "AT6558R-5N-32-1C580901")
    #expect(banner.firmware == "URANUS5,V5.3.0.0")
    // u-blox's antenna status is not CASIC's.
    #expect(identified([referenceString("GPTXT,01,01,02,ANTSTATUS=OK")]).family != .casic)
  }

  @Test func airohaIsIdentifiedByAnyPAIRSentence() {
    let found = identified([referenceString("PAIR010,0,0,2245,395160")])
    #expect(found.family == .airoha)
    #expect(found.confidence == .high)
    #expect(found.vendor == "Airoha")
    // A Quectel $PQTM line alone stays a hint (LC29H and L76 both write them).
    #expect(
      identified([referenceString("PQTMVERNO,LC76GABNR12A01S,2023/01/01,00:00:00")])
        .confidence < .medium)
  }

  func referenceString(_ body: String) -> String {
    String(decoding: referenceNMEA(body).dropLast(2), as: UTF8.self)
  }
}
