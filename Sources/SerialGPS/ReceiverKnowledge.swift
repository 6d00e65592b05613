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
  /// What the receiver has said about itself.
  let identification = Locked<ChipsetIdentification?>(nil)
  /// Which sentence ends the receiver's cycle.
  let cycle = Locked<CycleKnowledge?>(nil)
  /// The receiver that ``identification`` and ``cycle`` describe. Controller task only.
  private var receiverIdentity: String?

  init(connector: any ReceiverConnector, chipset: ChipsetChoice) {
    self.connector = connector
    self.chipset = chipset
  }

  /// A connector that follows "the first receiver found" may reach another receiver now: what
  /// the last one said about itself must not choose this one's commands. Controller task only.
  func forgetReceiverIfChanged() {
    // No receiver attached (an open that will fail) changes nothing.
    guard let identity = connector.receiverIdentity, identity != receiverIdentity else { return }
    receiverIdentity = identity
    identification.withLock { $0 = nil }
    cycle.withLock { $0 = nil }
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
      return family.commandSet(interface: interface, identification: identified)
    case .automatic:
      if let family = hint?.family {
        return family.commandSet(interface: interface, identification: identified)
      }
      let family = identified?.familyForCommands() ?? .nmea
      return family.commandSet(interface: interface, identification: identified)
    }
  }
}
