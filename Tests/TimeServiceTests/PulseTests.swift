import Chipsets
import NMEA
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

  /// An announcement, `error` ns, arrived `ms` into the second before pulse `second`.
  func announcement(
    _ second: Int64, ns error: Int64, at ms: Int64 = 600, names named: Bool = true
  ) -> PulseQuantisation {
    PulseQuantisation(
      error: .nanoseconds(error), announced: posix(december2 + second - 1, ms: ms),
      second: named ? posix(december2 + second) : nil)
  }

  @Test func anAnnouncedQuantisationErrorCorrectsItsPulseOnly() {
    var labeller = PulseLabeller(order: .sentencesFollowPulse, offset: .milliseconds(120))
    _ = labeller.serial(sample(0))
    // TIM-TP for pulse 1 arrives 600 ms into second 0: pulse 1's edge is 12 ns early.
    labeller.quantisation(announcement(1, ns: 12))
    guard case .labelled(let first) = labeller.pulse(pulse(1, sequence: 2)) else {
      Issue.record("pulse 1 not labelled")
      return
    }
    #expect(first.quantisationError == .nanoseconds(12))
    #expect(first.pulse == posix(december2 + 1))
    #expect(first.edge == PosixTime(seconds: december2 + 1, nanoseconds: 12))
    #expect(first.offset == .nanoseconds(-12))
    // Spent: pulse 2 has no announcement of its own.
    _ = labeller.serial(sample(1))
    #expect(labeller.pulse(pulse(2, sequence: 3)) == labelled(2, sequence: 3))
    #expect(labeller.quantised == 1)
  }

  @Test func anAnnouncementIsMatchedByTimestampsAndSecond() {
    var labeller = PulseLabeller(order: .sentencesFollowPulse, offset: .milliseconds(120))
    _ = labeller.serial(sample(0))
    // The PPS thread hands pulse 1 over late, after the reader took the announcement of pulse
    // 2: pulse 1 is older than the announcement and neither uses nor spends it.
    labeller.quantisation(announcement(2, ns: -7, at: 300))
    #expect(labeller.pulse(pulse(1, sequence: 2)) == labelled(1, sequence: 2))
    _ = labeller.serial(sample(1))
    guard case .labelled(let second) = labeller.pulse(pulse(2, sequence: 3)) else {
      Issue.record("pulse 2 not labelled")
      return
    }
    #expect(second.edge == PosixTime(seconds: december2 + 2, nanoseconds: -7))
    // An announcement that names another second is not applied (and is spent).
    _ = labeller.serial(sample(2))
    labeller.quantisation(announcement(4, ns: 5))
    #expect(labeller.pulse(pulse(3, sequence: 4)) == labelled(3, sequence: 4))
    // One without a second (a GNSS time base) more than a second old is not applied either.
    _ = labeller.serial(sample(3))
    labeller.quantisation(announcement(4, ns: 5, at: -200, names: false))
    #expect(labeller.pulse(pulse(4, sequence: 5)) == labelled(4, sequence: 5))
    // Within the second, without a second named: applied.
    _ = labeller.serial(sample(4))
    labeller.quantisation(announcement(5, ns: 5, names: false))
    #expect(labeller.pulse(pulse(5, sequence: 6)).quantisationError == .nanoseconds(5))
    #expect(labeller.quantised == 2)
  }

  @Test func timTPsQuantisationAndSecond() throws {
    // gpsd's u-blox-m8t-time.log: week 2146, towMS 237870000, qErr −4331 ps, flags 0x0B (UTC
    // time base, UTC available).
    let payload: [UInt8] = [
      0xB0, 0x9B, 0x2D, 0x0E, 0x00, 0x00, 0x00, 0x00, 0x15, 0xEF, 0xFF, 0xFF, 0x62, 0x08, 0x0B,
      0x0F,
    ]
    let message = try payload.withUnsafeBytes { try UBXTimTP(validating: $0) }
    let announced = PosixTime(seconds: 1_614_103_469, nanoseconds: 500_000_000)
    let announcement = try #require(PulseQuantisation(message, announced: announced))
    #expect(
      announcement.error == Duration(secondsComponent: 0, attosecondsComponent: -4_331_000_000))
    // 1980-01-06 + 2146 weeks + 237 870 s = 2021-02-23T18:04:30Z.
    #expect(announcement.second == PosixTime(seconds: 1_614_103_470))
    // In the GNSS time base no second is named; with qErrInvalid (bit 4) nothing is said.
    var gnss = message
    gnss.timeBase = .gnss
    #expect(PulseQuantisation(gnss, announced: announced)?.second == nil)
    var invalid = payload
    invalid[14] |= 0x10
    let unknown = try invalid.withUnsafeBytes { try UBXTimTP(validating: $0) }
    #expect(PulseQuantisation(unknown, announced: announced) == nil)
  }
}

extension PulseDecision {
  fileprivate var quantisationError: Duration? {
    if case .labelled(let sample) = self { sample.quantisationError } else { nil }
  }
}
