import CTimeShims
import Foundation
import Glibc
import NMEA
import POSIX
import Testing

@testable import TimeService

@Suite("The time service of one receiver", .serialized)
struct TimeServiceTests {
  struct Setup {
    let directory: ScratchDirectory
    let serialSocket: DatagramReceiver
    let pulseSocket: DatagramReceiver
    let serialUnit: Int
    let pulseUnit: Int
    let service: TimeService
    let reports: Locked<[TimeReport]>

    init(offset: Duration) throws {
      directory = try ScratchDirectory("service")
      serialSocket = try DatagramReceiver(path: directory.path + "/chrony.clk.ttyS0.sock")
      pulseSocket = try DatagramReceiver(path: directory.path + "/chrony.ttyS0.sock")
      serialUnit = freeSharedMemoryUnit()
      pulseUnit = freeSharedMemoryUnit()
      let reports = Locked<[TimeReport]>([])
      self.reports = reports
      service = try TimeService(
        TimeServiceConfiguration(
          device: "/dev/ttyS0", offset: offset, chronySerialSocket: serialSocket.path,
          chronyPulseSocket: pulseSocket.path, ntpSerialUnit: serialUnit, ntpPulseUnit: pulseUnit),
        reports: { report in reports.withLock { $0.append(report) } })
    }

    func remove() {
      serialSocket.close()
      pulseSocket.close()
      removeSharedMemorySegment(serialUnit)
      removeSharedMemorySegment(pulseUnit)
      directory.remove()
    }
  }

  /// The offset field of the next datagram at `receiver`.
  func nextOffset(_ receiver: DatagramReceiver) -> Double? {
    receiver.receive().map {
      $0.withUnsafeBytes { $0.loadUnaligned(as: ctime_sock_sample.self).offset }
    }
  }

  /// The (real, clock) of an SHM unit's last sample.
  func shm(_ unit: Int) -> (real: PosixTime, clock: PosixTime)? {
    guard let segment = ctime_shm_attach(CInt(unit), 0o666) else { return nil }
    defer { _ = ctime_shm_detach(segment) }
    var values: (Int64, Int32, Int64, Int32, CInt, CInt) = (0, 0, 0, 0, 0, 0)
    guard
      ctime_shm_read(segment, &values.0, &values.1, &values.2, &values.3, &values.4, &values.5)
        == 1
    else { return nil }
    return (
      PosixTime(seconds: values.0, nanoseconds: Int64(values.1)),
      PosixTime(seconds: values.2, nanoseconds: Int64(values.3))
    )
  }

