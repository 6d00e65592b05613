import Foundation
import Glibc
import SerialPort
import Testing

@testable import serialgps

@Suite("Ctrl-C during a baud search")
struct BaudSearchSignalTests {
  /// `watch` on a receiver that says nothing searches its rate (9 rates × 1.5 s); Ctrl-C
  /// ends the search at once, not after its rates.
  @Test("watch exits within a second of SIGINT while it searches for the baud rate")
  func ctrlCEndsTheSearch() async throws {
    let terminal = try PseudoTerminal()  // a receiver that says nothing
    defer { terminal.hangUp() }
    let watch = try CLIProcess(["watch", terminal.devicePath])
    // The port is open and the search under way: the first rate is listened to for 1.5 s
    // and eight more follow, so 2 s in it has more than 10 s to go. (Its rate is not read off
    // the pty: in full runs of every suite that read was seen to miss the second rate.)
    try #require(
      await eventually(timeout: .seconds(30)) { watch.standardError.contains("powering on") },
      "\(watch.standardError)")
    try await Task.sleep(for: .seconds(2))
    let signalled = ContinuousClock.now
    watch.signal(SIGINT)
    let status = await watch.exitStatus(timeout: .seconds(20))
    let took = ContinuousClock.now - signalled
    #expect(status != nil, "\(watch.standardError)")
    #expect(took < .seconds(1), "exited \(took) after SIGINT: \(watch.standardError)")
  }
}
