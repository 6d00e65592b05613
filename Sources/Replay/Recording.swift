import Glibc
import NMEA
import POSIX

/// A receiver recording: a fixture (`fixtures/*.nmea`) or a capture such as gpsd's logs, split
/// into the bursts a receiver sends once per navigation epoch.
///
/// The file's leading `#` lines are its header (`# Key: value`, see docs/fixtures.md); the
/// body is every byte after them, kept exactly, binary UBX or SiRF frames and line noise
/// included. `#` lines after the first body byte are body: in a binary stream they are data.
///
/// Bursts: a new epoch begins at a sentence whose time differs from the epoch's time, or at
/// the sentence that starts every cycle (learned from where the time changes; needed for
/// cold-start cycles that carry no time at all). The boundary is placed right after the
/// previous NMEA sentence, so binary frames and noise that precede a cycle's first sentence
/// travel with that cycle. The time from one burst to the next is the difference of their
/// sentence times; where either has none it is the recording's usual epoch interval.
///
/// A value with no I/O beyond ``load(path:)`` and no clock: the pty simulator and an
/// in-process replay source both pace it with a clock of their own.
public struct Recording: Sendable {
  /// One epoch's bytes: ``Recording/body``[``range``].
  public struct Burst: Sendable, Hashable {
    /// Where the burst's bytes are in ``Recording/body``.
    public let range: Range<Int>
    /// The first UTC time a sentence of the burst carries, if any does.
    public let time: UTCTime?
    /// Checksum-valid NMEA sentences in the burst.
    public let sentences: Int
    /// The time from the start of this burst to the start of the next one, at the
    /// recording's own pace (after the last burst: the usual interval).
    public let interval: Duration
  }

  /// The recording's name: the `Name` header, else the file name, else `recording`.
  public let name: String
  /// The header lines' keys and values, in file order (`Name`, `Chipset`, `Baud` …).
  public let header: [HeaderField]
  /// The bytes the receiver sent.
  public let body: [UInt8]
  /// The body split into epochs; empty only for an empty body.
  public let bursts: [Burst]
  /// The usual time between epochs: the median of the differences between consecutive burst
  /// times; one second when the recording carries no usable times.
  public let nominalInterval: Duration

  /// A `# Key: value` header line.
  public struct HeaderField: Sendable, Hashable {
    public let key: String
    public let value: String

    public init(key: String, value: String) {
      self.key = key
      self.value = value
    }
  }

  /// Reads a recording from the bytes of a file.
  public init(bytes: [UInt8], name: String? = nil) {
    let (fields, bodyStart) = Self.header(of: bytes)
    header = fields
    body = Array(bytes[bodyStart...])
    self.name = fields.first { $0.key == "Name" }?.value ?? name ?? "recording"
    (bursts, nominalInterval) = Self.split(body)
  }

  /// The header of a recording's bytes (its leading `#` lines, read as `# Key: value`) and
  /// where the body after it begins, without reading the body: for a program that wants the
  /// header of a recording it decodes itself.
  public static func header(of bytes: [UInt8]) -> (fields: [HeaderField], bodyStart: Int) {
    var offset = 0
    var fields: [HeaderField] = []
    // Whole lines that start with `#`, from the first byte on.
    while offset < bytes.count, bytes[offset] == UInt8(ascii: "#") {
      let end = bytes[offset...].firstIndex(of: 0x0A) ?? bytes.count
      var line = bytes[(offset + 1)..<end]
      while let last = line.last, last == 0x0D { line = line.dropLast() }
      let text = String(decoding: line, as: UTF8.self)
      if let colon = text.firstIndex(of: ":") {
        let key = text[..<colon].trimmingBlanks()
        let value = text[text.index(after: colon)...].trimmingBlanks()
        if !key.isEmpty, !key.contains(" ") { fields.append(HeaderField(key: key, value: value)) }
      }
      offset = min(end + 1, bytes.count)
    }
    return (fields, offset)
  }

  /// Loads the recording at `path`.
  public static func load(path: String) throws(RecordingError) -> Recording {
    Recording(bytes: try contents(of: path), name: fileName(of: path))
  }

  private static func contents(of path: String) throws(RecordingError) -> [UInt8] {
    do {
      return try FileDescriptor.contents(of: path)
    } catch {
      throw RecordingError(path: path, errno: error.rawValue)
    }
  }

  private static func fileName(of path: String) -> String {
    path.split(separator: "/").last.map(String.init) ?? path
  }

