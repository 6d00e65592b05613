import Glibc
@testable import SerialGPS
import Testing

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
