import Chipsets
import Discovery
import Foundation
import Testing

@Suite("Receiver catalogue")
struct CatalogueTests {
  private func id(_ vendor: UInt16, _ product: UInt16) -> USBID {
    USBID(vendor: vendor, product: product)
  }

  private func classify(
    _ vendor: UInt16, _ product: UInt16, chipset: String? = nil, ignore: String? = nil
  ) -> Classification {
    ReceiverCatalogue.classify(
      usb: id(vendor, product), chipsetProperty: chipset, ignoreProperty: ignore)
  }

  /// The rows name a family by its registry name: a misspelt one would be a family without a
  /// driver.
  @Test("Every family the catalogue names has a driver in the registry")
  func rowsNameRegisteredFamilies() {
    let registered = Set(ChipsetRegistry.all.map(\.family))
    let named = ReceiverCatalogue.receivers.compactMap(\.chipset)
    #expect(!named.isEmpty)
    for family in named { #expect(registered.contains(family), "\(family.rawValue)") }
    #expect(ReceiverCatalogue.receivers.first?.chipset == .ublox)
  }

  @Test("A kernel GNSS device is a known receiver; its protocol names the family")
  func gnssType() {
    let cases: [(String, ChipsetFamily?)] = [
      ("UBX", .ublox), ("MTK", .mediatek), ("SiRF", .sirf), ("NMEA", nil), ("XYZ", nil),
    ]
    for (type, family) in cases {
      let result = ReceiverCatalogue.classify(
        usb: nil, chipsetProperty: nil, ignoreProperty: nil, gnssType: type)
      #expect(result.kind == .known, "\(type)")
      #expect(result.chipset == family, "\(type)")
      #expect(result.source == .kernel)
    }
    // The user's rules still come first: a declared family, or the device kept out.
    let declared = ReceiverCatalogue.classify(
      usb: nil, chipsetProperty: "sirf", ignoreProperty: nil, gnssType: "NMEA")
    #expect(declared.chipset == .sirf && declared.source == .udevProperty)
    let ignored = ReceiverCatalogue.classify(
      usb: nil, chipsetProperty: nil, ignoreProperty: "1", gnssType: "UBX")
    #expect(ignored.kind == .other)
    // A GNSS device on a USB bridge the table lists as "possible" is still a receiver.
    let onBridge = ReceiverCatalogue.classify(
      usb: id(0x067b, 0x2303), chipsetProperty: nil, ignoreProperty: nil, gnssType: "UBX")
    #expect(onBridge.kind == .known && onBridge.chipset == .ublox)
  }

  @Test("u-blox 1546:01a4 through 01a9 are known u-blox receivers")
  func ublox() {
    for product in UInt16(0x01a4)...0x01a9 {
      let result = classify(0x1546, product)
      #expect(result.kind == .known, "1546:\(String(product, radix: 16))")
      #expect(result.chipset == .ublox)
      #expect(result.source == .catalogue)
    }
    #expect(classify(0x1546, 0x01a3).kind == .other)
    #expect(classify(0x1546, 0x01aa).kind == .other)
  }

  @Test(
    "The receivers gpsd's rules name are known, with their family",
    arguments: [
      (UInt16(0x0e8d), UInt16(0x3329), ChipsetFamily?.some(.mediatek)),
      (0x091e, 0x0003, nil),
      (0x1163, 0x0100, .nmea),
      (0x1163, 0x0200, .nmea),
      (0x067b, 0xaaa0, .sirf),
    ])
  func knownReceivers(vendor: UInt16, product: UInt16, chipset: ChipsetFamily?) {
    let result = classify(vendor, product)
    #expect(result.kind == .known)
    #expect(result.chipset == chipset)
    #expect(result.model != nil)
  }

  @Test(
    "Generic USB-serial bridges are possible receivers with no chipset",
    arguments: [
      (UInt16(0x067b), UInt16(0x2303)), (0x10c4, 0xea60), (0x0403, 0x6001), (0x0403, 0x6015),
      (0x1a86, 0x7523),
    ])
  func bridges(vendor: UInt16, product: UInt16) {
    let result = classify(vendor, product)
    #expect(result.kind == .possible)
    #expect(result.chipset == nil)
    #expect(!result.mayWriteUnprompted)
  }

  @Test("Anything else is another serial port, and no USB at all too")
  func others() {
    #expect(classify(0x0403, 0x6010).kind == .other)  // FT2232H: JTAG adapters, dev boards
    #expect(classify(0x2341, 0x0043).kind == .other)  // Arduino Uno
    let platform = ReceiverCatalogue.classify(usb: nil, chipsetProperty: nil, ignoreProperty: nil)
    #expect(platform == Classification(kind: .other, source: .none))
  }

  @Test("SERIALGPS_CHIPSET from a user's rule makes a receiver of any port")
  func declaredByRule() {
    let bridge = classify(0x1a86, 0x7523, chipset: "ublox")
    #expect(bridge.kind == .known)
    #expect(bridge.chipset == .ublox)
    #expect(bridge.source == .udevProperty)
    #expect(bridge.mayWriteUnprompted)

    let uart = ReceiverCatalogue.classify(usb: nil, chipsetProperty: "MTK", ignoreProperty: nil)
    #expect(uart.kind == .known)
    #expect(uart.chipset == .mediatek)

    // The rule overrides the table's family.
    #expect(classify(0x1546, 0x01a8, chipset: "nmea").chipset == .nmea)
    // An unknown family still declares a receiver; the family is left to the driver, or
    // to the table when it knows.
    #expect(
      classify(0x1a86, 0x7523, chipset: "auto")
        == Classification(
          kind: .known, chipset: nil, model: "QinHeng CH340 USB-serial bridge",
          source: .udevProperty))
    #expect(classify(0x0e8d, 0x3329, chipset: "auto").chipset == .mediatek)
    // An empty value declares nothing.
    #expect(classify(0x1a86, 0x7523, chipset: "").kind == .possible)
  }

