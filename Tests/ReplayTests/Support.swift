import Chipsets
import Foundation
import Glibc
import NMEA
import Replay
import SerialGPS
import SerialPort
import Simulator
import Testing

// Serial calls block their thread, so they run on threads of their own (never the two-thread
// cooperative pool) and tests await them. Waits are generous; nothing asserts a duration
// except as a bound that load can only make safer.

/// The repository's `fixtures/` directory.
let fixturesDirectory: String = {
  var url = URL(fileURLWithPath: #filePath)
  for _ in 0..<3 { url.deleteLastPathComponent() }
  return url.appendingPathComponent("fixtures").path
}()

func fixturePath(_ name: String) -> String { fixturesDirectory + "/" + name + ".nmea" }

func loadFixture(_ name: String) throws -> Recording {
  try Recording.loadCached(path: fixturePath(name))
}

/// The truth file beside a fixture, as JSON.
func truth(_ name: String) throws -> [String: Any] {
  let data = try Data(contentsOf: URL(fileURLWithPath: fixturesDirectory + "/\(name).truth.json"))
  return try JSONSerialization.jsonObject(with: data) as! [String: Any]
}

/// Runs `body` on a new thread and returns what it returned (or throws what it threw).
func onOwnThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
  try await withCheckedThrowingContinuation { continuation in
    let thread = Thread { continuation.resume(with: Result { try body() }) }
    thread.stackSize = 1 << 20
    thread.start()
  }
}

/// Polls `condition` until it holds or `timeout` passes.
func eventually(timeout: Duration = .seconds(15), _ condition: () -> Bool) async -> Bool {
  let deadline = ContinuousClock.now + timeout
  while ContinuousClock.now < deadline {
    if condition() { return true }
    try? await Task.sleep(for: .milliseconds(5))
  }
  return condition()
}

/// Advances `clock` a `step` at a time, up to `limit` of virtual time, until `condition` holds:
/// ``ManualClock/advance(by:upTo:reading:realTimeLimit:until:)``, the helper apps get. Under
/// ThreadSanitizer on two busy cores one step's 5 ms of real time took 250–400 ms, and a
/// 200-s request stepped 200 ms at a time outran a 30-s limit: the real-time limit is 600 s.
func advance(
  _ clock: ManualClock, by step: Duration = .milliseconds(100), upTo limit: Duration,
  reading replay: ReplayConnector? = nil, until condition: () -> Bool
) async -> Bool {
  await clock.advance(by: step, upTo: limit, reading: replay, until: condition)
}

/// Waits (at most 10 s of real time) until the receiver's reader has read every byte
/// `replay` has given it.
func waitUntilRead(_ replay: ReplayConnector) async {
  await replay.waitUntilRead()
}

/// Shuts `receiver` down while stepping `clock`, so that a standby command waiting for its
/// answer on the virtual clock fails the test instead of hanging it. False when the shutdown
/// had not returned after 30 s.
func shutDown(
  _ receiver: GPSReceiver, advancing clock: ManualClock, reading replay: ReplayConnector? = nil
) async -> Bool {
  let finished = Flag()
  Task {
    await receiver.shutdown()
    finished.set()
  }
  let deadline = ContinuousClock.now + .seconds(30)
  while !finished.isSet {
    guard ContinuousClock.now < deadline else { return false }
    try? await Task.sleep(for: .milliseconds(5))
    if let replay { await waitUntilRead(replay) }
    clock.advance(by: .milliseconds(100))
  }
  return true
}

/// A flag one task sets and another polls.
final class Flag: @unchecked Sendable {  // its one Bool is read and written under `lock`
  private let lock = NSLock()
  private var value = false
  var isSet: Bool { lock.withLock { value } }
  func set() { lock.withLock { value = true } }
}

/// Starts a simulator for a fixture.
func makeSimulator(
  _ fixture: String, profile: ReceiverProfile, pace: Pace = .recorded(speed: 10),
  initialPowerState: SimulatedPowerState = .running, responses: ResponseMode = .normal,
  wakeDelay: Duration = .milliseconds(10), loops: Bool = true
) throws -> ReceiverSimulator {
  // A minute for a write to find room, not the default ten seconds: under the thread
  // sanitizer on two loaded cores a test's reader thread has stalled for more than ten
  // seconds, and the cut burst then failed a test that checks the stream is whole.
  try ReceiverSimulator(
    recording: loadFixture(fixture),
    configuration: .init(
      profile: profile, pace: pace, loops: loops, initialPowerState: initialPowerState,
      wakeDelay: wakeDelay, responses: responses, writeTimeout: .seconds(60)))
}

/// Reads a port on a thread of its own and decodes what arrives: what a driver would see.
final class PortListener: @unchecked Sendable {
  let port: SerialPort
  private let lock = NSLock()
  private var stopping = false
  private var decoder = NMEADecoder()
  private var _bytes = 0
  private var _ubx: [(UBXMessageID, [UInt8])] = []
  private var _acknowledgements: [ReceiverAcknowledgement] = []
  private var _epochs = 0
  private var _firstSentenceAddress: String?
  private var _error: SerialPortError?
  private let finished = DispatchSemaphore(value: 0)
  private let keepingBytes: Bool
  private var _receivedBytes: [UInt8] = []

