import Glibc
import POSIX
import SerialPort

/// Where a process notes the receivers it has woken, so that the next one can put to standby a
/// receiver left awake by a process that was killed outright (SIGKILL, a crash): the only ends
/// a process cannot clean up after itself.
///
/// One small file per receiver, named after its stable identity (a serial number, USB IDs and
/// port, or a device node's path and creation time; never the tty path alone, which another
/// receiver may take), holding the PID of the process that woke it. It is written when a
/// power-on completes and removed once the standby was sent or the connection ended. A
/// ``GPSReceiver`` that finds a marker naming a process that no longer exists, and has no
/// subscriber, opens the receiver, sends the standby steps and closes it; a subscriber arriving
/// meanwhile simply wins (the receiver is wanted awake). Without such a marker nothing is
/// opened until there is demand.
///
/// The markers agree with the device's lock (``SerialPort/SerialPort/owner(of:lockDirectory:)``):
/// the process that woke a receiver owns its device until it has put it to standby, so a
/// marker naming a live process is that owner's, and a device that some live process owns now
/// (another program, or a SerialGPS process that marks nothing) is not left awake whatever
/// an old marker says: it is its owner's to put to sleep, and the marker stays for when the
/// device is free again.
public struct AwakeMarkers: Sendable, Hashable {
  /// The directory holding the markers.
  public let directory: String

  /// Markers in `directory` (created when missing); for tests and unusual layouts.
  public init(directory: String) {
    self.directory = directory
  }

  /// `/run/serialgps` when it is (or can be made) writable, else `$XDG_RUNTIME_DIR/serialgps`;
  /// `nil` when neither is: then nothing is marked, and nothing fails. The default of
  /// ``GPSReceiver/Options/awakeMarkers``. The shared directory comes first, so that processes
  /// of different users (a service as root, an app) find one another's markers where they
  /// can.
  public static func standard() -> AwakeMarkers? {
    var candidates = ["/run/serialgps"]
    if let runtime = getenv("XDG_RUNTIME_DIR").map({ String(cString: $0) }), !runtime.isEmpty {
      candidates.append(runtime + "/serialgps")
    }
    return firstWritable(of: candidates)
  }

  /// Markers in the first of `candidates` that is (or can be made) writable.
  static func firstWritable(of candidates: [String]) -> AwakeMarkers? {
    candidates.first(where: { prepare($0) }).map(AwakeMarkers.init(directory:))
  }

  /// Makes `directory` if needed; whether this process may write in it.
  @discardableResult
  static func prepare(_ directory: String) -> Bool {
    if mkdir(directory, 0o755) != 0 && errno != EEXIST { return false }
    return access(directory, W_OK) == 0
  }

  /// The marker file of the receiver known as `identity`.
  func path(for identity: String) -> String {
    directory + "/" + Self.fileName(for: identity) + ".awake"
  }

  /// A file name for the receiver known as `identity` (a serial number, USB IDs and a port
  /// path …): letters, digits, `-` and `.` kept, anything else `_`.
  static func fileName(for identity: String) -> String {
    var name: [UInt8] = []
    for scalar in identity.unicodeScalars {
      let keep =
        (scalar >= "a" && scalar <= "z") || (scalar >= "A" && scalar <= "Z")
        || (scalar >= "0" && scalar <= "9") || scalar == "-" || scalar == "."
      name.append(keep ? UInt8(truncatingIfNeeded: scalar.value) : UInt8(ascii: "_"))
    }
    return String(decoding: name, as: UTF8.self)
  }

  /// Notes that this process has woken the receiver.
  ///
  /// Written whole under another name and renamed into place: a marker that exists always
  /// names its process. Created and then written in place, a process killed between the two
  /// (the very case markers are for) left an empty marker, which names no process and so is
  /// never taken as left awake.
  func markAwake(_ identity: String) {
    guard Self.prepare(directory) else { return }
    // Not durable: the markers live in /run, which a reboot empties anyway.
    try? FileSystem.writeWhole(
      Processes.decimal(getpid()) + [UInt8(ascii: "\n")], to: path(for: identity),
      durable: false)
  }

  /// Forgets the receiver (standby sent, or the connection ended).
  func clear(_ identity: String) {
    unlink(path(for: identity))
  }

  /// The process that marked the receiver awake, if a marker exists.
  func owner(of identity: String) -> pid_t? {
    guard let bytes = try? FileDescriptor.contents(of: path(for: identity)) else { return nil }
    return Processes.id(inText: bytes)
  }

  /// Whether the receiver was left awake by a process that no longer runs, and nobody owns its
  /// device now (`deviceOwner`, asked only when such a marker exists).
  func wasLeftAwake(_ identity: String, deviceOwner: () -> DeviceOwner? = { nil }) -> Bool {
    guard let owner = owner(of: identity), owner > 0, owner != getpid() else { return false }
    return !Processes.exists(owner) && deviceOwner() == nil
  }
}
