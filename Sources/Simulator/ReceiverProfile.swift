import Chipsets
import NMEA
import Replay

/// Which receiver a simulator imitates: what it answers, and which power states it has.
public enum ReceiverProfile: Sendable, Hashable, CustomStringConvertible {
  /// u-blox: UBX commands, ACK-ACK/ACK-NAK for configuration messages, GNSS stop/start and
  /// backup.
  case ublox(UbloxModel)
  /// MediaTek MT3339 and Quectel L70/L76/L80: `$PMTK` commands answered by `$PMTK001`, standby
  /// left on any byte.
  case mediatek
  /// SiRFstar: `$PSRF103` taken without an answer (SiRF never acknowledges NMEA input);
  /// `$PSRF117,16` hibernates until ``ReceiverSimulator/powerCycle()``.
  case sirf
  /// CASIC (Quectel L76K): `$PCAS` commands taken without an answer; standby only through
  /// its standby input (``ReceiverPin/forceOn`` driven low) (``CASICModel``).
  case casic
  /// Airoha (Quectel LC76G): `$PAIR` commands answered by `$PAIR001`; GNSS off by command,
  /// backup left only by the wake pin (``AirohaModel``).
  case airoha
  /// A receiver without commands: streams whenever it has power.
  case generic

  /// The simulator's model of `family`: the one place that maps a chipset family to what the
  /// simulator imitates. A u-blox receiver is `ublox` (M8 unless given); a family the
  /// simulator has no model of streams as a generic receiver.
  public init(family: ChipsetFamily, ublox: UbloxModel = .m8) {
    switch family {
    case .ublox: self = .ublox(ublox)
    case .mediatek: self = .mediatek
    case .sirf: self = .sirf
    case .casic: self = .casic
    case .airoha: self = .airoha
    default: self = .generic
    }
  }

  /// The chipset family whose commands the profile understands.
  public var family: ChipsetFamily {
    switch self {
    case .ublox: return .ublox
    case .mediatek: return .mediatek
    case .sirf: return .sirf
    case .casic: return .casic
    case .airoha: return .airoha
    case .generic: return .nmea
    }
  }

  /// The figures of the chip this profile imitates (``ReceiverFigures``' presets); `nil` for
  /// SiRF and generic receivers, whose physics this simulator does not model (they stream the
  /// recording as it is).
  public var figures: ReceiverFigures? {
    switch self {
    case .ublox(.m8): return .ubloxM8
    case .ublox(.m9): return .ubloxM9
    case .ublox(.m10): return .ubloxM10
    case .mediatek: return .mediatekMT3339
    case .casic: return .casicL76K
    case .airoha: return .airohaLC76G
    case .sirf, .generic: return nil
    }
  }

  /// How the chip writes an epoch without a fix.
  var epochStyle: EpochStyle {
    switch self {
    case .ublox: return .emptyUnitsDOPs99
    case .mediatek: return .oneDigitSatellites
    default: return .generic
    }
  }

  /// Whether a byte on RX ends its standby: not the L76K's, which only its standby input
  /// leaves.
  var standbyWakesOnBytes: Bool { self != .casic }

  /// What the host driving `pin` to `high` does to the chip in `power`: MediaTek FORCE_ON and
  /// the Airoha wake pin, high, wake it from backup; the L76K's standby input, high, ends its
  /// standby and, low, enters it; a u-blox EXTINT edge wakes it from backup when the PMREQ's
  /// wake-up sources include the pin. `nil`: nothing.
  func pinEffect(
    _ pin: ReceiverPin, high: Bool, power: SimulatedPowerState,
    backupWakeSources: ReceiverModel.BackupWakeSources
  ) -> PinEffect? {
    switch (pin, self) {
    case (.forceOn, .mediatek) where high && power == .hibernate,
      (.forceOn, .airoha) where high && power == .hibernate,
      (.forceOn, .casic) where high && power == .standby:
      return .wake
    case (.forceOn, .casic) where !high && power == .running:
      return .standby
    case (.extint, .ublox) where power == .backup && backupWakeSources.pin:
      return .wake
    default:
      return nil
    }
  }

  /// What a pin change does (``pinEffect(_:high:power:backupWakeSources:)``).
  enum PinEffect {
    /// The chip boots out of its sleep.
    case wake
    /// The chip enters standby.
    case standby
  }

