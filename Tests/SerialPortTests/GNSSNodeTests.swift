import Foundation
import Glibc
import SerialPort
import Testing

/// A node without termios, as the kernel's GNSS devices (`/dev/gnss0`) are: `tcgetattr`
/// answers ENOTTY, there is no rate, and the driver powers the receiver while it is open. A
/// FIFO stands in for one here (a gnss node needs the kernel's GNSS core and a receiver): it
/// too is a node that `open(2)` opens and `tcgetattr` refuses with ENOTTY.
@Suite("A node without termios (a kernel GNSS device)")
struct GNSSNodeTests {
  /// A FIFO in a directory of its own, with a lock directory beside it.
  final class Node {
    let directory: String
    var path: String { directory + "/gnss0" }
    var lockDirectory: String { directory + "/lock" }
    /// The test's own end, opened read-write so that opening never waits for the other side;
    /// it only ever writes, or reads what the port wrote.
    let end: Int32

    init() throws {
      var template = Array("/tmp/serialgps-gnss-XXXXXX".utf8CString)
      guard let made = mkdtemp(&template) else { throw Failure("mkdtemp: errno \(errno)") }
      directory = String(cString: made)
      guard mkfifo(directory + "/gnss0", 0o600) == 0, mkdir(directory + "/lock", 0o755) == 0
      else { throw Failure("mkfifo: errno \(errno)") }
      end = open(directory + "/gnss0", O_RDWR | O_NONBLOCK | O_CLOEXEC)
      guard end >= 0 else { throw Failure("open: errno \(errno)") }
    }

    deinit {
      close(end)
      unlink(path)
      if let entries = try? FileManager.default.contentsOfDirectory(atPath: lockDirectory) {
        for entry in entries { unlink(lockDirectory + "/" + entry) }
      }
      rmdir(lockDirectory)
      rmdir(directory)
    }

    func send(_ bytes: [UInt8]) {
      let written = bytes.withUnsafeBytes { write(end, $0.baseAddress, $0.count) }
      precondition(written == bytes.count)
    }

    /// What is in the FIFO now (what the port wrote), without waiting.
    func take() -> [UInt8] {
      var buffer = [UInt8](repeating: 0, count: 4096)
      let count = read(end, &buffer, buffer.count)
      return count > 0 ? Array(buffer[..<count]) : []
    }
  }

  struct Failure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
  }

  @Test func opensWithoutTermiosAndCarriesBytesBothWays() async throws {
    let node = try Node()
    let port = try SerialPort.open(
      path: node.path, baudRate: 9600, lockDirectory: node.lockDirectory)
    defer { port.close() }
    #expect(!port.isTerminal)
    #expect(!port.supportsModemLines)
    #expect(!port.isExclusive, "TIOCEXCL is a tty's")
    #expect(port.lockFile == node.lockDirectory + "/LCK..gnss0")

    node.send(validSentence)
    let received = try await onOwnThread { try port.readExactly(validSentence.count) }
    #expect(received == validSentence)

    // No tcdrain: a write is done when write(2) returns.
    let command = Array("$PMTK161,0*28\r\n".utf8)
    try await onOwnThread { try port.write(command, timeout: .seconds(5)) }
    #expect(node.take() == command)

    try port.flushInput()  // nothing to flush: not an error
    do {
      try port.setBaudRate(115_200)
      Issue.record("set a rate on a node without termios")
    } catch {
      #expect(error.reason == .notATerminal)
      #expect(error.description.contains("has no line settings"), "\(error.description)")
    }
    #expect(port.baudRate == 9600)
  }

  @Test func oneOwnerAtATimeAndClosingLetsGo() throws {
    let node = try Node()
    let first = try SerialPort.open(
      path: node.path, baudRate: 9600, lockDirectory: node.lockDirectory)
    do {
      _ = try SerialPort.open(path: node.path, baudRate: 9600, lockDirectory: node.lockDirectory)
      Issue.record("opened a node another port holds")
    } catch {
      guard case .inUse(let owner) = error.reason else {
        Issue.record("not inUse: \(error)")
        return
      }
      #expect(owner.processID == getpid())
    }
    first.close()
    #expect(first.isClosed)
    #expect(access(node.lockDirectory + "/LCK..gnss0", F_OK) != 0, "the lock file is gone")
    let second = try SerialPort.open(
      path: node.path, baudRate: 9600, lockDirectory: node.lockDirectory)
    second.close()
  }

  @Test func aRegularFileIsStillNoSerialPort() throws {
    let node = try Node()
    let file = node.directory + "/not-a-device"
    #expect(FileManager.default.createFile(atPath: file, contents: Data()))
    defer { unlink(file) }
    do {
      _ = try SerialPort.open(path: file, baudRate: 9600, lockDirectory: nil)
      Issue.record("opened a regular file as a serial port")
    } catch {
      #expect(error.reason == .notATerminal)
      #expect(error.description.contains("/dev/gnss0"), "names the GNSS devices too")
    }
  }
}
