import Foundation
import Glibc
import NMEA
import POSIX
import SerialGPS
import Testing

@testable import NTRIP

/// A test's own setup failed (a port, a process).
struct TestSetupError: Error, CustomStringConvertible {
  let description: String
  init(_ description: String) { self.description = description }
}

/// Polls `condition` until it holds or `timeout` passes.
func eventually(timeout: Duration = .seconds(20), _ condition: () -> Bool) async -> Bool {
  let deadline = ContinuousClock.now + timeout
  while ContinuousClock.now < deadline {
    if condition() { return true }
    try? await Task.sleep(for: .milliseconds(20))
  }
  return condition()
}

/// A checksummed sentence with CR LF.
func sentence(_ body: String) -> String {
  String(decoding: NMEAChecksum.frame(body), as: UTF8.self)
}

/// One 1 Hz cycle (RMC, GGA) at `second` past 12:00:00, a 3D fix.
func cycle(second: Int) -> String {
  let time = "1200" + (second < 10 ? "0" : "") + String(second) + ".00"
  return sentence("GPRMC,\(time),A,4656.789,N,00726.123,E,1.5,90.0,071226,,,A")
    + sentence("GPGGA,\(time),4656.789,N,00726.123,E,1,08,0.9,540.2,M,48.0,M,,")
}

/// An in-memory receiver: the test feeds sentences; every write is recorded as it came (one
/// call, one entry), and opens and closes are counted (power).
final class MemoryConnection: ReceiverConnection, @unchecked Sendable {
  private let lock = NSCondition()
  private var pending: [UInt8] = []
  private var interrupted = false
  private var closed = false
  private var writes: [[UInt8]] = []

  func feed(_ text: String) {
    lock.withLock {
      pending += Array(text.utf8)
      lock.broadcast()
    }
  }

  var isClosed: Bool { lock.withLock { closed } }
  var written: [[UInt8]] { lock.withLock { writes } }

  func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
    lock.withLock {
      while pending.isEmpty && !interrupted { lock.wait() }
      if interrupted {
        interrupted = false
        return 0
      }
      let count = min(buffer.count, pending.count)
      for index in 0..<count { buffer[index] = pending[index] }
      pending.removeFirst(count)
      return count
    }
  }

  /// While true, a write waits (a receiver whose port does not drain).
  var stalled: Bool {
    get { lock.withLock { isStalled } }
    set {
      lock.withLock {
        isStalled = newValue
        lock.broadcast()
      }
    }
  }
  private var isStalled = false

  func write(_ bytes: [UInt8]) throws {
    lock.withLock {
      while isStalled { lock.wait() }
      writes.append(bytes)
    }
  }

  func interrupt() {
    lock.withLock {
      interrupted = true
      lock.broadcast()
    }
  }

  func close() { lock.withLock { closed = true } }
}

final class MemoryConnector: ReceiverConnector, @unchecked Sendable {
  private let connections = Locked<[MemoryConnection]>([])
  var deviceName: String { "memory" }

  func connect() async throws -> any ReceiverConnection {
    let connection = MemoryConnection()
    connections.withLock { $0.append(connection) }
    return connection
  }

  var opens: Int { connections.withLock { $0.count } }
  var latest: MemoryConnection? { connections.withLock { $0.last } }
  var all: [MemoryConnection] { connections.withLock { $0 } }
  /// Whether the receiver is powered: its latest connection is open.
  var isOpen: Bool { latest.map { !$0.isClosed } ?? false }
}

/// A small NTRIP caster on a loopback port, for what str2str cannot show: it answers as told
/// (a stream in NTRIP 1 or chunked NTRIP 2 form, a source table, 401), records each
/// connection's request and the GGA lines the client sends, and sends frames while connected.
final class TestCaster: @unchecked Sendable {
  enum Answer {
    /// `ICY 200 OK`, then the frames.
    case ntrip1
    /// `HTTP/1.1 200 OK`, chunked, each write cut at `cuts` (sizes of the pieces written,
    /// cycled), and chunks of `chunkSize` bytes.
    case ntrip2Chunked(chunkSize: Int, cuts: [Int])
    case sourceTable([String])
    case unauthorized
  }

  let port: UInt16
  private let listener: Int32
  private let answer: Answer
  private let frames: [[UInt8]]
  private let interval: Duration
  private let state = NSLock()
  private var stopping = false
  private var _requests: [String] = []
  private var _positions: [String] = []
  private var _open = 0
  private var threads: [Thread] = []

