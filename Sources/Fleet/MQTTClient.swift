import CMosquitto
import Glibc
import POSIX

/// One message to publish.
struct MQTTPublication: Sendable, Equatable {
  var topic: String
  var payload: [UInt8]
  var qos: Int32
  var retain: Bool
  /// MQTT 5 message expiry in seconds; `nil`: never.
  var expiry: UInt32?
  /// Whether it carries the topic layout's version as a user property (status messages do).
  var carriesLayoutVersion = false
}

/// What an ``MQTTClient`` tells its owner; called on the network thread only.
protocol MQTTClientDelegate: AnyObject {
  /// The broker accepted the connection (a clean session: subscribe again).
  func clientConnected(now: Duration)
  /// The connection attempt failed, or an established connection ended; the client retries
  /// after its backoff unless stopped. `wasConnected`: it had been established.
  func clientDisconnected(_ reason: FleetError, wasConnected: Bool, now: Duration)
  /// A message arrived. `retained`: the flag as the publisher set it (subscriptions ask for
  /// retain-as-published); `expiry`: the remaining MQTT 5 message expiry in seconds.
  func clientReceived(
    topic: String, payload: [UInt8], retained: Bool, expiry: UInt32?, now: Duration)
  /// The broker acknowledged a QoS 1 publication.
  func clientDelivered(messageID: Int32)
  /// The client has stopped for good (after ``MQTTClient/stop(within:)``).
  func clientStopped()
  /// The owner's own next deadline (demand expiry, refresh), if any.
  var ownerDeadline: Duration? { get }
  func ownerDeadlinePassed(now: Duration)
}

/// One connection to the broker: a libmosquitto client driven by the ``NetworkThread``, which
/// owns it (every call, every callback on that thread). It connects without blocking the
/// thread, reconnects with exponential backoff and jitter, keeps the connection alive, and on
/// ``stop(within:)`` waits for its QoS 1 publications to be acknowledged (bounded) before
/// disconnecting cleanly (which tells the broker not to publish the Last Will).
final class MQTTClient: NetworkClient {
  struct Will {
    var topic: String
    var payload: [UInt8]
    var qos: Int32
    var retain: Bool
  }

  private enum Phase {
    case idle
    case waiting(until: Duration)
    case connecting(since: Duration)
    case connected(nextKeepAlive: Duration)
    case stopping(deadline: Duration)
    case stopped
  }

  let broker: BrokerConfiguration
  let clientID: String
  weak var delegate: MQTTClientDelegate?
  private let thread: NetworkThread
  private let will: Will?
  private let library = Libmosquitto.functions
  private var mosquitto: OpaquePointer?
  private var phase = Phase.idle
  /// Consecutive failed attempts, for the backoff.
  private var failures = 0
  /// A refusal in CONNACK, reported when the connection then closes.
  private var refusal: FleetError?
  /// QoS 1 publications not yet acknowledged.
  private var unacknowledged: Set<Int32> = []
  /// Property lists reused for every publication with the same expiry.
  private var expiryProperties: [UInt32: OpaquePointer] = [:]
  private var layoutProperties: OpaquePointer?
  private var generator = SystemRandomNumberGenerator()
  /// The socket corked while publications gather (``holdWrites()``), until the thread releases
  /// it.
  private var corkedSocket: Int32?

  init(
    broker: BrokerConfiguration, clientID: String, will: Will?, thread: NetworkThread = .shared
  ) {
    self.broker = broker
    self.clientID = clientID
    self.will = will
    self.thread = thread
  }

  var isConnected: Bool {
    if case .connected = phase { return true }
    return false
  }

  // MARK: - Life (on the network thread)

  /// Sets the client up and starts connecting. A setting libmosquitto refuses (an unreadable
  /// TLS file) is reported to the delegate as a configuration error, and the client stops.
  func start() {
    guard case .idle = phase else { return }
    thread.add(self)
    defer { touch() }
    if let error = makeClient() {
      phase = .stopped
      destroy()
      delegate?.clientDisconnected(error, wasConnected: false, now: thread.now)
      delegate?.clientStopped()
      return
    }
    phase = .waiting(until: thread.now)
  }

  /// Stops: once the QoS 1 publications made so far are acknowledged (at most `within`),
  /// disconnects cleanly (no Last Will) and releases everything; then tells the delegate.
  /// Never finishes inside this call (it may come from within a libmosquitto callback, where
  /// the client must not be destroyed): the thread finishes it next.
  func stop(within limit: Duration) {
    defer { touch() }
    switch phase {
    case .connected:
      phase = .stopping(deadline: unacknowledged.isEmpty ? thread.now : thread.now + limit)
    case .idle, .waiting, .connecting:
      phase = .stopping(deadline: thread.now)
    case .stopping, .stopped:
      return
    }
  }

