import Foundation
import Glibc
import Replay
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
}
