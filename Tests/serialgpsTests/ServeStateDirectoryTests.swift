import Foundation
import Glibc
import Replay
import Simulator
import Testing

/// `serialgps serve --state-dir DIR`: the receiver's last position is kept there when it is
/// put to standby, and a directory that cannot be written costs a warning, never the start.
@Suite("serve --state-dir", .serialized)
struct ServeStateDirectoryTests {
  /// The port serve says it listens on.
  func port(of serve: CLIProcess) -> UInt16? {
    guard let range = serve.standardError.range(of: "listening on 127.0.0.1:") else {
      return nil
    }
    return UInt16(serve.standardError[range.upperBound...].prefix { $0.isNumber })
  }

  /// Watches on `port` until a TPV with a position arrives (60 s at most).
  func watchUntilPosition(port: UInt16) async throws -> Bool {
    try await onOwnThread {
      let descriptor = try loopbackConnection(port: port)
      defer { close(descriptor) }
      var timeout = timeval(tv_sec: 1, tv_usec: 0)
      setsockopt(
        descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
      let watch = Array("?WATCH={\"enable\":true,\"json\":true};\n".utf8)
      _ = watch.withUnsafeBytes { send(descriptor, $0.baseAddress, $0.count, 0) }
      var text = ""
      var buffer = [UInt8](repeating: 0, count: 4096)
      let deadline = Date().addingTimeInterval(60)
      while Date() < deadline {
        let count = recv(descriptor, &buffer, buffer.count, 0)
        if count > 0 { text += String(decoding: buffer[0..<count], as: UTF8.self) }
        if text.contains("\"class\":\"TPV\""), text.contains("\"lat\":") { return true }
        if count == 0 { return false }
      }
      return false
    }
  }

  @Test func keepsTheLastPositionInTheStateDirectory() async throws {
    let markers = try TemporaryDirectory()
    let state = try TemporaryDirectory()
    let simulator = try sleepingMediaTek()
    defer { simulator.stop() }
    let serve = try CLIProcess(
      [
        "serve", simulator.devicePath, "--chipset", "mtk", "--baud", "9600", "--listen",
        "127.0.0.1:0", "--linger", "0", "--state-dir", state.path,
      ], environment: ["SERIALGPS_RUNTIME_DIR": markers.path])
    #expect(await eventually { port(of: serve) != nil }, "\(serve.standardError)")
    #expect(!serve.standardError.contains("warning"), "\(serve.standardError)")
    let listening = try #require(port(of: serve))
    #expect(try await watchUntilPosition(port: listening), "\(serve.standardError)")
    // The client gone: standby after a linger of 0, and the position kept.
    #expect(await simulator.waitForPowerState(.standby, timeout: .seconds(30)))
    // One file, named after the receiver's identity (for a tty its path and creation time).
    func kept() -> [String] {
      ((try? FileManager.default.contentsOfDirectory(atPath: state.path)) ?? []).filter {
        $0.hasSuffix(".position")
      }
    }
    #expect(await eventually { kept().count == 1 }, "\(kept())")
    let file = state.file(try #require(kept().first))
    let text = try String(contentsOfFile: file, encoding: .utf8)
    #expect(text.hasPrefix("serialgps-position 1\nreceiver "), "\(text)")
    #expect(text.contains("\nlatitude ") && text.contains("\naccuracy "), "\(text)")
    serve.signal(SIGTERM)
    #expect(await serve.exitStatus(timeout: .seconds(30)) == 0, "\(serve.standardError)")
  }

  @Test func anUnwritableStateDirectoryIsWarnedOfAndServeStarts() async throws {
    let markers = try TemporaryDirectory()
    let serve = try CLIProcess(
      [
        "serve", "/nonexistent/gps0", "--listen", "127.0.0.1:0", "--state-dir",
        "/proc/serialgps-state",
      ], environment: ["SERIALGPS_RUNTIME_DIR": markers.path])
    #expect(await eventually { port(of: serve) != nil }, "\(serve.standardError)")
    #expect(
      serve.standardError.contains(
        "warning: cannot write to /proc/serialgps-state (--state-dir): receivers' positions "
          + "are not kept across restarts"), "\(serve.standardError)")
    serve.signal(SIGTERM)
    #expect(await serve.exitStatus(timeout: .seconds(30)) == 0, "\(serve.standardError)")
  }

  /// Serves the simulator until a watcher had a position and the receiver is back in
  /// standby with its position kept, then stops serve; the file's path.
  func servedOnce(
    _ simulator: ReceiverSimulator, state: TemporaryDirectory, markers: TemporaryDirectory
  ) async throws -> String {
    let serve = try CLIProcess(
      [
        "serve", simulator.devicePath, "--chipset", "mtk", "--baud", "9600", "--listen",
        "127.0.0.1:0", "--linger", "0", "--state-dir", state.path,
      ], environment: ["SERIALGPS_RUNTIME_DIR": markers.path])
    #expect(await eventually { port(of: serve) != nil }, "\(serve.standardError)")
    #expect(try await watchUntilPosition(port: try #require(port(of: serve))))
    #expect(await simulator.waitForPowerState(.standby, timeout: .seconds(30)))
    let kept = {
      ((try? FileManager.default.contentsOfDirectory(atPath: state.path)) ?? []).filter {
        $0.hasSuffix(".position")
      }
    }
    #expect(await eventually { kept().count == 1 }, "\(kept())")
    serve.signal(SIGTERM)
    #expect(await serve.exitStatus(timeout: .seconds(30)) == 0, "\(serve.standardError)")
    return state.file(try #require(kept().first))
  }

  /// The `$PMTK741` position aiding the simulator received.
  func positionAiding(_ simulator: ReceiverSimulator) -> [String] {
    simulator.received.map { String(decoding: $0.bytes, as: UTF8.self) }.filter {
      $0.hasPrefix("$PMTK741,")
    }
  }

  /// After a replug or a reboot the node is made again: the receiver, which may well have
  /// lost its backup then, is still aided with the position kept under its device's name.
  @Test func theSameReceiverOnANewNodeIsAidedWithItsPosition() async throws {
    let markers = try TemporaryDirectory()
    let state = try TemporaryDirectory()
    let simulator = try sleepingMediaTek()
    defer { simulator.stop() }
    let file = try await servedOnce(simulator, state: state, markers: markers)
    // The recording's fixes are years old: the position is dated now, as a live one would be.
    let now = Int(Date().timeIntervalSince1970) - 10
    let text = try String(contentsOfFile: file, encoding: .utf8)
    let dated = text.split(separator: "\n").map { $0.hasPrefix("time ") ? "time \(now).000" : $0 }
    try (dated.joined(separator: "\n") + "\n").write(
      toFile: file, atomically: true, encoding: .utf8)
    let aidedBefore = positionAiding(simulator).count
    // Replugged: a new pty behind the same path.
    simulator.hangUp()
    try simulator.replug()
    let serve = try CLIProcess(
      [
        "serve", simulator.devicePath, "--chipset", "mtk", "--baud", "9600", "--listen",
        "127.0.0.1:0", "--linger", "0", "--state-dir", state.path,
      ], environment: ["SERIALGPS_RUNTIME_DIR": markers.path])
    #expect(await eventually { port(of: serve) != nil }, "\(serve.standardError)")
    #expect(try await watchUntilPosition(port: try #require(port(of: serve))))
    #expect(
      await eventually { positionAiding(simulator).count > aidedBefore },
      "\(positionAiding(simulator))\n\(serve.standardError)")
    serve.signal(SIGTERM)
    #expect(await serve.exitStatus(timeout: .seconds(30)) == 0, "\(serve.standardError)")
  }

  /// A kept position with a height of `nan` killed serve at the first watcher, and at every
  /// restart: now it is logged once and ignored, and the receiver is served.
  @Test func anAbsurdKeptPositionIsLoggedAndIgnored() async throws {
    let markers = try TemporaryDirectory()
    let state = try TemporaryDirectory()
    let simulator = try sleepingMediaTek()
    defer { simulator.stop() }
    let file = try await servedOnce(simulator, state: state, markers: markers)
    let text = try String(contentsOfFile: file, encoding: .utf8)
    let lines = text.split(separator: "\n").filter {
      !$0.hasPrefix("height ") && !$0.hasPrefix("altitude ")
    }
    try (lines.joined(separator: "\n") + "\nheight nan\n").write(
      toFile: file, atomically: true, encoding: .utf8)
    let aidedBefore = positionAiding(simulator).count
    let serve = try CLIProcess(
      [
        "serve", simulator.devicePath, "--chipset", "mtk", "--baud", "9600", "--listen",
        "127.0.0.1:0", "--linger", "0", "--state-dir", state.path,
      ], environment: ["SERIALGPS_RUNTIME_DIR": markers.path])
    #expect(await eventually { port(of: serve) != nil }, "\(serve.standardError)")
    #expect(try await watchUntilPosition(port: try #require(port(of: serve))))
    #expect(
      serve.standardError.contains("ignoring the kept position \(file): a figure is out of range"),
      "\(serve.standardError)")
    #expect(positionAiding(simulator).count == aidedBefore, "\(positionAiding(simulator))")
    serve.signal(SIGTERM)
    #expect(await serve.exitStatus(timeout: .seconds(30)) == 0, "\(serve.standardError)")
    #expect(!serve.standardError.contains("Fatal error"), "\(serve.standardError)")
  }
}
