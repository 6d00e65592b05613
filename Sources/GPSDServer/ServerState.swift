import Chipsets
import GPSDProtocol
import NMEA
import SerialGPS

typealias ClientID = Int
typealias DeviceID = Int

/// What a device's receiver subscription must deliver, if the server needs one at all:
/// always fixes, satellite views and statuses (some client watches the device), and more as
/// its watchers ask.
struct ReceiverNeed: Sendable, Hashable {
  /// The sentences the reader framed: some watcher wants NMEA (`nmea`, `raw` 1).
  var sentences = false
  /// The bytes read from the device: some watcher wants them verbatim (`raw` 2).
  var rawData = false

  static let reports = ReceiverNeed()
  static let reportsAndSentences = ReceiverNeed(sentences: true)
  static let reportsAndRawData = ReceiverNeed(rawData: true)
}

/// What the server's state asks the event loop to do, in order.
enum ServerAction: Sendable, Hashable {
  /// Queue these bytes for the client.
  case send(ClientID, [UInt8])
  /// Subscribe the device's receiver as `need` says, replacing any current subscription, or
  /// drop the subscription (`nil`; the receiver powers off after its linger).
  case subscribe(DeviceID, ReceiverNeed?)
  /// The device is gone: shut its receiver down.
  case release(DeviceID)
}

/// Where a device came from, and what it answers to.
/// What a device's time service reports to watchers that asked for `"pps":true`.
enum DeviceTimeReport: Sendable, Hashable {
  /// gpsd's `TOFF`: an epoch's receiver time and the arrival of its first byte.
  case offset(real: GPSDTime, clock: GPSDTime)
  /// gpsd's `PPS`: the labelled second, the system time of the pulse's edge as timestamped,
  /// and the receiver's quantisation error of the edge in picoseconds when it gave one.
  case pulse(real: GPSDTime, clock: GPSDTime, precision: Int, quantizationError: Int? = nil)
}

extension WatchPolicy {
  /// Whether the watch gets `TOFF` and `PPS`: gpsd sends them to enabled JSON watchers that
  /// asked for `pps`.
  var wantsTimeReports: Bool { wantsReports && pps }
}

/// What the receivers remember of their fixes, asked of each device's receiver: its
/// subscription hub is the one owner of the latest fix, its age and the replay expiry.
protocol LatestFixes {
  /// What a new subscriber of the device would be replayed now (``GPSReceiver/replay``).
  func replay(of device: DeviceID) -> FixUpdate?
  /// The device's latest fix however old (``GPSReceiver/latestFix``).
  func latest(of device: DeviceID) -> FixUpdate?
}

struct DeviceDescription: Sendable, Hashable {
  /// The path reported to clients.
  var path: String
  /// Other names a client may use for it in `?WATCH={"device":…}` (by-id and udev links).
  var aliases: [String] = []
}

/// The gpsd protocol side of the server, without I/O: clients, their watch policies, the
/// devices and what was last heard from them. Every input returns the actions to perform;
/// the event loop performs them in order. Counting watchers per device here is what turns
/// `?WATCH` into power: a device is subscribed (powered) exactly while one client or more
/// watches it.
struct ServerState {
  struct Settings: Sendable {
    var release = "3.22"
    var revision = "serialgps"
    var protocolMajor = 3
    var protocolMinor = 14
    var maximumRequestLength = 1024
  }

  struct Client {
    var reader: GPSDRequestReader
    var policy = WatchPolicy()
    /// The devices this client counts as a watcher of.
    var watching: Set<DeviceID> = []
    /// The fix each device's replay gave this client when it started watching, until the
    /// device's next fix: the same fix arriving live is not sent to it twice.
    var replayed: [DeviceID: Fix] = [:]
  }

  struct Device {
    let id: DeviceID
    var description: DeviceDescription
    var watchers: Set<ClientID> = []
    /// The subscription asked of the loop.
    var need: ReceiverNeed?
    /// Set when data starts arriving after a power-on; cleared when the device is closed.
    var activated: UTCTimestamp?
    var seenData = false
    /// gpsd's name for the driver of the receiver's family (``ChipsetFamily/gpsdDriverName``),
    /// set when data starts arriving.
    var driver = ChipsetFamily.nmea.gpsdDriverName
    /// The fix last sent to the watchers: the epoch a satellite view belongs to, and what a
    /// replay to a replaced subscription repeats.
    var lastFix: Fix?
    /// The latest SKY as a JSON object (no line end), for POLL and newcomers. Satellite views
    /// are the server's alone (the hub keeps fixes only).
    var latestSKY: [UInt8]?
    /// NMEA made from the fixes of a receiver that sends none, for `"nmea":true` watchers.
    var pseudoNMEA = PseudoNMEA()

