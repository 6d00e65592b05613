import Chipsets
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

  @Test func ubx() throws {
    #expect(
      try options([])?.configuration().get().receiverOptions.ubxMessages
        == UBXMessageSelection.none)
    let navigation = try #require(options(["--ubx", "navigation", "--chipset", "ublox"]))
    #expect(try navigation.configuration().get().receiverOptions.ubxMessages == .navigation)
    #expect(
      try options(["--ubx", "legacy"])?.configuration().get().receiverOptions.ubxMessages
        == .legacyNavigation)
    #expect(complaint(["--ubx", "binary"])?.contains("navigation|legacy|off") == true)
  }

  @Test func nmeaSocket() throws {
    let parsed = try #require(options(["--nmea-socket", "/run/s/nmea.sock"]))
    #expect(try parsed.configuration().get().nmeaSocket == NMEASocket(path: "/run/s/nmea.sock"))
    let grouped = try #require(
      options(["--nmea-socket", "/run/s/nmea.sock", "--nmea-socket-mode", "0660"]))
    #expect(try grouped.configuration().get().nmeaSocket?.mode == 0o660)
    #expect(try options([])?.configuration().get().nmeaSocket == nil)
    for bad in ["8", "1777", "rw", ""] {
      #expect(
        complaint(["--nmea-socket", "/s", "--nmea-socket-mode", bad])?.contains("octal") == true,
        "\(bad)")
    }
    #expect(complaint(["--nmea-socket-mode", "0660"])?.contains("add --nmea-socket") == true)
  }

  @Test func ephemerisRefresh() throws {
    #expect(
      try options([])?.configuration().get().receiverOptions.ephemerisRefresh == .seconds(7200))
    #expect(
      try options(["--ephemeris-refresh", "300"])?.configuration().get().receiverOptions
        .ephemerisRefresh == .seconds(300))
    for bad in [["--ephemeris-refresh", "0"], ["--ephemeris-refresh", "soon"]] {
      #expect(complaint(bad)?.contains("--ephemeris-refresh needs") == true, "\(bad)")
    }
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

@Suite("serialgps serve --time options")
struct ServeTimeOptionsTests {
  func complaint(_ arguments: [String]) -> String? {
    if case .invalid(let message) = ServeOptions.parse(arguments) { return message }
    return nil
  }

  @Test func timeOptionsReachTheServerConfiguration() throws {
    guard
      case .options(let parsed) = ServeOptions.parse([
        "--time-offset", "152.5", "--time", "--chrony-socket", "/run/c.sock", "--ntp-shm", "4",
        "--pps", "/dev/pps1", "--chipset", "ublox", "/dev/ttyAMA0",
      ])
    else {
      Issue.record("did not parse")
      return
    }
    let time = try #require(try parsed.configuration().get().time)
    #expect(time.offset == .microseconds(152_500))
    #expect(time.chronySocket == "/run/c.sock")
    #expect(time.ntpUnit == 4)
    #expect(time.ppsDevice == "/dev/pps1")
    #expect(time.family == .ublox)
    // PPS is on by default (a kernel device, else DCD); --pps none turns it off for every
    // receiver, and may be given with several.
    #expect(time.pps && time.carrierDetect)
    guard
      case .options(let noPPS) = ServeOptions.parse([
        "--time", "--pps", "none", "/dev/ttyS0", "/dev/ttyS1",
      ])
    else {
      Issue.record("--pps none with two receivers did not parse")
      return
    }
    let noPPSTime = try #require(try noPPS.configuration().get().time)
    #expect(!noPPSTime.pps && noPPSTime.ppsDevice == nil)
    #expect(complaint(["--pps", "none"]) == "--pps none is a time option: add --time")
    // Without --time: no time service.
    guard case .options(let plain) = ServeOptions.parse(["/dev/ttyAMA0"]) else {
      Issue.record("did not parse")
      return
    }
    #expect(try plain.configuration().get().time == nil)
    // A time server needs no gpsd port.
    guard case .options = ServeOptions.parse(["--time", "--listen", "none"]) else {
      Issue.record("--time --listen none refused")
      return
    }
  }

  @Test func timeMistakesAreExplained() {
    #expect(complaint(["--time-offset", "100"]) == "--time-offset is a time option: add --time")
    #expect(complaint(["--ntp-shm", "2", "/dev/ttyS0"])?.contains("add --time") == true)
    #expect(complaint(["--time", "--time-offset", "1500"])?.contains("-1000 to 1000") == true)
    #expect(complaint(["--time", "--time-offset", "nan"])?.contains("--time-offset") == true)
    #expect(complaint(["--time", "--time-offset"])?.contains("--time-offset") == true)
    #expect(complaint(["--time", "--ntp-shm", "-1"])?.contains("0 to 99") == true)
    #expect(complaint(["--time", "--chrony-socket", "clk.sock"])?.contains("absolute") == true)
    #expect(complaint(["--time", "--pps", "pps0"])?.contains("/dev/pps0") == true)
    #expect(
      complaint(["--time", "--pps", "/dev/pps0", "/dev/ttyS0", "/dev/ttyS1"])?.contains(
        "one receiver") == true)
    #expect(complaint(["--listen", "none"])?.contains("--time") == true)
  }
}

@Suite("serialgps serve --exit-idle")
struct ServeExitIdleOptionTests {
  @Test func takesSecondsAndRefusesWhatCannotBeIdle() throws {
    guard case .options(let parsed) = ServeOptions.parse(["--exit-idle", "60"]) else {
      Issue.record("--exit-idle 60 refused")
      return
    }
    #expect(parsed.exitIdle == .seconds(60))
    for arguments in [
      ["--exit-idle", "0"], ["--exit-idle", "x"], ["--exit-idle", "60", "--time"],
      ["--exit-idle", "60", "--listen", "none", "--time"],
      ["--exit-idle", "60", "--mqtt", "mqtt://127.0.0.1"],
    ] {
      guard case .invalid(let message) = ServeOptions.parse(arguments) else {
        Issue.record("\(arguments) accepted")
        continue
      }
      #expect(message.contains("--exit-idle"), "\(arguments): \(message)")
    }
  }
}
