import Chipsets
import SerialGPS
import Testing

@testable import serialgps

/// `--sleep` and `--wake-pin` on watch and serve (docs/chipsets.md, "Sleep depth").
@Suite struct SleepOptionsTests {
  @Test func serveTakesTheDepthAndRefusesOthers() throws {
    guard case .options(let parsed) = ServeOptions.parse(["--sleep", "standby"]) else {
      Issue.record("--sleep standby refused")
      return
    }
    #expect(try parsed.configuration().get().receiverOptions.sleepDepth == .standby)
    guard case .options(let plain) = ServeOptions.parse([]) else { return }
    let options = try plain.configuration().get().receiverOptions
    #expect(options.sleepDepth == .deepest)
    #expect(options.wakePin == nil)
    guard case .invalid(let message) = ServeOptions.parse(["--sleep", "deep"]) else {
      Issue.record("--sleep deep accepted")
      return
    }
    #expect(message == "--sleep takes deepest or standby, not deep")
  }

  @Test func aWakePinThatCannotBeRequestedIsAUsageError() {
    guard case .options(let parsed) = ServeOptions.parse(["--wake-pin", "gpiochip987:17"]) else {
      Issue.record("--wake-pin refused at parse time")
      return
    }
    guard case .failure(let error) = parsed.configuration() else {
      Issue.record("a missing GPIO chip was accepted")
      return
    }
    #expect(error.message.contains("/dev/gpiochip987 line 17: no such GPIO chip"), "\(error)")
  }

  @Test func watchTakesTheSimulatorsLine() throws {
    let line = try Watch.wakeLine("control:/tmp/some.fifo")
    #expect("\(line)" == "the simulator's FORCE_ON through /tmp/some.fifo")
    guard case .options(let options) = Watch.parse(["--sleep", "standby", "--wake-pin", "x:1"])
    else {
      Issue.record("refused")
      return
    }
    #expect(options.receiver.sleepDepth == .standby)
    #expect(options.receiver.wakePin == "x:1")
  }
}
