import Glibc
import NMEA
import POSIX
import SerialPort
import Testing
import TimeService

@testable import SerialGPS

/// The reader feeds the time service (docs/time.md, "The reader"): every read timed as it
/// returns, every epoch dated by the arrival of its first byte.
@Suite("The reader feeds the time service", .serialized)
struct TimeServiceReaderTests {
  /// Whether to hold the reader to a bound in milliseconds: not in `make test-tsan` (which
  /// sets TSAN_OPTIONS), where instrumented code on two shared cores was seen 250 ms late.
  static let timingChecked = getenv("TSAN_OPTIONS") == nil

  /// A sentence on the wire: `$body*HH\r\n`.
  static func wire(_ body: String) -> [UInt8] {
    let sum = NMEAChecksum.compute(body.utf8)
    let hex = String(sum, radix: 16, uppercase: true)
    return Array(("$" + body + "*" + (hex.count < 2 ? "0" : "") + hex + "\r\n").utf8)
  }

  /// `hhmmss` and `ddmmyy` of a POSIX second, in UTC.
  static func fields(_ seconds: Int64) -> (time: String, date: String) {
    var value = time_t(seconds)
    var broken = tm()
    gmtime_r(&value, &broken)
    func two(_ n: Int32) -> String { n < 10 ? "0\(n)" : "\(n)" }
    return (
      two(broken.tm_hour) + two(broken.tm_min) + two(broken.tm_sec),
      two(broken.tm_mday) + two(broken.tm_mon + 1) + two(broken.tm_year % 100)
    )
  }

  /// An epoch stamped `second`, as a MediaTek writes it: GGA first, then GSA and RMC.
  static func epoch(_ second: Int64) -> (first: [UInt8], rest: [UInt8]) {
    let (time, date) = fields(second)
    let gga = wire("GPGGA,\(time).000,4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,")
    let rest =
      wire("GPGSA,A,3,04,05,09,12,,,,,,,,,2.5,1.3,2.1")
      + wire("GPRMC,\(time).000,A,4807.038,N,01131.000,E,0.0,0.0,\(date),,,A")
    return (gga, rest)
  }

  /// Sleeps the calling thread until the system clock reads `time`.
  static func sleep(until time: PosixTime) {
    let left = time - PosixTime.now()
    if left > .zero { sleepThread(for: left) }
  }

  /// A time service whose serial samples are collected.
  static func service(device: String) throws -> (TimeService, Locked<[TimeSample]>) {
    let samples = Locked<[TimeSample]>([])
    let service = try TimeService(TimeServiceConfiguration(device: device)) { report in
      if case .serial(let sample) = report { samples.withLock { $0.append(sample) } }
    }
    return (service, samples)
  }

  @Test("on a pty, a sample's arrival is when the simulator wrote the epoch's first sentence")
  func ptyEpochDatedByItsFirstByte() async throws {
    let pty = try PseudoTerminal()
    let (service, samples) = try Self.service(device: pty.devicePath)
    var options = GPSReceiver.Options()
    options.linger = .zero
    let receiver = GPSReceiver(device: pty.devicePath, baud: .fixed(.b9600), options: options)
    receiver.timeService = service
    let subscription = receiver.subscribe { _ in }
    // Writing before the port is open would queue epochs for one late burst (slow starts
    // under ThreadSanitizer), whose arrivals trust refuses as jumps.
    #expect(await eventually { receiver.statistics.powerOns >= 1 })
    // The epoch's first sentence at 100 ms into its second, the rest 150 ms later: dating the
    // epoch by any later byte would be 150 ms off.
    let written = Locked<[Int64: PosixTime]>([:])
    let writer = OwnThread.start(name: "test-writer") {
      var second = PosixTime.now().seconds + 1
      for _ in 0..<6 {
        Self.sleep(until: PosixTime(seconds: second, nanoseconds: 100_000_000))
        let (first, rest) = Self.epoch(second)
        let instant = PosixTime.now()
        try? pty.write(first)
        written.withLock { $0[second] = instant }
        sleepThread(for: .milliseconds(150))
        try? pty.write(rest)
        second += 1
      }
    }
    #expect(await eventually(timeout: .seconds(15)) { samples.withLock { $0.count } >= 3 })
    await writer.join()
    subscription.cancel()
    await receiver.shutdown()

    let collected = samples.withLock { $0 }
    let instants = written.withLock { $0 }
    #expect(collected.count >= 3, "\(service.statistics)")
    // The reader's thread is scheduled within a millisecond on an idle machine; on two cores
    // shared with parallel builds and tests (load 9) it was seen 10–30 ms late. The bound
    // stays well below the 150 ms that dating by a later sentence would add.
    for sample in collected {
      let instant = try #require(instants[sample.receiverTime.seconds], "\(sample)")
      let error = sample.arrival - instant
      #expect(error >= .zero, "arrival \(error) before the write")
      if Self.timingChecked {
        #expect(error < .milliseconds(50), "arrival \(error) after the write")
      }
      #expect(sample.receiverTime == PosixTime(seconds: sample.receiverTime.seconds))
    }
    // A pty has no line rate: nothing was dated back.
    #expect(collected.allSatisfy { $0.arrival >= instants[$0.receiverTime.seconds]! })
  }