    var report: GPSDDevice {
      GPSDDevice(
        path: description.path, driver: seenData ? driver : nil, activated: activated,
        flags: seenData ? GPSDDevice.seenGPS : nil)
    }

    func answers(to name: String) -> Bool {
      description.path == name || description.aliases.contains(name)
    }
  }

  let settings: Settings
  private(set) var clients: [ClientID: Client] = [:]
  /// In the order added, which is the order DEVICES lists them.
  private(set) var devices: [Device] = []
  private var writer = JSONWriter(capacity: 16 * 1024)
  /// Inputs the event loop never sends while it keeps its side of the contract (a client or
  /// device the state does not know, a receiver event for a device that is not subscribed):
  /// a bug, so a debug build stops at it; a release build ignores it and counts it here
  /// (``ServerStatistics/unexpectedEvents``) rather than dropping it unseen.
  private(set) var unexpectedEvents = 0
  /// Off only in tests that feed unexpected inputs on purpose, to check they are counted by
  /// the same code a release build runs (as `PowerPolicy`'s).
  var assertsOnUnexpectedEvents = true

  init(settings: Settings) {
    self.settings = settings
  }

  // MARK: - Clients

  /// A client connected: it is sent the VERSION report, as gpsd does.
  mutating func clientConnected(_ id: ClientID) -> [ServerAction] {
    clients[id] = Client(reader: GPSDRequestReader(maximumLength: settings.maximumRequestLength))
    return [.send(id, versionLine())]
  }

  /// A client disconnected or was dropped: it stops watching.
  mutating func clientDisconnected(_ id: ClientID) -> [ServerAction] {
    guard let client = clients.removeValue(forKey: id) else {
      return unexpected("disconnect of unknown client \(id)")
    }
    var actions: [ServerAction] = []
    for deviceID in client.watching {
      guard let index = deviceIndex(deviceID) else { continue }
      devices[index].watchers.remove(id)
      actions += reconcile(index)
    }
    return actions
  }

  /// Bytes from a client: the commands they complete are answered.
  /// `fixes` is asked for the latest fixes when a newcomer watches or a client polls.
  mutating func clientInput(
    _ id: ClientID, _ bytes: UnsafeRawBufferPointer, wallClock: UTCTimestamp,
    fixes: some LatestFixes
  ) -> [ServerAction] {
    guard var client = clients[id] else { return unexpected("input from unknown client \(id)") }
    let commands = client.reader.read(bytes)
    clients[id] = client
    var actions: [ServerAction] = []
    for command in commands {
      actions += handle(command, from: id, wallClock: wallClock, fixes: fixes)
    }
    return actions
  }

  /// The number of clients that watch at least one device (for statistics and tests).
  var watcherCount: Int { clients.values.filter { $0.policy.enable }.count }

  /// Whether the client has watcher mode on (it is exempt from the idle timeout).
  func isWatching(_ id: ClientID) -> Bool { clients[id]?.policy.enable == true }

  private mutating func handle(
    _ command: GPSDCommand, from id: ClientID, wallClock: UTCTimestamp, fixes: some LatestFixes
  ) -> [ServerAction] {
    switch command {
    case .version:
      return [.send(id, versionLine())]
    case .devices:
      return [.send(id, devicesLine())]
    case .watch(nil):
      let policy = clients[id]!.policy
      return [.send(id, devicesLine() + line { $0.watch(policy) })]
    case .watch(let request?):
      return watch(request, from: id, fixes: fixes)
    case .poll:
      return [.send(id, poll(for: id, wallClock: wallClock, fixes: fixes))]
    case .device(let request):
      return [.send(id, device(request))]
    case .invalid(let message):
      return [.send(id, line { $0.error(message) })]
    }
  }

