import CTimeShims
import Foundation
import Glibc
import POSIX
import Testing
import TimeService

/// A Python process that holds a System V segment at an NTP unit (created with `size`
/// bytes when there is none) until it is stopped, as gpsd holds units 0–7.
final class SegmentHolder: @unchecked Sendable {
  static let script = """
    import ctypes, sys
    libc = ctypes.CDLL(None, use_errno=True)
    libc.shmat.restype = ctypes.c_void_p
    key, size = 0x4E545030 + int(sys.argv[1]), int(sys.argv[2])
    segment = libc.shmget(key, size, 0o1000 | 0o666)
    if segment < 0 or libc.shmat(segment, None, 0) in (None, ctypes.c_void_p(-1).value):
        print("failed", ctypes.get_errno(), flush=True)
        sys.exit(1)
    print("holding", flush=True)
    sys.stdin.read()
    """

  let process = Process()
  private let input = Pipe()

  init(unit: Int, size: Int) async throws {
    let output = Pipe()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
    process.arguments = ["-c", Self.script, String(unit), String(size)]
    process.standardInput = input
    process.standardOutput = output
    try process.run()
    let line = try await onThread {
      String(decoding: output.fileHandleForReading.availableData, as: UTF8.self)
    }
    try #require(line.hasPrefix("holding"), "the holder could not attach unit \(unit): \(line)")
  }

  func stop() async {
    try? input.fileHandleForWriting.close()
    _ = try? await onThread { self.process.waitUntilExit() }
  }
}

/// `serve --time` says what is wrong with its outputs when it can tell: at start for what
/// can be checked then, at the first failure of a kind for what happens later.
@Suite(
  "serialgps serve --time says what is wrong with its outputs", .serialized,
  .enabled(if: Tools.chrony, "chrony is not installed, or not running as root"))