  @Test("a pty is read without back-dating")
  func ptyIsUnpaced() throws {
    let pty = try PseudoTerminal()
    let port = try SerialPort.open(path: pty.devicePath, baudRate: .b9600)
    let connection = SerialConnection(port: port)
    defer { connection.close() }
    #expect(connection.lineTiming == .unpaced)
  }

  /// Returns one epoch a second in one read, 400 ms into the second it names, as a UART at
  /// 9600 baud whose reads return a whole epoch at once; the seconds start after the first
  /// read (a reader that starts late must not get a burst of past epochs).
  final class ScheduledConnection: ReceiverConnection, @unchecked Sendable {
    private let lock = Lock()
    private var chunks: [(at: PosixTime, bytes: [UInt8])] = []
    private var epochs: Int
    private var interrupted = false
    /// When each epoch's first byte arrived on the simulated line, by second.
    private(set) var firstBytes: [Int64: PosixTime] = [:]

    init(epochs: Int) { self.epochs = epochs }

    var lineTiming: LineTiming { .uart(baud: 9600) }

    func firstByte(ofEpochAt second: Int64) -> PosixTime? { lock.withLock { firstBytes[second] } }

    func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
      lock.withLock {
        if epochs > 0 {
          let start = PosixTime.now().seconds + 1
          for second in start..<(start + Int64(epochs)) {
            let (first, rest) = TimeServiceReaderTests.epoch(second)
            let bytes = first + rest
            let returned = PosixTime(seconds: second, nanoseconds: 400_000_000)
            chunks.append((returned, bytes))
            firstBytes[second] =
              returned - .nanoseconds(Int64(bytes.count - 1) * 10 * 1_000_000_000 / 9600)
          }
          epochs = 0
        }
        while !interrupted {
          guard let next = chunks.first else {
            lock.wait()
            continue
          }
          let left = next.at - PosixTime.now()
          if left > .zero {
            _ = lock.wait(until: MonotonicInstant.now + left)
            continue
          }
          chunks.removeFirst()
          buffer.copyBytes(from: next.bytes)
          return next.bytes.count
        }
        interrupted = false
        return 0
      }
    }

    func write(_ bytes: [UInt8]) throws {}

    func interrupt() {
      lock.withLock {
        interrupted = true
        lock.broadcast()
      }
    }

