import Chipsets
import Glibc
import NMEA
import POSIX
import SerialGPS
import SerialPort

// MARK: - 2c. Bursts of subscribers (converge, not replay)

/// One burst: `clients` subscribers that each come and go at once on a MediaTek with linger 0.
struct BurstFigures {
  /// Power-ons during the burst and the newcomer's wake-up.
  var powerCycles: Int
  /// From a newcomer's `subscribe()` right after the burst to its first live fix, ms.
  var newcomerFirstFix: Double
  /// A second burst, then `shutdown()`: how long the shutdown took, ms, and the standbys
  /// ($PMTK161) written from the start of that burst.
  var shutdown: Double
  var shutdownStandbys: Int
}

/// A simulated MediaTek on a pty: acknowledges $PMTK at once, streams an epoch every 200 ms
/// while awake (from $PMTK314 to $PMTK161), counts standbys.
///
/// `@unchecked Sendable`: its state is behind its lock and its pty thread's own, which the compiler
/// cannot see.
final class BurstReceiver: @unchecked Sendable {
  struct Wire {
    var awake = false
    var standbys = 0
    var stop = false
  }
  let pty: PseudoTerminal
  let wire = Mailbox(Wire())
  let stopped = Mailbox(0)

  init() throws {
    pty = try PseudoTerminal()
    let pty = pty
    let wire = wire
    let stopped = stopped
    startThread(name: "bench-mtk") {
      answerMediaTekCommands(
        on: pty, until: { wire.read { $0.stop } },
        commandAnswered: { number in
          wire.update { state in
            if number == "314" { state.awake = true }
            if number == "161" {
              state.awake = false
              state.standbys += 1
            }
          }
        })
      stopped.update { $0 += 1 }
    }
    startThread(name: "bench-feeder") {
      var index = 50_000
      while !wire.read({ $0.stop }) {
        if wire.read({ $0.awake }) {
          _ = try? pty.write(epoch(index), timeout: .milliseconds(200))
          index += 1
        }
        _ = wire.wait(timeoutMilliseconds: 200) { $0.stop ? true : nil }
      }
      stopped.update { $0 += 1 }
    }
  }

  func stop() {
    wire.update { $0.stop = true }
    pty.interrupt()
    _ = stopped.wait(timeoutMilliseconds: 5000) { $0 == 2 ? true : nil }
    pty.hangUp()
  }
}

func measureBurst(clients: Int, spreadMilliseconds: Int) throws -> BurstFigures {
  // The clients come one after another over the spread (0: as fast as possible).
  let gap = Duration.microseconds(spreadMilliseconds * 1000 / max(1, clients))
  func burst(_ receiver: GPSReceiver) {
    for _ in 0..<clients {
      receiver.subscribe().cancel()
      if gap > .zero { sleepThread(for: gap) }
    }
  }
  let simulated = try BurstReceiver()
  defer { simulated.stop() }
  let receiver = benchReceiver(device: simulated.pty.devicePath, family: .mediatek)

  burst(receiver)
  let first = Mailbox<Int64?>(nil)
  let start = nanoseconds()
  let events = receiver.subscribe()
  DriverExecutor.task {
    for await event in events {
      if case .fix(let update) = event, !update.isReplay {
        let now = nanoseconds()
        first.update { if $0 == nil { $0 = now } }
      }
    }
  }
  guard let fix = first.wait(timeoutMilliseconds: 600_000, { $0 }) else { throw BenchError.noFix }
  let cycles = receiver.statistics.powerOns
  events.cancel()
  // The newcomer's own power-off (its standby) is not the shutdown's.
  while receiver.statistics.powerOffs < receiver.statistics.powerOns { sleep(milliseconds: 1) }

  let standbysBefore = simulated.wire.read { $0.standbys }
  burst(receiver)
  let held = receiver.subscribe()
  let stopStart = nanoseconds()
  runBlocking { await receiver.shutdown() }
  let stopEnd = nanoseconds()
  held.cancel()
  return BurstFigures(
    powerCycles: cycles, newcomerFirstFix: Double(fix - start) / 1e6,
    shutdown: Double(stopEnd - stopStart) / 1e6,
    shutdownStandbys: simulated.wire.read { $0.standbys } - standbysBefore)
}
