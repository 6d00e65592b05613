import NMEA

/// One value of a `UBX-CFG-VALSET`: a configuration key and its value, widened to 64 bits.
public struct UBXConfigurationValue: Sendable, Hashable {
  public var key: UInt32
  public var value: UInt64

  public init(key: UInt32, value: UInt64) {
    self.key = key
    self.value = value
  }

  /// The value's size in bytes, from bits 28–30 of the key: 1 bit and 1 byte values take one
  /// byte, then 2, 4 and 8 bytes; `nil` for a reserved size.
  public static func storageSize(ofKey key: UInt32) -> Int? {
    switch (key >> 28) & 0x7 {
    case 1, 2: return 1
    case 3: return 2
    case 4: return 4
    case 5: return 8
    default: return nil
    }
  }
}

/// A command a host sent to a receiver, decoded: what a receiver simulator (or a test)
/// needs to act like the real chip.
///
/// Decoded from the frames an ``NMEAFramer`` finds in the bytes the host wrote: UBX frames
/// and NMEA sentences. Malformed payloads decode as the `…Other` cases with their raw
/// contents, never as a wrong command.
public enum ReceiverCommand: Sendable, Hashable {
  /// `UBX-CFG-RST`.
  case ubxReset(navBbrMask: UInt16, resetMode: UInt8)
  /// `UBX-CFG-MSG` setting rates: one rate (the current port) or six (per port).
  case ubxSetMessageRate(UBXMessageID, rates: [UInt8])
  /// `UBX-CFG-VALSET` (version 0).
  case ubxSetConfiguration(layers: UInt8, values: [UBXConfigurationValue])
  /// `UBX-RXM-PMREQ`; `wakeupSources` only in the 16-byte form.
  case ubxPowerRequest(durationMilliseconds: UInt32, flags: UInt32, wakeupSources: UInt32?)
  /// A UBX message with an empty payload: a poll (`UBX-MON-VER`, `UBX-CFG-…`).
  case ubxPoll(UBXMessageID)
  /// Any other UBX message.
  case ubxOther(UBXMessageID, payload: [UInt8])
  /// `$PMTK161,<mode>`.
  case mtkStandby(mode: Int)
  /// `$PMTK314,…`: the output interval of each sentence field.
  case mtkSetNMEAOutput(intervals: [Int])
  /// Any other `$PMTKnnn` (including `$PMTK000` test and `$PMTK101` hot start).
  case mtkOther(command: Int, fields: [String])
  /// `$PSRF103,<msg>,<mode>,<rate>,<cksumEnable>`.
  case sirfSetRate(message: Int, mode: Int, rate: Int, checksum: Bool)
  /// `$PSRF117,<code>` (16: hibernate).
  case sirfTurnOff(code: Int)
  /// Any other sentence.
  case nmeaOther(address: String, fields: [String])

  /// Decodes a UBX frame the host sent.
  public init(_ frame: UBXFrameView) {
    let id = UBXMessageID(frame)
    let p = frame.payload
    func u16(_ i: Int) -> UInt16 { UInt16(p[i]) | UInt16(p[i + 1]) << 8 }
    func u32(_ i: Int) -> UInt32 {
      UInt32(p[i]) | UInt32(p[i + 1]) << 8 | UInt32(p[i + 2]) << 16 | UInt32(p[i + 3]) << 24
    }
    if p.isEmpty {
      self = .ubxPoll(id)
      return
    }
    switch id {
    case .cfgRst where p.count == 4:
      self = .ubxReset(navBbrMask: u16(0), resetMode: p[2])
    case .cfgMsg where p.count == 3 || p.count == 8:
      self = .ubxSetMessageRate(UBXMessageID(p[0], p[1]), rates: Array(p[2...]))
    case .rxmPmreq where p.count == 8:
      self = .ubxPowerRequest(durationMilliseconds: u32(0), flags: u32(4), wakeupSources: nil)
    case .rxmPmreq where p.count == 16 && p[0] == 0:
      self = .ubxPowerRequest(durationMilliseconds: u32(4), flags: u32(8), wakeupSources: u32(12))
    case .cfgValset where p.count >= 4 && p[0] == 0:
      var values: [UBXConfigurationValue] = []
      var offset = 4
      var valid = true
      while offset < p.count {
        guard offset + 4 <= p.count,
          let size = UBXConfigurationValue.storageSize(ofKey: u32(offset)),
          offset + 4 + size <= p.count
        else {
          valid = false
          break
        }
        var value: UInt64 = 0
        for index in 0..<size { value |= UInt64(p[offset + 4 + index]) << (8 * UInt64(index)) }
        values.append(UBXConfigurationValue(key: u32(offset), value: value))
        offset += 4 + size
      }
      self =
        valid
        ? .ubxSetConfiguration(layers: p[1], values: values) : .ubxOther(id, payload: Array(p))
    default:
      self = .ubxOther(id, payload: Array(p))
    }
  }