  /// What the chip sends by itself as a start ends: MediaTek's `$PMTK010,001`, after
  /// `$PMTK011,MTKGPS` when it was a power cycle.
  func startMessages(coldStart: Bool) -> [[UInt8]] {
    guard self == .mediatek else { return [] }
    return (coldStart ? [NMEAChecksum.frame("PMTK011,MTKGPS")] : [])
      + [NMEAChecksum.frame("PMTK010,001")]
  }

  public var description: String {
    switch self {
    case .ublox(let model): return "u-blox \(model.rawValue)"
    case .mediatek: return "MediaTek"
    case .sirf: return "SiRF"
    case .casic: return "CASIC (L76K)"
    case .airoha: return "Airoha (LC76G)"
    case .generic: return "generic NMEA"
    }
  }
}

/// u-blox generations, as far as the commands the driver sends differ.
public enum UbloxModel: String, Sendable, Hashable, CaseIterable {
  /// u-blox M8 (protocol 18.00): `UBX-CFG-MSG`; no configuration interface, so
  /// `UBX-CFG-VALSET` is rejected.
  case m8 = "M8"
  /// u-blox M9/F9 (protocol 27 and later): `UBX-CFG-VALSET`, and the deprecated
  /// `UBX-CFG-MSG` still accepted.
  case m9 = "M9"
  /// u-blox M10: `UBX-CFG-VALSET` only; `UBX-CFG-MSG` is rejected.
  case m10 = "M10"

  /// Whether `UBX-CFG-MSG` is accepted.
  public var acceptsMessageRateCommand: Bool { self != .m10 }
  /// Whether `UBX-CFG-VALSET` is accepted.
  public var acceptsConfigurationInterface: Bool { self != .m8 }

  /// The `UBX-MON-VER` answer: software, hardware version (the generation's code, which
  /// identification reads) and `PROTVER`/`MOD` extensions. Values are typical of each
  /// generation, not copied from a device.
  public var version: UBXVersion {
    switch self {
    case .m8:
      return UBXVersion(
        software: "ROM CORE 3.01 (107888)", hardware: "00080000",
        extensions: ["FWVER=SPG 3.01", "PROTVER=18.00", "MOD=NEO-M8N", "GPS;GLO;GAL;BDS"])
    case .m9:
      return UBXVersion(
        software: "ROM SPG 4.04 (0c3e1c)", hardware: "00190000",
        extensions: ["FWVER=SPG 4.04", "PROTVER=32.01", "MOD=NEO-M9N", "GPS;GLO;GAL;BDS"])
    case .m10:
      return UBXVersion(
        software: "ROM SPG 5.10 (7b202e)", hardware: "000A0000",
        extensions: ["FWVER=SPG 5.10", "PROTVER=34.10", "MOD=MAX-M10S", "GPS;GLO;GAL;BDS"])
    }
  }
}

/// What the simulator does with the commands it receives.
public enum ResponseMode: Sendable, Hashable {
  /// As the real chip: acknowledges, rejects what the chip would reject, changes power state.
  case normal
  /// Deaf: every byte is recorded and nothing else happens; no answer, no state change, not
  /// even a wake from standby. Streaming goes on as the power state was.
  case unresponsive
  /// Every command the chip would acknowledge is rejected (`UBX-ACK-NAK`, `$PMTK001,<cmd>,2`)
  /// and not carried out. Commands the chip never acknowledges (`UBX-CFG-RST`,
  /// `UBX-RXM-PMREQ`, `$PMTK101`) still act, and a byte still wakes it.
  case rejecting
  /// As ``normal``, except that `UBX-RXM-PMREQ` is ignored and the receiver goes on
  /// streaming: what a u-blox receiver does while its USB port is connected (u-blox 8 / M8
  /// Receiver Description UBX-13003221, UBX-RXM-PMREQ; the M9 and later unless `force`), or
  /// with a request damaged on the line. An Airoha receiver likewise neither answers nor
  /// carries out `$PAIR650`.
  case ignoringBackupRequest
}

