import NMEA

/// Whether an epoch read goes out live or late, as a pure machine the reader
/// (``ConnectionReader``) feeds with what it read.
///
/// A reader that fell behind (a stopped process, a loaded board) finds the receiver's epochs
/// queued in the kernel, and would hand out seconds-old fixes as live ones in a burst. So on a
/// connection whose bytes queue behind the reader (``ReceiverConnection/queuesBehindReader``),
/// an epoch is held until the reader has looked at what was already waiting behind it: a read
/// that returns at once (after a large read, one that waits up to ``catchUpGrace``, since the
/// kernel refills the tty's buffer from its own queue a moment later). If that completes a
/// newer epoch, or a newer one came in the same read, the held one was queued behind a newer
/// epoch, so older than the receiver's period: it goes out as late and is counted; the newest
/// goes out live once nothing newer waits. A reader that keeps up pays one read that returns
/// at once per epoch.
struct LateEpochGate {
  /// What to do with an epoch.
  enum Release: Equatable {
    case live(Epoch)
    /// At least `age` old: the receiver's time between it and the newer one behind it.
    case late(Epoch, age: Duration)
  }

  /// A read of at least this many bytes came from a queue (the tty's is 4 KiB): the reader is
  /// behind, and what follows is looked for a little longer.
  static let largeRead = 2048
  /// How long the look behind a large read waits for the kernel to hand over more of its queue.
  static let catchUpGrace = Duration.milliseconds(20)

  /// Whether epochs are held until what waits behind them is known (the connection queues).
  let judgesLateness: Bool
  /// The newest epoch read, held until the reader knows whether a newer one waits behind it.
  private var held: Epoch?
  /// Whether a newer epoch in the read that completed `held` shows it queued. Not when the
  /// decoder, not knowing the cycle's last sentence yet, completed it at the next epoch's first
  /// sentence, at the start of the read: its own bytes came in earlier reads.
  private var heldQueuedWithRead = true
  /// Epochs completed in the current read so far.
  private var epochsThisRead = 0
  private var lastReadWasLarge = false

  init(judgesLateness: Bool) {
    self.judgesLateness = judgesLateness
  }

  /// How long the next read may wait: `nil` for as long as it takes; else only for what is
  /// waiting already (or, behind a large read, what comes within the grace).
  var nextReadWait: Duration? {
    guard held != nil else { return nil }
    return lastReadWasLarge ? Self.catchUpGrace : .zero
  }

  /// A read returned `count` bytes (`0`: nothing waited, or it was interrupted); returns the
  /// held epoch when nothing newer waited behind it.
  mutating func read(count: Int) -> Release? {
    if count == 0 { return nothingBehind() }
    lastReadWasLarge = count >= Self.largeRead
    epochsThisRead = 0
    return nil
  }

  /// The reading ends: the held epoch goes out live.
  mutating func nothingBehind() -> Release? {
    guard let epoch = held else { return nil }
    held = nil
    return .live(epoch)
  }

  /// The decoder completed `epoch`; `cycleLearned`: the receiver's cycle is known, so the
  /// decoder completes an epoch at its last sentence. Returns what goes out now.
  mutating func completed(_ epoch: Epoch, cycleLearned: Bool) -> Release? {
    guard judgesLateness else { return .live(epoch) }
    let released = supersedeHeld(by: epoch)
    held = epoch
    heldQueuedWithRead = epochsThisRead > 0 || cycleLearned
    epochsThisRead += 1
    return released
  }

  /// The held epoch has a newer one behind it: it goes out late, at least as old as the
  /// receiver's time between the two. One the decoder completed late itself, at the start of
  /// this read, goes out live.
  private mutating func supersedeHeld(by newer: Epoch) -> Release? {
    guard let epoch = held else { return nil }
    held = nil
    guard heldQueuedWithRead || epochsThisRead == 0 else { return .live(epoch) }
    return .late(epoch, age: Self.receiverTime(from: epoch.fix, to: newer.fix) ?? .zero)
  }

  /// How much later `later` was taken than `earlier`, by the receiver's own clock: the date
  /// and time when both have them, else the time of day (across midnight too); `nil` without
  /// times, or when the times go backwards.
  static func receiverTime(from earlier: Fix, to later: Fix) -> Duration? {
    guard let start = earlier.time, let end = later.time else { return nil }
    func nanoseconds(_ time: UTCTime) -> Int64 {
      (Int64(time.hour) * 3600 + Int64(time.minute) * 60 + Int64(time.second)) * 1_000_000_000
        + Int64(time.nanoseconds)
    }
    var span = nanoseconds(end) - nanoseconds(start)
    if let from = earlier.date, let to = later.date {
      span += Int64(to.daysSinceUnixEpoch - from.daysSinceUnixEpoch) * 86_400 * 1_000_000_000
    } else if span < 0 {
      span += 86_400 * 1_000_000_000
    }
    return span >= 0 ? .nanoseconds(span) : nil
  }
}

/// How long the reader feeds the chipset identifier: it stops after ``initial`` sentences and
/// frames, or ``details`` more once the family is sure (for the rest of a banner): banners
/// come early.
struct IdentificationBudget {
  static let initial = 2000
  /// What is left of the budget once the family is sure: the model and firmware lines of a
  /// banner follow the line that names the maker.
  static let details = 64

  private(set) var remaining = Self.initial

  /// Whether identification still reads frames.
  var isOpen: Bool { remaining > 0 }

  /// One frame read for identification.
  mutating func spend() { remaining -= 1 }

  /// The family is sure: only the details are left to read.
  mutating func familyKnown() { remaining = min(remaining, Self.details) }
}
