import Chipsets
import NMEA
import Replay

// What ReceiverModel does with each command the host writes: u-blox's, MediaTek's and SiRF's
// here, CASIC's and Airoha's in their models' files; which one runs is the profile's
// (ReceiverProfile.swift).

extension ReceiverModel {
  // MARK: - Commands

  /// Carries out what a family model in its own file decided: its answers, then its restart
  /// or power change, then the aiding it took.
  mutating func apply(_ effect: FamilyCommandEffect, at now: Duration) -> InputOutcome {
    replies += effect.replies
    if effect.countsAsAcknowledgement { acknowledgements += 1 }
    if effect.countsAsRejection { rejections += 1 }
    if let restart = effect.restart {
      if restart != .hot {
        physics?.clear(
          ephemeris: true, almanacAndPosition: restart != .warm, time: restart != .warm)
      }
      framer.reset()
      periodic = nil
      enterBooting(at: now)
    } else if let state = effect.power {
      setPower(state, at: now)
      nextDeadline = nil
    }
    if let aiding = effect.aiding { physics?.receive(aiding, at: now) }
    return effect.outcome
  }

  // MARK: u-blox

  /// u-blox acknowledges input messages of class CFG only (UBX-18010854, UBX-ACK: "Reject
  /// messages to UBX-CFG input messages"); other classes get no answer unless they are polls
  /// it serves.
  mutating func handleUblox(_ command: ReceiverCommand, model: UbloxModel, at now: Duration)
    -> InputOutcome
  {
    switch command {
    case .ubxReset(let mask, let resetMode):
      // Never acknowledged: the receiver resets before it could answer. The mask says what
      // the reset clears (bit 0 ephemeris, 1 almanac, 4 position, 8 RTC; 0xFFFF everything).
      if mask != 0, resetMode != 0x08, resetMode != 0x09 {
        physics?.clear(
          ephemeris: mask & 0x0001 != 0, almanacAndPosition: mask & 0x0012 != 0,
          time: mask & 0x0100 != 0)
      }
      switch resetMode {
      case 0x08:
        if power == .running { setPower(.gnssStopped, at: now) }
      case 0x09:
        if power == .gnssStopped { setPower(.running, at: now) }
      case 0x00, 0x01, 0x02, 0x04:
        framer.reset()
        enterBooting(at: now)
      default:
        return .ignored
      }
      return .carriedOut

    case .ubxPowerRequest(let duration, let flags, let sources):
      // Not a backup request, or a receiver that ignores them.
      guard flags & 0x02 != 0, responses != .ignoringBackupRequest else { return .ignored }
      // The 8-byte form wakes on UART RX and EXTINT; the 16-byte form on the sources it
      // lists: uartrx (bit 3), extint0 (bit 5), extint1 (bit 6).
      backupWakeSources =
        sources.map { BackupWakeSources(uart: $0 & 0x08 != 0, pin: $0 & 0x60 != 0) }
        ?? .uartAndPin
      setPower(.backup, at: now)
      if duration > 0 {
        nextDeadline = now + .milliseconds(Int64(duration))
        deadlineAction = .wakeFromTimedBackup
      } else {
        nextDeadline = nil
      }
      return .carriedOut

    case .ubxSetMessageRate(let message, let rates):
      guard model.acceptsMessageRateCommand else { return ubxAnswer(.cfgMsg, accepted: false) }
      if responses == .rejecting { return ubxAnswer(.cfgMsg, accepted: false) }
      messageRates[message] = rates
      if message == UBXMessageID(0xF0, 0x07) { gstSwitchedOn = rates.contains { $0 > 0 } }
      if let navigation = UBXOutputMessage(id: message) {
        if rates.contains(where: { $0 > 0 }) {
          ubxNavigationOutput.insert(navigation)
        } else {
          ubxNavigationOutput.remove(navigation)
        }
      }
      return ubxAnswer(.cfgMsg, accepted: true)

    case .ubxSetConfiguration(let layers, let values):
      let accepted =
        model.acceptsConfigurationInterface && responses != .rejecting && layers & 0x07 != 0
        && !values.isEmpty && values.allSatisfy { Self.knownConfigurationKeys.contains($0.key) }
      if accepted { applyConfiguration(values) }
      return ubxAnswer(.cfgValset, accepted: accepted)

    case .ubxPoll(let message):
      if message == .monVer {
        let version = model.version
        replies.append(
          UBX.monVer(
            software: version.software, hardware: version.hardware,
            extensions: version.extensions))
        return .answered
      }
      if message.messageClass == 0x06 { return ubxAnswer(message, accepted: false) }
      return .ignored

    case .ubxOther(let message, let payload):
      if message == .cfgMsg, payload.count == 2, model.acceptsMessageRateCommand,
        responses != .rejecting
      {
        // A poll of one message's rates: the rates on all six ports, then ACK-ACK.
        let id = UBXMessageID(payload[0], payload[1])
        let rates = messageRates[id].map {
          $0.count == 6 ? $0 : [UInt8](repeating: $0[0], count: 6)
        }
        replies.append(
          try! UBX.frame(.cfgMsg, payload: payload + (rates ?? [UInt8](repeating: 0, count: 6))))
        return ubxAnswer(.cfgMsg, accepted: true)
      }
      if message == .cfgCfg, payload.count == 12 || payload.count == 13 {
        return ubxAnswer(.cfgCfg, accepted: responses != .rejecting)
      }
      if message == Self.cfgRxm, payload.count == 2, model == .m8 {
        // Power save mode (lpMode 1) or continuous (0), M8 only (M9 and later: CFG-PM).
        let accepted = responses != .rejecting && [0, 1, 4].contains(payload[1])
        if accepted { physics?.powerSave = payload[1] == 1 }
        return ubxAnswer(message, accepted: accepted)
      }
      if message == Self.cfgNavx5, payload.count == 40 || payload.count == 44, model == .m8 {
        // mask1 bit 10 (ackAid) applies ackAiding, byte 17.
        let accepted = responses != .rejecting
        if accepted, payload[3] & 0x04 != 0 { acknowledgesAiding = payload[17] != 0 }
        return ubxAnswer(message, accepted: accepted)
      }
      if message == Self.mgaIni {
        return handleAiding(payload, at: now)
      }
      // Malformed payloads of the messages above, and configuration messages this simulator
      // does not model, are rejected; other classes are not answered.
      if message.messageClass == 0x06 { return ubxAnswer(message, accepted: false) }
      return .ignored

    default:
      return .ignored  // NMEA input ($PUBX,40 …) is not acknowledged
    }
  }

