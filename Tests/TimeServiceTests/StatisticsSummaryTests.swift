import Testing
import TimeService

@Suite("The time service's figures for people")
struct StatisticsSummaryTests {
  @Test func everyFigureInOneLine() {
    var statistics = TimeServiceStatistics()
    statistics.epochs = 12
    statistics.samples = 5
    statistics.rejections = [.settling: 2, .noFix: 5, .jumped: 0]
    var delay = DelayStatistics()
    delay.count = 5
    delay.median = .microseconds(152_318)
    delay.mean = .nanoseconds(152_402_999)
    delay.standardDeviation = .microseconds(1_211)
    delay.minimum = .microseconds(148_990)
    delay.maximum = .microseconds(157_004)
    statistics.delayAgainstSystemClock = delay
    var chrony = OutputStatistics(name: "/run/chrony.clk.ttyAMA0.sock")
    chrony.delivered = 3
    chrony.noListener = 2
    var shm = OutputStatistics(name: "NTP0")
    shm.delivered = 5
    statistics.outputs = [chrony, shm]
    #expect(
      statistics.summary
        == "12 epochs, 5 samples (refused: no fix 5, settling 2); delay against the system "
        + "clock: median 152.318 ms, mean 152.402 ms, sd 1.211 ms, 148.990–157.004 ms over 5; "
        + "pulses: none; /run/chrony.clk.ttyAMA0.sock: 3 sent, 2 without chronyd; NTP0: 5 written")
  }

  @Test func pulsesAndNothingMeasured() {
    var statistics = TimeServiceStatistics()
    statistics.pulses = 4
    statistics.labelledPulses = 1
    statistics.pulseDrops = [.noTrustedTime: 3]
    var delay = DelayStatistics()
    delay.count = 1
    delay.median = .microseconds(-1_500)
    delay.mean = .microseconds(-1_500)
    delay.minimum = .microseconds(-1_500)
    delay.maximum = .microseconds(-1_500)
    statistics.delayAgainstPulses = delay
    #expect(
      statistics.summary
        == "0 epochs, 0 samples; delay against the system clock: not measured yet; 4 pulses, 1 "
        + "labelled (dropped: no trusted time 3); delay against the pulses: median -1.500 ms, "
        + "mean -1.500 ms, -1.500–-1.500 ms over 1")
  }
}
