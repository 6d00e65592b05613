import Foundation
import SerialPort
import Testing

@Suite("PseudoTerminal: a receiver that can be unplugged and replugged")
struct PseudoTerminalTests {
  func temporaryDirectory() throws -> URL {
    let url = FileManager.default.temporaryDirectory
      .appendingPathComponent("serialgps-pty-\(getpid())-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
  }

  @Test func deviceSideStartsRawAndNothingEchoes() async throws {
    let pty = try PseudoTerminal()
    #expect(pty.devicePath.hasPrefix("/dev/pts/"))
    #expect(try pty.deviceSettings().isRaw8N1)
    try pty.write(validSentence)
    // A cooked tty would echo the sentence back to the controller.
    let echoed = try await onOwnThread { try pty.read(upTo: 256, timeout: .milliseconds(200)) }
    #expect(echoed.isEmpty)
  }

  @Test func aSymlinkGivesAStableNameAcrossAReplug() async throws {
    let directory = try temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: directory) }
    let link = directory.appendingPathComponent("gps0").path

    let first = try PseudoTerminal(symlink: link)
    #expect(first.symlinkPath == link)
    #expect(try FileManager.default.destinationOfSymbolicLink(atPath: link) == first.devicePath)

    let port = try SerialPort.open(path: link, baudRate: 9600)
    defer { port.close() }
    first.hangUp()
    #expect(!FileManager.default.fileExists(atPath: link))
    let outcome = try await onOwnThread {
      Result { () throws(SerialPortError) in try port.readOnce(timeout: .seconds(60)) }
    }
    guard case .failure(let error) = outcome else {
      Issue.record("read after unplug: \(outcome)")
      return
    }
    #expect(error.isDisconnected)
    #expect(error.description.hasPrefix("\(link) went away"))

    let second = try PseudoTerminal(symlink: link)
    #expect(second.devicePath != first.devicePath)
    #expect(try FileManager.default.destinationOfSymbolicLink(atPath: link) == second.devicePath)
    let reopened = try SerialPort.open(path: link, baudRate: 9600)
    reopened.close()

    // A newer pair that took the name over keeps it when the older one hangs up.
    let third = try PseudoTerminal(symlink: link)
    second.hangUp()
    #expect(try FileManager.default.destinationOfSymbolicLink(atPath: link) == third.devicePath)
    third.hangUp()
    #expect(!FileManager.default.fileExists(atPath: link))
  }

  @Test func aSymlinkNeverReplacesARealFile() throws {
    let directory = try temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: directory) }
    let path = directory.appendingPathComponent("not-a-link").path
    #expect(FileManager.default.createFile(atPath: path, contents: Data("keep".utf8)))
    #expect(throws: SerialPortError.self) { try PseudoTerminal(symlink: path) }
    #expect(FileManager.default.contents(atPath: path) == Data("keep".utf8))
  }
}
