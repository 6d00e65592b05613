import Chipsets
import Glibc
import NMEA
import POSIX
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
}
