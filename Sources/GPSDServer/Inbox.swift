import Discovery
import POSIX
import SerialGPS

/// What other threads hand the server's thread.
enum ServerMessage: Sendable {
  case receiver(DeviceID, generation: Int, ReceiverEventOrRawData)
  /// A time report of the time service of the device at this path (`serve --time`).
  case time(path: String, DeviceTimeReport)
  case hotplug(HotplugEvent)
  case discoveryFailed(String)
  /// The receiver wrote (or dropped) a batch of the raw port's writer (``RawWriteQueue``).
  case rawWritten(batch: Int)
  case barrier(CheckedContinuation<Void, Never>)
  case stop
}

/// The messages waiting for the server's thread, in order. Receivers' readers post their
/// reports here directly, so this is the one bound between a receiver and the server: without
/// it the inbox would grow as fast as a receiver (or a replay at full speed) outpaces the
/// server's thread. Past `reportLimit` reports of a device waiting, the oldest of them is
/// dropped (newest wins, as in a subscription queue; sentences and raw chunks too, which
/// consumers expect to have gaps). Status events, hotplug and control messages are never
/// dropped.
struct Inbox {
  let reportLimit: Int
  private(set) var messages: [ServerMessage] = []
  /// Reports of each device waiting in `messages`.
  private var waitingReports: [DeviceID: Int] = [:]
  /// Dropped since the last `take()`.
  private var dropped = 0

  init(reportLimit: Int) { self.reportLimit = reportLimit }

  mutating func post(_ message: ServerMessage) {
    if let device = Self.droppableReport(message) {
      let waiting = waitingReports[device, default: 0]
      if waiting >= reportLimit,
        let oldest = messages.firstIndex(where: { Self.droppableReport($0) == device })
      {
        messages.remove(at: oldest)
        dropped += 1
      } else {
        waitingReports[device] = waiting + 1
      }
    }
    messages.append(message)
  }

  /// Everything posted so far, and how many reports were dropped meanwhile.
  mutating func take() -> (messages: [ServerMessage], dropped: Int) {
    defer {
      messages = []
      waitingReports.removeAll(keepingCapacity: true)
      dropped = 0
    }
    return (messages, dropped)
  }

  /// The device whose report `message` is, if it is one that may be dropped.
  private static func droppableReport(_ message: ServerMessage) -> DeviceID? {
    switch message {
    case .receiver(_, _, .event(.status)): nil
    case .receiver(let device, _, _): device
    default: nil
    }
  }
}

/// The server thread's mailbox as other threads see it: an ``Inbox`` behind a lock, and the
/// eventfd that wakes the thread's `poll`. The only part of the server that other threads
/// touch, besides the statistics.
final class ServerInbox: Sendable {
  private let inbox: Locked<Inbox>
  /// Written after each post; the server's thread polls it.
  let wakeup: EventSignal

  init(reportLimit: Int, wakeup: EventSignal) {
    inbox = Locked(Inbox(reportLimit: max(1, reportLimit)))
    self.wakeup = wakeup
  }

  deinit { wakeup.close() }

  /// Queues `message` and wakes the server's thread; from any thread, never waits for it.
  func post(_ message: ServerMessage) {
    inbox.withLock { $0.post(message) }
    wakeup.signal()
  }

  /// Everything posted so far (see ``Inbox/take()``); on the server's thread.
  func take() -> (messages: [ServerMessage], dropped: Int) {
    inbox.withLock { $0.take() }
  }
}
