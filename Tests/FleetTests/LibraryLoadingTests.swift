import CMosquitto
import Foundation
import Testing

@testable import Fleet

// libmosquitto is loaded with dlopen when a bridge or a remote receiver is first made
// (docs/fleet.md, "Loading libmosquitto"): what a missing or wrong library says, and that a
// serialgps that does not use MQTT does not load it.
@Suite("libmosquitto loaded at run time, only by what uses MQTT")
struct LibraryLoadingTests {
  @Test("the installed library loads, and the bridge's initialisers find it")
  func installedLibraryLoads() throws {
    let loaded = Libmosquitto.load(soname: Libmosquitto.soname)
    #expect(throws: Never.self) { try loaded.get() }
    try Libmosquitto.require()
    // Resolved to the library's own functions: they answer as libmosquitto does.
    let text = String(cString: try loaded.get().mosquitto_strerror(MOSQ_ERR_NO_CONN.rawValue)!)
    #expect(text.lowercased().contains("connect"), "\(text)")
  }

  @Test("a missing library: an error that says what to install")
  func missingLibrary() {
    let soname = "libmosquitto-not-installed.so.1"
    guard case .failure(let error) = Libmosquitto.load(soname: soname) else {
      Issue.record("\(soname) loaded")
      return
    }
    #expect(error.kind == .configuration)
    #expect(error.description.contains("apt install libmosquitto1"), "\(error)")
    #expect(error.description.contains(soname), "\(error)")
  }

  @Test("a library that is not libmosquitto: the function it lacks is named")
  func wrongLibrary() {
    guard case .failure(let error) = Libmosquitto.load(soname: "libudev.so.1") else {
      Issue.record("libudev.so.1 passed for libmosquitto")
      return
    }
    #expect(error.description.contains("has no function mosquitto_lib_init"), "\(error)")
    #expect(error.description.contains("apt install libmosquitto1"), "\(error)")
  }

  @Test("serialgps loads libmosquitto for follow, and not for a command without MQTT")
  func onlyMQTTLoadsIt() async throws {
    // The dynamic loader lists every library it looks for (LD_DEBUG=libs), dlopen's included.
    let plain = try Child(try serialgpsBinary(), ["--version"], environment: ["LD_DEBUG": "libs"])
    #expect(await plain.wait() == 0)
    #expect(plain.errorOutput.contains("find library=libc.so.6"), "LD_DEBUG printed nothing")
    for library in ["libmosquitto", "libssl", "libcrypto"] {
      #expect(!plain.errorOutput.contains(library), "serialgps --version loaded \(library)")
    }

    // Nothing listens on port 1: follow keeps retrying, having loaded the library.
    let follower = try Child(
      try serialgpsBinary(), ["follow", "--mqtt", "mqtt://127.0.0.1:1", "board-1"],
      environment: ["LD_DEBUG": "libs"])
    #expect(await eventually { follower.errorOutput.contains("find library=libmosquitto.so.1") })
    follower.signal(SIGTERM)
    await follower.wait()
  }
}
