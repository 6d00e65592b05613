import Testing

@testable import SerialGPS

/// The policy's instants written as the time since the clock's origin (`now: .seconds(10)`),
/// so that each test reads as a time line.
extension DriverInstant {
  fileprivate static var zero: DriverInstant { .origin }
  fileprivate static func seconds(_ value: Int) -> DriverInstant { .origin + .seconds(value) }
  fileprivate static func milliseconds(_ value: Int) -> DriverInstant {
    .origin + .milliseconds(value)
  }
}

@Suite struct PowerPolicyTests {
  var policy = PowerPolicy(
    configuration: .init(
      linger: .seconds(5), backoff: .init(initial: .milliseconds(500), maximum: .seconds(4))))

  @Test mutating func firstAttachPowersOnAndLaterOnesDoNothing() {
    #expect(policy.handle(.attach, now: .zero) == [.status(.poweringOn), .powerOn])
    #expect(policy.handle(.attach, now: .zero) == [])
    #expect(policy.handle(.poweredOn, now: .zero) == [])
    #expect(policy.state == .on)
    #expect(policy.handle(.attach, now: .zero) == [])
    #expect(policy.subscribers == 3)
  }

  @Test mutating func lastDetachLingersThenPowersOff() {
    _ = policy.handle(.attach, now: .zero)
    _ = policy.handle(.poweredOn, now: .zero)
    let actions = policy.handle(.detach, now: .seconds(10))
    guard case .armTimer(let timer, let deadline) = actions.first, actions.count == 1 else {
      Issue.record("expected one timer, got \(actions)")
      return
    }
    #expect(deadline == .seconds(15))
    #expect(policy.handle(.timerFired(timer), now: .seconds(15)) == [.powerOff])
    #expect(policy.handle(.poweredOff, now: .seconds(15)) == [.status(.poweredOff)])
    #expect(policy.state == .off)
  }

  @Test mutating func subscriberDuringLingerCancelsPowerOffAndRestartsNothing() {
    _ = policy.handle(.attach, now: .zero)
    _ = policy.handle(.poweredOn, now: .zero)
    guard case .armTimer(let timer, _) = policy.handle(.detach, now: .zero).first else {
      Issue.record("no linger timer")
      return
    }
    #expect(policy.handle(.attach, now: .seconds(1)) == [.cancelTimer(timer)])
    #expect(policy.state == .on)
    // The cancelled timer may still fire (it raced the cancel): it must change nothing.
    #expect(policy.handle(.timerFired(timer), now: .seconds(5)) == [])
    #expect(policy.state == .on)
    // A new linger gets a new timer.
    guard case .armTimer(let second, let deadline) = policy.handle(.detach, now: .seconds(6)).first
    else {
      Issue.record("no second linger timer")
      return
    }
    #expect(second != timer)
    #expect(deadline == .seconds(11))
  }

  @Test func zeroLingerPowersOffAtOnce() {
    var policy = PowerPolicy(
      configuration: .init(
        linger: .zero, backoff: .init(initial: .seconds(1), maximum: .seconds(1))))
    _ = policy.handle(.attach, now: .zero)
    _ = policy.handle(.poweredOn, now: .zero)
    #expect(policy.handle(.detach, now: .zero) == [.powerOff])
  }

  @Test mutating func everyoneLeavingDuringPowerOnStillPowersOff() {
    _ = policy.handle(.attach, now: .zero)
    // The detach arrives while the port opens; the controller handles it afterwards.
    _ = policy.handle(.detach, now: .zero)
    let actions = policy.handle(.poweredOn, now: .zero)
    guard case .armTimer = actions.first else {
      Issue.record("expected the linger to start, got \(actions)")
      return
    }
  }

