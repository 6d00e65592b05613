import Chipsets
import Glibc
import NMEA
import POSIX
import Replay
import SerialPort

/// A virtual GPS receiver on a pseudo-terminal, for tests and tools: the driver opens
/// ``devicePath`` with ``SerialPort`` as if it were a receiver's tty.
///
/// The simulator streams a ``Recording`` at its pace while its ``ReceiverModel`` is running,
/// answers commands as the chip of its ``ReceiverProfile`` would, goes silent in GNSS stop,
/// backup, standby or hibernate, and records every byte it receives, decoded into commands.
/// It can be unplugged (``hangUp()``) and plugged back in (``replug()``) under the same path,
/// made deaf or made to reject everything (``setResponses(_:)``).
///
/// ```swift
/// let recording = try Recording.load(path: "fixtures/mtk-cold-start.nmea")
/// let sim = try ReceiverSimulator(
///   recording: recording,
///   configuration: .init(profile: .inferred(from: recording), pace: .recorded(speed: 10)))
/// let port = try SerialPort.open(path: sim.devicePath, baudRate: 9600)
/// …
/// let standby = await sim.waitForCommand(timeout: .seconds(10)) { $0 == .mtkStandby(mode: 0) }
/// #expect(sim.powerState == .standby)
/// ```
///
/// Two threads of its own: one reads the pty (decoding commands as they arrive), one writes
/// (answers first, then the recording's bursts when due). Pacing uses the monotonic clock:
/// bytes on a pty move in real time. The behaviour itself (``ReceiverModel``) and the
/// recording's schedule (``Playback``) take time as plain values, ready for a virtual clock.
///
/// All members may be called from any thread or task. ``stop()`` (or releasing the object)
/// unplugs the receiver and ends its threads.
///
/// `@unchecked Sendable`: a subclass of the non-final ``SimulatedReceiver``; its state is in
/// ``SimulatorCore``, behind its lock.
public final class ReceiverSimulator: SimulatedReceiver, ObservableSimulatedReceiver,
  @unchecked Sendable
{
  /// How a simulator behaves (the simulated receivers' one options type).
  public typealias Configuration = SimulatorOptions

  let core: SimulatorCore

  /// Starts a simulator streaming `recording`.
  ///
  /// - Throws: ``SimulatorError`` when the pty or its link cannot be made.
  public init(recording: Recording, configuration: Configuration) throws(SimulatorError) {
    core = try SimulatorCore(recording: recording, configuration: configuration)
    super.init(chip: core)
    core.start()
  }

  /// Starts a simulator streaming the recording at `path` (a fixture).
  public convenience init(
    recordingAt path: String, profile: ReceiverProfile, pace: Pace = .realTime
  ) throws(SimulatorError) {
    let recording: Recording
    do {
      recording = try Recording.load(path: path)
    } catch {
      throw SimulatorError(description: error.description)
    }
    try self.init(
      recording: recording, configuration: Configuration(profile: profile, pace: pace))
  }

  deinit { core.stop() }

  /// The path the driver opens: a symbolic link to the current pty, the same across replugs.
  public var devicePath: String { core.devicePath }
  /// The current pty (`/dev/pts/N`); `nil` while unplugged.
  public var pseudoTerminalPath: String? { core.state { $0.pty?.devicePath } }
  /// The profile imitated.
  public var profile: ReceiverProfile { core.profile }
  /// The recording streamed.
  public var recording: Recording { core.recording }

  /// Whether the last burst of a recording that does not loop has been taken for writing
  /// (it may still be on its way).
  public var isPlaybackFinished: Bool { core.state { $0.playback.isFinished } }
  /// Whether the pty exists (not unplugged).
  public var isPluggedIn: Bool { core.state { $0.pty != nil } }
  /// Inputs forgotten from ``received`` because of its limit.
  public var receivedForgotten: Int { core.state { $0.model.receivedForgotten } }
  /// What the host's bytes did to the simulator's framer (checksum errors, noise).
  public var inputStatistics: FramerStatistics { core.state { $0.model.inputStatistics } }
  /// How commands are treated now.
  public var responses: ResponseMode { core.state { $0.model.responses } }

  /// Unplugs the receiver: the pty's controller closes, so a port reading ``devicePath``
  /// sees a hang-up (its read throws ``SerialPortError/Reason/disconnected(_:)``), bytes it
  /// had not read are lost, and the link disappears. Idempotent.
  public func hangUp() {
    core.hangUp()
  }

  /// Plugs the receiver back in: a new pty behind the same ``devicePath``, the receiver
  /// running at once where its recording left off. Does nothing while plugged in.
  public func replug() throws(SimulatorError) {
    try core.replug()
  }

  /// Unplugs the receiver and ends the simulator's threads. Idempotent; also done when the
  /// object is released.
  public func stop() {
    core.stop()
  }
}