    func close() {}
  }

  struct ScheduledConnector: ReceiverConnector {
    let connection: ScheduledConnection
    var deviceName: String { "scheduled" }
    func connect() async throws -> any ReceiverConnection { connection }
  }

  @Test("on a UART, the first byte of a read is dated back by the bytes after it at the line rate")
  func uartReadsAreDatedBack() async throws {
    let (service, samples) = try Self.service(device: "scheduled")
    // Each epoch in one read that returns 400 ms into its second: its first byte arrived
    // (N − 1) × 10 / 9600 s before that.
    let connection = ScheduledConnection(epochs: 6)
    var options = GPSReceiver.Options()
    options.linger = .zero
    options.chipset = .family(.nmea)
    let receiver = GPSReceiver(
      connector: ScheduledConnector(connection: connection), options: options)
    receiver.timeService = service
    let subscription = receiver.subscribe { _ in }
    #expect(await eventually(timeout: .seconds(15)) { samples.withLock { $0.count } >= 2 })
    subscription.cancel()
    await receiver.shutdown()
    let collected = samples.withLock { $0 }
    #expect(collected.count >= 2, "\(service.statistics)")
    for sample in collected {
      let arrival = try #require(connection.firstByte(ofEpochAt: sample.receiverTime.seconds))
      let error = sample.arrival - arrival
      // About 200 ms of back-dating; what is left is the reader's scheduling (see above).
      #expect(error >= .zero, "\(error) before the first byte")
      if Self.timingChecked { #expect(error < .milliseconds(50), "\(error) after the first byte") }
    }
  }

  /// A ``ScheduledConnection`` (a UART) whose port has modem lines: a pty's, which refuses
  /// TIOCMIWAIT as a driver without modem-status interrupts does.
  final class ModemLineConnection: ReceiverConnection, @unchecked Sendable {
    let base: ScheduledConnection
    let device: CInt
    let duplicates = Locked<[CInt]>([])
    init(base: ScheduledConnection, device: CInt) {
      self.base = base
      self.device = device
    }
    var lineTiming: LineTiming { base.lineTiming }
    func carrierDetectDescriptor() -> CInt? {
      let duplicate = fcntl(device, F_DUPFD_CLOEXEC, 0)
      duplicates.withLock { $0.append(duplicate) }
      return duplicate
    }
    func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
      try base.read(into: buffer)
    }
    func write(_ bytes: [UInt8]) throws {}
    func interrupt() { base.interrupt() }
    func close() {}
  }

  struct ModemLineConnector: ReceiverConnector {
    let connection: ModemLineConnection
    var deviceName: String { "scheduled" }
    func connect() async throws -> any ReceiverConnection { connection }
  }

  @Test("the reader starts the DCD source of a UART when the port opens and ends it when it closes")
  func readerWiresCarrierDetect() async throws {
    let pty = try PseudoTerminal()
    let device = open(pty.devicePath, O_RDWR | O_NOCTTY | O_NONBLOCK)
    try #require(device >= 0)
    defer { close(device) }
    let messages = Locked<[String]>([])
    let samples = Locked(0)
    var configuration = TimeServiceConfiguration(device: "scheduled")
    configuration.pps = PPSOptions(carrierDetect: true)
    let service = try TimeService(
      configuration,
      reports: { report in if case .serial = report { samples.withLock { $0 += 1 } } },
      log: { line in messages.withLock { $0.append(line) } })
    let connection = ModemLineConnection(base: ScheduledConnection(epochs: 5), device: device)
    var options = GPSReceiver.Options()
    options.linger = .zero
    options.chipset = .family(.nmea)
    let receiver = GPSReceiver(
      connector: ModemLineConnector(connection: connection), options: options)
    receiver.timeService = service
    let subscription = receiver.subscribe { _ in }
    // The port's driver refuses TIOCMIWAIT: said once, and serial time goes on.
    #expect(await eventually { messages.withLock { $0.count } >= 2 })
    #expect(await eventually(timeout: .seconds(15)) { samples.withLock { $0 } >= 1 })
    subscription.cancel()
    await receiver.shutdown()
    #expect(
      messages.withLock { $0 }.first == "PPS from the carrier-detect (DCD) line of scheduled")
    #expect(messages.withLock { $0 }.last?.hasPrefix("no PPS: scheduled cannot report") == true)
    #expect(messages.withLock { $0 }.count == 2)
    // One duplicate of the port's descriptor was asked for, and the listener is gone with
    // the port (that its source is released then: PPSWiringTests).
    let duplicates = connection.duplicates.withLock { $0 }
    #expect(duplicates.count == 1 && duplicates[0] >= 0)
    #expect(!service.listensForPulses)
  }

  // MARK: - Bytes heard during the baud search

  @Test("the baud search times each read as it returns, and hands the times on with the bytes")
  func baudSearchTimesItsReads() throws {
    let pty = try PseudoTerminal()
    let halves = Self.epoch(1_796_169_600)  // a GGA, then a GSA and an RMC
    let sentences = halves.first + halves.rest
    let written = Locked<[PosixTime]>([])
    // One sentence, then two more 200 ms later: the search recognises the rate only at its
    // second read (it waits for two sentences), so a time taken when the search ends would
    // date the first read 200 ms late.
    let writer = OwnThread.start(name: "test-writer") {
      sleepThread(for: .milliseconds(200))
      for half in [halves.first, halves.rest] {
        written.withLock { $0.append(.now()) }
        try? pty.write(half, timeout: .milliseconds(200))
        sleepThread(for: .milliseconds(200))
      }
    }
    defer { writer.joinBlocking() }
    var memory = BaudRateMemory()
    let opened = try SerialConnector.openPort(
      path: pty.devicePath, baud: .automatic(candidates: [.b9600], timePerRate: .seconds(5)),
      memory: &memory)
    defer { opened.port.close() }
    let returned = PosixTime.now()
    let writes = written.withLock { $0 }
    try #require(writes.count == 2 && opened.detection?.rate == .b9600)
    #expect(opened.heard == sentences)
    #expect(opened.heardReads.map(\.count).reduce(0, +) == sentences.count)
    let first = try #require(opened.heardReads.first)
    #expect(first.count == halves.first.count)
    #expect(first.time >= writes[0] && first.time <= returned)
    if Self.timingChecked {
      #expect(first.time - writes[0] < .milliseconds(100), "read \(first.time - writes[0]) late")
    }
    #expect(opened.heardReads.last!.time >= writes[1])

    // The connection hands each heard read out on its own, with its time; then reads the port.
    let connection = SerialConnection(
      port: opened.port, heard: opened.heard, heardReads: opened.heardReads)
    let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 4096, alignment: 1)
    defer { buffer.deallocate() }
    for read in opened.heardReads {
      #expect(try connection.read(into: buffer) == read.count)
      #expect(connection.timeOfBytesLastRead() == read.time)
    }
    try pty.write(halves.first, timeout: .milliseconds(200))
    #expect(try connection.read(into: buffer) == halves.first.count)
    #expect(connection.timeOfBytesLastRead() == nil)
  }

  /// A connector that gives one connection, made beforehand.
  struct GivenConnector: ReceiverConnector {
    let connection: any ReceiverConnection
    var deviceName: String { "heard" }
    func connect() async throws -> any ReceiverConnection { connection }
  }

  @Test("epochs heard during the baud search are dated by the search's reads, not the reader's")
  func heardEpochsKeepTheirReadTimes() async throws {
    let pty = try PseudoTerminal()
    let port = try SerialPort.open(path: pty.devicePath, baudRate: .b9600)
    // Five epochs heard during a search, one read each, 100 ms into its second, the last a
    // few seconds ago; the reader gets them all at its first reads, now.
    let last = PosixTime.now().seconds - 3
    var heard: [UInt8] = []
    var reads: [SerialConnector.HeardRead] = []
    for second in (last - 4)...last {
      let (first, rest) = Self.epoch(second)
      heard += first + rest
      reads.append(
        .init(
          count: first.count + rest.count,
          time: PosixTime(seconds: second, nanoseconds: 100_000_000)))
    }
    let connection = SerialConnection(port: port, heard: heard, heardReads: reads)
    let (service, samples) = try Self.service(device: pty.devicePath)
    var options = GPSReceiver.Options()
    options.linger = .zero
    options.chipset = .family(.nmea)
    let receiver = GPSReceiver(connector: GivenConnector(connection: connection), options: options)
    receiver.timeService = service
    let subscription = receiver.subscribe { _ in }
    // Trust takes three steady epochs (rule 9): dated by the first reads of the reader, all
    // within a millisecond, their offsets would differ by a second each and start trust over.
    #expect(await eventually(timeout: .seconds(10)) { samples.withLock { $0.count } >= 2 })
    subscription.cancel()
    await receiver.shutdown()
    let collected = samples.withLock { $0 }
    #expect(collected.count >= 2, "\(service.statistics)")
    for sample in collected {
      // A pty has no line rate: the epoch's first byte is dated by the read that brought it.
      #expect(
        sample.arrival == PosixTime(seconds: sample.receiverTime.seconds, nanoseconds: 100_000_000))
    }
  }
}