/// A simulated receiver's power state.
public enum SimulatedPowerState: String, Sendable, Hashable, CustomStringConvertible {
  /// Navigating and streaming the recording.
  case running
  /// u-blox controlled GNSS stop (`UBX-CFG-RST` reset mode 0x08): silent, still answers.
  case gnssStopped
  /// u-blox backup (`UBX-RXM-PMREQ`): silent and deaf until a byte arrives; that byte is lost.
  case backup
  /// MediaTek standby (`$PMTK161,0`): silent until a byte arrives; that byte is lost.
  case standby
  /// SiRF hibernate (`$PSRF117,16`) or MediaTek backup (`$PMTK225,4`): only
  /// ``ReceiverSimulator/powerCycle()`` (the ON_OFF or FORCE_ON pin) brings it back.
  case hibernate
  /// Starting after a wake, a reset or a power cycle: silent, input is lost, until the wake
  /// delay has passed.
  case booting
  /// No power: unplugged (``ReceiverSimulator/hangUp()``), or started unpowered so that a
  /// test can open the port before the first byte (``ReceiverSimulator/powerCycle()`` then
  /// starts it).
  case off

  /// Whether the receiver streams its recording in this state.
  public var isStreaming: Bool { self == .running }

  public var description: String { rawValue }
}

extension ReceiverProfile {
  /// The chip a recording most likely came from: what the recording says about itself (a
  /// u-blox `$GPTXT` banner or UBX frames, `$PMTK` messages, SiRF binary), else its
  /// `# Chipset:` header (`u-blox M8`, `ZED-F9P`, `MediaTek`, `SiRF`), else
  /// ``generic``. A replay that imitates this chip answers the commands the driver will send
  /// after identifying it from the same bytes.
  public static func inferred(from recording: Recording) -> ReceiverProfile {
    var identifier = ChipsetIdentifier()
    var framer = NMEAFramer()
    var offset = 0
    let body = recording.body
    // Banners and binary frames come early; a few seconds of a stream are plenty.
    let end = min(body.count, 1 << 16)
    while offset < end, identifier.identification.confidence < .high {
      let chunkEnd = min(end, offset + 4096)
      framer.feed(body[offset..<chunkEnd]) { identifier.observe($0) }
      offset = chunkEnd
    }
    let identification = identifier.identification
    let family = identification.familyForCommands()
    if family.hasCommands {
      return ReceiverProfile(
        family: family, ublox: identification.ubloxGeneration == .m9AndLater ? .m9 : .m8)
    }
    let header = (recording.headerValue("Chipset") ?? "").lowercased()
    if header.contains(substring: "u-blox") || header.contains(substring: "ublox") {
      let later = ["f9", "m9", "m10", "x20"].contains { header.contains(substring: $0) }
      return .ublox(later ? .m9 : .m8)
    }
    if header.contains(substring: "mediatek") || header.contains(substring: "mtk")
      || header.contains(substring: "quectel")
    {
      return .mediatek
    }
    if header.contains(substring: "sirf") { return .sirf }
    if header.contains(substring: "casic") { return .casic }
    if header.contains(substring: "airoha") { return .airoha }
    return .generic
  }
}

/// A pin of the receiver that the host can drive (docs/simulator.md, "Pins").
public enum ReceiverPin: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
  /// The wake line: MediaTek FORCE_ON and the Airoha wake pin, driven high, wake the chip
  /// from backup (`$PMTK225,4`, `$PAIR650`); the L76K's standby input is held low for
  /// standby and driven high to leave it.
  case forceOn = "force-on"
  /// u-blox EXTINT0/1: an edge wakes the chip from backup when the wake-up sources of its
  /// `UBX-RXM-PMREQ` include it.
  case extint

  public var description: String { rawValue }
}

extension ReceiverProfile {
  /// The profile for a family the user named (`nil`: the chip the recording came from,
  /// ``inferred(from:)``). A u-blox profile keeps the recording's generation when it is a
  /// u-blox recording.
  public static func chosen(_ family: ChipsetFamily?, for recording: Recording) -> ReceiverProfile {
    let inferred = ReceiverProfile.inferred(from: recording)
    guard let family else { return inferred }
    if inferred.family == family { return inferred }
    return ReceiverProfile(family: family)
  }
}

extension ReceiverModel {
  /// What the chip does with `command`: its profile's command handling (u-blox, MediaTek and
  /// SiRF in ReceiverModelCommands.swift, ``CASICModel``, ``AirohaModel``).
  mutating func handle(_ command: ReceiverCommand, at now: Duration) -> InputOutcome {
    switch profile {
    case .ublox(let model): return handleUblox(command, model: model, at: now)
    case .mediatek: return handleMediaTek(command, at: now)
    case .sirf: return handleSiRF(command, at: now)
    case .casic: return apply(casic.handle(command, responses: responses), at: now)
    case .airoha:
      return apply(airoha.handle(command, power: power, responses: responses), at: now)
    case .generic: return .ignored
    }
  }
}
