import Foundation

/// Paths and process helpers shared by the tests that run umockdev and udevadm.
enum TestSupport {
  /// `Tests/DiscoveryTests`.
  static let testsDirectory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
  static let fixtures = testsDirectory.appendingPathComponent("Fixtures")
  static let support = testsDirectory.appendingPathComponent("Support")
  static let packageRoot = testsDirectory.deletingLastPathComponent().deletingLastPathComponent()
  static let rulesFile = packageRoot.appendingPathComponent("udev-rules/60-serialgps.rules")

  static func fixture(_ name: String) -> String {
    fixtures.appendingPathComponent(name + ".umockdev").path
  }

  /// CI runs everything; elsewhere a test whose tools are missing is skipped with a message.
  static let isCI = ProcessInfo.processInfo.environment["CI"] == "true"

  static func which(_ tool: String) -> String? {
    let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
    for directory in path.split(separator: ":") {
      let candidate = String(directory) + "/" + tool
      if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
    }
    return nil
  }

  static let hasUmockdev = which("umockdev-run") != nil && which("umockdev-wrapper") != nil
  static let hasUdevadm = which("udevadm") != nil && which("unshare") != nil
  static let isRoot = getuid() == 0

  /// The directory of the test bundle, where SwiftPM also puts the package's executables.
  static let buildDirectory: URL = {
    let executable = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
    return executable.deletingLastPathComponent()
  }()

  /// A product of this package, built next to the tests.
  static func product(_ name: String) throws -> String {
    let path = buildDirectory.appendingPathComponent(name).path
    guard FileManager.default.isExecutableFile(atPath: path) else {
      throw Failure("\(path) is missing; build it first (`swift build --build-tests`)")
    }
    return path
  }

  struct Failure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
  }

  struct Result {
    var status: Int32
    var output: String
    var error: String
  }

  /// Runs `executable` and collects its output; kills it after `timeout` seconds, which a
  /// loaded CI machine never needs but a hang must not turn into a stuck test run.
  static func run(_ executable: String, _ arguments: [String], timeout: TimeInterval = 120)
    throws -> Result
  {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    var environment = ProcessInfo.processInfo.environment
    environment["SWIFT_BACKTRACE"] = "enable=no"
    process.environment = environment
    // Standard error goes to a file, so that reading one pipe to its end cannot leave the
    // child blocked on the other.
    let errorFile = FileManager.default.temporaryDirectory
      .appendingPathComponent("discovery-tests-\(UUID().uuidString).err")
    _ = FileManager.default.createFile(atPath: errorFile.path, contents: nil)
    defer { try? FileManager.default.removeItem(at: errorFile) }
    let output = Pipe()
    process.standardOutput = output
    process.standardError = try FileHandle(forWritingTo: errorFile)
    process.standardInput = FileHandle.nullDevice
    try process.run()
    let killer = DispatchWorkItem { process.terminate() }
    DispatchQueue.global().asyncAfter(deadline: .now() + timeout, execute: killer)
    let outputData = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    killer.cancel()
    let errorData = (try? Data(contentsOf: errorFile)) ?? Data()
    return Result(
      status: process.terminationStatus,
      output: String(decoding: outputData, as: UTF8.self),
      error: String(decoding: errorData, as: UTF8.self))
  }

  /// Parses one JSON object per line.
  static func jsonLines(_ text: String) throws -> [[String: Any]] {
    try text.split(separator: "\n").map { line in
      guard
        let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
      else { throw Failure("not a JSON object: \(line)") }
      return object
    }
  }
}