  private mutating func watch(
    _ request: WatchRequest, from id: ClientID, fixes: some LatestFixes
  ) -> [ServerAction] {
    if request.enable != false, let name = request.device, !name.isEmpty,
      !devices.contains(where: { $0.answers(to: name) })
    {
      return [.send(id, line { $0.error("No such device as \(name)") })]
    }
    var client = clients[id]!
    client.policy.apply(request)
    let before = client.watching
    let after = watchedDevices(by: client.policy)
    client.watching = after
    clients[id] = client
    let policy = client.policy
    var actions: [ServerAction] = [.send(id, devicesLine() + line { $0.watch(policy) })]
    for deviceID in before.subtracting(after) {
      guard let index = deviceIndex(deviceID) else { continue }
      devices[index].watchers.remove(id)
      clients[id]?.replayed[deviceID] = nil
      actions += reconcile(index)
    }
    for deviceID in after.subtracting(before).sorted() {
      guard let index = deviceIndex(deviceID) else { continue }
      devices[index].watchers.insert(id)
      // A newcomer gets the latest fix at once rather than at the next epoch, as the
      // receiver's hub replays it to a new subscriber: while it is fresh, its time saying how
      // old it is. The SKY goes with it when it belongs to that fix.
      if policy.wantsReports, let replay = fixes.replay(of: deviceID) {
        actions.append(.send(id, self.replay(replay.fix, on: index)))
        clients[id]?.replayed[deviceID] = replay.fix
      }
    }
    // Rechecked for every watched device: a change of nmea/raw changes what they need.
    for deviceID in after {
      guard let index = deviceIndex(deviceID) else { continue }
      actions += reconcile(index)
    }
    return actions
  }

  private func watchedDevices(by policy: WatchPolicy) -> Set<DeviceID> {
    guard policy.enable else { return [] }
    guard let name = policy.device else { return Set(devices.map(\.id)) }
    return Set(devices.filter { $0.answers(to: name) }.map(\.id))
  }

  private mutating func poll(for id: ClientID, wallClock: UTCTimestamp, fixes: some LatestFixes)
    -> [UInt8]
  {
    let watching = clients[id]?.watching ?? []
    // gpsd reports only the devices the client watches; a client that watches none is told
    // about every device (gpsd would send empty lists), without powering any of them.
    let polled = devices.filter { watching.isEmpty || watching.contains($0.id) }
    let tpv = polled.compactMap { device in
      fixes.latest(of: device.id).map { tpvObject($0.fix, path: device.description.path) }
    }
    let sky = polled.compactMap(\.latestSKY)
    return line { $0.poll(time: wallClock, active: tpv.count, tpv: tpv, sky: sky) }
  }

  /// The TPV of `fix` as a JSON object (no line end).
  private mutating func tpvObject(_ fix: Fix, path: String) -> [UInt8] {
    writer.removeAll()
    writer.tpv(fix, device: path)
    return writer.bytes
  }

  /// The lines a newcomer is replayed: the fix's TPV, and the SKY when the server's latest
  /// view belongs to that fix (a fix the server has not handled yet has its SKY coming).
  private mutating func replay(_ fix: Fix, on index: Int) -> [UInt8] {
    var bytes = tpvObject(fix, path: devices[index].description.path) + [0x0D, 0x0A]
    if devices[index].lastFix == fix, let sky = devices[index].latestSKY {
      bytes += sky + [0x0D, 0x0A]
    }
    return bytes
  }

  private mutating func device(_ request: DeviceRequest?) -> [UInt8] {
    if let request, request.changesSettings {
      return line {
        $0.error(
          "Device settings (speed, serial mode, cycle, native mode, hexdata) are not changed "
            + "by this server; use `serialgps send` with the server stopped")
      }
    }
    if let path = request?.path {
      guard let report = devices.first(where: { $0.answers(to: path) })?.report else {
        return line { $0.error("Can't open \(path).") }
      }
      return line { $0.device(report) }
    }
    var out: [UInt8] = []
    for device in devices {
      let report = device.report
      out += line { $0.device(report) }
    }
    return out
  }

  private mutating func versionLine() -> [UInt8] {
    let settings = self.settings
    return line {
      $0.version(
        release: settings.release, revision: settings.revision,
        protocolMajor: settings.protocolMajor, protocolMinor: settings.protocolMinor)
    }
  }

  private mutating func devicesLine() -> [UInt8] {
    let reports = devices.map(\.report)
    return line { $0.devices(reports) }
  }

