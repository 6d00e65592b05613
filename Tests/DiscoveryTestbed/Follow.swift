// The gated receiver following a receiver through umockdev's testbed: `GPSReceiver(selecting:)`
// over DeviceDiscovery, with mock receivers streaming NMEA into the ptys umockdev makes for
// the device nodes. Each scenario prints its steps and, at the end, what the subscriber saw
// and what each mock was sent, one JSON object per line, for Tests/DiscoveryTests to check.
//
// The receivers are given a reconnection backoff of a minute, longer than any wait here: a
// receiver that opens within a scenario's wait was opened because it was plugged in.

import Chipsets
import Discovery
import Glibc
import NMEA
import POSIX
import Replay
import SerialGPS

/// What the subscriber received, with when.
final class EventLog: @unchecked Sendable {
  private let lock = Lock()
  private var events: [ReceiverEvent] = []

  func record(_ event: ReceiverEvent) { lock.withLock { events.append(event) } }

  var all: [ReceiverEvent] { lock.withLock { events } }
  var count: Int { lock.withLock { events.count } }

  /// The events from index `start` on.
  func since(_ start: Int) -> [ReceiverEvent] {
    lock.withLock { Array(events[min(start, events.count)...]) }
  }
}

/// The devices of one scenario: the testbed, the mocks behind the nodes, and the log.
final class FollowBench: @unchecked Sendable {
  let testbed: Testbed
  let fixtures: String
  let log = EventLog()
  private(set) var mocks: [MockReceiver] = []
  private let started = monotonicNow()
  private let devicesRoot = "/sys/devices/pci0000:00/0000:00:14.0/usb1"

  init(fixtures: String) {
    self.fixtures = fixtures
    do { testbed = try Testbed() } catch { fail("\(error)") }
  }

  func load(_ fixture: String) {
    do { try testbed.add(file: fixtures + "/" + fixture + ".umockdev") } catch { fail("\(error)") }
  }

  private func text(of fixture: String, _ replacements: [(String, String)]) -> String {
    do {
      var text = try String(contentsOfFile: fixtures + "/" + fixture + ".umockdev")
      for (old, new) in replacements { text = text.replacingOccurrences(old, new) }
      return text
    } catch {
      fail("\(error)")
    }
  }

  private func add(_ description: String) {
    do { try testbed.add(description: description) } catch { fail("\(error)") }
  }

  /// A port plugged in: its sysfs chain (parents first) and its node.
  struct Port {
    let chain: [String]
    let node: String
  }

  /// The u-blox 7 of `ublox7-cdc-acm` on USB port `1-<port>` as `/dev/ttyACM<number>`.
  func plugUblox(port: Int = 2, number: Int) -> Port {
    // The USB device's node and numbers first (its MINOR=4 must not be taken for the tty's).
    var replacements: [(String, String)] = []
    if port != 2 {
      replacements += [
        ("usb1/1-2", "usb1/1-\(port)"), ("1-2:1.0", "1-\(port):1.0"),
        ("001/005", "001/0\(40 + port)"), ("DEVNUM=005", "DEVNUM=0\(40 + port)"),
        ("dev=189:4\\n", "dev=189:\(40 + port)\\n"), ("MINOR=4\n", "MINOR=\(40 + port)\n"),
      ]
    }
    replacements += [
      ("ttyACM0", "ttyACM\(number)"), ("166:0", "166:\(number)"),
      ("MINOR=0\n", "MINOR=\(number)\n"),
    ]
    add(text(of: "ublox7-cdc-acm", replacements))
    let usb = "\(devicesRoot)/1-\(port)"
    return Port(
      chain: [usb, "\(usb)/1-\(port):1.0", "\(usb)/1-\(port):1.0/tty/ttyACM\(number)"],
      node: "/dev/ttyACM\(number)")
  }

