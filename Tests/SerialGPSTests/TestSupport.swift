import Glibc
import NMEA
import POSIX
import Testing

@testable import SerialGPS

/// Polls `condition` until it holds or `timeout` (real time) passes. For waiting on other
/// threads and tasks in tests; never used to assert durations.
func eventually(
  timeout: Duration = .seconds(30), _ condition: @Sendable () -> Bool
) async -> Bool {
  let deadline = ContinuousClock.now + timeout
  while ContinuousClock.now < deadline {
    if condition() { return true }
    try? await Task.sleep(for: .milliseconds(1))
  }
  return condition()
}

/// An in-memory connection: tests feed bytes as the receiver, and see what was written.
final class MemoryConnection: ReceiverConnection, @unchecked Sendable {
  private var mutex = pthread_mutex_t()
  private var condition = pthread_cond_t()
  private var pending: [UInt8] = []
  private var interrupted = false
  private var hungUp = false
  private(set) var closed = false
  private var written: [[UInt8]] = []
  /// Called with each write, outside any lock (a simulated receiver answers from here).
  var onWrite: (@Sendable ([UInt8]) -> Void)?

  init() {
    pthread_mutex_init(&mutex, nil)
    pthread_cond_init(&condition, nil)
  }

  private func locked<T>(_ body: () -> T) -> T {
    pthread_mutex_lock(&mutex)
    defer { pthread_mutex_unlock(&mutex) }
    return body()
  }

  func feed(_ bytes: [UInt8]) {
    locked {
      pending += bytes
      pthread_cond_broadcast(&condition)
    }
  }

  func feed(_ text: String) { feed(Array(text.utf8)) }

  func hangUp() {
    locked {
      hungUp = true
      pthread_cond_broadcast(&condition)
    }
  }

  var writes: [[UInt8]] { locked { written } }
  var isClosed: Bool { locked { closed } }

  /// Fed bytes that no read has taken yet.
  func hasUnreadInput() -> Bool { locked { !pending.isEmpty } }

  struct HangUp: Error, CustomStringConvertible {
    var description: String { "memory receiver hung up" }
  }

  func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
    pthread_mutex_lock(&mutex)
    defer { pthread_mutex_unlock(&mutex) }
    while pending.isEmpty && !interrupted && !hungUp {
      pthread_cond_wait(&condition, &mutex)
    }
    if !pending.isEmpty {
      let count = min(buffer.count, pending.count)
      for index in 0..<count { buffer[index] = pending[index] }
      pending.removeFirst(count)
      return count
    }
    if interrupted {
      interrupted = false
      return 0
    }
    throw HangUp()
  }

  func write(_ bytes: [UInt8]) throws {
    let failed = locked { () -> Bool in
      if hungUp || closed { return true }
      written.append(bytes)
      return false
    }
    if failed { throw HangUp() }
    onWrite?(bytes)
  }

  func interrupt() {
    locked {
      interrupted = true
      pthread_cond_broadcast(&condition)
    }
  }

  func close() {
    locked { closed = true }
  }
}

/// Opens ``MemoryConnection``s and checks that no two are ever open at once.
final class MemoryConnector: ReceiverConnector, @unchecked Sendable {
  private let lock = Locked(State())
  struct State {
    var connections: [MemoryConnection] = []
    var failNext: [String] = []
    var openNow = 0
    var overlaps = 0
    var opens = 0
  }
  var deviceName: String { "memory" }
  let prepare: (@Sendable (MemoryConnection) -> Void)?
  /// The receiver's name for ``AwakeMarkers``; `nil`: never marked.
  let markerIdentity: String?

  init(markerIdentity: String? = nil, prepare: (@Sendable (MemoryConnection) -> Void)? = nil) {
    self.prepare = prepare
    self.markerIdentity = markerIdentity
  }

  struct OpenFailure: Error, CustomStringConvertible {
    var description: String
  }

  func failNextOpen(_ reason: String) { lock.withLock { $0.failNext.append(reason) } }

  func connect() async throws -> any ReceiverConnection {
    let failure: String? = lock.withLock { state in
      state.failNext.isEmpty ? nil : state.failNext.removeFirst()
    }
    if let failure { throw OpenFailure(description: failure) }
    let connection = MemoryConnection()
    prepare?(connection)
    lock.withLock { state in
      // The previous connection must be closed before a new one opens.
      if let last = state.connections.last, !last.isClosed { state.overlaps += 1 }
      state.connections.append(connection)
      state.opens += 1
    }
    return connection
  }

  var connections: [MemoryConnection] { lock.withLock { $0.connections } }
  var latest: MemoryConnection? { connections.last }
  var opens: Int { lock.withLock { $0.opens } }
  var overlaps: Int { lock.withLock { $0.overlaps } }
  var openCount: Int { connections.filter { !$0.isClosed }.count }
}

/// A checksummed sentence with CR LF.
func sentence(_ body: String) -> String {
  String(decoding: NMEAChecksum.frame(body), as: UTF8.self)
}

/// One 1 Hz cycle (RMC, GGA) at `second` past 12:00:00, a 3D fix near Bern.
func cycle(second: Int, latitudeMinutes: String = "56.789") -> String {
  let time = "1200" + (second < 10 ? "0" : "") + String(second) + ".00"
  return sentence("GPRMC,\(time),A,46\(latitudeMinutes),N,00726.123,E,1.5,90.0,301126,,,A")
    + sentence("GPGGA,\(time),46\(latitudeMinutes),N,00726.123,E,1,08,0.9,540.2,M,48.0,M,,")
}

/// Collects a subscription's events on a task, for assertions.
final class EventLog: @unchecked Sendable {
  private let events = Locked<[ReceiverEvent]>([])
  private var task: Task<Void, Never>?

  init(_ sequence: ReceiverEvents) {
    // Collected on the driver's executor, as a callback subscription is: the cooperative
    // pool may be held for seconds by other tests' synchronous work on a loaded machine.
    task = Task(executorPreference: DriverExecutor.shared) { [events] in
      for await event in sequence { events.withLock { $0.append(event) } }
    }
  }

  var all: [ReceiverEvent] { events.withLock { $0 } }
  var fixes: [FixUpdate] {
    all.compactMap { if case .fix(let update) = $0 { return update } else { return nil } }
  }
  var statuses: [ReceiverStatus] {
    all.compactMap { if case .status(let status) = $0 { return status } else { return nil } }
  }

  func stop() { task?.cancel() }
}
