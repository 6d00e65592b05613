import Foundation
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
    #expect(receiver.core.hub.wants.rawData)
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
    #expect(await eventually { !receiver.core.hub.wants.rawData })
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
    #expect(receiver.core.hub.wants.rawData)
    raw.cancel()
    #expect(await eventually { !receiver.core.hub.wants.rawData })
    plain.cancel()
    await receiver.shutdown()
  }

  /// `subscribeOnReaderThread(sentences:)`: the sentences the reader's framer accepted, as
  /// they arrived (`*hh` as sent, CR LF), whole across reads, without noise, binary frames or
  /// sentences whose checksum is wrong or missing; an epoch's sentences before its fix; and
  /// all of it delivered on the reader thread itself, with no task in between.
  @Test func sentencesComeFramedByTheReaderOnItsThread() async throws {
    let (receiver, connector) = makeReceiver()
    let items = Locked<[ReceiverEventOrRawData]>([])
    let threads = Locked<Set<String>>([])
    let direct = receiver.subscribeOnReaderThread(sentences: true) { item in
      let name = (try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)) ?? "?"
      if case .event(.status) = item {
      } else {
        threads.withLock { _ = $0.insert(name.trimmingCharacters(in: .whitespacesAndNewlines)) }
      }
      items.withLock { $0.append(item) }
    }
    #expect(await eventually { connector.opens == 1 })
    #expect(receiver.core.hub.wants == (rawData: false, sentences: true))
    // A checksum in lowercase hex is valid and passed on as sent.
    let sum = String(NMEAChecksum.compute(Array("GPTXT,01,01,02,hello".utf8)), radix: 16)
    let lowercase =
      "$GPTXT,01,01,02,hello*" + String(repeating: "0", count: 2 - sum.count) + sum + "\r\n"
    let first = cycle(second: 1)
    let stream =
      "\u{1}junk\r\n$GPTXT,no checksum\r\n$GPGGA,bad*00\r\n" + lowercase + first + cycle(second: 2)
    let bytes = Array(stream.utf8)
    // Split right after a '$': the sentence must still come out whole.
    let split = bytes.lastIndex(of: UInt8(ascii: "$"))! + 1
    connector.latest!.feed(Array(bytes[..<split]))
    connector.latest!.feed(Array(bytes[split...]))
    let expected = lowercase + first + cycle(second: 2)
    @Sendable func sentences() -> String {
      items.withLock { items in
        items.map { item -> String in
          if case .sentences(let bytes) = item {
            String(decoding: bytes, as: UTF8.self)
          } else {
            ""
          }
        }.joined()
      }
    }
    #expect(await eventually { sentences() == expected })
    // The first fix comes after the sentences that completed its epoch (until the decoder
    // knows the cycle, the next cycle's first sentence ends it) and before the rest.
    let all = items.withLock { $0 }
    let firstFix = try #require(
      all.firstIndex { if case .event(.fix) = $0 { true } else { false } })
    let before = all[..<firstFix].map { item -> String in
      if case .sentences(let bytes) = item { String(decoding: bytes, as: UTF8.self) } else { "" }
    }.joined()
    let next = Array(cycle(second: 2).utf8)
    let nextRMC = String(decoding: next[...next.firstIndex(of: 0x0A)!], as: UTF8.self)
    #expect(before == lowercase + first + nextRMC)
    #expect(!all.contains { if case .rawData = $0 { true } else { false } }, "no bytes unasked")
    #expect(threads.withLock { $0 } == ["serialgps-read"])
    direct.cancel()
    #expect(await eventually { receiver.core.hub.wants == (rawData: false, sentences: false) })
    await receiver.shutdown()
  }

  /// A direct subscriber gets the hub's replay first (the current status, then the latest
  /// fix), before any live event.
  @Test func aDirectSubscriberIsReplayedFirst() async throws {
    let (receiver, connector) = makeReceiver()
    let plain = EventLog(receiver.subscribe())
    #expect(await eventually { connector.opens == 1 })
    connector.latest!.feed(cycle(second: 1) + cycle(second: 2))
    #expect(await eventually { plain.fixes.count == 1 })
    let items = Locked<[ReceiverEventOrRawData]>([])
    let direct = receiver.subscribeOnReaderThread { item in items.withLock { $0.append(item) } }
    let replayed = items.withLock { $0 }
    #expect(replayed.count == 2, "delivered before subscribeOnReaderThread returns")
    #expect(replayed.first == .event(.status(.streaming)))
    guard case .event(.fix(let update))? = replayed.last else {
      Issue.record("a replayed fix: \(replayed)")
      return
    }
    #expect(update.isReplay)
    #expect(update.fix == plain.fixes.first?.fix)
    connector.latest!.feed(cycle(second: 3))
    #expect(await eventually { items.withLock { $0.count } >= 3 })
    direct.cancel()
    plain.stop()
    await receiver.shutdown()
  }
}