  /// Only outside libmosquitto's callbacks (from a deadline, or `start`).
  private func finishStop() {
    releaseWrites()
    let live = isConnectedOrStopping
    phase = .stopped  // the disconnect below calls back: it must find the client stopped
    if let mosquitto, live, library.mosquitto_socket(mosquitto) >= 0 {
      _ = library.mosquitto_disconnect_v5(mosquitto, 0, nil)
    }
    destroy()
    delegate?.clientStopped()
  }

  private var isConnectedOrStopping: Bool {
    switch phase {
    case .connected, .stopping: return true
    default: return false
    }
  }

  private func destroy() {
    corkedSocket = nil  // closed with the client
    thread.remove(self)
    if let mosquitto { library.mosquitto_destroy(mosquitto) }
    mosquitto = nil
    for (_, properties) in expiryProperties {
      var list: OpaquePointer? = properties
      library.mosquitto_property_free_all(&list)
    }
    expiryProperties.removeAll()
    library.mosquitto_property_free_all(&layoutProperties)
  }

  private func makeClient() -> FleetError? {
    let userData = Unmanaged.passUnretained(self).toOpaque()
    guard let client = library.mosquitto_new(clientID, true, userData) else {
      return FleetError(
        "cannot make an MQTT client: \(Errno.current)", kind: .configuration)
    }
    mosquitto = client
    _ = library.mosquitto_int_option(client, MOSQ_OPT_PROTOCOL_VERSION, MQTT_PROTOCOL_V5)
    library.mosquitto_connect_v5_callback_set(client) { _, userData, code, _, _ in
      MQTTClient.from(userData).connectAcknowledged(code: code)
    }
    library.mosquitto_disconnect_v5_callback_set(client) { _, userData, code, _ in
      MQTTClient.from(userData).connectionEnded(code: code)
    }
    library.mosquitto_message_v5_callback_set(client) { _, userData, message, properties in
      guard let message else { return }
      MQTTClient.from(userData).received(message.pointee, properties: properties)
    }
    library.mosquitto_publish_v5_callback_set(client) { _, userData, messageID, _, _ in
      MQTTClient.from(userData).acknowledged(messageID: messageID)
    }
    if let will {
      let code = will.payload.withUnsafeBytes { bytes in
        library.mosquitto_will_set_v5(
          client, will.topic, Int32(bytes.count), bytes.baseAddress, will.qos, will.retain, nil)
      }
      if code != MOSQ_ERR_SUCCESS.rawValue {
        return FleetError("cannot set the Last Will: \(Self.text(code))", kind: .configuration)
      }
    }
    if let username = broker.username {
      _ = library.mosquitto_username_pw_set(client, username, broker.password)
    }
    if broker.usesTLS {
      let code = library.mosquitto_tls_set(
        client, broker.caFile, broker.caFile == nil ? "/etc/ssl/certs" : nil,
        broker.certificateFile, broker.keyFile, nil)
      if code != MOSQ_ERR_SUCCESS.rawValue {
        return FleetError(
          "cannot use the TLS files for \(broker.url) (\(Self.text(code))): check --mqtt-cafile, "
            + "--mqtt-cert and --mqtt-key", kind: .configuration)
      }
    }
    var property: OpaquePointer?
    _ = library.mosquitto_property_add_string_pair(
      &property, Int32(MQTT_PROP_USER_PROPERTY.rawValue), FleetTopics.layoutProperty,
      String(FleetTopics.layoutVersion))
    layoutProperties = property
    return nil
  }

  private static func from(_ userData: UnsafeMutableRawPointer?) -> MQTTClient {
    Unmanaged<MQTTClient>.fromOpaque(userData!).takeUnretainedValue()
  }

  // MARK: - Publishing (on the network thread)

  /// Publishes when connected; returns the message ID, or `nil` when it could not be sent (not
  /// connected, or the library refused it: the reason is in the result).
  @discardableResult
  func publish(_ publication: MQTTPublication) -> Result<Int32, FleetError>? {
    guard let mosquitto, isConnected else { return nil }
    var messageID: Int32 = 0
    let properties =
      publication.carriesLayoutVersion
      ? layoutProperties : publication.expiry.map { expiryList($0) } ?? nil
    holdWrites()
    let code = publication.payload.withUnsafeBytes { bytes in
      library.mosquitto_publish_v5(
        mosquitto, &messageID, publication.topic, Int32(bytes.count), bytes.baseAddress,
        publication.qos, publication.retain, properties)
    }
    guard code == MOSQ_ERR_SUCCESS.rawValue else {
      return .failure(
        FleetError(
          "cannot publish to \(publication.topic): \(Self.text(code))", kind: .unreachable))
    }
    if publication.qos > 0 { unacknowledged.insert(messageID) }
    touch()  // what did not fit in the socket waits to be written
    return .success(messageID)
  }

