import Chipsets
import Glibc
import NMEA
import POSIX

/// What the time service is told to do for one receiver.
public struct TimeServiceConfiguration: Sendable, Hashable {
  /// The receiver's device path, as reports name it.
  public var device: String
  /// The receiver's delay from the start of a second to the first byte of its epoch
  /// (`--time-offset MS`): subtracted from each arrival before serial time is published. The
  /// figure to use is the median of ``TimeServiceStatistics/delayAgainstPulses`` (or, with
  /// an otherwise synchronised clock, ``TimeServiceStatistics/delayAgainstSystemClock``).
  /// Set it here or as chrony's `offset` / ntpd's `time1`, not both.
  public var offset: Duration
  /// When an epoch's time is trusted.
  public var trust: TimeTrustRules
  /// Whether the receiver's sentences follow or precede the pulse that starts their second.
  public var pulseOrder: PulseOrder
  /// chrony SOCK path for serial time; `nil` for none.
  public var chronySerialSocket: String?
  /// chrony SOCK path for PPS; `nil` for none.
  public var chronyPulseSocket: String?
  /// NTP SHM unit for serial time; `nil` for none.
  public var ntpSerialUnit: Int?
  /// NTP SHM unit for PPS; `nil` for none.
  public var ntpPulseUnit: Int?
  /// The precision written to SHM and reported with PPS: gpsd's −20 (1 µs), or −10 (1 ms)
  /// for a pulse that crossed USB.
  public var pulsePrecision: Int32
  /// Where the service takes pulses from while its receiver's port is open
  /// (``TimeService/portOpened(line:carrierDetectDescriptor:)``).
  public var pps: PPSOptions = .none

  public init(
    device: String, offset: Duration = .zero, trust: TimeTrustRules = TimeTrustRules(),
    pulseOrder: PulseOrder = .sentencesFollowPulse, chronySerialSocket: String? = nil,
    chronyPulseSocket: String? = nil, ntpSerialUnit: Int? = nil, ntpPulseUnit: Int? = nil,
    pulsePrecision: Int32 = NTPSharedMemory.pulsePrecision
  ) {
    self.device = device
    self.offset = offset
    self.trust = trust
    self.pulseOrder = pulseOrder
    self.chronySerialSocket = chronySerialSocket
    self.chronyPulseSocket = chronyPulseSocket
    self.ntpSerialUnit = ntpSerialUnit
    self.ntpPulseUnit = ntpPulseUnit
    self.pulsePrecision = pulsePrecision
  }

  /// Every output where gpsd would put it, for the receiver at `index` (0 for the first) of
  /// chipset `family`: chrony sockets `/run/chrony.clk.<tty>.sock` and `/run/chrony.<tty>.sock`
  /// (`/tmp` when not root), SHM units 2·index and 2·index + 1 (2 more when not root); PPS
  /// as gpsd takes it: the kernel device tied to the tty, else the DCD line of a UART.
  public static func gpsdDefaults(
    device: String, receiverAt index: Int = 0, family: ChipsetFamily = .nmea,
    offset: Duration = .zero
  ) -> TimeServiceConfiguration {
    let units = NTPSharedMemory.units(forReceiverAt: index)
    var configuration = TimeServiceConfiguration(
      device: device, offset: offset, pulseOrder: .of(family),
      chronySerialSocket: ChronySocket.serialTimePath(forDevice: device),
      chronyPulseSocket: ChronySocket.ppsPath(forDevice: device),
      ntpSerialUnit: units.serial, ntpPulseUnit: units.pulse)
    configuration.pps = PPSOptions(findsKernelDevice: true, carrierDetect: true)
    return configuration
  }
}

/// Where a time service takes pulses from while its receiver's port is open.
public struct PPSOptions: Sendable, Hashable {
  /// A kernel PPS device given by name (`--pps /dev/pps0`: a `pps-gpio` overlay names no tty).
  public var device: String?
  /// Whether to look for the kernel PPS device tied to the receiver's tty through sysfs (the
  /// PPS line discipline: `ldattach PPS /dev/ttyS0`).
  public var findsKernelDevice: Bool
  /// Whether to listen to the DCD line of a UART (`TIOCMIWAIT`) when there is no kernel
  /// device, as gpsd does. A line that never changes costs one sleeping thread.
  public var carrierDetect: Bool
  /// How a kernel device that fails is tried again.
  public var retry: PPSRetry
  /// The edge that marks the second.
  public var edge: PPSEdge

