import CMosquitto
import POSIX

/// Why the fleet bridge or a remote receiver cannot do what was asked, in words that say what
/// to do.
public struct FleetError: Error, Sendable, Hashable, CustomStringConvertible {
  public enum Kind: Sendable, Hashable {
    /// The options cannot work (a bad URL, an unreadable file, plaintext to a remote broker).
    case configuration
    /// The broker refused us for good: credentials, authorisation, TLS verification.
    /// Retrying with the same settings cannot help.
    case refused
    /// The broker could not be reached now (network, broker down); retrying may help.
    case unreachable
  }

  public let description: String
  public let kind: Kind

  public init(_ description: String, kind: Kind) {
    self.description = description
    self.kind = kind
  }
}

// What the broker connection's failures say to the user: each names the broker and what to
// check.
extension FleetError {
  /// Why CONNACK refused us (`reason`: the library's words for `code`), and what to do.
  static func refusal(code: Int32, reason: String, broker: BrokerConfiguration) -> FleetError {
    let reason = reason.lowercased()
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

  /// Why an attempt failed or a connection ended.
  static func ended(_ end: MQTTEnd, broker: BrokerConfiguration, wasConnected: Bool)
    -> FleetError
  {
    let code: Int32
    let errnoValue: Int32
    let text: String
    switch end {
    case .noAnswer(let answered):
      let within = "within \(seconds(broker.connectTimeout))"
      guard answered else {
        return FleetError("\(broker.url) did not answer \(within)", kind: .unreachable)
      }
      let handshake = broker.usesTLS ? "completed no TLS handshake and " : ""
      return FleetError(
        "\(broker.url) accepted the TCP connection but \(handshake)sent no CONNACK \(within): "
          + "is it an MQTT broker, and is \(broker.port) its "
          + "\(broker.usesTLS ? "TLS (mqtts://)" : "plaintext (mqtt://)") port?",
        kind: .unreachable)
    case .library(let libraryCode, let libraryErrno, let libraryText):
      (code, errnoValue, text) = (libraryCode, libraryErrno, libraryText.lowercased())
    }
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
    case Int32(MOSQ_ERR_SUCCESS.rawValue):
      // The library closed it without saying why (a closed socket read as the end).
      return FleetError(
        wasConnected
          ? "lost \(broker.url): the broker closed the connection"
          : "cannot connect to \(broker.url): the broker closed the connection before "
            + "accepting it", kind: .unreachable)
    default:
      return FleetError(
        wasConnected ? "lost \(broker.url): \(text)" : "cannot connect to \(broker.url): \(text)",
        kind: .unreachable)
    }
  }

  /// `10 s`, `0.5 s`.
  private static func seconds(_ duration: Duration) -> String {
    let (whole, attoseconds) = duration.components
    guard attoseconds != 0 else { return "\(whole) s" }
    return "\(Double(whole) + Double(attoseconds) / 1e18) s"
  }

  static func cannotMakeClient(_ error: Errno) -> FleetError {
    FleetError("cannot make an MQTT client: \(error)", kind: .configuration)
  }

  static func cannotSetWill(_ text: String) -> FleetError {
    FleetError("cannot set the Last Will: \(text)", kind: .configuration)
  }

  static func unusableTLSFiles(_ text: String, broker: BrokerConfiguration) -> FleetError {
    FleetError(
      "cannot use the TLS files for \(broker.url) (\(text)): check --mqtt-cafile, "
        + "--mqtt-cert and --mqtt-key", kind: .configuration)
  }

  static func cannotPublish(to topic: String, _ text: String) -> FleetError {
    FleetError("cannot publish to \(topic): \(text)", kind: .unreachable)
  }
}
