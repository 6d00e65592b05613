import Glibc
import POSIX

/// Where the MQTT broker is and how to reach it: address, TLS, credentials, timing.
///
/// ```swift
/// var broker = try BrokerConfiguration(url: "mqtts://broker.example.net")
/// broker.caFile = "/etc/serialgps/ca.crt"
/// broker.username = "truck-17"
/// broker.password = try BrokerConfiguration.password(fromFile: "/etc/serialgps/mqtt-password")
/// ```
///
/// A plaintext connection (`mqtt://`) to a broker that is not on this machine is refused
/// unless ``allowsPlaintextToRemoteBroker`` is set: positions and passwords would cross the
/// network readable by anyone on the way.
public struct BrokerConfiguration: Sendable, Hashable, CustomStringConvertible {
  /// The broker's host name or numeric address.
  public var host: String
  public var port: UInt16
  /// TLS (`mqtts://`) or plaintext (`mqtt://`).
  public var usesTLS: Bool
  /// PEM file of the certificate authorities the broker's certificate is checked against;
  /// `nil`: the system's (`/etc/ssl/certs`).
  public var caFile: String?
  /// PEM client certificate and its key, for brokers that authenticate clients by
  /// certificate.
  public var certificateFile: String?
  public var keyFile: String?
  public var username: String?
  /// Never written into messages, logs or ``description``.
  public var password: String?
  /// Permits `mqtt://` to a broker that is not on loopback.
  public var allowsPlaintextToRemoteBroker = false
  /// How often the connection is checked when idle; the broker declares a silent client gone
  /// (and publishes its Last Will) after one and a half times this.
  public var keepAlive: Duration = .seconds(30)
  /// First delay before reconnecting, doubled per failed attempt up to
  /// ``maximumReconnectDelay``; each delay is drawn at random from its upper half (jitter), so
  /// a fleet does not reconnect in step after a broker restart.
  public var reconnectDelay: Duration = .milliseconds(500)
  public var maximumReconnectDelay: Duration = .seconds(30)
  /// How long a connection attempt may take before it is abandoned and retried.
  public var connectTimeout: Duration = .seconds(15)

  /// The environment variable the password may come from.
  public static let passwordEnvironmentVariable = "SERIALGPS_MQTT_PASSWORD"

  /// `mqtt://HOST[:PORT]` (default port 1883) or `mqtts://HOST[:PORT]` (8883); IPv6 in
  /// brackets; a user name may come before the host (`mqtts://truck-17@broker`), a password
  /// may not (it would show in `ps`).
  public init(url: String) throws(FleetError) {
    var rest: Substring
    if url.hasPrefix("mqtt://") {
      usesTLS = false
      rest = url.dropFirst(7)
    } else if url.hasPrefix("mqtts://") {
      usesTLS = true
      rest = url.dropFirst(8)
    } else {
      throw FleetError(
        "'\(url)' is not a broker URL; give mqtt://HOST[:PORT] or mqtts://HOST[:PORT]",
        kind: .configuration)
    }
    if rest.hasSuffix("/") { rest = rest.dropLast() }
    guard !rest.contains("/"), !rest.contains("?") else {
      throw FleetError(
        "'\(url)': a broker URL has no path or query; give mqtt://HOST[:PORT]",
        kind: .configuration)
    }
    if let at = rest.lastIndex(of: "@") {
      let user = rest[..<at]
      guard !user.contains(":") else {
        throw FleetError(
          "'\(url)' holds a password, which `ps` would show to every user; put it in a file "
            + "(--mqtt-password-file) or the \(Self.passwordEnvironmentVariable) environment "
            + "variable instead", kind: .configuration)
      }
      guard !user.isEmpty else {
        throw FleetError("'\(url)': the user name before '@' is empty", kind: .configuration)
      }
      username = String(user)
      rest = rest[rest.index(after: at)...]
    }
    var hostText = rest
    var portText: Substring?
    if rest.hasPrefix("[") {
      guard let close = rest.firstIndex(of: "]") else {
        throw FleetError("'\(url)': an IPv6 address needs its closing ']'", kind: .configuration)
      }
      hostText = rest[rest.index(after: rest.startIndex)..<close]
      let after = rest[rest.index(after: close)...]
      if !after.isEmpty {
        guard after.hasPrefix(":") else {
          throw FleetError(
            "'\(url)': expected ':PORT' after the bracketed address", kind: .configuration)
        }
        portText = after.dropFirst()
      }
    } else if let colon = rest.lastIndex(of: ":") {
      hostText = rest[..<colon]
      portText = rest[rest.index(after: colon)...]
    }
    guard !hostText.isEmpty else {
      throw FleetError("'\(url)' names no host", kind: .configuration)
    }
    host = String(hostText)
    if let portText {
      guard let value = UInt16(portText), value > 0 else {
        throw FleetError(
          "'\(url)': the port must be a number from 1 to 65535", kind: .configuration)
      }
      port = value
    } else {
      port = usesTLS ? 8883 : 1883
    }
  }

