import Glibc
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
    #expect(SerialConnector.guessInterface(link) == .usb)
    #expect(SerialConnector(path: link).chipsetHint?.interface == .usb)
    #expect(SerialConnector.guessInterface(directory + "/ttyUSB0") == .uart)
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