  /// Like ``load(path:)``, but a file is parsed once per process while its bytes stay the
  /// same: for test suites that replay the same fixtures in many tests (splitting a large
  /// recording takes milliseconds in a release build, seconds in a debug build under
  /// ThreadSanitizer). The file is read every time and compared with the bytes parsed, so an
  /// edited fixture is parsed again. Every recording loaded this way is kept, with its file's
  /// bytes, for the life of the process.
  public static func loadCached(path: String) throws(RecordingError) -> Recording {
    let bytes = try contents(of: path)
    if let cached = parsedFiles.withLock({ $0[path] }), cached.bytes == bytes {
      return cached.recording
    }
    // Parsed outside the lock: two tests loading one file at once both parse it.
    let recording = Recording(bytes: bytes, name: fileName(of: path))
    parsedFiles.withLock { $0[path] = (bytes, recording) }
    return recording
  }

  private static let parsedFiles = Locked<[String: (bytes: [UInt8], recording: Recording)]>([:])

  /// The value of header `key` (`Baud`, `Chipset` …).
  public func headerValue(_ key: String) -> String? {
    header.first { $0.key == key }?.value
  }

  /// The line speed the header names (`# Baud: 9600`).
  public var baud: Int? { headerValue("Baud").flatMap { Int($0) } }

  /// The bytes of `burst`.
  public func bytes(of burst: Burst) -> ArraySlice<UInt8> { body[burst.range] }

  /// Checksum-valid sentences in the whole body.
  public var sentenceCount: Int { bursts.reduce(0) { $0 + $1.sentences } }

  private init(copying recording: Recording, bursts: [Burst]) {
    name = recording.name
    header = recording.header
    body = recording.body
    nominalInterval = recording.nominalInterval
    self.bursts = bursts
  }

  /// This recording with only its epochs that hold a position fix (GGA quality above 0, or
  /// RMC or GLL status `A`): the trajectory that the physics (``ReceiverPhysics``) plays,
  /// making the epochs without a fix itself. Unchanged when no epoch has a fix.
  public var fixEpochs: Recording {
    let kept = bursts.filter { hasPositionFix($0) }
    return kept.isEmpty || kept.count == bursts.count
      ? self : Recording(copying: self, bursts: kept)
  }

  /// Whether `burst` holds a position fix.
  public func hasPositionFix(_ burst: Burst) -> Bool {
    var found = false
    var framer = NMEAFramer()
    framer.feed(bytes(of: burst)) { frame in
      guard !found, case .sentence(let raw) = frame, let sentence = try? Sentence(parsing: raw)
      else { return }
      switch sentence {
      case .gga(let gga):
        found = (gga.quality.map { $0 != .invalid } ?? false) && gga.position != nil
      case .rmc(let rmc): found = rmc.isValid == true && rmc.position != nil
      default: break
      }
    }
    return found
  }

  /// The first time in the recording with its date (the first date any sentence gives,
  /// taken back to the first timed epoch across midnight); `nil` without time or date.
  public var firstTimestamp: UTCTimestamp? {
    var firstTime: UTCTime?
    var date: UTCDate?
    var dateTime: UTCTime?
    var framer = NMEAFramer()
    framer.feed(body.prefix(1 << 16)) { frame in
      guard date == nil, case .sentence(let raw) = frame, let sentence = try? Sentence(parsing: raw)
      else { return }
      if firstTime == nil { firstTime = sentence.time }
      if case .rmc(let rmc) = sentence, let given = rmc.date {
        date = given
        dateTime = rmc.time
      }
    }
    guard let firstTime, var date else { return nil }
    if let dateTime, dateTime < firstTime { date = date.previous }
    return UTCTimestamp(date: date, time: firstTime)
  }

  // MARK: - Splitting

  private struct SentenceMark {
    let end: Int  // offset just past the sentence's line feed
    let address: String
    let time: UTCTime?
  }

  static func split(_ body: [UInt8]) -> ([Burst], Duration) {
    guard !body.isEmpty else { return ([], .seconds(1)) }
    let marks = sentenceMarks(body)

    // The cycle's first sentence: the address at which the time changes most often.
    var changes: [String: Int] = [:]
    var lastTime: UTCTime?
    for mark in marks {
      guard let time = mark.time else { continue }
      if let lastTime, time != lastTime { changes[mark.address, default: 0] += 1 }
      lastTime = time
    }
    let marker = changes.max { $0.value < $1.value || ($0.value == $1.value && $0.key > $1.key) }?
      .key

    // Boundaries: the end of the sentence before the one that opens a new epoch.
    var starts: [Int] = [0]
    var times: [UTCTime?] = [nil]
    var counts: [Int] = [0]
    var epochHasCycle = false  // a marker or a timed sentence is in the current epoch
    var previousEnd: Int?
    for mark in marks {
      var opens = false
      if let previousEnd, previousEnd > starts.last! {
        if mark.address == marker && epochHasCycle {
          opens = true
        } else if let time = mark.time, let current = times.last!, time != current {
          opens = true
        }
        if opens {
          starts.append(previousEnd)
          times.append(nil)
          counts.append(0)
          epochHasCycle = false
        }
      }
      if times[times.count - 1] == nil, let time = mark.time { times[times.count - 1] = time }
      if mark.address == marker || mark.time != nil { epochHasCycle = true }
      counts[counts.count - 1] += 1
      previousEnd = mark.end
    }

    // Intervals from the sentence times; the median where a time is missing.
    var differences: [Duration] = []
    for index in 1..<max(1, times.count) {
      if let d = difference(times[index - 1], times[index]) { differences.append(d) }
    }
    let nominal =
      differences.isEmpty
      ? Duration.seconds(1)
      : differences.sorted()[
        differences.count / 2]
    var bursts: [Burst] = []
    for index in starts.indices {
      let end = index + 1 < starts.count ? starts[index + 1] : body.count
      let next = index + 1 < times.count ? times[index + 1] : nil
      bursts.append(
        Burst(
          range: starts[index]..<end, time: times[index], sentences: counts[index],
          interval: difference(times[index], next) ?? nominal))
    }
    return (bursts, nominal)
  }

