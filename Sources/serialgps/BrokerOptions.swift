import Fleet

/// The `--mqtt…` options `serve` and `follow` share: the broker, TLS and credentials. The
/// password never comes from the command line (where `ps` shows it): from a file, or from the
/// environment variable `SERIALGPS_MQTT_PASSWORD`.
struct BrokerOptions: Equatable {
  var url: String?
  var caFile: String?
  var certificateFile: String?
  var keyFile: String?
  var username: String?
  var passwordFile: String?
  var insecure = false

  static let help = """
      --mqtt URL             the broker: mqtt://HOST[:PORT] (plaintext, 1883) or
                             mqtts://HOST[:PORT] (TLS, 8883)
      --mqtt-cafile FILE     PEM certificate authorities that signed the broker's
                             certificate (default: the system's)
      --mqtt-cert FILE       PEM client certificate, for brokers that want one
      --mqtt-key FILE        its private key
      --mqtt-username NAME   user name (or USER@ in the URL)
      --mqtt-password-file FILE
                             the password: the file's first line; else the environment
                             variable \(BrokerConfiguration.passwordEnvironmentVariable). Never on the command line.
      --mqtt-insecure        allow mqtt:// (plaintext) to a broker that is not on this machine
    """

  /// Takes `argument` and its value when it is one of these options; `false` otherwise.
  mutating func take(_ argument: String, from reader: inout ArgumentReader) throws(UsageMessage)
    -> Bool
  {
    switch argument {
    case "--mqtt":
      url = try reader.value("--mqtt needs a broker URL such as mqtts://broker.example.net")
    case "--mqtt-cafile":
      caFile = try reader.value("--mqtt-cafile needs a PEM file")
    case "--mqtt-cert":
      certificateFile = try reader.value("--mqtt-cert needs a PEM file")
    case "--mqtt-key":
      keyFile = try reader.value("--mqtt-key needs a PEM file")
    case "--mqtt-username":
      username = try reader.value("--mqtt-username needs a name")
    case "--mqtt-password-file":
      passwordFile = try reader.value("--mqtt-password-file needs a file")
    case "--mqtt-password":
      throw UsageMessage(
        "a password on the command line is visible to every user (ps); put it in a file "
          + "(--mqtt-password-file FILE) or in \(BrokerConfiguration.passwordEnvironmentVariable)")
    case "--mqtt-insecure":
      insecure = true
    default:
      return false
    }
    return true
  }

  /// Whether any option other than `--mqtt` itself was given (they need it).
  var givesSettings: Bool {
    caFile != nil || certificateFile != nil || keyFile != nil || username != nil
      || passwordFile != nil || insecure
  }

  /// The broker's configuration, with the password from the file or the environment, checked
  /// (``BrokerConfiguration/validate()``).
  func configuration() throws(FleetError) -> BrokerConfiguration {
    guard let url else {
      throw FleetError("no broker: give --mqtt URL", kind: .configuration)
    }
    var broker = try BrokerConfiguration(url: url)
    broker.caFile = caFile
    broker.certificateFile = certificateFile
    broker.keyFile = keyFile
    if let username { broker.username = username }
    if let passwordFile {
      broker.password = try BrokerConfiguration.password(fromFile: passwordFile)
    } else if broker.username != nil {
      broker.password = BrokerConfiguration.passwordFromEnvironment()
    }
    broker.allowsPlaintextToRemoteBroker = insecure
    try broker.validate()
    return broker
  }
}
