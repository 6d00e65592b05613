import Foundation
import SerialPort
import Testing

/// A receiver on a pty that sends checksum-valid NMEA only while the port is at `rate`, and
/// line noise otherwise, as a UART at the wrong rate would deliver. A pty ignores the rate, so
/// the stand-in reads the rate the port chose from the device side's settings before each
/// burst. With `rate` nil it sends only noise; with `.any` it sends valid data at every rate.
final class TalkingReceiver: @unchecked Sendable {
  enum Talks { case at(BaudRate), any, never }

  private let lock = NSLock()
  private var stopped = false
  private var thread: Background<Void>? = nil
  private let pty: PseudoTerminal
  private static let noise: [UInt8] = [0xF8, 0x00, 0x7E, 0xE0, 0x80, 0xFE, 0x1C, 0x98, 0x06, 0xF0]

  init(on pty: PseudoTerminal, talks: Talks) {
    self.pty = pty
    thread = Background { [self] in
      // A test that fails before calling stop() must not leave this running for ever.
      let end = ContinuousClock.now.advanced(by: .seconds(120))
      while !isStopped && ContinuousClock.now < end {
        let rate = (try? pty.deviceSettings())?.baudRate
        let valid: Bool =
          switch talks {
          case .at(let wanted): rate == wanted
          case .any: true
          case .never: false
          }
        // The port stops reading between rates and after the search: a full pty buffer
        // must not wedge this thread.
        do throws(SerialPortError) {
          try pty.write(valid ? validSentence : Self.noise, timeout: .milliseconds(200))
        } catch {
          if case .writeTimedOut = error.reason { continue }
          return
        }
        Thread.sleep(forTimeInterval: 0.01)
      }
    }
  }

  private var isStopped: Bool {
    lock.lock()
    defer { lock.unlock() }
    return stopped
  }

  func stop() async {
    lock.withLock { stopped = true }
    _ = await thread?.result(within: .seconds(30))
  }
}

/// Counts calls to a recogniser from another thread.
final class Counter: @unchecked Sendable {
  private let lock = NSLock()
  private var value = 0
  func increment() {
    lock.lock()
    value += 1
    lock.unlock()
  }
  var count: Int {
    lock.lock()
    defer { lock.unlock() }
    return value
  }
}

