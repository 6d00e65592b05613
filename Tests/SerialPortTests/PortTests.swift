import Foundation
import SerialPort
import Testing

@Suite("Opening, configuring, reading and writing through a pty")
struct PortTests {
  @Test func openConfiguresRawAndCloseRestores() throws {
    let pty = try PseudoTerminal()
    var before = try pty.deviceSettings()
    before.isCanonicalWithEcho = true
    before.setBaudRate(4800)
    try pty.setDeviceSettings(before)
    let original = try pty.deviceSettings()
    #expect(!original.isRaw8N1)

    let port = try SerialPort.open(path: pty.devicePath, baudRate: 115_200)
    let configured = try pty.deviceSettings()
    #expect(configured.isRaw8N1)
    #expect(configured.baudRate == 115_200)
    #expect(configured.minimumReadCount == 1)
    #expect(configured.readTimeoutTenths == 0)
    #expect(port.baudRate == 115_200)
    #expect(!port.isClosed)

    port.close()
    #expect(port.isClosed)
    #expect(try pty.deviceSettings() == original)
    port.close()  // idempotent
    #expect(try pty.deviceSettings() == original)
  }

  @Test func closingByDroppingTheLastReferenceRestores() throws {
    let pty = try PseudoTerminal()
    let original = try pty.deviceSettings()
    do {
      let port = try SerialPort.open(path: pty.devicePath, baudRate: 57600)
      #expect(try pty.deviceSettings().baudRate == 57600)
      _ = port
    }
    #expect(try pty.deviceSettings() == original)
  }

  @Test func bytesTravelBothWays() async throws {
    let pty = try PseudoTerminal()
    let port = try SerialPort.open(path: pty.devicePath, baudRate: 9600)
    defer { port.close() }
    let (atController, atPort) = try await onOwnThread {
      try port.write(Array("$PMTK161,0*28\r\n".utf8))
      let atController = try pty.readExactly(15)
      try pty.write(validSentence)
      return (atController, try port.readExactly(validSentence.count))
    }
    #expect(atController == Array("$PMTK161,0*28\r\n".utf8))
    #expect(atPort == validSentence)
  }

  /// More than any tty buffer holds, so both writers must wait in poll for room.
  @Test func largeWritesArriveWhole() async throws {
    let pty = try PseudoTerminal()
    let port = try SerialPort.open(path: pty.devicePath, baudRate: 921_600)
    defer { port.close() }
    let outbound = pattern(1 << 20)
    let inbound = Array(pattern(3 << 19).reversed())
    // One limit for every blocking step: a reader that gives up (or throws) leaves its writer
    // with nobody to make room, so the writes carry it too and fail instead of hanging.
    let limit = Duration.seconds(120)

    let toController = Background { try pty.readExactly(outbound.count, timeout: limit) }
    let toPort = Background { try port.readExactly(inbound.count, timeout: limit) }
    try await onOwnThread { try port.write(outbound, timeout: limit) }
    try await onOwnThread { try pty.write(inbound, timeout: limit) }

    let received = try #require(await toController.result(within: limit)).get()
    #expect(received == outbound)
    let receivedByPort = try #require(await toPort.result(within: limit)).get()
    #expect(receivedByPort == inbound)
  }

  @Test func readTimesOut() async throws {
    let pty = try PseudoTerminal()
    let port = try SerialPort.open(path: pty.devicePath, baudRate: 9600)
    defer { port.close() }
    // Assertions stay on the test's own task: Swift Testing cannot attribute an #expect made
    // on another thread to this test.
    let (first, waited, immediate, pastDeadline) = try await onOwnThread { () throws in
      let start = ContinuousClock.now
      let first = try port.readOnce(timeout: .milliseconds(200))
      let waited = ContinuousClock.now - start
      var buffer = [UInt8](repeating: 0, count: 8)
      let past = ContinuousClock.now.advanced(by: .seconds(-1))
      let pastDeadline = try buffer.withUnsafeMutableBytes {
        try port.read(into: $0, deadline: past)
      }
      return (first, waited, try port.readOnce(timeout: .zero), pastDeadline)
    }
    #expect(first == .timedOut)
    // Never early; no upper bound, the machine may be loaded.
    #expect(waited >= .milliseconds(200))
    #expect(immediate == .timedOut)
    #expect(pastDeadline == .timedOut)
  }

  @Test func writeTimesOutWhenNobodyReads() async throws {
    let pty = try PseudoTerminal()
    let port = try SerialPort.open(path: pty.devicePath, baudRate: 9600)
    defer { port.close() }
    let total = 1 << 20
    let outcome = try await onOwnThread {
      Result { () throws(SerialPortError) in
        try port.write(pattern(total), timeout: .milliseconds(300))
      }
    }
    guard case .failure(let error) = outcome,
      case .writeTimedOut(let after, let written, let of) = error.reason
    else {
      Issue.record("expected a write timeout, got \(outcome)")
      return
    }
    #expect(after == .milliseconds(300))
    #expect(written > 0 && written < total)
    #expect(of == total)
    #expect(error.description.contains("Writing to \(pty.devicePath) timed out"))
    #expect(error.description.contains("of \(total) bytes"))
  }

  @Test func setBaudRateChangesTheLine() throws {
    let pty = try PseudoTerminal()
    let port = try SerialPort.open(path: pty.devicePath, baudRate: 9600)
    defer { port.close() }
    try port.setBaudRate(.b38400)
    #expect(port.baudRate == .b38400)
    #expect(try pty.deviceSettings().baudRate == .b38400)
    #expect(try pty.deviceSettings().isRaw8N1)
    #expect(throws: SerialPortError.self) { try port.setBaudRate(300) }
    #expect(port.baudRate == .b38400)
  }

  @Test func flushInputDropsWhatWasQueued() async throws {
    let pty = try PseudoTerminal()
    let port = try SerialPort.open(path: pty.devicePath, baudRate: 9600)
    defer { port.close() }
    let (first, afterFlush) = try await onOwnThread {
      try pty.write(Array("junk".utf8))
      // Reading one byte shows the write has reached the port; the rest is queued with it.
      let first = try port.readExactly(1)
      try port.flushInput()
      try pty.write(Array("ok".utf8))
      return (first, try port.readExactly(2))
    }
    #expect(first == Array("j".utf8))
    #expect(afterFlush == Array("ok".utf8))
  }

  @Test func bytesWaitingCountsWhatNoReadHasTaken() async throws {
    let pty = try PseudoTerminal()
    let port = try SerialPort.open(path: pty.devicePath, baudRate: 9600)
    let (before, queued, after) = try await onOwnThread {
      let before = try port.bytesWaiting()
      try pty.write(Array("$GNRMC".utf8))
      // Reading one byte shows the write has reached the port; the rest is queued with it.
      _ = try port.readExactly(1)
      let queued = try port.bytesWaiting()
      _ = try port.readExactly(queued)
      return (before, queued, try port.bytesWaiting())
    }
    #expect(before == 0)
    #expect(queued == 5)
    #expect(after == 0)
    port.close()
    #expect(throws: SerialPortError.self) { try port.bytesWaiting() }
  }

  @Test func modemLinesAreOptionalOnAPty() throws {
    let pty = try PseudoTerminal()
    let port = try SerialPort.open(path: pty.devicePath, baudRate: 9600)
    defer { port.close() }
    #expect(!port.supportsModemLines)
    #expect(try port.setModemLines([.dataTerminalReady, .requestToSend], raised: false) == false)
  }
}
