import NMEA
import Testing

@testable import Chipsets

@Suite("Acknowledgements")
struct AcknowledgementTests {
  @Test("UBX-ACK-ACK and ACK-NAK from frames")
  func ubx() {
    let bytes =
      UBX.acknowledgement(for: .cfgMsg, accepted: true)
      + UBX.acknowledgement(for: .cfgValset, accepted: false)
      + UbloxCommandSet.gnssStop.bytes  // not an acknowledgement
    let framed = Framed(bytes)
    #expect(
      framed.acknowledgements == [.ubx(.cfgMsg, accepted: true), .ubx(.cfgValset, accepted: false)])
    #expect(framed.acknowledgements.map(\.isPositive) == [true, false])
    #expect(framed.acknowledgements.last?.failureReason?.contains("UBX-CFG-VALSET") == true)
  }

  @Test("an ACK frame with a wrong payload length is not an acknowledgement")
  func malformedAck() {
    #expect(Framed(referenceUBX(0x05, 0x01, [0x06])).acknowledgements.isEmpty)
    #expect(Framed(referenceUBX(0x05, 0x01, [0x06, 0x01, 0x00])).acknowledgements.isEmpty)
    #expect(Framed(referenceUBX(0x05, 0x02, [0x06, 0x01])).acknowledgements.isEmpty)
  }

  @Test("a step says whether an acknowledgement answers it")
  func stepVerdicts() throws {
    let cfgMsg = try #require(UbloxCommandSet().selectionSteps.first)
    #expect(cfgMsg.isAcknowledged(by: .ubx(.cfgMsg, accepted: true)) == true)
    #expect(cfgMsg.isAcknowledged(by: .ubx(.cfgMsg, accepted: false)) == false)
    #expect(cfgMsg.isAcknowledged(by: .ubx(.cfgValset, accepted: true)) == nil)
    #expect(cfgMsg.isAcknowledged(by: .mtk(command: 314, result: .succeeded)) == nil)

    let standby = MediaTekCommandSet.standby
    #expect(standby.isAcknowledged(by: .mtk(command: 161, result: .succeeded)) == true)
    #expect(standby.isAcknowledged(by: .mtk(command: 161, result: .invalidCommand)) == false)
    #expect(standby.isAcknowledged(by: .mtk(command: 161, result: .unsupported)) == false)
    #expect(standby.isAcknowledged(by: .mtk(command: 161, result: .failed)) == false)
    #expect(standby.isAcknowledged(by: .mtk(command: 314, result: .succeeded)) == nil)
    #expect(standby.isAcknowledged(by: .ubx(.cfgMsg, accepted: true)) == nil)

    // A step that expects nothing is answered by nothing.
    #expect(UbloxCommandSet.gnssStop.isAcknowledged(by: .ubx(.cfgRst, accepted: true)) == nil)
  }

  @Test("MediaTek failures carry distinct reasons")
  func mtkReasons() {
    let reasons = [MTKAckResult.invalidCommand, .unsupported, .failed].map {
      ReceiverAcknowledgement.mtk(command: 161, result: $0).failureReason
    }
    #expect(reasons.allSatisfy { $0?.contains("$PMTK161") == true })
    #expect(Set(reasons.compactMap { $0 }).count == 3)
    #expect(ReceiverAcknowledgement.mtk(command: 161, result: .succeeded).failureReason == nil)
  }

  @Test(
    "real $PMTK001 acknowledgements from the Quectel L70 capture")
  func quectelCapture() throws {
    let framed = Framed(try Corpus.bytes("quectel-L70.log"))
    // The capture holds $PMTK001,320,2 $PMTK001,300,3 $PMTK001,314,3 $PMTK001,301,3
    // $PMTK001,313,3 $PMTK001,424,1 (checked with grep).
    #expect(
      framed.acknowledgements == [
        .mtk(command: 320, result: .failed), .mtk(command: 300, result: .succeeded),
        .mtk(command: 314, result: .succeeded), .mtk(command: 301, result: .succeeded),
        .mtk(command: 313, result: .succeeded), .mtk(command: 424, result: .unsupported),
      ])
    let selection = MediaTekCommandSet().sentenceSelection
    let verdicts = framed.acknowledgements.compactMap { selection.isAcknowledged(by: $0) }
    #expect(verdicts == [true])
  }
}
