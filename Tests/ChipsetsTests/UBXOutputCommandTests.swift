import NMEA
import Testing

@testable import Chipsets

// The commands that switch a u-blox receiver's UBX messages on, field by field: UBX-CFG-MSG
// (0x06 0x01) for u-blox 8 and older, UBX-CFG-VALSET (0x06 0x8A) with CFG-MSGOUT-UBX_* keys
// for u-blox 9 and later, RAM layer only, and how the command runner takes their
// acknowledgement. Checksums by the independent Fletcher of TestSupport.

@Suite("u-blox commands switching UBX messages on")
struct UBXOutputCommandTests {
  // CFG-MSGOUT-UBX_*_UART1 as the ZED-F9P Interface Description (UBX-18010854) lists them:
  // copied from its table here, apart from the module's, so a slip in either shows.
  static let interfaceDescriptionUART1: [UBXOutputMessage: UInt32] = [
    .navPVT: 0x2091_0007, .navPosLLH: 0x2091_002A, .navVelNED: 0x2091_0043,
    .navPosECEF: 0x2091_0025, .navVelECEF: 0x2091_003E, .navDOP: 0x2091_0039,
    .navSat: 0x2091_0016, .navSig: 0x2091_0346, .navTimeUTC: 0x2091_005C,
    .navTimeGPS: 0x2091_0048, .navStatus: 0x2091_001B, .navEOE: 0x2091_0160,
    .timTP: 0x2091_017E, .monRF: 0x2091_035A, .monHW: 0x2091_01B5,
  ]

  @Test("CFG-MSG for NAV-PVT is the frame every u-blox tool sends")
  func cfgMsgNavPVT() throws {
    let set = UbloxCommandSet(
      UbloxOptions(sentences: NMEASelection([]), binaryMessages: UBXMessageSelection([.navPVT])))
    let step = try #require(set.binarySelectionSteps.first)
    #expect(set.binarySelectionSteps.count == 1)
    #expect(step.bytes == hexBytes("B5 62 06 01 03 00 01 07 01 13 51"))
    #expect(step.acknowledgement == .ubx(.cfgMsg))
  }

