import Chipsets
import NMEA
import POSIX

/// What the driver has learnt about the receiver behind a connector, kept across connections:
/// its chipset (from what it said about itself) and which sentence ends its cycle; and the
/// commands that follow from it.
///
/// Threading: the reader thread (``ConnectionReader``) stores what it learns, the controller
/// task reads it to choose commands and forgets it when the connector reaches another
/// receiver; each value sits behind its own lock, and no lock is held while calling out.
///
/// `@unchecked Sendable`: the one mutable property is written and read on the controller's task
/// only; each other value is behind its own lock.
final class ReceiverKnowledge: @unchecked Sendable {
  private let connector: any ReceiverConnector
  private let chipset: ChipsetChoice
  /// The UBX messages switched on for a u-blox receiver (``GPSReceiver/Options/ubxMessages``).
  private let ubxMessages: UBXMessageSelection
  /// What the receiver has said about itself, however sure (a weak hint names a family
  /// without being enough to write to it: ``ChipsetIdentification/familyForCommands(minimum:)``).
  let identification = Locked<ChipsetIdentification?>(nil)
  /// The receiver was asked (``ChipsetChoice/probe``) and answered neither poll: it is not
  /// asked again until the connector reaches another receiver.
  private let probeUnanswered = Locked(false)
  /// Which sentence ends the receiver's cycle.
  let cycle = Locked<CycleKnowledge?>(nil)
  /// The receiver that ``identification`` and ``cycle`` describe. Controller task only.
  private var receiverIdentity: String?

  init(
    connector: any ReceiverConnector, chipset: ChipsetChoice,
    ubxMessages: UBXMessageSelection = .none
  ) {
    self.connector = connector
    self.chipset = chipset
    self.ubxMessages = ubxMessages
  }

  /// A connector that follows "the first receiver found" may reach another receiver now: what
  /// the last one said about itself must not choose this one's commands. Controller task only.
  func forgetReceiverIfChanged() {
    // No receiver attached (an open that will fail) changes nothing.
    guard let identity = connector.receiverIdentity, identity != receiverIdentity else { return }
    receiverIdentity = identity
    identification.withLock { $0 = nil }
    cycle.withLock { $0 = nil }
    probeUnanswered.withLock { $0 = false }
  }

  /// Whether to ask the receiver what it is before waking it: the user chose
  /// ``ChipsetChoice/probe`` and nothing else names its chipset yet. Controller task only.
  var shouldProbe: Bool {
    guard case .probe = chipset, !probeUnanswered.withLock({ $0 }),
      connector.chipsetHint?.family == nil
    else {
      return false
    }
    return !commandSet().family.hasCommands
  }

  /// The probe went unanswered (no identification came of it). Controller task only.
  func noteProbeUnanswered() {
    let unanswered = !commandSet().family.hasCommands
    probeUnanswered.withLock { $0 = unanswered }
  }

  /// Why no power commands go to this receiver at `moment`, when that is for want of knowing
  /// its chipset; `nil` when it has commands, or when the user chose to send none
  /// (``ChipsetChoice/family(_:)`` with ``ChipsetFamily/nmea``, a command set of their own).
  func withheld(_ moment: CommandsWithheld.Moment) -> CommandsWithheld? {
    var choices: [ChipsetFamily] = []
    switch chipset {
    case .family, .custom: return nil
    case .automatic, .probe: break
    case .oneOf(_, let families): choices = families
    }
    guard !commandSet().family.hasCommands else { return nil }
    return CommandsWithheld(
      moment: moment, identification: identification.withLock { $0 },
      probed: probeUnanswered.withLock { $0 }, choices: choices)
  }

  /// The commands for this receiver: the user's choice, else what the connector knows, else
  /// what the receiver said about itself. With none of these, no commands: a port not known to
  /// hold a GPS receiver is never written to.
  func commandSet() -> any ReceiverCommandSet {
    let hint = connector.chipsetHint
    let interface = hint?.interface ?? .uart
    let identified = identification.withLock { $0 }
    switch chipset {
    case .custom(let set):
      return set
    case .family(let family):
      return family.commandSet(
        interface: interface, identification: identified, binaryMessages: ubxMessages)
    case .automatic, .probe:
      if let family = hint?.family {
        return family.commandSet(
          interface: interface, identification: identified, binaryMessages: ubxMessages)
      }
      let family = identified?.familyForCommands() ?? .nmea
      return family.commandSet(
        interface: interface, identification: identified, binaryMessages: ubxMessages)
    case .oneOf(_, let families):
      // Only a family the user's maker builds on, named by the connector or by what the
      // receiver said; anything else (nothing yet, another maker's chip) gets no commands.
      let named = [hint?.family, identified?.familyForCommands()].compactMap { $0 }
      let family = named.first { families.contains($0) } ?? .nmea
      return family.commandSet(
        interface: interface, identification: identified, binaryMessages: ubxMessages)
    }
  }
}
