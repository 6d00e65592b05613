import Chipsets
import Foundation
import GPSDProtocol
import NMEA
import SerialGPS
import Testing

@testable import GPSDServer

/// The protocol and power decisions, driven event by event without sockets or receivers.
@Suite struct ServerStateTests {
  static let wall = UTCTimestamp(secondsSinceUnixEpoch: 1_796_025_478)

  /// What the receivers' hubs answer, set by each test: the hubs own the latest fix and
  /// the replay rule (tested in GPSReceiverTests); the state only asks.
  struct HubFixes: LatestFixes {
    var replays: [DeviceID: FixUpdate] = [:]
    var latest: [DeviceID: FixUpdate] = [:]
    func replay(of device: DeviceID) -> FixUpdate? { replays[device] }
    func latest(of device: DeviceID) -> FixUpdate? { latest[device] }
  }

  struct Harness {
    var state = ServerState(settings: ServerState.Settings())
    var fixes = HubFixes()

    mutating func connect(_ id: ClientID) -> [ServerAction] { state.clientConnected(id) }

    mutating func say(_ id: ClientID, _ text: String) -> [ServerAction] {
      let bytes = Array(text.utf8)
      let fixes = self.fixes
      return bytes.withUnsafeBytes { state.clientInput(id, $0, wallClock: wall, fixes: fixes) }
    }

    mutating func add(_ id: DeviceID, _ path: String, aliases: [String] = []) -> [ServerAction] {
      state.deviceAdded(id, DeviceDescription(path: path, aliases: aliases), wallClock: wall)
    }

    mutating func event(_ id: DeviceID, _ event: ReceiverEvent) -> [ServerAction] {
      state.receiverEvent(id, .event(event), wallClock: wall)
    }

    mutating func rawData(_ id: DeviceID, _ bytes: [UInt8]) -> [ServerAction] {
      state.receiverEvent(id, .rawData(bytes), wallClock: wall)
    }
  }

  /// The report lines sent to `client`, parsed.
  static func reports(_ actions: [ServerAction], to client: ClientID) -> [[String: Any]] {
    lines(actions, to: client).compactMap {
      try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
    }
  }

  static func lines(_ actions: [ServerAction], to client: ClientID) -> [String] {
    var text = ""
    for case .send(let id, let bytes) in actions where id == client {
      text += String(decoding: bytes, as: UTF8.self)
    }
    #expect(text.isEmpty || text.hasSuffix("\r\n"), "every report ends with CR LF")
    return text.split(separator: "\r\n", omittingEmptySubsequences: true).map(String.init)
  }

  static func classes(_ actions: [ServerAction], to client: ClientID) -> [String] {
    reports(actions, to: client).map { $0["class"] as? String ?? "?" }
  }

  static func subscriptions(_ actions: [ServerAction]) -> [ServerAction] {
    actions.filter { if case .subscribe = $0 { true } else { false } }
  }

  static func fix(second: UInt8, latitudeMinutes: UInt64 = 5_678_900) -> Fix {
    var fix = Fix()
    fix.time = UTCTime(hour: 12, minute: 0, second: second)
    fix.date = UTCDate(year: 2026, month: 3, day: 14)
    fix.mode = .threeD
    fix.position = Position(
      latitude: Coordinate(
        degrees: 46, scaledMinutes: latitudeMinutes, fractionDigits: 5, isNegative: false),
      longitude: Coordinate(
        degrees: 7, scaledMinutes: 2_612_300, fractionDigits: 5, isNegative: false))
    fix.satellitesUsed = 8
    return fix
  }

  static func live(_ fix: Fix) -> ReceiverEvent {
    .fix(FixUpdate(fix: fix, age: .zero, isReplay: false, arrival: .origin))
  }

