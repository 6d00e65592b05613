import NMEA

/// A position delivered to a subscriber.
///
/// A kept update ages: ``age`` is how old the fix was when it was delivered, ``arrival`` when
/// it arrived, so ``age(at:)`` tells how old it is now.
///
/// ```swift
/// let clock = SystemClock()                // the receiver's clock (the default)
/// if last.age(at: clock.now) > .seconds(30) { … }   // too old to show as current
/// ```
public struct FixUpdate: Sendable, Hashable {
  /// The fix as the receiver reported it.
  public var fix: Fix
  /// How long ago the fix arrived from the receiver when it was delivered: about zero for a
  /// live fix, the fix's age for one replayed to a newcomer. It does not change as the update
  /// is kept; ``age(at:)`` does.
  public var age: Duration
  /// True when the fix is the latest one replayed to a new subscriber, not a new one.
  public var isReplay: Bool
  /// True when the fix was read late: the reader had fallen behind and found it queued behind
  /// a newer one, so it is older than the receiver's period (``age`` is at least the
  /// receiver's time between the two). Only subscriptions that ask for late fixes get these
  /// (``GPSReceiver/subscribe(bufferSize:includingLateFixes:)``); the newest goes to everyone
  /// as live (docs/receiver.md, "Late fixes").
  public var isLate: Bool
  /// When the fix arrived from the receiver, on the clock of the receiver that delivered it
  /// (the `clock:` it was made with, ``SystemClock`` by default; all of a process's
  /// `SystemClock`s read the same time). For a report relayed from elsewhere, its arrival
  /// there as far as known (`age` before it was published here).
  public var arrival: DriverInstant

  /// An update of `fix` that arrived at `arrival` and was `age` old when delivered.
  public init(
    fix: Fix, age: Duration, isReplay: Bool, arrival: DriverInstant, isLate: Bool = false
  ) {
    self.fix = fix
    self.age = age
    self.isReplay = isReplay
    self.arrival = arrival
    self.isLate = isLate
  }

  /// How old the fix is at `now`, an instant of the clock of the receiver that delivered it:
  /// a kept update's age, where ``age`` stays what it was at delivery.
  public func age(at now: DriverInstant) -> Duration { now - arrival }
}

/// Where the receiver is in its life, as subscribers are told.
public enum ReceiverStatus: Sendable, Hashable, CustomStringConvertible {
  /// The first subscriber arrived: the port is being opened and the receiver woken.
  case poweringOn
  /// Valid data is arriving from the receiver.
  case streaming
  /// Data arrives but the receiver has no position fix (yet).
  case noFix
  /// The receiver went away (unplugged, read error) or could not be opened; the reason says
  /// which (``FailureReason/kind``) and what to do. While subscribers remain the driver
  /// retries with backoff.
  case disconnected(reason: FailureReason)
  /// The receiver is back after a disconnection and has been powered on again.
  case reconnected
  /// A command was not acknowledged (NAK or timeout) after its retries; data may still flow.
  /// Unanswered while the receiver kept talking, the kind is
  /// ``FailureReason/Kind/wrongChipset``.
  case commandFailed(reason: FailureReason)
  /// The driver sends this receiver no power commands, because nothing names its chipset:
  /// at power-on (a receiver in standby is not woken) and again at power-off (it is left
  /// running). Says what to set so that it does.
  case commandsWithheld(CommandsWithheld)
  /// The last subscription ended (and the linger passed): the receiver has been sent its
  /// standby commands and the port closed.
  case poweredOff

  public var description: String { description(in: .swiftAPI) }

  /// The status for people, in the words of whoever reads it where it says what to set.
  public func description(in vocabulary: MessageVocabulary) -> String {
    switch self {
    case .poweringOn: return "powering on"
    case .streaming: return "streaming"
    case .noFix: return "no fix"
    case .disconnected(let reason): return "disconnected: \(reason.message(in: vocabulary))"
    case .reconnected: return "reconnected"
    case .commandFailed(let reason): return "command failed: \(reason.message(in: vocabulary))"
    case .commandsWithheld(let withheld): return withheld.description(in: vocabulary)
    case .poweredOff: return "powered off"
    }
  }
}

/// What a subscription delivers.
public enum ReceiverEvent: Sendable, Hashable {
  case fix(FixUpdate)
  case satellites(SatelliteView)
  case status(ReceiverStatus)
}

/// What a subscription made with ``GPSReceiver/subscribeWithRawData(bufferSize:)``
/// delivers: the usual events, and the bytes read from the device. A type of its own, so that
/// code handling ``ReceiverEvent`` never has to handle bytes it did not ask for.
public enum ReceiverEventOrRawData: Sendable, Hashable {
  case event(ReceiverEvent)
  /// Bytes exactly as read from the device (sentences, binary frames, noise). Each chunk
  /// arrives before the fixes decoded from it. Like positions, chunks are dropped when the
  /// subscriber falls behind, so a consumer that frames them must expect gaps.
  case rawData([UInt8])
  /// Complete NMEA sentences as the reader framed them (checksum checked), each exactly as it
  /// arrived with `*hh` and CR LF, in the order read; the sentences that complete an epoch
  /// arrive before its fix. Only for a subscription that asked for them
  /// (``GPSReceiver/subscribeOnReaderThread(rawData:sentences:_:)``). Binary frames and noise
  /// are left out. Like positions, they are dropped when the subscriber falls behind.
  case sentences([UInt8])
}
