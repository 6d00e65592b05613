import POSIX
import SerialGPS

/// The stream ports' decisions as a state machine with no I/O: the raw port
/// (`serve --raw-listen`, its writer ``RawWriteQueue``) and the NMEA socket (`--nmea-socket`),
/// each connection a continuous subscription of the first receiver served.
///
/// It decides what each device's one subscription delivers (what ``ServerState`` asked for,
/// and the raw bytes and the sentences while stream connections want the first device's),
/// which of a receiver's items go to which connection and which to ``ServerState``, the
/// pseudo-NMEA the NMEA socket gets from a receiver that sends none, who may write to the
/// receiver and what of it, and what becomes of bytes a connection does not read. The event
/// loop accepts, reads, writes and closes, and runs the actions in order.
struct StreamDoors {
  enum Action: Equatable {
    /// Give the device's receiver this subscription (`nil`: none), replacing the one it has.
    case subscribe(DeviceID, ReceiverNeed?)
    /// Hand the receiver's item to ``ServerState``: it asked for it.
    case report(DeviceID, ReceiverEventOrRawData)
    /// Send these bytes to stream connection `id` (what its socket does not take now is
    /// ``unsent(_:_:waiting:now:)``'s to decide).
    case send(Int, [UInt8])
    /// Hand the writer's bytes to the device's receiver; ``written(_:)`` with `batch` once it
    /// has written (or dropped) them.
    case write(DeviceID, [UInt8], batch: Int)
    /// Say this to the operator (without the program's name).
    case log(String)
  }

  /// What becomes of bytes a connection's socket did not take.
  enum Backlog: Equatable {
    /// Queue them for the connection.
    case queue
    /// Drop them for this connection alone (counted); say `log` if there is one.
    case drop(log: String?)
  }

  struct Settings: Sendable, Equatable {
    /// Whether the server has stream ports at all; without, the subscriptions are what
    /// ``ServerState`` asks.
    var ports = true
    /// Whether the raw port's connections may write (`--raw-write`), one at a time.
    var writable = false
    /// Bytes queued for a connection that does not read, past which the receiver's bytes
    /// are dropped for it (``GPSDServer/Configuration/rawBacklog``).
    var backlog = 256 * 1024
    /// Whole frames of the writer waiting for the receiver
    /// (``GPSDServer/Configuration/rawWriteBacklog``).
    var writeBacklog = 64 * 1024
  }

  private struct Door {
    let kind: StreamKind
    let peer: String
  }

  private struct Device {
    /// What ``ServerState`` asked for.
    var asked: ReceiverNeed?
    /// What the subscription delivers now.
    var subscribed: ReceiverNeed?
  }

  let settings: Settings
  private var doors: [Int: Door] = [:]
  private var nextDoor = 1
  /// Every device served, in the order added (their numbers grow).
  private var devices: [DeviceID: Device] = [:]
  private(set) var writer: RawWriteQueue
  /// NMEA made from the stream device's fixes when it sends none.
  private var pseudoNMEA = PseudoNMEA()
  /// ``RawWriteQueue/Counters/bytesDropped`` when the last writer that left was told of.
  private var dropsSaid = 0
  private var dropLog = LogThrottle(interval: .seconds(10))
  /// Receiver bytes dropped for connections that did not read.
  private(set) var bytesDropped = 0

  init(settings: Settings) {
    self.settings = settings
    writer = RawWriteQueue(writable: settings.writable, limit: settings.writeBacklog)
  }

  /// The device whose output the stream ports serve: the first one served (named first, or
  /// found first) while it is.
  var streamDevice: DeviceID? { settings.ports ? devices.keys.min() : nil }

  /// Connections of this kind now.
  func count(_ kind: StreamKind) -> Int { doors.values.count { $0.kind == kind } }

  /// What ``ServerStatistics`` shows of the stream ports.
  struct Counters: Equatable {
    var rawClients = 0
    var nmeaClients = 0
    /// Receiver bytes dropped for connections that did not read.
    var bytesDropped = 0
    /// The writer's bytes, handed to the receiver and dropped (``RawWriteQueue/Counters``).
    var written = RawWriteQueue.Counters()
  }

  var counters: Counters {
    Counters(
      rawClients: count(.raw), nmeaClients: count(.nmea), bytesDropped: bytesDropped,
      written: writer.counters)
  }

  var isEmpty: Bool { doors.isEmpty }

  /// Whether the loop should read connection `id` now: every one but a writer whose frames
  /// fill the queue.
  func reads(_ id: Int) -> Bool { writer.reads(id) }

  // MARK: - Devices

  /// A device to serve, told before ``ServerState`` hears of it, so that the subscription its
  /// watchers ask for includes the stream ports' need; the loop then asks ``reconcile(_:)``,
  /// for the stream ports' need when nobody watches it.
  mutating func deviceAdded(_ id: DeviceID) {
    devices[id] = devices[id] ?? Device()
  }

  /// ``ServerState`` asked for this subscription of the device (`nil`: none).
  mutating func asked(_ id: DeviceID, _ need: ReceiverNeed?) -> [Action] {
    guard devices[id] != nil else { return [] }
    devices[id]!.asked = need
    return reconcile(id)
  }

  /// The subscription the device needs now, asked for if it is not the one it has: what
  /// ``ServerState`` asked, and the raw bytes and the sentences while the stream ports serve
  /// it and have connections that want them.
  mutating func reconcile(_ id: DeviceID) -> [Action] {
    guard let device = devices[id] else { return [] }
    var need = device.asked
    if id == streamDevice, !doors.isEmpty {
      need = need ?? ReceiverNeed()
      if count(.raw) > 0 { need?.rawData = true }
      if count(.nmea) > 0 { need?.sentences = true }
    }
    guard need != device.subscribed else { return [] }
    devices[id]!.subscribed = need
    return [.subscribe(id, need)]
  }

