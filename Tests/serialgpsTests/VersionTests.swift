import Foundation
import Testing

@testable import serialgps

// `serialgps --version` and the packaging read the version from its one home,
// Sources/serialgps/Version.swift: the executable says it, and scripts/version.sh (which
// `make deb` names the package with) finds the same string there.

@Suite struct VersionTests {
  @Test(arguments: ["--version", "version"])
  func executableSaysItsVersion(argument: String) async throws {
    let result = try await runSerialgps([argument])
    #expect(result.status == 0)
    #expect(result.stdout == "serialgps \(Version.serialgps)\n")
    #expect(result.stderr.isEmpty)
  }

  @Test func packagingReadsTheSameVersion() async throws {
    let root = URL(fileURLWithPath: #filePath)
      .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    let script = root.appendingPathComponent("scripts/version.sh").path
    let (status, text) = try await onOwnThread { () throws -> (Int32, String) in
      let process = Process()
      process.executableURL = URL(fileURLWithPath: "/bin/sh")
      process.arguments = [script]
      let output = Pipe()
      process.standardOutput = output
      try process.run()
      let text = String(
        decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
      process.waitUntilExit()
      return (process.terminationStatus, text)
    }
    #expect(status == 0)
    #expect(text == Version.serialgps + "\n")
  }
}
