import Chipsets
import NMEA
import Testing

@testable import SerialGPS

/// The machine's instants written as the time since the clock's origin, in milliseconds.
extension DriverInstant {
  fileprivate static func ms(_ value: Int) -> DriverInstant { .origin + .milliseconds(value) }
}

/// The receiver machine as exact effect lists on the manual clock's instants: every decision
/// the controller used to make by hand (the requests' demand fed to the power policy, the
/// receiver's power told to the scheduler, the wake record, the sleep chosen with its
/// fallback, a stale reader's failure, the timers of both under one name space).
@Suite struct ReceiverMachineTests {
  var machine = ReceiverMachine(
    configuration: .init(
      power: .init(
        linger: .seconds(5), backoff: .init(initial: .milliseconds(500), maximum: .seconds(4))),
      wakeLine: true))

  static let mediatek = MediaTekCommandSet()
  static let refused = FailureReason(.rejected, "$PMTK225,4 backup: refused")
  static let lineStuck = FailureReason(.other, "wake line: EIO")

  /// A 3D fix at `arrival` (the sleep tests' own).
  func update(at arrival: DriverInstant) -> FixUpdate {
    ExpectedSleepTests().update(at: arrival)
  }

  /// Powers the receiver on for a subscriber at `at` and reports the wake done.
  mutating func powerOnForSubscriber(at now: DriverInstant) {
    #expect(machine.handle(.attach, now: now) == [.publish(.poweringOn)])
    #expect(machine.nextOperation(now: now) == [.powerOn(slept: nil, keptBackup: nil)])
    _ = machine.handle(.portOpened, now: now)
    #expect(machine.handle(.poweredOn(toldTheTime: false), now: now) == [])
  }

