import Chipsets

/// The controller's use of the position memory (``GPSReceiver/Options/positionMemory``):
/// what a wake is aided with, and the last fix kept when the receiver sleeps.
///
/// Owned by the controller's task (``ReceiverController``), so it needs no lock.
final class PositionKeeper {
  /// Lives as long as the controller that owns this.
  private unowned let core: ReceiverCore
  /// The position last kept, so that an unchanged one is not written again.
  private var saved: KnownPosition?
  /// What was last said of the position memory (a file ignored, a save failed), so that it
  /// is said once, not at every wake or power-off.
  private var noticeGiven: ReceiverNotice?

  init(core: ReceiverCore) {
    self.core = core
  }

  /// What the receiver is told of where it was: the last fix heard, else the position kept
  /// across restarts, else the app's ``GPSReceiver/Options/initialPosition``.
  func lastPosition() -> KnownPosition? {
    if let fix = core.hub.latestFix?.fix, let known = KnownPosition(aidingFrom: fix) {
      return known
    }
    if let memory = core.options.positionMemory, let now = core.options.utcNow() {
      switch memory.read(identity: identity, now: now) {
      case .position(let kept): return kept
      case .none: break
      case .ignored(let reason):
        tellOnce(.keptPositionIgnored(path: memory.path(for: identity), reason: reason))
      }
    }
    return core.options.initialPosition
  }

  /// Keeps the last fix in the position memory, unless it is the one kept already.
  func keep() {
    guard let memory = core.options.positionMemory, let fix = core.hub.latestFix?.fix,
      let position = KnownPosition(aidingFrom: fix), position != saved
    else { return }
    // A state directory that cannot be written costs only the aiding of the next start: said
    // once, with the reason.
    do {
      try memory.save(position, identity: identity)
      saved = position
      if case .positionNotKept = noticeGiven { noticeGiven = nil }
    } catch {
      tellOnce(.positionNotKept(path: memory.path(for: identity), error: error))
    }
  }

  /// The name a kept position goes by: what stays the same for the receiver across replugs
  /// and reboots (``ReceiverConnector/positionIdentity``), else the device (a position
  /// belongs to the machine as much as to its receiver).
  private var identity: String {
    core.connector.positionIdentity ?? core.connector.deviceName
  }

  /// Tells the app `notice` unless it was the last said of the position memory.
  private func tellOnce(_ notice: ReceiverNotice) {
    guard notice != noticeGiven else { return }
    noticeGiven = notice
    core.tell(notice)
  }
}
