import NMEA

/// A UBX message a u-blox receiver can be told to send once per navigation epoch, with the
/// class and ID that `UBX-CFG-MSG` names it by (u-blox 8 and older) and its
/// `CFG-MSGOUT-UBX_*` configuration keys (u-blox 9 and later).
public enum UBXOutputMessage: String, Sendable, Hashable, CaseIterable, Comparable {
  case navPVT = "NAV-PVT"
  case navPosLLH = "NAV-POSLLH"
  case navVelNED = "NAV-VELNED"
  case navSol = "NAV-SOL"
  case navPosECEF = "NAV-POSECEF"
  case navVelECEF = "NAV-VELECEF"
  case navDOP = "NAV-DOP"
  case navSat = "NAV-SAT"
  case navSVInfo = "NAV-SVINFO"
  case navSig = "NAV-SIG"
  case navTimeUTC = "NAV-TIMEUTC"
  case navTimeGPS = "NAV-TIMEGPS"
  case navStatus = "NAV-STATUS"
  case navEOE = "NAV-EOE"
  case timTP = "TIM-TP"
  case monRF = "MON-RF"
  case monHW = "MON-HW"

  public static func < (lhs: Self, rhs: Self) -> Bool {
    allCases.firstIndex(of: lhs)! < allCases.firstIndex(of: rhs)!
  }

  /// Class and ID, from the decoder that reads the message (one home for both).
  public var id: UBXMessageID {
    switch self {
    case .navPVT: return UBXMessageID(UBXNavPVT.messageClass, UBXNavPVT.messageID)
    case .navPosLLH: return UBXMessageID(UBXNavPosLLH.messageClass, UBXNavPosLLH.messageID)
    case .navVelNED: return UBXMessageID(UBXNavVelNED.messageClass, UBXNavVelNED.messageID)
    case .navSol: return UBXMessageID(UBXNavSol.messageClass, UBXNavSol.messageID)
    case .navPosECEF: return UBXMessageID(UBXNavPosECEF.messageClass, UBXNavPosECEF.messageID)
    case .navVelECEF: return UBXMessageID(UBXNavVelECEF.messageClass, UBXNavVelECEF.messageID)
    case .navDOP: return UBXMessageID(UBXNavDOP.messageClass, UBXNavDOP.messageID)
    case .navSat: return UBXMessageID(UBXNavSat.messageClass, UBXNavSat.messageID)
    case .navSVInfo: return UBXMessageID(UBXNavSVInfo.messageClass, UBXNavSVInfo.messageID)
    case .navSig: return UBXMessageID(UBXNavSig.messageClass, UBXNavSig.messageID)
    case .navTimeUTC: return UBXMessageID(UBXNavTimeUTC.messageClass, UBXNavTimeUTC.messageID)
    case .navTimeGPS: return UBXMessageID(UBXNavTimeGPS.messageClass, UBXNavTimeGPS.messageID)
    case .navStatus: return UBXMessageID(UBXNavStatus.messageClass, UBXNavStatus.messageID)
    case .navEOE: return UBXMessageID(UBXNavEOE.messageClass, UBXNavEOE.messageID)
    case .timTP: return UBXMessageID(UBXTimTP.messageClass, UBXTimTP.messageID)
    case .monRF: return UBXMessageID(UBXMonRF.messageClass, UBXMonRF.messageID)
    case .monHW: return UBXMessageID(UBXMonHW.messageClass, UBXMonHW.messageID)
    }
  }

  /// The message with this class and ID, if it is one of these.
  public init?(id: UBXMessageID) {
    guard let message = Self.allCases.first(where: { $0.id == id }) else { return nil }
    self = message
  }

  /// The message a `CFG-MSGOUT-UBX_*` key of any port (I2C, UART1, UART2, USB, SPI) switches.
  public init?(outputKey key: UInt32) {
    guard
      let message = Self.allCases.first(where: {
        $0.outputKeys?.contains(key) ?? false
      })
    else { return nil }
    self = message
  }

  /// All five `CFG-MSGOUT-UBX_*` keys of the message (I2C, UART1, UART2, USB, SPI); none for a
  /// message u-blox 9 lacks.
  public var outputKeys: ClosedRange<UInt32>? {
    uart1Key.map { ($0 - 1)...($0 + 3) }
  }

  /// `CFG-MSGOUT-UBX_<class>_<message>_UART1` (u-blox ZED-F9P Interface Description,
  /// UBX-18010854, "CFG-MSGOUT"; size U1). NAV-SOL, NAV-SVINFO and MON-HW's u-blox 8 forms
  /// have no key: NAV-SOL and NAV-SVINFO are gone from u-blox 9, MON-HW is kept but
  /// deprecated (`nil` for the first two).
  public var uart1Key: UInt32? {
    switch self {
    case .navPVT: return 0x2091_0007
    case .navPosLLH: return 0x2091_002A
    case .navVelNED: return 0x2091_0043
    case .navSol, .navSVInfo: return nil
    case .navPosECEF: return 0x2091_0025
    case .navVelECEF: return 0x2091_003E
    case .navDOP: return 0x2091_0039
    case .navSat: return 0x2091_0016
    case .navSig: return 0x2091_0346
    case .navTimeUTC: return 0x2091_005C
    case .navTimeGPS: return 0x2091_0048
    case .navStatus: return 0x2091_001B
    case .navEOE: return 0x2091_0160
    case .timTP: return 0x2091_017E
    case .monRF: return 0x2091_035A
    case .monHW: return 0x2091_01B5
    }
  }
}

