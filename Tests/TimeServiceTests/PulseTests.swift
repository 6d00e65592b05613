import Chipsets
import Testing
import TimeService

@Suite("Labelling pulses and measuring the receiver's delay")
struct PulseTests {
  /// A trusted sample of second `second` (after `december2`) whose first byte arrived
  /// `lateMs` after the true second; the system clock is `errorMs` behind true time.
  func sample(_ second: Int64, late lateMs: Int64 = 120, clockError errorMs: Int64 = 0)
    -> TimeSample
  {
    TimeSample(
      receiverTime: posix(december2 + second),
      arrival: posix(december2 + second, ms: lateMs - errorMs))
  }

  /// Pulse `sequence` at the true start of `second`, seen by a system clock `errorMs` behind.
  func pulse(_ second: Int64, clockError errorMs: Int64 = 0, sequence: UInt64 = 1) -> Pulse {
    Pulse(time: posix(december2 + second, ms: -errorMs), sequence: sequence)
  }

  func labelled(_ second: Int64, clockError errorMs: Int64 = 0, sequence: UInt64 = 1)
    -> PulseDecision
  {
    .labelled(
      PPSSample(
        second: posix(december2 + second), pulse: posix(december2 + second, ms: -errorMs),
        sequence: sequence))
  }

  @Test func pulsesFollowedByTheirSentences() {
    var labeller = PulseLabeller(order: .sentencesFollowPulse, offset: .milliseconds(120))
    // No trusted time yet.
    #expect(labeller.pulse(pulse(0)) == .dropped(.noTrustedTime))
    #expect(labeller.serial(sample(0)) == nil)
    // Pulse 1 comes before epoch 1: it is labelled from epoch 0, one second on.
    #expect(labeller.pulse(pulse(1, sequence: 2)) == labelled(1, sequence: 2))
    // Epoch 1 arrives 120 ms after pulse 1: the receiver's delay, measured.
    #expect(labeller.serial(sample(1)) == .milliseconds(120))
    // The PPS thread was slow: pulse 2 is handed over after epoch 2 already arrived.
    #expect(labeller.serial(sample(2)) == nil)
    #expect(labeller.pulse(pulse(2, sequence: 3)) == labelled(2, sequence: 3))
    #expect(labeller.delayOfLastLabel == .milliseconds(120))
    // An edge bouncing 2 ms after pulse 2 names second 2 again.
    let bounce = Pulse(time: posix(december2 + 2, ms: 2), sequence: 4)
    #expect(labeller.pulse(bounce) == .dropped(.duplicate))
    // A glitch mid-second would be named second 3 by the rule, 700 ms from what the serial
    // time says.
    let glitch = Pulse(time: posix(december2 + 2, ms: 300), sequence: 5)
    #expect(labeller.pulse(glitch) == .dropped(.serialDisagrees))
    #expect(labeller.labelled == 2)
    #expect(labeller.drops == [.noTrustedTime: 1, .duplicate: 1, .serialDisagrees: 1])
  }

  @Test func theLabelFollowsTheTimestampsNotTheSystemClocksError() {
    // The system clock is 40 s behind: labels come from the receiver's seconds, the pulses
    // keep their system times, and the offset is what chrony must correct.
    var labeller = PulseLabeller(order: .sentencesFollowPulse, offset: .milliseconds(300))
    _ = labeller.serial(sample(10, late: 300, clockError: 40_000))
    let decision = labeller.pulse(pulse(11, clockError: 40_000))
    #expect(decision == labelled(11, clockError: 40_000))
    if case .labelled(let sample) = decision { #expect(sample.offset == .seconds(40)) }
  }

  @Test func staleOrLostSerialTimeDropsPulses() {
    var labeller = PulseLabeller(order: .sentencesFollowPulse, offset: .milliseconds(120))
    _ = labeller.serial(sample(0))
    // Epoch 1 was lost: pulse 2 is more than a second after epoch 0's arrival.
    #expect(labeller.pulse(pulse(2)) == .dropped(.staleSerialTime))
    _ = labeller.serial(sample(2))
    #expect(labeller.pulse(pulse(3, sequence: 2)) == labelled(3, sequence: 2))
    // The fix is lost: no label until a trusted sample comes again.
    labeller.serialTrustLost()
    #expect(labeller.pulse(pulse(4, sequence: 3)) == .dropped(.noTrustedTime))
    _ = labeller.serial(sample(4))
    #expect(labeller.pulse(pulse(5, sequence: 4)) == labelled(5, sequence: 4))
    // Epochs stamped between seconds (5 Hz) name no pulse; an older sample changes nothing.
    #expect(labeller.serial(sample(5)) == .milliseconds(120))
    #expect(
      labeller.serial(
        TimeSample(
          receiverTime: posix(december2 + 5, ms: 200), arrival: posix(december2 + 5, ms: 320)))
        == nil)
    #expect(labeller.serial(sample(3)) == nil)
    #expect(labeller.pulse(pulse(6, sequence: 5)) == labelled(6, sequence: 5))
  }