  /// Sends `frames` in turn, one every `interval`, cycling, to each connection.
  init(answer: Answer, frames: [[UInt8]], interval: Duration = .milliseconds(50)) throws {
    self.answer = answer
    self.frames = frames
    self.interval = interval
    let listener = socket(
      AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    self.listener = listener
    var yes: Int32 = 1
    setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = 0
    let bound = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        bind(listener, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
      }
    }
    guard bound == 0, listen(listener, 8) == 0 else { throw TestSetupError("listen") }
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafeMutablePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        getsockname(listener, $0, &length)
      }
    }
    port = UInt16(bigEndian: address.sin_port)
    let thread = Thread { [self] in acceptLoop() }
    threads.append(thread)
    thread.start()
  }

  var requests: [String] { state.withLock { _requests } }
  var positions: [String] { state.withLock { _positions } }
  /// Connections open now.
  var openConnections: Int { state.withLock { _open } }
  var isStopping: Bool { state.withLock { stopping } }

  func stop() {
    state.withLock { stopping = true }
    shutdown(listener, Int32(SHUT_RDWR))
    close(listener)
  }

  private func acceptLoop() {
    while !isStopping {
      let client = accept(listener, nil, nil)
      if client < 0 { return }
      state.withLock { _open += 1 }
      let thread = Thread { [self] in serve(client) }
      thread.start()
    }
  }

  private func serve(_ client: Int32) {
    defer {
      close(client)
      state.withLock { _open -= 1 }
    }
    var timeout = timeval(tv_sec: 0, tv_usec: 20_000)
    setsockopt(
      client, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    var received: [UInt8] = []
    // The request, to its empty line.
    while !isStopping {
      var buffer = [UInt8](repeating: 0, count: 1024)
      let count = recv(client, &buffer, buffer.count, 0)
      if count == 0 { return }
      if count > 0 { received += buffer[0..<count] }
      if let end = received.firstRange(of: Array("\r\n\r\n".utf8)) {
        state.withLock {
          _requests.append(String(decoding: received[..<end.upperBound], as: UTF8.self))
        }
        received.removeSubrange(..<end.upperBound)
        break
      }
    }
    func send(_ bytes: [UInt8]) -> Bool {
      var sent = 0
      while sent < bytes.count {
        let count = bytes[sent...].withUnsafeBytes {
          Glibc.send(client, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
        }
        if count <= 0 { return false }
        sent += count
      }
      return true
    }
    var chunked: (size: Int, cuts: [Int])?
    switch answer {
    case .ntrip1:
      guard send(Array("ICY 200 OK\r\n".utf8)) else { return }
    case .ntrip2Chunked(let size, let cuts):
      chunked = (size, cuts)
      guard
        send(
          Array(
            "HTTP/1.1 200 OK\r\nNtrip-Version: Ntrip/2.0\r\nContent-Type: gnss/data\r\nTransfer-Encoding: chunked\r\n\r\n"
              .utf8))
      else { return }
    case .sourceTable(let mounts):
      var table = "SOURCETABLE 200 OK\r\nServer: TestCaster\r\nContent-Type: text/plain\r\n\r\n"
      for mount in mounts {
        table +=
          "STR;\(mount);\(mount);RTCM 3.3;1005(10);2;GPS;NET;DEU;47.0;8.0;1;0;T;none;B;N;0;\r\n"
      }
      _ = send(Array((table + "ENDSOURCETABLE\r\n").utf8))
      return
    case .unauthorized:
      _ = send(
        Array("HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Basic realm=\"x\"\r\n\r\n".utf8))
      return
    }
    var next = 0
    var cut = 0
    var body: [UInt8] = []
    while !isStopping {
      // GGA lines from the client.
      var buffer = [UInt8](repeating: 0, count: 1024)
      let count = recv(client, &buffer, buffer.count, Int32(MSG_DONTWAIT))
      if count == 0 { return }
      if count > 0 {
        received += buffer[0..<count]
        while let end = received.firstIndex(of: 0x0A) {
          let line = String(decoding: received[...end], as: UTF8.self)
          received.removeSubrange(...end)
          state.withLock { _positions.append(line) }
        }
      }
      guard !frames.isEmpty else {
        Thread.sleep(forTimeInterval: 0.02)
        continue
      }
      let frame = frames[next % frames.count]
      next += 1
      var bytes = frame
      if let (size, cuts) = chunked {
        body += frame
        bytes = []
        while body.count >= size {
          bytes +=
            Array(String(size, radix: 16).utf8) + [0x0D, 0x0A] + body[0..<size] + [0x0D, 0x0A]
          body.removeFirst(size)
        }
        // Written in pieces cut where the test asks, each after a pause, so that the client
        // reads them apart.
        while !bytes.isEmpty {
          let piece = max(1, cuts[cut % cuts.count])
          cut += 1
          guard send(Array(bytes.prefix(piece))) else { return }
          bytes.removeFirst(min(piece, bytes.count))
          Thread.sleep(forTimeInterval: 0.002)
        }
      } else {
        guard send(bytes) else { return }
      }
      let seconds =
        Double(interval.components.attoseconds) / 1e18 + Double(interval.components.seconds)
      Thread.sleep(forTimeInterval: seconds)
    }
  }
}
