import Discovery
import GPSDProtocol

// `serialgps list`: the receivers discovery finds, known and possible; `--all` adds every
// other serial port. Text for people, `--json` (an array, one object per port) for scripts.
let listCommand = Command(
  name: "list", usage: "list [--json] [--all]",
  summary: "List GPS receivers (known, and possible ones on generic USB-serial bridges).",
  arguments: ListOptions.self
) { options in
  await listReceivers(options)
}

/// What `serialgps list` was asked for.
struct ListOptions: Equatable, CommandArguments {
  var json = false
  /// Every serial port, not only the receivers.
  var all = false

  static let help = """
    usage: serialgps list [--json] [--all]

    Lists the GPS receivers attached: known receivers (USB IDs in the catalogue, or marked by a
    udev rule with SERIALGPS_CHIPSET) and possible ones (generic USB-serial bridges such as
    PL2303, CP210x, FTDI, CH340, which serialgps only listens to unless you name the device).

      --json   one JSON array, an object per port
      --all    also list every other serial port
      --help   show this help

    """

  static func parse(_ arguments: [String]) -> ParsedArguments<ListOptions> {
    var options = ListOptions()
    return ArgumentReader.parse(arguments) { argument, _ throws(UsageMessage) in
      switch argument {
      case "--json": options.json = true
      case "--all", "-a": options.all = true
      default:
        if isOption(argument) { throw .unknownOption(argument) }
        throw UsageMessage("unknown argument '\(argument)'")
      }
    } then: {
      options
    }
  }
}

/// Prints the receivers (and with `--all` the other serial ports) discovery finds.
func listReceivers(_ options: ListOptions) async -> Int32 {
  let discovery = DeviceDiscovery()
  defer { discovery.shutdown() }
  let ports: [SerialDevice]
  do {
    ports = try await discovery.serialPorts()
  } catch {
    Output.error.line("\(error)")
    return 1
  }
  let receivers = ReceiverSelector.first.candidates(in: ports)
  let shown = options.all ? receivers + ports.filter { !$0.isReceiverCandidate } : receivers

  if options.json {
    Output.standard.line(listJSON(shown))
  } else {
    Output.standard.write(
      listText(shown, otherCount: ports.count - receivers.count, all: options.all))
  }
  return 0
}

private func listText(_ devices: [SerialDevice], otherCount: Int, all: Bool) -> String {
  var text = ""
  if !devices.contains(where: \.isReceiverCandidate) {
    text += "No GPS receiver found.\n"
    if !all && otherCount > 0 {
      text += "\(otherCount) other serial port\(otherCount == 1 ? "" : "s") found: "
      text += "`serialgps list --all` shows \(otherCount == 1 ? "it" : "them").\n"
    }
    text += "A receiver on a USB-serial adapter not in the catalogue can be declared with a "
    text += "udev rule; see docs/discovery.md.\n"
    if devices.isEmpty { return text }
    text += "\n"
  }
  for (index, device) in devices.enumerated() {
    if index > 0 { text += "\n" }
    text += device.path + "  " + headline(device) + "\n"
    if let stable = device.stablePath {
      text += "  stable path  " + stable
      text += device.stablePathFromUdev ? "\n" : "  (computed; udev made no such link)\n"
    }
    for link in device.links where link != device.stablePath {
      text += "  link         " + link + "\n"
    }
    if let usb = device.usb {
      var line = "  usb          " + usb.id.description
      if let interface = usb.interfaceNumber { line += ", interface \(interface)" }
      if let driver = device.driver { line += ", driver " + driver }
      text += line + "\n"
      let names = [usb.manufacturer, usb.product].compactMap { $0 }
      if !names.isEmpty { text += "  product      " + names.joined(separator: " / ") + "\n" }
      text += "  serial       " + (usb.serialNumber ?? "none") + "\n"
    } else if let driver = device.driver {
      text += "  driver       " + driver + "\n"
    }
    if device.subsystem == .gnss {
      text += "  gnss         protocol \(device.gnssProtocol ?? "not named"); no baud rate, "
      text += "the kernel powers the receiver while it is open\n"
    }
  }
  if !all && otherCount > 0 && devices.contains(where: \.isReceiverCandidate) {
    text += "\n(\(otherCount) other serial port\(otherCount == 1 ? "" : "s") not shown; "
    text += "use --all)\n"
  }
  return text
}

private func headline(_ device: SerialDevice) -> String {
  let classification = device.classification
  var text: String
  switch classification.kind {
  case .known:
    text = "known receiver, chipset " + (classification.chipset?.cliName ?? "unknown")
  case .possible:
    text = "possible receiver (generic USB-serial bridge; listened to, not written to)"
  case .other:
    text = "serial port"
  }
  if let model = classification.model { text += " — " + model }
  if classification.source == .udevProperty {
    text += classification.kind == .other ? " [ignored by udev rule]" : " [declared by udev rule]"
  }
  return text
}

/// The devices as one JSON array, an object per device with every member present (`null`
/// for what is unknown), written by the one JSON writer (GPSDProtocol's).
private func listJSON(_ devices: [SerialDevice]) -> String {
  var json = JSONWriter()
  json.beginArray()
  for device in devices {
    let usb = device.usb
    json.beginObject()
    json.memberOrNull("path", device.path)
    json.memberOrNull("subsystem", device.subsystem.rawValue)
    json.memberOrNull("protocol", device.gnssProtocol)
    json.memberOrNull("stablePath", device.stablePath)
    json.key("stablePathFromUdev")
    json.boolean(device.stablePathFromUdev)
    json.key("links")
    json.beginArray()
    for link in device.links { json.string(link) }
    json.endArray()
    json.memberOrNull("vendorId", usb.map { hex4($0.id.vendor) })
    json.memberOrNull("productId", usb.map { hex4($0.id.product) })
    json.memberOrNull("serialNumber", usb?.serialNumber)
    json.memberOrNull("manufacturer", usb?.manufacturer)
    json.memberOrNull("product", usb?.product)
    json.key("interface")
    if let interface = usb?.interfaceNumber { json.integer(interface) } else { json.null() }
    json.memberOrNull("driver", device.driver)
    json.memberOrNull("kind", device.classification.kind.rawValue)
    json.memberOrNull("chipset", device.classification.chipset?.cliName)
    json.memberOrNull("model", device.classification.model)
    json.memberOrNull("source", device.classification.source.rawValue)
    json.memberOrNull("sysPath", device.sysPath)
    json.endObject()
  }
  json.endArray()
  return json.text
}

extension JSONWriter {
  /// A string member, written as `null` when unknown (a list's objects all have the same
  /// members, unlike gpsd's reports, which leave the unknown out).
  fileprivate mutating func memberOrNull(_ name: StaticString, _ value: String?) {
    key(name)
    if let value { string(value) } else { null() }
  }
}

private func hex4(_ value: UInt16) -> String {
  let digits = String(value, radix: 16)
  return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
}