  /// The label rests on the receiver's delay being under a second; the serial time, with
  /// the configured offset, must agree within half a second, or the pulse is dropped.
  @Test(arguments: [
    // (the receiver's delay, the configured offset, labelled?)
    (120, 120, true),
    (120, 0, true),  // no offset set: 120 ms apart, fine
    (450, 0, true),
    (600, 0, false),  // a slow receiver needs its offset set
    (600, 580, true),
    (950, 900, true),
    (100, 700, false),  // an offset far too large
  ])
  func serialTimeMustAgree(delayMs: Int64, offsetMs: Int64, accepted: Bool) {
    var labeller = PulseLabeller(order: .sentencesFollowPulse, offset: .milliseconds(offsetMs))
    _ = labeller.serial(sample(0, late: delayMs))
    let decision = labeller.pulse(pulse(1))
    #expect(decision == (accepted ? labelled(1) : .dropped(.serialDisagrees)))
  }

  @Test func pulsesPrecededByTheirSentences() {
    // The epoch stamped S arrives 300 ms before pulse S.
    var labeller = PulseLabeller(order: .sentencesPrecedePulse, offset: .milliseconds(-300))
    _ = labeller.serial(sample(1, late: -300))
    #expect(labeller.pulse(pulse(1)) == labelled(1))
    #expect(labeller.delayOfLastLabel == .milliseconds(-300))
    // Pulse 2 handed over after epoch 2 arrived; pulse 1 again, late, is a duplicate.
    _ = labeller.serial(sample(2, late: -300))
    #expect(labeller.pulse(pulse(1, sequence: 2)) == .dropped(.duplicate))
    #expect(labeller.pulse(pulse(2, sequence: 3)) == labelled(2, sequence: 3))
    // The follow rule would name the wrong second for this receiver, and the serial time
    // says so.
    var wrong = PulseLabeller(order: .sentencesFollowPulse, offset: .milliseconds(-300))
    _ = wrong.serial(sample(1, late: -300))
    #expect(wrong.pulse(pulse(1)) == .dropped(.serialDisagrees))
  }

  @Test func everyFamilyWeSpeakSendsItsSentencesAfterThePulse() {
    for family in ChipsetFamily.allCases {
      #expect(PulseOrder.of(family) == .sentencesFollowPulse)
    }
  }

  @Test func delayFigures() {
    var delay = ReceiverDelay()
    #expect(delay.statistics == DelayStatistics())
    for milliseconds: Int64 in [130, 110, 120, 150, 90] { delay.add(.milliseconds(milliseconds)) }
    let figures = delay.statistics
    #expect(figures.count == 5)
    #expect(figures.last == .milliseconds(90))
    #expect(figures.minimum == .milliseconds(90))
    #expect(figures.maximum == .milliseconds(150))
    #expect(figures.mean == .milliseconds(120))
    #expect(figures.median == .milliseconds(120))
    // Sample standard deviation of 130, 110, 120, 150, 90 ms: √250 ms² = 22.360680 ms.
    #expect(figures.standardDeviation == .nanoseconds(22_360_680))
    // The median covers the latest 64 only.
    for _ in 0..<64 { delay.add(.milliseconds(200)) }
    #expect(delay.statistics.median == .milliseconds(200))
    #expect(delay.statistics.minimum == .milliseconds(90))
    #expect(delay.statistics.count == 69)
  }
}
