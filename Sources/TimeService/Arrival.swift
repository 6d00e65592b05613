/// How the bytes of a receiver reach the system, which decides how far a byte that came in a
/// read can be dated back from the moment the read returned.
public enum LineTiming: Sendable, Hashable {
  /// A UART at `baud` bits per second, straight (`ttyS`, `ttyAMA`) or through a USB-serial
  /// bridge (`ttyUSB`: FTDI, CP210x, PL2303, CH340): 8N1 puts 10 bits on the line per byte
  /// (start, eight data, stop), so the bytes of a read arrived one character time apart and
  /// the last one just before the read returned.
  case uart(baud: Int)
  /// A receiver's native USB (`ttyACM`) or anything else without a line rate (a pty, a
  /// socket): the bytes of a read came together in one USB packet, and the read's own time is
  /// the best there is.
  case unpaced

  /// When the byte at `index` of a read that returned `count` bytes at `readTime` arrived.
  ///
  /// The back-dating rule: on a UART, byte `i` of `N` arrived `(N − 1 − i)` character times
  /// (10 bits at the baud rate each) before the read returned, so a burst read late, or a
  /// read that collected a whole sentence, is not a late sample. Without a line rate every
  /// byte of the read is dated at `readTime`.
  ///
  /// What remains is the time between the last byte's stop bit and the read returning: the
  /// UART's interrupt (a 16550 raises it at its FIFO trigger level, or after four idle
  /// character times for a byte that ends a burst), the kernel's tty buffer work and the
  /// scheduling of the reading thread — tens of microseconds on an idle board, up to a few
  /// milliseconds under load. A USB-serial bridge adds the time it holds bytes before sending
  /// a USB packet (FTDI: until 62 bytes or its latency timer, 16 ms by default, 1 ms when set
  /// in `/sys/bus/usb-serial/devices/ttyUSB*/latency_timer`). Native USB adds the 1 ms USB
  /// frame and however long the receiver buffers its output (see docs/time.md).
  public static func arrival(
    ofByteAt index: Int, inReadOf count: Int, returnedAt readTime: PosixTime,
    timing: LineTiming
  ) -> PosixTime {
    precondition(index >= 0 && index < count, "byte \(index) is not in a read of \(count)")
    return readTime - timing.lineTime(ofBytes: count - 1 - index)
  }

  /// How long `bytes` characters take on the line (zero without a line rate), to the
  /// nanosecond.
  func lineTime(ofBytes bytes: Int) -> Duration {
    guard case .uart(let baud) = self, baud > 0 else { return .zero }
    let bits = Int64(bytes) * 10
    return .nanoseconds((bits * 1_000_000_000 + Int64(baud) / 2) / Int64(baud))
  }
}

/// When the first byte of an epoch arrived, as the reader saw it.
///
/// This is what the reader supplies for each epoch (see ``ReadTimeline``): the system time
/// (`CLOCK_REALTIME`) of the byte that began the epoch's first sentence (its `$`), dated back
/// from the read that returned it by ``LineTiming/arrival(ofByteAt:inReadOf:returnedAt:timing:)``,
/// or from a later read of the same stream when that gives an earlier time
/// (``ReadTimeline/arrival(ofByteAt:)``).
public struct ArrivalTime: Sendable, Hashable {
  /// The system time at which the byte arrived.
  public var time: PosixTime
  /// How far it was dated back from the time of the read that carried it (zero for the last
  /// byte of a read that no later read dates earlier, and for ``LineTiming/unpaced`` lines).
  public var backdating: Duration

  public init(time: PosixTime, backdating: Duration = .zero) {
    self.time = time
    self.backdating = backdating
  }
}

/// The reader's memory of its last reads, to date any recent byte of the stream.
///
/// The reader owns one per open port and calls ``recordRead(count:at:)`` right after every
/// `read()` that returned bytes, with `CLOCK_REALTIME` taken as soon as the call returned
/// (``PosixTime/now()``) and before the bytes are decoded. Bytes are numbered from 0 at the
/// port's opening (their *stream offset*), so an epoch whose first sentence began several
/// reads ago is still dated by the read that carried its first byte. It keeps the last
/// `capacity` reads and allocates nothing after it is made.
public struct ReadTimeline: Sendable {
  /// The line the bytes came over.
  public var timing: LineTiming

  private struct Read: Sendable {
    var end: UInt64  // stream offset just past the read's last byte
    var count: Int
    var time: PosixTime
  }

  private var reads: [Read]
  private var newest = -1
  private var stored = 0

  /// Bytes recorded since the port opened: the stream offset the next read starts at.
  public private(set) var streamOffset: UInt64 = 0

  public init(timing: LineTiming, capacity: Int = 64) {
    precondition(capacity > 0)
    self.timing = timing
    reads = Array(
      repeating: Read(end: 0, count: 0, time: PosixTime(seconds: 0)), count: capacity)
  }

  /// Notes that a read returned `count` bytes at `time` (`CLOCK_REALTIME`).
  public mutating func recordRead(count: Int, at time: PosixTime) {
    guard count > 0 else { return }
    streamOffset += UInt64(count)
    newest = (newest + 1) % reads.count
    reads[newest] = Read(end: streamOffset, count: count, time: time)
    stored = min(stored + 1, reads.count)
  }

  /// When the byte at `offset` of the stream arrived; `nil` when it has not been read yet or
  /// was read longer ago than the reads remembered.
  ///
  /// On a UART every read from the one that carried the byte to the newest bounds its arrival:
  /// a read's last byte arrived before the read returned, and the byte at `offset` at least one
  /// character time per byte between them before that, since a line carries no byte faster
  /// than its rate. A pause on the line only makes a bound later, never earlier, so the
  /// earliest bound is the arrival. It matters when the read that carried the byte returned
  /// late: the first bytes after a silence (an epoch's first sentence) wake a reader that has
  /// slept for most of a second, and that wake-up can take milliseconds (a CPU coming out of
  /// idle, a virtual CPU the host has to schedule), while the reads that follow in the same
  /// burst return at once. Without a line rate each byte is dated by the read that carried it.
  public func arrival(ofByteAt offset: UInt64) -> ArrivalTime? {
    guard offset < streamOffset else { return nil }
    var slot = newest
    var earliest: PosixTime?
    for _ in 0..<stored {
      let read = reads[slot]
      // Bounded by this read's last byte, `read.end - 1 - offset` characters after this one.
      let bound = read.time - timing.lineTime(ofBytes: Int(read.end - 1 - offset))
      if case .uart = timing, earliest.map({ bound < $0 }) ?? true { earliest = bound }
      let start = read.end - UInt64(read.count)
      if offset >= start {
        let arrived = earliest ?? bound
        return ArrivalTime(time: arrived, backdating: read.time - arrived)
      }
      slot = (slot - 1 + reads.count) % reads.count
    }
    return nil
  }

  /// Forgets every read (the port was reopened: stream offsets start again at 0).
  public mutating func reset() {
    streamOffset = 0
    newest = -1
    stored = 0
  }
}
