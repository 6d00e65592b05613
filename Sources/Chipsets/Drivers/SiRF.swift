import NMEA

/// How a SiRF receiver is powered off.
public enum SiRFPowerOffMode: String, Sendable, Hashable {
  /// No command: the receiver keeps navigating and only the port is closed, so the next fix
  /// is immediate. The default, because SiRF has no low-power state that the serial line
  /// alone can leave.
  case none
  /// `$PSRF117,16`: hibernate. Only a pulse on the ON_OFF pin wakes the receiver; choose this
  /// only when the host drives that pin (USB mice such as the BU-353 do not expose it: they
  /// stay asleep until unplugged).
  case hibernate
}

/// SiRF commands (SiRF NMEA Reference Manual, 1050-0042): `$PSRF103` message rates, and
/// `$PSRF117,16` hibernate where the host can wake the receiver with its ON_OFF pin.
///
/// SiRF never acknowledges NMEA input messages. SiRF's other low-power modes (TricklePower,
/// Push-to-Fix, SiRFstarIV micro power mode) are set with SiRF binary messages, which means
/// switching the port to the binary protocol; the driver does not do that.
public struct SiRFCommandSet: ReceiverCommandSet {
  public let sentences: NMEASelection
  public let powerOffMode: SiRFPowerOffMode

  public init(sentences: NMEASelection = .standard, powerOffMode: SiRFPowerOffMode = .none) {
    self.sentences = sentences
    self.powerOffMode = powerOffMode
  }

  public var family: ChipsetFamily { .sirf }

  /// `$PSRF103,<msg>,00,01,01` for each selected sentence: set (mode 0) a rate of one per
  /// second with checksums on.
  public var powerOnSteps: [CommandStep] {
    sentences.sentences.compactMap { sentence in
      guard let message = Self.psrf103Message[sentence] else { return nil }
      let body = "PSRF103," + two(message) + ",00,01,01"
      return CommandStep(
        bytes: NMEAChecksum.frame(body), summary: "$\(body) \(sentence.rawValue) every second")
    }
  }

  public var powerOffSteps: [CommandStep] {
    switch powerOffMode {
    case .none: return []
    case .hibernate: return [Self.hibernate]
    }
  }

  public var powerProfile: PowerProfile {
    switch powerOffMode {
    case .none:
      return PowerProfile(offState: .running, wakesOverSerial: true, hotStartMilliseconds: nil)
    case .hibernate:
      // GlobalSat BU-353S4 (SiRFstarIV) specification: hot start 1 s.
      return PowerProfile(offState: .hibernate, wakesOverSerial: false, hotStartMilliseconds: 1000)
    }
  }

  /// `$PSRF117,16`: system turn off (hibernate).
  public static let hibernate = CommandStep(
    bytes: NMEAChecksum.frame("PSRF117,16"),
    summary: "$PSRF117,16 hibernate (wakes only by the ON_OFF pin)")

  /// `$PSRF103` message numbers: 0 GGA, 1 GLL, 2 GSA, 3 GSV, 4 RMC, 5 VTG, 8 ZDA.
  public static let psrf103Message: [NMEASentenceType: Int] = [
    .gga: 0, .gll: 1, .gsa: 2, .gsv: 3, .rmc: 4, .vtg: 5, .zda: 8,
  ]
}

func two(_ value: Int) -> String { value < 10 ? "0\(value)" : String(value) }

extension ChipsetFamily {
  /// SiRF (SiRFstar II–V): `$PSRF` commands and SiRF binary.
  public static let sirf = ChipsetFamily(rawValue: "sirf")
}

/// The SiRF driver: `$PSRF103` rates and, where the ON_OFF pin is the host's, `$PSRF117,16`
/// hibernate (``SiRFCommandSet``); never acknowledged. Identified by `$PSRF` sentences and
/// SiRF binary frames; no probe (its version query is SiRF binary).
public struct SiRFDriver: ChipsetDriver {
  public init() {}
  public var family: ChipsetFamily { .sirf }
  public var cliName: String { "sirf" }
  public var aliases: [String] { [] }
  public var displayName: String { "SiRF" }
  public var vendor: String? { "SiRF" }
  /// gpsd's drivers/driver_sirf.c.
  public var gpsdDriverName: String { "SiRF" }
  /// SiRF receivers ship at 4800 bit/s (SiRF NMEA Reference Manual; BU-353S4).
  public var factoryBaudRate: Int { 4800 }
  /// SiRF never acknowledges NMEA input messages.
  public var acknowledgesCommands: Bool { false }
  public var kernelGNSSType: String? { "SiRF" }
  /// Hibernate: only the ON_OFF pin wakes it.
  public var pinOnlySleepCommand: String? { "PSRF117,16" }

  public func commandSet(_ options: CommandSetOptions) -> any ReceiverCommandSet {
    SiRFCommandSet(sentences: options.sentences)
  }

  public func unsupported(_ selection: NMEASelection) -> [NMEASentenceType] {
    selection.sentences.filter { SiRFCommandSet.psrf103Message[$0] == nil }
  }

  public func evidence(in sentence: Sentence) -> ChipsetEvidence? {
    guard case .unknown(let unknown) = sentence, unknown.talker == .proprietary,
      unknown.address.hasPrefix("PSRF")
    else { return nil }
    return ChipsetEvidence(confidence: .high, what: "$\(unknown.address) sentence")
  }
}
