import Foundation
import Testing

/// Resident kB of `pid`'s executable code (its "r-xp" mappings of the executable file), from
/// /proc/PID/smaps.
func residentCode(of pid: Int32) throws -> Int {
  let executable = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/exe")
  let smaps = try String(contentsOfFile: "/proc/\(pid)/smaps", encoding: .utf8)
  var code = 0
  var inCode = false
  for line in smaps.split(separator: "\n") {
    let fields = line.split(separator: " ", omittingEmptySubsequences: true)
    if let first = fields.first, first.contains("-"), !first.hasSuffix(":") {
      inCode = fields.count >= 6 && fields[1] == "r-xp" && fields[5] == executable
    } else if inCode, fields.first == "Rss:", fields.count >= 2 {
      code += Int(fields[1]) ?? 0
    }
  }
  return code
}

// `serve` gives back its start-up code once it listens (ResidentMemory.releaseExecutableCode,
// docs/posix.md). Measured in child processes, so that no other test's code is dropped.
@Suite("serialgps serve: start-up code given back once it listens", .serialized)
struct ServeMemoryTests {
  @Test("serve listening holds far less of its code resident than a command that keeps it")
  func serveGivesBackStartupCode() async throws {
    let serve = try CLIProcess(["serve", "--listen", "127.0.0.1:0", "/dev/null"])
    defer { serve.signal(SIGKILL) }
    #expect(await eventually { serve.standardError.contains("listening on") })
    // The same executable, a long-running command that does not give its code back.
    let replay = try CLIProcess(["replay", "\(fixturesDirectory)/ublox-m8-drive.nmea", "--loop"])
    defer { replay.signal(SIGKILL) }
    #expect(await eventually { !replay.standardOutput.isEmpty })
    try await Task.sleep(for: .milliseconds(500))
    let served = try residentCode(of: serve.process.processIdentifier)
    let kept = try residentCode(of: replay.process.processIdentifier)
    #expect(served > 0 && kept > 0)
    // Measured: about 640 against 3 150 kB (debug build).
    #expect(served * 2 < kept, "serve \(served) kB of code resident, replay \(kept) kB")
    #expect(serve.process.isRunning, "serve ended: \(serve.standardError)")
  }
}