  /// From one epoch's time to the next one's; across midnight too. `nil` when either is
  /// missing, or for a step back or one over a minute (a gap or a jump in the recording).
  static func difference(_ from: UTCTime?, _ to: UTCTime?) -> Duration? {
    guard let from, let to else { return nil }
    var nanoseconds = to.nanosecondsOfDay - from.nanosecondsOfDay
    if nanoseconds < 0 { nanoseconds += 86_400 * 1_000_000_000 }
    guard nanoseconds > 0, nanoseconds <= 60 * 1_000_000_000 else { return nil }
    return .nanoseconds(nanoseconds)
  }

  /// Every checksum-valid sentence: where it ends, its address and its time.
  ///
  /// The framer is fed one byte at a time, so a sentence is reported at its line feed and
  /// its end offset is exact whatever noise or binary frames surround it.
  private static func sentenceMarks(_ body: [UInt8]) -> [SentenceMark] {
    var framer = NMEAFramer(configuration: FramerConfiguration(maximumSentenceLength: 256))
    var marks: [SentenceMark] = []
    body.withUnsafeBytes { raw in
      var offset = 0
      while offset < raw.count {
        let end = offset + 1
        framer.feed(UnsafeRawBufferPointer(rebasing: raw[offset..<end])) { frame in
          guard case .sentence(let sentence) = frame else { return }
          let bytes = sentence.bytes
          var addressEnd = 1
          while addressEnd < bytes.count, bytes[addressEnd] != UInt8(ascii: ",") {
            addressEnd += 1
          }
          let address = String(decoding: bytes[1..<addressEnd], as: UTF8.self)
          let time = (try? Sentence(parsing: sentence))?.time
          marks.append(SentenceMark(end: end, address: address, time: time))
        }
        offset = end
      }
    }
    return marks
  }
}

/// A recording could not be read.
public struct RecordingError: Error, Sendable, Hashable, CustomStringConvertible {
  /// The path as given.
  public let path: String
  /// The errno of the failed call.
  public let code: Int32

  init(path: String, errno: Int32) {
    self.path = path
    self.code = errno
  }

  /// The process's current directory, `nil` if it cannot be read.
  static func currentDirectory() -> String? {
    var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
    guard getcwd(&buffer, buffer.count) != nil else { return nil }
    return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
  }

  public var description: String {
    let reason = Errno(rawValue: code).description
    switch code {
    case ENOENT:
      guard !path.hasPrefix("/") else {
        return "The recording \(path) does not exist (\(reason)). Pass the path of a "
          + "recording made with `serialgps record DEVICE -o FILE`."
      }
      // A relative path is the current directory's, which in a test run is the package's
      // build directory or wherever the runner started: say where it was looked for.
      let directory = Self.currentDirectory() ?? "the current directory"
      return "The recording \(path) does not exist (\(reason)): looked for it in "
        + "\(directory). A relative path is taken from the current directory; pass an "
        + "absolute path (in a test, one made from #filePath), or the path of a recording "
        + "made with `serialgps record DEVICE -o FILE`."
    case EACCES, EPERM:
      return "The recording \(path) cannot be read (\(reason)). Check its permissions."
    case EISDIR:
      return "\(path) is a directory, not a recording. Give a file such as "
        + "fixtures/ublox-m8-drive.nmea."
    default:
      return "Reading the recording \(path) failed: \(reason)."
    }
  }
}

extension StringProtocol {
  func trimmingBlanks() -> String {
    let scalars = unicodeScalars.drop { $0 == " " || $0 == "\t" }.reversed().drop {
      $0 == " " || $0 == "\t"
    }.reversed()
    return String(String.UnicodeScalarView(scalars))
  }
}
