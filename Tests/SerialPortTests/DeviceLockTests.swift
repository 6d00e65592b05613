import CSerialShims
import Foundation
import Glibc
import SerialPort
import Testing

/// One owner per device: the `flock` on the open descriptor and the UUCP lock file
/// (`LCK..pts_N` in the lock directory, the owner's PID as ten characters and a newline).
/// Two opens in one process are two open file descriptions, so their `flock`s conflict as two
/// processes' do; the two-process runs are in serialgpsTests (`OneOwnerTests`).
@Suite("One owner per device: flock and lock file")
struct DeviceLockTests {
  /// What the lock file of `pty` is called in `directory`: `/dev/` cut off, `/` as `_`.
  static func lockFile(_ pty: PseudoTerminal, in directory: String = "/run/lock") -> String {
    directory + "/LCK.." + pty.devicePath.dropFirst("/dev/".count).replacing("/", with: "_")
  }

  static func hdb(_ pid: Int32) -> String {
    let digits = String(pid)
    return String(repeating: " ", count: 10 - digits.count) + digits + "\n"
  }

  static func contents(_ path: String) -> String? {
    FileManager.default.contents(atPath: path).map { String(decoding: $0, as: UTF8.self) }
  }

  /// A process that has exited: its PID names nobody (until reused, which takes a while).
  static func deadProcess() throws -> Int32 {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/bin/true")
    try process.run()
    process.waitUntilExit()
    return process.processIdentifier
  }

  static func sleeper() throws -> Process {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/bin/sleep")
    process.arguments = ["60"]
    try process.run()
    return process
  }

  func owner(of error: SerialPortError) -> DeviceOwner? {
    if case .inUse(let owner) = error.reason { return owner }
    return nil
  }

  @Test func aSecondOpenerIsRefusedNamingTheOwnerAndTheFirstKeepsItsStream() throws {
    let pty = try PseudoTerminal()
    let lockFile = Self.lockFile(pty)
    let first = try SerialPort.open(path: pty.devicePath, baudRate: .b9600)
    #expect(first.lockFile == lockFile)
    #expect(Self.contents(lockFile) == Self.hdb(getpid()), "HDB format: %10d and a newline")

    let refusal = #expect(throws: SerialPortError.self) {
      try SerialPort.open(path: pty.devicePath, baudRate: .b4800)
    }
    let owner = try #require(refusal.flatMap(owner(of:)), "\(String(describing: refusal))")
    #expect(owner.processID == getpid())
    #expect(owner.lockFile == lockFile)
    #expect(owner.isThisProcess)
    #expect(refusal?.description.contains("already open in this process (\(getpid()))") == true)

    // The refused open touched nothing: the rate is the first port's, its stream flows.
    #expect(try pty.deviceSettings().baudRate == 9600)
    try pty.write(Array("$GPGGA\r\n".utf8))
    var buffer = [UInt8](repeating: 0, count: 64)
    let read = try buffer.withUnsafeMutableBytes { try first.read(into: $0, timeout: .seconds(5)) }
    #expect(read == .received(8))
    #expect(Self.contents(lockFile) == Self.hdb(getpid()))

