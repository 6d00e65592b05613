import Chipsets
import NMEA
import Replay
import Testing

@testable import Simulator

/// The CASIC and Airoha chips as state machines (``CASICModel``, ``AirohaModel`` inside
/// ``ReceiverModel``), with time as plain values in milliseconds.
@Suite struct FamilyModelTests {
  func ms(_ value: Int) -> Duration { .milliseconds(value) }
  func line(_ body: String) -> [UInt8] { NMEAChecksum.frame(body) }

  // MARK: Airoha

  @Test func airohaAnswersEveryPAIRCommandWithPAIR001() {
    var model = ReceiverModel(profile: .airoha)
    #expect(model.receive(line("PAIR003"), at: ms(0)) == [line("PAIR001,003,0")])
    #expect(model.power == .gnssStopped)
    // The UART still takes commands with the GNSS off.
    #expect(model.receive(line("PAIR062,3,0"), at: ms(10)) == [line("PAIR001,062,0")])
    #expect(model.receive(line("PAIR002"), at: ms(20)) == [line("PAIR001,002,0")])
    #expect(model.power == .running)
    // A type out of range, and a command the chip does not have.
    #expect(model.receive(line("PAIR062,9,1"), at: ms(30)) == [line("PAIR001,062,4")])
    #expect(model.receive(line("PAIR999"), at: ms(40)) == [line("PAIR001,999,3")])
    #expect(model.acknowledgements == 3)
    #expect(model.rejections == 2)
    // Not the chip's sentence at all: nothing.
    #expect(model.receive(line("PMTK161,0"), at: ms(50)).isEmpty)
  }

  /// `$PAIR062,-1,…` puts every sentence back to its factory rate (the PAIR protocol's
  /// PAIR_COMMON_SET_NMEA_OUTPUT_RATE, "-1 Reset all sentence to default value"), whatever
  /// its rate field says.
  @Test func airohaPAIR062MinusOneRestoresTheFactoryOutput() {
    var model = ReceiverModel(profile: .airoha)
    let factory = model.airoha.outputRates
    _ = model.receive(line("PAIR062,3,0"), at: ms(0))
    _ = model.receive(line("PAIR062,0,5"), at: ms(10))
    #expect(model.airoha.outputRates != factory)
    #expect(model.receive(line("PAIR062,-1,0"), at: ms(20)) == [line("PAIR001,062,0")])
    #expect(model.airoha.outputRates == factory)
  }

  @Test func airohaBackupIsLeftOnlyByTheWakePin() {
    var model = ReceiverModel(profile: .airoha, wakeDelay: ms(100))
    model.drivePin(.forceOn, high: true, at: ms(0))
    #expect(model.receive(line("PAIR650,0"), at: ms(10)) == [line("PAIR001,650,0")])
    #expect(model.power == .hibernate)
    // Bytes are lost: no answer, no wake.
    #expect(model.receive(line("PAIR002"), at: ms(20)).isEmpty)
    #expect(model.received.last?.outcome == .lost)
    #expect(model.power == .hibernate)
    model.drivePin(.forceOn, high: false, at: ms(30))
    #expect(model.power == .hibernate)
    model.drivePin(.forceOn, high: true, at: ms(40))
    #expect(model.power == .booting)
    _ = model.advance(to: ms(140))
    #expect(model.power == .running)
  }

  @Test func airohaRefusesWhenToldToAndIgnoresALostBackupRequest() {
    var rejecting = ReceiverModel(profile: .airoha, responses: .rejecting)
    #expect(rejecting.receive(line("PAIR003"), at: ms(0)) == [line("PAIR001,003,2")])
    #expect(rejecting.power == .running)
    var losing = ReceiverModel(profile: .airoha, responses: .ignoringBackupRequest)
    #expect(losing.receive(line("PAIR650,0"), at: ms(0)).isEmpty)
    #expect(losing.power == .running)
    #expect(losing.receive(line("PAIR003"), at: ms(10)) == [line("PAIR001,003,0")])
  }

  // MARK: CASIC

  @Test func casicTakesPCASWithoutAnAnswer() {
    var model = ReceiverModel(profile: .casic, wakeDelay: ms(100))
    #expect(model.receive(line("PCAS03,1,0,1,1,1,0,0,,,,,,,0,,,,"), at: ms(0)).isEmpty)
    #expect(model.received.last?.outcome == .carriedOut)
    // The timed standby of CASIC's low-power parts: an L76K ignores it.
    #expect(model.receive(line("PCAS12,60"), at: ms(10)).isEmpty)
    #expect(model.received.last?.outcome == .ignored)
    #expect(model.power == .running)
    // A cold restart.
    #expect(model.receive(line("PCAS10,2"), at: ms(20)).isEmpty)
    #expect(model.power == .booting)
    _ = model.advance(to: ms(120))
    #expect(model.power == .running)
    #expect(model.acknowledgements == 0)
  }

  @Test func casicStandbyIsItsStandbyInputHeldLow() {
    var model = ReceiverModel(profile: .casic, wakeDelay: ms(100))
    model.drivePin(.forceOn, high: true, at: ms(0))
    #expect(model.power == .running)
    model.drivePin(.forceOn, high: false, at: ms(10))
    #expect(model.power == .standby)
    // Unlike a MediaTek in standby, a byte does not wake it.
    #expect(model.receive(line("PCAS03,1,1,1,1,1,1,1,,,,,,,0,,,,"), at: ms(20)).isEmpty)
    #expect(model.received.last?.outcome == .lost)
    #expect(model.power == .standby)
    model.drivePin(.forceOn, high: true, at: ms(30))
    #expect(model.power == .booting)
    _ = model.advance(to: ms(130))
    #expect(model.power == .running)
  }
}
