import Foundation
import SerialPort
import Testing

/// A blocked reader sleeps in poll with no timeout; these show what wakes it. Each reader is
/// given a long timeout (60 s) only so that a broken wake-up fails the test instead of hanging
/// it: a read that ends in `.timedOut` means the wake-up never came. Each wake-up is done
/// from a thread of its own the moment the reader sleeps: a test task resumed late by a busy
/// cooperative pool would otherwise let the reader's 60 s run out first.
@Suite("Waking a blocked reader: interrupt, close, hang-up")
struct WakeUpTests {
  @Test func interruptWakesABlockedReader() async throws {
    let pty = try PseudoTerminal()
    let port = try SerialPort.open(path: pty.devicePath, baudRate: 9600)
    defer { port.close() }
    let reader = Background { try port.readOnce(timeout: .seconds(60)) }
    let start = try await onOwnThread { () -> ContinuousClock.Instant in
      _ = waitUntilAsleepInPollBlocking(tid: reader.tid)
      let start = ContinuousClock.now
      port.interrupt()
      return start
    }
    let result = try #require(await reader.result(within: .seconds(30))).get()
    #expect(result == .interrupted)
    // Measured where the read returned: the test task itself may wait long for the pool.
    let woke = try #require(reader.finishedAt)
    #expect(woke - start < .seconds(30))
  }

  @Test func interruptIsLatchedUntilAReadConsumesIt() async throws {
    let pty = try PseudoTerminal()
    let port = try SerialPort.open(path: pty.devicePath, baudRate: 9600)
    defer { port.close() }
    let (first, second) = try await onOwnThread { () throws in
      port.interrupt()
      port.interrupt()  // coalesces with the first
      let first = try port.readOnce(timeout: .seconds(60))
      return (first, try port.readOnce(timeout: .milliseconds(50)))
    }
    #expect(first == .interrupted)
    #expect(second == .timedOut)
  }

  @Test func interruptLeavesQueuedDataForTheNextRead() async throws {
    let pty = try PseudoTerminal()
    let port = try SerialPort.open(path: pty.devicePath, baudRate: 9600)
    defer { port.close() }
    let (first, bytes) = try await onOwnThread { () throws in
      try pty.write(validSentence)
      port.interrupt()
      let first = try port.readOnce(timeout: .seconds(60))
      return (first, try port.readExactly(validSentence.count))
    }
    #expect(first == .interrupted)
    #expect(bytes == validSentence)
  }

  @Test func hangUpWakesABlockedReaderWithDisconnected() async throws {
    let pty = try PseudoTerminal()
    let port = try SerialPort.open(path: pty.devicePath, baudRate: 9600)
    defer { port.close() }
    let reader = Background { try port.readOnce(timeout: .seconds(60)) }
    try await onOwnThread {
      _ = waitUntilAsleepInPollBlocking(tid: reader.tid)
      pty.hangUp()
    }
    let outcome = try #require(await reader.result(within: .seconds(30)))
    guard case .failure(let error as SerialPortError) = outcome else {
      Issue.record("expected a disconnection, got \(outcome)")
      return
    }
    #expect(error.isDisconnected)
    #expect(error.operation == .read)
    #expect(error.description.hasPrefix("\(pty.devicePath) went away while reading"))
    #expect(error.description.contains("closed and opened again"))
  }

  /// What arrived before the hang-up is delivered; then reads and writes report it.
  @Test func dataBeforeHangUpIsDeliveredFirst() async throws {
    let pty = try PseudoTerminal()
    let port = try SerialPort.open(path: pty.devicePath, baudRate: 9600)
    defer { port.close() }
    let (bytes, afterRead, afterWrite) = try await onOwnThread { () throws in
      try pty.write(validSentence)
      let bytes = try port.readExactly(validSentence.count)
      pty.hangUp()
      let afterRead = Result { () throws(SerialPortError) in
        try port.readOnce(timeout: .seconds(60))
      }
      let afterWrite = Result { () throws(SerialPortError) in try port.write(validSentence) }
      return (bytes, afterRead, afterWrite)
    }
    #expect(bytes == validSentence)
    guard case .failure(let readError) = afterRead, case .failure(let writeError) = afterWrite
    else {
      Issue.record("read or write after hang-up succeeded: \(afterRead), \(afterWrite)")
      return
    }
    #expect(readError.isDisconnected)
    #expect(readError.operation == .read)
    #expect(writeError.isDisconnected)
    #expect(writeError.operation == .write)
    // Closing a port whose device went away still works (restoring settings fails quietly).
    port.close()
    #expect(port.isClosed)
  }

  @Test func closeWakesABlockedReaderAndWaitsForIt() async throws {
    let pty = try PseudoTerminal()
    let port = try SerialPort.open(path: pty.devicePath, baudRate: 9600)
    let original = try pty.deviceSettings()
    let reader = Background { try port.readOnce(timeout: .seconds(60)) }
    try await onOwnThread {
      _ = waitUntilAsleepInPollBlocking(tid: reader.tid)
      port.close()
    }
    let outcome = try #require(await reader.result(within: .seconds(30)))
    guard case .failure(let error as SerialPortError) = outcome else {
      Issue.record("expected closed, got \(outcome)")
      return
    }
    #expect(error.reason == .closed)
    #expect(try pty.deviceSettings() == original)
    #expect(throws: SerialPortError.self) { try port.readOnce(timeout: .zero) }
    port.interrupt()  // a no-op once closed
  }

  @Test func closeWakesAWriterWaitingForRoom() async throws {
    let pty = try PseudoTerminal()
    let port = try SerialPort.open(path: pty.devicePath, baudRate: 9600)
    let writer = Background { try port.write(pattern(1 << 20)) }
    try await onOwnThread {
      _ = waitUntilAsleepInPollBlocking(tid: writer.tid)
      port.close()
    }
    let outcome = try #require(await writer.result(within: .seconds(30)))
    guard case .failure(let error as SerialPortError) = outcome else {
      Issue.record("expected closed, got \(outcome)")
      return
    }
    #expect(error.reason == .closed)
    #expect(error.operation == .write)
  }

  @Test func hangUpWakesTheControllerReader() async throws {
    let pty = try PseudoTerminal()
    let reader = Background { try pty.read(upTo: 16, timeout: .seconds(60)) }
    try await onOwnThread {
      _ = waitUntilAsleepInPollBlocking(tid: reader.tid)
      pty.hangUp()
    }
    let outcome = try #require(await reader.result(within: .seconds(30)))
    guard case .failure(let error as SerialPortError) = outcome else {
      Issue.record("expected closed, got \(outcome)")
      return
    }
    #expect(error.reason == .closed)
    #expect(pty.isHungUp)
  }
}