extension SimulatorCounters {
  /// These counters with the ones the receiver model and the playback keep themselves: what
  /// the simulator and the in-process replay report, from the same state.
  func including(model: ReceiverModel, playback: Playback) -> SimulatorCounters {
    var counters = self
    counters.powerOns = model.powerOns
    counters.powerOffs = model.powerOffs
    counters.acknowledgements = model.acknowledgements
    counters.rejections = model.rejections
    counters.loopsCompleted = playback.loopsCompleted
    return counters
  }
}

/// Counters of a ``ReceiverSimulator``.
public struct SimulatorCounters: Sendable, Hashable {
  /// Transitions into ``SimulatedPowerState/running`` after the start, and out of it.
  public var powerOns = 0
  public var powerOffs = 0
  /// Recording bursts (epochs) and their checksum-valid sentences written to the pty.
  public var burstsSent = 0
  public var sentencesSent = 0
  /// Bursts not written whole: nobody read the pty for the write timeout, or it was unplugged.
  public var burstsDropped = 0
  /// Answers and messages of the receiver's own (acknowledgements, MON-VER, `$PMTK010`).
  public var repliesSent = 0
  /// Positive acknowledgements and rejections among the replies.
  public var acknowledgements = 0
  public var rejections = 0
  /// Every byte written to the pty, and bytes dropped (pty full or unplugged).
  public var bytesSent = 0
  public var bytesDropped = 0
  /// Times the recording wrapped around.
  public var loopsCompleted = 0
  /// Unplugs and replugs.
  public var hangUps = 0
  public var replugs = 0

  public init() {}
}

/// A simulator could not be started or plugged back in.
public struct SimulatorError: Error, Sendable, Hashable, CustomStringConvertible {
  public let description: String

  public init(description: String) { self.description = description }
}

// MARK: - The machinery

/// The simulator's state and threads; the public object only wraps it, so that releasing
/// the object stops the threads (which refer to this core, not to the object).
///
/// `@unchecked Sendable`: its state is behind its lock and its threads' own, which the compiler
/// cannot see.
final class SimulatorCore: SimulatedChipCore, @unchecked Sendable {
  struct State: SimulatedChipState {
    var model: ReceiverModel
    var playback: Playback
    /// Replies waiting for the writer, in order.
    var outbox: [[UInt8]] = []
    /// When the next burst is due; `nil` while not streaming.
    var nextBurstAt: Duration?
    var pty: PseudoTerminal?
    var stopping = false
    var counters = SimulatorCounters()
    var readers: [OwnThread] = []
    var writer: OwnThread?

    func snapshotCounters() -> SimulatorCounters {
      counters.including(model: model, playback: playback)
    }
  }

  let configuration: ReceiverSimulator.Configuration
  /// The chip imitated: the configuration's, or the recording's.
  let profile: ReceiverProfile
  let recording: Recording
  let devicePath: String
  /// The directory made for ``devicePath`` when none was given; removed by ``stop()``.
  private let temporaryDirectory: String?
  private let origin = ContinuousClock.now
  private let lock = Lock()
  private var locked: State

