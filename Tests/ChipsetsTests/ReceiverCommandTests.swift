import NMEA
import Testing

@testable import Chipsets

@Suite("Decoding commands a host sent")
struct ReceiverCommandTests {
  @Test("u-blox power steps decode to what they mean")
  func ublox() {
    let m8 = UbloxCommandSet(UbloxOptions(generation: .m8AndOlder, port: .uart1))
    #expect(
      Framed(m8.powerOnSteps.flatMap(\.bytes)).commands == [
        .ubxSetMessageRate(UBXMessageID(0xF0, 0x00), rates: [1]),
        .ubxSetMessageRate(UBXMessageID(0xF0, 0x02), rates: [1]),
        .ubxSetMessageRate(UBXMessageID(0xF0, 0x03), rates: [1]),
        .ubxSetMessageRate(UBXMessageID(0xF0, 0x04), rates: [1]),
        .ubxReset(navBbrMask: 0, resetMode: 0x09),
      ])
    #expect(
      Framed(m8.powerOffSteps.flatMap(\.bytes)).commands == [
        .ubxPowerRequest(durationMilliseconds: 0, flags: 0x02, wakeupSources: nil)
      ])
    let f9 = UbloxCommandSet(UbloxOptions(generation: .m9AndLater, port: .usb))
    #expect(
      Framed(f9.powerOnSteps.flatMap(\.bytes)).commands == [
        .ubxSetConfiguration(
          layers: 0x01,
          values: [0x2091_00BD, 0x2091_00C2, 0x2091_00C7, 0x2091_00AE].map {
            UBXConfigurationValue(key: $0, value: 1)
          }),
        .ubxReset(navBbrMask: 0, resetMode: 0x09),
      ])
    #expect(
      Framed(f9.powerOffSteps.flatMap(\.bytes)).commands == [
        .ubxReset(navBbrMask: 0, resetMode: 0x08)
      ])
    let f9uart = UbloxCommandSet(UbloxOptions(generation: .m9AndLater, port: .uart1))
    #expect(
      Framed(f9uart.powerOffSteps.flatMap(\.bytes)).commands == [
        .ubxPowerRequest(durationMilliseconds: 0, flags: 0x06, wakeupSources: 0x08)
      ])
    #expect(Framed(UbloxCommandSet.versionQuery.bytes).commands == [.ubxPoll(.monVer)])
  }

  @Test("VALSET values of every size, and a truncated VALSET")
  func valsetSizes() {
    // CFG-UART1-BAUDRATE (0x40520001, U4) = 115200, from a NEO-M9N how-to's u-center frame.
    let baud = hexBytes("b5 62 06 8a 0c 00 00 01 00 00 01 00 52 40 00 c2 01 00 f3 a5")
    #expect(
      Framed(baud).commands == [
        .ubxSetConfiguration(
          layers: 1, values: [UBXConfigurationValue(key: 0x4052_0001, value: 115_200)])
      ])
    let truncated = referenceUBX(
      0x06, 0x8A, [0x00, 0x01, 0x00, 0x00, 0x01, 0x00, 0x52, 0x40, 0x00])
    #expect(
      Framed(truncated).commands == [
        .ubxOther(.cfgValset, payload: [0x00, 0x01, 0x00, 0x00, 0x01, 0x00, 0x52, 0x40, 0x00])
      ])
  }

  @Test("MediaTek and SiRF steps decode to what they mean")
  func nmea() {
    #expect(
      Framed(MediaTekCommandSet().powerOnSteps.flatMap(\.bytes)).commands == [
        .mtkSetNMEAOutput(intervals: [0, 1, 0, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0])
      ])
    #expect(Framed(MediaTekCommandSet.standby.bytes).commands == [.mtkStandby(mode: 0)])
    #expect(
      Framed(SiRFCommandSet().powerOnSteps.flatMap(\.bytes)).commands == [
        .sirfSetRate(message: 0, mode: 0, rate: 1, checksum: true),
        .sirfSetRate(message: 2, mode: 0, rate: 1, checksum: true),
        .sirfSetRate(message: 3, mode: 0, rate: 1, checksum: true),
        .sirfSetRate(message: 4, mode: 0, rate: 1, checksum: true),
      ])
    #expect(Framed(SiRFCommandSet.hibernate.bytes).commands == [.sirfTurnOff(code: 16)])
    let other = Framed(referenceNMEA("PMTK101") + referenceNMEA("PUBX,40,GLL,0,0,0,0"))
    #expect(
      other.commands == [
        .mtkOther(command: 101, fields: []),
        .nmeaOther(address: "PUBX", fields: ["40", "GLL", "0", "0", "0", "0"]),
      ])
    #expect(other.commands.map(\.family) == [.mediatek, .ublox])
  }
}