  /// The MediaTek of `mediatek-cdc-acm` (serial number `0000MT3329 A7`, USB port 1-3) as
  /// `/dev/ttyACM<number>`.
  func plugMediaTek(number: Int) -> Port {
    add(
      text(
        of: "mediatek-cdc-acm",
        [
          ("ttyACM1", "ttyACM\(number)"), ("166:1", "166:\(number)"),
          ("MINOR=1\n", "MINOR=\(number)\n"),
        ]))
    let usb = "\(devicesRoot)/1-3"
    return Port(
      chain: [usb, "\(usb)/1-3:1.0", "\(usb)/1-3:1.0/tty/ttyACM\(number)"],
      node: "/dev/ttyACM\(number)")
  }

  /// The PL2303 bridge of `pl2303-bridge` (no serial number) on USB port `1-<port>` as
  /// `/dev/ttyUSB<number>`.
  func plugPL2303(port: Int, number: Int) -> Port {
    let replacements = [
      ("usb1/1-4", "usb1/1-\(port)"), ("1-4:1.0", "1-\(port):1.0"),
      ("0:4:1.0", "0:\(port):1.0"), ("0_4_1_0", "0_\(port)_1_0"),
      ("001/007", "001/0\(40 + port)"), ("DEVNUM=007", "DEVNUM=0\(40 + port)"),
      ("dev=189:6\\n", "dev=189:\(40 + port)\\n"), ("MINOR=6\n", "MINOR=\(40 + port)\n"),
      ("ttyUSB0", "ttyUSB\(number)"), ("188:0", "188:\(number)"),
      ("MINOR=0\n", "MINOR=\(number)\n"),
    ]
    add(text(of: "pl2303-bridge", port == 4 && number == 0 ? [] : replacements))
    let usb = "\(devicesRoot)/1-\(port)"
    let interface = "\(usb)/1-\(port):1.0"
    return Port(
      chain: [
        usb, interface, "\(interface)/ttyUSB\(number)",
        "\(interface)/ttyUSB\(number)/tty/ttyUSB\(number)",
      ],
      node: "/dev/ttyUSB\(number)")
  }

  /// Starts a mock behind `node`'s pty.
  @discardableResult
  func mock(
    _ node: String, name: String, latitude: Double = 0,
    _ behaviour: MockReceiver.Behaviour = .silent
  ) -> MockReceiver {
    let master = testbed.masterDescriptor(node)
    guard master >= 0 else { fail("umockdev has no pty for \(node)") }
    let mock = MockReceiver(
      node: node, master: master, name: name, latitude: latitude, behaviour: behaviour)
    mocks.append(mock)
    return mock
  }

  /// Unplugs `port` the way udev reports it: children first. umockdev's pty stays open behind
  /// the node, so the driver hears of it from udev alone, as with a driver that does not hang
  /// the tty up.
  func unplug(_ port: Port) {
    for path in port.chain.reversed() {
      testbed.uevent(path, "remove")
      testbed.remove(path)
    }
  }

  /// Hangs `port` up as the kernel does first when a USB receiver is unplugged: the mock's end
  /// of the pty closes. udev's report of the removal is ``unplug(_:)``.
  func hangUp(_ port: Port, mock: MockReceiver) {
    mock.stop()
    hungUp.append(mock.slavePath ?? "")
    close(testbed.masterDescriptor(port.node))
  }

  /// Slave paths of ptys whose master was closed.
  private var hungUp: [String] = []

  /// umockdev (0.17.16) keeps its record of a pty after the device is removed and aborts when
  /// a later device gets the same pty number. Once the driver has closed a hung-up port, its
  /// number is free: placeholder ptys take it for the rest of the run.
  func holdFreedPtys() async {
    for slave in hungUp {
      await wait("port of \(slave) closed") { descriptorsOpen(on: slave) == 0 }
      for _ in 0..<64 {
        var master: Int32 = -1
        var other: Int32 = -1
        guard openpty(&master, &other, nil, nil, nil) == 0 else { break }
        if MockReceiver.slavePath(of: master) == slave { break }
      }
    }
    hungUp = []
  }

  var seconds: Double {
    let elapsed = monotonicNow() - started
    return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
  }

