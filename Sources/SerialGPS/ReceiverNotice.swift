import POSIX

/// What the driver has to say whether or not anyone subscribes: the receiver's standby and
/// its position memory are handled when the last subscription has ended, where a
/// ``ReceiverStatus`` reaches nobody. Given to ``GPSReceiver/Options/notices`` as it happens
/// (`serialgps serve` logs each), and the last one kept in ``GPSReceiver/lastNotice``. Each is
/// said once per occurrence, never every fix.
public enum ReceiverNotice: Sendable, Hashable, CustomStringConvertible {
  /// A power-off did not put the receiver to sleep for certain, for `reason`: its standby was
  /// refused or ignored while it kept talking, or it ignored the sleep asked for and the
  /// standby that followed has no answer to confirm it (a u-blox GNSS stop). It may stay
  /// powered, drawing its full current, until the next wake puts it to standby again or it
  /// is unplugged (counted in ``ReceiverStatistics/standbysFailed``); a wrongly named chipset
  /// is the usual cause.
  case standbyFailed(reason: FailureReason)
  /// The position file at `path` (``PositionMemory``) was not used for aiding, for `reason`;
  /// said once per reason.
  case keptPositionIgnored(path: String, reason: String)
  /// The position could not be written to `path`; said once until a save succeeds again
  /// (or fails for another reason).
  case positionNotKept(path: String, error: Errno)

  public var description: String {
    switch self {
    case .standbyFailed(let reason):
      return "the receiver was not put to sleep and may stay powered: \(reason)"
    case .keptPositionIgnored(let path, let reason):
      return "ignoring the kept position \(path): \(reason); delete it if it stays"
    case .positionNotKept(let path, let error):
      return
        "cannot keep the receiver's position in \(path) (\(error)): the next start after a "
        + "restart is not aided with it; check --state-dir's file system and permissions"
    }
  }
}