  init(recording: Recording, configuration: ReceiverSimulator.Configuration)
    throws(SimulatorError)
  {
    self.configuration = configuration
    profile = configuration.profile ?? .inferred(from: recording)
    self.recording = recording
    if let path = configuration.devicePath {
      devicePath = path
      temporaryDirectory = nil
    } else {
      var template = Array("/tmp/serialgps-sim-XXXXXX".utf8CString)
      guard let made = mkdtemp(&template) else {
        throw SimulatorError(
          description: "Could not make a directory for the simulated receiver under /tmp: "
            + "\(Errno.current). Check that /tmp is writable, or give "
            + "Configuration.devicePath.")
      }
      let directory = String(cString: made)
      temporaryDirectory = directory
      devicePath = directory + "/gps0"
    }
    let pty: PseudoTerminal
    do {
      pty = try PseudoTerminal(symlink: devicePath)
    } catch {
      if let temporaryDirectory { rmdir(temporaryDirectory) }
      throw SimulatorError(
        description: "Could not make the simulated receiver's pty at \(devicePath): \(error)")
    }
    let model = configuration.model(of: recording, as: profile)
    locked = State(
      model: model, playback: configuration.playback(of: recording, loopsByDefault: true),
      nextBurstAt: model.power.isStreaming ? .zero : nil, pty: pty)
  }

  var now: Duration { ContinuousClock.now - origin }

  func state<T>(_ body: (State) -> T) -> T {
    lock.withLock { body(locked) }
  }

  /// Changes the state and wakes the writer; streaming follows the power state.
  func mutate(_ body: (inout State, Duration) -> Void) {
    lock.withLock {
      let now = self.now
      let before = locked.model.power
      body(&locked, now)
      followPower(from: before, now: now)
      lock.broadcast()
    }
  }

  /// Starts or stops the bursts when the receiver starts or stops running. After a wake the
  /// first burst comes one epoch later, as a receiver outputs at its next epoch.
  private func followPower(from before: SimulatedPowerState, now: Duration) {
    let after = locked.model.power
    if after.isStreaming && !before.isStreaming {
      locked.nextBurstAt = now + locked.playback.nominalDelay
    } else if !after.isStreaming {
      locked.nextBurstAt = nil
    }
  }

  func start() {
    let pty = lock.withLock { locked.pty! }
    let reader = OwnThread.start(name: "serialgps-sim-rx") { [self] in readLoop(pty) }
    let writer = OwnThread.start(name: "serialgps-sim-tx") { [self] in writeLoop() }
    lock.withLock {
      locked.readers.append(reader)
      locked.writer = writer
    }
  }

  // MARK: Reading

  private func readLoop(_ pty: PseudoTerminal) {
    var buffer = [UInt8](repeating: 0, count: 4096)
    while true {
      let result = buffer.withUnsafeMutableBytes { raw in
        Result { () throws(SerialPortError) in try pty.read(into: raw, timeout: nil) }
      }
      guard case .success(let outcome) = result else { return }  // hung up or stopped
      switch outcome {
      case .received(let count):
        mutate { state, now in
          state.outbox += state.model.receive(buffer[..<count], at: now)
        }
      case .interrupted, .timedOut:
        if lock.withLock({ locked.stopping }) { return }
      }
    }
  }

  // MARK: Writing

  private enum Work {
    /// Replies, or a burst of the recording with its sentence count.
    case write(PseudoTerminal?, [UInt8], replies: Int, burstSentences: Int?)
    case stop
  }

