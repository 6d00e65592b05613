import Foundation
import Glibc
import NMEA
import POSIX
import SerialGPS
import Testing

@testable import NTRIP

/// The client against RTKLIB's caster: `str2str -in tcpsvr://:IN -out ntripc://…:OUT/MOUNT`,
/// fed the frames of fixtures/rtcm3-stream.rtcm3 (scripts/make-rtcm3-fixture.py) by the test,
/// one corrupted on the way now and then.
@Suite("NTRIPClient against str2str", .serialized, .enabled(if: Str2str.path != nil))
struct Str2strTests {
  static let fixture: [[UInt8]] = {
    let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
      .deletingLastPathComponent().deletingLastPathComponent()
      .appendingPathComponent("fixtures/rtcm3-stream.rtcm3")
    let bytes = (try? [UInt8](Data(contentsOf: url))) ?? []
    var framer = NMEAFramer()
    var frames: [[UInt8]] = []
    framer.feed(bytes) { frame in
      if case .rtcm3 = frame { frames.append(frame.bytes) }
    }
    return frames
  }()

  @Test("the fixture is 150 valid frames, every byte in one")
  func fixtureIsValid() throws {
    #expect(Self.fixture.count == 150)
    #expect(Self.fixture.reduce(0) { $0 + $1.count } == 54_750)
  }

  @Test(
    "connected only while watched; whole valid frames only; a corrupted one refused")
  func followsWatcher() async throws {
    let caster = try Str2str()
    defer { caster.stop() }
    let feeder = try caster.feed(Self.fixture, corruptEvery: 7)
    defer { feeder.stop() }
    let (receiver, connector) = makeReceiver()
    let client = try NTRIPClient(
      receiver: receiver, configuration: caster.configuration(), options: .init())

    // Nobody watches: no connection to the caster.
    try await Task.sleep(for: .seconds(1))
    #expect(caster.established() == 0)
    #expect(client.statistics.connections == 0)

    for round in 1...2 {
      let subscription = receiver.subscribe { _ in }
      #expect(await eventually { caster.established() == 1 })
      #expect(await eventually { client.statistics.framesForwarded >= 20 * round })
      subscription.cancel()
      #expect(await eventually { !connector.isOpen })
      #expect(await eventually { caster.established() == 0 })
    }
    await client.stop()
    await receiver.shutdown()

    let written = connector.all.flatMap(\.written).filter { $0.first == 0xD3 }
    let valid = Set(Self.fixture)
    #expect(!written.isEmpty)
    for frame in written { #expect(valid.contains(frame)) }
    let statistics = client.statistics
    #expect(written.count <= statistics.framesForwarded)
    #expect(written.count >= 20)
    #expect(statistics.framesRefused >= 1)
    #expect(statistics.connections == 2)
  }

  @Test("a wrong password: the caster's 401 as a clear error")
  func wrongPassword() async throws {
    let caster = try Str2str()
    defer { caster.stop() }
    let (receiver, _) = makeReceiver()
    var configuration = caster.configuration()
    configuration.caster.credentials = NTRIPCredentials(user: "user", password: "wrong")
    let client = try NTRIPClient(receiver: receiver, configuration: configuration)
    let subscription = receiver.subscribe { _ in }
    #expect(await eventually { client.stoppedBy != nil })
    #expect(client.stoppedBy == .unauthorized(mountpoint: "MOUNT"))
    subscription.cancel()
    await client.stop()
    await receiver.shutdown()
  }

  @Test("a wrong mountpoint: the error names the one str2str offers")
  func wrongMountpoint() async throws {
    let caster = try Str2str()
    defer { caster.stop() }
    let (receiver, _) = makeReceiver()
    var configuration = caster.configuration()
    configuration.caster.mountpoint = "NOPE"
    let client = try NTRIPClient(receiver: receiver, configuration: configuration)
    let subscription = receiver.subscribe { _ in }
    #expect(await eventually { client.stoppedBy != nil })
    #expect(
      client.stoppedBy == .mountpointNotOffered(mountpoint: "NOPE", offered: ["MOUNT"], more: 0))
    subscription.cancel()
    await client.stop()
    await receiver.shutdown()
  }
}

/// A receiver in memory that powers off at once when its last subscriber leaves.
func makeReceiver() -> (GPSReceiver, MemoryConnector) {
  let connector = MemoryConnector()
  var options = GPSReceiver.Options()
  options.chipset = .family(.nmea)
  options.linger = .zero
  options.awakeMarkers = nil
  return (GPSReceiver(connector: connector, options: options), connector)
}