struct ServeTimeErrorTests {
  /// Runs serve with `arguments` for at most `seconds`; its exit status (nil: still running,
  /// then stopped) and what it said.
  static func serve(
    _ arguments: [String], for seconds: Double = 5, as user: UInt32? = nil,
    until: @escaping @Sendable (String) -> Bool = { _ in false }
  ) async throws -> (status: Int32?, output: String, process: Int32) {
    let directory = try ScratchDirectory("serve-errors")
    defer { directory.remove() }
    let logPath = directory.path + "/serve.log"
    _ = FileManager.default.createFile(atPath: logPath, contents: nil)
    let serve = Process()
    if let user {
      serve.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
      serve.arguments =
        ["--reuid=\(user)", "--regid=\(user)", "--clear-groups", try ServeTimeTests.binary()]
        + ["serve"] + arguments
    } else {
      serve.executableURL = URL(fileURLWithPath: try ServeTimeTests.binary())
      serve.arguments = ["serve"] + arguments
    }
    serve.standardInput = FileHandle.nullDevice
    serve.standardOutput = FileHandle.nullDevice
    let log = try #require(FileHandle(forWritingAtPath: logPath))
    serve.standardError = log
    try await onThread { try startWithSignalsUnblocked(serve) }
    func output() -> String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }
    let end = ContinuousClock.now + .seconds(seconds)
    while serve.isRunning, ContinuousClock.now < end, !until(output()) {
      try await Task.sleep(for: .milliseconds(200))
    }
    if serve.isRunning {
      serve.terminate()
      _ = try await onThread { serve.waitUntilExit() }
      return (nil, output(), serve.processIdentifier)
    }
    return (serve.terminationStatus, output(), serve.processIdentifier)
  }

  /// Starts chronyd and a 1 Hz receiver, runs `body`, and removes both whatever it did.
  static func withChronyd(_ body: (Chronyd, ClockedReceiver) async throws -> Void)
    async throws
  {
    let chronyd = try Chronyd(unit: freeSharedMemoryUnit())
    let receiver = try ClockedReceiver(delay: .milliseconds(200), coldEpochs: 0)
    do {
      try await chronyd.start()
      receiver.start()
      try await body(chronyd, receiver)
    } catch {
      await receiver.stop()
      await chronyd.remove()
      throw error
    }
    await receiver.stop()
    await chronyd.remove()
  }

  /// serve --time to `chronyd` from `receiver` with `--ntp-shm unit --pps none`, until chronyd
  /// holds two samples from the socket (at most 15 s).
  static func serve(to chronyd: Chronyd, from receiver: ClockedReceiver, unit: Int) async throws
    -> (status: Int32?, output: String, process: Int32)
  {
    try await serve(
      [
        "--listen", "none", "--time", "--chrony-socket", chronyd.socketPath, "--ntp-shm",
        String(unit), "--pps", "none", "--baud", "9600", "--chipset", "nmea",
        receiver.pty.devicePath,
      ], for: 15,
      until: { _ in
        (try? ChronydTests.offsets(chronydSourcestats(chronyd))["SOCK"]?.samples ?? 0) ?? 0 >= 2
      })
  }

  @Test("a chrony socket path that cannot work is an error at start, exit 2")
  func unusableChronySocketPaths() async throws {
    let directory = try ScratchDirectory("chrony-paths")
    defer { directory.remove() }
    let file = directory.path + "/regular"
    _ = FileManager.default.createFile(atPath: file, contents: Data("x".utf8))
    let long = "/tmp/" + String(repeating: "d", count: 110) + ".sock"
    let cases: [(path: String, says: String)] = [
      (file, "is a regular file, not chronyd's socket"),
      (directory.path, "is a directory, not chronyd's socket"),
      (long, "longer than a Unix socket address holds (107)"),
      (file + "/below.sock", "is a regular file, not a directory"),
    ]
    for (path, says) in cases {
      // It exits by itself at once; the bound is only for a loaded machine.
      let run = try await Self.serve(
        [
          "--listen", "none", "--time", "--chrony-socket", path, "--pps", "none",
          "--ntp-shm", String(freeSharedMemoryUnit()), "/dev/null",
        ], for: 30)
      #expect(run.status == 2, "\(path): \(run.output)")
      #expect(run.output.contains(says), "\(path): \(run.output)")
      #expect(!run.output.contains("serving time to"), "\(path): \(run.output)")
    }
  }

  @Test("a socket this user may not write to is an error at start")
  func aSocketItMayNotWrite() async throws {
    // A root-owned socket of mode 0755 in a directory everyone may enter, as chronyd makes it.
    let directory = try ScratchDirectory("chrony-socket")
    defer { directory.remove() }
    chmod(directory.path, 0o755)
    let path = directory.path + "/clk.sock"
    let bound = try Tools.run(
      "/usr/bin/python3",
      [
        "-c",
        "import os, socket, sys; s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); "
          + "s.bind(sys.argv[1]); os.chmod(sys.argv[1], 0o755)", path,
      ])
    try #require(bound.status == 0, "\(bound.error)")
    let run = try await Self.serve(
      ["--listen", "none", "--time", "--chrony-socket", path, "--pps", "none", "/dev/null"],
      for: 30, as: 65534)
    #expect(run.status == 2, "\(run.output)")
    #expect(run.output.contains("may not write to chronyd's socket \(path)"), "\(run.output)")
  }

  @Test("a chrony socket in a directory that does not exist yet is said at start, and serve runs")
  func aMissingDirectoryIsSaidAtStart() async throws {
    let path = "/run/serialgps-test-\(getpid())-missing/clk.sock"
    let run = try await Self.serve(
      [
        "--listen", "none", "--time", "--chrony-socket", path, "--pps", "none",
        "--ntp-shm", String(freeSharedMemoryUnit()), "/dev/null",
      ], for: 2)
    #expect(run.status == nil, "serve stopped by itself: \(run.output)")
    #expect(
      run.output.contains(
        "the directory /run/serialgps-test-\(getpid())-missing of the chrony socket"),
      "\(run.output)")
  }

  @Test("the first failure to send to chronyd is said when it happens, the later ones counted")
  func theFirstSendFailureIsSaidAtOnce() async throws {
    // A stream socket where chronyd's datagram socket should be: every send fails.
    let directory = try ScratchDirectory("chrony-stream")
    defer { directory.remove() }
    let path = directory.path + "/clk.sock"
    let listener = Process()
    listener.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
    listener.arguments = [
      "-c",
      "import socket, sys; s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); "
        + "s.bind(sys.argv[1]); s.listen(); print('ready', flush=True); sys.stdin.read()", path,
    ]
    let input = Pipe()
    let ready = Pipe()
    listener.standardInput = input
    listener.standardOutput = ready
    try listener.run()
    defer {
      try? input.fileHandleForWriting.close()
      listener.waitUntilExit()
    }
    _ = try await onThread { ready.fileHandleForReading.availableData }
    let receiver = try ClockedReceiver(delay: .milliseconds(200), coldEpochs: 0)
    receiver.start()
    let run = try await Self.serve(
      [
        "--listen", "none", "--time", "--chrony-socket", path, "--pps", "none",
        "--ntp-shm", String(freeSharedMemoryUnit()), "--baud", "9600", "--chipset", "nmea",
        receiver.pty.devicePath,
      ], for: 12, until: { $0.contains("cannot send samples to chronyd") })
    await receiver.stop()
    let line = try #require(
      run.output.split(separator: "\n").first { $0.contains("cannot send samples to chronyd") },
      "\(run.output)")
    #expect(line.contains(path), "\(line)")
    #expect(
      run.output.components(separatedBy: "cannot send samples to chronyd").count == 2,
      "said once: \(run.output)")
  }

  @Test(
    "an NTP unit another writer holds is refused, the free one named, and chrony still gets samples; --pps none makes no PPS unit"
  )
  func aHeldSharedMemoryUnit() async throws {
    try await Self.withChronyd { chronyd, receiver in
      // chronyd (a reader) made and attached its SHM unit; now a writer beside it.
      let holder = try await SegmentHolder(unit: chronyd.unit, size: 0)
      let run: (status: Int32?, output: String, process: Int32)
      do {
        run = try await Self.serve(to: chronyd, from: receiver, unit: chronyd.unit)
      } catch {
        await holder.stop()
        throw error
      }
      await holder.stop()
      let refusal = try #require(
        run.output.split(separator: "\n").first {
          $0.contains("NTP shared memory unit \(chronyd.unit) (NTP\(chronyd.unit)) is attached by ")
        }, "\(run.output)")
      #expect(
        refusal.contains("python3 (pid \(holder.process.processIdentifier))"), "\(refusal)")
      #expect(!refusal.contains("chronyd"), "a reader named as a writer: \(refusal)")
      #expect(run.output.contains(" is free: use it (--ntp-shm "), "\(run.output)")
      let samples = ChronydTests.offsets(try chronydSourcestats(chronyd))["SOCK"]?.samples ?? 0
      #expect(samples >= 2, "the chrony socket went without samples: \(run.output)")
      // Tests running beside this one may take the next unit; serve must not have made it.
      var status = ctime_shm_status()
      if ctime_shm_stat(CInt(chronyd.unit + 1), &status) == 1 {
        #expect(status.creator != run.process, "a PPS unit made for --pps none")
      }
      #expect(run.output.contains("no PPS"), "\(run.output)")
    }
  }

  @Test("a segment of the wrong size costs the SHM output only: chrony still gets samples")
  func aSegmentOfTheWrongSize() async throws {
    try await Self.withChronyd { chronyd, receiver in
      let unit = freeSharedMemoryUnit()
      removeSharedMemorySegment(unit)  // an earlier run's, of the right size
      let holder = try await SegmentHolder(unit: unit, size: 16)
      await holder.stop()  // the segment stays, nobody attached
      defer { removeSharedMemorySegment(unit) }
      let run = try await Self.serve(to: chronyd, from: receiver, unit: unit)
      #expect(
        run.output.contains("NTP shared memory unit \(unit) (NTP\(unit)) is a segment of 16 bytes"),
        "\(run.output)")
      let samples = ChronydTests.offsets(try chronydSourcestats(chronyd))["SOCK"]?.samples ?? 0
      #expect(samples >= 2, "the chrony socket went without samples: \(run.output)")
    }
  }
}

/// `chronyc -c sourcestats` of `chronyd`, on the calling thread.
func chronydSourcestats(_ chronyd: Chronyd) throws -> [[String]] {
  let chronyc = try #require(Tools.chronyc)
  let run = try Tools.run(
    chronyc, ["-n", "-c", "-h", chronyd.directory.path + "/chronyd.sock", "sourcestats"])
  return run.output.split(separator: "\n").map {
    $0.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
  }
}