  @Test mutating func anIntervalRequestPowersOnThroughThePolicyAndSleepsUntilItsNextWake() {
    let request = LocationRequest(interval: .seconds(600))
    // Due now: the scheduler's demand reaches the power policy inside the machine.
    #expect(
      machine.handle(.request(1, request, cached: nil), now: .ms(0))
        == [.publish(.poweringOn)])
    #expect(machine.nextOperation(now: .ms(0)) == [.powerOn(slept: nil, keptBackup: nil)])
    #expect(machine.nextOperation(now: .ms(0)) == nil)
    _ = machine.handle(.portOpened, now: .ms(0))
    #expect(machine.handle(.poweredOn(toldTheTime: false), now: .ms(300)) == [])
    // The first fix (hot, 2 s) is delivered, the wake ends at once (no linger), and the next
    // wake is armed 600 s after the delivery less the learned start and the margin.
    let fix = update(at: .ms(2000))
    let wake = DriverInstant.ms(602_000 - 2000 - 250)
    #expect(
      machine.handle(.fix(fix), now: .ms(2000))
        == [.deliver(1, fix), .armTimer(.requests(1), deadline: wake)])
    #expect(machine.nextOperation(now: .ms(2000)) == [.powerOff])
    // The sleep expected is until that wake, which chooses MediaTek's backup with the line.
    let context = machine.sleepContext(now: .ms(2000))
    #expect(context == SleepContext(expected: wake - .ms(2000), wakePin: true))
    #expect(Self.mediatek.sleep(for: context).state == .backup)
    #expect(
      machine.beginSleep(
        choice: Self.mediatek.sleep(for: context),
        quick: Self.mediatek.sleep(for: ReceiverMachine.quickContext), family: .mediatek)
        == [.driveWakeLine(high: false)])
    #expect(
      machine.handle(.slept(.lineDriven(failure: nil)), now: .ms(2100))
        == [.runStep(MediaTekCommandSet.backup)])
    #expect(machine.handle(.slept(.ran(succeeded: true, failure: nil)), now: .ms(2200)) == [])
    #expect(machine.handle(.closed, now: .ms(2300)) == [.keepPosition, .publish(.poweredOff)])
    #expect(machine.policy.asleepOnWakeLine)
    // The wake timer fires: on again, told how long it slept and that its backup was kept.
    #expect(
      machine.handle(.timerFired(.requests(1)), now: wake) == [.publish(.poweringOn)])
    #expect(
      machine.nextOperation(now: wake)
        == [.powerOn(slept: wake - .ms(2300), keptBackup: true)])
  }

  @Test mutating func aSleepTheReceiverRefusesFallsBackToTheStandbyWithTheLineHigh() {
    let backup = SleepChoice(state: .backup, steps: [MediaTekCommandSet.backup], needsWakePin: true)
    let quick = Self.mediatek.sleep(for: ReceiverMachine.quickContext)
    #expect(
      machine.beginSleep(choice: backup, quick: quick, family: .mediatek) == [
        .driveWakeLine(high: false)
      ])
    _ = machine.handle(.slept(.lineDriven(failure: nil)), now: .ms(0))
    #expect(
      machine.handle(.slept(.ran(succeeded: false, failure: Self.refused)), now: .ms(100))
        == [
          .count(.sleepsNotEntered), .count(.commandsFailed),
          .publish(.commandFailed(reason: Self.refused)), .driveWakeLine(high: true),
        ])
    // The line's own outcome does not stop the standby.
    #expect(
      machine.handle(.slept(.lineDriven(failure: Self.lineStuck)), now: .ms(200))
        == [.sendSteps([MediaTekCommandSet.standby])])
    // The standby is acknowledged: asleep, not on the wake line.
    #expect(machine.handle(.slept(.sent(failure: nil)), now: .ms(300)) == [])
    #expect(!machine.policy.asleepOnWakeLine)
  }

  @Test mutating func aWakeLineThatCannotBeReleasedGetsTheStandbyAtOnce() {
    let backup = SleepChoice(state: .backup, steps: [MediaTekCommandSet.backup], needsWakePin: true)
    let quick = Self.mediatek.sleep(for: ReceiverMachine.quickContext)
    _ = machine.beginSleep(choice: backup, quick: quick, family: .mediatek)
    #expect(
      machine.handle(.slept(.lineDriven(failure: Self.lineStuck)), now: .ms(0))
        == [
          .count(.sleepsNotEntered), .publish(.commandFailed(reason: Self.lineStuck)),
          .sendSteps([MediaTekCommandSet.standby]),
        ])
    let standbyRefused = FailureReason(.rejected, "$PMTK161,0 standby: refused")
    #expect(
      machine.handle(.slept(.sent(failure: standbyRefused)), now: .ms(100))
        == [.count(.standbysFailed), .tell(.standbyFailed(reason: standbyRefused))])
  }

  @Test mutating func aStandbyNothingConfirmsAfterAnIgnoredSleepIsSaid() {
    // A u-blox style pair: a sleep without an answer, then a standby without one.
    let stop = CommandStep(bytes: [0xB5, 0x62], summary: "GNSS stop")
    let pmreq = CommandStep(bytes: [0xB5, 0x62, 0x02], summary: "UBX-RXM-PMREQ")
    var noLine = ReceiverMachine(configuration: machine.configuration)
    let ignored = FailureReason(.rejected, "UBX-RXM-PMREQ: the receiver kept sending")
    #expect(
      noLine.beginSleep(
        choice: SleepChoice(state: .backup, steps: [pmreq]),
        quick: SleepChoice(state: .standby, steps: [stop]), family: .ublox) == [.runStep(pmreq)])
    #expect(
      noLine.handle(.slept(.ran(succeeded: false, failure: ignored)), now: .ms(0))
        == [
          .count(.sleepsNotEntered), .count(.commandsFailed),
          .publish(.commandFailed(reason: ignored)), .sendSteps([stop]),
        ])
    #expect(
      noLine.handle(.slept(.sent(failure: nil)), now: .ms(100))
        == [.count(.standbysFailed), .tell(.standbyFailed(reason: ignored))])
  }

  @Test mutating func theQuickStandbyIsSentAsItIsAndAnUnansweredOneIsTakenAsEntered() {
    let quick = Self.mediatek.sleep(for: ReceiverMachine.quickContext)
    #expect(
      machine.beginSleep(choice: quick, quick: quick, family: .mediatek) == [
        .sendSteps([MediaTekCommandSet.standby])
      ])
    let silent = FailureReason(.noAnswer, "$PMTK161,0 standby: no acknowledgement")
    #expect(machine.handle(.slept(.sent(failure: silent)), now: .ms(0)) == [])
    // Nothing more follows a sleep that is over.
    #expect(machine.handle(.slept(.sent(failure: nil)), now: .ms(1)) == [])
  }

  /// A CASIC receiver without a wake line: its sleep is the port closed, and the machine says
  /// the receiver keeps running, with what to do, before the (empty) steps; once.
  @Test mutating func aReceiverLeftRunningIsSaidOnce() {
    var noLine = ReceiverMachine(
      configuration: .init(power: machine.configuration.power, wakeLine: false))
    let casic = CASICCommandSet()
    let choice = casic.sleep(for: noLine.sleepContext(now: .ms(0)))
    let quick = casic.sleep(for: ReceiverMachine.quickContext)
    #expect(choice.state == .running)
    let said = ReceiverNotice.keepsRunning(family: .casic, cause: .noWakeLine)
    #expect(
      noLine.beginSleep(choice: choice, quick: quick, family: .casic)
        == [.tell(said), .sendSteps([])])
    #expect(noLine.handle(.slept(.sent(failure: nil)), now: .ms(0)) == [])
    #expect(said.description.contains("--wake-pin"))
    // The next power-off says nothing new.
    #expect(noLine.beginSleep(choice: choice, quick: quick, family: .casic) == [.sendSteps([])])
    // An unknown chipset: nothing is written, and the words say to name it.
    let generic = GenericNMEACommandSet()
    let unknown = ReceiverNotice.keepsRunning(family: .nmea, cause: .chipsetUnknown)
    #expect(
      noLine.beginSleep(
        choice: generic.sleep(for: noLine.sleepContext(now: .ms(0))),
        quick: generic.sleep(for: ReceiverMachine.quickContext), family: .nmea)
        == [.tell(unknown), .sendSteps([])])
    #expect(unknown.description.contains("--chipset"))
  }

  /// With the line declared but the quick-wake depth asked for, CASIC's pin standby is ruled
  /// out, and the words say so; with the line and the deepest sleep nothing is said.
  @Test func aWakeLineRuledOutByTheDepthIsSaid() {
    var quickOnly = ReceiverMachine(
      configuration: .init(
        power: machine.configuration.power, wakeLine: true, sleepDepth: .standby))
    let casic = CASICCommandSet()
    let quick = casic.sleep(for: ReceiverMachine.quickContext)
    #expect(
      quickOnly.beginSleep(
        choice: casic.sleep(for: quickOnly.sleepContext(now: .ms(0))), quick: quick,
        family: .casic)
        == [.tell(.keepsRunning(family: .casic, cause: .quickWakeChosen)), .sendSteps([])])
    var withLine = ReceiverMachine(configuration: machine.configuration)
    #expect(
      withLine.beginSleep(
        choice: casic.sleep(for: withLine.sleepContext(now: .ms(0))), quick: quick,
        family: .casic)
        == [.driveWakeLine(high: false)])
  }

  @Test mutating func aShutdownWakesAReceiverLeftOnTheWakeLine() {
    powerOnForSubscriber(at: .ms(0))
    _ = machine.handle(.detach, now: .ms(1000))
    #expect(machine.handle(.timerFired(.power(1)), now: .ms(6000)) == [])
    #expect(machine.nextOperation(now: .ms(6000)) == [.powerOff])
    let backup = SleepChoice(state: .backup, steps: [MediaTekCommandSet.backup], needsWakePin: true)
    _ = machine.beginSleep(
      choice: backup, quick: Self.mediatek.sleep(for: ReceiverMachine.quickContext),
      family: .mediatek)
    _ = machine.handle(.slept(.lineDriven(failure: nil)), now: .ms(6000))
    _ = machine.handle(.slept(.ran(succeeded: true, failure: nil)), now: .ms(6100))
    _ = machine.handle(.closed, now: .ms(6200))
    #expect(machine.handle(.shutdown, now: .ms(7000)) == [])
    #expect(machine.nextOperation(now: .ms(7000)) == [.putToStandby])
    #expect(machine.handle(.closed, now: .ms(7500)) == [.keepPosition])
    #expect(machine.isStopped)
  }

  @Test mutating func aReaderFailureOfAnEarlierConnectionIsNoNews() {
    powerOnForSubscriber(at: .ms(0))
    let lost = FailureReason(.other, "read: EIO")
    #expect(machine.handle(.portLost(generation: 0, reason: lost), now: .ms(100)) == [])
    #expect(machine.nextOperation(now: .ms(100)) == nil)
    #expect(
      machine.handle(.portLost(generation: 1, reason: lost), now: .ms(200))
        == [
          .count(.connectionsLost), .publish(.disconnected(reason: lost)),
          .armTimer(.power(1), deadline: .ms(700)),
        ])
    #expect(machine.nextOperation(now: .ms(200)) == [.discardConnection])
    // Closed after a loss: not commanded, so the next wake knows nothing of its sleep.
    #expect(machine.handle(.closed, now: .ms(300)) == [.keepPosition])
    #expect(machine.handle(.portLost(generation: 1, reason: lost), now: .ms(400)) == [])
    #expect(machine.handle(.timerFired(.power(1)), now: .ms(700)) == [])
    #expect(machine.nextOperation(now: .ms(700)) == [.powerOn(slept: nil, keptBackup: nil)])
  }

  @Test mutating func powerAndRequestTimersOfTheSameNumberAreApart() {
    powerOnForSubscriber(at: .ms(0))
    // The linger and a passive request's end timer are both number 1 in their own machines.
    #expect(
      machine.handle(.detach, now: .ms(1000)) == [.armTimer(.power(1), deadline: .ms(6000))]
    )
    let request = LocationRequest(passive: true, duration: .seconds(3))
    #expect(
      machine.handle(.request(7, request, cached: nil), now: .ms(1000))
        == [.armTimer(.requests(1), deadline: .ms(4000))])
    // The request's timer ends the request, not the linger.
    #expect(machine.handle(.timerFired(.requests(1)), now: .ms(4000)) == [.finish(7, best: nil)])
    #expect(machine.nextOperation(now: .ms(4000)) == nil)
    // The linger's ends the linger.
    #expect(machine.handle(.timerFired(.power(1)), now: .ms(6000)) == [])
    #expect(machine.nextOperation(now: .ms(6000)) == [.powerOff])
  }

  @Test mutating func anAidedWakeIsNotJudgedByTheTimeItWasTold() {
    let utc = UTCTimestamp(secondsSinceUnixEpoch: 1_796_644_800, nanoseconds: 0)
    var epoch = Fix()
    epoch.time = utc.time
    let timeOnly = FixUpdate(fix: epoch, age: .zero, isReplay: false, arrival: .ms(1000))
    for told in [false, true] {
      var fresh = ReceiverMachine(configuration: machine.configuration)
      _ = fresh.handle(.attach, now: .ms(0))
      _ = fresh.nextOperation(now: .ms(0))
      _ = fresh.handle(.portOpened, now: .ms(0))
      _ = fresh.handle(.poweredOn(toldTheTime: told), now: .ms(500))
      _ = fresh.handle(.fix(timeOnly), now: .ms(1000), utc: utc)
      #expect(fresh.wakes.keptBackup == (told ? nil : true))
    }
  }

  @Test mutating func aSubscriberGoneBeforeThePowerOnStartsOpensNothing() {
    // Both events come in one batch, before the controller asks for the next operation.
    #expect(machine.handle(.attach, now: .ms(0)) == [.publish(.poweringOn)])
    #expect(machine.handle(.detach, now: .ms(1)) == [])
    #expect(machine.nextOperation(now: .ms(2)) == [.publish(.poweredOff)])
    #expect(machine.nextOperation(now: .ms(2)) == nil)
    #expect(machine.policy.state == .off)
  }

  @Test mutating func aReceiverLeftAwakeIsPutToStandbyAndItsSleepTimedFromThere() {
    #expect(machine.handle(.leftAwake, now: .ms(0)) == [])
    #expect(machine.nextOperation(now: .ms(0)) == [.putToStandby])
    _ = machine.handle(.portOpened, now: .ms(10))
    #expect(machine.handle(.closed, now: .ms(100)) == [.keepPosition, .publish(.poweredOff)])
    #expect(machine.handle(.attach, now: .ms(1000)) == [.publish(.poweringOn)])
    #expect(
      machine.nextOperation(now: .ms(1000))
        == [.powerOn(slept: .milliseconds(900), keptBackup: nil)])
  }
}