/// A free loopback port (bound and released; the tests run one caster at a time).
func freePort() throws -> UInt16 {
  let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
  defer { close(descriptor) }
  var address = sockaddr_in()
  address.sin_family = sa_family_t(AF_INET)
  address.sin_addr.s_addr = inet_addr("127.0.0.1")
  var length = socklen_t(MemoryLayout<sockaddr_in>.size)
  let bound = withUnsafeMutablePointer(to: &address) {
    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
      bind(descriptor, pointer, length) == 0 && getsockname(descriptor, pointer, &length) == 0
    }
  }
  try #require(bound)
  return UInt16(bigEndian: address.sin_port)
}

/// RTKLIB's str2str as an NTRIP caster on loopback ports.
final class Str2str: @unchecked Sendable {
  static let path = ["/usr/bin/str2str", "/usr/local/bin/str2str"].first {
    FileManager.default.isExecutableFile(atPath: $0)
  }

  let input: UInt16
  let output: UInt16
  private let process = Process()

  init() throws {
    input = try freePort()
    output = try freePort()
    guard let path = Self.path else { throw TestSetupError("str2str is not installed") }
    process.executableURL = URL(fileURLWithPath: path)
    process.arguments = [
      "-in", "tcpsvr://:\(input)", "-out", "ntripc://user:pass@:\(output)/MOUNT",
    ]
    process.standardOutput = FileHandle.nullDevice
    process.standardError = FileHandle.nullDevice
    try process.run()
    // Ready once both ports listen.
    let deadline = ContinuousClock.now + .seconds(10)
    while ContinuousClock.now < deadline && !(Self.listens(input) && Self.listens(output)) {
      Thread.sleep(forTimeInterval: 0.05)
    }
  }

  func configuration() -> NTRIPSession.Configuration {
    var configuration = NTRIPSession.Configuration(
      caster: NTRIPCaster(
        host: "127.0.0.1", port: Int(output), mountpoint: "MOUNT",
        credentials: NTRIPCredentials(user: "user", password: "pass")))
    configuration.positionInterval = nil
    configuration.reconnectDelay = .milliseconds(100)
    return configuration
  }

  /// Connections the caster has open to NTRIP clients now, as the kernel lists them.
  func established() -> Int {
    let ss = Process()
    ss.executableURL = URL(fileURLWithPath: "/usr/bin/ss")
    ss.arguments = ["-Htn", "state", "established", "( sport = :\(output) )"]
    let pipe = Pipe()
    ss.standardOutput = pipe
    guard (try? ss.run()) != nil else { return -1 }
    let data = pipe.fileHandleForReading.readDataToEndOfFile()
    ss.waitUntilExit()
    return String(decoding: data, as: UTF8.self).split(separator: "\n").count
  }

  static func listens(_ port: UInt16) -> Bool {
    let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(descriptor) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = port.bigEndian
    return withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
      }
    }
  }

  /// Writes `frames` to the caster's input in turn, one every 10 ms, every `corruptEvery`th
  /// with one bit flipped; until stopped.
  func feed(_ frames: [[UInt8]], corruptEvery: Int) throws -> Feeder {
    try Feeder(port: input, frames: frames, corruptEvery: corruptEvery)
  }

  /// SIGKILL: str2str inherits the test process's blocked SIGINT and SIGTERM, so it would
  /// never see them. Polls: `waitUntilExit` needs a run loop.
  func stop() {
    kill(process.processIdentifier, SIGKILL)
    while process.isRunning { Thread.sleep(forTimeInterval: 0.01) }
  }

  final class Feeder: @unchecked Sendable {
    private let running = Locked(true)
    private let thread: Thread

    init(port: UInt16, frames: [[UInt8]], corruptEvery: Int) throws {
      let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
      var address = sockaddr_in()
      address.sin_family = sa_family_t(AF_INET)
      address.sin_addr.s_addr = inet_addr("127.0.0.1")
      address.sin_port = port.bigEndian
      let connected = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
          connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
        }
      }
      guard connected else { throw TestSetupError("connect to str2str's input") }
      let running = self.running
      thread = Thread {
        defer { close(descriptor) }
        var index = 0
        while running.withLock({ $0 }) {
          var frame = frames[index % frames.count]
          if index % corruptEvery == corruptEvery - 1 { frame[frame.count / 2] ^= 0x20 }
          index += 1
          let sent = frame.withUnsafeBytes {
            send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
          }
          if sent <= 0 { return }
          Thread.sleep(forTimeInterval: 0.01)
        }
      }
      thread.start()
    }

    func stop() { running.withLock { $0 = false } }
  }
}