  /// Corks the socket (TCP_CORK) until the thread is done with the work in hand: an epoch's
  /// TPV and SKY then leave in one segment instead of one each, which
  /// spares the kernel's send and receive path per message here and a read per message in the
  /// broker. libmosquitto still writes each message as it is published; only the sending
  /// waits, for microseconds.
  private func holdWrites() {
    guard corkedSocket == nil, let mosquitto else { return }
    let socket = library.mosquitto_socket(mosquitto)
    guard socket >= 0, Self.setCork(socket, true) else { return }
    corkedSocket = socket
    thread.holdWrites(of: self)
  }

  /// Sends what ``holdWrites()`` held back.
  func releaseWrites() {
    guard let socket = corkedSocket else { return }
    corkedSocket = nil
    // A socket libmosquitto has closed since (a lost connection) sent or dropped its data
    // then; its number may belong to another socket now.
    guard let mosquitto, library.mosquitto_socket(mosquitto) == socket else { return }
    _ = Self.setCork(socket, false)
  }

  private static func setCork(_ socket: Int32, _ on: Bool) -> Bool {
    var value: Int32 = on ? 1 : 0
    return setsockopt(
      socket, Int32(IPPROTO_TCP), TCP_CORK, &value, socklen_t(MemoryLayout<Int32>.size)) == 0
  }

  private func expiryList(_ seconds: UInt32) -> OpaquePointer? {
    if let list = expiryProperties[seconds] { return list }
    var list: OpaquePointer?
    _ = library.mosquitto_property_add_int32(
      &list, Int32(MQTT_PROP_MESSAGE_EXPIRY_INTERVAL.rawValue), seconds)
    // A handful of values at most (the replay expiry, and the remainders after an outage).
    if expiryProperties.count > 64 {
      for (_, properties) in expiryProperties {
        var old: OpaquePointer? = properties
        library.mosquitto_property_free_all(&old)
      }
      expiryProperties.removeAll()
    }
    expiryProperties[seconds] = list
    return list
  }

  /// Subscribes to `filter` with QoS 1. `retainAsPublished`: messages keep the retain flag
  /// their publisher set (else it marks only the retained messages sent on subscribing).
  func subscribe(_ filter: String, retainAsPublished: Bool) {
    guard let mosquitto, isConnected else { return }
    let options = retainAsPublished ? Int32(MQTT_SUB_OPT_RETAIN_AS_PUBLISHED.rawValue) : 0
    _ = library.mosquitto_subscribe_v5(mosquitto, nil, filter, 1, options, nil)
    touch()
  }

  // MARK: - NetworkClient

  var interest: (socket: Int32?, write: Bool, deadline: Duration?) {
    var socket: Int32?
    var write = false
    var own: Duration?
    switch phase {
    case .waiting(let until): own = until
    case .connecting(let since): own = since + broker.connectTimeout
    case .connected(let nextKeepAlive): own = nextKeepAlive
    case .stopping(let deadline): own = deadline
    case .idle, .stopped: own = nil
    }
    switch phase {
    case .connecting, .connected, .stopping:
      if let mosquitto, case let descriptor = library.mosquitto_socket(mosquitto), descriptor >= 0 {
        socket = descriptor
        write = library.mosquitto_want_write(mosquitto)
      }
    case .idle, .waiting, .stopped:
      break
    }
    guard let owner = delegate?.ownerDeadline else { return (socket, write, own) }
    return (socket, write, min(own ?? owner, owner))
  }

  /// Something may have changed what the client waits for (a publication not yet written, the
  /// owner's deadline): the thread asks again before it next waits.
  func touch() { thread.touch(self) }

