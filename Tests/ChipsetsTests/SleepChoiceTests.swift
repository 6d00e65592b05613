import Chipsets
import Testing

/// The power-off chosen from the expected sleep (docs/chipsets.md, "Sleep depth"), byte by
/// byte: the frames are written out from the command descriptions (checksums from the
/// Adafruit and Quectel published strings, and from ``referenceFletcher``).
@Suite struct SleepChoiceTests {
  static let hour = SleepContext(expected: .seconds(3600))
  static let hourWithPin = SleepContext(expected: .seconds(3600), wakePin: true)
  static let shortWithPin = SleepContext(expected: .seconds(30), wakePin: true)
  static let unknownWithPin = SleepContext(expected: nil, wakePin: true)

  static let standbyBytes = Array("$PMTK161,0*28\r\n".utf8)
  static let backupBytes = Array("$PMTK225,4*2F\r\n".utf8)
  static let gnssStop = hexBytes("B5 62 06 04 04 00 00 00 08 00 16 74")
  static let pmreq8 = hexBytes("B5 62 02 41 08 00 00 00 00 00 02 00 00 00 4D 3B")

  @Test func mediatekSleepsInBackupOnlyWithADeclaredPinAndALongGap() {
    let set = MediaTekCommandSet()
    let long = set.sleep(for: Self.hourWithPin)
    #expect(long.steps.map(\.bytes) == [Self.backupBytes])
    #expect(long.state == .backup)
    #expect(long.needsWakePin)
    #expect(long.steps[0].acknowledgement == .mtk(command: 225))
    #expect(set.powerOffSteps(for: Self.hourWithPin).map(\.bytes) == [Self.backupBytes])
    // Without the pin nothing could wake it: standby, whatever the gap.
    for context in [
      Self.hour, Self.shortWithPin, Self.unknownWithPin,
      SleepContext(expected: .seconds(3600), wakePin: true, depth: .standby),
    ] {
      let choice = set.sleep(for: context)
      #expect(choice.steps.map(\.bytes) == [Self.standbyBytes], "\(context)")
      #expect(choice.state == .standby)
      #expect(!choice.needsWakePin)
    }
    // The threshold itself.
    #expect(
      set.sleep(for: SleepContext(expected: MediaTekCommandSet.backupWorthFrom, wakePin: true))
        .state == .backup)
    #expect(
      set.sleep(
        for: SleepContext(
          expected: MediaTekCommandSet.backupWorthFrom - .seconds(1), wakePin: true)
      ).state == .standby)
  }

  @Test func ubloxOnAUARTSleepsInBackupUnlessTheGapIsShortOrStandbyIsAsked() {
    let m8 = UbloxCommandSet(UbloxOptions(generation: .m8AndOlder, port: .uart1))
    #expect(m8.sleep(for: Self.hour) == SleepChoice(state: .backup, steps: [m8.backupRequest]))
    #expect(m8.powerOffSteps(for: Self.hour).map(\.bytes) == [Self.pmreq8])
    // Unknown: backup too (a byte on RX ends it).
    #expect(m8.powerOffSteps(for: SleepContext(expected: nil)).map(\.bytes) == [Self.pmreq8])
    // Short: GNSS stop, kept RAM, no wake burst needed.
    #expect(
      m8.powerOffSteps(for: SleepContext(expected: .seconds(6))).map(\.bytes) == [Self.gnssStop])
    #expect(m8.sleep(for: SleepContext(expected: .seconds(6))).state == .gnssStopped)
    #expect(
      m8.powerOffSteps(for: SleepContext(expected: .seconds(3600), depth: .standby)).map(\.bytes)
        == [Self.gnssStop])

    let m9 = UbloxCommandSet(UbloxOptions(generation: .m9AndLater, port: .uart1))
    let payload = hexBytes("00 00 00 00  00 00 00 00  06 00 00 00  08 00 00 00")
    let body = [0x02, 0x41, 0x10, 0x00] + payload
    let frame = [0xB5, 0x62] + body + referenceFletcher(body)
    #expect(m9.powerOffSteps(for: Self.hour).map(\.bytes) == [frame])
    #expect(!m9.sleep(for: Self.hour).needsWakePin)
  }

  @Test func ubloxOverUSBStopsGNSSWhateverTheGap() {
    let usb = UbloxCommandSet(UbloxOptions(generation: .m9AndLater, port: .usb))
    for context in [Self.hour, Self.hourWithPin, SleepContext(expected: nil)] {
      #expect(usb.powerOffSteps(for: context).map(\.bytes) == [Self.gnssStop])
    }
  }

  @Test func familiesWithOnePowerOffKeepIt() {
    #expect(SiRFCommandSet().powerOffSteps(for: Self.hourWithPin).isEmpty)
    #expect(
      SiRFCommandSet(powerOffMode: .hibernate).powerOffSteps(for: Self.hourWithPin)
        == [SiRFCommandSet.hibernate])
    #expect(GenericNMEACommandSet().powerOffSteps(for: Self.hourWithPin).isEmpty)
  }
}
