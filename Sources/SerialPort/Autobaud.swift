/// Finds a receiver's baud rate by listening: never writes a byte, since writing probe strings
/// to a device not yet known to be a GPS receiver can switch modems and other serial devices
/// into odd states.
///
/// At each candidate rate it sets the port to that rate, discards what arrived before, and
/// reads for at most `timePerRate`, handing the bytes received at that rate so far to
/// `recognises` after every read. The first rate at which `recognises` says yes is the answer.
/// The module knows nothing of NMEA, so the caller supplies the test, typically "a sentence
/// with a valid checksum": at a wrong rate the UART delivers garbage (or framing-error bytes),
/// in which a checksum-valid sentence essentially never appears.
///
/// The search stops early for ``SerialPort/interrupt()`` and ``SerialPort/close()``, and is
/// otherwise bounded by the number of rates times `timePerRate` (plus the time to change rates).
///
/// A receiver that is silent (in standby, or not a receiver at all) cannot be found this way;
/// the search fails with ``SerialPortError/Reason/nothingRecognised(triedRates:timePerRate:)``.
public enum Autobaud {
  /// The rates tried, most common first: 9600 (u-blox, MediaTek, most USB receivers), 4800
  /// (the NMEA 0183 standard, SiRF), then the faster rates receivers are commonly set to.
  public static let defaultCandidates: [BaudRate] = [
    .b9600, .b4800, .b38400, .b115200, .b57600, .b19200, .b230400, .b460800, .b921600,
  ]

  /// Long enough to catch at least one whole sentence from a receiver reporting once a
  /// second, wherever in its cycle listening starts.
  public static let defaultTimePerRate: Duration = .seconds(2)

  /// How many of the most recent bytes at a rate `recognises` is shown.
  public static let window = 4096

  /// What a successful search found.
  public struct Detection: Hashable, Sendable {
    /// The rate at which the data was recognised.
    public let rate: BaudRate
    /// Every rate listened to, in order, ending with ``rate``.
    public let triedRates: [BaudRate]
    /// Every byte received at ``rate`` while listening, in order: already the receiver's data,
    /// for a caller that must not lose it (a recording). At most what `timePerRate` brings.
    public let heard: [UInt8]
    /// How many bytes each read at ``rate`` brought, in order (they add up to `heard`): the
    /// last `heardReads.count` calls of `readReturned`, for a caller that dates each read.
    public let heardReads: [Int]

    public init(rate: BaudRate, triedRates: [BaudRate], heard: [UInt8], heardReads: [Int]) {
      precondition(heardReads.reduce(0, +) == heard.count, "the reads bring every heard byte")
      self.rate = rate
      self.triedRates = triedRates
      self.heard = heard
      self.heardReads = heardReads
    }
  }

  /// Opens `path`, finds its rate, closes it again (restoring its settings), and remembers the
  /// rate in `memory`, trying the remembered rate first.
  ///
  /// - Parameters:
  ///   - candidates: rates to try, in order, after the remembered one.
  ///   - timePerRate: the longest time spent listening at each rate.
  ///   - memory: rates that worked before, by device; updated on success.
  ///   - recognises: whether the bytes received at the current rate so far (the last
  ///     ``window`` of them) contain what the device should send.
  public static func detect(
    path: String, candidates: [BaudRate] = defaultCandidates,
    timePerRate: Duration = defaultTimePerRate, memory: inout BaudRateMemory,
    recognises: ([UInt8]) -> Bool
  ) throws(SerialPortError) -> Detection {
    // Any rate will do for opening: the search sets each one in turn.
    let port = try SerialPort.open(path: path, baudRate: .b9600)
    defer { port.close() }
    return try detect(
      on: port, candidates: candidates, timePerRate: timePerRate, memory: &memory,
      recognises: recognises)
  }

  /// ``detect(path:candidates:timePerRate:memory:recognises:)`` without memory.
  public static func detect(
    path: String, candidates: [BaudRate] = defaultCandidates,
    timePerRate: Duration = defaultTimePerRate, recognises: ([UInt8]) -> Bool
  ) throws(SerialPortError) -> Detection {
    var memory = BaudRateMemory()
    return try detect(
      path: path, candidates: candidates, timePerRate: timePerRate, memory: &memory,
      recognises: recognises)
  }

  /// Finds the rate of an open port and leaves the port at it. On failure the port is put back
  /// at the rate it had. Must be called from the port's reader (it reads).
  ///
  /// - Parameter readReturned: called with the count as soon as a read returns bytes, at any
  ///   rate, before they are looked at: a caller that dates bytes by their read (the time
  ///   service) takes its clock here, as the reader does after each of its reads.
  public static func detect(
    on port: SerialPort, candidates: [BaudRate] = defaultCandidates,
    timePerRate: Duration = defaultTimePerRate, memory: inout BaudRateMemory,
    readReturned: (_ count: Int) -> Void = { _ in }, recognises: ([UInt8]) -> Bool
  ) throws(SerialPortError) -> Detection {
    let originalRate = port.baudRate
    var tried: [BaudRate] = []
    var chunk = [UInt8](repeating: 0, count: 1024)
    var received: [UInt8] = []
    received.reserveCapacity(window + chunk.count)
    // All of it, not only the window `recognises` is shown: bounded by time × rate.
    var heard: [UInt8] = []
    var heardReads: [Int] = []

    for rate in memory.searchOrder(for: port.path, candidates: candidates) {
      do {
        try port.setBaudRate(rate)
      } catch  where error.reason == .unsupportedBaudRate(rate) {
        continue  // the driver cannot do this rate, so the receiver is not using it here
      }
      try port.flushInput()
      tried.append(rate)
      received.removeAll(keepingCapacity: true)
      heard.removeAll(keepingCapacity: true)
      heardReads.removeAll(keepingCapacity: true)
      let deadline = ContinuousClock.now.advanced(by: timePerRate)

      listening: while true {
        let result = chunk.withUnsafeMutableBytes { buffer in
          Result { () throws(SerialPortError) in try port.read(into: buffer, deadline: deadline) }
        }
        switch try result.get() {
        case .received(let count):
          readReturned(count)
          received.append(contentsOf: chunk[..<count])
          heard.append(contentsOf: chunk[..<count])
          heardReads.append(count)
          if received.count > window { received.removeFirst(received.count - window) }
          if recognises(received) {
            memory.remember(rate, for: port.path)
            return Detection(
              rate: rate, triedRates: tried, heard: heard, heardReads: heardReads)
          }
        case .timedOut:
          break listening
        case .interrupted:
          try? port.setBaudRate(originalRate)
          throw SerialPortError(device: port.path, operation: .autobaud, reason: .interrupted)
        }
      }
    }
    try? port.setBaudRate(originalRate)
    throw SerialPortError(
      device: port.path, operation: .autobaud,
      reason: .nothingRecognised(triedRates: tried, timePerRate: timePerRate))
  }
}
