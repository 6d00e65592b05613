import NMEA
import Testing

@testable import SerialGPS

/// The reader's decisions, pure: an epoch held until the reader knows what waits behind it
/// (``LateEpochGate``), and how long the identifier is fed (``IdentificationBudget``).
@Suite struct LateEpochGateTests {
  /// An epoch the receiver dated `second` past noon.
  func epoch(_ second: UInt8) -> Epoch {
    var fix = Fix()
    fix.time = UTCTime(hour: 12, minute: 0, second: second)
    return Epoch(fix: fix)
  }

  func live(_ release: LateEpochGate.Release?) -> UInt8? {
    guard case .live(let epoch) = release else { return nil }
    return epoch.fix.time?.second
  }

  func late(_ release: LateEpochGate.Release?) -> (UInt8, Duration)? {
    guard case .late(let epoch, let age) = release, let second = epoch.fix.time?.second else {
      return nil
    }
    return (second, age)
  }

  @Test func aConnectionThatDoesNotQueueSendsEveryEpochLive() {
    var gate = LateEpochGate(judgesLateness: false)
    #expect(gate.read(count: 100) == nil)
    #expect(live(gate.completed(epoch(1), cycleLearned: true)) == 1)
    #expect(gate.nextReadWait == nil)
  }

  @Test func anEpochIsHeldUntilAReadThatReturnsNothingShowsItLive() {
    var gate = LateEpochGate(judgesLateness: true)
    _ = gate.read(count: 100)
    #expect(gate.completed(epoch(1), cycleLearned: true) == nil)
    #expect(gate.nextReadWait == .zero)
    #expect(live(gate.read(count: 0)) == 1)
    #expect(gate.nextReadWait == nil)
  }

  @Test func anEpochWithANewerBehindItInTheSameReadIsLateByTheReceiversTime() throws {
    var gate = LateEpochGate(judgesLateness: true)
    _ = gate.read(count: LateEpochGate.largeRead)
    #expect(gate.completed(epoch(1), cycleLearned: true) == nil)
    let superseded = try #require(late(gate.completed(epoch(3), cycleLearned: true)))
    #expect(superseded.0 == 1)
    #expect(superseded.1 == .seconds(2))
    // Behind a large read, the look waits the grace for the kernel's queue.
    #expect(gate.nextReadWait == LateEpochGate.catchUpGrace)
  }

  @Test func anEpochTheDecoderCompletedAtTheStartOfTheNextReadIsLive() {
    var gate = LateEpochGate(judgesLateness: true)
    _ = gate.read(count: 100)
    // The cycle is not learned: the decoder completes an epoch at the next one's first
    // sentence, so the first epoch of a read came in earlier reads, and a newer one in the
    // same read does not show it queued.
    #expect(gate.completed(epoch(1), cycleLearned: false) == nil)
    #expect(live(gate.completed(epoch(2), cycleLearned: false)) == 1)
    // The second was completed after another in its read: a newer one shows it queued.
    #expect(late(gate.completed(epoch(3), cycleLearned: false))?.0 == 2)
  }

  @Test func theBudgetNarrowsToTheDetailsOnceTheFamilyIsKnown() {
    var budget = IdentificationBudget()
    for _ in 0..<10 { budget.spend() }
    #expect(budget.remaining == IdentificationBudget.initial - 10)
    budget.familyKnown()
    #expect(budget.remaining == IdentificationBudget.details)
    for _ in 0..<IdentificationBudget.details { budget.spend() }
    #expect(!budget.isOpen)
  }
}
