import Foundation
import Testing

@testable import Fleet

@Suite("broker URLs, safety checks and credentials")
struct BrokerConfigurationTests {
  @Test("URLs: schemes, default ports, IPv6, a user name")
  func urls() throws {
    let plain = try BrokerConfiguration(url: "mqtt://broker.example.net")
    #expect(plain.host == "broker.example.net" && plain.port == 1883 && !plain.usesTLS)
    let tls = try BrokerConfiguration(url: "mqtts://truck-17@broker.example.net:9883/")
    #expect(tls.host == "broker.example.net" && tls.port == 9883 && tls.usesTLS)
    #expect(tls.username == "truck-17")
    #expect(tls.url == "mqtts://broker.example.net:9883")
    let v6 = try BrokerConfiguration(url: "mqtt://[::1]:1884")
    #expect(v6.host == "::1" && v6.port == 1884 && v6.isLoopback)
    #expect(v6.url == "mqtt://[::1]:1884")
    #expect(try BrokerConfiguration(url: "mqtts://10.0.0.5").port == 8883)
  }

  @Test(
    "bad URLs say what is wrong",
    arguments: [
      ("http://broker", "mqtt://HOST"), ("mqtt://", "no host"), ("mqtt://host:0", "port"),
      ("mqtt://host:99999", "port"), ("mqtt://host/topic", "no path"),
      ("mqtt://user:secret@host", "password"), ("mqtt://[::1", "closing"),
      ("mqtt://@host", "empty"),
    ])
  func badURLs(_ url: String, _ phrase: String) {
    #expect(throws: FleetError.self) { try BrokerConfiguration(url: url) }
    do {
      _ = try BrokerConfiguration(url: url)
    } catch {
      #expect(error.description.contains(phrase), "\(error.description)")
      #expect(error.kind == .configuration)
    }
  }

  @Test("plaintext is refused to a broker off this machine unless the user insists")
  func plaintextToRemote() throws {
    for url in ["mqtt://127.0.0.1", "mqtt://localhost", "mqtt://127.3.4.5", "mqtt://[::1]"] {
      #expect(throws: Never.self) { try BrokerConfiguration(url: url).validate() }
    }
    var remote = try BrokerConfiguration(url: "mqtt://192.168.1.10")
    #expect(throws: FleetError.self) { try remote.validate() }
    do { try remote.validate() } catch { #expect(error.description.contains("--mqtt-insecure")) }
    remote.allowsPlaintextToRemoteBroker = true
    #expect(throws: Never.self) { try remote.validate() }
    #expect(throws: Never.self) { try BrokerConfiguration(url: "mqtts://192.168.1.10").validate() }
    #expect(throws: FleetError.self) { try BrokerConfiguration(url: "mqtt://gps.local").validate() }
  }

  @Test("TLS files must come together, with TLS, and be readable; a password needs a user name")
  func inconsistentSettings() throws {
    var tls = try BrokerConfiguration(url: "mqtts://broker")
    tls.certificateFile = "/etc/hostname"
    #expect(throws: FleetError.self) { try tls.validate() }  // no key
    tls.keyFile = "/nonexistent/key.pem"
    #expect(throws: FleetError.self) { try tls.validate() }  // unreadable
    var plain = try BrokerConfiguration(url: "mqtt://127.0.0.1")
    plain.caFile = "/etc/hostname"
    #expect(throws: FleetError.self) { try plain.validate() }
    var password = try BrokerConfiguration(url: "mqtt://127.0.0.1")
    password.password = "secret"
    #expect(throws: FleetError.self) { try password.validate() }
    #expect(!password.description.contains("secret"))
  }

  @Test("the password file: its first line, without the line end; empty or missing is an error")
  func passwordFile() throws {
    let directory = try ScratchDirectory()
    let file = try directory.write("password", "s3cret with spaces\r\nsecond line\n")
    #expect(try BrokerConfiguration.password(fromFile: file) == "s3cret with spaces")
    let empty = try directory.write("empty", "\n")
    #expect(throws: FleetError.self) { try BrokerConfiguration.password(fromFile: empty) }
    #expect(throws: FleetError.self) {
      try BrokerConfiguration.password(fromFile: directory.file("missing"))
    }
  }

  @Test("names: valid topic levels only; serial numbers made into names")
  func names() {
    #expect(FleetTopics.isValidName("01A7F3C2"))
    #expect(FleetTopics.isValidName("truck-17.front_gps"))
    for bad in ["", "a/b", "a+b", "#", "a b", "ü", String(repeating: "x", count: 65)] {
      #expect(!FleetTopics.isValidName(bad), "\(bad)")
    }
    #expect(FleetTopics.name(from: "SN 12/34") == "SN_12_34")
    #expect(FleetTopics.name(from: "///") == nil)
    #expect(FleetTopics.name(from: "") == nil)
  }
}