  /// The broker as a URL, without credentials.
  public var url: String {
    let shown = host.contains(":") ? "[\(host)]" : host
    return (usesTLS ? "mqtts://" : "mqtt://") + shown + ":\(port)"
  }

  public var description: String { url }

  /// Whether the broker runs on this machine (`localhost`, 127.0.0.0/8, `::1`): only then is
  /// plaintext harmless.
  public var isLoopback: Bool {
    if host == "localhost" { return true }
    var v4 = in_addr()
    if inet_pton(AF_INET, host, &v4) == 1 {
      return UInt32(bigEndian: v4.s_addr) >> 24 == 127
    }
    var v6 = in6_addr()
    if inet_pton(AF_INET6, host, &v6) == 1 {
      return withUnsafeBytes(of: &v6) { Array($0) } == [UInt8](repeating: 0, count: 15) + [1]
    }
    return false
  }

  /// Refuses what would be unsafe or cannot work: plaintext to a remote broker without
  /// consent, a certificate without its key, a password without a user name, unreadable
  /// files.
  public func validate() throws(FleetError) {
    if !usesTLS && !isLoopback && !allowsPlaintextToRemoteBroker {
      throw FleetError(
        "\(url) is not on this machine and mqtt:// is plaintext: positions and the password "
          + "would cross the network unencrypted. Use mqtts:// (TLS), or pass --mqtt-insecure "
          + "to do it anyway", kind: .configuration)
    }
    if !usesTLS && (caFile != nil || certificateFile != nil || keyFile != nil) {
      throw FleetError(
        "TLS files were given for \(url), which is plaintext; use mqtts://", kind: .configuration)
    }
    if (certificateFile == nil) != (keyFile == nil) {
      throw FleetError(
        "a client certificate needs its key and a key its certificate (--mqtt-cert and "
          + "--mqtt-key together)", kind: .configuration)
    }
    if password != nil && username == nil {
      throw FleetError(
        "a password was given without a user name (--mqtt-username, or USER@ in the URL)",
        kind: .configuration)
    }
    for (what, path) in [("CA file", caFile), ("certificate", certificateFile), ("key", keyFile)] {
      guard let path else { continue }
      guard access(path, R_OK) == 0 else {
        throw FleetError(
          "cannot read the \(what) \(path): \(Errno.current)",
          kind: .configuration)
      }
    }
  }

  /// The first line of `path`, without its line end: a password kept in a file readable only
  /// by the service (for systemd, `LoadCredential=`).
  public static func password(fromFile path: String) throws(FleetError) -> String {
    guard let file = fopen(path, "r") else {
      throw FleetError(
        "cannot read the password file \(path): \(Errno.current)",
        kind: .configuration)
    }
    defer { fclose(file) }
    var bytes: [UInt8] = []
    while bytes.count <= 4096 {
      let character = getc(file)
      if character == EOF || character == 0x0A { break }
      bytes.append(UInt8(truncatingIfNeeded: character))
    }
    if bytes.last == 0x0D { bytes.removeLast() }
    guard !bytes.isEmpty, bytes.count <= 4096 else {
      throw FleetError(
        "the password file \(path) \(bytes.isEmpty ? "is empty" : "has a first line over 4096 bytes")",
        kind: .configuration)
    }
    return String(decoding: bytes, as: UTF8.self)
  }

  /// The password in ``passwordEnvironmentVariable``, if set and not empty.
  public static func passwordFromEnvironment() -> String? {
    guard let value = getenv(passwordEnvironmentVariable) else { return nil }
    let text = String(cString: value)
    return text.isEmpty ? nil : text
  }
}