  @Test mutating func attachDuringPowerOffPowersOnAgainAfterIt() {
    _ = policy.handle(.attach, now: .zero)
    _ = policy.handle(.poweredOn, now: .zero)
    guard case .armTimer(let timer, _) = policy.handle(.detach, now: .zero).first else { return }
    #expect(policy.handle(.timerFired(timer), now: .seconds(5)) == [.powerOff])
    #expect(policy.handle(.attach, now: .seconds(5)) == [])  // power-off in progress
    #expect(
      policy.handle(.poweredOff, now: .seconds(5)) == [
        .status(.poweredOff), .status(.poweringOn), .powerOn,
      ])
  }

  @Test mutating func lostConnectionRetriesWithGrowingBackoffWhileSubscribed() {
    _ = policy.handle(.attach, now: .zero)
    _ = policy.handle(.poweredOn, now: .zero)
    let lost = policy.handle(.connectionLost(reason: "unplugged"), now: .seconds(1))
    #expect(lost.first == .discardConnection)
    #expect(lost.contains(.status(.disconnected(reason: "unplugged"))))
    guard case .armTimer(let first, let firstDeadline) = lost.last else {
      Issue.record("no reconnect timer in \(lost)")
      return
    }
    #expect(firstDeadline == .seconds(1) + .milliseconds(500))
    #expect(policy.handle(.timerFired(first), now: firstDeadline) == [.powerOn])
    // Still missing: the same reason is not repeated, the delay doubles.
    let again = policy.handle(.powerOnFailed(reason: "unplugged"), now: firstDeadline)
    guard case .armTimer(let second, let secondDeadline) = again.last, again.count == 1 else {
      Issue.record("expected only a timer, got \(again)")
      return
    }
    #expect(secondDeadline == firstDeadline + .seconds(1))
    #expect(policy.handle(.timerFired(second), now: secondDeadline) == [.powerOn])
    #expect(policy.handle(.poweredOn, now: secondDeadline) == [.status(.reconnected)])
  }

  @Test mutating func lastSubscriberLeavingWhileReconnectingStopsTrying() {
    _ = policy.handle(.attach, now: .zero)
    _ = policy.handle(.poweredOn, now: .zero)
    let lost = policy.handle(.connectionLost(reason: "gone"), now: .zero)
    guard case .armTimer(let timer, _) = lost.last else { return }
    #expect(policy.handle(.detach, now: .zero) == [.cancelTimer(timer), .status(.poweredOff)])
    #expect(policy.state == .off)
  }

  @Test mutating func hotplugRetriesAtOnce() {
    _ = policy.handle(.attach, now: .zero)
    let failed = policy.handle(.powerOnFailed(reason: "missing"), now: .zero)
    guard case .armTimer(let timer, _) = failed.last else { return }
    #expect(policy.handle(.deviceAppeared, now: .zero) == [.cancelTimer(timer), .powerOn])
  }

  @Test mutating func holdKeepsPowerWithoutSubscribersThenLingers() {
    let actions = policy.handle(.hold(until: .seconds(30)), now: .zero)
    guard case .armTimer(let hold, .seconds(30)) = actions.first else {
      Issue.record("no hold timer in \(actions)")
      return
    }
    #expect(Array(actions.dropFirst()) == [.status(.poweringOn), .powerOn])
    _ = policy.handle(.poweredOn, now: .zero)
    _ = policy.handle(.attach, now: .seconds(1))
    #expect(policy.handle(.detach, now: .seconds(2)) == [])  // the hold still stands
    let expired = policy.handle(.timerFired(hold), now: .seconds(30))
    guard case .armTimer(_, let deadline) = expired.first else {
      Issue.record("expected the linger after the hold, got \(expired)")
      return
    }
    #expect(deadline == .seconds(35))
  }

  @Test mutating func holdsExtendNeverShorten() {
    _ = policy.handle(.hold(until: .seconds(30)), now: .zero)
    let actions = policy.handle(.hold(until: .seconds(10)), now: .zero)
    #expect(actions.contains { if case .armTimer(_, .seconds(30)) = $0 { true } else { false } })
  }

  @Test mutating func shutdownPowersOffAndStops() {
    _ = policy.handle(.attach, now: .zero)
    _ = policy.handle(.poweredOn, now: .zero)
    #expect(policy.handle(.shutdown, now: .zero) == [.powerOff, .status(.poweredOff)])
    #expect(policy.handle(.attach, now: .zero) == [])
  }

  @Test mutating func unbalancedDetachIsIgnored() {
    policy.assertsOnUnexpectedEvents = false
    #expect(policy.handle(.detach, now: .zero) == [])
    #expect(policy.subscribers == 0)
    #expect(policy.unexpectedEvents == 1)
  }

  /// What no state expects is ignored and counted, never acted upon: a debug build asserts
  /// (off here, so that the counting a release build does is what runs).
  @Test mutating func unexpectedEventsAreCountedAndChangeNothing() {
    policy.assertsOnUnexpectedEvents = false
    // Outcomes of operations that were never started.
    #expect(policy.handle(.poweredOn, now: .zero) == [])
    #expect(policy.handle(.powerOnFailed(reason: "no such device"), now: .zero) == [])
    #expect(policy.handle(.poweredOff, now: .zero) == [])
    #expect(policy.handle(.connectionLost(reason: "hang-up"), now: .zero) == [])
    #expect(policy.state == .off)
    #expect(policy.unexpectedEvents == 4)
    // A power-off confirmed while the receiver is waking.
    #expect(policy.handle(.attach, now: .zero) == [.status(.poweringOn), .powerOn])
    #expect(policy.confirm(.powerOff, now: .zero) == [])
    #expect(policy.state == .poweringOn(reconnectingAfter: nil))
    #expect(policy.unexpectedEvents == 5)
    // What is expected is not counted: a timer cancelled after it fired, news of a device
    // while nobody waits for one, a hold already over.
    #expect(policy.handle(.timerFired(99), now: .zero) == [])
    #expect(policy.handle(.deviceAppeared, now: .zero) == [])
    #expect(policy.handle(.hold(until: .zero), now: .seconds(1)) == [])
    #expect(policy.unexpectedEvents == 5)
  }

  /// A connection lost while it is being closed anyway (a power-off or a discard is under
  /// way) is the expected race between its reader and the close.
  @Test mutating func aConnectionLostWhileClosingIsExpected() {
    policy = PowerPolicy(configuration: .init(linger: .zero, backoff: policy.configuration.backoff))
    _ = policy.handle(.attach, now: .zero)
    _ = policy.handle(.poweredOn, now: .zero)
    #expect(policy.handle(.detach, now: .zero) == [.powerOff])
    #expect(policy.handle(.connectionLost(reason: "hang-up"), now: .zero) == [])
    #expect(policy.unexpectedEvents == 0)
  }

  /// The failures ride in the states: the backoff grows per failed attempt, subscribers hear
  /// a reason once, and a success clears them (`reconnected` only after a failure).
  @Test mutating func failuresLiveInTheReconnectingStates() {
    _ = policy.handle(.attach, now: .zero)
    #expect(
      policy.handle(.powerOnFailed(reason: "gone"), now: .zero) == [
        .status(.disconnected(reason: "gone")), .armTimer(1, deadline: .milliseconds(500)),
      ])
    #expect(policy.state == .waitingToReconnect(.init(attempts: 1, reason: "gone"), timer: 1))
    #expect(policy.handle(.timerFired(1), now: .seconds(1)) == [.powerOn])
    #expect(policy.state == .poweringOn(reconnectingAfter: .init(attempts: 1, reason: "gone")))
    // Fails alike: quiet, and twice the wait.
    #expect(
      policy.handle(.powerOnFailed(reason: "gone"), now: .seconds(1)) == [
        .armTimer(2, deadline: .seconds(2))
      ])
    #expect(policy.handle(.deviceAppeared, now: .seconds(1)) == [.cancelTimer(2), .powerOn])
    #expect(policy.handle(.poweredOn, now: .seconds(1)) == [.status(.reconnected)])
    #expect(policy.state == .on)
    // Lost later: counted afresh from one, and told again.
    #expect(
      policy.handle(.connectionLost(reason: "gone"), now: .seconds(9)) == [
        .discardConnection, .status(.disconnected(reason: "gone")),
        .armTimer(3, deadline: .milliseconds(9500)),
      ])
  }
}

