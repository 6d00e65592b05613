import NMEA
import Testing

@testable import Chipsets

/// The registry: one driver per family, names that name one family each, and everything
/// that was a switch over the family answered by the driver.
@Suite struct ChipsetRegistryTests {
  @Test func everyFamilyHasOneDriverAndUniqueNames() {
    let drivers = ChipsetRegistry.all
    let families = drivers.map(\.family)
    #expect(Set(families).count == families.count)
    let names = drivers.flatMap { [$0.cliName] + $0.aliases }
    #expect(Set(names).count == names.count, "\(names)")
    for driver in drivers {
      #expect(driver.family.driver.cliName == driver.cliName)
      #expect(ChipsetFamily(cliName: driver.cliName) == driver.family)
      #expect(ChipsetFamily(cliName: driver.cliName.uppercased()) == driver.family)
      #expect(ChipsetFamily(cliName: driver.family.rawValue) == driver.family)
      for alias in driver.aliases { #expect(ChipsetFamily(cliName: alias) == driver.family) }
      #expect(driver.cliName == driver.cliName.lowercased())
    }
    #expect(ChipsetFamily.allCases == families)
  }

  /// `quectel` is a maker, not a family: its modules are MediaTek (L70/L76/L80) and other
  /// chips, so it names no family by itself.
  @Test func aMakerNamesNoFamily() {
    #expect(ChipsetFamily(cliName: "quectel") == nil)
    #expect(ChipsetRegistry.drivers(maker: "Quectel").map(\.family).contains(.mediatek))
    #expect(ChipsetRegistry.drivers(maker: "garmin").isEmpty)
    #expect(ChipsetRegistry.choices([.mediatek]) == "--chipset mtk (MediaTek/Quectel)")
    #expect(
      ChipsetRegistry.choices([.mediatek, .sirf, .ublox])
        == "--chipset mtk (MediaTek/Quectel), sirf (SiRF) or ublox (u-blox)")
  }

  /// An identifier no driver has is treated as generic NMEA: never written to.
  @Test func anUnregisteredFamilyHasNoCommands() throws {
    let unknown = ChipsetFamily(rawValue: "garmin")
    #expect(!unknown.hasCommands)
    #expect(unknown.commandSet(interface: .uart).powerOnSteps.isEmpty)
    #expect(throws: ChipsetCommandError.self) { try RawCommand.step("PGRMO,,2", family: unknown) }
  }

  /// Replies are data: a step is answered only by its own family's reply to its command.
  @Test func aReplyAnswersOnlyItsFamilysCommand() {
    let step = CommandStep(
      bytes: [0x24], summary: "test", acknowledgement: .reply(.mediatek, command: "314"))
    #expect(step.isAcknowledged(by: .mtk(command: 314, result: .succeeded)) == true)
    #expect(step.isAcknowledged(by: .mtk(command: 314, result: .failed)) == false)
    #expect(step.isAcknowledged(by: .mtk(command: 161, result: .succeeded)) == nil)
    let other = CommandReply(family: .sirf, command: "314", accepted: true, text: "x")
    #expect(step.isAcknowledged(by: .reply(other)) == nil)
    #expect(
      AcknowledgementExpectation.reply(.mediatek, command: "314").description
        == "$PMTK001,314,<flag>")
  }

  /// The facts that were switches outside the module come from the drivers.
  @Test func driversAnswerWhatWasSwitchedOn() {
    #expect(ChipsetFamily.sirf.driver.factoryBaudRate == 4800)
    #expect(ChipsetFamily.ublox.driver.factoryBaudRate == 9600)
    #expect(ChipsetFamily.mediatek.driver.factoryBaudRate == 9600)
    for family in ChipsetFamily.allCases {
      #expect(PulseOrder.of(family) == .sentencesFollowPulse)
    }
    #expect(!ChipsetFamily.sirf.driver.acknowledgesCommands)
    #expect(ChipsetFamily.mediatek.driver.acknowledgesCommands)
    #expect(ChipsetProbe.step.bytes == ChipsetProbe.ubloxPoll + ChipsetProbe.mediatekPoll)
  }
}
