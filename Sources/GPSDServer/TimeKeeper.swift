import Chipsets
import GPSDProtocol
import POSIX
import SerialGPS
import TimeService

extension GPSDServer {
  /// What `serve --time` asks of the time service (docs/time.md): every receiver served gets
  /// one, with its outputs where gpsd puts them unless told otherwise.
  public struct TimeOptions: Sendable, Hashable {
    /// The receiver's delay from the second's edge to its epoch's first byte, subtracted
    /// from each arrival (`--time-offset MS`): the median the statistics report.
    public var offset: Duration = .zero
    /// The chrony SOCK path for the first receiver's serial time (`--chrony-socket`); `nil`:
    /// gpsd's, `/run/chrony.clk.<tty>.sock` (`/tmp` when not root).
    public var chronySocket: String?
    /// The NTP SHM unit for the first receiver's serial time (`--ntp-shm`), its PPS on the
    /// next one, each further receiver two units on; `nil`: gpsd's units (0 and 1 as root,
    /// else 2 and 3, two more per receiver).
    public var ntpUnit: Int?
    /// The kernel PPS device of the first receiver (`--pps /dev/ppsN`); `nil`: the one the
    /// kernel ties to its tty (the PPS line discipline), if any, else the DCD line.
    public var ppsDevice: String?
    /// Whether receivers get PPS at all (`--pps none`: serial time only).
    public var pps = true
    /// Whether a receiver on a UART without a kernel PPS device gets PPS from its DCD line
    /// (`TIOCMIWAIT`), as gpsd does; a line that never changes costs one sleeping thread.
    public var carrierDetect = true
    /// The receivers' chipset, which says whether sentences follow or precede their pulse.
    public var family: ChipsetFamily = .nmea
    /// How often each receiver's figures go to the server's log; `nil`: never.
    public var reportInterval: Duration? = .seconds(600)

    public init() {}
  }

  /// Each receiver's time service figures (with `TimeOptions`), by device path; kept after
  /// ``shutdown()`` for a final report.
  public var timeStatistics: [(device: String, statistics: TimeServiceStatistics)] {
    timeKeeper?.statistics ?? []
  }
}

/// The time service of every receiver the server serves (`serve --time`).
///
/// For each receiver it is told of (``change(_:)``, the server's receiver changes) it makes a
/// `TimeService`, hands it to the receiver's reader (``GPSReceiver/timeService``), holds a
/// subscription for as long as it serves time — a time consumer never stops listening, so
/// the receiver stays powered whatever the gpsd clients do (docs/time.md). The service
/// listens to the receiver's PPS while its port is open (a kernel device, named or found,
/// else the DCD line of a UART). Trusted samples and labelled pulses are handed to
/// ``reports`` (gpsd's `TOFF` and `PPS` for watchers).
final class TimeKeeper: Sendable {
  private struct Served {
    let receiver: GPSReceiver
    let service: TimeService
    var subscription: Subscription?
  }

  private struct State {
    var served: [String: Served] = [:]
    /// Figures of receivers no longer served, for the final report.
    var finished: [String: TimeServiceStatistics] = [:]
    /// Each device keeps its index (and so its SHM units) across unplug and replug.
    var indices: [String: Int] = [:]
    var stopped = false
  }

  let options: GPSDServer.TimeOptions
  private let log: @Sendable (String) -> Void
  private let state = Locked(State())
  /// Where samples and pulses go (the server's loop); set once the loop exists.
  let reports = Locked<(@Sendable (String, TimeReport) -> Void)?>(nil)
  private let reporter = Locked<Task<Void, Never>?>(nil)

  init(options: GPSDServer.TimeOptions, log: @escaping @Sendable (String) -> Void) {
    self.options = options
    self.log = log
    if let interval = options.reportInterval {
      reporter.withLock {
        $0 = DriverExecutor.task { [weak self] in
          while (try? await SystemClock().sleep(for: interval)) != nil {
            guard let self else { return }
            for (device, figures) in self.statistics {
              self.log("serialgps serve: \(device): time: \(figures.summary)")
            }
          }
        }
      }
    }
  }

  func change(_ change: ServedReceiverChange) {
    switch change {
    case .added(let served): add(served.path, served.receiver)
    case .removed(let served): remove(served.path)
    }
  }

