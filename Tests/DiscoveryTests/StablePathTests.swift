import Testing

@testable import Discovery

@Suite("by-id names computed the way udev makes them")
struct StablePathTests {
  private func attributes(
    kernel: String = "ttyACM0", vendor: String = "1546", product: String = "01a7",
    manufacturer: String? = nil, productName: String? = nil, serial: String? = nil,
    interface: String? = "00", port: String? = nil
  ) -> UdevSerialName.Attributes {
    UdevSerialName.Attributes(
      kernelName: kernel, vendorID: vendor, productID: product, manufacturer: manufacturer,
      product: productName, serial: serial, interfaceNumber: interface, portNumber: port)
  }

  @Test("A u-blox 7 gets the link real systems show")
  func ublox7() {
    let name = UdevSerialName.byIDPath(
      attributes(
        manufacturer: "u-blox AG - www.u-blox.com", productName: "u-blox 7 - GPS/GNSS Receiver"))
    #expect(
      name == "/dev/serial/by-id/usb-u-blox_AG_-_www.u-blox.com_u-blox_7_-_GPS_GNSS_Receiver-if00")
  }

  @Test("usb-serial ports get -portN, and a serial number is appended")
  func usbSerialPort() {
    let pl2303 = UdevSerialName.byIDPath(
      attributes(
        kernel: "ttyUSB0", vendor: "067b", product: "2303",
        manufacturer: "Prolific Technology Inc.", productName: "USB-Serial Controller",
        port: "0"))
    #expect(
      pl2303 == "/dev/serial/by-id/usb-Prolific_Technology_Inc._USB-Serial_Controller-if00-port0")
    let ftdi = UdevSerialName.byIDPath(
      attributes(
        kernel: "ttyUSB7", vendor: "0403", product: "6001", manufacturer: "FTDI",
        productName: "FT232R USB UART", serial: "A50285BI", interface: "01", port: "0"))
    #expect(ftdi == "/dev/serial/by-id/usb-FTDI_FT232R_USB_UART_A50285BI-if01-port0")
  }

  @Test("Missing string descriptors fall back to the hex IDs")
  func hexFallback() {
    #expect(UdevSerialName.idSerial(attributes(vendor: "1a86", product: "7523")) == "1a86_7523")
  }

  @Test("Whitespace: trimmed at both ends, each inner run one underscore")
  func whitespace() {
    let name = UdevSerialName.idSerial(
      attributes(manufacturer: "  ACME \t Inc  ", productName: "GPS\n\nMouse ", serial: " 12 34 "))
    #expect(name == "ACME_Inc_GPS_Mouse_12_34")
  }

  @Test("Characters udev does not allow become underscores; UTF-8 and \\x escapes stay")
  func characters() {
    #expect(
      UdevSerialName.idSerial(attributes(manufacturer: "a/b*c(d)", productName: "x#+-.:=@_y"))
        == "a_b_c_d__x#+-.:=@_y")
    #expect(
      UdevSerialName.idSerial(attributes(manufacturer: "Müller", productName: "GPS"))
        == "Müller_GPS")
    #expect(
      UdevSerialName.idSerial(attributes(manufacturer: "a\\x20b", productName: "p")) == "a\\x20b_p")
    // Invalid UTF-8 in the descriptor (a lone continuation byte, an overlong form, a
    // surrogate) is replaced byte by byte, as udev does.
    let raw = UdevSerialName.RawAttributes(
      kernelName: "ttyACM0", vendorID: "1546", productID: "01a7",
      manufacturer: [0x41, 0x80, 0x42, 0xC0, 0xAF, 0xED, 0xA0, 0x80], product: Array("p".utf8),
      serial: nil, interfaceNumber: "00", portNumber: nil)
    #expect(UdevSerialName.idSerial(raw) == "A_B_____" + "_p")
  }

  @Test("Vendor and model are cut to 63 bytes, as in usb_id's buffers")
  func truncation() {
    let long = String(repeating: "x", count: 100)
    let name = UdevSerialName.idSerial(attributes(manufacturer: long, productName: "p"))
    #expect(name == String(repeating: "x", count: 63) + "_p")
  }

  @Test("A serial number with a comma or a control byte is no identifier and is dropped")
  func unusableSerials() {
    #expect(UdevSerialName.shortSerial("12,34") == nil)
    #expect(UdevSerialName.shortSerial("12\u{01}34") == nil)
    #expect(UdevSerialName.shortSerial("Mü") == nil)
    #expect(UdevSerialName.shortSerial("   ") == nil)
    #expect(UdevSerialName.shortSerial(nil) == nil)
    #expect(UdevSerialName.shortSerial("0000MT3329 A7") == "0000MT3329_A7")
    #expect(
      UdevSerialName.idSerial(attributes(manufacturer: "m", productName: "p", serial: "1,2"))
        == "m_p")
  }

  @Test("Only ttyUSB and ttyACM ports with an interface number get a by-id link")
  func onlyUSBSerialKernels() {
    #expect(UdevSerialName.byIDPath(attributes(kernel: "ttyS0")) == nil)
    #expect(UdevSerialName.byIDPath(attributes(kernel: "ttyGS0")) == nil)
    #expect(UdevSerialName.byIDPath(attributes(interface: nil)) == nil)
    #expect(UdevSerialName.byIDPath(attributes(interface: "")) == nil)
  }
}
