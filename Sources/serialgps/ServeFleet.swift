import Discovery
import Fleet
import GPSDServer
import Glibc
import POSIX
import SerialGPS

/// `serve`'s MQTT options: the broker's, and how the receivers are published.
struct ServeFleetOptions: Equatable {
  var broker = BrokerOptions()
  /// The receivers' names in topics, one per DEVICE in the same order.
  var ids: [String] = []
  var gating = FleetBridge.Gating.demand
  /// Fixes kept during a broker outage.
  var queue = 1
  /// Consumers' demands counted at once per receiver.
  var maximumConsumers = FleetBridge.Configuration.defaultMaximumConsumers

  var isEnabled: Bool { broker.url != nil }

  static let help =
    BrokerOptions.help + "\n"
      + """
        --mqtt-id ID           the receiver's name in the topics serialgps/ID/…: once per
                               DEVICE, in the same order; default: its USB serial number
        --mqtt-gating MODE     demand (default): powered while some consumer's retained demand
                               stands; always: powered and published all the time
        --mqtt-queue N         fixes kept while the broker is away, published in order with
                               QoS 1 when it is back (default 1: the latest); for always
        --mqtt-max-consumers N consumers' demands counted per receiver (default 256); more
                               are logged, wait, and are taken as room frees
      """

  mutating func take(_ argument: String, from reader: inout ArgumentReader) throws(UsageMessage)
    -> Bool
  {
    if try broker.take(argument, from: &reader) { return true }
    switch argument {
    case "--mqtt-id":
      let name = try reader.value("--mqtt-id needs a name such as truck-17")
      guard FleetTopics.isValidName(name) else {
        throw UsageMessage(
          "--mqtt-id \(name): use 1 to 64 letters, digits, '-', '_' or '.' (it is a topic level)")
      }
      ids.append(name)
    case "--mqtt-gating":
      let text = try reader.value("--mqtt-gating needs demand or always")
      guard let mode = FleetBridge.Gating(rawValue: text) else {
        throw UsageMessage("--mqtt-gating takes demand or always, not '\(text)'")
      }
      gating = mode
    case "--mqtt-queue":
      queue = try reader.number(
        in: 1...100_000, "--mqtt-queue needs a number of fixes from 1 to 100000")
    case "--mqtt-max-consumers":
      maximumConsumers = try reader.number(
        in: 1...1_000_000, "--mqtt-max-consumers needs a number of consumers from 1 to 1000000")
    default:
      return false
    }
    return true
  }

  /// A mistake only visible with all options read, or `nil`.
  func mistake(devices: [String]) -> String? {
    if !isEnabled
      && (broker.givesSettings || !ids.isEmpty || gating != .demand || queue != 1
        || maximumConsumers != FleetBridge.Configuration.defaultMaximumConsumers)
    {
      return "the --mqtt-… options need --mqtt URL"
    }
    if !ids.isEmpty && ids.count != devices.count {
      return "--mqtt-id names the DEVICEs in order: give one per DEVICE "
        + "(serialgps serve --mqtt URL --mqtt-id truck-17 /dev/ttyACM0)"
    }
    if Set(ids).count != ids.count {
      return "two DEVICEs would have the same --mqtt-id; give each its own"
    }
    return nil
  }
}

/// The MQTT bridge inside `serve`: publishes each receiver the server serves, named by
/// `--mqtt-id` or its USB serial number.
final class ServeFleet: Sendable {
  let bridge: FleetBridge
  /// Names of devices given on the command line, by path.
  private let namedIDs: [String: String]
  /// What is published now, by device path.
  private let published = Locked<[String: String]>([:])

  private init(bridge: FleetBridge, namedIDs: [String: String]) {
    self.bridge = bridge
    self.namedIDs = namedIDs
  }

  /// Starts the bridge, or says why it cannot (with serve's exit status: 2 for options that
  /// cannot work, 1 when the broker refuses the credentials or certificates).
  static func start(_ options: ServeFleetOptions, devices: [String], replayExpiry: Duration)
    async -> Result<ServeFleet, ServeFleetFailure>
  {
    let broker: BrokerConfiguration
    do {
      broker = try options.broker.configuration()
    } catch {
      return .failure(ServeFleetFailure(message: error.description, status: 2))
    }
    var configuration = FleetBridge.Configuration(broker: broker)
    configuration.gating = options.gating
    configuration.outageQueueLimit = options.queue
    configuration.maximumConsumers = options.maximumConsumers
    configuration.replayExpiry = replayExpiry
    configuration.log = { message in Output.error.line(message) }
    let bridge: FleetBridge
    do {
      bridge = try FleetBridge(configuration: configuration)
    } catch {
      return .failure(ServeFleetFailure(message: error.description, status: 2))
    }
    // Refuse at once what retrying cannot fix; a broker not reachable yet (the network comes
    // up after us at boot) is retried for as long as we run.
    if let failure = await bridge.checkBroker() {
      guard failure.kind == .unreachable else {
        return .failure(ServeFleetFailure(message: failure.description, status: 1))
      }
      Output.error.line("serialgps serve: \(failure); will keep trying")
    }
    var namedIDs: [String: String] = [:]
    if !devices.isEmpty {
      let ports = (try? await DeviceDiscovery().serialPorts()) ?? []
      for (index, path) in devices.enumerated() {
        if !options.ids.isEmpty {
          namedIDs[path] = options.ids[index]
        } else if let port = Self.port(path, in: ports), let id = FleetTopics.id(for: port) {
          namedIDs[path] = id
        } else {
          return .failure(
            ServeFleetFailure(
              message: "\(path) has no USB serial number to name it in MQTT topics (the tty "
                + "path changes between boots); name the DEVICEs with --mqtt-id NAME, one per DEVICE in order",
              status: 2))
        }
      }
    }
    return .success(ServeFleet(bridge: bridge, namedIDs: namedIDs))
  }

  /// The port at `path`, by its node, a link to it, or where the path leads.
  static func port(_ path: String, in ports: [SerialDevice]) -> SerialDevice? {
    var resolved = path
    if let real = realpath(path, nil) {
      resolved = String(cString: real)
      free(real)
    }
    return ports.first { port in
      port.path == path || port.path == resolved || port.links.contains(path)
        || port.stablePath == path
    }
  }

  /// For `GPSDServer.Configuration.receiverChanges` (the server's thread: nothing blocks).
  func change(_ change: ServedReceiverChange) {
    switch change {
    case .added(let served):
      guard let id = namedIDs[served.path] ?? served.device.flatMap({ FleetTopics.id(for: $0) })
      else {
        Output.error.line(
          "serialgps serve: \(served.path) is not published to MQTT: it has no USB serial "
            + "number to name it; name the device and give --mqtt-id")
        return
      }
      do {
        try bridge.publish(served.receiver, as: id)
        published.withLock { $0[served.path] = id }
        Output.error.line("serialgps serve: publishing \(served.path) as serialgps/\(id)/…")
      } catch {
        Output.error.line("serialgps serve: \(served.path) is not published to MQTT: \(error)")
      }
    case .removed(let served):
      guard let id = published.withLock({ $0.removeValue(forKey: served.path) }) else { return }
      let bridge = self.bridge
      DriverExecutor.task { await bridge.withdraw(id) }
    }
  }

  /// Says `offline` for every receiver and disconnects cleanly.
  func shutdown() async { await bridge.shutdown() }
}

struct ServeFleetFailure: Error {
  let message: String
  let status: Int32
}