  /// The name of the mock whose latitude `fix` has.
  func source(of fix: Fix) -> String {
    guard let latitude = fix.latitude else { return "no position" }
    let mock = mocks.first { abs($0.latitude - latitude) < 0.001 }
    return mock?.name ?? "unknown \(latitude)"
  }

  /// Waits (polling; this is the harness, not the driver) until `condition` holds for the
  /// events since `start`, for at most `timeout`. On a timeout the scenario ends here, with
  /// what the subscriber saw.
  func wait(
    _ step: String, since start: Int, timeout: Duration = .seconds(40),
    _ condition: ([ReceiverEvent]) -> Bool
  ) async {
    let begun = seconds
    let deadline = monotonicNow() + timeout
    while !condition(log.since(start)) {
      if monotonicNow() > deadline {
        emit([("step", quoted(step)), ("timedOut", "true")])
        finish(status: 1)
      }
      try? await Task.sleep(for: .milliseconds(20))
    }
    emit([("step", quoted(step)), ("seconds", fixed3(seconds - begun))])
  }

  /// Waits for a condition on anything (not the log).
  func wait(_ step: String, timeout: Duration = .seconds(40), until condition: () -> Bool)
    async
  {
    await wait(step, since: Int.max, timeout: timeout) { _ in condition() }
  }

  /// Live fixes (not the latest one replayed to a newcomer) from the mock called `name`.
  func fixes(from name: String, in events: [ReceiverEvent]) -> Int {
    events.filter {
      if case .fix(let update) = $0 { return !update.isReplay && source(of: update.fix) == name }
      return false
    }.count
  }

  /// Prints what the subscriber saw (runs of fixes from one source as one line) and what each
  /// mock was sent, then exits.
  func finish(status: Int32) -> Never {
    var run: (name: String, count: Int)?
    func flush() {
      if let current = run {
        emit([("fix", quoted(current.name)), ("count", "\(current.count)")])
      }
      run = nil
    }
    for event in log.all {
      switch event {
      case .fix(let update):
        let name = (update.isReplay ? "replayed " : "") + source(of: update.fix)
        if run?.name == name {
          run!.count += 1
        } else {
          flush()
          run = (name, 1)
        }
      case .status(let status):
        flush()
        var fields = [("status", quoted(statusName(status)))]
        switch status {
        case .disconnected(let reason), .commandFailed(let reason):
          fields.append(("reason", quoted(reason.message)))
          fields.append(("kind", quoted(reason.kind.rawValue)))
        default: break
        }
        emit(fields)
      case .satellites:
        break
      }
    }
    flush()
    for mock in mocks {
      mock.settle()
      emit([
        ("mock", quoted(mock.name)), ("node", quoted(mock.node)),
        ("bytesWritten", "\(mock.bytesWritten.count)"),
        ("commands", "[" + mock.commands.map { quoted($0) }.joined(separator: ",") + "]"),
        ("power", quoted(mock.powerState)),
      ])
    }
    emit([("step", quoted("done")), ("status", "\(status)")])
    exit(status)
  }
}

func statusName(_ status: ReceiverStatus) -> String {
  switch status {
  case .poweringOn: return "poweringOn"
  case .streaming: return "streaming"
  case .noFix: return "noFix"
  case .disconnected: return "disconnected"
  case .reconnected: return "reconnected"
  case .commandFailed: return "commandFailed"
  case .commandsWithheld: return "commandsWithheld"
  case .poweredOff: return "poweredOff"
  }
}

func fixed3(_ value: Double) -> String {
  let scaled = Int((value * 1000).rounded())
  let fraction = scaled % 1000
  return "\(scaled / 1000)." + (fraction < 10 ? "00" : fraction < 100 ? "0" : "") + "\(fraction)"
}

extension [ReceiverEvent] {
  func hasStatus(_ wanted: (ReceiverStatus) -> Bool) -> Bool {
    contains {
      if case .status(let status) = $0 { return wanted(status) }
      return false
    }
  }
  var hasDisconnected: Bool {
    hasStatus { if case .disconnected = $0 { return true } else { return false } }
  }
  var hasReconnected: Bool { hasStatus { $0 == .reconnected } }
}

