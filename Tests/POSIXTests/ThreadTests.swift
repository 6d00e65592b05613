import Glibc
import POSIX
import Testing

/// The names of this process's threads, as `ps -L` shows them.
func threadNames() -> [String] {
  guard let directory = opendir("/proc/self/task") else { return [] }
  defer { closedir(directory) }
  var names: [String] = []
  while let entry = readdir(directory) {
    let id = withUnsafeBytes(of: entry.pointee.d_name) { raw in
      String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
    }
    guard Int(id) != nil,
      let comm = try? FileDescriptor.contents(of: "/proc/self/task/\(id)/comm")
    else { continue }
    names.append(String(decoding: comm.prefix { $0 != 10 }, as: UTF8.self))
  }
  return names
}

@Suite("Threads and locks")
struct ThreadTests {
  @Test("a named thread shows in /proc while it runs and is gone after joinBlocking")
  func namedThread() {
    let release = Locked(false)
    let lock = Lock()
    let name = "posix-t-\(UInt16.random(in: 0...9999))"
    let thread = OwnThread.start(name: name) {
      lock.withLock {
        while !release.withLock({ $0 }) { lock.wait(timeout: .milliseconds(10)) }
      }
    }
    #expect(thread.startFailure == nil)
    #expect(!thread.isCurrent)
    #expect(threadNames().contains(name))
    release.withLock { $0 = true }
    lock.withLock { lock.broadcast() }
    thread.joinBlocking()
    thread.joinBlocking()  // idempotent
    #expect(!threadNames().contains(name))
  }

  @Test("a name longer than the kernel keeps is cut to 15 bytes")
  func longName() {
    let thread = OwnThread.start(name: "serialgps-a-very-long-name") {}
    #expect(thread.name == "serialgps-a-ver")
    thread.joinBlocking()
  }

  @Test("join() awaits the body; joinBlocking on the thread itself returns at once")
  func joinAsync() async {
    let ran = Locked(0)
    let thread = Locked<OwnThread?>(nil)
    let started = OwnThread.start(name: "posix-self-join") {
      // Wait until the handle is published, then join itself: must not deadlock.
      while thread.withLock({ $0 }) == nil { sleepThread(for: .milliseconds(1)) }
      let me = thread.withLock { $0! }
      ran.withLock { $0 = me.isCurrent ? 1 : -1 }
      me.joinBlocking()
    }
    thread.withLock { $0 = started }
    await started.join()
    #expect(ran.withLock { $0 } == 1)
    started.joinBlocking()
  }

  @Test("onOwnThread runs the body on a thread of its own and returns its value")
  func onOwnThreadValue() async {
    let here = OwnThread.currentKernelID
    let there = await onOwnThread(name: "posix-work") { OwnThread.currentKernelID }
    #expect(there != here)
    #expect(there > 0)
  }

  @Test("Lock.wait(until:) returns false at the deadline, true when signalled")
  func lockDeadline() {
    let lock = Lock()
    let start = MonotonicInstant.now
    let timedOut = lock.withLock { () -> Bool in
      var result = true
      while result { result = lock.wait(until: start + .milliseconds(30)) }
      return result
    }
    #expect(!timedOut)
    #expect(start.duration(to: .now) >= .milliseconds(30))
    // A deadline already past returns at once.
    #expect(lock.withLock { lock.wait(until: start) } == false)

    let flag = Locked(false)
    let signaller = OwnThread.start(name: "posix-signal") {
      sleepThread(for: .milliseconds(20))
      flag.withLock { $0 = true }
      lock.withLock { lock.broadcast() }
    }
    let woken = lock.withLock { () -> Bool in
      let deadline = MonotonicInstant.now + .seconds(30)
      while !flag.withLock({ $0 }) {
        if !lock.wait(until: deadline) { return false }
      }
      return true
    }
    #expect(woken)
    signaller.joinBlocking()
  }
}