  public init(
    device: String? = nil, findsKernelDevice: Bool = false, carrierDetect: Bool = false,
    retry: PPSRetry = PPSRetry(), edge: PPSEdge = .assert
  ) {
    self.device = device
    self.findsKernelDevice = findsKernelDevice
    self.carrierDetect = carrierDetect
    self.retry = retry
    self.edge = edge
  }

  /// No PPS (pulses only through ``TimeService/listen(to:failure:)``).
  public static let none = PPSOptions()
}

/// The PPS source a time service listens to while its receiver's port is open.
public enum PPSChoice: Sendable, Hashable {
  /// A kernel PPS device (RFC 2783).
  case kernel(device: String)
  /// The DCD line of the receiver's own serial port, through `TIOCMIWAIT`.
  case carrierDetect
  /// None.
  case none

  /// The best source there is, in gpsd's order: a kernel device named by the user, else the
  /// one the kernel ties to the tty (`found`, through sysfs), else the DCD line of a port with
  /// modem lines and a line rate (`line` is `.uart`: a UART, also behind a USB bridge; never
  /// `ttyACM` or a pty), else none. A pure function of what the caller found.
  public static func choose(
    named: String?, found: String?, line: LineTiming, carrierDetect: Bool
  ) -> PPSChoice {
    if let named { return .kernel(device: named) }
    if let found { return .kernel(device: found) }
    if carrierDetect, case .uart = line { return .carrierDetect }
    return .none
  }
}

/// A time sample or a pulse as gpsd reports them to its watchers (`TOFF` and `PPS`).
public enum TimeReport: Sendable, Hashable {
  /// A trusted serial sample, for gpsd's `TOFF`: `real` is the receiver's time, `clock` the
  /// arrival of the epoch's first byte, with no offset applied.
  case serial(TimeSample)
  /// A labelled pulse, as gpsd's `PPS`, with the precision to report.
  case pulse(PPSSample, precision: Int32)
}

/// How one output fared.
public struct OutputStatistics: Sendable, Hashable {
  /// Where the samples go: a socket path or `NTP<unit>`.
  public var name: String
  /// Samples handed to chronyd or written to the segment.
  public var delivered = 0
  /// chrony SOCK only: samples that found no chronyd.
  public var noListener = 0
  /// Samples lost to an error (chronyd's queue full, no permission …).
  public var failed = 0
  /// The last such error, for people.
  public var lastError: String?

  public init(name: String) { self.name = name }
}

/// The figures of a time service.
public struct TimeServiceStatistics: Sendable, Hashable {
  /// Epochs judged.
  public var epochs = 0
  /// Epochs whose time was trusted and published.
  public var samples = 0
  /// Epochs refused, by reason.
  public var rejections: [TimeRejection: Int] = [:]
  /// The receiver's delay measured against the system clock (right only when something
  /// else keeps the clock right).
  public var delayAgainstSystemClock = DelayStatistics()
  /// The receiver's delay measured against its PPS edges (exact).
  public var delayAgainstPulses = DelayStatistics()
  /// Pulses from the PPS source.
  public var pulses = 0
  /// Pulses labelled and published.
  public var labelledPulses = 0
  /// Of those, pulses corrected by the receiver's quantisation error (u-blox `UBX-TIM-TP`).
  public var quantisedPulses = 0
  /// Pulses dropped, by reason.
  public var pulseDrops: [PulseDrop: Int] = [:]
  /// The outputs: chrony sockets and SHM units, serial first.
  public var outputs: [OutputStatistics] = []

  public init() {}
}

/// The time service of one receiver: trusted serial time and labelled PPS to chrony and ntpd.
///
/// The reader hands it every epoch with the arrival of the epoch's first byte
/// (``epoch(_:firstByte:)``, on the reader's thread); a ``PulseListener`` hands it every
/// pulse (``pulse(_:)``, on the listener's thread). It judges the time (``TimeTrust``),
/// publishes trusted samples to the chrony socket and the SHM unit for serial time with the
/// configured offset applied, labels pulses (``PulseLabeller``) and publishes them to the PPS
/// socket and unit, measures the receiver's delay, and tells ``reports`` about each sample
/// and pulse (gpsd's `TOFF` and `PPS`), outside its locks.
///
/// The serial side and the pulse side each have their own lock, each taken by one thread
/// only, so neither waits for the other; they share only the labeller, under a lock held for
/// a few comparisons. Writing to a chrony socket is a non-blocking `send`, and to SHM a few
/// stores: neither can stall the reader.
public final class TimeService: Sendable {
  /// What the service was told to do.
  public let configuration: TimeServiceConfiguration
  private let reports: (@Sendable (TimeReport) -> Void)?