/// Deciding in order, doing what is wanted now: ``PowerPolicy/confirm(_:now:)`` re-checks a
/// decided power-on or power-off against the demand when the controller is about to start it.
@Suite struct PowerPolicyConvergenceTests {
  var policy = PowerPolicy(
    configuration: .init(
      linger: .zero, backoff: .init(initial: .milliseconds(500), maximum: .seconds(4))))

  @Test mutating func aPowerOnStillWantedRuns() {
    #expect(policy.handle(.attach, now: .zero) == [.status(.poweringOn), .powerOn])
    #expect(policy.confirm(.powerOn, now: .zero) == [.powerOn])
    #expect(policy.state == .poweringOn(reconnectingAfter: nil))
  }

  @Test mutating func aPowerOnWhoseSubscribersLeftIsNotStarted() {
    #expect(policy.handle(.attach, now: .zero) == [.status(.poweringOn), .powerOn])
    // A thousand come and go before the controller starts the power-on.
    for _ in 0..<1000 {
      #expect(policy.handle(.detach, now: .zero) == [])
      #expect(policy.handle(.attach, now: .zero) == [])
    }
    #expect(policy.handle(.detach, now: .zero) == [])
    #expect(policy.confirm(.powerOn, now: .zero) == [.status(.poweredOff)])
    #expect(policy.state == .off)
    // The next subscriber powers on afresh.
    #expect(policy.handle(.attach, now: .zero) == [.status(.poweringOn), .powerOn])
  }