  /// The command by its name, for people: `UBX-RXM-PMREQ`, `UBX-MGA-INI-TIME_UTC (the time,
  /// for a faster fix)`, `$PMTK161 (standby)`; never a payload dump.
  public var name: String {
    switch self {
    case .ubxReset: return "UBX-CFG-RST (reset or GNSS start/stop)"
    case .ubxSetMessageRate(let id, _): return "UBX-CFG-MSG (\(id)'s rate)"
    case .ubxSetConfiguration(_, let values):
      return "UBX-CFG-VALSET (\(values.count) setting\(values.count == 1 ? "" : "s"))"
    case .ubxPowerRequest: return "UBX-RXM-PMREQ (sleep)"
    case .ubxPoll(let id): return "\(id) poll"
    case .ubxOther(let id, let payload):
      // UBX-MGA-INI's kinds are told apart by the payload's first byte (u-blox 8 / M8
      // Receiver Description, UBX-13003221, "UBX-MGA-INI").
      if id == .mgaIni, payload.first == 0x10 {
        return "UBX-MGA-INI-TIME_UTC (the time, for a faster fix)"
      }
      if id == .mgaIni, payload.first == 0x01 {
        return "UBX-MGA-INI-POS_LLH (the last position, for a faster fix)"
      }
      return "\(id) (\(payload.count) bytes)"
    case .mtkStandby: return "$PMTK161 (standby)"
    case .mtkSetNMEAOutput: return "$PMTK314 (which sentences, how often)"
    case .mtkOther(let command, _):
      switch command {
      case 740: return "$PMTK740 (the time, for a faster fix)"
      case 741: return "$PMTK741 (the last position, for a faster fix)"
      default: return "$PMTK\(command)"
      }
    case .sirfSetRate(let message, _, _, _): return "$PSRF103 (sentence \(message)'s rate)"
    case .sirfTurnOff: return "$PSRF117 (power off)"
    case .nmeaOther(let address, _): return "$" + address
    }
  }

  /// Decodes a sentence the host sent.
  public init(_ sentence: Sentence) {
    guard case .unknown(let unknown) = sentence else {
      self = .nmeaOther(address: Self.address(of: sentence), fields: [])
      return
    }
    let fields = unknown.fields
    let address = unknown.address
    let numbers = fields.map { Int($0) }
    if address.hasPrefix("PMTK"), let command = Int(address.dropFirst(4)) {
      if command == 161, numbers.count == 1, let mode = numbers[0] {
        self = .mtkStandby(mode: mode)
      } else if command == 314, !numbers.isEmpty, !numbers.contains(nil) {
        self = .mtkSetNMEAOutput(intervals: numbers.map { $0! })
      } else {
        self = .mtkOther(command: command, fields: fields)
      }
    } else if address == "PSRF103", numbers.count == 4, !numbers.contains(nil) {
      self = .sirfSetRate(
        message: numbers[0]!, mode: numbers[1]!, rate: numbers[2]!, checksum: numbers[3]! == 1)
    } else if address == "PSRF117", numbers.count == 1, let code = numbers[0] {
      self = .sirfTurnOff(code: code)
    } else {
      self = .nmeaOther(address: address, fields: fields)
    }
  }

  /// The family whose receivers understand this command; ``ChipsetFamily/nmea`` for a
  /// sentence no family owns.
  public var family: ChipsetFamily {
    switch self {
    case .ubxReset, .ubxSetMessageRate, .ubxSetConfiguration, .ubxPowerRequest, .ubxPoll,
      .ubxOther:
      return .ublox
    case .mtkStandby, .mtkSetNMEAOutput, .mtkOther: return .mediatek
    case .sirfSetRate, .sirfTurnOff: return .sirf
    case .nmeaOther(let address, _):
      if address == "PUBX" { return .ublox }
      if address.hasPrefix("PSRF") { return .sirf }
      return .nmea
    }
  }

  static func address(of sentence: Sentence) -> String {
    switch sentence {
    case .mtkAcknowledgement: return "PMTK001"
    case .mtkSystemMessage(let message):
      if case .text = message.kind { return "PMTK011" }
      return "PMTK010"
    case .pubxPosition, .pubxSatellites, .pubxTime: return "PUBX"
    case .txt(let s): return s.talker.description + "TXT"
    default: return ""
    }
  }
}

extension MediaTekCommandSet {
  /// `$PMTK001,<command>,<result>` as a MediaTek chip sends it; for simulators and tests.
  public static func acknowledgement(command: Int, result: MTKAckResult) -> [UInt8] {
    NMEAChecksum.frame("PMTK001,\(command),\(result.rawValue)")
  }
}