  /// The device is gone. The stream ports follow the next one served; a batch of the writer's
  /// the old one had is not waited for.
  mutating func deviceReleased(_ id: DeviceID) -> [Action] {
    let wasStreamed = id == streamDevice
    guard devices.removeValue(forKey: id) != nil, wasStreamed else { return [] }
    var actions: [Action] = []
    if let next = streamDevice { actions += reconcile(next) }
    return actions + writes(writer.receiverChanged())
  }

  /// An item of the device's subscription: the stream connections get the stream device's
  /// bytes, sentences, and pseudo-NMEA when it sends none; ``ServerState`` gets only what it
  /// asked for.
  mutating func receiverItem(_ id: DeviceID, _ item: ReceiverEventOrRawData) -> [Action] {
    var actions: [Action] = []
    if id == streamDevice {
      switch item {
      case .rawData(let bytes):
        actions += broadcast(bytes, to: .raw)
      case .sentences(let bytes):
        actions += broadcast(bytes, to: .nmea)
      case .event:
        // The NMEA socket's state of the epoch moves only while someone reads it.
        if count(.nmea) > 0, let bytes = pseudoNMEA.sentences(for: item) {
          actions += broadcast(bytes, to: .nmea)
        }
      }
    }
    guard let asked = devices[id]?.asked else { return actions }
    if case .rawData = item, !asked.rawData { return actions }
    if case .sentences = item, !asked.sentences { return actions }
    return actions + [.report(id, item)]
  }

  private func broadcast(_ bytes: [UInt8], to kind: StreamKind) -> [Action] {
    doors.filter { $0.value.kind == kind }.keys.sorted().map { .send($0, bytes) }
  }

  // MARK: - Connections

  /// A connection to the port of this kind from `peer` was accepted: it is connection `id`,
  /// and the first of its kind makes the subscription ask for what it wants.
  mutating func opened(_ kind: StreamKind, peer: String) -> (id: Int, actions: [Action]) {
    let id = nextDoor
    nextDoor += 1
    let first = count(kind) == 0
    // A Unix socket's peer has no address: it is named by its number.
    doors[id] = Door(kind: kind, peer: kind == .raw ? peer : "connection \(id)")
    guard first, let device = streamDevice else { return (id, []) }
    return (id, reconcile(device))
  }

  /// Bytes from connection `id`: a raw port writer's go to the receiver as whole frames
  /// (``RawWriteQueue``); the NMEA socket's readers (GeoClue) send nothing, and what one
  /// sends goes nowhere.
  mutating func input(from id: Int, _ bytes: UnsafeRawBufferPointer) -> [Action] {
    guard let door = doors[id], door.kind == .raw else { return [] }
    return writes(writer.input(from: id, peer: door.peer, bytes))
  }

  /// The receiver wrote (or dropped) the writer's batch `batch`.
  mutating func written(_ batch: Int) -> [Action] {
    writes(writer.written(batch))
  }

  /// Connection `id` closed: a writer's frames still waiting go with it (said, when it sent
  /// some that never reached the receiver), and the last of its kind takes back what the
  /// subscription asked for it.
  mutating func closed(_ id: Int) -> [Action] {
    guard let door = doors.removeValue(forKey: id) else { return [] }
    var actions: [Action] = []
    if door.kind == .raw {
      let wrote = writer.slot.writer == id
      writer.left(id)
      let dropped = writer.counters.bytesDropped - dropsSaid
      if wrote && dropped > 0 {
        dropsSaid = writer.counters.bytesDropped
        actions.append(
          .log(
            "raw port: \(door.peer) left; \(dropped) bytes it sent were not written to the "
              + "receiver: not whole NMEA sentences, UBX or SiRF frames (RTCM 3 is not passed "
              + "on), or still waiting when it left"))
      }
    }
    if count(door.kind) == 0, let device = streamDevice { actions += reconcile(device) }
    return actions
  }

  /// `count` bytes the socket of connection `id` did not take, with `waiting` queued for it
  /// already: queued up to ``Settings/backlog``, past it dropped for that connection alone
  /// (counted, said every 10 s at most), so that one that does not read never holds the
  /// others or the receiver back, and stays connected.
  mutating func unsent(_ id: Int, _ count: Int, waiting: Int, now: MonotonicInstant) -> Backlog {
    guard let door = doors[id], waiting + count > settings.backlog else { return .queue }
    bytesDropped += count
    guard dropLog.allow(now: now) != nil else { return .drop(log: nil) }
    return .drop(
      log: "\(door.kind.name): \(door.peer) is not reading: \(bytesDropped) bytes dropped so "
        + "far (\(settings.backlog) bytes wait for it at most)")
  }

  /// ``RawWriteQueue``'s actions as the loop's: a batch to the stream device (done with at
  /// once when there is none), a refusal to its connection.
  private mutating func writes(_ queued: [RawWriteQueue.Action]) -> [Action] {
    var actions: [Action] = []
    for action in queued {
      switch action {
      case .write(let bytes, let batch):
        guard let device = streamDevice else {
          actions += writes(writer.written(batch))
          continue
        }
        actions.append(.write(device, bytes, batch: batch))
      case .refuse(let id, let refusal):
        actions.append(.send(id, Array(RawWriterSlot.notice(refusal).utf8)))
      }
    }
    return actions
  }
}
