import POSIX
import SerialGPS

/// Why no fix can come to a request, told at once from the receiver's statuses as plain
/// `watch` tells them. A request (`locate`, `watch --interval` or `--accuracy`) delivers fixes
/// only; an observer beside it (``GPSReceiver/observe(bufferSize:)``, which powers nothing)
/// reads the statuses: a device that cannot be opened before it ever sent data (missing, a
/// directory, not a serial port, busy), or a receiver not woken because its chipset is not
/// known and that stays silent.
enum NoFixCanCome {
  /// How long a receiver whose power commands were withheld may stay silent before it is
  /// taken for asleep: an awake receiver talks every second.
  static let silence: Duration = .seconds(3)

  /// Reads `events` (an observer's) until a status says no fix can come, and returns why in
  /// the terminal's words; `nil` when the events end first (cancelled, or the receiver shut
  /// down). `status` is told every status change, for a command that prints them.
  static func reason(
    _ events: ReceiverEvents, device: String,
    status: (ReceiverStatus) -> Void = { _ in }
  ) async -> String? {
    let heard = Locked(false)
    var silenceTimer: Task<Void, Never>?
    defer { silenceTimer?.cancel() }
    var withheld: CommandsWithheld?
    for await event in events {
      switch event {
      case .fix:
        heard.withLock { $0 = true }
      case .satellites:
        break
      case .status(let change):
        switch change {
        case .streaming, .noFix, .reconnected:
          heard.withLock { $0 = true }
        case .disconnected(let reason) where !heard.withLock({ $0 }):
          return reason.message(in: .commandLine)
        case .commandsWithheld(let said) where said.moment == .powerOn:
          guard withheld == nil, !heard.withLock({ $0 }) else { break }
          withheld = said
          silenceTimer = DriverExecutor.task {
            try? await SystemClock().sleep(for: silence)
            if !heard.withLock({ $0 }) { events.cancel() }
          }
        default:
          break
        }
        // Not the one that ends it: that is said once, by the caller.
        status(change)
      }
    }
    guard !Task.isCancelled, let withheld, !heard.withLock({ $0 }) else { return nil }
    return "\(device) sent nothing in \(silence.components.seconds) s: it is asleep, and "
      + "nothing is written to wake it while its chipset is not known; "
      + withheld.advice(in: .commandLine)
  }
}