/// Options that make a hotplug wake-up the only way a receiver can open within a scenario.
func followOptions() -> GPSReceiver.Options {
  var options = GPSReceiver.Options()
  options.linger = .zero
  options.reconnectDelay = .seconds(60)
  options.maximumReconnectDelay = .seconds(60)
  return options
}

/// `.first`, created before any receiver is plugged in: waits, takes the u-blox when it is
/// plugged in, follows it through an unplug reported by udev alone and one with a hang-up,
/// and closes the port when the subscriber leaves. Other serial ports are never touched.
func followFirst(fixtures: String, source: HotplugSource) async {
  let bench = FollowBench(fixtures: fixtures)
  bench.load("builtin-ports")
  bench.load("ftdi-ft2232h-adapter")
  let others = ["/dev/ttyS0", "/dev/ttyUSB1", "/dev/ttyUSB2"].map {
    bench.mock($0, name: "other " + $0)
  }

  let discovery = DeviceDiscovery(source: source)
  emit([("source", quoted(discovery.hotplugSource.rawValue))])
  let receiver = GPSReceiver(selecting: .first, discovery: discovery, options: followOptions())
  let log = bench.log
  let subscription = receiver.subscribe { log.record($0) }

  await bench.wait("waiting", since: 0) { $0.hasDisconnected }

  var mark = bench.log.count
  let first = bench.plugUblox(number: 0)
  let ublox = bench.mock(first.node, name: "ublox", latitude: 48.1173, .receiver(.ublox(.m9)))
  await bench.wait("plugged", since: mark) {
    $0.hasReconnected && bench.fixes(from: "ublox", in: $0) > 0
  }
  emit([
    ("step", quoted("open while streaming")), ("descriptors", "\(ublox.openDescriptors)"),
    ("othersWritten", "\(others.map(\.bytesWritten.count).reduce(0, +))"),
  ])

  // Unplugged with the pty still open behind the node: only udev says so.
  mark = bench.log.count
  bench.unplug(first)
  await bench.wait("unplugged", since: mark) { $0.hasDisconnected }
  ublox.stop()

  mark = bench.log.count
  let second = bench.plugUblox(number: 2)
  let replugged = bench.mock(
    second.node, name: "ublox", latitude: 48.1173, .receiver(.ublox(.m9)))
  await bench.wait("replugged", since: mark) {
    $0.hasReconnected && bench.fixes(from: "ublox", in: $0) > 0
  }

  // Unplugged as the kernel does it: a hang-up first, udev's word after.
  mark = bench.log.count
  bench.hangUp(second, mock: replugged)
  await bench.wait("unplugged with hang-up", since: mark) { $0.hasDisconnected }
  bench.unplug(second)
  await bench.holdFreedPtys()

  mark = bench.log.count
  // Into another USB port this time (umockdev keeps the old port's node after a hang-up).
  let third = bench.plugUblox(port: 8, number: 3)
  let last = bench.mock(third.node, name: "ublox", latitude: 48.1173, .receiver(.ublox(.m9)))
  await bench.wait("replugged again", since: mark) {
    $0.hasReconnected && bench.fixes(from: "ublox", in: $0) > 0
  }
  let descriptorsWhileStreaming = last.openDescriptors

  subscription.cancel()
  await bench.wait("powered off") {
    let statistics = receiver.statistics
    return statistics.powerOffs == statistics.powerOns && last.openDescriptors == 0
  }
  let statistics = receiver.statistics
  emit([
    ("step", quoted("closed")), ("descriptorsWhileStreaming", "\(descriptorsWhileStreaming)"),
    ("descriptors", "\(last.openDescriptors)"), ("powerOns", "\(statistics.powerOns)"),
    ("powerOffs", "\(statistics.powerOffs)"), ("failedOpens", "\(statistics.failedOpens)"),
    ("connectionsLost", "\(statistics.connectionsLost)"),
  ])
  await receiver.shutdown()
  discovery.shutdown()
  bench.finish(status: 0)
}