  /// - Parameter keepingBytes: keep every byte received (``receivedBytes``).
  init(_ port: SerialPort, keepingBytes: Bool = false) {
    self.port = port
    self.keepingBytes = keepingBytes
    let thread = Thread { [self] in run() }
    thread.stackSize = 1 << 20
    thread.start()
  }

  private func run() {
    defer { finished.signal() }
    let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 4096, alignment: 1)
    defer { buffer.deallocate() }
    while true {
      let result: ReadResult
      do {
        result = try port.read(into: buffer, timeout: nil)
      } catch {
        locked { _error = error }
        return
      }
      switch result {
      case .received(let count):
        locked {
          _bytes += count
          if keepingBytes { _receivedBytes += buffer[..<count] }
          decoder.decode(UnsafeRawBufferPointer(rebasing: buffer[..<count])) { event in
            switch event {
            case .sentence(let sentence):
              if _firstSentenceAddress == nil { _firstSentenceAddress = address(of: sentence) }
              if let ack = ReceiverAcknowledgement(sentence) { _acknowledgements.append(ack) }
            case .ubx(let frame):
              _ubx.append((UBXMessageID(frame), Array(frame.payload)))
              if let ack = ReceiverAcknowledgement(frame) { _acknowledgements.append(ack) }
            case .epoch:
              _epochs += 1
            default:
              break
            }
          }
        }
      case .interrupted, .timedOut:
        if locked({ stopping }) { return }
      }
    }
  }

  private func locked<T>(_ body: () -> T) -> T {
    lock.lock()
    defer { lock.unlock() }
    return body()
  }

  var bytes: Int { locked { _bytes } }
  var receivedBytes: [UInt8] { locked { _receivedBytes } }
  var sentences: Int { locked { decoder.statistics.framer.sentences } }
  var epochs: Int { locked { _epochs } }
  /// The address of the first sentence that arrived (`PMTK010`, `GPRMC` …).
  var firstSentenceAddress: String? { locked { _firstSentenceAddress } }
  var ubxFrames: [(UBXMessageID, [UInt8])] { locked { _ubx } }
  var acknowledgements: [ReceiverAcknowledgement] { locked { _acknowledgements } }
  var error: SerialPortError? { locked { _error } }
  var framerStatistics: FramerStatistics { locked { decoder.statistics.framer } }

  /// Stops reading and waits for the thread to end.
  func stop() async {
    locked { stopping = true }
    port.interrupt()
    _ = try? await onOwnThread { [finished] in finished.wait() }
  }

  /// Waits until the reader has ended (on an error).
  func waitForEnd(timeout: Duration = .seconds(15)) async -> Bool {
    let seconds = Double(timeout.components.seconds)
    let result = try? await onOwnThread { [finished] in
      finished.wait(timeout: .now() + seconds) == .success
    }
    if result == true { finished.signal() }  // leave it signalled for a later stop()
    return result ?? false
  }

  /// Waits until nothing has arrived for `quiet`: whatever was written before has been read,
  /// however far behind a loaded machine left this reader. False if the bytes never stop.
  func drain(quiet: Duration = .milliseconds(300), timeout: Duration = .seconds(15)) async
    -> Bool
  {
    let deadline = ContinuousClock.now + timeout
    var last = bytes
    var since = ContinuousClock.now
    while ContinuousClock.now < deadline {
      try? await Task.sleep(for: .milliseconds(20))
      let now = bytes
      if now != last {
        last = now
        since = ContinuousClock.now
      } else if ContinuousClock.now - since >= quiet {
        return true
      }
    }
    return false
  }

  /// Whether nothing at all arrives during `window`, once what was already written has been
  /// read. A window of silence cannot be proven faster: the simulator's epoch at the paces
  /// used is a tenth of it or less.
  func staysSilent(for window: Duration) async -> Bool {
    guard await drain() else { return false }
    let before = bytes
    try? await Task.sleep(for: window)
    return bytes == before
  }
}

/// Writes `bytes` to the port on a thread of its own.
func write(_ bytes: [UInt8], to port: SerialPort) async throws {
  try await onOwnThread { try port.write(bytes, timeout: .seconds(5)) }
}

/// Opens the simulator's device on a thread of its own.
func openPort(_ simulator: ReceiverSimulator, baud: BaudRate = .b9600) async throws -> SerialPort {
  let path = simulator.devicePath
  return try await onOwnThread { try SerialPort.open(path: path, baudRate: baud) }
}

/// A sentence's address, for the few kinds tests look at.
func address(of sentence: Sentence) -> String {
  switch sentence {
  case .mtkSystemMessage(let message):
    if case .text = message.kind { return "PMTK011" }
    return "PMTK010"
  case .mtkAcknowledgement: return "PMTK001"
  case .unknown(let unknown): return unknown.address
  case .rmc(let rmc): return rmc.talker.description + "RMC"
  case .gga(let gga): return gga.talker.description + "GGA"
  default: return "other"
  }
}
