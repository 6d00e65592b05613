import Chipsets
import Glibc
import NMEA
import POSIX
import SerialPort

/// What a recording's header says: the `# Key: value` lines ``Recording`` reads back.
///
/// Values are kept to printable ASCII without `$`, `!` or `#` (others become `_`), so a framer
/// fed the whole file, header included, takes the header for noise and nothing else.
public struct RecordingHeader: Sendable, Hashable {
  /// The recording's name (`Name`), which replay and GPX tracks show.
  public var name: String
  /// The device the bytes came from (`Device`).
  public var device: String
  /// The line speed (`Baud`), which a replay imitates.
  public var baud: BaudRate
  /// The chipset family whose commands woke the receiver (`Chipset`), if any.
  public var chipset: ChipsetFamily?
  /// When recording began, UTC (`Date`, `Started`).
  public var started: UTCTimestamp
  /// The program that recorded (`Recorder`).
  public var recorder: String

  /// A header; `started` is now by the system clock unless given.
  public init(
    name: String, device: String, baud: BaudRate, chipset: ChipsetFamily? = nil,
    started: UTCTimestamp = RecordingHeader.systemTime(), recorder: String = "SerialGPS"
  ) {
    self.name = name
    self.device = device
    self.baud = baud
    self.chipset = chipset
    self.started = started
    self.recorder = recorder
  }

  /// The header's fields, in the order they are written.
  public var fields: [Recording.HeaderField] {
    var fields = [
      Recording.HeaderField(key: "Name", value: name),
      Recording.HeaderField(key: "Device", value: device),
      Recording.HeaderField(key: "Baud", value: baud.description),
    ]
    if let chipset {
      fields.append(Recording.HeaderField(key: "Chipset", value: chipset.displayName))
    }
    fields += [
      Recording.HeaderField(key: "Date", value: started.date.description),
      Recording.HeaderField(key: "Started", value: started.iso8601(fractionDigits: 0)),
      Recording.HeaderField(key: "Recorder", value: recorder),
    ]
    return fields
  }

  /// The header's lines, each `# Key: value` and a line feed.
  public var text: String {
    fields.map { "# \($0.key): \(Self.clean($0.value))\n" }.joined()
  }

  /// `value` with what must not appear in a header value replaced by `_`.
  public static func clean(_ value: String) -> String {
    String(
      String.UnicodeScalarView(
        value.unicodeScalars.map { scalar in
          (0x20...0x7E).contains(scalar.value) && !"$!#".unicodeScalars.contains(scalar)
            ? scalar : "_"
        }))
  }

  /// A name for the recording at `path`: its file name without directories and extension.
  public static func defaultName(forFile path: String) -> String {
    let file = path.split(separator: "/").last.map(String.init) ?? path
    guard let dot = file.lastIndex(of: "."), dot != file.startIndex else { return file }
    return String(file[..<dot])
  }

  /// The system's real-time clock, to the second, as a UTC timestamp.
  public static func systemTime() -> UTCTimestamp { time(on: SystemWallClock()) }

  /// `clock`'s time, to the second, as a UTC timestamp.
  package static func time(on clock: any WallClock) -> UTCTimestamp {
    UTCTimestamp(secondsSinceUnixEpoch: clock.now().secondsAndNanoseconds.seconds, nanoseconds: 0)
  }
}

/// Writes a recording: a header, then every byte the receiver sent as it arrives, so that
/// ``Recording/load(path:)``, `serialgps decode` and `serialgps replay` read it back.
///
/// ```swift
/// let writer = try RecordingWriter(
///   creating: "drive.nmea", header: RecordingHeader(name: "drive", device: path, baud: 9600))
/// for await item in receiver.subscribeWithRawData() {
///   if case .rawData(let bytes) = item { try writer.append(bytes) }
/// }
/// try writer.finish()
/// ```
///
/// (A subscriber that falls behind misses chunks, as it misses fixes: give the subscription
/// room with `bufferSize`.) Each write is complete (a short write is continued, an interrupted one retried) or throws;
/// after a failure, later writes throw the same error, so what is in the file is always a
/// prefix of what was given. ``finish()`` flushes the file to the disk. Not for use from
/// several threads at once.
public final class RecordingWriter {
  /// The file's path, as given.
  public let path: String
  /// Bytes written so far, header included.
  public private(set) var bytesWritten = 0
  // Closed by `close()`, or else when the writer goes away.
  private var file: OwnedDescriptor?
  private var failure: RecordingWriteError?

  /// Creates the file at `path` (replacing one that exists) and writes `header` into it, if
  /// one is given; `serialgps gpx` writes its tracks without one.
  public init(creating path: String, header: RecordingHeader? = nil) throws(RecordingWriteError) {
    self.path = path
    do {
      file = OwnedDescriptor(
        try FileDescriptor.open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC))
    } catch {
      throw RecordingWriteError(path: path, operation: .create, errno: error)
    }
    if let header { try append(Array(header.text.utf8)) }
  }

  /// Appends `bytes` to the file.
  public func append(_ bytes: some Collection<UInt8>) throws(RecordingWriteError) {
    if let failure { throw failure }
    guard let descriptor = file?.descriptor else {
      throw RecordingWriteError(path: path, operation: .write, errno: .badFileDescriptor)
    }
    let array = Array(bytes)
    do {
      try descriptor.writeAll(array)
    } catch {
      let failure = RecordingWriteError(path: path, operation: .write, errno: error)
      self.failure = failure
      throw failure
    }
    bytesWritten += array.count
  }

  /// Flushes the file to the disk and closes it. Later calls do nothing.
  public func finish() throws(RecordingWriteError) {
    guard let descriptor = file?.rawValue else { return }
    // EINVAL: a file that cannot be synced (a pipe, /dev/stdout) has nothing to flush.
    let synced = fsync(descriptor) == 0 || errno == EINVAL
    let syncError = Errno(rawValue: errno)
    close()
    if let failure { throw failure }
    if !synced { throw RecordingWriteError(path: path, operation: .save, errno: syncError) }
  }

  /// Closes the file without flushing it to the disk. Later calls do nothing.
  public func close() {
    file = nil
  }
}

/// A recording could not be written.
public struct RecordingWriteError: Error, Sendable, Hashable, CustomStringConvertible {
  /// What was being done.
  public enum Operation: Sendable, Hashable {
    /// Creating the file.
    case create
    /// Writing to it.
    case write
    /// Flushing it to the disk at the end.
    case save
  }

  /// The file's path, as given.
  public let path: String
  /// What failed.
  public let operation: Operation
  /// Why, as the system said.
  public let errno: Errno

  public var description: String {
    switch operation {
    case .create:
      return "cannot write \(path): \(errno.message). Check the directory exists and is writable."
    case .write:
      return "writing \(path) failed: \(errno.message). Free some space or choose another file."
    case .save:
      return "saving \(path) failed: \(errno.message)."
    }
  }
}
