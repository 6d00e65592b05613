import Chipsets
import Discovery
import Glibc
import POSIX
import SerialPort
import Testing

@testable import SerialGPS

@Suite struct SerialConnectorTests {
  @Test func aByIDLinkToATtyACMIsTheReceiversOwnUSBPort() throws {
    var template = Array("/tmp/serialgps-connector-XXXXXX".utf8CString)
    let directory = try #require(mkdtemp(&template).map { String(cString: $0) })
    defer {
      unlink(directory + "/usb-u-blox_AG_GNSS_receiver-if00")
      unlink(directory + "/ttyACM7")
      rmdir(directory)
    }
    let device = directory + "/ttyACM7"
    let link = directory + "/usb-u-blox_AG_GNSS_receiver-if00"
    let descriptor = open(device, O_CREAT | O_WRONLY, 0o600)
    try #require(descriptor >= 0)
    close(descriptor)
    try #require(symlink(device, link) == 0)
    #expect(HostInterface(devicePath: link) == .usb)
    #expect(SerialConnector(path: link).chipsetHint?.interface == .usb)
    #expect(HostInterface(devicePath: directory + "/ttyUSB0") == .uart)
    // A device udev reported: its kernel driver answers, the name is not looked at.
    func reported(_ path: String, driver: String?) -> SerialDevice {
      SerialDevice(
        path: path, sysPath: "/sys/devices/x/tty/" + path, stablePath: nil, usb: nil,
        driver: driver, classification: Classification(kind: .known, source: .catalogue))
    }
    #expect(HostInterface(reported(link, driver: "pl2303")) == .uart)
    #expect(HostInterface(reported("/dev/pts/3", driver: "cdc_acm")) == .usb)
    #expect(HostInterface(reported(device, driver: nil)) == .uart)
  }
}

@Suite struct SerialConnectorBaudTests {
  @Test func aReceiverToBeWokenIsNotListenedToFirst() async throws {
    let pty = try PseudoTerminal()
    let connector = SerialConnector(path: pty.devicePath, baud: .automatic())
    // Silent, as in standby. Listening would take 9 rates × 1.5 s; this opens at once at the
    // chipset's factory rate.
    let start = ContinuousClock.now
    let connection = try await connector.connect(wakingWith: .sirf)
    let elapsed = ContinuousClock.now - start
    defer { connection.close() }
    #expect(elapsed < .seconds(5), "took \(elapsed): it listened first")
    let serial = try #require(connection as? SerialConnection)
    #expect(serial.port.baudRate == .b4800)
  }
}

/// The one baud search (`SerialConnector.openPort`) that the connectors, `record` and `send`
/// open ports with.
@Suite struct OpenPortTests {
  @Test func aSilentPortStaysOpenAtTheRememberedRateWithTheRatesTried() throws {
    let pty = try PseudoTerminal()
    var memory = BaudRateMemory()
    memory.remember(.b38400, for: pty.devicePath)
    var searched: [Bool] = []
    let opened = try SerialConnector.openPort(
      path: pty.devicePath,
      baud: .automatic(candidates: [.b4800, .b9600], timePerRate: .milliseconds(100)),
      memory: &memory, opened: { _, searching in searched.append(searching) })
    defer { opened.port.close() }
    #expect(searched == [true])
    #expect(opened.unrecognisedRates == [.b38400, .b4800, .b9600])
    #expect(opened.detection == nil && opened.heard.isEmpty)
    // Left where a receiver in standby can be woken: the rate that worked last time.
    #expect(opened.rate == .b38400)
    #expect(memory.rate(for: pty.devicePath) == .b38400)
  }

  @Test func theRateFoundIsRememberedAndWhatWasHeardKept() throws {
    let pty = try PseudoTerminal()
    // On a thread of its own: the search blocks the test's thread, and under load the
    // cooperative pool may have no other to give a task.
    let stop = Locked(false)
    let talking = OwnThread.start(name: "talking") {
      for second in 0..<200 where !stop.withLock({ $0 }) {
        try? pty.write(Array(cycle(second: second % 60).utf8), timeout: .milliseconds(200))
        usleep(50_000)
      }
    }
    defer {
      stop.withLock { $0 = true }
      talking.joinBlocking()
    }
    var memory = BaudRateMemory()
    let opened = try SerialConnector.openPort(
      path: pty.devicePath, baud: .automatic(candidates: [.b19200], timePerRate: .seconds(5)),
      memory: &memory)
    defer { opened.port.close() }
    #expect(opened.unrecognisedRates == nil)
    #expect(opened.detection?.rate == .b19200)
    #expect(opened.rate == .b19200)
    #expect(memory.rate(for: pty.devicePath) == .b19200)
    #expect(String(decoding: opened.heard, as: UTF8.self).contains("$GP"))
  }

