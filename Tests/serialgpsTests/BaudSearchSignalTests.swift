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
    // The search is at its second rate: it runs, and has seconds to go. A loaded machine may
    // take seconds to start the process, so the wait is long; the bound that matters is below.
    try #require(
      await eventually(timeout: .seconds(30)) {
        (try? terminal.deviceSettings().baudRate) == .b4800
      }, "\(watch.standardError)")
    let signalled = ContinuousClock.now
    watch.signal(SIGINT)
    let status = await watch.exitStatus(timeout: .seconds(20))
    let took = ContinuousClock.now - signalled
    #expect(status != nil, "\(watch.standardError)")
    #expect(took < .seconds(1), "exited \(took) after SIGINT: \(watch.standardError)")
  }
}
