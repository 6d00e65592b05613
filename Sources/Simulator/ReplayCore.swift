import Chipsets
import NMEA
import POSIX
import Replay
import SerialGPS

// The machinery behind ReplayConnector (ReplayConnector.swift).

/// The replay's state behind one lock, and the task that wakes it when something comes due.
///
/// `@unchecked Sendable`: its state is behind one lock, which the compiler cannot see.
final class ReplayCore: SimulatedChipCore, @unchecked Sendable {
  /// The open connection's side of the state.
  struct Link {
    let id: Int
    /// Bytes the reader has not taken yet.
    var inbox: [UInt8] = []
    /// ``ReceiverConnection/interrupt()`` was called and no read has returned 0 for it yet.
    var interrupted = false
  }

  struct State: SimulatedChipState {
    var model: ReceiverModel
    var playback: Playback
    /// When the next epoch is due; `nil` while the chip is not streaming or the recording is
    /// over.
    var nextBurstAt: Duration?
    /// The latest time seen: the clock is read outside the lock, so two threads may bring
    /// times in a different order than they read them.
    var now: Duration
    var link: Link?
    var everConnected = false
    /// Epochs that came due before the first connection, for it.
    var backlog: [UInt8] = []
    var pluggedIn = true
    var counters = SimulatorCounters()
    var nextLinkID = 0
    /// The deadline the pump task sleeps until, and which arming it belongs to.
    var armedDeadline: Duration?
    var pumpGeneration = 0
    var pump: Task<Void, Never>?
    var appeared: (@Sendable () -> Void)?
    var stopped = false

    func snapshotCounters() -> SimulatorCounters {
      counters.including(model: model, playback: playback)
    }
  }

  /// What has to happen to the pump task after a change, done outside the lock.
  struct PumpPlan {
    var cancel: Task<Void, Never>?
    var arm: (deadline: Duration, generation: Int)?
  }

  /// The most bytes kept for the first connection; beyond it epochs are lost.
  static let backlogLimit = 1 << 20
  /// The most epochs handed out in one catch-up; a pace so fast that more are due starts
  /// again from now, as the simulator does after a stall.
  static let catchUpLimit = 10_000

  let recording: Recording
  let configuration: ReplayConnector.Configuration
  let profile: ReceiverProfile
  let clock: any DriverClock
  let deviceName: String
  private let lock = Lock()
  private var locked: State

  /// The clock's time on the simulated chip's time line (``ReceiverModel`` counts its boots,
  /// bursts and deadlines as the time since its start), which begins at the clock's origin.
  private var modelTime: Duration { clock.now.sinceOrigin }

  init(
    recording: Recording, configuration: ReplayConnector.Configuration, clock: any DriverClock,
    deviceName: String
  ) {
    self.recording = recording
    self.configuration = configuration
    profile = configuration.profile ?? .inferred(from: recording)
    self.clock = clock
    self.deviceName = deviceName
    let now = clock.now.sinceOrigin
    let model = configuration.model(of: recording, as: profile, at: now)
    let playback = configuration.playback(of: recording, loopsByDefault: false)
    locked = State(
      model: model, playback: playback,
      nextBurstAt: model.power.isStreaming ? now + playback.nominalDelay : nil, now: now)
    let plan = lock.withLock { pumpPlan() }
    apply(plan)
  }

  func state<T>(_ body: (State) -> T) -> T {
    lock.withLock { body(locked) }
  }

  /// Brings the replay up to the clock, changes it, and follows the chip's power state.
  func mutate(_ body: (inout State, Duration) -> Void) {
    let now = modelTime
    let plan = lock.withLock { () -> PumpPlan in
      let now = catchUp(to: now)
      let before = locked.model.power
      body(&locked, now)
      followPower(from: before, at: now)
      lock.broadcast()
      return pumpPlan()
    }
    apply(plan)
  }

  func setAppeared(_ appeared: (@Sendable () -> Void)?) {
    lock.withLock { locked.appeared = appeared }
  }

  func stop() {
    let pump = lock.withLock { () -> Task<Void, Never>? in
      locked.stopped = true
      locked.pumpGeneration += 1
      locked.armedDeadline = nil
      defer { locked.pump = nil }
      return locked.pump
    }
    pump?.cancel()
  }

  // MARK: Connections

  func connect() throws(ReplayError) -> ReplayConnection {
    let now = modelTime
    let (connection, plan) = try lock.withLock {
      () throws(ReplayError) -> (ReplayConnection, PumpPlan) in
      guard locked.pluggedIn else { throw ReplayError(device: deviceName, reason: .unplugged) }
      guard locked.link == nil else { throw ReplayError(device: deviceName, reason: .busy) }
      catchUp(to: now)
      locked.nextLinkID += 1
      var link = Link(id: locked.nextLinkID)
      if !locked.everConnected {
        link.inbox = locked.backlog
        locked.backlog = []
        locked.everConnected = true
      }
      locked.link = link
      lock.broadcast()
      return (ReplayConnection(core: self, id: link.id), pumpPlan())
    }
    apply(plan)
    return connection
  }

