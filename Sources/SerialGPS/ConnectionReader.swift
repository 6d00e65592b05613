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
/// Late epochs are held and judged by ``LateEpochGate``; how long the identifier is fed, by
/// ``IdentificationBudget``.
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
  var identification = IdentificationBudget()
  /// The family the identification names with confidence enough for commands, handed to a
  /// probe waiting for it (``AcknowledgementMailbox``) after each read.
  var identified: ChipsetFamily?
  /// Read times and epochs for the time service, when the receiver has one.
  var timekeeping: ReaderTimekeeping?
  /// The framed sentences for subscribers that asked for them.
  var passThrough = SentencePassThrough()
  /// Whether an epoch goes out live or late.
  var gate: LateEpochGate

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
    gate = LateEpochGate(judgesLateness: connection.queuesBehindReader)
  }

  /// The cycle knowledge last shared with the core.
  var knownCycle: CycleKnowledge?

  func run() {
    let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 4096, alignment: 1)
    defer { buffer.deallocate() }
    var fixes = 0
    while !stop.withLock({ $0 }) {
      let count: Int
      do {
        if let wait = gate.nextReadWait {
          // Looks behind the held epoch.
          count = try connection.read(into: buffer, waitingAtMost: wait)
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
            .machine(.portLost(generation: generation, reason: FailureReason(error))))
        }
        break
      }
      // Nothing newer waited behind the held epoch: it is live.
      release(gate.read(count: count))
      // Or interrupted: check whether to stop.
      if count == 0 { continue }
      core.acknowledgements.heard()
      let wants = core.hub.wants
      // Before decoding, so that a chunk reaches subscribers ahead of the fixes it completes.
      if wants.rawData {
        core.hub.publish(rawData: Array(UnsafeRawBufferPointer(rebasing: buffer[0..<count])))
      }
      fixes = 0
      let chunk = UnsafeRawBufferPointer(rebasing: buffer[0..<count])
      if wants.sentences || identification.isOpen {
        // What the receiver says about itself is read from the frames as they arrived.
        decoder.decode(
          chunk,
          observingFrames: { frame in
            if wants.sentences { passThrough.observe(frame) }
            if identification.isOpen { observe { $0.observe(frame) } }
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
    core.inbox.post(.machine(.fix(update)))
    if let satellites = epoch.satellites { core.hub.publish(satellites: satellites) }
  }

  /// The held epoch, if any, goes out live: nothing newer waited behind it.
  private func releaseHeld() {
    release(gate.nothingBehind())
  }

  /// Publishes what the gate lets out: live, or late (to the subscriptions that asked,
  /// ``SubscriptionHub/publish(lateFix:age:)``) and counted.
  private func release(_ released: LateEpochGate.Release?) {
    switch released {
    case .live(let epoch): publishLive(epoch)
    case .late(let epoch, let age):
      core.counters.withLock { $0.lateFixes += 1 }
      core.hub.publish(lateFix: epoch.fix, age: age)
    case nil: break
    }
  }

  private func handle(_ event: DecoderEvent, fixes: inout Int) {
    timekeeping?.observe(event)
    if let acknowledgement = ReceiverAcknowledgement(event) {
      core.acknowledgements.deliver(acknowledgement)
    }
    switch event {
    case .sentence:
      if status == nil { publish(.streaming) }
    case .epoch(let epoch):
      fixes += 1
      release(gate.completed(epoch, cycleLearned: knownCycle?.isLearned == true))
    case .ubx, .casic, .sirf, .parseError, .ubxMessage, .ubxRejected:
      break
    }
  }

  /// Feeds the chipset identifier until its budget is spent, and shares what it learns.
  private func observe(_ body: (inout ChipsetIdentifier) -> Void) {
    identification.spend()
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
      identification.familyKnown()
    }
  }

  private func publish(_ newStatus: ReceiverStatus) {
    guard newStatus != status else { return }
    status = newStatus
    core.hub.publish(status: newStatus)
  }
}