  @Test func aReceiverSendingOnlyUBXIsFoundAtItsRate() throws {
    let pty = try PseudoTerminal()
    // NAV-EOE frames, iTOW advancing: no NMEA at all.
    func endOfEpoch(_ iTOW: UInt32) -> [UInt8] {
      var frame: [UInt8] = [0xB5, 0x62, 0x01, 0x61, 0x04, 0x00]
      frame += (0..<4).map { UInt8(truncatingIfNeeded: iTOW >> (8 * UInt32($0))) }
      var a: UInt8 = 0
      var b: UInt8 = 0
      for byte in frame[2...] {
        a = a &+ byte
        b = b &+ a
      }
      return frame + [a, b]
    }
    let stop = Locked(false)
    let talking = OwnThread.start(name: "talking") {
      for second in 0..<200 where !stop.withLock({ $0 }) {
        try? pty.write(endOfEpoch(UInt32(second) * 1000), timeout: .milliseconds(200))
        usleep(50_000)
      }
    }
    defer {
      stop.withLock { $0 = true }
      talking.joinBlocking()
    }
    var memory = BaudRateMemory()
    let opened = try SerialConnector.openPort(
      path: pty.devicePath, baud: .automatic(candidates: [.b38400], timePerRate: .seconds(5)),
      memory: &memory)
    defer { opened.port.close() }
    #expect(opened.unrecognisedRates == nil)
    #expect(opened.detection?.rate == .b38400)
    #expect(memory.rate(for: pty.devicePath) == .b38400)
  }

  @Test func aRatelessPortOrAFixedRateIsNotSearched() throws {
    let pty = try PseudoTerminal()
    var memory = BaudRateMemory()
    let start = ContinuousClock.now
    for (baud, rateless, rate) in [
      (SerialConnector.BaudSetting.automatic(timePerRate: .seconds(5)), true, BaudRate.b9600),
      (.fixed(.b57600), false, .b57600),
    ] {
      var searched: [Bool] = []
      let opened = try SerialConnector.openPort(
        path: pty.devicePath, baud: baud, memory: &memory, ratelessPort: rateless,
        opened: { _, searching in searched.append(searching) })
      opened.port.close()
      #expect(searched == [false])
      #expect(opened.rate == rate)
      #expect(opened.unrecognisedRates == nil && opened.detection == nil)
    }
    #expect(ContinuousClock.now - start < .seconds(4), "it listened")
  }

  @Test func whatOpenedThrowsClosesThePortAndIsThrown() throws {
    struct Refused: Error {}
    let pty = try PseudoTerminal()
    var memory = BaudRateMemory()
    var kept: SerialPort?
    #expect(throws: Refused.self) {
      _ = try SerialConnector.openPort(
        path: pty.devicePath, baud: .automatic(timePerRate: .seconds(5)), memory: &memory,
        opened: { port, _ in
          kept = port
          throw Refused()
        })
    }
    let port = try #require(kept)
    // Closed: reading it fails at once instead of waiting.
    var byte: [UInt8] = [0]
    #expect(throws: SerialPortError.self) {
      _ = try byte.withUnsafeMutableBytes { try port.read(into: $0, timeout: .seconds(5)) }
    }
  }
}

@Suite struct SerialConnectionTests {
  /// The sentences heard while the rate was being found are the receiver's first data: the
  /// reader gets them before anything read later, in pieces as small as its buffer.
  @Test func bytesHeardWhileListeningAreReadFirst() throws {
    let pty = try PseudoTerminal()
    let port = try SerialPort.open(path: pty.devicePath, baudRate: .b9600)
    let heard = Array("$GPTXT,01,01,02,heard while listening*00\r\n".utf8)
    let connection = SerialConnection(port: port, heard: heard)
    defer { connection.close() }
    let later = Array("$GPTXT,01,01,02,later*00\r\n".utf8)
    try pty.write(later)
    // Should the heard bytes be lost, the reads would wait for bytes that never come.
    let watchdog = Task {
      try await Task.sleep(for: .seconds(5))
      connection.interrupt()
    }
    defer { watchdog.cancel() }
    var buffer = [UInt8](repeating: 0, count: 16)
    var received: [UInt8] = []
    var reads = 0
    while received.count < heard.count + later.count && reads < 100 {
      let count = try buffer.withUnsafeMutableBytes { try connection.read(into: $0) }
      if count == 0 { break }  // interrupted by the watchdog
      received += buffer[..<count]
      reads += 1
    }
    #expect(received == heard + later)
  }
}