  private struct SerialSide {
    var trust: TimeTrust
    var delay = ReceiverDelay()
    var epochs = 0
    var chrony: ChronySocket?
    var chronyFailures = FirstFailures()
    var shm: NTPSharedMemory?
  }

  private struct PulseSide {
    var pulses = 0
    var delay = ReceiverDelay()
    var chrony: ChronySocket?
    var chronyFailures = FirstFailures()
    var shm: NTPSharedMemory?
  }

  /// Which kinds of chrony failure were said already: the first of each is logged when it
  /// happens, the others only counted (in the statistics).
  private struct FirstFailures {
    private var said: Set<ChronySocket.Outcome> = []

    /// `outcome` when it is a failure of a kind not said before.
    mutating func first(_ outcome: ChronySocket.Outcome) -> ChronySocket.Outcome? {
      if case .sent = outcome { return nil }
      return said.insert(outcome).inserted ? outcome : nil
    }
  }

  /// A chrony failure in words for the log.
  private static func describe(_ outcome: ChronySocket.Outcome, at path: String) -> String {
    switch outcome {
    case .sent:
      return "chronyd at \(path) takes samples"
    case .noListener:
      return
        "no chronyd listens at \(path) (not started yet, or its refclock SOCK names another "
        + "path): samples are counted, and sent once chronyd is there"
    case .failed(let error):
      let hint: String
      switch error.rawValue {
      case EACCES, EPERM:
        hint =
          ": chronyd makes its socket as root with mode 0755; run serve as root, or give the "
          + "socket to serve's user after chronyd starts"
      case EAGAIN:
        hint = ": chronyd does not read its socket as fast as samples come"
      default:
        hint = ""
      }
      return
        "cannot send samples to chronyd at \(path): \(error)\(hint); later failures of this "
        + "kind are only counted (the time report)"
    }
  }

  private let serial: Locked<SerialSide>
  private let pulses: Locked<PulseSide>
  private let labeller: Locked<PulseLabeller>
  private let log: (@Sendable (String) -> Void)?

  private struct PortSide {
    /// Listening while the port is open.
    var listener: PulseListener?
    /// The port's driver refused TIOCMIWAIT once (a pty, a driver without modem-status
    /// interrupts): it will again, so the line is not tried on later opens.
    var carrierDetectRefused = false
  }

  private let port = Locked(PortSide())

  /// Opens the configured SHM units (the chrony sockets are connected at the first sample).
  ///
  /// - Parameters:
  ///   - reports: called for each published sample and pulse, on the thread that produced
  ///     it, with no lock held: gpsd's `TOFF` and `PPS` for watchers that asked for
  ///     `"pps":true`.
  ///   - log: what people should know when it happens, one line each, without the device's
  ///     name first: each step of the receiver's time or the system clock and what was made
  ///     of it (``TimeStep``), the first chrony failure of each kind (later ones are counted),
  ///     the PPS source (which one is used, a failure once per outage, its return).
  public init(
    _ configuration: TimeServiceConfiguration,
    reports: (@Sendable (TimeReport) -> Void)? = nil,
    log: (@Sendable (String) -> Void)? = nil
  ) throws(TimeServiceError) {
    self.configuration = configuration
    self.reports = reports
    self.log = log
    var serialSide = SerialSide(trust: TimeTrust(rules: configuration.trust))
    var pulseSide = PulseSide()
    serialSide.chrony = configuration.chronySerialSocket.map { ChronySocket(path: $0) }
    pulseSide.chrony = configuration.chronyPulseSocket.map { ChronySocket(path: $0) }
    if let unit = configuration.ntpSerialUnit {
      serialSide.shm = try NTPSharedMemory(unit: unit, precision: NTPSharedMemory.serialPrecision)
    }
    if let unit = configuration.ntpPulseUnit {
      pulseSide.shm = try NTPSharedMemory(unit: unit, precision: configuration.pulsePrecision)
    }
    serial = Locked(serialSide)
    pulses = Locked(pulseSide)
    labeller = Locked(
      PulseLabeller(order: configuration.pulseOrder, offset: configuration.offset))
  }