  private func add(_ path: String, _ receiver: GPSReceiver) {
    let index = state.withLock { state -> Int? in
      guard !state.stopped, state.served[path] == nil else { return nil }
      if let index = state.indices[path] { return index }
      let index = state.indices.count
      state.indices[path] = index
      return index
    }
    guard let index else { return }
    var configuration = TimeServiceConfiguration.gpsdDefaults(
      device: path, receiverAt: index, family: options.family, offset: options.offset)
    if index == 0, let socket = options.chronySocket { configuration.chronySerialSocket = socket }
    if let unit = options.ntpUnit {
      configuration.ntpSerialUnit = unit + 2 * index
      configuration.ntpPulseUnit = unit + 2 * index + 1
    }
    configuration.pps.device = index == 0 ? options.ppsDevice : nil
    configuration.pps.carrierDetect = options.carrierDetect
    if !options.pps {
      // No PPS source, so no PPS outputs either: no socket, no SHM unit made for nothing.
      configuration.pps = .none
      configuration.chronyPulseSocket = nil
      configuration.ntpPulseUnit = nil
    }
    let log = self.log
    let service: TimeService
    // An SHM unit that cannot be had (held by gpsd, of the wrong size, root's) costs that
    // output only: the chrony socket and the other unit are served all the same.
    while true {
      do {
        service = try TimeService(
          configuration,
          reports: { [weak self] report in
            guard let deliver = self?.reports.withLock({ $0 }) else { return }
            deliver(path, report)
          },
          log: { log("serialgps serve: \(path): \($0)") })
        break
      } catch {
        let unit = error.sharedMemoryUnit
        if let unit, unit == configuration.ntpSerialUnit {
          configuration.ntpSerialUnit = nil
        } else if let unit, unit == configuration.ntpPulseUnit {
          configuration.ntpPulseUnit = nil
        } else {
          log("serialgps serve: \(path): no time service: \(error)")
          return
        }
        log("serialgps serve: \(path): no NTP shared memory output: \(error)")
      }
    }
    // Before the subscription: the reader picks the service up when the port opens.
    receiver.timeService = service
    var served = Served(receiver: receiver, service: service)
    served.subscription = receiver.subscribe(bufferSize: 1) { _ in }
    let outputs = [
      configuration.chronySerialSocket, configuration.ntpSerialUnit.map { "NTP\($0)" },
    ].compactMap { $0 }.joined(separator: " and ")
    let pulseOutputs = [
      configuration.chronyPulseSocket, configuration.ntpPulseUnit.map { "NTP\($0)" },
    ].compactMap { $0 }.joined(separator: " and ")
    log(
      "serialgps serve: \(path): serving time to \(outputs.isEmpty ? "no output" : outputs) "
        + "(offset \(options.offset))"
        + (options.pps
          ? ", PPS to \(pulseOutputs.isEmpty ? "no output" : pulseOutputs)" : ", no PPS")
        + "; the receiver stays powered while serve runs")
    let late = state.withLock { state -> Bool in
      guard !state.stopped else { return true }
      state.served[path] = served
      return false
    }
    if late { stop(served) }
  }

  private func remove(_ path: String) {
    guard
      let served = state.withLock({ state -> Served? in
        guard let served = state.served.removeValue(forKey: path) else { return nil }
        state.finished[path] = served.service.statistics
        return served
      })
    else { return }
    stop(served)
    log("serialgps serve: \(path): time: \(served.service.statistics.summary)")
  }

  private func stop(_ served: Served) {
    served.subscription?.cancel()
    served.receiver.timeService = nil
  }

  /// Figures of every receiver served so far, by path.
  var statistics: [(device: String, statistics: TimeServiceStatistics)] {
    let (served, finished) = state.withLock { ($0.served, $0.finished) }
    var all = finished
    for (path, entry) in served { all[path] = entry.service.statistics }
    return all.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
  }

  /// Ends every subscription (the receivers are shut down by the server; each PPS listener
  /// ends when its port closes).
  func shutdown() async {
    reporter.withLock { $0 }?.cancel()
    let all = state.withLock { state -> [Served] in
      state.stopped = true
      return Array(state.served.values)
    }
    for served in all { served.subscription?.cancel() }
  }
}

extension DeviceTimeReport {
  /// gpsd's report of a time service's sample or pulse: TOFF carries the raw arrival (no
  /// offset applied), PPS the pulse's edge.
  init(_ report: TimeReport) {
    switch report {
    case .serial(let sample):
      self = .offset(real: GPSDTime(sample.receiverTime), clock: GPSDTime(sample.arrival))
    case .pulse(let sample, let precision):
      self = .pulse(
        real: GPSDTime(sample.second), clock: GPSDTime(sample.pulse), precision: Int(precision),
        quantizationError: sample.quantisationError.map { Int(($0 / .seconds(1) * 1e12).rounded()) }
      )
    }
  }
}

extension GPSDTime {
  init(_ time: PosixTime) {
    self.init(seconds: time.seconds, nanoseconds: Int(time.nanoseconds))
  }
}
