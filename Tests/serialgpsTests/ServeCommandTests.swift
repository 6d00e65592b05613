import GPSDServer
import SerialGPS
import Testing

@testable import serialgps

@Suite("serialgps serve options")
struct ServeCommandTests {
  func options(_ arguments: [String]) -> ServeOptions? {
    if case .options(let options) = ServeOptions.parse(arguments) { return options }
    return nil
  }

  func complaint(_ arguments: [String]) -> String? {
    if case .invalid(let message) = ServeOptions.parse(arguments) { return message }
    return nil
  }

  @Test func defaultsAreLoopbackAndDiscovery() throws {
    let parsed = try #require(options([]))
    #expect(parsed.devices.isEmpty)
    let configuration = try parsed.configuration().get()
    #expect(configuration.listenAddress == .loopback(port: 2947))
    #expect(!configuration.allowRemote)
    #expect(configuration.maximumClients == 64)
    #expect(configuration.receiverOptions.linger == .seconds(5))
    #expect(configuration.clientSendBufferSize == 32 * 1024)
  }

  @Test func everyOption() throws {
    let parsed = try #require(
      options([
        "--listen", "[::1]:3000", "--linger", "0.25", "--max-clients", "200", "--baud", "115200",
        "--chipset", "ublox", "/dev/ttyACM0", "/dev/ttyUSB0",
      ]))
    #expect(parsed.devices == ["/dev/ttyACM0", "/dev/ttyUSB0"])
    let configuration = try parsed.configuration().get()
    #expect(configuration.listenAddress?.description == "[::1]:3000")
    #expect(configuration.receiverOptions.linger == .milliseconds(250))
    #expect(configuration.maximumClients == 200)
    #expect(configuration.baud == .fixed(.b115200))
    if case .family(let family) = configuration.receiverOptions.chipset {
      #expect(family == .ublox)
    } else {
      Issue.record("--chipset ublox was not applied")
    }
    #expect(ServeOptions.parse(["--help"]) == .help)
  }

  @Test func clientSendBuffer() throws {
    #expect(
      try options(["--client-send-buffer", "8192"])?.configuration().get().clientSendBufferSize
        == 8192)
    #expect(
      try options(["--client-send-buffer", "kernel"])?.configuration().get()
        .clientSendBufferSize == nil)
    for bad in [
      ["--client-send-buffer", "100"], ["--client-send-buffer", "lots"],
      ["--client-send-buffer"],
    ] {
      #expect(complaint(bad)?.contains("--client-send-buffer needs") == true, "\(bad)")
    }
  }

  @Test func remoteNeedsTheFlagAndBadValuesAreExplained() throws {
    // The address parses; refusing it is the server's job (it names --allow-remote).
    let remote = try #require(options(["--listen", "0.0.0.0:2947"]))
    #expect(try !remote.configuration().get().allowRemote)
    #expect(
      try options(["--listen", "0.0.0.0", "--allow-remote"])?.configuration().get().allowRemote
        == true)
    #expect(throws: GPSDServerError.self) {
      try GPSDServer(configuration: remote.configuration().get(), devices: .fixed([]))
    }
    #expect(complaint(["--linger", "-1"])?.contains("--linger") == true)
    #expect(complaint(["--linger"])?.contains("--linger") == true)
    #expect(complaint(["--max-clients", "0"])?.contains("--max-clients") == true)
    #expect(complaint(["--baud", "12345"])?.contains("not a rate") == true)
    #expect(complaint(["--chipset", "garmin"])?.contains("unknown chipset") == true)
    #expect(complaint(["--frobnicate"]) == "unknown option '--frobnicate'")
    if case .failure(let error) = options(["--listen", "gps.example.org:2947"])!.configuration() {
      #expect(error.message.contains("numeric"))
    } else {
      Issue.record("a host name was accepted")
    }
  }
}