  static let cfgRxm = UBXMessageID(0x06, 0x11)
  static let cfgNavx5 = UBXMessageID(0x06, 0x23)
  static let mgaIni = UBXMessageID(0x13, 0x40)
  static let mgaAck = UBXMessageID(0x13, 0x60)
  /// `CFG-PM-OPERATEMODE` (0 full power, 1 PSMOO, 2 PSMCT) and `CFG-NAVSPG-ACKAIDING`.
  static let powerModeKey: UInt32 = 0x20D0_0001
  static let acknowledgeAidingKey: UInt32 = 0x1011_0025

  /// What the simulator models of an accepted `CFG-VALSET`: GST output, power save mode and
  /// aiding acknowledgements.
  private mutating func applyConfiguration(_ values: [UBXConfigurationValue]) {
    let gstKeys = (0...4).map {
      UbloxCommandSet.messageOutputKey(.gst, port: .uart1) - 1 + UInt32($0)
    }
    for value in values {
      if gstKeys.contains(value.key) { gstSwitchedOn = value.value > 0 }
      if value.key == Self.powerModeKey { physics?.powerSave = value.value == 2 }
      if value.key == Self.acknowledgeAidingKey { acknowledgesAiding = value.value != 0 }
      if let navigation = UBXOutputMessage(outputKey: value.key) {
        if value.value > 0 {
          ubxNavigationOutput.insert(navigation)
        } else {
          ubxNavigationOutput.remove(navigation)
        }
      }
    }
  }

  /// `UBX-MGA-INI-TIME_UTC` (type 0x10, 24 bytes) and `-POS_LLH` (type 0x01, 20 bytes): the
  /// values recorded, `UBX-MGA-ACK-DATA0` sent when acknowledgements are on. Other MGA-INI
  /// types are acknowledged and not modelled.
  private mutating func handleAiding(_ p: [UInt8], at now: Duration) -> InputOutcome {
    func u16(_ i: Int) -> Int { Int(p[i]) | Int(p[i + 1]) << 8 }
    func u32(_ i: Int) -> UInt32 {
      UInt32(p[i]) | UInt32(p[i + 1]) << 8 | UInt32(p[i + 2]) << 16 | UInt32(p[i + 3]) << 24
    }
    func i32(_ i: Int) -> Int32 { Int32(bitPattern: u32(i)) }
    var content: AidingReceived.Content?
    var valid = p.count >= 2 && p[1] == 0
    if valid, p[0] == 0x10, p.count == 24 {
      let date = UTCDate(year: u16(4), month: p[6], day: p[7])
      if p[6] >= 1, p[6] <= 12, p[7] >= 1, p[7] <= 31, p[8] < 24, p[9] < 60, p[10] < 61,
        u32(12) < 1_000_000_000
      {
        let time = UTCTime(hour: p[8], minute: p[9], second: p[10], nanoseconds: u32(12))
        let accuracy = Double(u16(16)) + Double(u32(20)) / 1e9
        content = .time(UTCTimestamp(date: date, time: time), accuracySeconds: accuracy)
      } else {
        valid = false
      }
    } else if valid, p[0] == 0x01, p.count == 20 {
      content = .position(
        latitude: Double(i32(4)) / 1e7, longitude: Double(i32(8)) / 1e7,
        altitude: Double(i32(12)) / 100, accuracyMetres: Double(u32(16)) / 100)
    } else if valid {
      valid = [0x00, 0x01, 0x10, 0x11, 0x20, 0x21, 0x30, 0x40].contains(p[0])
    }
    if let content { physics?.receive(content, at: now) }
    guard acknowledgesAiding else { return valid ? .carriedOut : .ignored }
    // UBX-MGA-ACK-DATA0: type (1 accepted, 0 not), version 0, infoCode (0 accepted,
    // 3 size mismatch), the message's ID, the first four bytes of its payload.
    let start = Array(p.prefix(4)) + [UInt8](repeating: 0, count: max(0, 4 - p.count))
    replies.append(
      try! UBX.frame(Self.mgaAck, payload: [valid ? 1 : 0, 0, valid ? 0 : 3, 0x40] + start))
    if valid {
      acknowledgements += 1
      return .acknowledged
    }
    rejections += 1
    return .rejected
  }