  func serviceSocket(readable: Bool, writable: Bool, failed: Bool, now: Duration) {
    guard let mosquitto else { return }
    if readable || failed {
      // After a hang-up, read what the peer sent before it (a CONNACK refusal) to the end.
      for _ in 0..<(failed ? 64 : 1) {
        let code = library.mosquitto_loop_read(mosquitto, 1)
        if socketClosed(afterCode: code) { return }
        if code != MOSQ_ERR_SUCCESS.rawValue { break }
      }
    }
    if writable, self.mosquitto != nil {
      let code = library.mosquitto_loop_write(mosquitto, 1)
      if socketClosed(afterCode: code) { return }
    }
    if failed, self.mosquitto != nil, library.mosquitto_socket(mosquitto) >= 0 {
      // The peer is gone but libmosquitto has not seen it (a TLS handshake cut short): close.
      _ = library.mosquitto_disconnect_v5(mosquitto, 0, nil)
      connectionEnded(code: Int32(MOSQ_ERR_CONN_LOST.rawValue))
    }
  }

  /// Whether the socket is gone after a loop call; reports the end if no callback did.
  private func socketClosed(afterCode code: Int32) -> Bool {
    guard let mosquitto else { return true }
    guard library.mosquitto_socket(mosquitto) < 0 else { return false }
    // libmosquitto calls the disconnect callback for most ends, not for a failed TLS
    // handshake: then the phase still says connecting.
    switch phase {
    case .connecting, .connected, .stopping:
      connectionEnded(code: code == 0 ? Int32(MOSQ_ERR_CONN_LOST.rawValue) : code)
    default:
      break
    }
    return true
  }

  func serviceDeadline(now: Duration) {
    if let owner = delegate?.ownerDeadline, owner <= now { delegate?.ownerDeadlinePassed(now: now) }
    guard let mosquitto else { return }
    switch phase {
    case .waiting(let until) where until <= now:
      connect(now: now)
    case .connecting(let since) where since + broker.connectTimeout <= now:
      _ = library.mosquitto_disconnect_v5(mosquitto, 0, nil)
      refusal = FleetError(
        "\(broker.url) did not answer within \(broker.connectTimeout)", kind: .unreachable)
      connectionEnded(code: Int32(MOSQ_ERR_CONN_LOST.rawValue))
    case .connected(let nextKeepAlive) where nextKeepAlive <= now:
      phase = .connected(nextKeepAlive: now + keepAliveCheck)
      let code = library.mosquitto_loop_misc(mosquitto)
      _ = socketClosed(afterCode: code)
    case .stopping(let deadline) where deadline <= now:
      finishStop()
    default:
      break
    }
  }

  /// How often the keep-alive is looked after: a quarter of the interval, so a ping goes out
  /// well before the broker's limit of one and a half intervals.
  private var keepAliveCheck: Duration { max(.seconds(1), broker.keepAlive / 4) }

  // MARK: - Connecting

  private func connect(now: Duration) {
    guard let mosquitto else { return }
    let keepAlive = max(5, Int32(clamping: broker.keepAlive.components.seconds))
    let code = library.mosquitto_connect_bind_async(
      mosquitto, broker.host, Int32(broker.port), keepAlive, nil)
    if code == MOSQ_ERR_SUCCESS.rawValue {
      phase = .connecting(since: now)
    } else {
      // Refused at once, the host not found, a TLS set-up that failed.
      phase = .connecting(since: now)
      connectionEnded(code: code, errnoValue: errno)
    }
  }

  private func connectAcknowledged(code: Int32) {
    guard code == 0 else {
      refusal = Self.refusal(code: code, broker: broker)
      return  // the broker closes the connection; the end is reported then
    }
    failures = 0
    phase = .connected(nextKeepAlive: thread.now + keepAliveCheck)
    delegate?.clientConnected(now: thread.now)
  }

  private func connectionEnded(code: Int32, errnoValue: Int32 = errno) {
    let wasConnected: Bool
    switch phase {
    case .connected: wasConnected = true
    case .connecting: wasConnected = false
    case .stopping:
      phase = .stopping(deadline: thread.now)  // finished by the thread, outside the callback
      return
    case .idle, .waiting, .stopped:
      return  // already handled (a callback, then the loop's return code)
    }
    let reason =
      refusal
      ?? Self.failure(code: code, errnoValue: errnoValue, broker: broker, connected: wasConnected)
    refusal = nil
    unacknowledged.removeAll()
    let now = thread.now
    failures = wasConnected ? 1 : failures + 1
    phase = .waiting(until: now + backoff(attempt: failures))
    delegate?.clientDisconnected(reason, wasConnected: wasConnected, now: now)
  }