/// `.serialNumber`: of a u-blox and a MediaTek present at the start, only the MediaTek named
/// by its serial number is used, woken with MediaTek commands, waited for when unplugged
/// (the u-blox is never taken instead) and picked up again under a new node.
func followSerialNumber(fixtures: String, source: HotplugSource) async {
  let bench = FollowBench(fixtures: fixtures)
  let ubloxPort = bench.plugUblox(number: 0)
  let ublox = bench.mock(ubloxPort.node, name: "ublox", latitude: 48.1173, .receiver(.ublox(.m9)))
  let mediatekPort = bench.plugMediaTek(number: 1)
  let mediatek = bench.mock(
    mediatekPort.node, name: "mediatek", latitude: 52.5163, .receiver(.mediatek))

  let discovery = DeviceDiscovery(source: source)
  emit([("source", quoted(discovery.hotplugSource.rawValue))])
  // As udev writes it in ID_SERIAL_SHORT (and in the by-id name): the space is an underscore.
  let receiver = GPSReceiver(
    selecting: .serialNumber("0000MT3329_A7"), discovery: discovery, options: followOptions())
  let log = bench.log
  let subscription = receiver.subscribe { log.record($0) }

  await bench.wait("streaming", since: 0) { bench.fixes(from: "mediatek", in: $0) > 0 }
  await bench.wait("woken") { !mediatek.commands.isEmpty }

  var mark = bench.log.count
  bench.unplug(mediatekPort)
  await bench.wait("unplugged", since: mark) { $0.hasDisconnected }
  mediatek.stop()
  // Nothing should happen now: the u-blox is there, but it is not the receiver asked for.
  sleep(milliseconds: 3000)
  emit([
    ("step", quoted("while unplugged")), ("ubloxWritten", "\(ublox.bytesWritten.count)"),
    ("ubloxDescriptors", "\(ublox.openDescriptors)"),
    (
      "fixes", "\(bench.log.since(mark).filter { if case .fix = $0 { true } else { false } }.count)"
    ),
  ])

  mark = bench.log.count
  let replugPort = bench.plugMediaTek(number: 3)
  let replugged = bench.mock(
    replugPort.node, name: "mediatek", latitude: 52.5163, .receiver(.mediatek))
  await bench.wait("replugged", since: mark) {
    $0.hasReconnected && bench.fixes(from: "mediatek", in: $0) > 0
  }

  subscription.cancel()
  await bench.wait("powered off") {
    let statistics = receiver.statistics
    return statistics.powerOffs == statistics.powerOns && replugged.openDescriptors == 0
  }
  emit([("step", quoted("closed")), ("ubloxWritten", "\(ublox.bytesWritten.count)")])
  await receiver.shutdown()
  discovery.shutdown()
  bench.finish(status: 0)
}

