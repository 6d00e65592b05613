// discovery-testbed: drives DeviceDiscovery through umockdev's testbed and prints what it
// saw, one JSON object per line, for Tests/DiscoveryTests to check. Not a test by itself: it
// only reports. Run it under umockdev-wrapper:
//
//   umockdev-wrapper discovery-testbed --fixtures DIR [--source udev|kernel|automatic]
//     [--scenario discovery|gnss|follow-first|follow-serial|follow-possible]
//
// Scenario `discovery` (the default): builtin serial ports and an FTDI adapter are present; a
// u-blox 7 is plugged in, streams through its pty, is unplugged and plugged back; a PL2303
// bridge arrives while the u-blox is in use, and takes over when the u-blox goes; then
// discovery shuts down. Scenario `gnss`: two kernel GNSS devices (a u-blox and a MediaTek
// on UARTs) appear beside the builtin ports, and the u-blox goes away. The `follow-…`
// scenarios run the gated receiver (Follow.swift).

import Discovery
import Glibc

func emit(_ fields: [(String, String)]) {
  let body = fields.map { "\"\($0.0)\":\($0.1)" }.joined(separator: ",")
  let line = "{" + body + "}\n"
  _ = line.withCString { write(1, $0, strlen($0)) }
}

func quoted(_ text: String?) -> String {
  guard let text else { return "null" }
  var out = "\""
  for scalar in text.unicodeScalars {
    switch scalar {
    case "\"": out += "\\\""
    case "\\": out += "\\\\"
    case "\n": out += "\\n"
    case "\r": out += "\\r"
    default:
      if scalar.value < 0x20 {
        out += "\\u00" + (scalar.value < 0x10 ? "0" : "") + String(scalar.value, radix: 16)
      } else {
        out.unicodeScalars.append(scalar)
      }
    }
  }
  return out + "\""
}

func fail(_ message: String) -> Never {
  emit([("error", quoted(message))])
  exit(1)
}

var fixtures = ""
var source = HotplugSource.automatic
var scenarioName = "discovery"
var arguments = CommandLine.arguments.dropFirst()
while let argument = arguments.popFirst() {
  switch argument {
  case "--fixtures": fixtures = arguments.popFirst() ?? ""
  case "--source":
    guard let value = arguments.popFirst().flatMap(HotplugSource.init(rawValue:)) else {
      fail("--source takes udev, kernel or automatic")
    }
    source = value
  case "--scenario": scenarioName = arguments.popFirst() ?? ""
  default: fail("unknown argument \(argument)")
  }
}
guard !fixtures.isEmpty else { fail("--fixtures DIR is required") }
guard getenv("LD_PRELOAD").map({ String(cString: $0).contains("umockdev") }) == true else {
  fail("run me under umockdev-wrapper")
}
// A hang is a failure: the test reads a missing line as such.
alarm(scenarioName == "discovery" || scenarioName == "gnss" ? 120 : 240)

func discoveryThreadAlive() -> Bool {
  guard let directory = opendir("/proc/self/task") else { return false }
  defer { closedir(directory) }
  while let entry = readdir(directory) {
    let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
      String(cString: raw.bindMemory(to: CChar.self).baseAddress!)
    }
    guard name.first?.isNumber == true else { continue }
    let file = "/proc/self/task/\(name)/comm"
    guard let handle = fopen(file, "r") else { continue }
    var buffer = [CChar](repeating: 0, count: 64)
    _ = fgets(&buffer, 64, handle)
    fclose(handle)
    let command = String(
      decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    if command.hasPrefix("serialgps-udev") { return true }
  }
  return false
}

/// Writes `text` into one end of the pty and reads it from the other.
func transfer(_ text: String, from writer: Int32, to reader: Int32) -> String {
  let bytes = Array(text.utf8)
  let written = bytes.withUnsafeBytes { write(writer, $0.baseAddress, $0.count) }
  guard written == bytes.count else { return "write failed: errno \(errno)" }
  var received: [UInt8] = []
  var buffer = [UInt8](repeating: 0, count: 256)
  while received.count < bytes.count {
    var descriptor = pollfd(fd: reader, events: Int16(POLLIN), revents: 0)
    guard poll(&descriptor, 1, 10_000) > 0 else { break }
    let count = read(reader, &buffer, buffer.count)
    if count <= 0 { break }
    received += buffer[0..<count]
  }
  return String(decoding: received, as: UTF8.self)
}

