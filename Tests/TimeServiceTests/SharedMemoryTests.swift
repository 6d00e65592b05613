import CTimeShims
import Foundation
import Glibc
import POSIX
import Testing
import TimeService

@Suite("NTP shared memory", .serialized)
struct SharedMemoryTests {
  /// Reads the unit's segment as ntpd's mode 1 reader does.
  func read(_ unit: Int) throws -> (
    real: PosixTime, clock: PosixTime, leap: Int32, precision: Int32, count: Int32, mode: Int32
  )? {
    guard let segment = ctime_shm_attach(CInt(unit), 0o666) else { return nil }
    defer { _ = ctime_shm_detach(segment) }
    var clockSeconds: Int64 = 0
    var clockNanoseconds: Int32 = 0
    var receiveSeconds: Int64 = 0
    var receiveNanoseconds: Int32 = 0
    var leap: CInt = 0
    var precision: CInt = 0
    let status = ctime_shm_read(
      segment, &clockSeconds, &clockNanoseconds, &receiveSeconds, &receiveNanoseconds, &leap,
      &precision)
    guard status == 1 else { return nil }
    return (
      PosixTime(seconds: clockSeconds, nanoseconds: Int64(clockNanoseconds)),
      PosixTime(seconds: receiveSeconds, nanoseconds: Int64(receiveNanoseconds)), leap,
      precision, segment.pointee.count, segment.pointee.mode
    )
  }

  @Test func writesNtpdsModeOneProtocol() throws {
    let unit = freeSharedMemoryUnit()
    defer { removeSharedMemorySegment(unit) }
    let shm = try NTPSharedMemory(unit: unit, precision: -10)
    #expect(try read(unit) == nil)  // prepared, not valid yet
    let real = PosixTime(seconds: 1_796_169_601)
    let clock = PosixTime(seconds: 1_796_169_601, nanoseconds: 123_456_789)
    shm.write(real: real, clock: clock)
    let first = try #require(try read(unit))
    #expect(first.real == real)
    #expect(first.clock == clock)
    #expect(first.leap == 0)
    #expect(first.precision == -10)
    #expect(first.mode == 1)
    #expect(first.count == 2)  // raised before and after the times
    shm.write(real: real + .seconds(1), clock: clock + .seconds(1), leap: 1)
    let second = try #require(try read(unit))
    #expect(second.real == real + .seconds(1))
    #expect(second.leap == 1)
    #expect(second.count == 4)
    #expect(shm.written == 2)
    // The microsecond fields carry the same times for readers that know no nanoseconds.
    let segment = try #require(ctime_shm_attach(CInt(unit), 0o666))
    defer { _ = ctime_shm_detach(segment) }
    #expect(segment.pointee.receiveTimeStampUSec == 123_456)
    #expect(segment.pointee.nsamples == 3)
    // Units 2 and above are anyone's, as ntpd makes them.
    #expect(ctime_shm_permissions(CInt(unit)) == 0o666)
  }

  /// Units 0 and 1 are root's. Checked only where no ntpd, chronyd or gpsd holds NTP0.
  @Test(.enabled(if: geteuid() == 0 && !sharedMemorySegmentExists(0)))
  func unitZeroIsRootsOnly() throws {
    defer { removeSharedMemorySegment(0) }
    _ = try NTPSharedMemory(unit: 0, precision: -10)
    #expect(ctime_shm_permissions(0) == 0o600)
  }

  @Test func unitsAsGpsdChoosesThem() {
    #expect(NTPSharedMemory.units(forReceiverAt: 0, asRoot: true) == (0, 1))
    #expect(NTPSharedMemory.units(forReceiverAt: 1, asRoot: true) == (2, 3))
    #expect(NTPSharedMemory.units(forReceiverAt: 0, asRoot: false) == (2, 3))
    #expect(NTPSharedMemory.units(forReceiverAt: 1, asRoot: false) == (4, 5))
    #expect(NTPSharedMemory.key(ofUnit: 2) == 0x4E54_5032)
  }