  /// Judges one epoch and publishes its time when trusted. Call it on the reader's thread for
  /// every epoch, with the arrival of the epoch's first byte (`nil` when unknown).
  @discardableResult
  public func epoch(_ time: EpochTime, firstByte: ArrivalTime?) -> TimeVerdict {
    let offset = configuration.offset
    let clockOffset = System.systemClockOffset()
    let (verdict, trusted, step, news) = serial.withLock {
      side -> (TimeVerdict, Bool, TimeStep?, String?) in
      side.epochs += 1
      let verdict = side.trust.judge(time, arrival: firstByte, systemClockOffset: clockOffset)
      var news: String?
      if case .sample(let sample) = verdict {
        side.delay.add(sample.lateness)
        let clock = sample.arrival - offset
        if let chrony = side.chrony {
          news = side.chronyFailures.first(chrony.send(real: sample.receiverTime, clock: clock))
            .map { Self.describe($0, at: chrony.path) }
        }
        side.shm?.write(real: sample.receiverTime, clock: clock)
      }
      return (verdict, side.trust.isTrusted, side.trust.lastStep, news)
    }
    if let step { log?(step.description) }
    if let news { log?(news) }
    switch verdict {
    case .sample(let sample):
      let delay = labeller.withLock { labeller -> Duration? in
        // A pulse is never named from the time before a step.
        if step != nil { labeller.serialTrustLost() }
        return labeller.serial(sample)
      }
      if let delay { pulses.withLock { $0.delay.add(delay) } }
      reports?(.serial(sample))
    case .rejected:
      if !trusted || step != nil { labeller.withLock { $0.serialTrustLost() } }
    }
    return verdict
  }

  /// Labels one pulse and publishes it when labelled. Call it on the PPS listener's thread.
  @discardableResult
  public func pulse(_ pulse: Pulse) -> PulseDecision {
    let (decision, delay) = labeller.withLock { labeller -> (PulseDecision, Duration?) in
      let decision = labeller.pulse(pulse)
      return (decision, labeller.delayOfLastLabel)
    }
    var news: String?
    pulses.withLock { side in
      side.pulses += 1
      guard case .labelled(let sample) = decision else { return }
      if let delay { side.delay.add(delay) }
      if let chrony = side.chrony {
        news = side.chronyFailures.first(chrony.send(real: sample.second, clock: sample.edge))
          .map { Self.describe($0, at: chrony.path) }
      }
      side.shm?.write(real: sample.second, clock: sample.edge)
    }
    if let news { log?(news) }
    if case .labelled(let sample) = decision {
      reports?(.pulse(sample, precision: configuration.pulsePrecision))
    }
    return decision
  }

  /// Takes the receiver's announcement of its next pulse's quantisation error (u-blox
  /// `UBX-TIM-TP`), on the reader's thread: that pulse goes to chrony and ntpd corrected by
  /// it (``PPSSample/edge``), and gpsd's `PPS` report carries it as `qErr`.
  public func pulseAnnounced(_ announcement: PulseQuantisation) {
    labeller.withLock { $0.quantisation(announcement) }
  }

  /// Starts a ``PulseListener`` that feeds this service from `source`; `failure` hears of a
  /// source that fails (the device vanished).
  public func listen(
    to source: any PPSSource, failure: @escaping @Sendable (TimeServiceError) -> Void = { _ in }
  ) -> PulseListener {
    PulseListener.start(source, pulse: { [self] in self.pulse($0) }, failure: failure)
  }

