import Foundation
import Glibc
import POSIX
import SerialPort
import Testing

@testable import TimeService

@Suite("PPS sources")
struct PPSSourceTests {
  @Test func aListenerHandsOnEveryPulseInOrderAndStops() async throws {
    let source = ManualPPSSource()
    let received = Locked<[Pulse]>([])
    let listener = PulseListener.start(
      source, pulse: { pulse in received.withLock { $0.append(pulse) } },
      failure: { error in Issue.record("unexpected failure: \(error)") })
    for second in 0..<5 { source.emit(at: posix(december2 + Int64(second))) }
    #expect(await eventually { received.withLock { $0.count } == 5 })
    #expect(received.withLock { $0.map(\.sequence) } == [1, 2, 3, 4, 5])
    #expect(received.withLock { $0.map(\.time) } == (0..<5).map { posix(december2 + $0) })
    listener.stop()
    await listener.finished()  // within one wait (1.5 s)
    source.emit(at: posix(december2 + 5))
    try await Task.sleep(for: .milliseconds(50))
    #expect(received.withLock { $0.count } == 5)
  }

  final class FailingSource: PPSSource, @unchecked Sendable {
    let name = "/dev/pps9"
    let calls = Locked(0)
    func nextPulse(timeout: Duration) throws(TimeServiceError) -> Pulse? {
      let call = calls.withLock { calls -> Int in
        calls += 1
        return calls
      }
      if call == 1 { return Pulse(time: posix(december2), sequence: 1) }
      throw .ppsFailed(path: name, operation: "PPS_FETCH", .noSuchDevice)
    }
  }

