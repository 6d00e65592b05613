import Glibc
import POSIX
import Testing

@Suite("The signal pipe")
struct SignalTests {
  @Test("signals raised in the process arrive in order on the signal thread")
  func deliveredInOrder() async throws {
    let received = Locked<[(Signal, String)]>([])
    // SIGUSR1 and SIGUSR2: nothing else in the test process uses them.
    let first = Signal(rawValue: SIGUSR1)
    let second = Signal(rawValue: SIGUSR2)
    try SignalPipe.deliver([first, second]) { signal in
      let name = currentThreadName()
      received.withLock { $0.append((signal, name)) }
    }
    // One at a time: the kernel merges a signal that is still pending with a second one of
    // the same number, and delivers different pending signals in its own order.
    for (count, number) in [SIGUSR1, SIGUSR2, SIGUSR1].enumerated() {
      kill(getpid(), number)
      let deadline = ContinuousClock.now + .seconds(10)
      while received.withLock({ $0.count }) <= count && ContinuousClock.now < deadline {
        try await Task.sleep(for: .milliseconds(5))
      }
    }
    let arrivals = received.withLock { $0 }
    #expect(arrivals.map(\.0) == [first, second, first])
    #expect(arrivals.allSatisfy { $0.1 == SignalPipe.threadName })
    #expect(threadNames().contains(SignalPipe.threadName))
  }

  @Test("names, exit statuses and ignoring")
  func signalFacts() {
    #expect(Signal.interrupt.description == "SIGINT")
    #expect(Signal.hangUp.description == "SIGHUP")
    #expect(Signal.terminate.exitStatus == 143)
    #expect(Signal.interrupt.exitStatus == 130)
    let winch = Signal(rawValue: SIGWINCH)
    let wasIgnored = winch.isIgnored
    winch.ignore()
    #expect(winch.isIgnored)
    if !wasIgnored { signal(SIGWINCH, SIG_DFL) }
  }
}

/// The calling thread's name.
func currentThreadName() -> String {
  guard
    let comm = try? FileDescriptor.contents(
      of: "/proc/self/task/\(OwnThread.currentKernelID)/comm")
  else { return "" }
  return String(decoding: comm.prefix { $0 != 10 }, as: UTF8.self)
}