  @Test func versionOnConnectAndAnswersWithoutPower() {
    var h = Harness()
    _ = h.add(1, "/dev/ttyACM0")
    #expect(Self.classes(h.connect(7), to: 7) == ["VERSION"])
    let answers = h.say(7, "?VERSION;?DEVICES;\n?POLL;\n?WATCH;\n?DEVICE;\n")
    #expect(
      Self.classes(answers, to: 7) == ["VERSION", "DEVICES", "POLL", "DEVICES", "WATCH", "DEVICE"])
    #expect(Self.subscriptions(answers).isEmpty, "asking never powers a receiver")
    let poll = Self.reports(answers, to: 7)[2]
    #expect(poll["active"] as? Int == 0)
    #expect((poll["tpv"] as? [Any])?.isEmpty == true)
  }

  @Test func malformedCommandsGetAnErrorAndTheConnectionGoesOn() {
    var h = Harness()
    _ = h.connect(1)
    let actions = h.say(
      1,
      "?FOO;\n?WATCH={\"enable\":\n?WATCH=[]\n" + String(repeating: "?", count: 3000)
        + "\n?VERSION;\n")
    let reports = Self.reports(actions, to: 1)
    #expect(
      reports.map { $0["class"] as? String } == ["ERROR", "ERROR", "ERROR", "ERROR", "VERSION"])
    #expect((reports[0]["message"] as? String) == "Unrecognized request '?FOO;'")
    #expect(Self.subscriptions(actions).isEmpty)
  }

  /// Client text in an ERROR message (quotes, backslashes, control bytes, invalid UTF-8) comes
  /// back as valid JSON.
  @Test func hostileTextIsEscaped() throws {
    var h = Harness()
    _ = h.add(1, "/dev/odd\"name\\\u{1}")
    _ = h.connect(1)
    var bytes = Array("?X\"\\\u{7}\t".utf8) + [0xFF, 0xC3] + Array(";\n?DEVICES;\n".utf8)
    let actions = bytes.withUnsafeMutableBytes {
      h.state.clientInput(1, UnsafeRawBufferPointer($0), wallClock: Self.wall, fixes: HubFixes())
    }
    bytes.removeAll()
    let lines = Self.lines(actions, to: 1)
    #expect(lines.count == 2)
    for line in lines {
      #expect(line.utf8.allSatisfy { $0 >= 0x20 && $0 < 0x7F }, "plain ASCII: \(line)")
      _ = try JSONSerialization.jsonObject(with: Data(line.utf8))
    }
    let devices = Self.reports(actions, to: 1)[1]["devices"] as! [[String: Any]]
    #expect(devices.first?["path"] as? String == "/dev/odd\"name\\\u{1}")
  }

  @Test func theFirstWatcherSubscribesAndTheLastOneReleases() {
    var h = Harness()
    _ = h.add(1, "/dev/ttyACM0")
    _ = h.connect(1)
    _ = h.connect(2)
    let first = h.say(1, "?WATCH={\"enable\":true,\"json\":true}\n")
    #expect(Self.classes(first, to: 1) == ["DEVICES", "WATCH"])
    #expect(Self.subscriptions(first) == [.subscribe(1, .reports)])
    #expect(Self.subscriptions(h.say(2, "?WATCH={\"enable\":true,\"json\":true}\n")).isEmpty)
    // Fixes reach both watchers; a client that is not watching gets none.
    _ = h.connect(3)
    let fix = h.event(1, Self.live(Self.fix(second: 1)))
    #expect(Self.classes(fix, to: 1) == ["TPV"])
    #expect(Self.classes(fix, to: 2) == ["TPV"])
    #expect(Self.classes(fix, to: 3).isEmpty)
    #expect(Self.reports(fix, to: 1)[0]["device"] as? String == "/dev/ttyACM0")

    #expect(Self.subscriptions(h.say(1, "?WATCH={\"enable\":false}\n")).isEmpty)
    #expect(Self.subscriptions(h.state.clientDisconnected(2)) == [.subscribe(1, nil)])
    // Re-enabling subscribes again.
    #expect(Self.subscriptions(h.say(1, "?WATCH={\"enable\":true}\n")) == [.subscribe(1, .reports)])
    #expect(Self.subscriptions(h.state.clientDisconnected(1)) == [.subscribe(1, nil)])
  }

  @Test func aDeviceFilterPowersOnlyThatDevice() {
    var h = Harness()
    _ = h.add(1, "/dev/ttyACM0", aliases: ["/dev/serial/by-id/usb-u-blox-if00"])
    _ = h.add(2, "/dev/ttyUSB0")
    _ = h.connect(1)
    let watch = h.say(
      1, "?WATCH={\"enable\":true,\"json\":true,\"device\":\"/dev/serial/by-id/usb-u-blox-if00\"}\n"
    )
    #expect(Self.subscriptions(watch) == [.subscribe(1, .reports)])
    #expect(
      Self.reports(watch, to: 1).last?["device"] as? String == "/dev/serial/by-id/usb-u-blox-if00")
    // Another device's fixes are not sent (it streams for a watcher of every device, who
    // leaves again); an unknown device is refused and changes nothing.
    _ = h.connect(2)
    #expect(
      Self.subscriptions(h.say(2, "?WATCH={\"enable\":true,\"json\":true}\n"))
        == [.subscribe(2, .reports)])
    let other = h.event(2, Self.live(Self.fix(second: 1)))
    #expect(Self.classes(other, to: 1).isEmpty)
    #expect(Self.classes(other, to: 2) == ["TPV"])
    #expect(Self.subscriptions(h.state.clientDisconnected(2)) == [.subscribe(2, nil)])
    let unknown = h.say(1, "?WATCH={\"enable\":true,\"device\":\"/dev/nope\"}\n")
    #expect(Self.classes(unknown, to: 1) == ["ERROR"])
    #expect(Self.reports(unknown, to: 1)[0]["message"] as? String == "No such device as /dev/nope")
    #expect(Self.subscriptions(unknown).isEmpty)
    // Widening to every device subscribes the other one.
    #expect(Self.subscriptions(h.say(1, "?WATCH={\"enable\":true}\n")) == [.subscribe(2, .reports)])
  }

  /// NMEA watchers get the sentences the reader framed, raw 2 watchers the bytes verbatim;
  /// the subscription asks for each only while someone wants it. (That the sentences come
  /// out whole across reads, without noise or bad checksums, is the reader's: RawDataTests.)
  @Test func nmeaWatchersAddSentencesAndRawWatchersAddBytes() {
    var h = Harness()
    _ = h.add(1, "/dev/ttyACM0")
    _ = h.connect(1)
    _ = h.connect(2)
    _ = h.connect(3)
    #expect(
      Self.subscriptions(h.say(1, "?WATCH={\"enable\":true,\"json\":true}\n")) == [
        .subscribe(1, .reports)
      ])
    #expect(
      Self.subscriptions(h.say(2, "?WATCH={\"enable\":true,\"nmea\":true}\n"))
        == [.subscribe(1, .reportsAndSentences)])
    #expect(
      Self.subscriptions(h.say(3, "?WATCH={\"enable\":true,\"raw\":2}\n"))
        == [.subscribe(1, ReceiverNeed(sentences: true, rawData: true))])
    let gga = "$GPGGA,120001.00,4656.78900,N,00726.12300,E,1,08,0.9,540.2,M,48.0,M,,*"
    let sentence = Array(NMEAChecksum.frame(String(gga.dropFirst().dropLast())))
    let chunk = Array("\u{1}noise".utf8) + sentence
    // The bytes go verbatim to the raw 2 watcher only, the sentences to the NMEA watcher
    // only (raw 2 gets the bytes instead); the JSON watcher gets neither.
    #expect(h.rawData(1, chunk) == [.send(3, chunk)])
    #expect(
      h.state.receiverEvent(1, .sentences(sentence), wallClock: Self.wall) == [.send(2, sentence)])
    // The NMEA watchers leave: back to reports only.
    #expect(
      Self.subscriptions(h.state.clientDisconnected(2)) == [.subscribe(1, .reportsAndRawData)])
    #expect(Self.subscriptions(h.state.clientDisconnected(3)) == [.subscribe(1, .reports)])
  }

  @Test func replaysAreSentOnceAndNewcomersGetTheLatestFix() {
    var h = Harness()
    _ = h.add(1, "/dev/ttyACM0")
    _ = h.connect(1)
    _ = h.say(1, "?WATCH={\"enable\":true,\"json\":true}\n")
    let fix = Self.fix(second: 1)
    #expect(Self.classes(h.event(1, Self.live(fix)), to: 1) == ["TPV"])
    let view = SatelliteView(time: fix.time, satellites: [], hdop: 0.9)
    let sky = h.event(1, .satellites(view))
    #expect(Self.reports(sky, to: 1).first?["time"] as? String == "2026-03-14T12:00:01.000Z")
    // The receiver's replay of the same fix to a replacement subscription is not sent again.
    let replay = ReceiverEvent.fix(
      FixUpdate(fix: fix, age: .milliseconds(300), isReplay: true, arrival: .origin))
    #expect(Self.classes(h.event(1, replay), to: 1).isEmpty)
    // A newcomer gets the hub's replay at once, with the SKY of that fix.
    _ = h.connect(2)
    h.fixes.replays[1] = FixUpdate(fix: fix, age: .seconds(2), isReplay: true, arrival: .origin)
    #expect(
      Self.classes(h.say(2, "?WATCH={\"enable\":true,\"json\":true}\n"), to: 2) == [
        "DEVICES", "WATCH", "TPV", "SKY",
      ])
    // … but not once the hub no longer replays it (older than the replay expiry).
    _ = h.connect(3)
    h.fixes.replays[1] = nil
    h.fixes.latest[1] = FixUpdate(fix: fix, age: .seconds(32), isReplay: true, arrival: .origin)
    #expect(
      Self.classes(h.say(3, "?WATCH={\"enable\":true,\"json\":true}\n"), to: 3) == [
        "DEVICES", "WATCH",
      ])
    // POLL reports it whatever its age, without powering anything.
    _ = h.connect(4)
    let poll = h.say(4, "?POLL;\n")
    #expect(Self.subscriptions(poll).isEmpty)
    let report = Self.reports(poll, to: 4)[0]
    #expect(report["active"] as? Int == 1)
    #expect(
      ((report["tpv"] as? [[String: Any]])?.first?["time"] as? String) == "2026-03-14T12:00:01.000Z"
    )
    #expect(((report["sky"] as? [[String: Any]])?.count) == 1)
  }

  static func tpvLine(_ fix: Fix, _ path: String = "/dev/ttyACM0") -> [UInt8] {
    var writer = JSONWriter()
    writer.tpv(fix, device: path)
    writer.newline(crlf: true)
    return writer.bytes
  }

  static let watchJSON = "?WATCH={\"enable\":true,\"json\":true}\n"

  /// A newcomer's first TPV is the hub's replay, asked when it starts watching; its SKY
  /// follows when the server's latest view belongs to that fix. When the hub is ahead of the
  /// server (the fix is still on its way to the loop), the newcomer is not sent it twice.
  @Test func aNewcomerIsReplayedTheHubsFixOnce() {
    var h = Harness()
    _ = h.add(1, "/dev/ttyACM0")
    _ = h.connect(1)
    _ = h.say(1, Self.watchJSON)
    let first = Self.fix(second: 1)
    #expect(h.event(1, Self.live(first)) == [.send(1, Self.tpvLine(first))])
    let sky = h.event(1, .satellites(SatelliteView(time: first.time, satellites: [], hdop: 0.9)))
    guard case .send(1, let skyLine)? = sky.first, sky.count == 1 else {
      Issue.record("one SKY to the watcher: \(sky)")
      return
    }

    _ = h.connect(2)
    h.fixes.replays[1] = FixUpdate(fix: first, age: .seconds(2), isReplay: true, arrival: .origin)
    let second = h.say(2, Self.watchJSON)
    #expect(Self.classes(Array(second.prefix(1)), to: 2) == ["DEVICES", "WATCH"])
    #expect(second.dropFirst() == [.send(2, Self.tpvLine(first) + skyLine)])

    // The hub already has the next fix; the loop has not handled it yet: no SKY with it.
    let next = Self.fix(second: 2)
    _ = h.connect(3)
    h.fixes.replays[1] = FixUpdate(
      fix: next, age: .milliseconds(1), isReplay: true, arrival: .origin)
    let third = h.say(3, Self.watchJSON)
    #expect(third.dropFirst() == [.send(3, Self.tpvLine(next))])
    // When it arrives live, the newcomer that was replayed it is skipped, once.
    #expect(
      h.event(1, Self.live(next)) == [.send(1, Self.tpvLine(next)), .send(2, Self.tpvLine(next))])
    let later = Self.fix(second: 3)
    #expect(
      h.event(1, Self.live(later)) == [
        .send(1, Self.tpvLine(later)), .send(2, Self.tpvLine(later)), .send(3, Self.tpvLine(later)),
      ])
  }

  /// The first watcher subscribes the device; the hub replays to the new subscription the fix
  /// the watcher was already sent: it is not sent again.
  @Test func theFirstWatchersReplayIsNotRepeatedBySubscribing() {
    var h = Harness()
    _ = h.add(1, "/dev/ttyACM0")
    _ = h.connect(1)
    let fix = Self.fix(second: 7)
    h.fixes.replays[1] = FixUpdate(fix: fix, age: .seconds(3), isReplay: true, arrival: .origin)
    let watch = h.say(1, Self.watchJSON)
    #expect(watch.dropFirst() == [.send(1, Self.tpvLine(fix)), .subscribe(1, .reports)])
    let replayed = ReceiverEvent.fix(
      FixUpdate(fix: fix, age: .seconds(3), isReplay: true, arrival: .origin))
    #expect(h.event(1, replayed) == [])
    // A watcher that asked for no reports is not replayed anything, and still powers.
    _ = h.connect(2)
    #expect(h.say(2, "?WATCH={\"enable\":true}\n").dropFirst() == [])
  }

  /// POLL reports the hub's latest fix of each device, whatever its age, and powers nothing.
  @Test func pollReportsTheHubsLatestFix() throws {
    var h = Harness()
    _ = h.add(1, "/dev/ttyACM0")
    _ = h.add(2, "/dev/ttyUSB0")
    _ = h.connect(1)
    h.fixes.latest[2] = FixUpdate(
      fix: Self.fix(second: 9), age: .seconds(600), isReplay: true, arrival: .origin)
    let poll = h.say(1, "?POLL;\n")
    #expect(Self.subscriptions(poll).isEmpty)
    let report = try #require(Self.reports(poll, to: 1).first)
    #expect(report["active"] as? Int == 1)
    let tpv = try #require((report["tpv"] as? [[String: Any]])?.first)
    #expect(tpv["device"] as? String == "/dev/ttyUSB0")
    #expect(tpv["time"] as? String == "2026-03-14T12:00:09.000Z")
  }

  @Test func deviceReportsFollowTheReceiver() {
    var h = Harness()
    _ = h.add(1, "/dev/ttyACM0")
    _ = h.connect(1)
    _ = h.say(1, "?WATCH={\"enable\":true,\"json\":true}\n")
    #expect(Self.classes(h.event(1, .status(.poweringOn)), to: 1).isEmpty)
    let active = Self.reports(h.event(1, .status(.streaming)), to: 1)
    #expect(active.first?["class"] as? String == "DEVICE")
    #expect(active.first?["activated"] as? String == "2026-11-30T07:57:58.000Z")
    #expect(active.first?["driver"] as? String == "NMEA0183")
    #expect(Self.classes(h.event(1, .status(.noFix)), to: 1).isEmpty, "once per activation")
    let gone = Self.lines(
      h.event(1, .status(.disconnected(reason: FailureReason(.unplugged, "unplugged")))), to: 1)
    #expect(gone == [#"{"class":"DEVICE","path":"/dev/ttyACM0","activated":0}"#])
    #expect(Self.classes(h.event(1, .status(.reconnected)), to: 1).isEmpty)
    #expect(Self.classes(h.event(1, .status(.streaming)), to: 1) == ["DEVICE"])
  }

  /// cgps and gpsmon show the DEVICE report's driver: gpsd's name for the family's driver
  /// (`type_name` in gpsd 3.22's drivers/), not NMEA0183 for every receiver.
  @Test(
    "DEVICE names the driver gpsd uses for the receiver's family",
    arguments: [
      (ChipsetFamily.ublox, "u-blox"), (.sirf, "SiRF"), (.mediatek, "MTK-3301"),
      (.nmea, "NMEA0183"),
    ])
  func deviceNamesTheFamilysDriver(family: ChipsetFamily, driver: String) {
    var h = Harness()
    _ = h.add(1, "/dev/ttyACM0")
    _ = h.connect(1)
    _ = h.say(1, "?WATCH={\"enable\":true,\"json\":true}\n")
    let actions = h.state.receiverEvent(
      1, .event(.status(.streaming)), wallClock: Self.wall, family: family)
    let report = Self.reports(actions, to: 1).first
    #expect(report?["class"] as? String == "DEVICE")
    #expect(report?["driver"] as? String == driver)
    let devices = Self.reports(h.say(1, "?DEVICES;\n"), to: 1).first
    let listed = (devices?["devices"] as? [[String: Any]])?.first
    #expect(listed?["driver"] as? String == driver, "\(String(describing: devices))")
  }

  @Test func hotpluggedDevicesJoinAndLeaveTheWatchers() {
    var h = Harness()
    _ = h.connect(1)
    _ = h.connect(2)
    _ = h.say(1, "?WATCH={\"enable\":true,\"json\":true}\n")
    _ = h.say(2, "?POLL;\n")
    let added = h.add(5, "/dev/ttyACM0")
    #expect(
      Self.subscriptions(added) == [.subscribe(5, .reports)], "a watcher of all devices powers it")
    let notice = Self.reports(added, to: 1)
    #expect(notice.first?["class"] as? String == "DEVICE")
    #expect(notice.first?["activated"] as? String != nil)
    #expect(Self.classes(added, to: 2).isEmpty)
    let removed = h.state.deviceRemoved(5)
    #expect(
      Self.lines(removed, to: 1) == [#"{"class":"DEVICE","path":"/dev/ttyACM0","activated":0}"#])
    #expect(removed.contains(.subscribe(5, nil)))
    #expect(removed.last == .release(5))
    // Nobody watches a device added while no one watches.
    _ = h.say(1, "?WATCH={\"enable\":false}\n")
    #expect(Self.subscriptions(h.add(6, "/dev/ttyACM1")).isEmpty)
    #expect(h.state.unexpectedEvents == 0)
  }

  /// Inputs the loop never sends (it drops events of ended subscriptions by their generation,
  /// and knows the same clients and devices) are not dropped unseen: each is counted, and
  /// changes nothing. (A debug build stops at the first: turned off here to count them.)
  @Test func unexpectedInputsAreCountedAndChangeNothing() {
    var h = Harness()
    h.state.assertsOnUnexpectedEvents = false
    _ = h.add(1, "/dev/ttyACM0")
    _ = h.add(2, "/dev/ttyACM1")
    _ = h.connect(1)
    _ = h.say(1, "?WATCH={\"enable\":true,\"json\":true,\"device\":\"/dev/ttyACM0\"}\n")
    #expect(h.state.unexpectedEvents == 0)
    // A fix of a device nobody watches (not subscribed), and of one removed.
    #expect(h.event(2, Self.live(Self.fix(second: 1))) == [])
    #expect(h.state.unexpectedEvents == 1)
    _ = h.state.deviceRemoved(1)
    #expect(h.event(1, Self.live(Self.fix(second: 2))) == [])
    #expect(h.state.unexpectedEvents == 2)
    // Clients and devices it does not know.
    #expect(h.say(9, "?VERSION;\n") == [])
    #expect(h.state.clientDisconnected(9) == [])
    #expect(h.state.deviceRemoved(1) == [])
    #expect(h.state.deviceRenamed(7, DeviceDescription(path: "/dev/x")) == [])
    #expect(h.state.unexpectedEvents == 6)
    // The known ones are as they were.
    #expect(h.state.devices.map(\.id) == [2])
    #expect(Array(h.state.clients.keys) == [1])
    #expect(h.event(2, .status(.streaming)) == [])
    #expect(h.state.unexpectedEvents == 7)
  }
}
