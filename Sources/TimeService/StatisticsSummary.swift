extension TimeServiceStatistics {
  /// The figures in one line for people (a server's log): what was judged and published,
  /// why epochs and pulses were refused, the receiver's delay (its median is the offset to
  /// set) and how each output fared.
  ///
  /// `412 epochs, 405 samples (refused: settling 3, no fix 4); delay against the system clock:
  /// median 152.318 ms, mean 152.402 ms, sd 1.211 ms, 148.990–157.004 ms over 405; pulses: none;
  /// /run/chrony.clk.ttyAMA0.sock: 405 sent; NTP0: 405 written`
  public var summary: String {
    var parts: [String] = []
    parts.append(
      "\(epochs) epochs, \(samples) samples" + Self.reasons("refused", rejections))
    parts.append("delay against the system clock: " + Self.describe(delayAgainstSystemClock))
    if pulses == 0 {
      parts.append("pulses: none")
    } else {
      parts.append(
        "\(pulses) pulses, \(labelledPulses) labelled" + Self.reasons("dropped", pulseDrops))
      parts.append("delay against the pulses: " + Self.describe(delayAgainstPulses))
    }
    for output in outputs {
      var text = output.name + ": \(output.delivered) "
      text += output.name.hasPrefix("NTP") ? "written" : "sent"
      if output.noListener > 0 { text += ", \(output.noListener) without chronyd" }
      if output.failed > 0 { text += ", \(output.failed) failed" }
      if let error = output.lastError { text += " (last error: \(error))" }
      parts.append(text)
    }
    return parts.joined(separator: "; ")
  }

  /// ` (refused: settling 2, no fix 5)`, the reasons in their declared order; empty when none.
  static func reasons<Reason: CaseIterable & CustomStringConvertible>(
    _ title: String, _ counts: [Reason: Int]
  ) -> String {
    let listed = Reason.allCases.compactMap { reason -> String? in
      guard let count = counts[reason], count > 0 else { return nil }
      return "\(reason) \(count)"
    }
    return listed.isEmpty ? "" : " (\(title): " + listed.joined(separator: ", ") + ")"
  }

  static func describe(_ delay: DelayStatistics) -> String {
    guard let median = delay.median, let mean = delay.mean, let minimum = delay.minimum,
      let maximum = delay.maximum
    else { return "not measured yet" }
    var text = "median \(milliseconds(median)), mean \(milliseconds(mean))"
    if let deviation = delay.standardDeviation { text += ", sd \(milliseconds(deviation))" }
    text += ", \(milliseconds(minimum, unit: false))–\(milliseconds(maximum)) over \(delay.count)"
    return text
  }

  /// `152.318 ms`: to the microsecond, truncated.
  static func milliseconds(_ duration: Duration, unit: Bool = true) -> String {
    let microseconds = duration.wholeNanoseconds / 1000
    let sign = microseconds < 0 ? "-" : ""
    let magnitude = microseconds.magnitude
    let fraction = String(magnitude % 1000)
    let text =
      sign + String(magnitude / 1000) + "."
      + String(repeating: "0", count: 3 - fraction.count) + fraction
    return unit ? text + " ms" : text
  }
}
