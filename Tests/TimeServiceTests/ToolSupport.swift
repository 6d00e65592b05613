import CTimeShims
import Foundation
import Glibc
import POSIX

// The real programs the time service talks to or is checked with: chronyd and chronyc
// (Debian's chrony), ntpshmmon (the gpsd package) and gcc. Under CI=true they must be here (`make
// test` installs them); elsewhere the tests that need them are skipped.
enum Tools {
  static let required = ProcessInfo.processInfo.environment["CI"] == "true"

  static func find(_ name: String) -> String? {
    ["/usr/sbin/", "/usr/bin/", "/usr/local/bin/", "/usr/local/sbin/", "/sbin/", "/bin/"]
      .map { $0 + name }.first { FileManager.default.isExecutableFile(atPath: $0) }
  }

  static let chronyd = find("chronyd")
  static let chronyc = find("chronyc")
  static let ntpshmmon = find("ntpshmmon")
  static let gcc = find("gcc") ?? find("cc")

  /// chronyd runs without control of the clock only as root (`-u root`).
  static var chrony: Bool { required || (chronyd != nil && chronyc != nil && geteuid() == 0) }
  static var gpsdTools: Bool { required || ntpshmmon != nil }
  static var compiler: Bool { required || gcc != nil }

  struct Run: Sendable {
    var status: Int32
    var output: String
    var error: String
  }

  /// Runs a program to completion on the calling thread.
  static func run(_ path: String, _ arguments: [String]) throws -> Run {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: path)
    process.arguments = arguments
    let output = Pipe()
    let error = Pipe()
    process.standardOutput = output
    process.standardError = error
    process.standardInput = FileHandle.nullDevice
    try startWithSignalsUnblocked(process)
    let errorData = Locked(Data())
    let errorDone = DispatchSemaphore(value: 0)
    let errorReader = Thread {
      errorData.withLock { $0 = error.fileHandleForReading.readDataToEndOfFile() }
      errorDone.signal()
    }
    errorReader.start()
    let out = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    errorDone.wait()
    return Run(
      status: process.terminationStatus, output: String(decoding: out, as: UTF8.self),
      error: String(decoding: errorData.withLock { $0 }, as: UTF8.self))
  }
}

/// Starts `process` with no signal blocked (the test runner's threads block most, and a
/// child inherits the mask, so SIGTERM would not end it). Call it on a thread of its own.
func startWithSignalsUnblocked(_ process: Process) throws {
  var none = sigset_t()
  sigemptyset(&none)
  pthread_sigmask(SIG_SETMASK, &none, nil)
  try process.run()
}

/// A private directory (mode 0700, as chronyd wants for its command socket), removed by
/// `remove()`.
struct ScratchDirectory {
  let path: String

  init(_ name: String) throws {
    let template = NSTemporaryDirectory() + "serialgps-\(name)-XXXXXX"
    var bytes = Array(template.utf8CString)
    guard mkdtemp(&bytes) != nil else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
    path = String(decoding: bytes.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    chmod(path, 0o700)
  }

  func remove() {
    try? FileManager.default.removeItem(atPath: path)
  }
}

/// An even NTP SHM unit between 40 and 76 that, with the next one, no process has attached
/// (no segment, or one an earlier run left behind, of the right size) and no other test of
/// this process was given: clear of the 0–7 that ntpd and gpsd use, and one that
/// ntpshmmon can name (it prints unit n as "NTP" followed by the character '0' + n: NTPX for
/// unit 40). The next unit is reserved with it because `serve --time --ntp-shm UNIT` takes
/// UNIT + 1 for PPS: two tests given neighbouring units would write into each other's, which
/// serve refuses (another writer holds it).
func freeSharedMemoryUnit() -> Int {
  sharedMemoryUnits.withLock { next in
    for _ in 0..<19 {
      let unit = 40 + 2 * (next % 19)
      next += 1
      if isUnused(unit) && isUnused(unit + 1) { return unit }
    }
    return 76
  }
}

/// No segment at `unit`, or one nobody has attached that a writer can take as it is.
private func isUnused(_ unit: Int) -> Bool {
  var status = ctime_shm_status()
  switch ctime_shm_stat(CInt(unit), &status) {
  case 0: return true
  case 1: return status.attached == 0 && status.size >= ctime_shm_time_size()
  default: return false
  }
}

/// Where the next search for a unit pair starts (tests run in parallel).
private let sharedMemoryUnits = Locked(Int(getpid() % 19))

/// ntpshmmon's name of a unit.
func ntpshmmonName(_ unit: Int) -> String {
  "NTP" + String(UnicodeScalar(UInt8(48 + unit)))
}

func sharedMemorySegmentExists(_ unit: Int) -> Bool {
  shmget(key_t(0x4E54_5030 + unit), 0, 0) != -1
}

func removeSharedMemorySegment(_ unit: Int) {
  let id = shmget(key_t(0x4E54_5030 + unit), 0, 0)
  if id != -1 { shmctl(id, IPC_RMID, nil) }
}