  private mutating func ubxAnswer(_ message: UBXMessageID, accepted: Bool) -> InputOutcome {
    replies.append(UBX.acknowledgement(for: message, accepted: accepted))
    if accepted {
      acknowledgements += 1
      return .acknowledged
    }
    rejections += 1
    return .rejected
  }

  /// `CFG-MSGOUT-NMEA_ID_*` keys on every port (I2C, UART1, UART2, USB, SPI): what
  /// `UBX-CFG-VALSET` may set here. Any other key is rejected, as a receiver rejects keys it
  /// does not know.
  static let knownConfigurationKeys: Set<UInt32> = {
    var keys: Set<UInt32> = []
    for sentence in NMEASentenceType.allCases {
      let uart1 = UbloxCommandSet.messageOutputKey(sentence, port: .uart1)
      for offset in 0...4 { keys.insert(uart1 - 1 + UInt32(offset)) }
    }
    keys.insert(powerModeKey)
    keys.insert(acknowledgeAidingKey)
    for message in UBXOutputMessage.allCases {
      if let outputKeys = message.outputKeys { keys.formUnion(outputKeys) }
    }
    return keys
  }()

  // MARK: MediaTek

  /// `$PMTK` set commands the chip takes without this simulator modelling their effect.
  static let mediatekSetCommands: Set<Int> = [
    0, 220, 223, 251, 255, 256, 285, 286, 300, 301, 313, 319, 320, 330, 351, 352, 353, 386, 397,
    869, 886,
  ]

  mutating func handleMediaTek(_ command: ReceiverCommand, at now: Duration) -> InputOutcome {
    switch command {
    case .mtkStandby(let mode):
      guard mode == 0 || mode == 1 else { return mtkAnswer(161, .invalidCommand) }
      if responses == .rejecting { return mtkAnswer(161, .failed) }
      // The chip acknowledges, then sleeps.
      let outcome = mtkAnswer(161, .succeeded)
      setPower(.standby, at: now)
      nextDeadline = nil
      periodic = nil
      return outcome

    case .mtkSetNMEAOutput(let intervals):
      let valid =
        intervals == [-1]
        || (intervals.count == 19 && intervals.allSatisfy { (0...5).contains($0) })
      guard valid else { return mtkAnswer(314, .invalidCommand) }
      if responses == .rejecting { return mtkAnswer(314, .failed) }
      mtkIntervals =
        intervals == [-1] ? [0, 1, 1, 1, 1, 1] + [Int](repeating: 0, count: 13) : intervals
      return mtkAnswer(314, .succeeded)

    case .mtkOther(let number, let fields):
      switch number {
      case 101, 102, 103, 104:
        // Hot, warm, cold and full cold restart: no acknowledgement; the chip restarts and
        // announces itself with $PMTK010,001. Warm clears the ephemeris, cold everything.
        if number >= 102 {
          physics?.clear(ephemeris: true, almanacAndPosition: number >= 103, time: number >= 103)
        }
        framer.reset()
        periodic = nil
        enterBooting(at: now)
        return .carriedOut
      case 740, 741:
        return handleAiding(number, fields, at: now)
      case 161, 314:
        return mtkAnswer(number, .invalidCommand)  // malformed fields
      case 225:
        guard let mode = fields.first.flatMap({ Int($0) }), [0, 1, 2, 4, 8, 9].contains(mode)
        else { return mtkAnswer(225, .invalidCommand) }
        let times = fields.dropFirst().map { Int($0) }
        let periodRange = 1000...518_400_000
        if mode == 1 || mode == 2 {
          // $PMTK225,<type>,<run ms>,<sleep ms>,<2nd run ms>,<2nd sleep ms>.
          guard times.count >= 2, let run = times[0], let sleep = times[1],
            periodRange.contains(run), periodRange.contains(sleep)
          else { return mtkAnswer(225, .invalidCommand) }
          if responses == .rejecting { return mtkAnswer(225, .failed) }
          periodic = PeriodicMode(
            type: mode, runTime: .milliseconds(run), sleepTime: .milliseconds(sleep))
          nextDeadline = now + .milliseconds(run)
          deadlineAction = .periodicSleep
          return mtkAnswer(225, .succeeded)
        }
        if responses == .rejecting { return mtkAnswer(225, .failed) }
        let outcome = mtkAnswer(225, .succeeded)
        if mode == 0, periodic != nil {
          periodic = nil
          nextDeadline = nil
        }
        // Backup mode: left only through the FORCE_ON pin. AlwaysLocate (8, 9) is
        // acknowledged and not modelled: the chip keeps streaming.
        if mode == 4 {
          periodic = nil
          setPower(.hibernate, at: now)
          nextDeadline = nil
        }
        return outcome
      case 414:
        if responses == .rejecting { return mtkAnswer(414, .failed) }
        replies.append(
          NMEAChecksum.frame("PMTK514," + mtkIntervals.map(String.init).joined(separator: ",")))
        return .answered
      case 605:
        if responses == .rejecting { return mtkAnswer(605, .failed) }
        replies.append(NMEAChecksum.frame("PMTK705,AXN_3.8_3333_16070500,0000,SIM-MT3339,1.0"))
        return .answered
      default:
        if Self.mediatekSetCommands.contains(number) {
          return mtkAnswer(number, responses == .rejecting ? .failed : .succeeded)
        }
        return mtkAnswer(number, .unsupported)
      }

    default:
      return .ignored
    }
  }

