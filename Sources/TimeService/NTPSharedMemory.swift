import CTimeShims
import Glibc
import SerialPort

/// Writes samples into an NTP shared-memory segment, the refclock that ntpd (driver 28,
/// `server 127.127.28.N`) and chrony (`refclock SHM N`) read.
///
/// The segment is ntpd's `struct shmTime` at System V key `0x4E545030 + unit` ("NTP0" …), used
/// with its mode 1 protocol: `valid` cleared, `count` raised, the times written, `count`
/// raised again, `valid` set, so a reader that sees `count` unchanged across its read has a
/// consistent sample. Units 0 and 1 are root's: ntpd creates them `0600`, and only a process
/// running as root may write them; units 2 and above are `0666`. A segment that exists
/// already (made by ntpd, chronyd or an earlier run) is used as it is.
///
/// Not thread-safe: one thread owns each.
public final class NTPSharedMemory {
  /// The unit (`NTP<unit>`).
  public let unit: Int
  /// The precision written with every sample: log₂ of the expected error in seconds.
  public let precision: Int32

  private let segment: UnsafeMutablePointer<ctime_shm_time>

  /// Samples written.
  public private(set) var written = 0

  /// The precision gpsd writes for PPS: 2⁻²⁰ s, about 1 µs.
  public static let pulsePrecision: Int32 = -20
  /// The precision written for serial time: 2⁻¹⁰ s, about 1 ms — what back-dated bytes on a
  /// UART achieve once the offset is set (docs/time.md).
  public static let serialPrecision: Int32 = -10

  /// Attaches (creating it if needed) the segment of `unit` and prepares it for mode 1.
  ///
  /// A segment another writer holds is refused rather than written alongside it: gpsd takes
  /// units 0–7 when it starts, and two writers in one segment give the reader each other's
  /// samples in turns. The readers (chronyd, ntpd, ntpshmmon) attach it too and are welcome.
  ///
  /// - Throws: ``TimeServiceError/sharedMemoryNeedsRoot(unit:)`` for units 0 and 1 when not
  ///   running as root, ``TimeServiceError/sharedMemoryHeld(unit:by:free:)`` when another
  ///   process that is not a known reader has it attached,
  ///   ``TimeServiceError/sharedMemoryWrongSize(unit:size:free:)`` for a segment too small
  ///   for ntpd's layout, ``TimeServiceError/sharedMemory(unit:_:)`` when the segment cannot
  ///   be had otherwise.
  public init(unit: Int, precision: Int32) throws(TimeServiceError) {
    guard unit >= 0, unit <= 255 else { throw .sharedMemoryUnitOutOfRange(unit) }
    if unit < 2 && !System.isRoot { throw .sharedMemoryNeedsRoot(unit: unit) }
    switch Self.use(ofUnit: unit) {
    case .free, .readOnly:
      break
    case .held(let holders):
      throw .sharedMemoryHeld(unit: unit, by: holders, free: Self.freeUnit(besides: [unit]))
    case .wrongSize(let size):
      throw .sharedMemoryWrongSize(unit: unit, size: size, free: Self.freeUnit(besides: [unit]))
    }
    guard let segment = ctime_shm_attach(CInt(unit), unit < 2 ? 0o600 : 0o666) else {
      throw .sharedMemory(unit: unit, System.errno)
    }
    self.unit = unit
    self.precision = precision
    self.segment = segment
    ctime_shm_prepare(segment, precision)
  }

  /// What is at a unit now, for a writer about to take it.
  public enum Use: Sendable, Hashable {
    /// No segment, or one nobody else has attached.
    case free
    /// Attached only by readers (chronyd, ntpd, ntpshmmon): the writer they wait for.
    case readOnly
    /// Attached by other processes that may write it, each described as `gpsd (pid 812)`.
    case held([String])
    /// A segment smaller than ntpd's layout: made by something else.
    case wrongSize(Int)
  }

  /// The programs that attach a unit to read it, by their command name.
  public static let readers: Set<String> = ["chronyd", "ntpd", "ntpshmmon"]

  /// What is at `unit`: who else has its segment attached (`shm_nattch`, and the processes
  /// whose memory maps show it, or its creator and last user where those cannot be read).
  public static func use(ofUnit unit: Int) -> Use {
    var status = ctime_shm_status()
    guard ctime_shm_stat(CInt(unit), &status) == 1 else { return .free }
    if status.size < ctime_shm_time_size() { return .wrongSize(status.size) }
    guard status.attached > 0 else { return .free }
    let key = key(ofUnit: unit)
    let own = getpid()
    var seen = System.processesMapping(keys: [key])[key] ?? []
    var unseen = Int(status.attached) - seen.count
    // Processes whose maps this user may not read (another user's gpsd or chronyd): the
    // segment's creator and last user, when alive and not counted yet, stand for them.
    for process in [status.creator, status.last] where unseen > 0 && !seen.contains(process) {
      guard process > 0, System.command(ofProcess: process) != nil else { continue }
      seen.insert(process)
      unseen -= 1
    }
    var holders: [String] = []
    for process in seen.sorted() where process != own {
      let command = System.command(ofProcess: process) ?? "?"
      if !readers.contains(command) { holders.append("\(command) (pid \(process))") }
    }
    if unseen > 0 {
      holders.append(
        unseen == 1
          ? "a process this user cannot inspect" : "\(unseen) processes this user cannot inspect")
    }
    return holders.isEmpty ? .readOnly : .held(holders)
  }

  /// The first unit, with the one after it (for PPS), that a writer may take (``Use/free`` or
  /// ``Use/readOnly``, and not root's when not running as root), other than `besides`, up to
  /// unit 99; `nil` when there is none.
  public static func freeUnit(besides: Set<Int> = []) -> Int? {
    let first = System.isRoot ? 0 : 2
    func usable(_ unit: Int) -> Bool {
      guard !besides.contains(unit) else { return false }
      switch use(ofUnit: unit) {
      case .free, .readOnly: return true
      case .held, .wrongSize: return false
      }
    }
    return (first..<99).first { usable($0) && usable($0 + 1) }
  }

  deinit {
    // Detached, not removed: ntpd or chronyd may still hold it, and gpsd leaves it too.
    _ = ctime_shm_detach(segment)
  }

  /// The units gpsd would choose for the receiver at `index` (0 for the first): serial time on
  /// an even unit and PPS on the next odd one, starting at 0 when running as root and at 2
  /// otherwise (units 0 and 1 are root's).
  public static func units(forReceiverAt index: Int, asRoot: Bool? = nil) -> (
    serial: Int, pulse: Int
  ) {
    let asRoot = asRoot ?? System.isRoot
    let serial = 2 * index + (asRoot ? 0 : 2)
    return (serial, serial + 1)
  }

  /// Writes one sample: true time `real` was system time `clock`. `leap` is NTP's leap
  /// indicator (0 none, 1 insert, 2 delete, 3 not in sync).
  public func write(real: PosixTime, clock: PosixTime, leap: Int32 = 0) {
    ctime_shm_write(
      segment, real.seconds, real.nanoseconds, clock.seconds, clock.nanoseconds, leap, precision)
    written += 1
  }

  /// The System V key of a unit.
  public static func key(ofUnit unit: Int) -> Int32 { Int32(CTIME_NTP_SHM_KEY_BASE) + Int32(unit) }
}
