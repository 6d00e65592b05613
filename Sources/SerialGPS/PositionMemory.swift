import Chipsets
import Glibc
import NMEA
import POSIX

/// Where the receivers' last positions are kept across restarts (`serve --state-dir`), so
/// that a receiver's first start after one can be aided with where it was.
///
/// One small text file per receiver, named after what stays the same for it across replugs
/// and reboots (its USB serial number, else its `/dev/serial/by-id` link or the configured
/// device: ``ReceiverConnector/positionIdentity``), written whole
/// (``POSIX/FileSystem/writeWhole(_:to:durable:)``: the old content or the new, never half)
/// and flushed to the disk, as a board may lose power at any moment. A file is ignored when it
/// names another receiver, is older than ``maximumAge`` or from the future, does not parse, or
/// holds a figure out of its range (``Chipsets/KnownPosition/isPlausible``): a wrong position
/// is worse than none. It is read only when it is a regular file of this process's user (or
/// root's) in a directory others cannot write, and never past ``maximumFileSize`` bytes: a
/// FIFO, a link to a device or a huge file at its path costs nothing (``read(identity:now:)``
/// says why it was ignored).
///
/// ```
/// serialgps-position 1
/// receiver serial A1
/// time 1764769200.250
/// latitude 47.2852167
/// longitude 8.5652500
/// height 594.6
/// altitude 546.6
/// accuracy 5.0
/// ```
public struct PositionMemory: Sendable, Hashable {
  /// The directory holding the files.
  public let directory: String

  /// How old a kept position may be and still be used: a day.
  public static let maximumAge: Duration = .seconds(86_400)

  /// The most bytes a position file is read for: what one holds (about 200) with room for a
  /// long receiver name. A larger file is not one of these.
  public static let maximumFileSize = 1_024

  /// What a receiver's file holds for a start (``read(identity:now:)``).
  public enum Reading: Sendable, Hashable {
    /// No position: no file, or one too old (or from the future) to use.
    case none
    /// The position kept.
    case position(KnownPosition)
    /// A file that is not one to trust, and why, in the user's words.
    case ignored(reason: String)

    /// The position read, if any.
    public var position: KnownPosition? {
      if case .position(let position) = self { return position }
      return nil
    }
  }

  public init(directory: String) { self.directory = directory }

  /// The memory in `directory`, made when missing (mode 0755); `nil` when this process cannot
  /// write there (a directory of root's for a user's process): then nothing is kept, and
  /// nothing fails.
  public static func writable(directory: String) -> PositionMemory? {
    AwakeMarkers.prepare(directory) ? PositionMemory(directory: directory) : nil
  }

  /// The file of the receiver known as `identity`.
  public func path(for identity: String) -> String {
    directory + "/" + AwakeMarkers.fileName(for: identity) + ".position"
  }

  /// Keeps `position` as the last one of the receiver known as `identity`.
  public func save(_ position: KnownPosition, identity: String) throws(Errno) {
    let text = PositionFile.text(position, identity: identity)
    try FileSystem.writeWhole(Array(text.utf8), to: path(for: identity), durable: true)
  }

  /// The last position kept for the receiver known as `identity`, if it is at most
  /// ``maximumAge`` old at `now` and not from the future.
  public func position(identity: String, now: UTCTimestamp) -> KnownPosition? {
    read(identity: identity, now: now).position
  }

  /// The last position kept for the receiver known as `identity` (at most ``maximumAge`` old
  /// at `now`, not from the future), or why its file was not trusted.
  public func read(identity: String, now: UTCTimestamp) -> Reading {
    let bytes: [UInt8]
    switch Self.privateContents(of: path(for: identity), directory: directory) {
    case .success(let read): bytes = read
    case .failure(.missing): return .none
    case .failure(let problem): return .ignored(reason: problem.description)
    }
    guard
      let position = PositionFile.parse(String(decoding: bytes, as: UTF8.self), identity: identity)
    else { return .ignored(reason: "it is not a position file of this receiver") }
    guard position.isPlausible else {
      return .ignored(
        reason:
          "a figure is out of range (latitude ±90°, longitude ±180°, heights −1 km to 50 km, accuracy 0 to 100 km)"
      )
    }
    let age = now.unixTime - position.time.unixTime
    guard age >= -60, age <= Double(Self.maximumAge.components.seconds) else { return .none }
    return .position(position)
  }

  /// Why a file at a position's path is not read.
  enum FileProblem: Error, Hashable, CustomStringConvertible {
    case missing
    case symbolicLink
    case notRegular
    case owner(uid_t)
    case writableDirectory
    case tooLarge
    case unreadable(Errno)

    var description: String {
      switch self {
      case .missing: return "it is missing"
      case .symbolicLink: return "it is a symbolic link"
      case .notRegular: return "it is not a regular file (a FIFO, a device or a directory)"
      case .owner(let uid): return "it belongs to user \(uid), neither this process's user nor root"
      case .writableDirectory: return "its directory may be written by other users"
      case .tooLarge: return "it is larger than \(PositionMemory.maximumFileSize) bytes"
      case .unreadable(let error): return "it cannot be read: \(error)"
      }
    }
  }

  /// The bytes of the file at `path` in `directory`, when it is one to trust: opened without
  /// following a link and without waiting (a FIFO with no writer opens at once), then checked
  /// on the open file itself, a regular file of this process's user or root's, in a directory
  /// of theirs that others cannot write, and read for ``maximumFileSize`` bytes at most.
  static func privateContents(of path: String, directory: String) -> Result<[UInt8], FileProblem> {
    let descriptor: FileDescriptor
    do {
      descriptor = try FileDescriptor.open(
        path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC)
    } catch {
      if error == .noSuchFileOrDirectory { return .failure(.missing) }
      if error.rawValue == ELOOP { return .failure(.symbolicLink) }
      return .failure(.unreadable(error))
    }
    let owned = OwnedDescriptor(descriptor)
    do {
      let file = try owned.descriptor.status()
      guard file.st_mode & S_IFMT == S_IFREG else { return .failure(.notRegular) }
      let user = geteuid()
      guard file.st_uid == user || file.st_uid == 0 else { return .failure(.owner(file.st_uid)) }
      let folder = try FileSystem.status(directory)
      guard folder.st_uid == user || folder.st_uid == 0, folder.st_mode & S_IWOTH == 0 else {
        return .failure(.writableDirectory)
      }
      guard file.st_size <= maximumFileSize else { return .failure(.tooLarge) }
      let bytes = try owned.descriptor.read(atMost: maximumFileSize + 1)
      guard bytes.count <= maximumFileSize else { return .failure(.tooLarge) }
      return .success(bytes)
    } catch {
      return .failure(.unreadable(error))
    }
  }
}
