import NMEA
import Testing

@testable import SerialGPS

/// The opt-in raw bytes: exactly what was read, only to the subscriptions that asked, ahead of
/// the fixes decoded from them, and copied only while someone wants them.
@Suite struct RawDataTests {
  func makeReceiver() -> (GPSReceiver, MemoryConnector) {
    var options = GPSReceiver.Options()
    options.linger = .zero
    let connector = MemoryConnector()
    return (GPSReceiver(connector: connector, options: options, clock: ManualClock()), connector)
  }

  func rawBytes(_ log: EventLog) -> [UInt8] {
    log.all.flatMap { event -> [UInt8] in
      if case .rawData(let bytes) = event { return bytes } else { return [] }
    }
  }

  @Test func onlyTheAskingSubscriptionGetsTheBytesInOrderBeforeTheirFix() async throws {
    let (receiver, connector) = makeReceiver()
    let raw = EventLog(receiver.subscribe(includingRawData: true))
    let plain = EventLog(receiver.subscribe())
    #expect(await eventually { connector.opens == 1 })
    #expect(receiver.core.hub.wantsRawData)
    // Noise and a sentence without a checksum are passed through too: the bytes are the
    // device's, not the decoder's.
    let stream = Array(("\u{1}junk\r\n$GPTXT,hello\r\n" + cycle(second: 1) + cycle(second: 2)).utf8)
    connector.latest!.feed(Array(stream[..<40]))
    #expect(await eventually { rawBytes(raw).count == 40 })
    connector.latest!.feed(Array(stream[40...]))
    #expect(await eventually { raw.fixes.count >= 1 && plain.fixes.count >= 1 })
    #expect(await eventually { rawBytes(raw) == stream })
    #expect(!plain.all.contains { if case .rawData = $0 { true } else { false } })
    // The chunk that completed the first epoch came before its fix.
    let firstFix = raw.all.firstIndex { if case .fix = $0 { true } else { false } }!
    let before = raw.all[..<firstFix].flatMap { event -> [UInt8] in
      if case .rawData(let bytes) = event { return bytes } else { return [] }
    }
    #expect(before.count >= cycle(second: 1).utf8.count)
    raw.stop()
    #expect(await eventually { !receiver.core.hub.wantsRawData })
    plain.stop()
    await receiver.shutdown()
  }
}