  /// `$PMTK740,YYYY,MM,DD,hh,mm,ss` (UTC time) and
  /// `$PMTK741,lat,lon,alt,YYYY,MM,DD,hh,mm,ss` (position, degrees and metres).
  private mutating func handleAiding(_ number: Int, _ fields: [String], at now: Duration)
    -> InputOutcome
  {
    let dateFields = number == 740 ? fields : Array(fields.dropFirst(3))
    let numbers = dateFields.map { Int($0) }
    guard fields.count == (number == 740 ? 6 : 9), !numbers.contains(nil),
      let year = numbers[0], let month = numbers[1], let day = numbers[2],
      let hour = numbers[3], let minute = numbers[4], let second = numbers[5],
      (1...12).contains(month), (1...31).contains(day), (0...23).contains(hour),
      (0...59).contains(minute), (0...60).contains(second)
    else { return mtkAnswer(number, .invalidCommand) }
    let time = UTCTimestamp(
      date: UTCDate(year: year, month: UInt8(month), day: UInt8(day)),
      time: UTCTime(hour: UInt8(hour), minute: UInt8(minute), second: UInt8(second)))
    if number == 741 {
      guard let latitude = Double(fields[0]), let longitude = Double(fields[1]),
        let altitude = Double(fields[2]), abs(latitude) <= 90, abs(longitude) <= 180
      else { return mtkAnswer(number, .invalidCommand) }
      if responses == .rejecting { return mtkAnswer(number, .failed) }
      physics?.receive(
        .position(
          latitude: latitude, longitude: longitude, altitude: altitude, accuracyMetres: nil),
        at: now)
    } else {
      if responses == .rejecting { return mtkAnswer(number, .failed) }
      physics?.receive(.time(time, accuracySeconds: nil), at: now)
    }
    return mtkAnswer(number, .succeeded)
  }

  private mutating func mtkAnswer(_ command: Int, _ result: MTKAckResult) -> InputOutcome {
    replies.append(MediaTekCommandSet.acknowledgement(command: command, result: result))
    if result == .succeeded {
      acknowledgements += 1
      return .acknowledged
    }
    rejections += 1
    return .rejected
  }

  // MARK: SiRF

  /// SiRF never acknowledges NMEA input (SiRF NMEA Reference Manual): `$PSRF103` is taken
  /// silently; `$PSRF117,16` answers `$PSRF150,0` and hibernates.
  mutating func handleSiRF(_ command: ReceiverCommand, at now: Duration) -> InputOutcome {
    switch command {
    case .sirfSetRate:
      return .carriedOut
    case .sirfTurnOff(let code):
      guard code == 16, responses != .rejecting else { return .ignored }
      replies.append(NMEAChecksum.frame("PSRF150,0"))
      setPower(.hibernate, at: now)
      nextDeadline = nil
      return .carriedOut
    default:
      return .ignored
    }
  }
}
