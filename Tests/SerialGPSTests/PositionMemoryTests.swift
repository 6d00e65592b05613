import Chipsets
import Glibc
import NMEA
import POSIX
import SerialPort
import Testing

@testable import SerialGPS

@Suite struct PositionMemoryTests {
  static let taken = UTCTimestamp(secondsSinceUnixEpoch: 1_764_769_200, nanoseconds: 250_000_000)
  static let position = KnownPosition(
    latitude: 47.28521666666667, longitude: 8.56525, heightAboveEllipsoid: 594.6,
    altitudeMSL: 546.6, accuracy: 5.25, time: taken)

  static func directory() throws -> String {
    var template = Array("/tmp/serialgps-positions-XXXXXX".utf8CString)
    let made = template.withUnsafeMutableBufferPointer {
      mkdtemp($0.baseAddress!).map { String(cString: $0) }
    }
    return try #require(made)
  }

  static func files(in directory: String) -> [String] {
    guard let stream = opendir(directory) else { return [] }
    defer { closedir(stream) }
    var names: [String] = []
    while let entry = readdir(stream) {
      let name = withUnsafeBytes(of: entry.pointee.d_name) {
        String(cString: $0.bindMemory(to: CChar.self).baseAddress!)
      }
      if name != "." && name != ".." { names.append(name) }
    }
    return names.sorted()
  }

  static func later(_ seconds: Int64) -> UTCTimestamp {
    UTCTimestamp(secondsSinceUnixEpoch: taken.secondsSinceUnixEpoch + seconds)
  }

  @Test func aSavedPositionComesBackExactly() throws {
    let directory = try Self.directory()
    let memory = PositionMemory(directory: directory)
    try memory.save(Self.position, identity: "serial A1")
    #expect(memory.position(identity: "serial A1", now: Self.later(3600)) == Self.position)
    // Written whole: one file, no partial one left beside it.
    #expect(Self.files(in: directory) == ["serial_A1.position"])
  }

  @Test func anotherReceiversOrAnOldOrFutureFileIsIgnored() throws {
    let memory = PositionMemory(directory: try Self.directory())
    try memory.save(Self.position, identity: "serial A1")
    // Another receiver whose identity makes the same file name.
    #expect(memory.position(identity: "serial_A1", now: Self.later(60)) == nil)
    #expect(memory.position(identity: "serial A1", now: Self.later(86_400)) != nil)
    #expect(memory.position(identity: "serial A1", now: Self.later(86_401)) == nil)
    #expect(memory.position(identity: "serial A1", now: Self.later(-61)) == nil)
    #expect(memory.position(identity: "serial B2", now: Self.later(60)) == nil)
  }

  @Test(
    "a file that does not parse whole is no position",
    arguments: [
      "serialgps-position 2\nreceiver r\ntime 1764769200.250\nlatitude 1\nlongitude 2\naccuracy 3\n",
      "serialgps-position 1\nreceiver r\ntime 1764769200.250\nlatitude 1\nlongitude 2\naccuracy 3",
      "serialgps-position 1\nreceiver r\ntime 1764769200.250\nlatitude 91\nlongitude 2\naccuracy 3\n",
      "serialgps-position 1\nreceiver r\ntime 1764769200.25\nlatitude 1\nlongitude 2\naccuracy 3\n",
      "serialgps-position 1\nreceiver r\ntime 1764769200.250\nlatitude 1\naccuracy 3\n",
      "serialgps-position 1\nreceiver r\ntime 1764769200.250\nlatitude x\nlongitude 2\naccuracy 3\n",
      "serialgps-position 1\nreceiver r\ntime 1764769200.250\nlatitude 1\nlongitude 2\naccuracy -3\n",
      "",
    ])
  func malformed(text: String) throws {
    let directory = try Self.directory()
    let memory = PositionMemory(directory: directory)
    try FileSystem.writeWhole(Array(text.utf8), to: memory.path(for: "r"), durable: false)
    #expect(memory.position(identity: "r", now: Self.later(60)) == nil)
  }

