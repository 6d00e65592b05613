import Chipsets
import NMEA
import POSIX
import TimeService

/// One connection's reading loop: bytes → decoder → hub, with the acknowledgements to the
/// controller's command loop, what the receiver says about itself to ``ReceiverKnowledge``,
/// and read times to the time service when the receiver has one.
///
/// Threading: ``run()`` is the body of the connection's own thread (`serialgps-read`), started
/// by the controller at power-on and joined at power-off, after it has set `stop` and
/// interrupted the connection's read; all stored state but `stop` belongs to that thread. What
/// it hands on goes through types safe from any thread (the hub, the mailbox, the locked
/// counters and knowledge); a read error reaches the controller as an event in its inbox.
///
/// **Late epochs.** A reader that fell behind (a stopped process, a loaded board) finds the
/// receiver's epochs queued in the kernel, and would hand out seconds-old fixes as live ones
/// in a burst. So on a connection whose bytes queue behind the reader
/// (``ReceiverConnection/queuesBehindReader``), an epoch is held until the reader has looked at
/// what was already waiting behind it: a read that returns at once (after a large read, one
/// that waits up to ``catchUpGrace``, since the kernel refills the tty's buffer from its own
/// queue a moment later). If that completes a newer epoch, or a newer one came in the same
/// read, the held one was queued behind a newer epoch, so older than the receiver's period:
/// it goes out as late (to the subscriptions that asked, ``SubscriptionHub/publish(lateFix:age:)``)
/// and is counted; the newest goes out live once nothing newer waits. A reader that keeps up
/// pays one read that returns at once per epoch.
///
/// `@unchecked Sendable`: its state belongs to its reader thread (see above), started and joined by
/// the controller; the compiler cannot know that.
final class ConnectionReader: @unchecked Sendable {
  let connection: any ReceiverConnection
  let generation: Int
  let stop: Locked<Bool>
  /// Lives as long as the controller, which joins this thread before it stops.
  unowned let core: ReceiverCore
  var decoder: NMEADecoder
  var status: ReceiverStatus?
  var identifier = ChipsetIdentifier()
  /// Identification stops after this many sentences and frames, or a little after it is sure
  /// (``detailsBudget``, for the rest of a banner): banners come early.
  var identificationBudget = 2000
  /// What is left of the budget once the family is sure: the model and firmware lines of a
  /// banner follow the line that names the maker.
  static let detailsBudget = 64
  /// The family the identification names with confidence enough for commands, handed to a
  /// probe waiting for it (``AcknowledgementMailbox``) after each read.
  var identified: ChipsetFamily?
  /// Read times and epochs for the time service, when the receiver has one.
  var timekeeping: ReaderTimekeeping?
  /// The framed sentences for subscribers that asked for them.
  var passThrough = SentencePassThrough()
  /// Whether epochs are held until what waits behind them is known (the connection queues).
  let judgesLateness: Bool
  /// The newest epoch read, held until the reader knows whether a newer one waits behind it.
  var held: Epoch?
  /// Whether a newer epoch in the read that completed `held` shows it queued. Not when the
  /// decoder, not knowing the cycle's last sentence yet, completed it at the next epoch's first
  /// sentence, at the start of the read: its own bytes came in earlier reads.
  var heldQueuedWithRead = true
  /// Epochs completed in the current read so far.
  var epochsThisRead = 0

  /// A read of at least this many bytes came from a queue (the tty's is 4 KiB): the reader is
  /// behind, and what follows is looked for a little longer.
  static let largeRead = 2048
  /// How long the look behind a large read waits for the kernel to hand over more of its queue.
  static let catchUpGrace = Duration.milliseconds(20)

  init(
    connection: any ReceiverConnection, generation: Int, stop: Locked<Bool>, core: ReceiverCore,
    maximumSentenceLength: Int
  ) {
    self.connection = connection
    self.generation = generation
    self.stop = stop
    self.core = core
    decoder = NMEADecoder(
      configuration: FramerConfiguration(maximumSentenceLength: maximumSentenceLength))
    // What an earlier connection learned of the cycle: the first epoch is out at once.
    decoder.cycleKnowledge = core.knowledge.cycle.withLock { $0 }
    knownCycle = decoder.cycleKnowledge
    timekeeping = core.timeService.withLock { $0 }.map {
      ReaderTimekeeping(service: $0, connection: connection)
    }
    judgesLateness = connection.queuesBehindReader
  }

  /// The cycle knowledge last shared with the core.
  var knownCycle: CycleKnowledge?