  /// `reconnectDelay` doubled per failure up to the maximum, drawn from its upper half.
  private func backoff(attempt: Int) -> Duration {
    var delay = broker.reconnectDelay
    for _ in 1..<max(1, attempt) where delay < broker.maximumReconnectDelay { delay = delay * 2 }
    delay = min(delay, broker.maximumReconnectDelay)
    let milliseconds = max(
      1, delay.components.seconds * 1000 + delay.components.attoseconds / 1_000_000_000_000_000)
    return .milliseconds(Int64.random(in: (milliseconds / 2)...milliseconds, using: &generator))
  }

  // MARK: - Callbacks

  private func received(_ message: mosquitto_message, properties: OpaquePointer?) {
    let topic = String(cString: message.topic)
    let count = Int(max(0, message.payloadlen))
    let payload =
      count == 0 || message.payload == nil
      ? [] : Array(UnsafeRawBufferPointer(start: message.payload, count: count))
    var expiry: UInt32 = 0
    let hasExpiry =
      library.mosquitto_property_read_int32(
        properties, Int32(MQTT_PROP_MESSAGE_EXPIRY_INTERVAL.rawValue), &expiry, false) != nil
    delegate?.clientReceived(
      topic: topic, payload: payload, retained: message.retain, expiry: hasExpiry ? expiry : nil,
      now: thread.now)
  }

  private func acknowledged(messageID: Int32) {
    guard unacknowledged.remove(messageID) != nil else { return }
    delegate?.clientDelivered(messageID: messageID)
    if case .stopping = phase, unacknowledged.isEmpty { phase = .stopping(deadline: thread.now) }
  }

  // MARK: - Messages

  static func text(_ code: Int32) -> String {
    String(cString: Libmosquitto.functions.mosquitto_strerror(code)!)
  }

  /// Why CONNACK refused us, and what to do.
  static func refusal(code: Int32, broker: BrokerConfiguration) -> FleetError {
    let reason = String(cString: Libmosquitto.functions.mosquitto_reason_string(code)!).lowercased()
    switch code {
    // Mosquitto answers a wrong password with "not authorized", others with "bad user name or
    // password": to the user both mean the same.
    case Int32(MQTT_RC_BAD_USERNAME_OR_PASSWORD.rawValue),
      Int32(MQTT_RC_NOT_AUTHORIZED.rawValue):
      guard let username = broker.username else {
        return FleetError(
          "\(broker.url) does not accept clients without a user name (\(reason)): give "
            + "--mqtt-username and a password (--mqtt-password-file or "
            + "\(BrokerConfiguration.passwordEnvironmentVariable))", kind: .refused)
      }
      return FleetError(
        "\(broker.url) refused user \(username) (\(reason)): wrong user name or password, or "
          + "a user the broker does not allow; check --mqtt-username and the password "
          + "(--mqtt-password-file or \(BrokerConfiguration.passwordEnvironmentVariable))",
        kind: .refused)
    case Int32(MQTT_RC_SERVER_UNAVAILABLE.rawValue), Int32(MQTT_RC_SERVER_BUSY.rawValue),
      Int32(MQTT_RC_CONNECTION_RATE_EXCEEDED.rawValue), Int32(MQTT_RC_QUOTA_EXCEEDED.rawValue):
      return FleetError(
        "\(broker.url) is not taking connections now: \(reason)", kind: .unreachable)
    default:
      return FleetError("\(broker.url) refused the connection: \(reason)", kind: .refused)
    }
  }

  /// Why a connection attempt failed or a connection ended, from libmosquitto's code.
  static func failure(code: Int32, errnoValue: Int32, broker: BrokerConfiguration, connected: Bool)
    -> FleetError
  {
    switch code {
    case Int32(MOSQ_ERR_EAI.rawValue):
      return FleetError(
        "cannot find the broker's host \(broker.host) (name lookup failed)", kind: .unreachable)
    case Int32(MOSQ_ERR_TLS.rawValue), Int32(MOSQ_ERR_TLS_HANDSHAKE.rawValue):
      return FleetError(
        "the TLS handshake with \(broker.url) failed: is it a TLS port, and is its certificate "
          + "signed by the CA in --mqtt-cafile and issued for \(broker.host)?", kind: .refused)
    case Int32(MOSQ_ERR_ERRNO.rawValue):
      let text = Errno(rawValue: errnoValue).message.lowercased()
      return FleetError("cannot reach \(broker.url): \(text)", kind: .unreachable)
    case Int32(MOSQ_ERR_KEEPALIVE.rawValue):
      return FleetError("\(broker.url) stopped answering", kind: .unreachable)
    default:
      let text = text(code).lowercased()
      return FleetError(
        connected ? "lost \(broker.url): \(text)" : "cannot connect to \(broker.url): \(text)",
        kind: .unreachable)
    }
  }
}
