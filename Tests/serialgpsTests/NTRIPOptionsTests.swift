import Foundation
import NTRIP
import Testing

@testable import serialgps

@Suite("serialgps serve --ntrip …: options and credentials")
struct NTRIPOptionsTests {
  func serve(_ arguments: [String]) -> ServeOptions? {
    if case .options(let options) = ServeOptions.parse(arguments) { return options }
    return nil
  }

  func complaint(_ arguments: [String]) -> String? {
    if case .invalid(let message) = ServeOptions.parse(arguments) { return message }
    return nil
  }

  @Test("every NTRIP option")
  func options() throws {
    let parsed = try #require(
      serve([
        "--ntrip", "ntrip://rover@caster.example:2102/MOUNT", "--ntrip-credentials", "/etc/c",
        "--ntrip-gga", "0", "--ntrip-timeout", "45", "/dev/ttyACM0",
      ]))
    #expect(parsed.ntrip.url == "ntrip://rover@caster.example:2102/MOUNT")
    #expect(parsed.ntrip.credentialsFile == "/etc/c")
    #expect(parsed.ntrip.positionInterval == nil)
    #expect(parsed.ntrip.silenceTimeout == .seconds(45))
    #expect(parsed.devices == ["/dev/ttyACM0"])
  }

  @Test("mistakes are said with what to write")
  func mistakes() {
    #expect(complaint(["--ntrip-gga", "5"]) == "the --ntrip-… options need --ntrip URL")
    #expect(
      complaint(["--ntrip", "caster.example/MOUNT"])
        == "--ntrip: give the caster as ntrip://[user[:password]@]host[:port]/MOUNTPOINT")
    #expect(
      complaint(["--ntrip", "ntrip://caster.example"])
        == "--ntrip: the address names no mountpoint: add /MOUNTPOINT after the host")
  }

  @Test("credentials: the file first, then the environment, then the URL (warned about)")
  func credentials() throws {
    let directory = FileManager.default.temporaryDirectory
      .appendingPathComponent("ntrip-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    let file = directory.appendingPathComponent("credentials").path
    try "fileuser:file:pass\n".write(toFile: file, atomically: true, encoding: .utf8)

    var options = ServeNTRIPOptions()
    options.url = "ntrip://urluser:urlpass@caster.example/MOUNT"
    options.credentialsFile = file
    let fromFile = try options.configuration(environmentCredentials: "envuser:envpass").get()
    #expect(
      fromFile.0.caster.credentials == NTRIPCredentials(user: "fileuser", password: "file:pass"))
    #expect(fromFile.warning == nil)

    options.credentialsFile = nil
    let fromEnvironment = try options.configuration(environmentCredentials: "envuser:envpass").get()
    #expect(
      fromEnvironment.0.caster.credentials
        == NTRIPCredentials(user: "envuser", password: "envpass"))

    let fromURL = try options.configuration(environmentCredentials: nil).get()
    #expect(fromURL.0.caster.credentials == NTRIPCredentials(user: "urluser", password: "urlpass"))
    let warning = try #require(fromURL.warning)
    #expect(warning.contains("shows in the process list"))
    #expect(!warning.contains("urlpass"))
    #expect("\(fromURL.0.caster)" == "ntrip://urluser:***@caster.example:2101/MOUNT")

    options.credentialsFile = directory.appendingPathComponent("missing").path
    #expect(throws: ServeUsageError.self) {
      try options.configuration(environmentCredentials: nil).get()
    }
  }
}
