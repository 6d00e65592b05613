import Chipsets
import NMEA
import Testing
import TimeService

@testable import SerialGPS

/// The reader hands a u-blox `UBX-TIM-TP` to the time service (docs/time.md, "Quantisation
/// error"): the pulse it announces is corrected by its `qErr`.
@Suite struct PulseQuantisationReaderTests {
  /// A connection that is never read: the test feeds the timekeeping itself.
  final class IdleConnection: ReceiverConnection, @unchecked Sendable {
    var lineTiming: LineTiming { .unpaced }
    func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int { 0 }
    func write(_ bytes: [UInt8]) throws {}
    func interrupt() {}
    func close() {}
  }

  /// 2026-12-02 00:00:00 UTC.
  static let december2: Int64 = 1_796_169_600

  /// TIM-TP for the pulse at POSIX second `second`, UTC time base, `qErr` in picoseconds.
  static func timTP(pulseAt second: Int64, picoseconds: Int32) throws -> [UInt8] {
    let sinceGPSEpoch = second - 315_964_800
    let week = UInt16(sinceGPSEpoch / 604_800)
    let towMS = UInt32(sinceGPSEpoch % 604_800) * 1000
    var payload: [UInt8] = []
    payload += withUnsafeBytes(of: towMS.littleEndian, Array.init)
    payload += [0, 0, 0, 0]  // towSubMS
    payload += withUnsafeBytes(of: picoseconds.littleEndian, Array.init)
    payload += withUnsafeBytes(of: week.littleEndian, Array.init)
    payload += [0x03, 0x00]  // UTC time base, UTC available; refInfo
    return try UBX.frame(UBXMessageID(0x0D, 0x01), payload: payload)
  }

  @Test("a TIM-TP read from the receiver corrects the pulse it announces")
  func timTPReachesTheLabeller() throws {
    let service = try TimeService(TimeServiceConfiguration(device: "idle"))
    var timekeeping = ReaderTimekeeping(service: service, connection: IdleConnection())
    defer { timekeeping.connectionClosed() }
    let base = Self.december2
    // Three epochs of trusted serial time, 100 ms after their seconds.
    for second: Int64 in 1...3 {
      let time = UTCTime(hour: 0, minute: 0, second: UInt8(second), nanoseconds: 0)
      service.epoch(
        EpochTime(
          time: time, date: UTCDate(year: 2026, month: 12, day: 2), dateSource: .rmc,
          fix: .valid),
        firstByte: ArrivalTime(
          time: PosixTime(seconds: base + second, nanoseconds: 100_000_000)))
    }
    #expect(service.statistics.samples == 1)
    // TIM-TP for the pulse at second 4, read 600 ms into second 3: the edge 1375 ps late.
    let frame = try Self.timTP(pulseAt: base + 4, picoseconds: -1375)
    timekeeping.readReturned(
      count: frame.count, at: PosixTime(seconds: base + 3, nanoseconds: 600_000_000))
    var decoder = NMEADecoder()
    var sawTimTP = false
    decoder.decode(frame) { event in
      if case .ubxMessage(.timTP) = event { sawTimTP = true }
      timekeeping.observe(event)
    }
    #expect(sawTimTP)
    let decision = service.pulse(Pulse(time: PosixTime(seconds: base + 4), sequence: 1))
    guard case .labelled(let sample) = decision else {
      Issue.record("pulse not labelled: \(decision)")
      return
    }
    #expect(
      sample.quantisationError
        == Duration(secondsComponent: 0, attosecondsComponent: -1_375_000_000))
    #expect(sample.edge == PosixTime(seconds: base + 3, nanoseconds: 999_999_999))
    #expect(service.statistics.quantisedPulses == 1)
  }
}