/// `.first` with generic USB-serial bridges (PL2303): a silent one is listened to and left
/// alone; one that streams NMEA is used but never written to; one that says it is a u-blox is
/// sent u-blox commands only after it said so.
func followPossible(fixtures: String, source: HotplugSource) async {
  let bench = FollowBench(fixtures: fixtures)
  bench.load("ftdi-ft2232h-adapter")
  let silentPort = bench.plugPL2303(port: 4, number: 0)
  let silent = bench.mock(silentPort.node, name: "silent")

  let discovery = DeviceDiscovery(source: source)
  emit([("source", quoted(discovery.hotplugSource.rawValue))])
  // The connector itself, to see which device it follows (the scenario waits for it to take
  // a device before subscribing, so that no open races the hotplug event).
  let connector = DiscoveringConnector(
    selector: .first, discovery: discovery,
    baud: .automatic(candidates: [.b9600, .b4800], timePerRate: .seconds(2)))
  let receiver = GPSReceiver(connector: connector, options: followOptions())
  let log = bench.log
  var subscription = receiver.subscribe { log.record($0) }

  // The silent bridge is listened to at both rates, then rejected and closed.
  await bench.wait("rejected", since: 0) { $0.hasDisconnected }
  emit([
    ("step", quoted("silent")), ("written", "\(silent.bytesWritten.count)"),
    ("descriptors", "\(silent.openDescriptors)"),
  ])

  // A bridge streaming NMEA (no banner): used, never written to.
  var mark = bench.log.count
  let nmeaPort = bench.plugPL2303(port: 6, number: 4)
  let nmea = bench.mock(nmeaPort.node, name: "nmea bridge", latitude: 40.4168, .receiver(.generic))
  await bench.wait("streaming", since: mark) { bench.fixes(from: "nmea bridge", in: $0) > 0 }
  let descriptorsWhileStreaming = nmea.openDescriptors
  sleep(milliseconds: 1000)
  subscription.cancel()
  await bench.wait("powered off") {
    let statistics = receiver.statistics
    return statistics.powerOffs == statistics.powerOns && nmea.openDescriptors == 0
  }
  emit([
    ("step", quoted("nmea bridge closed")), ("written", "\(nmea.bytesWritten.count)"),
    ("descriptorsWhileStreaming", "\(descriptorsWhileStreaming)"),
  ])

  // A u-blox behind a bridge that says what it is. The bridge above goes first; the silent
  // one stays rejected.
  bench.unplug(nmeaPort)
  nmea.stop()
  let ubloxPort = bench.plugPL2303(port: 7, number: 5)
  let bridged = bench.mock(
    ubloxPort.node, name: "ublox bridge", latitude: 41.3851, .receiverWithBanner(.ublox(.m8)))
  await bench.wait("bridged u-blox attached") { connector.currentDevice?.path == ubloxPort.node }
  mark = bench.log.count
  subscription = receiver.subscribe { log.record($0) }
  await bench.wait("bridged u-blox streaming", since: mark) {
    bench.fixes(from: "ublox bridge", in: $0) >= 3
  }
  let writtenWhileStreaming = bridged.bytesWritten.count
  subscription.cancel()
  await bench.wait("standby sent") {
    let statistics = receiver.statistics
    return statistics.powerOffs == statistics.powerOns && bridged.openDescriptors == 0
  }
  bridged.settle()
  emit([
    ("step", quoted("bridged u-blox off")), ("writtenWhileStreaming", "\(writtenWhileStreaming)"),
    ("commands", "[" + bridged.commands.map { quoted($0) }.joined(separator: ",") + "]"),
    ("power", quoted(bridged.powerState)),
  ])

  // Powered on again: now it is woken with u-blox commands.
  mark = bench.log.count
  subscription = receiver.subscribe { log.record($0) }
  await bench.wait("bridged u-blox woken", since: mark) {
    bench.fixes(from: "ublox bridge", in: $0) > 0
  }
  subscription.cancel()
  await bench.wait("bridged u-blox off again") {
    let statistics = receiver.statistics
    return statistics.powerOffs == statistics.powerOns && bridged.openDescriptors == 0
  }

  // Another bridge streaming plain NMEA, after the identified u-blox: what the u-blox said
  // about itself must not make the driver write to this one.
  bench.unplug(ubloxPort)
  bridged.stop()
  let otherPort = bench.plugPL2303(port: 9, number: 6)
  let other = bench.mock(
    otherPort.node, name: "second nmea bridge", latitude: 39.4699, .receiver(.generic))
  await bench.wait("second bridge attached") { connector.currentDevice?.path == otherPort.node }
  mark = bench.log.count
  subscription = receiver.subscribe { log.record($0) }
  await bench.wait("second bridge streaming", since: mark) {
    bench.fixes(from: "second nmea bridge", in: $0) >= 3
  }
  subscription.cancel()
  await bench.wait("second bridge off") {
    let statistics = receiver.statistics
    return statistics.powerOffs == statistics.powerOns && other.openDescriptors == 0
  }
  emit([
    ("step", quoted("written at the end")), ("silent", "\(silent.bytesWritten.count)"),
    ("secondBridge", "\(other.bytesWritten.count)"),
  ])
  await receiver.shutdown()
  discovery.shutdown()
  bench.finish(status: 0)
}