  @Test mutating func aPowerOffMadeMootByANewSubscriberIsNotStarted() {
    _ = policy.handle(.attach, now: .zero)
    _ = policy.handle(.poweredOn, now: .zero)
    #expect(policy.handle(.detach, now: .zero) == [.powerOff])
    #expect(policy.handle(.attach, now: .zero) == [])
    #expect(policy.confirm(.powerOff, now: .zero) == [])
    #expect(policy.state == .on)
    // It powers off when that one leaves in turn.
    #expect(policy.handle(.detach, now: .zero) == [.powerOff])
    #expect(policy.confirm(.powerOff, now: .zero) == [.powerOff])
    #expect(policy.handle(.poweredOff, now: .zero) == [.status(.poweredOff)])
  }

  @Test mutating func aBurstWhileWakingEndsInOneCycle() {
    #expect(policy.handle(.attach, now: .zero) == [.status(.poweringOn), .powerOn])
    #expect(policy.confirm(.powerOn, now: .zero) == [.powerOn])
    // While the wake-up waits for its acknowledgement, 500 subscribers come and go; the first
    // one leaves too.
    for _ in 0..<500 {
      _ = policy.handle(.attach, now: .zero)
      _ = policy.handle(.detach, now: .zero)
    }
    #expect(policy.handle(.detach, now: .zero) == [])
    #expect(policy.handle(.poweredOn, now: .zero) == [.powerOff])
    #expect(policy.confirm(.powerOff, now: .zero) == [.powerOff])
    #expect(policy.handle(.poweredOff, now: .zero) == [.status(.poweredOff)])
    #expect(policy.state == .off)
  }

  @Test mutating func aShutdownDropsAPendingPowerOn() {
    _ = policy.handle(.attach, now: .zero)
    #expect(policy.handle(.shutdown, now: .zero) == [])
    #expect(policy.confirm(.powerOn, now: .zero) == [])
    #expect(policy.state == .stopped)
  }