/// The whole scenario; state stays local so that nothing is shared across isolation domains.
func scenario(fixtures: String, source: HotplugSource, gnss: Bool = false) async {
  let testbed: Testbed
  do {
    testbed = try Testbed()
    try testbed.add(file: fixtures + "/builtin-ports.umockdev")
    try testbed.add(file: fixtures + "/ftdi-ft2232h-adapter.umockdev")
  } catch {
    fail("\(error)")
  }

  let ubloxTTY = "/sys/devices/pci0000:00/0000:00:14.0/usb1/1-2/1-2:1.0/tty/ttyACM0"
  let ubloxChain = [
    "/sys/devices/pci0000:00/0000:00:14.0/usb1/1-2",
    "/sys/devices/pci0000:00/0000:00:14.0/usb1/1-2/1-2:1.0",
    ubloxTTY,
  ]
  let pl2303Chain = [
    "/sys/devices/pci0000:00/0000:00:14.0/usb1/1-4",
    "/sys/devices/pci0000:00/0000:00:14.0/usb1/1-4/1-4:1.0",
    "/sys/devices/pci0000:00/0000:00:14.0/usb1/1-4/1-4:1.0/ttyUSB0",
    "/sys/devices/pci0000:00/0000:00:14.0/usb1/1-4/1-4:1.0/ttyUSB0/tty/ttyUSB0",
  ]

  /// Plugs a device in the way the kernel announces it: parents first.
  func plug(_ file: String, _ chain: [String]) {
    do { try testbed.add(file: fixtures + "/" + file) } catch { fail("\(error)") }
    // add_from_file announces each device ("add") in file order; the fixtures list
    // parents first, as the kernel adds them.
  }

  /// Unplugs it: children first, then the sysfs tree goes.
  func unplug(_ chain: [String]) {
    // remove_device announces nothing; the kernel removes children first.
    for path in chain.reversed() {
      testbed.uevent(path, "remove")
      testbed.remove(path)
    }
  }

  let discovery = DeviceDiscovery(source: source)
  emit([("source", quoted(discovery.hotplugSource.rawValue))])
  var tracker = ReceiverTracker(selector: .first)
  var events = discovery.events().makeAsyncIterator()

  /// Reads events, printing each with the tracker's actions, until `done` says stop.
  func consume(until done: (HotplugEvent) -> Bool) async {
    do {
      while let event = try await events.next() {
        var fields: [(String, String)]
        switch event {
        case .added(let device), .removed(let device), .changed(let device):
          let name: String
          if case .added = event {
            name = "added"
          } else if case .removed = event {
            name = "removed"
          } else {
            name = "changed"
          }
          fields = [
            ("event", quoted(name)), ("path", quoted(device.path)),
            ("kind", quoted(device.classification.kind.rawValue)),
            ("chipset", quoted(device.classification.chipset?.cliName)),
            ("stablePath", quoted(device.stablePath)),
            ("subsystem", quoted(device.subsystem.rawValue)),
            ("protocol", quoted(device.gnssProtocol)),
          ]
        case .enumerationComplete:
          fields = [("event", quoted("enumerationComplete"))]
        }
        emit(fields)
        for action in tracker.handle(event) {
          switch action {
          case .attach(let device, let mayWrite):
            emit([
              ("action", quoted("attach")), ("path", quoted(device.path)),
              ("mayWrite", "\(mayWrite)"),
            ])
          case .update(let device, let mayWrite):
            emit([
              ("action", quoted("update")), ("path", quoted(device.path)),
              ("mayWrite", "\(mayWrite)"),
            ])
          case .detach(let device):
            emit([("action", quoted("detach")), ("path", quoted(device.path))])
          }
        }
        if done(event) { return }
      }
      emit([("step", quoted("stream ended early"))])
    } catch {
      fail("\(error)")
    }
  }

  func isAdded(_ path: String) -> (HotplugEvent) -> Bool {
    { if case .added(let device) = $0 { return device.path == path } else { return false } }
  }
  func isRemoved(_ path: String) -> (HotplugEvent) -> Bool {
    { if case .removed(let device) = $0 { return device.path == path } else { return false } }
  }

  await consume { $0 == .enumerationComplete }
  emit([("step", quoted("threadAlive")), ("alive", "\(discoveryThreadAlive())")])

  if gnss {
    emit([("step", quoted("plug gnss"))])
    plug("gnss-serdev.umockdev", [])
    await consume(until: isAdded("/dev/gnss1"))
    emit([("step", quoted("unplug gnss0"))])
    unplug([
      "/sys/devices/platform/soc/fe201000.serial/serial0/serial0-0",
      "/sys/devices/platform/soc/fe201000.serial/serial0/serial0-0/gnss/gnss0",
    ])
    await consume(until: isRemoved("/dev/gnss0"))
    discovery.shutdown()
    emit([("step", quoted("done"))])
    return
  }

  emit([("step", quoted("plug ublox"))])
  plug("ublox7-cdc-acm.umockdev", ubloxChain)
  await consume(until: isAdded("/dev/ttyACM0"))

  // The node is a pty: what a receiver writes on the master side arrives on /dev/ttyACM0.
  let port = open("/dev/ttyACM0", O_RDWR | O_NOCTTY)
  guard port >= 0 else { fail("cannot open /dev/ttyACM0: errno \(errno)") }
  var settings = termios()
  var raw = false
  if tcgetattr(port, &settings) == 0 {
    cfmakeraw(&settings)
    raw = tcsetattr(port, TCSANOW, &settings) == 0
  }
  let master = testbed.masterDescriptor("/dev/ttyACM0")
  let sentence = "$GPGGA,123519,4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,*47\r\n"
  let command = "$PUBX,40,GSV,0,0,0,0,0,0*59\r\n"
  emit([
    ("step", quoted("stream")), ("raw", "\(raw)"), ("isatty", "\(isatty(port) == 1)"),
    ("sent", quoted(sentence)),
    ("received", quoted(transfer(sentence, from: master, to: port))),
    ("commandSent", quoted(command)),
    ("commandReceived", quoted(transfer(command, from: port, to: master))),
  ])
  close(port)

  emit([("step", quoted("unplug ublox"))])
  unplug(ubloxChain)
  await consume(until: isRemoved("/dev/ttyACM0"))

  // Plugged back in, it gets ttyACM2 (umockdev keeps the old node's pty registered; on a
  // real system the same happens while an application still holds ttyACM0 open). Its by-id
  // path is the same, which is what the tracker follows.
  emit([("step", quoted("replug ublox"))])
  let replugChain = ubloxChain.map { $0.replacingOccurrences("ttyACM0", "ttyACM2") }
  do {
    let text = try String(contentsOfFile: fixtures + "/ublox7-cdc-acm.umockdev")
      .replacingOccurrences("ttyACM0", "ttyACM2")
      .replacingOccurrences("166:0", "166:2")
      .replacingOccurrences("MINOR=0\n", "MINOR=2\n")
    try testbed.add(description: text)
  } catch {
    fail("\(error)")
  }
  await consume(until: isAdded("/dev/ttyACM2"))

  emit([("step", quoted("plug pl2303"))])
  plug("pl2303-bridge.umockdev", pl2303Chain)
  await consume(until: isAdded("/dev/ttyUSB0"))

  emit([("step", quoted("unplug ublox"))])
  unplug(replugChain)
  await consume(until: isRemoved("/dev/ttyACM2"))

  emit([("step", quoted("shutdown"))])
  discovery.shutdown()
  do {
    var remaining = 0
    while try await events.next() != nil { remaining += 1 }
    emit([("step", quoted("finished")), ("eventsAfterShutdown", "\(remaining)")])
  } catch {
    fail("\(error)")
  }
  emit([("step", quoted("threadAlive")), ("alive", "\(discoveryThreadAlive())")])
  do {
    _ = try await discovery.serialPorts()
    emit([("step", quoted("afterShutdown")), ("error", "null")])
  } catch {
    emit([("step", quoted("afterShutdown")), ("error", quoted("\(error)"))])
  }
  emit([("step", quoted("done"))])
}

switch scenarioName {
case "discovery": await scenario(fixtures: fixtures, source: source)
case "gnss": await scenario(fixtures: fixtures, source: source, gnss: true)
case "follow-first": await followFirst(fixtures: fixtures, source: source)
case "follow-serial": await followSerialNumber(fixtures: fixtures, source: source)
case "follow-possible": await followPossible(fixtures: fixtures, source: source)
default: fail("unknown scenario \(scenarioName)")
}

extension String {
  /// Every occurrence of `target` replaced (Foundation's version, without Foundation).
  func replacingOccurrences(_ target: String, _ replacement: String) -> String {
    split(separator: target, omittingEmptySubsequences: false).joined(separator: replacement)
  }

  /// The contents of a file.
  init(contentsOfFile path: String) throws {
    guard let handle = fopen(path, "r") else {
      throw Testbed.Failure(description: "cannot read \(path): errno \(errno)")
    }
    defer { fclose(handle) }
    var bytes: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 4096)
    while true {
      let count = fread(&buffer, 1, buffer.count, handle)
      if count == 0 { break }
      bytes += buffer[0..<count]
    }
    self = String(decoding: bytes, as: UTF8.self)
  }
}
