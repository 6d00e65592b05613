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

/// One connection to the broker: the thin adapter between libmosquitto and its
/// ``MQTTSession``. The ``NetworkThread`` owns it (every call, every callback on that thread);
/// the session decides when to connect, retry, keep alive and close, and this runs those
/// actions with libmosquitto and feeds back what the library reports.
final class MQTTClient: NetworkClient {
  struct Will {
    var topic: String
    var payload: [UInt8]
    var qos: Int32
    var retain: Bool
  }

  let broker: BrokerConfiguration
  let clientID: String
  weak var delegate: MQTTClientDelegate?
  private let thread: NetworkThread
  private let will: Will?
  private let library = Libmosquitto.functions
  private var mosquitto: OpaquePointer?
  private var session: MQTTSession<SystemRandomNumberGenerator>
  /// Property lists reused for every publication with the same expiry.
  private var expiryProperties: [UInt32: OpaquePointer] = [:]
  private var layoutProperties: OpaquePointer?
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
    session = MQTTSession(
      settings: MQTTSession.Settings(broker: broker), random: SystemRandomNumberGenerator())
  }

  var isConnected: Bool { session.isConnected }

  // MARK: - Life (on the network thread)

  /// Sets the client up and starts connecting. A setting libmosquitto refuses (an unreadable
  /// TLS file) is reported to the delegate as a configuration error, and the client stops.
  func start() {
    guard session.state == .idle else { return }
    thread.add(self)
    defer { touch() }
    if let error = makeClient() {
      handle(.setupFailed(error))
    } else {
      handle(.start)
    }
  }

  /// Stops: once the QoS 1 publications made so far are acknowledged (at most `within`),
  /// disconnects cleanly (no Last Will) and releases everything; then tells the delegate.
  /// Never finishes inside this call (it may come from within a libmosquitto callback, where
  /// the client must not be destroyed): the thread finishes it at its next deadline.
  func stop(within limit: Duration) {
    handle(.stop(within: limit))
    touch()
  }

  private func handle(_ event: MQTTSession<SystemRandomNumberGenerator>.Event) {
    perform(session.handle(event, now: thread.now))
  }

  private func perform(_ actions: [MQTTSession<SystemRandomNumberGenerator>.Action]) {
    for action in actions {
      switch action {
      case .connect:
        connect()
      case .abandonAttempt:
        abandonAttempt()
      case .serviceKeepAlive:
        guard let mosquitto else { continue }
        _ = socketClosed(afterCode: library.mosquitto_loop_misc(mosquitto))
      case .close:
        close()
      case .report(.connected):
        delegate?.clientConnected(now: thread.now)
      case .report(.disconnected(let reason, let wasConnected)):
        delegate?.clientDisconnected(reason, wasConnected: wasConnected, now: thread.now)
      case .report(.delivered(let messageID)):
        delegate?.clientDelivered(messageID: messageID)
      case .report(.stopped):
        delegate?.clientStopped()
      }
    }
  }

  private func connect() {
    guard let mosquitto else { return }
    let keepAlive = max(5, Int32(clamping: broker.keepAlive.components.seconds))
    let code = library.mosquitto_connect_bind_async(
      mosquitto, broker.host, Int32(broker.port), keepAlive, nil)
    // Refused at once, the host not found, a TLS set-up that failed.
    if code != MOSQ_ERR_SUCCESS.rawValue { ended(code: code, errnoValue: errno) }
  }

  /// Gives up an attempt that got no CONNACK in time, saying whether the TCP connection was
  /// taken (then something listens there that does not speak MQTT).
  private func abandonAttempt() {
    guard let mosquitto else { return }
    let socket = library.mosquitto_socket(mosquitto)
    var address = sockaddr_storage()
    var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
    let answered =
      socket >= 0
      && withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getpeername(socket, $0, &length) }
      } == 0
    // Reported before the library closes the socket: its own report of the close comes to a
    // session that has already moved on, and is ignored.
    handle(.disconnected(.noAnswer(answered: answered)))
    _ = library.mosquitto_disconnect_v5(mosquitto, 0, nil)
  }

  /// Only outside libmosquitto's callbacks (the session closes at a deadline).
  private func close() {
    releaseWrites()
    if let mosquitto, library.mosquitto_socket(mosquitto) >= 0 {
      _ = library.mosquitto_disconnect_v5(mosquitto, 0, nil)
    }
    destroy()
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
      return .cannotMakeClient(.current)
    }
    mosquitto = client
    _ = library.mosquitto_int_option(client, MOSQ_OPT_PROTOCOL_VERSION, MQTT_PROTOCOL_V5)
    library.mosquitto_connect_v5_callback_set(client) { _, userData, code, _, _ in
      MQTTClient.from(userData).connectAcknowledged(code: code)
    }
    library.mosquitto_disconnect_v5_callback_set(client) { _, userData, code, _ in
      MQTTClient.from(userData).ended(code: code)
    }
    library.mosquitto_message_v5_callback_set(client) { _, userData, message, properties in
      guard let message else { return }
      MQTTClient.from(userData).received(message.pointee, properties: properties)
    }
    library.mosquitto_publish_v5_callback_set(client) { _, userData, messageID, _, _ in
      MQTTClient.from(userData).handle(.published(messageID: messageID))
    }
    if let will {
      let code = will.payload.withUnsafeBytes { bytes in
        library.mosquitto_will_set_v5(
          client, will.topic, Int32(bytes.count), bytes.baseAddress, will.qos, will.retain, nil)
      }
      if code != MOSQ_ERR_SUCCESS.rawValue { return .cannotSetWill(Self.text(code)) }
    }
    if let username = broker.username {
      _ = library.mosquitto_username_pw_set(client, username, broker.password)
    }
    if broker.usesTLS {
      let code = library.mosquitto_tls_set(
        client, broker.caFile, broker.caFile == nil ? "/etc/ssl/certs" : nil,
        broker.certificateFile, broker.keyFile, nil)
      if code != MOSQ_ERR_SUCCESS.rawValue {
        return .unusableTLSFiles(Self.text(code), broker: broker)
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
      return .failure(.cannotPublish(to: publication.topic, Self.text(code)))
    }
    if publication.qos > 0 { handle(.sent(messageID: messageID)) }
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
    if session.hasSocket, let mosquitto,
      case let descriptor = library.mosquitto_socket(mosquitto), descriptor >= 0
    {
      socket = descriptor
      write = library.mosquitto_want_write(mosquitto)
    }
    let own = session.nextDeadline
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
      ended(code: Int32(MOSQ_ERR_CONN_LOST.rawValue))
    }
  }

  /// Whether the socket is gone after a loop call; reports the end (libmosquitto calls the
  /// disconnect callback for most ends, not for a failed TLS handshake; the session ignores
  /// the second report of the same end).
  private func socketClosed(afterCode code: Int32) -> Bool {
    guard let mosquitto else { return true }
    guard library.mosquitto_socket(mosquitto) < 0 else { return false }
    ended(code: code == 0 ? Int32(MOSQ_ERR_CONN_LOST.rawValue) : code)
    return true
  }

  func serviceDeadline(now: Duration) {
    if let owner = delegate?.ownerDeadline, owner <= now { delegate?.ownerDeadlinePassed(now: now) }
    guard mosquitto != nil else { return }
    handle(.timer)
  }

  // MARK: - Callbacks

  private func connectAcknowledged(code: Int32) {
    let reason = String(cString: library.mosquitto_reason_string(code)!)
    handle(.connack(reasonCode: code, reason: reason))
  }

  private func ended(code: Int32, errnoValue: Int32 = errno) {
    handle(.disconnected(.library(code: code, errno: errnoValue, text: Self.text(code))))
  }

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

  /// libmosquitto's words for a `MOSQ_ERR_…` code.
  static func text(_ code: Int32) -> String {
    String(cString: Libmosquitto.functions.mosquitto_strerror(code)!)
  }
}
