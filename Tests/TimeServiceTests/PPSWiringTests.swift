import Glibc
import POSIX
import SerialPort
import Testing

@testable import TimeService

/// Which PPS source a served receiver gets, how a failed kernel device is tried again, and how
/// the carrier-detect listener ends with its port (docs/time.md, "PPS").
@Suite("PPS sources of a served receiver")
struct PPSWiringTests {
  // MARK: - The choice

  @Test func theChoiceFollowsGpsdsOrder() {
    let uart = LineTiming.uart(baud: 9600)
    // A device named by the user beats one found through sysfs, and both beat DCD.
    #expect(
      PPSChoice.choose(named: "/dev/pps0", found: "/dev/pps1", line: uart, carrierDetect: true)
        == .kernel(device: "/dev/pps0"))
    #expect(
      PPSChoice.choose(named: nil, found: "/dev/pps1", line: uart, carrierDetect: true)
        == .kernel(device: "/dev/pps1"))
    // A named device is used on any line, even without modem lines (a pps-gpio on a ttyACM).
    #expect(
      PPSChoice.choose(named: "/dev/pps0", found: nil, line: .unpaced, carrierDetect: false)
        == .kernel(device: "/dev/pps0"))
    // DCD only on a UART (modem lines and a line rate), and only when asked for.
    #expect(
      PPSChoice.choose(named: nil, found: nil, line: uart, carrierDetect: true) == .carrierDetect)
    #expect(
      PPSChoice.choose(named: nil, found: nil, line: uart, carrierDetect: false) == PPSChoice.none)
    // ttyACM and ptys are unpaced: no modem lines to listen to.
    #expect(
      PPSChoice.choose(named: nil, found: nil, line: .unpaced, carrierDetect: true)
        == PPSChoice.none)
  }

  @Test func gpsdDefaultsLookForKernelPPSThenDCD() {
    let defaults = TimeServiceConfiguration.gpsdDefaults(device: "/dev/ttyS0").pps
    #expect(defaults.findsKernelDevice && defaults.carrierDetect && defaults.device == nil)
    // A library user's configuration listens to nothing unless told.
    #expect(TimeServiceConfiguration(device: "/dev/ttyS0").pps == .none)
  }

  // MARK: - Retry

  @Test func retryWaitsDoubleUpToTheLongestAndReportOncePerOutage() {
    var retry = PPSRetry(first: .seconds(1), longest: .seconds(8))
    var waits: [Duration] = []
    var reports: [Bool] = []
    for _ in 0..<6 {
      let (wait, report) = retry.failed()
      waits.append(wait)
      reports.append(report)
    }
    #expect(waits == [1, 2, 4, 8, 8, 8].map { Duration.seconds($0) })
    #expect(reports == [true, false, false, false, false, false])
    let ended = retry.pulsed()
    let endedAgain = retry.pulsed()
    #expect(ended && !endedAgain)  // the outage ends, once
    let (wait, report) = retry.failed()
    #expect(wait == .seconds(1) && report)
  }

  /// A kernel device that is there, vanishes (ENODEV, then ENOENT while it is gone) and comes
  /// back: its pulses resume, each outage is reported once, and the listener waits as the
  /// retry says (the pauses are recorded, not slept).
  final class Device: @unchecked Sendable {
    enum Step { case pulse(Int64), fail(Errno) }
    /// What each opening does: a list of steps for the source it opens, or an error.
    private let openings: Locked<[Result<[Step], Errno>]>
    let opened = Locked(0)

    init(_ openings: [Result<[Step], Errno>]) { self.openings = Locked(openings) }

    func open() throws(TimeServiceError) -> any PPSSource {
      opened.withLock { $0 += 1 }
      let next = openings.withLock { $0.isEmpty ? nil : $0.removeFirst() }
      switch next {
      case .success(let steps)?: return Source(steps: steps)
      case .failure(let error)?: throw .ppsOpen(path: "/dev/pps0", error)
      case nil: return Source(steps: [])  // stays silent
      }
    }

    final class Source: PPSSource, @unchecked Sendable {
      let name = "/dev/pps0"
      private var steps: [Step]
      init(steps: [Step]) { self.steps = steps }
      func nextPulse(timeout: Duration) throws(TimeServiceError) -> Pulse? {
        guard !steps.isEmpty else {
          sleepThread(for: .milliseconds(5))
          return nil
        }
        switch steps.removeFirst() {
        case .pulse(let second):
          return Pulse(time: posix(december2 + second), sequence: UInt64(second))
        case .fail(let error): throw .ppsFailed(path: name, operation: "PPS_FETCH", error)
        }
      }
    }
  }

  @Test func aKernelDeviceThatFailsIsOpenedAgainAndItsPulsesResume() async {
    let device = Device([
      .success([.pulse(1), .pulse(2), .fail(.noSuchDevice)]),
      .failure(.noSuchFileOrDirectory), .failure(.noSuchFileOrDirectory),
      .success([.pulse(6), .fail(.noSuchDevice)]),
      .failure(.noSuchFileOrDirectory),
      .success([.pulse(9), .pulse(10)]),
    ])
    let pulses = Locked<[UInt64]>([])
    let events = Locked<[PulseListenerEvent]>([])
    let pauses = Locked<[Duration]>([])
    let listener = PulseListener.start(
      opening: { () throws(TimeServiceError) in try device.open() },
      retry: PPSRetry(first: .seconds(1), longest: .seconds(30)),
      pulse: { pulse in pulses.withLock { $0.append(pulse.sequence) } },
      events: { event in events.withLock { $0.append(event) } },
      pause: { length in pauses.withLock { $0.append(length) } })
    #expect(await eventually { pulses.withLock { $0 } == [1, 2, 6, 9, 10] })
    listener.stopAndWait()
    #expect(device.opened.withLock { $0 } == 6)
    // Each outage: backoff from the first wait, counted from its first failure.
    #expect(pauses.withLock { $0 } == [1, 2, 4, 1, 2].map { Duration.seconds($0) })
    let gone = TimeServiceError.ppsFailed(path: "/dev/pps0", operation: "PPS_FETCH", .noSuchDevice)
    #expect(
      events.withLock { $0 } == [
        .failed(gone, retryingIn: .seconds(1)), .resumed, .failed(gone, retryingIn: .seconds(1)),
        .resumed,
      ])
  }

  @Test func aListenerWithoutRetryEndsAtTheFirstFailure() async {
    let device = Device([.failure(.noSuchFileOrDirectory), .success([.pulse(1)])])
    let events = Locked<[PulseListenerEvent]>([])
    let listener = PulseListener.start(
      opening: { () throws(TimeServiceError) in try device.open() }, retry: nil,
      pulse: { _ in Issue.record("no pulse expected") },
      events: { event in events.withLock { $0.append(event) } })
    await listener.finished()
    #expect(device.opened.withLock { $0 } == 1)
    #expect(
      events.withLock { $0 } == [
        .failed(.ppsOpen(path: "/dev/pps0", .noSuchFileOrDirectory), retryingIn: nil)
      ])
  }

  /// A kernel device named but absent is tried again while the port is open, reported once,
  /// and the retry's wait ends as soon as the port closes.
  @Test func aServiceRetriesItsNamedDeviceUntilThePortCloses() async throws {
    let messages = Locked<[String]>([])
    var configuration = TimeServiceConfiguration(device: "/dev/ttyS0")
    configuration.pps = PPSOptions(
      device: "/dev/pps-absent", retry: PPSRetry(first: .milliseconds(20), longest: .seconds(60)))
    let service = try TimeService(
      configuration, log: { line in messages.withLock { $0.append(line) } })
    service.portOpened(line: .unpaced, carrierDetectDescriptor: { nil })
    #expect(service.listensForPulses)
    // The waits grow past a second after a few attempts; closing must not wait for them.
    try await Task.sleep(for: .milliseconds(400))
    let closing = ContinuousClock.now
    service.receiverClosed()
    #expect(ContinuousClock.now - closing < .milliseconds(500))
    #expect(!service.listensForPulses)
    let lines = messages.withLock { $0 }
    #expect(lines.first == "PPS from /dev/pps-absent")
    #expect(
      lines.filter { $0.hasPrefix("PPS from /dev/pps-absent failed: cannot open") }.count == 1)
    #expect(lines.count == 2)
  }

  // MARK: - Carrier detect

  /// A DCD line that never changes: `stopAndWait()` wakes the thread out of its wait (here a
  /// blocking `read` of a pipe standing in for `TIOCMIWAIT`, which a signal interrupts the
  /// same way) and returns once the source, and its descriptor, are released.
  @Test func aSilentCarrierLineStopsWhenItsPortCloses() async throws {
    var ends: (CInt, CInt) = (-1, -1)
    try withUnsafeMutableBytes(of: &ends) { raw in
      try #require(pipe(raw.baseAddress!.assumingMemoryBound(to: CInt.self)) == 0)
    }
    defer { close(ends.1) }
    let readEnd = ends.0
    let waits = Locked(0)
    let released = Locked(false)
    // Made in the call: the listener must hold the only reference.
    let listener = PulseListener.start(
      CarrierDetectPPSSource(
        path: "/dev/ttyS0", edge: .assert,
        waitForChange: { () throws(Errno) in
          waits.withLock { $0 += 1 }
          var byte: UInt8 = 0
          if read(readEnd, &byte, 1) < 0, errno == EINTR { return nil }
          throw Errno.ioError
        },
        release: {
          close(readEnd)
          released.withLock { $0 = true }
        }),
      pulse: { _ in Issue.record("no pulse expected") },
      failure: { error in Issue.record("unexpected failure: \(error)") })
    #expect(await eventually { waits.withLock { $0 } >= 1 })
    try await Task.sleep(for: .milliseconds(50))  // well inside its read
    #expect(!released.withLock { $0 })
    let stopping = ContinuousClock.now
    listener.stopAndWait()
    #expect(ContinuousClock.now - stopping < .seconds(1))
    #expect(released.withLock { $0 })
  }

  /// A port whose driver refuses TIOCMIWAIT (a pty here) is reported once, however often the
  /// port opens, and serial time goes on without PPS.
  @Test func aRefusedCarrierLineIsReportedOnceAndSerialTimeGoesOn() async throws {
    let pty = try PseudoTerminal()
    let device = open(pty.devicePath, O_RDWR | O_NOCTTY | O_NONBLOCK)
    try #require(device >= 0)
    defer { close(device) }
    let messages = Locked<[String]>([])
    var configuration = TimeServiceConfiguration(device: pty.devicePath)
    configuration.pps = PPSOptions(carrierDetect: true)
    let service = try TimeService(
      configuration, log: { line in messages.withLock { $0.append(line) } })
    let duplicates = Locked(0)
    var second: Int64 = 0
    var samples = 0
    for _ in 0..<3 {
      // As the reader of a UART would: the line is said to have modem lines.
      service.portOpened(
        line: .uart(baud: 9600),
        carrierDetectDescriptor: {
          duplicates.withLock { $0 += 1 }
          return fcntl(device, F_DUPFD_CLOEXEC, 0)
        })
      #expect(await eventually { messages.withLock { $0.contains { $0.hasPrefix("no PPS: ") } } })
      for _ in 0..<4 {
        second += 1
        let verdict = service.epoch(
          epochTime(second), firstByte: ArrivalTime(time: posix(december2 + second, ms: 100)))
        if case .sample = verdict { samples += 1 }
      }
      service.receiverClosed()
    }
    // Trust starts over at each opening: the third epoch gives the first sample (rule 9).
    #expect(samples == 6)
    #expect(duplicates.withLock { $0 } == 1)  // not tried again after the refusal
    let lines = messages.withLock { $0 }
    #expect(lines.count == 2)
    #expect(lines.first == "PPS from the carrier-detect (DCD) line of \(pty.devicePath)")
    #expect(lines.last?.contains("cannot report carrier-detect changes") == true)
    #expect(lines.last?.hasSuffix("serving serial time without PPS") == true)
  }
}