  // MARK: - Devices

  /// A device to serve appeared (at start, or plugged in). Watchers of every device start
  /// watching it (which powers it) and are told, as gpsd tells them.
  mutating func deviceAdded(
    _ id: DeviceID, _ description: DeviceDescription, wallClock: UTCTimestamp
  )
    -> [ServerAction]
  {
    devices.append(Device(id: id, description: description))
    let index = devices.count - 1
    var actions: [ServerAction] = []
    let notice = line {
      $0.report("DEVICE") { json in
        json.member("path", description.path)
        json.member("activated", wallClock)
      }
    }
    for (clientID, client) in clients.sorted(by: { $0.key < $1.key })
    where watchedDevices(by: client.policy).contains(id) {
      clients[clientID]!.watching.insert(id)
      devices[index].watchers.insert(clientID)
      if client.policy.wantsReports { actions.append(.send(clientID, notice)) }
    }
    actions += reconcile(index)
    return actions
  }

  /// A device went away (unplugged): its watchers are told and its receiver released.
  mutating func deviceRemoved(_ id: DeviceID) -> [ServerAction] {
    guard let index = deviceIndex(id) else { return unexpected("removal of unknown device \(id)") }
    let device = devices.remove(at: index)
    var actions: [ServerAction] = []
    let notice = line { $0.deviceDeactivated(path: device.description.path) }
    for clientID in device.watchers.sorted() {
      clients[clientID]?.watching.remove(id)
      clients[clientID]?.replayed[id] = nil
      if clients[clientID]?.policy.wantsReports == true { actions.append(.send(clientID, notice)) }
    }
    if device.need != nil { actions.append(.subscribe(id, nil)) }
    actions.append(.release(id))
    return actions
  }

  /// New names for a device (its udev links changed).
  mutating func deviceRenamed(_ id: DeviceID, _ description: DeviceDescription)
    -> [ServerAction]
  {
    guard let index = deviceIndex(id) else {
      return unexpected("new names for unknown device \(id)")
    }
    devices[index].description = description
    return []
  }

  /// Something from a device's receiver; `family`, with a status, is the chipset family its
  /// driver uses now (what the DEVICE report names once data arrives).
  mutating func receiverEvent(
    _ id: DeviceID, _ event: ReceiverEventOrRawData, wallClock: UTCTimestamp,
    family: ChipsetFamily? = nil
  ) -> [ServerAction] {
    // The loop drops events of a subscription it replaced or ended (by its generation).
    guard let index = deviceIndex(id), devices[index].need != nil else {
      return unexpected("receiver event for device \(id), which is not subscribed")
    }
    let path = devices[index].description.path
    if let family { devices[index].driver = family.gpsdDriverName }
    var actions = reports(for: event, on: index, path: path, wallClock: wallClock)
    if let sentences = devices[index].pseudoNMEA.sentences(for: event) {
      actions += broadcast(sentences, on: index) { self.wantsSentencesOnly($0) }
    }
    return actions
  }

  /// What a receiver's event sends: its reports, its raw bytes and sentences.
  private mutating func reports(
    for event: ReceiverEventOrRawData, on index: Int, path: String, wallClock: UTCTimestamp
  ) -> [ServerAction] {
    let id = devices[index].id
    switch event {
    case .event(.fix(let update)):
      // A replay of what was already sent (a subscription replaced to add raw data) is not
      // news; a replay the server has not seen (after a restart of the subscription) is.
      if update.isReplay, devices[index].lastFix == update.fix { return [] }
      devices[index].lastFix = update.fix
      let bytes = tpvObject(update.fix, path: path) + [0x0D, 0x0A]
      // A newcomer that was replayed this very fix when it started watching has it already.
      var actions: [ServerAction] = []
      for clientID in devices[index].watchers.sorted() {
        guard let client = clients[clientID] else { continue }
        if let replayed = client.replayed[id] {
          clients[clientID]!.replayed[id] = nil
          if replayed == update.fix { continue }
        }
        if client.policy.wantsReports { actions.append(.send(clientID, bytes)) }
      }
      return actions
    case .event(.satellites(let view)):
      let fix = devices[index].lastFix
      let time = fix.flatMap { fix in
        view.time == nil || view.time == fix.time ? fix.timestamp : nil
      }
      writer.removeAll()
      writer.sky(view, time: time, satellitesUsed: fix?.satellitesUsed, device: path)
      let object = writer.bytes
      devices[index].latestSKY = object
      return broadcast(object + [0x0D, 0x0A], on: index) { $0.wantsReports }
    case .event(.status(let status)):
      return statusChanged(status, on: index, wallClock: wallClock)
    case .rawData(let bytes):
      return broadcast(bytes, on: index) { $0.wantsVerbatim }
    case .sentences(let bytes):
      // Framed and checked by the reader, passed on as they arrived.
      return broadcast(bytes, on: index) { self.wantsSentencesOnly($0) }
    }
  }