    first.close()
    #expect(!FileManager.default.fileExists(atPath: lockFile), "closing removes the lock file")
    let third = try SerialPort.open(path: pty.devicePath, baudRate: .b9600)
    #expect(third.lockFile == lockFile)
    third.close()
  }

  @Test func aStaleLockFileIsTakenOver() throws {
    let dead = try Self.deadProcess()
    // The HDB text form, and the four-byte binary PID of the oldest programs.
    let forms: [[UInt8]] = [
      Array(Self.hdb(dead).utf8), withUnsafeBytes(of: dead) { Array($0) },
    ]
    for form in forms {
      let pty = try PseudoTerminal()
      let lockFile = Self.lockFile(pty)
      #expect(FileManager.default.createFile(atPath: lockFile, contents: Data(form)))
      let port = try SerialPort.open(path: pty.devicePath, baudRate: .b9600)
      #expect(port.lockFile == lockFile)
      #expect(Self.contents(lockFile) == Self.hdb(getpid()))
      port.close()
      #expect(!FileManager.default.fileExists(atPath: lockFile))
    }
  }

  /// A program that keeps lock files but no `flock` (minicom): its lock file refuses the
  /// device, naming it, before anything of its settings is touched.
  @Test func aLockFileOfALiveProcessRefusesTheDevice() throws {
    let pty = try PseudoTerminal()
    let lockFile = Self.lockFile(pty)
    let other = try Self.sleeper()
    defer {
      kill(other.processIdentifier, SIGKILL)  // a child may inherit SIGTERM blocked
      other.waitUntilExit()
      try? FileManager.default.removeItem(atPath: lockFile)
    }
    try Self.hdb(other.processIdentifier).write(toFile: lockFile, atomically: true, encoding: .utf8)
    let refusal = #expect(throws: SerialPortError.self) {
      try SerialPort.open(path: pty.devicePath, baudRate: .b4800)
    }
    let owner = try #require(refusal.flatMap(owner(of:)))
    #expect(owner.processID == other.processIdentifier)
    #expect(owner.command == "sleep 60")
    #expect(owner.lockFile == lockFile)
    let message = refusal?.description ?? ""
    #expect(message.contains("is in use by process \(other.processIdentifier) (sleep 60)"))
    #expect(message.contains("its lock file \(lockFile) names it"))
    #expect(message.contains("`kill \(other.processIdentifier)`"))
    #expect(try pty.deviceSettings().baudRate == 9600)
    #expect(SerialPort.owner(of: pty.devicePath) == owner)
    // Without claiming (exclusive: false), another's claim is refused all the same.
    #expect(throws: SerialPortError.self) {
      try SerialPort.open(path: pty.devicePath, baudRate: .b9600, exclusive: false)
    }
    #expect(Self.contents(lockFile) == Self.hdb(other.processIdentifier), "left alone")
  }

  /// No lock directory (or one that is missing, or not writable): the `flock` alone keeps the
  /// device one owner's, and `/proc/locks` still names that owner.
  @Test func withoutAWritableLockDirectoryTheFlockAloneHolds() throws {
    var template = Array("/tmp/serialgps-lock-XXXXXX".utf8CString)
    let readOnly = try #require(mkdtemp(&template).map { String(cString: $0) })
    defer { rmdir(readOnly) }
    chmod(readOnly, 0o555)
    for directory in [nil, "/nonexistent/lock", readOnly] as [String?] {
      let pty = try PseudoTerminal()
      let first = try withoutPrivilegeOverrides {
        try SerialPort.open(path: pty.devicePath, baudRate: .b9600, lockDirectory: directory)
      }
      #expect(first.lockFile == nil, "\(directory ?? "nil")")
      let refusal = #expect(throws: SerialPortError.self) {
        try SerialPort.open(path: pty.devicePath, baudRate: .b9600, lockDirectory: directory)
      }
      let owner = refusal.flatMap(owner(of:))
      #expect(owner?.processID == getpid(), "\(directory ?? "nil"): \(String(describing: refusal))")
      #expect(owner?.lockFile == nil)
      first.close()
      // A child that another test spawns at this moment holds a copy of the descriptor (and so
      // the flock, which /proc/locks still credits to this process) until it execs.
      #expect(
        becomesTrue(within: .seconds(5)) {
          SerialPort.owner(of: pty.devicePath, lockDirectory: directory) == nil
        }, "\(directory ?? "nil")")
    }
    #expect(try FileManager.default.contentsOfDirectory(atPath: readOnly).isEmpty)
  }

  /// Two opens at the same moment: exactly one gets the device. (TIOCEXCL alone let both in:
  /// it is set only after the settings are saved, so both could pass its check.)
  @Test func ofTwoRacingOpenersExactlyOneWins() async throws {
    for _ in 0..<20 {
      let pty = try PseudoTerminal()
      let path = pty.devicePath
      let start = ContinuousClock.now + .milliseconds(20)
      async let a = onOwnThread { () -> Result<SerialPort, SerialPortError> in
        while ContinuousClock.now < start {}
        return Result { () throws(SerialPortError) in
          try SerialPort.open(path: path, baudRate: .b9600)
        }
      }
      async let b = onOwnThread { () -> Result<SerialPort, SerialPortError> in
        while ContinuousClock.now < start {}
        return Result { () throws(SerialPortError) in
          try SerialPort.open(path: path, baudRate: .b9600)
        }
      }
      let results = try await [a, b]
      let opened = results.compactMap { try? $0.get() }
      #expect(opened.count == 1)
      for case .failure(let error) in results {
        #expect(owner(of: error)?.processID == getpid() || error.reason == .busy, "\(error)")
      }
      for port in opened { port.close() }
    }
  }

  /// A holder with TIOCEXCL and no lock of either kind (as gpsd holds a port) cannot be named:
  /// the refusal says busy and how to find it.
  @Test func aHolderWithTIOCEXCLAloneIsBusy() throws {
    let pty = try PseudoTerminal()
    let holder = open(pty.devicePath, O_RDWR | O_NOCTTY | O_NONBLOCK | O_CLOEXEC)
    try #require(holder >= 0)
    defer {
      _ = cserial_clear_exclusive(holder)
      Glibc.close(holder)
    }
    try #require(cserial_set_exclusive(holder) == 0)
    let refusal = #expect(throws: SerialPortError.self) {
      try SerialPort.open(path: pty.devicePath, baudRate: .b9600)
    }
    #expect(refusal?.reason == .busy)
    #expect(!FileManager.default.fileExists(atPath: Self.lockFile(pty)))
  }
}

extension DeviceLockTests {
  /// A link (a `/dev/serial/by-id/…` name, the simulator's `gps0`) locks the device it names:
  /// one lock file for every name of the device.
  @Test func aLinkLocksTheDeviceItNames() throws {
    let pty = try PseudoTerminal()
    var template = Array("/tmp/serialgps-link-XXXXXX".utf8CString)
    let directory = try #require(mkdtemp(&template).map { String(cString: $0) })
    defer { try? FileManager.default.removeItem(atPath: directory) }
    try FileManager.default.createDirectory(
      atPath: directory + "/by-id", withIntermediateDirectories: true)
    let relative = directory + "/by-id/receiver"
    try FileManager.default.createSymbolicLink(
      atPath: relative, withDestinationPath: "../../.." + pty.devicePath)
    let absolute = directory + "/gps0"
    try FileManager.default.createSymbolicLink(atPath: absolute, withDestinationPath: relative)
    let port = try SerialPort.open(path: absolute, baudRate: .b9600)
    defer { port.close() }
    #expect(port.lockFile == Self.lockFile(pty))
    #expect(SerialPort.owner(of: pty.devicePath)?.processID == getpid())
  }
}
