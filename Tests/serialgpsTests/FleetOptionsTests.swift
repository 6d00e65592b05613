import Fleet
import SerialGPS
import Testing

@testable import serialgps

@Suite("serialgps serve --mqtt … and follow: options")
struct FleetOptionsTests {
  func serve(_ arguments: [String]) -> ServeOptions? {
    if case .options(let options) = ServeOptions.parse(arguments) { return options }
    return nil
  }

  func serveComplaint(_ arguments: [String]) -> String? {
    if case .invalid(let message) = ServeOptions.parse(arguments) { return message }
    return nil
  }

  func followComplaint(_ arguments: [String]) -> String? {
    if case .invalid(let message) = FollowOptions.parse(arguments) { return message }
    return nil
  }

  @Test("serve: every MQTT option, and --listen none")
  func serveOptions() throws {
    let parsed = try #require(
      serve([
        "--listen", "none", "--mqtt", "mqtts://broker:8883", "--mqtt-id", "truck-17",
        "--mqtt-gating", "always", "--mqtt-cafile", "/etc/ca.pem", "--mqtt-cert", "/etc/c.pem",
        "--mqtt-key", "/etc/k.pem", "--mqtt-username", "truck-17", "--mqtt-password-file",
        "/etc/pw", "--mqtt-queue", "600", "--mqtt-insecure", "--mqtt-max-consumers", "5000",
        "/dev/ttyACM0",
      ]))
    #expect(parsed.fleet.broker.url == "mqtts://broker:8883")
    #expect(parsed.fleet.ids == ["truck-17"])
    #expect(parsed.fleet.gating == .always)
    #expect(parsed.fleet.queue == 600)
    #expect(parsed.fleet.maximumConsumers == 5000)
    #expect(parsed.fleet.broker.caFile == "/etc/ca.pem")
    #expect(parsed.fleet.broker.certificateFile == "/etc/c.pem")
    #expect(parsed.fleet.broker.keyFile == "/etc/k.pem")
    #expect(parsed.fleet.broker.username == "truck-17")
    #expect(parsed.fleet.broker.passwordFile == "/etc/pw")
    #expect(parsed.fleet.broker.insecure)
    #expect(parsed.devices == ["/dev/ttyACM0"])
    #expect(try parsed.configuration().get().listenAddress == nil)
    // Without MQTT, nothing changes.
    #expect(try #require(serve([])).fleet == ServeFleetOptions())
  }

  @Test("serve: mistakes are explained")
  func serveMistakes() {
    #expect(serveComplaint(["--listen", "none"])?.contains("--mqtt") == true)
    #expect(
      serveComplaint(["--mqtt-id", "a", "/dev/ttyACM0"])?.contains("need --mqtt URL") == true)
    #expect(
      serveComplaint(["--mqtt", "mqtt://h", "--mqtt-id", "a"])?.contains("one per DEVICE") == true)
    #expect(
      serveComplaint(["--mqtt", "mqtt://h", "--mqtt-id", "a", "/dev/a", "/dev/b"])?.contains(
        "one per DEVICE") == true)
    #expect(
      serveComplaint([
        "--mqtt", "mqtt://h", "--mqtt-id", "a", "--mqtt-id", "a", "/dev/a", "/dev/b",
      ])?.contains("same --mqtt-id") == true)
    #expect(
      serve(["--mqtt", "mqtt://h", "--mqtt-id", "a", "--mqtt-id", "b", "/dev/a", "/dev/b"])?.fleet
        .ids == ["a", "b"])
    #expect(
      serveComplaint(["--mqtt", "mqtt://h", "--mqtt-id", "a/b", "/dev/a"])?.contains("topic")
        == true)
    #expect(
      serveComplaint(["--mqtt", "mqtt://h", "--mqtt-gating", "sometimes"])?.contains(
        "demand or always") == true)
    #expect(
      serveComplaint(["--mqtt", "mqtt://h", "--mqtt-queue", "0"])?.contains("--mqtt-queue") == true)
    #expect(
      serveComplaint(["--mqtt", "mqtt://h", "--mqtt-max-consumers", "0"])?.contains(
        "from 1 to 1000000") == true)
    #expect(
      serveComplaint(["--mqtt-max-consumers", "10"]) == "the --mqtt-… options need --mqtt URL")
    #expect(serveComplaint(["--mqtt", "mqtt://h", "--mqtt-password", "x"])?.contains("ps") == true)
    #expect(serveComplaint(["--mqtt-bogus"])?.contains("unknown option") == true)
    #expect(serveComplaint(["--mqtt"])?.contains("broker URL") == true)
  }

  @Test("follow: the broker and one receiver; mistakes explained")
  func follow() throws {
    guard
      case .options(let parsed) = FollowOptions.parse(
        ["--mqtt", "mqtt://127.0.0.1", "truck-17", "--json", "--count", "3", "--consumer", "me"])
    else {
      Issue.record("not parsed")
      return
    }
    #expect(parsed.id == "truck-17" && parsed.json && parsed.count == 3 && parsed.consumer == "me")
    #expect(followComplaint(["truck-17"])?.contains("--mqtt") == true)
    #expect(followComplaint(["--mqtt", "mqtt://h"])?.contains("ID") == true)
    #expect(followComplaint(["--mqtt", "mqtt://h", "a", "b"])?.contains("one receiver") == true)
    #expect(followComplaint(["--mqtt", "mqtt://h", "a#"])?.contains("name") == true)
    #expect(
      followComplaint(["--mqtt", "mqtt://h", "a", "--count", "0"])?.contains("--count") == true)
    #expect(FollowOptions.parse(["--help"]) == .help)
  }

  @Test("follow --interval and --accuracy: the demand's terms")
  func followRequest() {
    guard
      case .options(let parsed) = FollowOptions.parse(
        ["--mqtt", "mqtt://127.0.0.1", "truck-17", "--interval", "60", "--accuracy", "20"])
    else {
      Issue.record("not parsed")
      return
    }
    #expect(parsed.request == LocationRequest(interval: .seconds(60), accuracy: 20))
    #expect(
      followComplaint(["--mqtt", "mqtt://127.0.0.1", "truck-17", "--interval", "0"])?
        .contains("--interval needs") == true)
  }

  @Test("the broker options make a checked configuration; the password never from the command line")
  func brokerConfiguration() throws {
    var options = BrokerOptions()
    options.url = "mqtt://192.168.1.2"
    #expect(throws: FleetError.self) { try options.configuration() }  // plaintext, remote
    options.insecure = true
    #expect(try options.configuration().allowsPlaintextToRemoteBroker)
    options.url = "mqtt://127.0.0.1"
    options.passwordFile = "/nonexistent"
    options.username = "me"
    #expect(throws: FleetError.self) { try options.configuration() }
  }
}