  /// A time report of a device's time service, sent as gpsd 3.22 sends `TOFF` and `PPS`: to
  /// the device's watchers (so a device filter holds) whose watch has `enable`, `json` and
  /// `pps`.
  mutating func timeReport(_ id: DeviceID, _ report: DeviceTimeReport) -> [ServerAction] {
    guard let index = deviceIndex(id),
      devices[index].watchers.contains(where: { clients[$0]?.policy.wantsTimeReports == true })
    else { return [] }
    let path = devices[index].description.path
    let bytes = line { json in
      switch report {
      case .offset(let real, let clock):
        json.timeOffset(device: path, real: real, clock: clock)
      case .pulse(let real, let clock, let precision, let quantizationError):
        json.pulse(
          device: path, real: real, clock: clock, precision: precision,
          quantizationError: quantizationError)
      }
    }
    return broadcast(bytes, on: index) { $0.wantsTimeReports }
  }

  private func wantsSentencesOnly(_ policy: WatchPolicy?) -> Bool {
    guard let policy else { return false }
    return policy.wantsSentences && !policy.wantsVerbatim
  }

  private mutating func statusChanged(
    _ status: ReceiverStatus, on index: Int, wallClock: UTCTimestamp
  ) -> [ServerAction] {
    switch status {
    case .streaming, .noFix:
      // Data flows: the device is active (gpsd's "identified"), once per power-on.
      guard devices[index].activated == nil else { return [] }
      devices[index].seenData = true
      devices[index].activated = wallClock
      let report = devices[index].report
      return broadcast(line { $0.device(report) }, on: index) { $0.wantsReports }
    case .disconnected:
      guard devices[index].activated != nil else { return [] }
      devices[index].activated = nil
      let path = devices[index].description.path
      return broadcast(line { $0.deviceDeactivated(path: path) }, on: index) { $0.wantsReports }
    case .poweredOff:
      devices[index].activated = nil
      return []
    case .poweringOn, .reconnected, .commandFailed, .commandsWithheld:
      return []
    }
  }

  /// Sends `bytes` to the watchers of the device at `index` whose policy `wants` them.
  private func broadcast(_ bytes: [UInt8], on index: Int, where wants: (WatchPolicy) -> Bool)
    -> [ServerAction]
  {
    devices[index].watchers.sorted().compactMap { clientID in
      guard let policy = clients[clientID]?.policy, wants(policy) else { return nil }
      return .send(clientID, bytes)
    }
  }

  /// Asks for the subscription the device's watchers need now, if it changed.
  private mutating func reconcile(_ index: Int) -> [ServerAction] {
    let watchers = devices[index].watchers.compactMap { clients[$0]?.policy }
    let need: ReceiverNeed? =
      watchers.isEmpty
      ? nil
      : ReceiverNeed(
        sentences: watchers.contains { wantsSentencesOnly($0) },
        rawData: watchers.contains { $0.wantsVerbatim })
    guard need != devices[index].need else { return [] }
    devices[index].need = need
    return [.subscribe(devices[index].id, need)]
  }

  /// Counts an input the loop should never have sent, and stops a debug build at it.
  private mutating func unexpected(_ what: String) -> [ServerAction] {
    unexpectedEvents += 1
    if assertsOnUnexpectedEvents { assertionFailure("ServerState: \(what)") }
    return []
  }

  private func deviceIndex(_ id: DeviceID) -> Int? {
    devices.firstIndex { $0.id == id }
  }

  /// One report line, ended with CR LF as gpsd ends them.
  private mutating func line(_ write: (inout JSONWriter) -> Void) -> [UInt8] {
    writer.removeAll()
    write(&writer)
    writer.newline(crlf: true)
    return writer.bytes
  }
}