  private func writeLoop() {
    while true {
      guard case .write(let pty, let bytes, let replies, let burstSentences) = nextWork() else {
        return
      }
      var written = 0
      if let pty {
        do {
          try pty.write(bytes, timeout: configuration.writeTimeout)
          written = bytes.count
        } catch {
          // Nobody read in time, or the pty went away: the rest is lost, as on a real line.
          if case .writeTimedOut(_, let count, _) = error.reason { written = count }
        }
      }
      lock.withLock {
        locked.counters.bytesSent += written
        locked.counters.bytesDropped += bytes.count - written
        guard written == bytes.count else {
          if burstSentences != nil { locked.counters.burstsDropped += 1 }
          return
        }
        locked.counters.repliesSent += replies
        if let burstSentences {
          locked.counters.burstsSent += 1
          locked.counters.sentencesSent += burstSentences
        }
      }
    }
  }

  /// Waits until something is due: a state change of the receiver's own, replies to send, or
  /// the next burst.
  private func nextWork() -> Work {
    lock.withLock {
      while true {
        if locked.stopping { return .stop }
        let now = self.now
        if let deadline = locked.model.nextDeadline, deadline <= now {
          let before = locked.model.power
          locked.outbox += locked.model.advance(to: now)
          followPower(from: before, now: now)
          continue
        }
        if !locked.outbox.isEmpty {
          let replies = locked.outbox
          locked.outbox.removeAll()
          return .write(
            locked.pty, replies.flatMap { $0 }, replies: replies.count, burstSentences: nil)
        }
        let streaming = locked.model.power.isStreaming && locked.pty != nil
        if streaming, let due = locked.nextBurstAt, due <= now {
          guard let (burst, delay) = locked.playback.next() else {
            locked.nextBurstAt = nil
            continue
          }
          // Keep the recording's rhythm; after a stall, start again from now.
          locked.nextBurstAt = max(due + delay, now)
          return .write(
            locked.pty, locked.model.epoch(recording.bytes(of: burst), at: due), replies: 0,
            burstSentences: burst.sentences)
        }
        var wakeAt = locked.model.nextDeadline
        if streaming, let due = locked.nextBurstAt { wakeAt = min(wakeAt ?? due, due) }
        lock.wait(timeout: wakeAt.map { $0 - now })
      }
    }
  }

  // MARK: Plugging

  func hangUp() {
    let pty: PseudoTerminal? = lock.withLock {
      guard let pty = locked.pty else { return nil }
      let before = locked.model.power
      locked.pty = nil
      locked.model.unplug(at: now)
      locked.outbox.removeAll()
      locked.counters.hangUps += 1
      followPower(from: before, now: now)
      lock.broadcast()
      return pty
    }
    pty?.hangUp()  // wakes this simulator's reader, which then ends
  }

  func replug() throws(SimulatorError) {
    let plugged = lock.withLock { locked.pty != nil || locked.stopping }
    guard !plugged else { return }
    let pty: PseudoTerminal
    do {
      pty = try PseudoTerminal(symlink: devicePath)
    } catch {
      throw SimulatorError(
        description: "Could not plug the simulated receiver back in at \(devicePath): \(error)")
    }
    let taken = lock.withLock { () -> Bool in
      guard locked.pty == nil, !locked.stopping else { return false }
      let before = locked.model.power
      locked.pty = pty
      locked.model.plugIn(at: now)
      locked.counters.replugs += 1
      followPower(from: before, now: now)
      lock.broadcast()
      return true
    }
    guard taken else {
      pty.hangUp()
      return
    }
    let reader = OwnThread.start(name: "serialgps-sim-rx") { [self] in readLoop(pty) }
    lock.withLock { locked.readers.append(reader) }
  }

  func stop() {
    let (pty, threads): (PseudoTerminal?, [OwnThread]) = lock.withLock {
      if locked.stopping { return (nil, []) }
      locked.stopping = true
      let pty = locked.pty
      locked.pty = nil
      lock.broadcast()
      return (pty, locked.readers + (locked.writer.map { [$0] } ?? []))
    }
    pty?.hangUp()
    for thread in threads { thread.joinBlocking() }
    if let temporaryDirectory {
      // The pty removed its link if it still pointed at it; a link left by someone else's
      // pty would make rmdir fail, which is harmless.
      unlink(devicePath)
      rmdir(temporaryDirectory)
    }
  }
}