  @Test func errorsSayWhatToDo() {
    #expect(throws: TimeServiceError.sharedMemoryUnitOutOfRange(256)) {
      _ = try NTPSharedMemory(unit: 256, precision: -10)
    }
    #expect(
      TimeServiceError.sharedMemoryNeedsRoot(unit: 1).description
        == "NTP shared memory unit 1 is root's (ntpd makes units 0 and 1 mode 0600): run as root, or use unit 2 or above"
    )
    // A segment that cannot be attached: how to remove it, by its key (0x4e545032 is NTP2).
    let foreign = TimeServiceError.sharedMemory(unit: 2, .permissionDenied).description
    #expect(foreign.hasPrefix("cannot attach NTP shared memory unit 2 (NTP2): "))
    #expect(
      foreign.hasSuffix(
        ": the segment belongs to another user (remove it with ipcrm -M 0x4e545032 when nothing uses it, or run as its owner)"
      ))
    #expect(
      TimeServiceError.sharedMemory(unit: 2, .invalidArgument).description.hasSuffix(
        ": a segment of another size holds the key (remove it with ipcrm -M 0x4e545032 when nothing uses it)"
      ))
  }

  /// gpsd's ntpshmmon reads the segment exactly as ntpd does and prints every new sample.
  @Test(.enabled(if: Tools.gpsdTools, "ntpshmmon (Debian's gpsd package) is not installed"))
  func ntpshmmonReadsTheSamples() async throws {
    let unit = freeSharedMemoryUnit()
    defer { removeSharedMemorySegment(unit) }
    let ntpshmmon = try #require(Tools.ntpshmmon)
    let stop = Locked(false)
    // How many samples the writer has written; -1: it could not attach the segment.
    let written = Locked(0)
    // Samples whose true time is the system time + 150 ms, 20 a second, until ntpshmmon
    // has seen enough. The writer belongs to the thread that writes.
    let writer = Thread {
      guard let shm = try? NTPSharedMemory(unit: unit, precision: -10) else {
        written.withLock { $0 = -1 }
        return
      }
      while !stop.withLock({ $0 }) && written.withLock({ $0 }) < 400 {
        let now = PosixTime.now()
        shm.write(real: now + .milliseconds(150), clock: now)
        written.withLock { $0 += 1 }
        usleep(50_000)
      }
    }
    writer.start()
    defer { stop.withLock { $0 = true } }
    // ntpshmmon starts once samples flow: a loaded machine may start the writer late.
    let deadline = ContinuousClock.now + .seconds(10)
    while written.withLock({ $0 }) == 0 && ContinuousClock.now < deadline {
      try await Task.sleep(for: .milliseconds(10))
    }
    try #require(written.withLock { $0 } > 0, "the writer could not attach unit \(unit)")
    // Bounded by time, not by a count: ntpshmmon counts the samples of every unit, and other
    // tests may be writing theirs.
    let run = try await onThread { try Tools.run(ntpshmmon, ["-t", "2"]) }
    stop.withLock { $0 = true }
    let samples = run.output.split(separator: "\n").filter {
      $0.hasPrefix("sample \(ntpshmmonName(unit)) ")
    }
    #expect(samples.count >= 4, "ntpshmmon printed: \(run.output) \(run.error)")
    for line in samples {
      // sample NTPn seen@ clock real leap precision
      let fields = line.split(separator: " ", omittingEmptySubsequences: true)
      try #require(fields.count == 7)
      let clock = try #require(Self.parse(fields[3]))
      let real = try #require(Self.parse(fields[4]))
      #expect(real - clock == .milliseconds(150), "\(line)")
      #expect(fields[5] == "0")
      #expect(fields[6] == "-10")
    }
  }

  static func parse(_ text: Substring) -> PosixTime? {
    let parts = text.split(separator: ".")
    guard parts.count == 2, let seconds = Int64(parts[0]), parts[1].count == 9,
      let nanoseconds = Int64(parts[1])
    else { return nil }
    return PosixTime(seconds: seconds, nanoseconds: nanoseconds)
  }
}