@Suite("Autobaud: listening for the rate on a pty")
struct AutobaudTests {
  @Test func searchOrderPutsTheRememberedRateFirst() {
    var memory = BaudRateMemory()
    let candidates: [BaudRate] = [9600, 4800, 38400]
    #expect(memory.searchOrder(for: "/dev/ttyUSB0", candidates: candidates) == candidates)
    memory.remember(38400, for: "/dev/ttyUSB0")
    #expect(memory.rate(for: "/dev/ttyUSB0") == 38400)
    #expect(memory.searchOrder(for: "/dev/ttyUSB0", candidates: candidates) == [38400, 9600, 4800])
    #expect(memory.searchOrder(for: "/dev/ttyUSB1", candidates: candidates) == candidates)
    memory.remember(115_200, for: "/dev/ttyUSB0")
    #expect(
      memory.searchOrder(for: "/dev/ttyUSB0", candidates: candidates)
        == [115_200, 9600, 4800, 38400])
    #expect(memory.searchOrder(for: "/dev/ttyUSB0", candidates: [9600, 9600]) == [115_200, 9600])
    memory.forget("/dev/ttyUSB0")
    #expect(memory.rate(for: "/dev/ttyUSB0") == nil)
  }

  @Test func findsTheRateInOrderAndRemembersIt() async throws {
    let pty = try PseudoTerminal()
    let original = try pty.deviceSettings()
    let receiver = TalkingReceiver(on: pty, talks: .at(38400))
    let path = pty.devicePath

    let (first, memory) = try await onOwnThread {
      var memory = BaudRateMemory()
      let detection = try Autobaud.detect(
        path: path, timePerRate: .seconds(1), memory: &memory,
        recognises: containsChecksumValidSentence)
      return (detection, memory)
    }
    #expect(first.rate == 38400)
    #expect(first.triedRates == [9600, 4800, 38400])
    // What was heard at the rate found comes back, ending with the sentence that decided it.
    #expect(containsChecksumValidSentence(first.heard))
    #expect(first.heard.suffix(validSentence.count).elementsEqual(validSentence))
    #expect(memory.rate(for: path) == 38400)
    #expect(try pty.deviceSettings() == original)  // detect(path:) closes the port it opened

    let second = try await onOwnThread {
      var memory = memory
      return try Autobaud.detect(
        path: path, timePerRate: .seconds(1), memory: &memory,
        recognises: containsChecksumValidSentence)
    }
    #expect(second.rate == 38400)
    #expect(second.triedRates == [38400])
    await receiver.stop()
  }

  @Test func aRememberedRateThatStoppedWorkingIsReplaced() async throws {
    let pty = try PseudoTerminal()
    let receiver = TalkingReceiver(on: pty, talks: .at(4800))
    let path = pty.devicePath
    let (detection, memory) = try await onOwnThread {
      var memory = BaudRateMemory()
      memory.remember(38400, for: path)
      let detection = try Autobaud.detect(
        path: path, candidates: [9600, 4800], timePerRate: .milliseconds(500), memory: &memory,
        recognises: containsChecksumValidSentence)
      return (detection, memory)
    }
    #expect(detection.triedRates == [38400, 9600, 4800])
    #expect(detection.rate == 4800)
    #expect(memory.rate(for: path) == 4800)
    await receiver.stop()
  }

  /// On a pty the rate does nothing, so a peer that always sends valid data is "found" at the
  /// first rate tried. The search on an open port leaves the port at that rate.
  @Test func onAPtyEveryRateWorksWhenThePeerTalks() async throws {
    let pty = try PseudoTerminal()
    let receiver = TalkingReceiver(on: pty, talks: .any)
    let port = try SerialPort.open(path: pty.devicePath, baudRate: 115_200)
    defer { port.close() }
    let detection = try await onOwnThread {
      var memory = BaudRateMemory()
      return try Autobaud.detect(
        on: port, candidates: [19200, 9600], timePerRate: .seconds(5), memory: &memory,
        recognises: containsChecksumValidSentence)
    }
    #expect(detection.rate == 19200)
    #expect(detection.triedRates == [19200])
    #expect(port.baudRate == 19200)
    #expect(try pty.deviceSettings().baudRate == 19200)
    await receiver.stop()
  }

  @Test func silenceListsTheRatesTriedWithinTheTimeBound() async throws {
    let pty = try PseudoTerminal()
    let path = pty.devicePath
    let (outcome, elapsed) = try await onOwnThread {
      let start = ContinuousClock.now
      let outcome = Result { () throws(SerialPortError) in
        try Autobaud.detect(
          path: path, candidates: [9600, 4800, 115_200], timePerRate: .milliseconds(200),
          recognises: containsChecksumValidSentence)
      }
      return (outcome, ContinuousClock.now - start)
    }
    guard case .failure(let error) = outcome else {
      Issue.record("found a rate in silence: \(outcome)")
      return
    }
    #expect(
      error.reason
        == .nothingRecognised(triedRates: [9600, 4800, 115_200], timePerRate: .milliseconds(200)))
    #expect(error.description.contains("from \(path) at 9600, 4800, 115200 baud"))
    #expect(error.description.contains("listened 0.2 seconds at each"))
    // Listened the full time at each rate; the generous ceiling only catches a search that
    // ignores its bound.
    #expect(elapsed >= .milliseconds(600))
    #expect(elapsed < .seconds(30))
    // Listening only: nothing was written to the receiver.
    #expect(try pty.read(upTo: 64, timeout: .milliseconds(100)).isEmpty)
  }

  /// Data that keeps arriving but is never recognised does not extend the search.
  @Test func noiseAtEveryRateIsBoundedByTime() async throws {
    let pty = try PseudoTerminal()
    let receiver = TalkingReceiver(on: pty, talks: .never)
    let path = pty.devicePath
    let calls = Counter()
    let (outcome, elapsed) = try await onOwnThread {
      let start = ContinuousClock.now
      let outcome = Result { () throws(SerialPortError) in
        try Autobaud.detect(
          path: path, candidates: [9600, 4800], timePerRate: .milliseconds(300)
        ) { bytes in
          calls.increment()
          return containsChecksumValidSentence(bytes)
        }
      }
      return (outcome, ContinuousClock.now - start)
    }
    await receiver.stop()
    guard case .failure(let error) = outcome,
      case .nothingRecognised(let tried, _) = error.reason
    else {
      Issue.record("expected nothing recognised, got \(outcome)")
      return
    }
    #expect(tried == [9600, 4800])
    #expect(calls.count > 0)
    #expect(elapsed >= .milliseconds(600))
    #expect(elapsed < .seconds(30))
  }

  @Test func interruptStopsTheSearchAndRestoresTheRate() async throws {
    let pty = try PseudoTerminal()
    let port = try SerialPort.open(path: pty.devicePath, baudRate: 57600)
    defer { port.close() }
    port.interrupt()
    let outcome = try await onOwnThread {
      Result { () throws(SerialPortError) in
        var memory = BaudRateMemory()
        return try Autobaud.detect(
          on: port, timePerRate: .seconds(60), memory: &memory,
          recognises: containsChecksumValidSentence)
      }
    }
    guard case .failure(let error) = outcome else {
      Issue.record("expected an interruption, got \(outcome)")
      return
    }
    #expect(error.reason == .interrupted)
    #expect(port.baudRate == 57600)
    #expect(try pty.deviceSettings().baudRate == 57600)
  }
}
