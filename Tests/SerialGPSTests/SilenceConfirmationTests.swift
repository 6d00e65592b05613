import Chipsets
import POSIX
import Testing

@testable import SerialGPS

/// A backup request confirmed by silence, through the controller's own port (the mailbox the
/// reader fills) on a manual clock: bytes within the grace are let pass, one byte in the
/// quiet window after it means the receiver is awake.
@Suite struct SilenceConfirmationTests {
  let backup = UbloxCommandSet().backupRequest

  /// Runs `backup` with one attempt; `heard` is called with the mailbox at each listed offset
  /// from the write, as the reader would on bytes; `unread` bytes come in the window but no
  /// reader reads them (one running late). Returns how the step ended.
  func run(heardAt offsets: [Duration], unread: [UInt8] = []) async throws
    -> CommandDriver.Ran
  {
    let clock = ManualClock()
    let mailbox = AcknowledgementMailbox()
    let connection = MemoryConnection()
    let port = ConnectionCommandPort(
      connection: connection, acknowledgements: mailbox, clock: clock,
      counters: Locked(ReceiverStatistics()), shutdownRequested: Locked(false),
      abandonOnShutdown: false, readUTC: { nil })
    let step = backup
    let running = Task {
      var port = port
      return try await CommandDriver(attempts: 1, timeout: .seconds(1)).run(
        step, retry: .whileReceiverTalks, on: &port)
    }
    // The grace: one sleeper until 500 ms.
    #expect(await eventually { clock.nextDeadline == .origin + .milliseconds(500) })
    #expect(connection.writes == [step.bytes])
    for offset in offsets.sorted() {
      if offset >= .milliseconds(500) {
        clock.advance(to: .origin + .milliseconds(500))
        // The window: the mailbox's timeout until 2 s.
        #expect(await eventually { clock.nextDeadline == .origin + .seconds(2) })
      }
      clock.advance(to: .origin + offset)
      mailbox.heard()
    }
    clock.advance(to: .origin + .milliseconds(500))
    #expect(await eventually { clock.nextDeadline == .origin + .seconds(2) })
    if !unread.isEmpty { connection.feed(unread) }
    clock.advance(to: .origin + .seconds(2))
    return try #require(try await running.value)
  }

  @Test func silenceAfterTheGraceConfirmsTheBackup() async throws {
    #expect(try await run(heardAt: []).outcome == .silent(written: 1))
  }

  @Test func bytesWithinTheGraceAreLetPass() async throws {
    #expect(
      try await run(heardAt: [.milliseconds(10), .milliseconds(450)]).outcome == .silent(written: 1)
    )
  }

  @Test func aByteInTheWindowMeansTheReceiverIsAwake() async throws {
    let ran = try await run(heardAt: [.milliseconds(1400)])
    #expect(ran.outcome == .keptTalking(written: 1))
    // Subscribers are told why, and what may cause it.
    let failure = try #require(CommandStepRunner.failure(of: ran, family: .ublox))
    #expect(failure.kind == .rejected)
    #expect(failure.message.contains("kept sending after each of 1 attempt,"), "\(failure)")
    #expect(failure.message.contains("USB port is connected"), "\(failure)")
  }

  /// The window ends with nothing read, but bytes wait for a reader that is behind: the
  /// receiver talked, so it is not asleep.
  @Test func bytesNotYetReadMeanTheReceiverIsAwake() async throws {
    let ran = try await run(heardAt: [], unread: Array("$GNRMC,".utf8))
    #expect(ran.outcome == .keptTalking(written: 1))
  }
}
