import Chipsets
import POSIX

/// What the driver has to say whether or not anyone subscribes: the receiver's standby and
/// its position memory are handled when the last subscription has ended, where a
/// ``ReceiverStatus`` reaches nobody. Given to ``GPSReceiver/Options/notices`` as it happens
/// (`serialgps serve` logs each, `watch` prints each to stderr), and the last one kept in
/// ``GPSReceiver/lastNotice``. Each is said once per occurrence, never every fix.
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
  /// The receiver was let go (the last subscription ended, or a shutdown) and keeps running,
  /// drawing its full current, with only its port closed: `family` has no sleep the driver
  /// can reach as the receiver is connected, for `cause`. Said at the first such power-off,
  /// and again only when the family or the cause changes.
  case keepsRunning(family: ChipsetFamily, cause: KeepsRunningCause)

  /// Why a receiver let go keeps running.
  public enum KeepsRunningCause: Sendable, Hashable {
    /// The chipset is not known, so nothing is written to it (no sleep command either).
    case chipsetUnknown
    /// The family's only sleep is one its wake line ends (a CASIC L76K's standby input), and
    /// no wake line is declared.
    case noWakeLine
    /// A wake line is declared but the quick-wake depth was asked for (`--sleep standby`),
    /// and the family's only sleep is the line's.
    case quickWakeChosen
    /// The family has no sleep the driver enters, with or without a wake line.
    case noSleep
  }

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
    case .keepsRunning(let family, let cause):
      let lead = "the receiver keeps running (full current) with its port closed: "
      switch cause {
      case .chipsetUnknown:
        return lead
          + "its chipset is not known, so no sleep command is sent; name it (--chipset, "
          + "GPSReceiver.Options.chipset) if serialgps drives its family"
      case .noWakeLine:
        return lead + "\(family.displayName) has no sleep the serial line alone can end; wire "
          + "its standby (wake) input to a GPIO line and pass it (--wake-pin CHIP:LINE, "
          + "GPSReceiver.Options.wakePin)"
      case .quickWakeChosen:
        return lead + "\(family.displayName) sleeps only on its wake line, which the quick-wake "
          + "depth rules out; drop --sleep standby (GPSReceiver.Options.sleepDepth) to use it"
      case .noSleep:
        return lead + "\(family.displayName) has no sleep the driver can enter; switch its "
          + "power if it must not run"
      }
    }
  }
}