  @Test mutating func aShutdownKeepsAPendingPowerOffEvenWithSubscribers() {
    _ = policy.handle(.attach, now: .zero)
    _ = policy.handle(.poweredOn, now: .zero)
    #expect(policy.handle(.detach, now: .zero) == [.powerOff])
    _ = policy.handle(.attach, now: .zero)
    #expect(policy.handle(.shutdown, now: .zero) == [])
    #expect(policy.confirm(.powerOff, now: .zero) == [.powerOff])
    #expect(policy.handle(.poweredOff, now: .zero) == [])
  }

  @Test mutating func aReconnectNobodyWantsAnyMoreIsNotStarted() {
    _ = policy.handle(.attach, now: .zero)
    _ = policy.handle(.poweredOn, now: .zero)
    let lost = policy.handle(.connectionLost(reason: "gone"), now: .zero)
    guard case .armTimer(let timer, _) = lost.last else {
      Issue.record("no reconnect timer in \(lost)")
      return
    }
    #expect(policy.confirm(.discardConnection, now: .zero) == [.discardConnection])
    #expect(policy.handle(.timerFired(timer), now: .seconds(1)) == [.powerOn])
    _ = policy.handle(.detach, now: .seconds(1))
    #expect(policy.confirm(.powerOn, now: .seconds(1)) == [.status(.poweredOff)])
    #expect(policy.state == .off)
  }

  @Test func actionsThatTakeThePortAreTheOperations() {
    #expect(
      [
        PowerPolicy.Action.powerOn, .powerOff, .discardConnection, .armTimer(1, deadline: .zero),
        .cancelTimer(1), .status(.poweredOff),
      ].map(\.isPowerOperation)
        == [true, true, true, false, false, false])
  }
}

/// A receiver left awake by a process that died (issue 14 item 2).
@Suite struct PowerPolicyLeftAwakeTests {
  var policy = PowerPolicy(
    configuration: .init(
      linger: .zero, backoff: .init(initial: .milliseconds(500), maximum: .seconds(4))))

  @Test mutating func aReceiverLeftAwakeWithNobodyWantingItIsPutToStandby() {
    #expect(policy.handle(.leftAwake, now: .zero) == [.putToStandby])
    #expect(policy.confirm(.putToStandby, now: .zero) == [.putToStandby])
    #expect(policy.handle(.poweredOff, now: .zero) == [.status(.poweredOff)])
    #expect(policy.state == .off)
  }

  @Test mutating func aSubscriberArrivingMeanwhileWins() {
    #expect(policy.handle(.leftAwake, now: .zero) == [.putToStandby])
    #expect(policy.handle(.attach, now: .zero) == [])
    #expect(policy.confirm(.putToStandby, now: .zero) == [.status(.poweringOn), .powerOn])
    #expect(policy.state == .poweringOn(reconnectingAfter: nil))
  }

  @Test mutating func aSubscriberDuringTheStandbyWakesItAfterwards() {
    _ = policy.handle(.leftAwake, now: .zero)
    #expect(policy.confirm(.putToStandby, now: .zero) == [.putToStandby])
    #expect(policy.handle(.attach, now: .zero) == [])
    #expect(
      policy.handle(.poweredOff, now: .zero) == [
        .status(.poweredOff), .status(.poweringOn), .powerOn,
      ])
  }

  @Test mutating func aReceiverInUseIsLeftAlone() {
    _ = policy.handle(.attach, now: .zero)
    #expect(policy.handle(.leftAwake, now: .zero) == [])
    _ = policy.handle(.poweredOn, now: .zero)
    #expect(policy.handle(.leftAwake, now: .zero) == [])
    #expect(policy.state == .on)
  }

  @Test mutating func aShutdownStillPutsItToStandby() {
    _ = policy.handle(.leftAwake, now: .zero)
    #expect(policy.handle(.shutdown, now: .zero) == [])
    #expect(policy.confirm(.putToStandby, now: .zero) == [.putToStandby])
  }
}
