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
  /// Identification stops once sure, or after this many sentences: banners come early.
  var identificationBudget = 2000
  /// Read times and epochs for the time service, when the receiver has one.
  var timekeeping: ReaderTimekeeping?
  /// The framed sentences for subscribers that asked for them.
  var passThrough = SentencePassThrough()

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
        count = try connection.read(into: buffer)
        // The system time first, before anything else is done with the bytes (docs/time.md);
        // bytes heard during the baud search keep the time of the search's read.
        if count > 0, timekeeping != nil {
          let now = PosixTime.now()
          timekeeping?.readReturned(count: count, at: connection.timeOfBytesLastRead() ?? now)
        }
      } catch {
        if !stop.withLock({ $0 }) {
          core.inbox.post(
            .readerFailed(generation: generation, reason: String(describing: error)))
        }
        break
      }
      if count == 0 { continue }  // interrupted: check whether to stop
      core.acknowledgements.heard()
      let wants = core.hub.wants
      // Before decoding, so that a chunk reaches subscribers ahead of the fixes it completes.
      if wants.rawData {
        core.hub.publish(rawData: Array(UnsafeRawBufferPointer(rebasing: buffer[0..<count])))
      }
      fixes = 0
      let chunk = UnsafeRawBufferPointer(rebasing: buffer[0..<count])
      if wants.sentences {
        decoder.decode(chunk, observingFrames: { passThrough.observe($0) }) { event in
          handle(event, fixes: &fixes)
        }
        passThrough.flush(to: core.hub)
      } else {
        decoder.decode(chunk) { event in handle(event, fixes: &fixes) }
      }
      let statistics = decoder.statistics
      core.counters.withLock {
        $0.decoder = statistics
        $0.fixes += fixes
      }
      if decoder.cycleKnowledge != knownCycle {
        knownCycle = decoder.cycleKnowledge
        core.knowledge.cycle.withLock { $0 = knownCycle }
      }
    }
    timekeeping?.connectionClosed()
  }

  private func handle(_ event: DecoderEvent, fixes: inout Int) {
    timekeeping?.observe(event)
    switch event {
    case .sentence(let sentence):
      if status == nil { publish(.streaming) }
      if let acknowledgement = ReceiverAcknowledgement(sentence) {
        core.acknowledgements.deliver(acknowledgement)
      }
      if identificationBudget > 0 { observe { $0.observe(sentence) } }
    case .epoch(let epoch):
      fixes += 1
      publish(epoch.fix.mode == .noFix ? .noFix : .streaming)
      passThrough.flush(to: core.hub)  // the epoch's sentences ahead of its fix
      core.hub.publish(fix: epoch.fix)
      if let satellites = epoch.satellites { core.hub.publish(satellites: satellites) }
    case .ubx(let frame):
      if let acknowledgement = ReceiverAcknowledgement(frame) {
        core.acknowledgements.deliver(acknowledgement)
      }
      if identificationBudget > 0 { observe { $0.observe(frame) } }
    case .sirf(let frame):
      if identificationBudget > 0 { observe { $0.observe(frame) } }
    case .parseError:
      break
    }
  }

  /// Feeds the chipset identifier until it is sure, and shares what it learns.
  private func observe(_ body: (inout ChipsetIdentifier) -> Void) {
    identificationBudget -= 1
    let before = identifier.identification
    body(&identifier)
    let after = identifier.identification
    guard after != before else { return }
    if after.confidence >= .medium {
      core.knowledge.identification.withLock { $0 = after }
    }
    if after.confidence == .high { identificationBudget = 0 }
  }

  private func publish(_ newStatus: ReceiverStatus) {
    guard newStatus != status else { return }
    status = newStatus
    core.hub.publish(status: newStatus)
  }
}
