import Foundation
import NMEA
import Replay
import Testing

@Suite struct RecordingTests {
  static let fixtures = [
    "ublox-m8-drive", "mtk-cold-start", "sirf-4800", "midnight-rollover", "rtk-high-precision",
    "noisy-ublox",
  ]

  /// The header ends where the truth file says, the body is every byte after it, and the
  /// bursts are the fixture's epochs, covering the body without gaps.
  @Test(arguments: fixtures)
  func burstsAreTheFixturesEpochs(_ name: String) throws {
    let recording = try loadFixture(name)
    let truth = try truth(name)
    #expect(recording.name == name)
    #expect(recording.body.count == truth["body_bytes"] as? Int)
    #expect(recording.baud == truth["baud"] as? Int)
    #expect(recording.bursts.count == truth["epochs"] as? Int)
    #expect(recording.sentenceCount == truth["sentences"] as? Int)
    var next = 0
    for burst in recording.bursts {
      #expect(burst.range.lowerBound == next)
      next = burst.range.upperBound
    }
    #expect(next == recording.body.count)
    let rate = try #require(truth["rate_hz"] as? Int)
    #expect(recording.nominalInterval == .milliseconds(1000 / rate))
  }

  /// Each burst holds one cycle: it starts with the sentence the fixture's cycles start with
  /// (after any binary frame that precedes it), and its time is the epoch's time.
  @Test(arguments: ["ublox-m8-drive", "mtk-cold-start", "sirf-4800", "midnight-rollover"])
  func eachBurstStartsACycle(_ name: String) throws {
    let recording = try loadFixture(name)
    let truth = try truth(name)
    let marker = try #require(truth["cycle_starts_with"] as? String)
    for (index, burst) in recording.bursts.enumerated() {
      var bytes = Array(recording.bytes(of: burst))
      // The first burst carries the power-on banner before its cycle.
      if index == 0, let start = firstIndex(of: "$" + marker, in: bytes) {
        bytes.removeFirst(start)
      }
      #expect(
        bytes.starts(with: Array(("$" + marker + ",").utf8)),
        "burst \(index) starts \(String(decoding: bytes.prefix(12), as: UTF8.self))")
    }
    let first = try #require(truth["first"] as? [String: Any])
    let expected = try #require((first["time"] as? String)?.split(separator: ":"))
    let firstTimed = try #require(recording.bursts.first { $0.time != nil }?.time)
    #expect(Int(firstTimed.hour) == Int(expected[0]))
    #expect(Int(firstTimed.minute) == Int(expected[1]))
    #expect(Int(firstTimed.second) == Int(Double(expected[2])!))
  }

  /// Across midnight the interval stays one second; the MTK cycles without any time get the
  /// usual interval.
  @Test func intervalsFollowTheSentenceTimes() throws {
    let midnight = try loadFixture("midnight-rollover")
    #expect(midnight.bursts.allSatisfy { $0.interval == .seconds(1) })
    let midnightIndex = try #require(
      midnight.bursts.firstIndex { $0.time == UTCTime(hour: 0, minute: 0, second: 0) })
    #expect(midnight.bursts[midnightIndex - 1].time == UTCTime(hour: 23, minute: 59, second: 59))
    let mtk = try loadFixture("mtk-cold-start")
    #expect(mtk.bursts.prefix(6).allSatisfy { $0.time == nil && $0.interval == .seconds(1) })
    let rtk = try loadFixture("rtk-high-precision")
    #expect(rtk.bursts.dropLast().allSatisfy { $0.interval == .milliseconds(100) })
  }

  @Test func aGapInTheTimesIsTimedFromItsOwnSentences() {
    func cycle(_ time: String) -> String {
      String(
        decoding: NMEAChecksum.frame(
          "GPGGA,\(time),4656.789,N,00726.123,E,1,08,0.9,540.2,M,48.0,M,,"), as: UTF8.self)
    }
    let text =
      "# Name: gap\n" + cycle("120000.00") + cycle("120002.00") + cycle("120003.00")
      + cycle("120004.00") + cycle("120005.00")
    let recording = Recording(bytes: Array(text.utf8))
    // The last burst, with no successor, gets the usual (median) interval.
    #expect(recording.nominalInterval == .seconds(1))
    #expect(
      recording.bursts.map(\.interval) == [
        .seconds(2), .seconds(1), .seconds(1), .seconds(1), .seconds(1),
      ])
    #expect(recording.header == [Recording.HeaderField(key: "Name", value: "gap")])
  }

  @Test func hashLinesAfterTheBodyStartAreKept() {
    let text = "# Key: value\n#\n$GPTXT,01,01,02,hello*2F\r\n# not a header\r\n"
    let recording = Recording(bytes: Array(text.utf8), name: "inline")
    #expect(recording.name == "inline")
    #expect(recording.headerValue("Key") == "value")
    #expect(
      String(decoding: recording.body, as: UTF8.self)
        == "$GPTXT,01,01,02,hello*2F\r\n# not a header\r\n")
    #expect(recording.bursts.count == 1)
    #expect(recording.sentenceCount == 1)
  }

  /// Loaded twice unchanged, the same recording; the file edited, parsed again; gone, the
  /// same error as a plain load.
  @Test func aCachedRecordingFollowsItsFile() throws {
    var template = Array("/tmp/serialgps-cached-XXXXXX".utf8CString)
    let directory = try #require(mkdtemp(&template).map { String(cString: $0) })
    let path = directory + "/drive.nmea"
    defer { rmdir(directory) }
    func write(_ name: String) throws {
      try Data(contentsOf: URL(fileURLWithPath: fixturePath(name)))
        .write(to: URL(fileURLWithPath: path))
    }
    try write("midnight-rollover")
    let first = try Recording.loadCached(path: path)
    #expect(first.bursts == (try loadFixture("midnight-rollover")).bursts)
    #expect(try Recording.loadCached(path: path).bursts == first.bursts)
    try write("mtk-cold-start")
    let edited = try Recording.loadCached(path: path)
    #expect(edited.body == (try loadFixture("mtk-cold-start")).body)
    #expect(edited.bursts == (try loadFixture("mtk-cold-start")).bursts)
    unlink(path)
    #expect(throws: RecordingError.self) { try Recording.loadCached(path: path) }
  }

  @Test("a missing recording at a relative path says where it was looked for and what to pass")
  func aMissingRelativeRecordingSaysWhereAndWhat() throws {
    let error = try #require(throws: RecordingError.self) {
      try Recording.load(path: "no-such-drive.nmea")
    }
    let text = error.description
    let directory = FileManager.default.currentDirectoryPath
    #expect(text.contains("no-such-drive.nmea does not exist"), "\(text)")
    #expect(text.contains("looked for it in \(directory)"), "\(text)")
    #expect(text.contains("pass an absolute path"), "\(text)")
    #expect(!text.contains("top of the repository"), "\(text)")
  }

  @Test func aMissingRecordingNamesItsPath() {
    #expect {
      _ = try Recording.load(path: "/nonexistent/drive.nmea")
    } throws: { error in
      let text = "\(error)"
      return text.contains("/nonexistent/drive.nmea") && text.contains("does not exist")
    }
  }

  @Test func playbackLoopsAndScalesThePace() throws {
    let recording = try loadFixture("midnight-rollover")
    var playback = Playback(recording: recording, pace: .recorded(speed: 4), loops: true)
    var delays: [Duration] = []
    for _ in 0..<(recording.bursts.count + 2) { delays.append(playback.next()!.delayAfter) }
    #expect(playback.loopsCompleted == 1)
    #expect(playback.position == 2)
    #expect(delays.allSatisfy { $0 == .milliseconds(250) })
    var once = Playback(recording: recording, pace: .asFastAsPossible, loops: false)
    var count = 0
    while let next = once.next() {
      #expect(next.delayAfter == .zero)
      count += 1
    }
    #expect(count == recording.bursts.count)
    #expect(once.isFinished)
    #expect(Pace.fixedInterval(.milliseconds(30)).scaled(.seconds(1)) == .milliseconds(30))
  }
}

func firstIndex(of text: String, in bytes: [UInt8]) -> Int? {
  let needle = Array(text.utf8)
  guard needle.count <= bytes.count else { return nil }
  for start in 0...(bytes.count - needle.count)
  where bytes[start..<(start + needle.count)].elementsEqual(needle) {
    return start
  }
  return nil
}