  @Test("CFG-MSG field by field, each message of the navigation selections")
  func cfgMsgFields() {
    let messages = Set(UBXMessageSelection.navigation.messages)
      .union(UBXMessageSelection.legacyNavigation.messages)
    let set = UbloxCommandSet(
      UbloxOptions(
        generation: .m8AndOlder, sentences: NMEASelection([]),
        binaryMessages: UBXMessageSelection(messages)))
    let steps = set.binarySelectionSteps
    #expect(steps.count == messages.count)
    let decoded = steps.map { Framed($0.bytes).commands }
    for (message, commands) in zip(UBXMessageSelection(messages).messages, decoded) {
      // class 0x06, ID 0x01, length 3: the message's class and ID, rate 1 on this port.
      #expect(commands == [.ubxSetMessageRate(message.id, rates: [1])], "\(message)")
    }
    for step in steps {
      let body = Array(step.bytes[2..<(step.bytes.count - 2)])
      #expect(Array(step.bytes.prefix(6)) == [0xB5, 0x62, 0x06, 0x01, 0x03, 0x00])
      #expect(Array(step.bytes.suffix(2)) == referenceFletcher(body))
    }
    #expect(
      UBXOutputMessage.allCases.map(\.id)
        == [
          UBXMessageID(0x01, 0x07), UBXMessageID(0x01, 0x02), UBXMessageID(0x01, 0x12),
          UBXMessageID(0x01, 0x06), UBXMessageID(0x01, 0x01), UBXMessageID(0x01, 0x11),
          UBXMessageID(0x01, 0x04), UBXMessageID(0x01, 0x35), UBXMessageID(0x01, 0x30),
          UBXMessageID(0x01, 0x43), UBXMessageID(0x01, 0x21), UBXMessageID(0x01, 0x20),
          UBXMessageID(0x01, 0x03), UBXMessageID(0x01, 0x61), UBXMessageID(0x0D, 0x01),
          UBXMessageID(0x0A, 0x38), UBXMessageID(0x0A, 0x09),
        ])
  }

  @Test("CFG-MSGOUT-UBX keys: the interface description's, U1-sized, USB two after UART1")
  func keys() {
    for message in UBXOutputMessage.allCases {
      let uart1 = UbloxCommandSet.messageOutputKey(message, port: .uart1)
      #expect(uart1 == Self.interfaceDescriptionUART1[message], "\(message)")
      guard let uart1 else { continue }
      #expect(UbloxCommandSet.messageOutputKey(message, port: .usb) == uart1 + 2)
      #expect(UBXConfigurationValue.storageSize(ofKey: uart1) == 1)
      #expect(uart1 >> 16 == 0x2091, "group CFG-MSGOUT")
    }
    #expect(UbloxCommandSet.messageOutputKey(.navSol, port: .uart1) == nil)
    #expect(UbloxCommandSet.messageOutputKey(.navSVInfo, port: .uart1) == nil)
  }

  @Test("CFG-VALSET for the navigation selection: RAM only, one key per message, UART1 and USB")
  func valset() throws {
    for port in [UbloxPort.uart1, .usb] {
      let set = UbloxCommandSet(
        UbloxOptions(generation: .m9AndLater, port: port, binaryMessages: .navigation))
      let step = try #require(set.binarySelectionSteps.first)
      #expect(set.binarySelectionSteps.count == 1)
      var payload: [UInt8] = [0x00, 0x01, 0x00, 0x00]  // version 0, layers RAM, reserved
      for message in UBXMessageSelection.navigation.messages {
        let key = Self.interfaceDescriptionUART1[message]! + (port == .usb ? 2 : 0)
        payload += [
          UInt8(key & 0xFF), UInt8(key >> 8 & 0xFF), UInt8(key >> 16 & 0xFF), UInt8(key >> 24),
        ]
        payload.append(1)
      }
      #expect(step.bytes == referenceUBX(0x06, 0x8A, payload), "\(port)")
      #expect(step.acknowledgement == .ubx(.cfgValset))
      // Decoded back as a receiver (and the simulator) reads it: RAM layer only, never BBR
      // (bit 1) or flash (bit 2), so the receiver's saved configuration is never changed.
      let commands = Framed(step.bytes).commands
      guard case .ubxSetConfiguration(let layers, let values)? = commands.first else {
        Issue.record("not a VALSET: \(commands)")
        continue
      }
      #expect(layers == 0x01)
      #expect(values.allSatisfy { $0.value == 1 } && values.count == 6)
    }
    // NAV-SVINFO and NAV-SOL have no key on u-blox 9: left out, not sent as zero keys.
    let legacy = UbloxCommandSet(
      UbloxOptions(generation: .m9AndLater, binaryMessages: .legacyNavigation))
    let values = Framed(legacy.binarySelectionSteps[0].bytes).commands
    guard case .ubxSetConfiguration(_, let keyed)? = values.first else {
      Issue.record("not a VALSET")
      return
    }
    #expect(keyed.count == UBXMessageSelection.legacyNavigation.messages.count - 2)
  }

  @Test("power-on: the NMEA selection, then the UBX messages in a VALSET of their own")
  func powerOnOrder() {
    let set = UbloxCommandSet(
      UbloxOptions(generation: .m9AndLater, port: .usb, binaryMessages: .navigation))
    #expect(
      set.powerOnSteps == set.selectionSteps + set.binarySelectionSteps + [
        UbloxCommandSet.gnssStart
      ])
    #expect(set.selectionSteps.count == 1 && set.binarySelectionSteps.count == 1)
    // No UBX messages by default: the power-on sequence is what it was.
    let plain = UbloxCommandSet(UbloxOptions(generation: .m9AndLater, port: .usb))
    #expect(plain.binarySelectionSteps.isEmpty)
    #expect(plain.powerOnSteps == plain.selectionSteps + [UbloxCommandSet.gnssStart])
    // Nothing of it saves the configuration (UBX-CFG-CFG).
    #expect(!set.powerOnSteps.contains { Framed($0.bytes).ubx.contains(.cfgCfg) })
  }

  @Test("the command runner takes the ACK-ACK of CFG-VALSET, not another message's")
  func acknowledgement() throws {
    let set = UbloxCommandSet(
      UbloxOptions(generation: .m9AndLater, port: .uart1, binaryMessages: .navigation))
    let step = try #require(set.binarySelectionSteps.first)
    let ackMsg = try #require(
      Framed(UBX.acknowledgement(for: .cfgMsg, accepted: true)).acknowledgements.first)
    let ack = try #require(
      Framed(UBX.acknowledgement(for: .cfgValset, accepted: true)).acknowledgements.first)
    let nak = try #require(
      Framed(UBX.acknowledgement(for: .cfgValset, accepted: false)).acknowledgements.first)
    var exchange = CommandExchange<TestInstant>(
      step: step, attempts: 2, timeout: .seconds(1), retriesRejected: false)
    #expect(exchange.start() == .write(step.bytes))
    #expect(exchange.written(now: .zero) == .wait(until: .seconds(1)))
    #expect(exchange.answered(ackMsg, now: .milliseconds(5)) == nil)  // CFG-MSG's, not ours
    #expect(
      exchange.answered(ack, now: .milliseconds(20))
        == .finished(.acknowledged(ack, attempt: 1, written: 1, late: nil)))
    // A receiver that does not know a key refuses the whole VALSET with ACK-NAK.
    var refused = CommandExchange<TestInstant>(
      step: step, attempts: 2, timeout: .seconds(1), retriesRejected: false)
    _ = refused.written(now: .zero)
    #expect(
      refused.answered(nak, now: .milliseconds(20))
        == .finished(.rejected(nak, attempt: 1, written: 1)))
  }

  @Test("commandSet passes the selection to u-blox only; the CLI names; key and ID lookups")
  func commandSetAndNames() throws {
    let navigation = ChipsetFamily.ublox.commandSet(interface: .uart, binaryMessages: .navigation)
    let set = try #require(navigation as? UbloxCommandSet)
    #expect(set.options.binaryMessages == .navigation)
    let ids = set.powerOnSteps.flatMap { Framed($0.bytes).commands }.compactMap {
      if case .ubxSetMessageRate(let id, [1]) = $0, id.messageClass == 0x01 { id } else { nil }
    }
    #expect(ids == UBXMessageSelection.navigation.messages.map(\.id))
    #expect(
      (ChipsetFamily.ublox.commandSet(interface: .uart) as? UbloxCommandSet)?.options
        .binaryMessages == UBXMessageSelection.none)
    for family in [ChipsetFamily.mediatek, .sirf, .nmea] {
      let steps = family.commandSet(interface: .uart, binaryMessages: .navigation).powerOnSteps
      #expect(!steps.contains { !Framed($0.bytes).ubx.isEmpty }, "\(family)")
    }
    #expect(UBXMessageSelection(cliName: "navigation") == .navigation)
    #expect(UBXMessageSelection(cliName: "Legacy") == .legacyNavigation)
    #expect(UBXMessageSelection(cliName: "off") == UBXMessageSelection.none)
    #expect(UBXMessageSelection(cliName: "pvt") == nil)
    for message in UBXOutputMessage.allCases {
      #expect(UBXOutputMessage(id: message.id) == message)
      guard let uart1 = message.uart1Key else {
        #expect(message.outputKeys == nil)
        continue
      }
      // I2C, UART1, UART2, USB, SPI.
      for key in (uart1 - 1)...(uart1 + 3) { #expect(UBXOutputMessage(outputKey: key) == message) }
      #expect(UBXOutputMessage(outputKey: uart1 - 2) != message)
      #expect(UBXOutputMessage(outputKey: uart1 + 4) != message)
    }
    #expect(UBXOutputMessage(id: UBXMessageID(0x05, 0x01)) == nil)
  }
}
