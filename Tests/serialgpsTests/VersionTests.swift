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

  /// The warnings tell users to set `--chipset` and `--baud`: `serialgps --help` shows that
  /// serve takes them, as the README's usage does.
  @Test func helpListsServesChipsetAndBaud() async throws {
    let result = try await runSerialgps(["--help"])
    #expect(result.status == 0)
    let serve = try #require(
      result.stdout.split(separator: "\n").first { $0.hasPrefix("  serve ") }, "\(result.stdout)")
    #expect(serve.contains("--chipset NAME"), "\(serve)")
    #expect(serve.contains("--baud N|auto"), "\(serve)")
    let root = URL(fileURLWithPath: #filePath)
      .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    let readme = try String(contentsOf: root.appendingPathComponent("README.md"), encoding: .utf8)
    let usage = try #require(
      readme.split(separator: "\n").first { $0.hasPrefix("serialgps serve ") })
    #expect(usage.contains("--chipset"), "\(usage)")
    #expect(usage.contains("--baud N|auto"), "\(usage)")
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