  /// The receiver's port opened, on a line of `line`'s kind: starts listening to the PPS
  /// source ``PPSChoice/choose(named:found:line:carrierDetect:)`` picks from
  /// ``TimeServiceConfiguration/pps``, until ``receiverClosed()``. A kernel device that fails
  /// is tried again with backoff; the DCD line listens on `carrierDetectDescriptor()`, a
  /// duplicate of the port's descriptor that the source owns (`nil`: the port has none).
  /// Call it on the reader's thread, before its first read.
  public func portOpened(line: LineTiming, carrierDetectDescriptor: () -> CInt?) {
    let options = configuration.pps
    let found =
      options.device == nil && options.findsKernelDevice
      ? KernelPPSSource.device(forTTY: configuration.device) : nil
    let refused = port.withLock { $0.carrierDetectRefused }
    let choice = PPSChoice.choose(
      named: options.device, found: found, line: line,
      carrierDetect: options.carrierDetect && !refused)
    let listener: PulseListener
    switch choice {
    case .none:
      return
    case .kernel(let device):
      let edge = options.edge
      log?("PPS from \(device)")
      listener = PulseListener.start(
        opening: { () throws(TimeServiceError) in try KernelPPSSource(path: device, edge: edge) },
        retry: options.retry, pulse: { [self] in self.pulse($0) },
        events: { [log] event in
          switch event {
          case .failed(let error, let wait):
            let retrying =
              wait.map {
                "; trying again (after \($0), up to every \(options.retry.longest)) while the receiver is served"
              } ?? ""
            log?("PPS from \(device) failed: \(error)\(retrying)")
          case .resumed:
            log?("PPS from \(device) resumed")
          }
        })
    case .carrierDetect:
      guard let descriptor = carrierDetectDescriptor() else { return }
      let source = CarrierDetectPPSSource(
        ownDescriptor: descriptor, path: configuration.device, edge: options.edge)
      log?("PPS from the carrier-detect (DCD) line of \(configuration.device)")
      listener = PulseListener.start(
        source, pulse: { [self] in self.pulse($0) },
        failure: { [self] error in
          if case .carrierDetectUnsupported = error {
            self.port.withLock { $0.carrierDetectRefused = true }
            self.log?("no PPS: \(error); serving serial time without PPS")
          } else {
            self.log?("PPS from the DCD line stopped: \(error)")
          }
        })
    }
    let previous = port.withLock { port -> PulseListener? in
      defer { port.listener = listener }
      return port.listener
    }
    previous?.stopAndWait()
  }

  /// The receiver's port closed (or the receiver changed): trust starts over, and pulses are
  /// dropped until it is established again. The PPS listener that ``portOpened(line:carrierDetectDescriptor:)``
  /// started is stopped and its thread waited for (a few milliseconds), so that its
  /// duplicate of the port's descriptor is closed before the port is.
  public func receiverClosed() {
    serial.withLock { $0.trust.reset() }
    labeller.withLock { $0.serialTrustLost() }
    let listener = port.withLock { port -> PulseListener? in
      defer { port.listener = nil }
      return port.listener
    }
    listener?.stopAndWait()
  }

  /// Whether a PPS source started by ``portOpened(line:carrierDetectDescriptor:)`` is being
  /// listened to.
  public var listensForPulses: Bool { port.withLock { $0.listener != nil } }

  /// The figures so far.
  public var statistics: TimeServiceStatistics {
    var statistics = TimeServiceStatistics()
    serial.withLock { side in
      statistics.epochs = side.epochs
      statistics.samples = side.trust.samples
      statistics.rejections = side.trust.rejections
      statistics.delayAgainstSystemClock = side.delay.statistics
      if let chrony = side.chrony { statistics.outputs.append(Self.figures(of: chrony)) }
      if let shm = side.shm { statistics.outputs.append(Self.figures(of: shm)) }
    }
    labeller.withLock { labeller in
      statistics.labelledPulses = labeller.labelled
      statistics.quantisedPulses = labeller.quantised
      statistics.pulseDrops = labeller.drops
    }
    pulses.withLock { side in
      statistics.pulses = side.pulses
      statistics.delayAgainstPulses = side.delay.statistics
      if let chrony = side.chrony { statistics.outputs.append(Self.figures(of: chrony)) }
      if let shm = side.shm { statistics.outputs.append(Self.figures(of: shm)) }
    }
    return statistics
  }

  private static func figures(of chrony: ChronySocket) -> OutputStatistics {
    var figures = OutputStatistics(name: chrony.path)
    figures.delivered = chrony.sent
    figures.noListener = chrony.noListener
    figures.failed = chrony.failed
    figures.lastError = chrony.lastError?.description
    return figures
  }

  private static func figures(of shm: NTPSharedMemory) -> OutputStatistics {
    var figures = OutputStatistics(name: "NTP\(shm.unit)")
    figures.delivered = shm.written
    return figures
  }
}
