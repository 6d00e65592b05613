import Chipsets

/// A power-off's sleep and its fallback, as a pure machine (``ReceiverMachine`` owns it): it
/// returns the steps to run one at a time (drive the wake line, run one exchange, send
/// steps) and takes how each ended.
///
/// A sleep deeper than the quick-wake standby counts only when the receiver confirms it:
/// acknowledged (`$PMTK001,225,3`), or silent after a request that has no answer
/// (`UBX-RXM-PMREQ`). A sleep that only the wake line ends is entered with the line released.
/// Refused, unanswered, ignored while the receiver kept talking, or with the line failing,
/// the receiver is taken as awake: it is counted (``ReceiverStatistics/sleepsNotEntered``)
/// and gets the quick-wake standby instead, with the line high again so that it cannot enter
/// backup by itself later. A standby that fails too (refused, or ignored while the receiver
/// kept talking: not merely unanswered by a receiver that fell silent), or one that nothing
/// confirms (a u-blox GNSS stop) after a sleep the receiver ignored while it kept talking,
/// may leave it powered: that is said whoever listens
/// (``ReceiverNotice/standbyFailed(reason:)``) and counted
/// (``ReceiverStatistics/standbysFailed``).
struct SleepSequence {
  /// How the last step handed out ended.
  enum Outcome: Equatable {
    /// ``ReceiverMachine/Effect/sendSteps(_:)``: the first failure of a step, if any.
    case sent(failure: FailureReason?)
    /// ``ReceiverMachine/Effect/driveWakeLine(high:)``: why the line could not be driven.
    case lineDriven(failure: FailureReason?)
    /// ``ReceiverMachine/Effect/runStep(_:)``: whether the receiver confirmed the step, and
    /// its failure (`nil` with `succeeded` false: abandoned, or the write failed).
    case ran(succeeded: Bool, failure: FailureReason?)
  }

  private enum Stage: Equatable {
    /// The chosen steps sent as they are (the quick standby, or a sleep not worth a check).
    case plain
    case releasingLine
    case deep
    /// After a deep sleep not entered (`failure`): the line back high.
    case raisingLine(failure: FailureReason?)
    /// The quick standby instead; `failure`: what a standby that nothing confirms leaves
    /// standing.
    case fallback(failure: FailureReason?)
    case done
  }

  private let choice: SleepChoice
  private let quick: SleepChoice
  private let wakeLine: Bool
  private var stage: Stage
  /// Whether the receiver now sleeps where only the wake line wakes it.
  private(set) var asleepOnWakeLine = false

  /// `choice`: the sleep the command set chose; `quick`: its quick-wake standby; `wakeLine`:
  /// whether a wake line is declared. Returns the sequence and its first steps.
  static func start(choice: SleepChoice, quick: SleepChoice, wakeLine: Bool)
    -> (SleepSequence, [ReceiverMachine.Effect])
  {
    let line = choice.needsWakePin && wakeLine
    let checked =
      choice.state != quick.state && choice.steps.count == 1 && (line || !choice.needsWakePin)
    let sequence = SleepSequence(
      choice: choice, quick: quick, wakeLine: line,
      stage: checked ? (line ? .releasingLine : .deep) : .plain)
    if !checked { return (sequence, [.sendSteps(choice.steps)]) }
    return (sequence, [line ? .driveWakeLine(high: false) : .runStep(choice.steps[0])])
  }

  var isDone: Bool { stage == .done }

  /// Takes how the step handed out last ended; returns what follows (empty once done).
  mutating func handle(_ outcome: Outcome) -> [ReceiverMachine.Effect] {
    switch (stage, outcome) {
    case (.plain, .sent(let failure)):
      return finish(failure)
    case (.releasingLine, .lineDriven(let failure?)):
      stage = .fallback(failure: nil)
      return [
        .count(.sleepsNotEntered), .publish(.commandFailed(reason: failure)),
        .sendSteps(quick.steps),
      ]
    case (.releasingLine, .lineDriven(nil)):
      stage = .deep
      return [.runStep(choice.steps[0])]
    case (.deep, .ran(true, _)):
      asleepOnWakeLine = wakeLine
      return finish(nil)
    case (.deep, .ran(false, let failure)):
      var effects: [ReceiverMachine.Effect] = [.count(.sleepsNotEntered)]
      if let failure {
        effects += [.count(.commandsFailed), .publish(.commandFailed(reason: failure))]
      }
      // A standby with no answer (a u-blox GNSS stop) does not show that a receiver that
      // just ignored a sleep while it kept talking took it.
      let unconfirmed = quick.steps.allSatisfy { $0.acknowledgement == .none }
      let standing = unconfirmed ? failure : nil
      if wakeLine {
        stage = .raisingLine(failure: standing)
        return effects + [.driveWakeLine(high: true)]
      }
      stage = .fallback(failure: standing)
      return effects + [.sendSteps(quick.steps)]
    case (.raisingLine(let standing), .lineDriven):
      // A line that will not go high leaves the standby all the same.
      stage = .fallback(failure: standing)
      return [.sendSteps(quick.steps)]
    case (.fallback(let standing), .sent(let failure)):
      return finish(failure ?? standing)
    case (.done, _), (.plain, _), (.releasingLine, _), (.deep, _), (.raisingLine, _),
      (.fallback, _):
      return []  // not the outcome of the step handed out: nothing follows
    }
  }

  /// The sleep is over; `failure`: why the receiver may not be asleep.
  private mutating func finish(_ failure: FailureReason?) -> [ReceiverMachine.Effect] {
    stage = .done
    // A standby merely unanswered by a receiver that fell silent is taken as entered.
    guard let failure, failure.kind != .noAnswer else { return [] }
    return [.count(.standbysFailed), .tell(.standbyFailed(reason: failure))]
  }
}