  /// A receiver 130 ms late with a PPS line: three epochs to settle, then samples and labelled
  /// pulses to both outputs each second; the fix lost for two seconds stops both.
  @Test func serialTimeAndPulsesReachEveryOutput() async throws {
    let setup = try Setup(offset: .milliseconds(120))
    defer { setup.remove() }
    let service = setup.service
    let source = ManualPPSSource()
    let listener = service.listen(to: source)
    defer { listener.stop() }

    var published: [Int64] = []
    for second: Int64 in 1...10 {
      // The pulse at the start of the second, on the listener's thread …
      source.emit(at: posix(december2 + second))
      #expect(await eventually { service.statistics.pulses == Int(second) })
      // … then the epoch naming it, its first byte 130 ms later (the fix lost at 6 and 7).
      let fix: EpochTime.FixValidity = (6...7).contains(second) ? .invalid : .valid
      let verdict = service.epoch(
        epochTime(second, fix: fix),
        firstByte: ArrivalTime(time: posix(december2 + second, ms: 130)))
      if case .sample = verdict { published.append(second) }
    }
    // Settling: 1, 2 before the first sample at 3; again 8, 9 after the loss.
    #expect(published == [3, 4, 5, 10])

    let statistics = service.statistics
    #expect(statistics.epochs == 10)
    #expect(statistics.samples == 4)
    #expect(statistics.rejections == [.settling: 4, .noFix: 2])
    // Pulses 1–3 came before trust (3 was before its epoch), 4–6 labelled, 7–10 after the
    // loss and during settling: only 4, 5 and 6 were labelled. Pulse 6 precedes the epoch
    // that lost the fix.
    #expect(statistics.pulses == 10)
    #expect(statistics.labelledPulses == 3)
    #expect(statistics.pulseDrops == [.noTrustedTime: 7])
    #expect(statistics.delayAgainstPulses.count == 2)  // epochs 4 and 5 after their pulses
    #expect(statistics.delayAgainstPulses.median == .milliseconds(130))
    #expect(statistics.delayAgainstSystemClock.median == .milliseconds(130))
    #expect(statistics.delayAgainstSystemClock.count == 4)

    // chrony: serial time with the 120 ms offset applied (10 ms left), pulses exact.
    for _ in published {
      #expect(nextOffset(setup.serialSocket).map { abs($0 + 0.010) < 1e-9 } == true)
    }
    for _ in 0..<3 { #expect(nextOffset(setup.pulseSocket) == 0) }
    #expect(setup.serialSocket.receive(timeout: 0) == nil)
    #expect(setup.pulseSocket.receive(timeout: 0) == nil)
    // SHM holds the last of each.
    #expect(shm(setup.serialUnit)?.real == posix(december2 + 10))
    #expect(shm(setup.serialUnit)?.clock == posix(december2 + 10, ms: 10))
    #expect(shm(setup.pulseUnit)?.real == posix(december2 + 6))
    #expect(shm(setup.pulseUnit)?.clock == posix(december2 + 6))

    // The reports, as gpsd's TOFF (raw: no offset) and PPS.
    let reports = setup.reports.withLock { $0 }
    let serialReports = reports.compactMap {
      if case .serial(let sample) = $0 { sample } else { nil }
    }
    #expect(serialReports.map(\.receiverTime) == published.map { posix(december2 + $0) })
    #expect(serialReports.allSatisfy { $0.lateness == .milliseconds(130) })
    let pulseReports = reports.compactMap {
      if case .pulse(let sample, let precision) = $0 { (sample.second, precision) } else { nil }
    }
    #expect(pulseReports.map(\.0) == [4, 5, 6].map { posix(december2 + $0) })
    #expect(pulseReports.allSatisfy { $0.1 == -20 })

    let outputs = Dictionary(uniqueKeysWithValues: statistics.outputs.map { ($0.name, $0) })
    #expect(outputs[setup.serialSocket.path]?.delivered == 4)
    #expect(outputs[setup.pulseSocket.path]?.delivered == 3)
    #expect(outputs["NTP\(setup.serialUnit)"]?.delivered == 4)
    #expect(outputs["NTP\(setup.pulseUnit)"]?.delivered == 3)
  }

  /// A u-blox TIM-TP announced the pulse's quantisation error: chrony and SHM get the edge
  /// corrected by it, gpsd's PPS report the edge as timestamped with the error beside it.
  @Test func aPulsesQuantisationErrorCorrectsWhatChronyAndNTPGet() throws {
    let setup = try Setup(offset: .zero)
    defer { setup.remove() }
    let service = setup.service
    for second: Int64 in 1...3 {
      service.epoch(
        epochTime(second), firstByte: ArrivalTime(time: posix(december2 + second, ms: 100)))
    }
    #expect(service.statistics.samples == 1)
    // The receiver says pulse 4 comes 250 ns before the true second; it comes.
    service.pulseAnnounced(
      PulseQuantisation(
        error: .nanoseconds(250), announced: posix(december2 + 3, ms: 600),
        second: posix(december2 + 4)))
    let edge = posix(december2 + 4) - .nanoseconds(250)
    guard case .labelled = service.pulse(Pulse(time: edge, sequence: 1)) else {
      Issue.record("pulse 4 not labelled: \(service.statistics)")
      return
    }
    #expect(service.statistics.quantisedPulses == 1)
    #expect(nextOffset(setup.pulseSocket) == 0)
    #expect(shm(setup.pulseUnit)?.real == posix(december2 + 4))
    #expect(shm(setup.pulseUnit)?.clock == posix(december2 + 4))
    let pulses = setup.reports.withLock { $0 }.compactMap {
      if case .pulse(let sample, _) = $0 { sample } else { nil }
    }
    #expect(pulses.map(\.pulse) == [edge])
    #expect(pulses.map(\.quantisationError) == [.nanoseconds(250)])
  }

  @Test func aClosedPortStartsTrustOver() throws {
    let setup = try Setup(offset: .zero)
    defer { setup.remove() }
    let service = setup.service
    for second: Int64 in 1...3 {
      service.epoch(
        epochTime(second), firstByte: ArrivalTime(time: posix(december2 + second, ms: 100)))
    }
    #expect(service.statistics.samples == 1)
    service.receiverClosed()
    #expect(
      service.pulse(Pulse(time: posix(december2 + 4), sequence: 1)) == .dropped(.noTrustedTime))
    #expect(
      service.epoch(epochTime(4), firstByte: ArrivalTime(time: posix(december2 + 4, ms: 100)))
        == .rejected(.settling))
  }

  @Test func gpsdsDefaults() {
    let configuration = TimeServiceConfiguration.gpsdDefaults(
      device: "/dev/ttyAMA0", receiverAt: 1, family: .ublox, offset: .milliseconds(80))
    let root = geteuid() == 0
    #expect(
      configuration.chronySerialSocket == (root ? "/run" : "/tmp") + "/chrony.clk.ttyAMA0.sock")
    #expect(configuration.chronyPulseSocket == (root ? "/run" : "/tmp") + "/chrony.ttyAMA0.sock")
    #expect(configuration.ntpSerialUnit == (root ? 2 : 4))
    #expect(configuration.ntpPulseUnit == (root ? 3 : 5))
    #expect(configuration.pulseOrder == .sentencesFollowPulse)
    #expect(configuration.offset == .milliseconds(80))
    #expect(configuration.trust.earliestDate == ReleaseDate.date)
  }
}
