import NMEA
import POSIX
import Testing

@testable import SerialGPS

@Suite("EventSource: subscriptions fed from elsewhere, with GPSReceiver's types")
struct EventSourceTests {
  func fix(second: UInt8) -> Fix {
    var fix = Fix()
    fix.mode = .threeD
    fix.time = UTCTime(hour: 12, minute: 0, second: second)
    return fix
  }

  @Test("every subscription reports its start and its end once, in order")
  func attachAndDetach() async {
    let log = Locked<[String]>([])
    let source = EventSource(
      clock: ManualClock(), replayExpiry: .seconds(10), bufferSize: 8,
      attached: { log.withLock { $0.append("attach") } },
      detached: { log.withLock { $0.append("detach") } })
    let first = source.subscribe(bufferSize: nil, keepAlive: nil)
    let second = source.subscribe(bufferSize: nil, keepAlive: nil) { _ in }
    #expect(log.withLock { $0 } == ["attach", "attach"])
    first.cancel()
    first.cancel()  // once only
    second.cancel()
    #expect(log.withLock { $0 } == ["attach", "attach", "detach", "detach"])
  }

  @Test("a fix relayed with its age is replayed to a newcomer with that age, while fresh")
  func relayedAge() async {
    let clock = ManualClock()
    let source = EventSource(
      clock: clock, replayExpiry: .seconds(10), bufferSize: 8, attached: {}, detached: {})
    let live = source.subscribe(bufferSize: nil, keepAlive: nil)
    source.publish(status: .streaming)
    source.publish(fix: fix(second: 1), age: .seconds(3), isReplay: true)
    var iterator = live.makeAsyncIterator()
    #expect(await iterator.next() == .status(.streaming))
    #expect(
      await iterator.next()
        == .fix(
          FixUpdate(
            fix: fix(second: 1), age: .seconds(3), isReplay: true,
            arrival: .origin - .seconds(3))))

    clock.advance(by: .seconds(2))
    var newcomer = source.subscribe(bufferSize: nil, keepAlive: nil).makeAsyncIterator()
    #expect(await newcomer.next() == .status(.streaming))
    #expect(
      await newcomer.next()
        == .fix(
          FixUpdate(
            fix: fix(second: 1), age: .seconds(5), isReplay: true,
            arrival: .origin - .seconds(3))))

    // 3 s old on arrival, 8 s later it is past the 10 s expiry: not replayed.
    clock.advance(by: .seconds(6))
    var late = source.subscribe(bufferSize: nil, keepAlive: nil).makeAsyncIterator()
    #expect(await late.next() == .status(.streaming))
    source.close()
    #expect(await late.next() == nil)
  }
}
