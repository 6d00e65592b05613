import NMEA
import POSIX
import Testing

@testable import SerialGPS

/// Collects what a subscription with raw data delivers.
final class RawEventLog: @unchecked Sendable {
  private let items = Locked<[ReceiverEventOrRawData]>([])
  private var task: Task<Void, Never>?

  init(_ sequence: ReceiverEventsWithRawData) {
    task = Task { [items] in
      for await item in sequence { items.withLock { $0.append(item) } }
    }
  }

  var all: [ReceiverEventOrRawData] { items.withLock { $0 } }
  var bytes: [UInt8] {
    all.flatMap { item -> [UInt8] in
      if case .rawData(let bytes) = item { return bytes } else { return [] }
    }
  }
  var fixCount: Int {
    all.filter { if case .event(.fix) = $0 { true } else { false } }.count
  }

  func stop() { task?.cancel() }
}

/// The opt-in raw bytes: exactly what was read, only to the subscriptions that asked, ahead of
/// the fixes decoded from them, and copied only while someone wants them.
@Suite struct RawDataTests {
  func makeReceiver() -> (GPSReceiver, MemoryConnector) {
    var options = GPSReceiver.Options()
    options.linger = .zero
    let connector = MemoryConnector()
    return (GPSReceiver(connector: connector, options: options, clock: ManualClock()), connector)
  }

  @Test func onlyTheAskingSubscriptionGetsTheBytesInOrderBeforeTheirFix() async throws {
    let (receiver, connector) = makeReceiver()
    let raw = RawEventLog(receiver.subscribeWithRawData())
    let plain = EventLog(receiver.subscribe())
    #expect(await eventually { connector.opens == 1 })
    #expect(receiver.core.hub.wantsRawData)
    // Noise and a sentence without a checksum are passed through too: the bytes are the
    // device's, not the decoder's.
    let stream = Array(("\u{1}junk\r\n$GPTXT,hello\r\n" + cycle(second: 1) + cycle(second: 2)).utf8)
    connector.latest!.feed(Array(stream[..<40]))
    #expect(await eventually { raw.bytes.count == 40 })
    connector.latest!.feed(Array(stream[40...]))
    #expect(await eventually { raw.fixCount >= 1 && plain.fixes.count >= 1 })
    #expect(await eventually { raw.bytes == stream })
    // The plain subscription saw the same fixes and nothing else.
    #expect(await eventually { plain.fixes.count == raw.fixCount })
    // The chunk that completed the first epoch came before its fix.
    let firstFix = raw.all.firstIndex { if case .event(.fix) = $0 { true } else { false } }!
    let before = raw.all[..<firstFix].flatMap { item -> [UInt8] in
      if case .rawData(let bytes) = item { return bytes } else { return [] }
    }
    #expect(before.count >= cycle(second: 1).utf8.count)
    raw.stop()
    #expect(await eventually { !receiver.core.hub.wantsRawData })
    plain.stop()
    await receiver.shutdown()
  }

  @Test func theCallbackFormsDeliverBytesOnlyWhenAsked() async throws {
    let (receiver, connector) = makeReceiver()
    let rawItems = Locked<[ReceiverEventOrRawData]>([])
    let plainEvents = Locked<[ReceiverEvent]>([])
    let raw = receiver.subscribeWithRawData { item in rawItems.withLock { $0.append(item) } }
    let plain = receiver.subscribe { event in plainEvents.withLock { $0.append(event) } }
    #expect(await eventually { connector.opens == 1 })
    let stream = Array((cycle(second: 1) + cycle(second: 2)).utf8)
    connector.latest!.feed(stream)
    #expect(
      await eventually {
        rawItems.withLock { items in
          items.flatMap { item -> [UInt8] in
            if case .rawData(let bytes) = item { return bytes } else { return [] }
          }
        } == stream
      })
    #expect(
      await eventually {
        plainEvents.withLock { $0.contains { if case .fix = $0 { true } else { false } } }
      })
    #expect(receiver.core.hub.wantsRawData)
    raw.cancel()
    #expect(await eventually { !receiver.core.hub.wantsRawData })
    plain.cancel()
    await receiver.shutdown()
  }
}
