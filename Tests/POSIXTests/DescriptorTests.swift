import Glibc
import POSIX
import Testing

@Suite("Descriptors, errno, EINTR, poll and eventfd")
struct DescriptorTests {
  @Test("retryingOnInterrupt retries EINTR, throws any other errno, returns the value")
  func retrying() throws {
    var calls = 0
    let value = try retryingOnInterrupt { () -> CInt in
      calls += 1
      if calls < 3 {
        errno = EINTR
        return -1
      }
      return 42
    }
    #expect(value == 42)
    #expect(calls == 3)

    calls = 0
    #expect(throws: Errno.wouldBlock) {
      try retryingOnInterrupt { () -> CInt in
        calls += 1
        errno = EAGAIN
        return -1
      }
    }
    #expect(calls == 1)
  }

  @Test("Errno names itself and says what the C library says")
  func errnoDescription() {
    #expect(Errno.noSuchFileOrDirectory.description == "No such file or directory (ENOENT)")
    #expect(Errno.brokenPipe.name == "EPIPE")
    #expect(Errno(rawValue: 99_999).name == "errno 99999")
  }

  @Test(
    "a pipe: close-on-exec, bytes through writeAll and readToEnd, EPIPE once the reader is gone")
  func pipe() throws {
    let (readEnd, writeEnd) = try FileDescriptor.pipe()
    #expect(fcntl(readEnd.rawValue, F_GETFD) & FD_CLOEXEC != 0)
    #expect(fcntl(writeEnd.rawValue, F_GETFD) & FD_CLOEXEC != 0)
    try writeEnd.writeAll(Array("hello, pipe".utf8))
    try writeEnd.close()
    #expect(try readEnd.readToEnd() == Array("hello, pipe".utf8))
    try readEnd.close()

    let (reader, writer) = try FileDescriptor.pipe()
    try reader.close()
    let wasIgnored = Signal.brokenPipe.isIgnored
    // The test process ignores SIGPIPE here only if it already did; otherwise the write would
    // end it, so block the signal for this thread instead: EPIPE is still reported.
    var blocked = sigset_t()
    sigemptyset(&blocked)
    sigaddset(&blocked, SIGPIPE)
    var previous = sigset_t()
    pthread_sigmask(SIG_BLOCK, &blocked, &previous)
    defer {
      // Take the pending SIGPIPE this write raised before unblocking it.
      if !wasIgnored {
        var pending = sigset_t()
        sigpending(&pending)
        if sigismember(&pending, SIGPIPE) == 1 {
          var number: CInt = 0
          sigwait(&blocked, &number)
        }
      }
      pthread_sigmask(SIG_SETMASK, &previous, nil)
    }
    #expect(throws: Errno.brokenPipe) { try writer.writeAll(Array("lost".utf8)) }
    try writer.close()
  }

  /// Whether the write end of the pipe `readEnd` reads from is closed: end of file, rather
  /// than EAGAIN (the read end is non-blocking, so a write end left open cannot hang the test).
  private func writeEndIsClosed(_ readEnd: FileDescriptor) throws -> Bool {
    try #require(fcntl(readEnd.rawValue, F_SETFL, O_NONBLOCK) == 0)
    var byte: UInt8 = 0
    do throws(Errno) {
      let count = try withUnsafeMutableBytes(of: &byte) { raw throws(Errno) in
        try readEnd.read(into: raw)
      }
      return count == 0
    } catch {
      if error == .wouldBlock { return false }
      throw error
    }
  }

  private final class Holder {
    let owned: OwnedDescriptor
    init(_ descriptor: FileDescriptor, failing: Bool) throws {
      owned = OwnedDescriptor(descriptor)
      if failing { throw Errno.invalidArgument }
    }
  }

  @Test(
    "an OwnedDescriptor closes its descriptor: when closed, when dropped, and when its holder's init throws"
  )
  func ownedDescriptor() throws {
    let (closedEnd, closedWriter) = try FileDescriptor.pipe()
    defer { try? closedEnd.close() }
    let owned = OwnedDescriptor(closedWriter)
    #expect(owned.rawValue == closedWriter.rawValue)
    #expect(try !writeEndIsClosed(closedEnd))
    try owned.close()  // consumed: a second close does not compile
    #expect(try writeEndIsClosed(closedEnd))

    let (droppedEnd, droppedWriter) = try FileDescriptor.pipe()
    defer { try? droppedEnd.close() }
    do { _ = OwnedDescriptor(droppedWriter) }
    #expect(try writeEndIsClosed(droppedEnd))

    // A class whose stored properties are all set is deinitialised when its init throws: the
    // descriptor it took is closed then, once, and the init must not close it itself.
    let (heldEnd, heldWriter) = try FileDescriptor.pipe()
    defer { try? heldEnd.close() }
    #expect(throws: Errno.invalidArgument) { _ = try Holder(heldWriter, failing: true) }
    #expect(try writeEndIsClosed(heldEnd))

    let (keptEnd, keptWriter) = try FileDescriptor.pipe()
    defer { try? keptEnd.close() }
    var holder: Holder? = try Holder(keptWriter, failing: false)
    #expect(try !writeEndIsClosed(keptEnd))
    holder = nil
    #expect(holder == nil)
    #expect(try writeEndIsClosed(keptEnd))
  }

  @Test("contents(of:) reads a whole /proc file; a missing file is ENOENT")
  func contents() throws {
    let status = String(
      decoding: try FileDescriptor.contents(of: "/proc/self/status"), as: UTF8.self)
    #expect(status.contains("Pid:"))
    #expect(throws: Errno.noSuchFileOrDirectory) {
      try FileDescriptor.contents(of: "/nonexistent/serialgps-posix-test")
    }
  }

  @Test("poll: false once the deadline passed; an EventSignal wakes it; consume clears it")
  func pollAndEventSignal() throws {
    let signal = try EventSignal.make()
    defer { signal.close() }
    var descriptors = [signal.pollDescriptor]
    let start = MonotonicInstant.now
    #expect(try !poll(&descriptors, until: start + .milliseconds(30)))
    #expect(start.duration(to: .now) >= .milliseconds(30))

    signal.signal()
    descriptors = [signal.pollDescriptor]
    #expect(try poll(&descriptors, until: .now + .seconds(10)))
    #expect(descriptors[0].revents & Int16(POLLIN) != 0)
    #expect(signal.consume())
    #expect(!signal.consume())
    descriptors = [signal.pollDescriptor]
    #expect(try !poll(&descriptors, until: .now))
  }
}
