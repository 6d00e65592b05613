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
