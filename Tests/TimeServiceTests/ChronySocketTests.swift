import CTimeShims
import Foundation
import Glibc
import POSIX
import Testing
import TimeService

/// A Unix datagram socket bound at a path, as chronyd's SOCK refclock binds one.
final class DatagramReceiver {
  let path: String
  let descriptor: CInt

  init(path: String) throws {
    self.path = path
    unlink(path)
    descriptor = socket(AF_UNIX, CInt(SOCK_DGRAM.rawValue), 0)
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    withUnsafeMutableBytes(of: &address.sun_path) { raw in
      raw.copyBytes(from: Array(path.utf8) + [0])
    }
    let bound = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
      }
    }
    try #require(bound == 0, "bind \(path): \(Errno.current)")
  }

  /// The next datagram, or nil after `timeout` milliseconds without one.
  func receive(timeout: CInt = 1000) -> [UInt8]? {
    var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
    guard poll(&poller, 1, timeout) == 1 else { return nil }
    var buffer = [UInt8](repeating: 0, count: 256)
    let count = recv(descriptor, &buffer, buffer.count, 0)
    return count >= 0 ? Array(buffer[0..<count]) : nil
  }

  func close() {
    Glibc.close(descriptor)
    unlink(path)
  }
}

@Suite("chrony's SOCK refclock protocol")
struct ChronySocketTests {
  @Test func sendsChronysSampleStructure() throws {
    let directory = try ScratchDirectory("sock")
    defer { directory.remove() }
    let receiver = try DatagramReceiver(path: directory.path + "/clk.sock")
    defer { receiver.close() }
    let chrony = ChronySocket(path: receiver.path)
    let clock = PosixTime(seconds: 1_796_169_601, nanoseconds: 123_456_789)
    let real = PosixTime(seconds: 1_796_169_601)
    #expect(chrony.send(real: real, clock: clock) == .sent)
    let datagram = try #require(receiver.receive())
    #expect(datagram.count == ctime_sock_sample_size())
    let sample = datagram.withUnsafeBytes { $0.loadUnaligned(as: ctime_sock_sample.self) }
    #expect(sample.magic == 0x534F_434B)
    #expect(sample.pulse == 0)
    #expect(sample.leap == 0)
    #expect(sample.tv.tv_sec == 1_796_169_601)
    #expect(sample.tv.tv_usec == 123_456)
    // The offset is counted from the microsecond the timeval names.
    #expect(sample.offset == -0.123456)
    #expect(chrony.sent == 1)
  }

  @Test func noChronyIsNoError() throws {
    let directory = try ScratchDirectory("sock")
    defer { directory.remove() }
    let chrony = ChronySocket(path: directory.path + "/absent.sock")
    let now = PosixTime.now()
    #expect(chrony.send(real: now, clock: now) == .noListener)
    #expect(chrony.send(real: now, clock: now) == .noListener)
    #expect(chrony.noListener == 2)
    #expect(chrony.sent == 0)
    #expect(chrony.failed == 0)
  }

  /// chronyd restarting binds a new socket at the same path: the next sample reaches it.
  /// Each sample that finds no chronyd makes a socket whose connect fails: that socket is
  /// closed there, once.
  @Test func aFailedConnectClosesItsSocketOnce() throws {
    let directory = try ScratchDirectory("sock")
    defer { directory.remove() }
    let chrony = ChronySocket(path: directory.path + "/absent.sock")
    let now = PosixTime.now()
    expectEachDescriptorClosedOnce {
      #expect(chrony.send(real: now, clock: now) == .noListener)
    }
  }

  @Test func reconnectsToARestartedChrony() throws {
    let directory = try ScratchDirectory("sock")
    defer { directory.remove() }
    let path = directory.path + "/clk.sock"
    let chrony = ChronySocket(path: path)
    let now = PosixTime.now()
    var first = try DatagramReceiver(path: path)
    #expect(chrony.send(real: now, clock: now) == .sent)
    #expect(first.receive() != nil)
    first.close()
    #expect(chrony.send(real: now, clock: now) == .noListener)  // chronyd gone
    first = try DatagramReceiver(path: path)
    defer { first.close() }
    #expect(chrony.send(real: now + .seconds(1), clock: now) == .sent)
    let datagram = try #require(first.receive())
    let sample = datagram.withUnsafeBytes { $0.loadUnaligned(as: ctime_sock_sample.self) }
    #expect(abs(sample.offset - 1.0) < 1e-6)
    #expect(chrony.sent == 2)
    #expect(chrony.noListener == 1)
  }

  /// A chronyd that stops reading costs samples, never a blocked caller.
  @Test func aChronyThatDoesNotReadLosesSamplesWithoutBlocking() throws {
    let directory = try ScratchDirectory("sock")
    defer { directory.remove() }
    let receiver = try DatagramReceiver(path: directory.path + "/clk.sock")
    defer { receiver.close() }
    let chrony = ChronySocket(path: receiver.path)
    let now = PosixTime.now()
    var outcomes: [ChronySocket.Outcome] = []
    for _ in 0..<2000 { outcomes.append(chrony.send(real: now, clock: now)) }
    #expect(outcomes.contains(.failed(.wouldBlock)))
    #expect(chrony.sent + chrony.failed == 2000)
    #expect(chrony.lastError == .wouldBlock)
    // Once it reads again, samples flow.
    while receiver.receive(timeout: 0) != nil {}
    #expect(chrony.send(real: now, clock: now) == .sent)
  }

  @Test func pathsAsGpsdMakesThem() {
    let directory = geteuid() == 0 ? "/run" : "/tmp"
    #expect(
      ChronySocket.serialTimePath(forDevice: "/dev/ttyUSB0") == directory
        + "/chrony.clk.ttyUSB0.sock")
    #expect(ChronySocket.ppsPath(forDevice: "/dev/ttyAMA0") == directory + "/chrony.ttyAMA0.sock")
    #expect(
      ChronySocket.ppsPath(forDevice: "/dev/serial/by-id/usb-u-blox_GNSS-if00")
        == directory + "/chrony.usb-u-blox_GNSS-if00.sock")
  }

  @Test func aPathTooLongForASocketIsAnError() {
    let chrony = ChronySocket(path: "/tmp/" + String(repeating: "x", count: 200))
    let now = PosixTime.now()
    #expect(chrony.send(real: now, clock: now) == .failed(.init(rawValue: ENAMETOOLONG)))
  }
}
