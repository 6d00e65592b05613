import POSIX
import Testing

@testable import SerialGPS

/// Many tasks subscribing and disposing at random: power-on and power-off must strictly
/// alternate, never overlap, and balance at the end.
@Suite struct SubscriptionStormTests {
  struct Generator: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
      state &+= 0x9E37_79B9_7F4A_7C15
      var z = state
      z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
      z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
      return z ^ (z >> 31)
    }
  }

  @Test(arguments: [Duration.zero, .microseconds(200)])
  func eightTasksTenThousandCallsEach(linger: Duration) async throws {
    let connector = MemoryConnector()
    var options = GPSReceiver.Options()
    options.linger = linger
    let receiver = GPSReceiver(connector: connector, options: options, clock: SystemClock())

    await withTaskGroup(of: Void.self) { group in
      for task in 0..<8 {
        group.addTask {
          var random = Generator(state: UInt64(task) &* 7919 &+ 17)
          var held: [ReceiverEvents] = []
          for _ in 0..<10_000 {
            if held.isEmpty || (held.count < 4 && Bool.random(using: &random)) {
              held.append(receiver.subscribe())
            } else {
              let index = Int.random(in: 0..<held.count, using: &random)
              // Half the disposals cancel, half just drop the sequence.
              let events = held.remove(at: index)
              if Bool.random(using: &random) { events.cancel() }
            }
            if Int.random(in: 0..<64, using: &random) == 0 { await Task.yield() }
          }
          // Even tasks cancel what they still hold; odd ones let it go with the task.
          if task % 2 == 0 { for events in held { events.cancel() } }
        }
      }
    }
    // Every event handled; with a linger, its timer then powers off.
    await receiver.core.settle()
    #expect(await eventually { receiver.statistics.powerOns == receiver.statistics.powerOffs })
    await receiver.core.settle()
    let statistics = receiver.statistics
    #expect(statistics.powerOns == statistics.powerOffs)
    if linger == .zero {
      // The count fell to zero and rose again: the storm exercised power cycles. Not one per
      // rise and fall: the controller converges on the demand it finds when it comes to act
      // (issue 14), so 80 000 calls cost a few cycles (ConvergenceTests bounds them).
      #expect(statistics.powerOns >= 1, "no power cycle")
    }
    #expect(connector.overlaps == 0)
    #expect(connector.openCount == 0)
    #expect(connector.opens == statistics.powerOns)
    await receiver.shutdown()
  }

  @Test func balanceWithSubscriptionsStillHeld() async throws {
    let connector = MemoryConnector()
    var options = GPSReceiver.Options()
    options.linger = .zero
    let receiver = GPSReceiver(connector: connector, options: options, clock: SystemClock())
    let kept = Locked<[ReceiverEvents]>([])
    await withTaskGroup(of: Void.self) { group in
      for task in 0..<8 {
        group.addTask {
          var random = Generator(state: UInt64(task) &+ 99)
          var held: [ReceiverEvents] = []
          for _ in 0..<10_000 {
            if held.isEmpty || Bool.random(using: &random) {
              held.append(receiver.subscribe())
            } else {
              held.remove(at: Int.random(in: 0..<held.count, using: &random)).cancel()
            }
          }
          if task == 3, let last = held.last { kept.withLock { $0.append(last) } }
          for events in held where task != 3 || events.core !== held.last?.core { events.cancel() }
        }
      }
    }
    // Exactly one subscription remains: powered on once more than off.
    await receiver.core.settle()
    var statistics = receiver.statistics
    #expect(statistics.powerOns == statistics.powerOffs + 1)
    #expect(connector.openCount == 1)
    #expect(connector.overlaps == 0)
    kept.withLock { $0.forEach { $0.cancel() } }
    await receiver.core.settle()
    statistics = receiver.statistics
    #expect(statistics.powerOns == statistics.powerOffs)
    #expect(connector.openCount == 0)
    await receiver.shutdown()
  }
}