/// The UBX messages to switch on when a u-blox receiver is powered on, as ``NMEASelection``
/// is for NMEA sentences: each at rate 1 (once per navigation epoch), in the RAM layer only.
public struct UBXMessageSelection: Sendable, Hashable, CustomStringConvertible {
  /// The messages, in a fixed order (``UBXOutputMessage/allCases``'s).
  public let messages: [UBXOutputMessage]

  public init<S: Sequence>(_ messages: S) where S.Element == UBXOutputMessage {
    self.messages = Array(Set(messages)).sorted()
  }

  /// Nothing: the receiver's UBX output is left as it is.
  public static let none = UBXMessageSelection([])

  /// What the fix builder reports of a u-blox 8 or later (protocol 18 and later): NAV-PVT
  /// (time, position, velocity, accuracies, RTK solution), NAV-DOP, NAV-SAT (satellites),
  /// NAV-TIMEGPS (leap seconds), NAV-STATUS (time to first fix), NAV-EOE (the end of the
  /// epoch, so that an epoch is out without waiting for the next).
  public static let navigation = UBXMessageSelection([
    .navPVT, .navDOP, .navSat, .navTimeGPS, .navStatus, .navEOE,
  ])

  /// The same for u-blox 6 and older, which have no NAV-PVT, NAV-SAT or NAV-EOE: NAV-SOL (fix,
  /// ECEF), NAV-POSLLH, NAV-VELNED, NAV-TIMEUTC, NAV-TIMEGPS, NAV-DOP, NAV-SVINFO, NAV-STATUS.
  public static let legacyNavigation = UBXMessageSelection([
    .navSol, .navPosLLH, .navVelNED, .navTimeUTC, .navTimeGPS, .navDOP, .navSVInfo, .navStatus,
  ])

  public var isEmpty: Bool { messages.isEmpty }

  /// Parses the command line's names: `navigation` (``navigation``), `legacy`
  /// (``legacyNavigation``), `off` (``none``), ignoring case.
  public init?(cliName: String) {
    switch cliName.lowercased() {
    case "navigation", "nav": self = .navigation
    case "legacy": self = .legacyNavigation
    case "off", "none": self = .none
    default: return nil
    }
  }

  /// The names ``init(cliName:)`` documents, for help texts.
  public static let cliNames = "navigation|legacy|off"

  public var description: String { messages.map(\.rawValue).joined(separator: ",") }
}

extension UbloxCommandSet {
  /// The steps that switch the selected UBX messages on: one `UBX-CFG-MSG` per message (the
  /// 3-byte form, which sets the rate on the port the command arrives on) for u-blox 8 and
  /// older; one `UBX-CFG-VALSET` with a `CFG-MSGOUT-UBX_*` key per message for the port in
  /// use, RAM layer only, for u-blox 9 and later. Apart from the NMEA selection's own
  /// VALSET: a receiver refuses a whole VALSET for one key it does not know, and a UBX key an
  /// older firmware lacks must not cost the NMEA sentences.
  public var binarySelectionSteps: [CommandStep] {
    let selection = options.binaryMessages
    switch options.generation {
    case .m8AndOlder:
      return selection.messages.map { message in
        CommandStep(
          bytes: UBX.unchecked(
            .cfgMsg, payload: [message.id.messageClass, message.id.messageID, 1]),
          summary: "UBX-CFG-MSG UBX-\(message.rawValue) once per epoch",
          acknowledgement: .ubx(.cfgMsg))
      }
    case .m9AndLater:
      let keyed = selection.messages.compactMap { message in
        Self.messageOutputKey(message, port: options.port).map { (message, $0) }
      }
      guard !keyed.isEmpty else { return [] }
      let names = keyed.map { $0.0.rawValue.replacingDash() }.joined(separator: ",")
      return [Self.enableInRAM(keyed.map(\.1), summary: "CFG-MSGOUT-UBX_{\(names)}_\(portName)")]
    }
  }

  /// `CFG-MSGOUT-UBX_*_UART1` or `_USB` of `message`; `nil` for a message u-blox 9 lacks.
  /// Each message has five consecutive keys: I2C, UART1, UART2, USB, SPI.
  public static func messageOutputKey(_ message: UBXOutputMessage, port: UbloxPort) -> UInt32? {
    guard let uart1 = message.uart1Key else { return nil }
    return port == .uart1 ? uart1 : uart1 + 2
  }
}

extension String {
  /// `NAV-PVT` as the key names write it, `NAV_PVT`.
  fileprivate func replacingDash() -> String {
    String(map { $0 == "-" ? "_" : $0 })
  }
}