  @Test func aWholeWriteThatFailsLeavesNothing() throws {
    let directory = try Self.directory()
    #expect(throws: Errno.self) {
      try FileSystem.writeWhole([1, 2, 3], to: directory + "/missing/file", durable: true)
    }
    #expect(Self.files(in: directory).isEmpty)
    // Replacing a file: the new content whole.
    let path = directory + "/file"
    try FileSystem.writeWhole(Array("old\n".utf8), to: path, durable: true)
    try FileSystem.writeWhole(Array("new content\n".utf8), to: path, durable: true)
    #expect(try FileDescriptor.contents(of: path) == Array("new content\n".utf8))
    #expect(Self.files(in: directory) == ["file"])
  }

  @Test func aKeptPositionAidsAFirstStart() throws {
    let memory = PositionMemory(directory: try Self.directory())
    try memory.save(Self.position, identity: "serial A1")
    let now = Self.later(600)
    let context = WakeContext(
      now: now, timeAccuracy: .milliseconds(50), family: .ublox,
      lastPosition: memory.position(identity: "serial A1", now: now))
    let data = try #require(WakePlan.aiding(for: context))
    #expect(data.position?.latitude == Self.position.latitude)
    // 5.25 m widened by its age, 599.75 s (taken at .250), at 50 m/s; the height above the
    // ellipsoid was kept.
    #expect(data.position?.accuracy == 5.25 + 50 * 599.75)
    #expect(data.position?.altitude == 594.6)
  }

  /// A file as `serve` writes it, with `line` in place of one of its figures.
  static func file(replacing key: String, with value: String) -> String {
    var lines = [
      "serialgps-position 1", "receiver r", "time 1764769200.250", "latitude 47.2852167",
      "longitude 8.5652500", "height 594.6", "altitude 546.6", "accuracy 5.0",
    ]
    let index = lines.firstIndex { $0.hasPrefix(key + " ") }!
    lines[index] = key + " " + value
    return lines.joined(separator: "\n") + "\n"
  }

  /// The figures that killed `serve` at every start (an integer conversion trapped in the
  /// aiding encoders) or reached the receiver as `$PMTK741,…,100000000000000000,…`.
  @Test(
    "a figure out of its range makes the file ignored, and says why",
    arguments: [
      ("height", "nan"), ("height", "-inf"), ("height", "1e300"), ("height", "9.3e18"),
      ("height", "1e17"), ("altitude", "inf"), ("accuracy", "inf"), ("accuracy", "1e17"),
      ("accuracy", "nan"), ("latitude", "nan"), ("longitude", "-inf"), ("latitude", "91"),
      ("accuracy", "-3"),
    ])
  func implausible(key: String, value: String) throws {
    let memory = PositionMemory(directory: try Self.directory())
    let text = Self.file(replacing: key, with: value)
    try FileSystem.writeWhole(Array(text.utf8), to: memory.path(for: "r"), durable: false)
    guard case .ignored(let reason) = memory.read(identity: "r", now: Self.later(60)) else {
      Issue.record("\(key) \(value) was taken")
      return
    }
    #expect(reason.contains("out of range"), "\(reason)")
    // In range, the same file is a position.
    let fine = Self.file(replacing: key, with: key == "accuracy" ? "7.5" : "12.5")
    try FileSystem.writeWhole(Array(fine.utf8), to: memory.path(for: "r"), durable: false)
    #expect(memory.position(identity: "r", now: Self.later(60)) != nil)
  }

  /// Reads the file of "r" on a thread of its own, so that a read that blocks (a FIFO's
  /// open) fails the test after `timeout` instead of hanging it.
  static func readWithin(
    _ memory: PositionMemory, timeout: Duration = .seconds(10)
  ) async -> PositionMemory.Reading? {
    let result = Locked<PositionMemory.Reading?>(nil)
    let thread = OwnThread.start(name: "position-read") {
      let reading = memory.read(identity: "r", now: Self.later(60))
      result.withLock { $0 = reading }
    }
    // Checked once more after the deadline: a loaded machine may oversleep it.
    let deadline = ContinuousClock.now + timeout
    while result.withLock({ $0 }) == nil, ContinuousClock.now < deadline {
      try? await Task.sleep(for: .milliseconds(10))
    }
    guard let reading = result.withLock({ $0 }) else { return nil }
    await thread.join()
    return reading
  }

  @Test func aFIFOIsNotWaitedFor() async throws {
    let memory = PositionMemory(directory: try Self.directory())
    let path = memory.path(for: "r")
    try #require(mkfifo(path, 0o600) == 0)
    let reading = await Self.readWithin(memory)
    if reading == nil {
      // Release the blocked open (a writer arrives) so that the process can go on.
      let writer = open(path, O_WRONLY | O_NONBLOCK)
      if writer >= 0 { close(writer) }
    }
    let ignored = try #require(reading, "the read blocked on the FIFO")
    #expect(ignored == .ignored(reason: PositionMemory.FileProblem.notRegular.description))
  }

  @Test func aLinkToADeviceIsNotFollowed() async throws {
    let memory = PositionMemory(directory: try Self.directory())
    try #require(symlink("/dev/zero", memory.path(for: "r")) == 0)
    let reading = try #require(await Self.readWithin(memory))
    #expect(reading == .ignored(reason: PositionMemory.FileProblem.symbolicLink.description))
  }

  @Test func aHugeSparseFileIsNotRead() async throws {
    let memory = PositionMemory(directory: try Self.directory())
    let path = memory.path(for: "r")
    let descriptor = open(path, O_WRONLY | O_CREAT, 0o600)
    try #require(descriptor >= 0)
    #expect(ftruncate(descriptor, 1 << 30) == 0)
    close(descriptor)
    let reading = try #require(await Self.readWithin(memory))
    #expect(reading == .ignored(reason: PositionMemory.FileProblem.tooLarge.description))
    // Nor a file just past the bound.
    let text = Self.file(replacing: "receiver", with: "r") + String(repeating: "#", count: 1_000)
    try FileSystem.writeWhole(Array(text.utf8), to: path, durable: false)
    #expect(
      memory.read(identity: "r", now: Self.later(60))
        == .ignored(reason: PositionMemory.FileProblem.tooLarge.description))
  }

  @Test func aDirectoryIsNoFile() async throws {
    let memory = PositionMemory(directory: try Self.directory())
    try #require(mkdir(memory.path(for: "r"), 0o700) == 0)
    let reading = try #require(await Self.readWithin(memory))
    #expect(reading == .ignored(reason: PositionMemory.FileProblem.notRegular.description))
  }

  /// Root only can give a file away; as another user the test has nothing to check.
  @Test(.enabled(if: geteuid() == 0, "needs root to chown a file to nobody"))
  func anotherUsersFileOrAnOpenDirectoryIsNotTrusted() throws {
    let directory = try Self.directory()
    let memory = PositionMemory(directory: directory)
    let path = memory.path(for: "r")
    let text = Self.file(replacing: "receiver", with: "r")
    try FileSystem.writeWhole(Array(text.utf8), to: path, durable: false)
    #expect(memory.position(identity: "r", now: Self.later(60)) != nil)
    let nobody = try #require(getpwnam("nobody")).pointee.pw_uid
    try #require(chown(path, nobody, nobody) == 0)
    #expect(
      memory.read(identity: "r", now: Self.later(60))
        == .ignored(reason: PositionMemory.FileProblem.owner(nobody).description))
    try #require(chown(path, 0, 0) == 0)
    // Anyone could have put the file there.
    try #require(chmod(directory, 0o777) == 0)
    #expect(
      memory.read(identity: "r", now: Self.later(60))
        == .ignored(reason: PositionMemory.FileProblem.writableDirectory.description))
    try #require(chmod(directory, 0o755) == 0)
    try #require(chown(directory, nobody, nobody) == 0)
    #expect(
      memory.read(identity: "r", now: Self.later(60))
        == .ignored(reason: PositionMemory.FileProblem.writableDirectory.description))
  }

  /// What a receiver's position is kept under stays the same when its node is made again
  /// (a replug, a reboot: a new creation time), unlike the awake marker's identity; another
  /// configured device is another receiver.
  @Test func aReceiverOnANewNodeFindsItsPosition() throws {
    let directory = try Self.directory()
    let link = directory + "/gps"
    let first = try PseudoTerminal()
    defer { first.hangUp() }
    try #require(symlink(first.devicePath, link) == 0)
    let before = SerialConnector(path: link, baud: .fixed(.b9600))
    let beforeMarker = try #require(before.markerIdentity)
    let memory = PositionMemory(directory: directory)
    try memory.save(Self.position, identity: try #require(before.positionIdentity))
    // Replugged: the same name, a new node.
    let second = try PseudoTerminal()
    defer { second.hangUp() }
    try #require(unlink(link) == 0 && symlink(second.devicePath, link) == 0)
    let after = SerialConnector(path: link, baud: .fixed(.b9600))
    #expect(after.markerIdentity != beforeMarker)
    let identity = try #require(after.positionIdentity)
    #expect(memory.position(identity: identity, now: Self.later(60)) == Self.position)
    // Another receiver, configured as another device, finds nothing.
    let other = SerialConnector(path: first.devicePath, baud: .fixed(.b9600))
    let otherIdentity = try #require(other.positionIdentity)
    #expect(memory.position(identity: otherIdentity, now: Self.later(60)) == nil)
  }
}