  func read(_ id: Int, into buffer: UnsafeMutableRawBufferPointer) throws(ReplayError) -> Int {
    try lock.withLock { () throws(ReplayError) -> Int in
      while true {
        guard locked.link?.id == id else {
          throw ReplayError(device: deviceName, reason: .unplugged)
        }
        if locked.link!.interrupted {
          locked.link!.interrupted = false
          return 0
        }
        if !locked.link!.inbox.isEmpty {
          let count = min(buffer.count, locked.link!.inbox.count)
          locked.link!.inbox.withUnsafeBytes { source in
            buffer.baseAddress!.copyMemory(from: source.baseAddress!, byteCount: count)
          }
          locked.link!.inbox.removeFirst(count)
          return count
        }
        if isReadPaced, locked.model.power.isStreaming, locked.nextBurstAt != nil {
          // As fast as the reader takes them: the next epoch now that the last one is read.
          sendNextBurst(due: locked.now)
          continue
        }
        lock.wait(timeout: nil)
      }
    }
  }

  func write(_ id: Int, _ bytes: [UInt8]) throws(ReplayError) {
    let now = modelTime
    let plan = try lock.withLock { () throws(ReplayError) -> PumpPlan in
      guard locked.link?.id == id else {
        throw ReplayError(device: deviceName, reason: .unplugged)
      }
      let now = catchUp(to: now)
      let before = locked.model.power
      deliver(replies: locked.model.receive(bytes, at: now))
      followPower(from: before, at: now)
      lock.broadcast()
      return pumpPlan()
    }
    apply(plan)
  }

  /// Whether bytes due by the clock wait for the reader of connection `id` (`nil`: the open
  /// one): in its inbox once the replay is brought up to the clock, or the next epoch of a
  /// paced-by-reads replay.
  func hasUnreadInput(_ id: Int?) -> Bool {
    var waiting = false
    mutate { state, _ in
      guard let link = state.link, id == nil || link.id == id else { return }
      waiting =
        !link.inbox.isEmpty
        || (state.playback.isReadPaced && state.model.power.isStreaming
          && state.nextBurstAt != nil)
    }
    return waiting
  }

  func interrupt(_ id: Int) {
    lock.withLock {
      guard locked.link?.id == id else { return }
      locked.link?.interrupted = true
      lock.broadcast()
    }
  }

  func close(_ id: Int) {
    lock.withLock {
      guard locked.link?.id == id else { return }
      locked.link = nil
      lock.broadcast()
    }
  }

  func hangUp() {
    let now = modelTime
    let plan = lock.withLock { () -> PumpPlan? in
      guard locked.pluggedIn else { return nil }
      let now = catchUp(to: now)
      let before = locked.model.power
      locked.pluggedIn = false
      locked.link = nil
      locked.model.unplug(at: now)
      locked.counters.hangUps += 1
      followPower(from: before, at: now)
      lock.broadcast()
      return pumpPlan()
    }
    if let plan { apply(plan) }
  }

  func replug() {
    let now = modelTime
    let result = lock.withLock { () -> (PumpPlan, (@Sendable () -> Void)?)? in
      guard !locked.pluggedIn, !locked.stopped else { return nil }
      let now = catchUp(to: now)
      let before = locked.model.power
      locked.pluggedIn = true
      locked.model.plugIn(at: now)
      locked.counters.replugs += 1
      followPower(from: before, at: now)
      lock.broadcast()
      return (pumpPlan(), locked.appeared)
    }
    guard let (plan, appeared) = result else { return }
    apply(plan)
    appeared?()
  }

  // MARK: The timeline (all under the lock)

  /// Whether epochs go out as the reader takes them rather than on the clock.
  private var isReadPaced: Bool { locked.playback.isReadPaced }

  /// Applies everything due by `now` in time order: the chip's own deadlines (end of booting,
  /// a timed backup) and the epochs. Returns the time to use for what follows.
  @discardableResult
  private func catchUp(to clockNow: Duration) -> Duration {
    let now = max(clockNow, locked.now)
    locked.now = now
    var sent = 0
    while true {
      var modelDue = locked.model.nextDeadline
      if let due = modelDue, due > now { modelDue = nil }
      var burstDue: Duration?
      if !isReadPaced, locked.model.power.isStreaming, let due = locked.nextBurstAt, due <= now {
        burstDue = due
      }
      if let due = modelDue, burstDue.map({ due <= $0 }) ?? true {
        let before = locked.model.power
        deliver(replies: locked.model.advance(to: due))
        followPower(from: before, at: due)
        continue
      }
      guard let due = burstDue else { break }
      sendNextBurst(due: due)
      sent += 1
      if sent >= Self.catchUpLimit, let next = locked.nextBurstAt, next <= now {
        locked.nextBurstAt = now
        break
      }
    }
    return now
  }