  @Test func aFailingSourceIsReportedOnceAndEndsTheThread() async {
    let source = FailingSource()
    let failures = Locked<[TimeServiceError]>([])
    let pulses = Locked(0)
    let listener = PulseListener.start(
      source, pulse: { _ in pulses.withLock { $0 += 1 } },
      failure: { error in failures.withLock { $0.append(error) } })
    await listener.finished()
    #expect(pulses.withLock { $0 } == 1)
    #expect(
      failures.withLock { $0 } == [
        .ppsFailed(path: "/dev/pps9", operation: "PPS_FETCH", .noSuchDevice)
      ])
    #expect(source.calls.withLock { $0 } == 2)
  }

  @Test func kernelPPSErrorsSayWhatToDo() throws {
    #expect(throws: TimeServiceError.ppsOpen(path: "/dev/pps-absent", .noSuchFileOrDirectory)) {
      _ = try KernelPPSSource(path: "/dev/pps-absent")
    }
    #expect(
      TimeServiceError.ppsOpen(path: "/dev/pps0", .noSuchFileOrDirectory).description.contains(
        "dtoverlay=pps-gpio"))
    // /dev/null knows no PPS ioctl.
    #expect(throws: TimeServiceError.notPPSDevice(path: "/dev/null")) {
      _ = try KernelPPSSource(path: "/dev/null")
    }
    #expect(
      TimeServiceError.noPPSDevice(tty: "/dev/ttyS0").description
        == "no kernel PPS device belongs to /dev/ttyS0: attach the PPS line discipline (ldattach PPS /dev/ttyS0), or name the device with --pps /dev/ppsN"
    )
  }

  /// A device that turns out not to be a PPS device is closed once. A second close of the
  /// same number closes whatever another thread opened under it in between (a tty, a socket,
  /// libudev's monitor, which then aborts in its own close): here a thread keeps opening and
  /// using pipes, each time most likely under the number the source just gave back, and none
  /// of its descriptors may vanish under it.
  @Test func aRefusedKernelDeviceNeverClosesAnotherThreadsDescriptor() throws {
    expectEachDescriptorClosedOnce {
      #expect(throws: TimeServiceError.notPPSDevice(path: "/dev/null")) {
        _ = try KernelPPSSource(path: "/dev/null")
      }
    }
  }

  /// A carrier-detect source owns the duplicate it made of the port's descriptor: released,
  /// it closes that once, and never the port's own.
  @Test func aCarrierDetectSourceClosesItsDuplicateOnce() throws {
    let pty = try PseudoTerminal()
    let device = open(pty.devicePath, O_RDWR | O_NOCTTY | O_NONBLOCK)
    try #require(device >= 0)
    defer { close(device) }
    expectEachDescriptorClosedOnce(rounds: 2000) {
      _ = try? CarrierDetectPPSSource(descriptor: device, path: pty.devicePath)
    }
    #expect(fcntl(device, F_GETFD) >= 0, "the port's own descriptor is still open")
  }

  /// /sys/class/pps/ppsN/path names the tty a PPS line discipline was attached to; a
  /// pps-gpio device names none.
  @Test func findsTheKernelDeviceOfATTY() throws {
    let root = try ScratchDirectory("sysfs")
    defer { root.remove() }
    let manager = FileManager.default
    for (device, path) in [("pps0", ""), ("pps1", "/dev/ttyS0\n"), ("pps2", "/dev/ttyAMA0\n")] {
      let directory = root.path + "/class/pps/" + device
      try manager.createDirectory(atPath: directory, withIntermediateDirectories: true)
      try path.write(toFile: directory + "/path", atomically: true, encoding: .utf8)
      try "pps@12.-1\n".write(toFile: directory + "/name", atomically: true, encoding: .utf8)
    }
    #expect(KernelPPSSource.device(forTTY: "/dev/ttyS0", sysfs: root.path) == "/dev/pps1")
    #expect(KernelPPSSource.device(forTTY: "/dev/ttyAMA0", sysfs: root.path) == "/dev/pps2")
    #expect(KernelPPSSource.device(forTTY: "/dev/ttyUSB0", sysfs: root.path) == nil)
    // A stable name is followed to the tty it names (/dev/serial0 → ttyAMA0 on a Pi).
    let tty = root.path + "/dev/ttyAMA0"
    try manager.createDirectory(atPath: root.path + "/dev", withIntermediateDirectories: true)
    #expect(manager.createFile(atPath: tty, contents: nil))
    try manager.createSymbolicLink(atPath: root.path + "/dev/serial0", withDestinationPath: tty)
    #expect(
      KernelPPSSource.device(forTTY: root.path + "/dev/serial0", sysfs: root.path) == "/dev/pps2")
    #expect(KernelPPSSource.device(forTTY: "/dev/ttyS0", sysfs: root.path + "/nothing") == nil)
  }

  /// A pty cannot report modem-line changes.
  @Test func carrierDetectOnAPtyIsRefusedClearly() throws {
    let pty = try PseudoTerminal()
    let device = open(pty.devicePath, O_RDWR | O_NOCTTY | O_NONBLOCK)
    try #require(device >= 0)
    defer { close(device) }
    let source = try CarrierDetectPPSSource(descriptor: device, path: pty.devicePath)
    #expect {
      _ = try source.nextPulse(timeout: .seconds(1))
    } throws: { error in
      guard case .carrierDetectUnsupported(let path, _)? = error as? TimeServiceError else {
        return false
      }
      return path == pty.devicePath
    }
  }

  /// The carrier line's changes, as TIOCMIWAIT and TIOCMGET report them, become pulses on
  /// the chosen edge.
  @Test(arguments: [PPSEdge.assert, .clear])
  func carrierDetectEdges(edge: PPSEdge) throws {
    // Raised at .000, lowered at .100 of each second, for three seconds.
    var script: [(time: PosixTime, carrier: Bool)] = []
    for second: Int64 in 0..<3 {
      script.append((posix(december2 + second), true))
      script.append((posix(december2 + second, ms: 100), false))
    }
    let changes = Locked(script)
    let source = CarrierDetectPPSSource(
      path: "/dev/ttyS0", edge: edge,
      waitForChange: { () throws(Errno) in
        guard let change = changes.withLock({ $0.isEmpty ? nil : $0.removeFirst() }) else {
          throw Errno.ioError  // the port hung up
        }
        return change
      })
    let offset: Int64 = edge == .assert ? 0 : 100
    for second in 0..<3 {
      let pulse = try source.nextPulse(timeout: .seconds(2))
      #expect(
        pulse
          == Pulse(time: posix(december2 + Int64(second), ms: offset), sequence: UInt64(second + 1))
      )
    }
    #expect(
      throws: TimeServiceError.ppsFailed(path: "/dev/ttyS0", operation: "TIOCMIWAIT", .ioError)
    ) {
      _ = try source.nextPulse(timeout: .seconds(2))
    }
  }
}