  @Test("SERIALGPS_IGNORE wins over the table and over SERIALGPS_CHIPSET")
  func ignoredByRule() {
    let ignored = classify(0x1546, 0x01a7, chipset: "ublox", ignore: "1")
    #expect(ignored.kind == .other)
    #expect(ignored.source == .udevProperty)
    #expect(classify(0x1a86, 0x7523, ignore: "yes").kind == .other)
    #expect(classify(0x1546, 0x01a7, ignore: "0").kind == .known)
  }

  @Test("No USB ID is both a receiver and a bridge, or listed twice")
  func tableIsConsistent() {
    let receivers = ReceiverCatalogue.receivers.map(\.id)
    let bridges = ReceiverCatalogue.bridges.map(\.id)
    #expect(Set(receivers).count == receivers.count)
    #expect(Set(bridges).count == bridges.count)
    #expect(Set(receivers).isDisjoint(with: bridges))
    #expect(ReceiverCatalogue.receivers.allSatisfy { $0.kind == .known })
    #expect(ReceiverCatalogue.bridges.allSatisfy { $0.kind == .possible && $0.chipset == nil })
  }

  @Test("The udev rules file declares exactly the catalogue's receivers, with the same family")
  func rulesMatchCatalogue() throws {
    let text = try String(contentsOf: TestSupport.rulesFile, encoding: .utf8)
    var declared: [USBID: String] = [:]
    for line in text.split(separator: "\n") where !line.hasPrefix("#") {
      guard let vendor = capture(line, "ATTRS{idVendor}==\""),
        let products = capture(line, "ATTRS{idProduct}==\""),
        let chipset = capture(line, "ENV{SERIALGPS_CHIPSET}=\"")
      else { continue }
      for product in expand(products) {
        let key = USBID(vendor: UInt16(vendor, radix: 16)!, product: UInt16(product, radix: 16)!)
        #expect(declared[key] == nil, "\(key) declared twice")
        declared[key] = chipset
      }
    }
    var expected: [USBID: String] = [:]
    for entry in ReceiverCatalogue.receivers {
      expected[entry.id] = entry.chipset?.cliName ?? "auto"
    }
    #expect(declared == expected)
  }

  /// The quoted value after `prefix` in a rule line.
  private func capture(_ line: Substring, _ prefix: String) -> String? {
    guard let start = line.range(of: prefix) else { return nil }
    let rest = line[start.upperBound...]
    guard let end = rest.firstIndex(of: "\"") else { return nil }
    return String(rest[..<end])
  }

  /// Expands the udev patterns the rules file uses: `a|b` and one `[x-y]` class.
  private func expand(_ pattern: String) -> [String] {
    pattern.split(separator: "|").flatMap { alternative -> [String] in
      guard let open = alternative.firstIndex(of: "["),
        let close = alternative.firstIndex(of: "]")
      else { return [String(alternative)] }
      let head = alternative[..<open]
      let tail = alternative[alternative.index(after: close)...]
      let range = alternative[alternative.index(after: open)..<close]
      let bounds = range.split(separator: "-").compactMap { $0.first?.asciiValue }
      return (bounds[0]...bounds[1]).map {
        head + String(UnicodeScalar($0)) + tail
      }
    }
  }
}