  /// Hands out the next epoch, due at `due`, and schedules the one after it.
  private func sendNextBurst(due: Duration) {
    guard let (burst, delay) = locked.playback.next() else {
      locked.nextBurstAt = nil
      return
    }
    locked.nextBurstAt = due + delay
    let bytes = locked.model.epoch(recording.bytes(of: burst), at: due)
    if deliver(bytes[...]) {
      locked.counters.burstsSent += 1
      locked.counters.sentencesSent += burst.sentences
    }
  }

  private func deliver(replies: [[UInt8]]) {
    for reply in replies where deliver(reply[...]) { locked.counters.repliesSent += 1 }
  }

  /// Puts bytes the chip sends on the line: to the open connection, or kept for the first
  /// one, or lost. Returns whether anyone will read them.
  private func deliver(_ bytes: ArraySlice<UInt8>) -> Bool {
    if locked.link != nil {
      locked.link!.inbox += bytes
      locked.counters.bytesSent += bytes.count
      return true
    }
    if !locked.everConnected, locked.backlog.count + bytes.count <= Self.backlogLimit {
      locked.backlog += bytes
      locked.counters.bytesSent += bytes.count
      return true
    }
    locked.counters.bytesDropped += bytes.count
    return false
  }

  /// Starts or stops the epochs when the chip starts or stops running: after a wake the
  /// first epoch comes one interval later.
  private func followPower(from before: SimulatedPowerState, at now: Duration) {
    let after = locked.model.power
    if after.isStreaming && !before.isStreaming {
      locked.nextBurstAt = now + locked.playback.nominalDelay
    } else if !after.isStreaming {
      locked.nextBurstAt = nil
    }
  }

  // MARK: The pump

  /// What the pump task should sleep until now, compared with what it sleeps until.
  private func pumpPlan() -> PumpPlan {
    guard !locked.stopped else { return PumpPlan() }
    var deadline = locked.model.nextDeadline
    if !isReadPaced, locked.model.power.isStreaming, let due = locked.nextBurstAt {
      deadline = min(deadline ?? due, due)
    }
    guard deadline != locked.armedDeadline else { return PumpPlan() }
    locked.pumpGeneration += 1
    locked.armedDeadline = deadline
    let old = locked.pump
    locked.pump = nil
    return PumpPlan(cancel: old, arm: deadline.map { ($0, locked.pumpGeneration) })
  }

  /// Cancels the pump task that is no longer wanted and starts the new one. Outside the lock:
  /// cancelling resumes the clock's sleeper.
  private func apply(_ plan: PumpPlan) {
    plan.cancel?.cancel()
    guard let (deadline, generation) = plan.arm else { return }
    let clock = self.clock
    // On the driver's executor, as the driver's own timers are: not on the two-thread
    // cooperative pool, where a test process's long synchronous work (loading and decoding
    // fixtures, under a loaded machine) held back the epochs a clock advance had made due
    // for longer than the tests waited.
    let task = DriverExecutor.task { [weak self] in
      do {
        try await clock.sleep(until: DriverInstant(sinceOrigin: deadline))
      } catch {
        return  // re-armed or stopped
      }
      self?.pumpFired(generation: generation)
    }
    let stale = lock.withLock { () -> Bool in
      guard locked.pumpGeneration == generation else { return true }
      locked.pump = task
      return false
    }
    if stale { task.cancel() }
  }

  private func pumpFired(generation: Int) {
    let now = modelTime
    let plan = lock.withLock { () -> PumpPlan in
      if locked.pumpGeneration == generation {
        locked.armedDeadline = nil
        locked.pump = nil
      }
      catchUp(to: now)
      lock.broadcast()
      return pumpPlan()
    }
    apply(plan)
  }
}

/// One open connection to a ``ReplayConnector``.
final class ReplayConnection: ReceiverConnection {
  let core: ReplayCore
  let id: Int

  init(core: ReplayCore, id: Int) {
    self.core = core
    self.id = id
  }

  func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
    try core.read(id, into: buffer)
  }

  func write(_ bytes: [UInt8]) throws {
    try core.write(id, bytes)
  }

  func interrupt() { core.interrupt(id) }

  func close() { core.close(id) }

  func hasUnreadInput() -> Bool { core.hasUnreadInput(id) }
}