  func run() {
    let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 4096, alignment: 1)
    defer { buffer.deallocate() }
    var fixes = 0
    var lastReadWasLarge = false
    while !stop.withLock({ $0 }) {
      let count: Int
      do {
        if held != nil {
          // Looks behind the held epoch: only what is waiting already (or, behind a large
          // read, comes within the grace).
          count = try connection.read(
            into: buffer, waitingAtMost: lastReadWasLarge ? Self.catchUpGrace : .zero)
        } else {
          count = try connection.read(into: buffer)
        }
        // The system time first, before anything else is done with the bytes (docs/time.md);
        // bytes heard during the baud search keep the time of the search's read.
        if count > 0, timekeeping != nil {
          let now = PosixTime.now()
          timekeeping?.readReturned(count: count, at: connection.timeOfBytesLastRead() ?? now)
        }
      } catch {
        releaseHeld()
        if !stop.withLock({ $0 }) {
          core.inbox.post(
            .readerFailed(generation: generation, reason: FailureReason(error)))
        }
        break
      }
      if count == 0 {
        // Nothing newer waited behind the held epoch: it is live. Or interrupted: check
        // whether to stop.
        releaseHeld()
        continue
      }
      lastReadWasLarge = count >= Self.largeRead
      epochsThisRead = 0
      core.acknowledgements.heard()
      let wants = core.hub.wants
      // Before decoding, so that a chunk reaches subscribers ahead of the fixes it completes.
      if wants.rawData {
        core.hub.publish(rawData: Array(UnsafeRawBufferPointer(rebasing: buffer[0..<count])))
      }
      fixes = 0
      let chunk = UnsafeRawBufferPointer(rebasing: buffer[0..<count])
      if wants.sentences || identificationBudget > 0 {
        // What the receiver says about itself is read from the frames as they arrived.
        decoder.decode(
          chunk,
          observingFrames: { frame in
            if wants.sentences { passThrough.observe(frame) }
            if identificationBudget > 0 { observe { $0.observe(frame) } }
          }
        ) { event in
          handle(event, fixes: &fixes)
        }
        if wants.sentences { passThrough.flush(to: core.hub) }
      } else {
        decoder.decode(chunk) { event in handle(event, fixes: &fixes) }
      }
      let statistics = decoder.statistics
      core.counters.withLock {
        $0.decoder = statistics
        $0.fixes += fixes
      }
      if let identified { core.acknowledgements.deliver(.identified(identified)) }
      if decoder.cycleKnowledge != knownCycle {
        knownCycle = decoder.cycleKnowledge
        core.knowledge.cycle.withLock { $0 = knownCycle }
      }
    }
    releaseHeld()
    timekeeping?.connectionClosed()
  }

  /// Publishes an epoch as the live one: its status, its fix (after its sentences) and its
  /// satellites.
  private func publishLive(_ epoch: Epoch) {
    publish(epoch.fix.mode == .noFix ? .noFix : .streaming)
    passThrough.flush(to: core.hub)  // the epoch's sentences ahead of its fix
    let update = core.hub.publish(fix: epoch.fix)
    core.inbox.post(.requests(.fix(update)))
    if let satellites = epoch.satellites { core.hub.publish(satellites: satellites) }
  }

  /// The held epoch, if any, goes out live: nothing newer waited behind it.
  private func releaseHeld() {
    guard let epoch = held else { return }
    held = nil
    publishLive(epoch)
  }

  /// The held epoch has a newer one behind it, `newer`: it goes out late, at least as old as
  /// the receiver's time between the two. One the decoder completed late itself, at the start
  /// of this read, goes out live.
  private func supersedeHeld(by newer: Epoch) {
    guard let epoch = held else { return }
    guard heldQueuedWithRead || epochsThisRead == 0 else { return releaseHeld() }
    held = nil
    core.counters.withLock { $0.lateFixes += 1 }
    core.hub.publish(
      lateFix: epoch.fix, age: Self.receiverTime(from: epoch.fix, to: newer.fix) ?? .zero)
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

  private func handle(_ event: DecoderEvent, fixes: inout Int) {
    timekeeping?.observe(event)
    switch event {
    case .sentence(let sentence):
      if status == nil { publish(.streaming) }
      if let acknowledgement = ReceiverAcknowledgement(sentence) {
        core.acknowledgements.deliver(acknowledgement)
      }
    case .epoch(let epoch):
      fixes += 1
      guard judgesLateness else {
        publishLive(epoch)
        return
      }
      supersedeHeld(by: epoch)
      held = epoch
      heldQueuedWithRead = epochsThisRead > 0 || knownCycle?.isLearned == true
      epochsThisRead += 1
    case .ubx(let frame):
      if let acknowledgement = ReceiverAcknowledgement(frame) {
        core.acknowledgements.deliver(acknowledgement)
      }
    case .sirf, .parseError, .ubxMessage, .ubxRejected, .casic:
      break
    }
  }

  /// Feeds the chipset identifier until its budget is spent, and shares what it learns.
  private func observe(_ body: (inout ChipsetIdentifier) -> Void) {
    identificationBudget -= 1
    let before = identifier.revision
    body(&identifier)
    guard identifier.revision != before else { return }
    let after = identifier.identification
    // Weak hints too: the app may read them, and a withheld command names them; only a sure
    // identification chooses commands (``ReceiverKnowledge/commandSet()``). What an earlier
    // connection to this receiver learned stands until this one knows as much.
    if after.confidence > .none || after.vendor != nil {
      core.knowledge.identification.withLock { known in
        if after.confidence >= known?.confidence ?? .none { known = after }
      }
    }
    let family = after.familyForCommands()
    if family.hasCommands, identified == nil {
      identified = family
      identificationBudget = min(identificationBudget, Self.detailsBudget)
    }
  }

  private func publish(_ newStatus: ReceiverStatus) {
    guard newStatus != status else { return }
    status = newStatus
    core.hub.publish(status: newStatus)
  }
}
