import CSerialShims
import Foundation
import Glibc
import SerialPort
import Testing

@Suite("Errors name the device and the remedy")
struct ErrorTests {
  @Test func errnoCarriesNameAndMessage() {
    #expect(Errno.permissionDenied.name == "EACCES")
    #expect(Errno.permissionDenied.message == "Permission denied")
    #expect(Errno.permissionDenied.description == "Permission denied (EACCES)")
    #expect(Errno(rawValue: 99999).name == "errno 99999")
  }

  @Test func classifiesErrno() {
    func reason(_ errno: Errno) -> SerialPortError.Reason {
      SerialPortError(device: "/nonexistent/x", operation: .read, errno: errno).reason
    }
    #expect(reason(.noSuchFileOrDirectory) == .missing)
    #expect(reason(.deviceBusy) == .busy)
    #expect(reason(.ioError) == .disconnected(.errno(.ioError)))
    #expect(reason(.noSuchDeviceOrAddress) == .disconnected(.errno(.noSuchDeviceOrAddress)))
    #expect(reason(.noSuchDevice) == .disconnected(.errno(.noSuchDevice)))
    #expect(reason(.notATerminal) == .notATerminal)
    #expect(reason(.permissionDenied) == .permissionDenied(nil))
    #expect(reason(.notPermitted) == .permissionDenied(nil))
    #expect(reason(.tooManyOpenFiles) == .system(.tooManyOpenFiles))
    let other = SerialPortError(device: "/dev/ttyX", operation: .read, errno: .tooManyOpenFiles)
    #expect(other.description.contains("/dev/ttyX"))
    #expect(other.description.contains("Too many open files (EMFILE)"))
  }

  @Test func missingDeviceSaysWhereToLook() {
    let path = "/dev/serialgps-test-missing-\(getpid())"
    do {
      _ = try SerialPort.open(path: path, baudRate: 9600)
      Issue.record("opened \(path)")
    } catch {
      #expect(error.reason == .missing)
      #expect(error.errno == .noSuchFileOrDirectory)
      #expect(error.description.hasPrefix("\(path) does not exist"))
      #expect(error.description.contains("ls -l /dev/serial/by-id/"))
    }
  }

  @Test func notATerminal() {
    do {
      _ = try SerialPort.open(path: "/dev/null", baudRate: 9600)
      Issue.record("opened /dev/null as a serial port")
    } catch {
      #expect(error.reason == .notATerminal)
      #expect(error.description.contains("/dev/null is not a serial port"))
    }
  }

  @Test func unsupportedRateIsRefusedBeforeOpening() {
    do {
      _ = try SerialPort.open(path: "/dev/serialgps-never-opened", baudRate: 1234)
      Issue.record("accepted 1234 baud")
    } catch {
      // Not .missing: the rate is checked first.
      #expect(error.reason == .unsupportedBaudRate(1234))
      #expect(error.description.contains("1234 baud is not supported"))
      #expect(error.description.contains("4800, 9600, 19200, 38400, 57600, 115200"))
    }
  }

  /// The owner and group of a real node are looked up by name in the user and group
  /// databases (getpwuid_r, getgrgid_r).
  @Test func inspectNamesTheOwnerAndGroupOfARealNode() throws {
    let ownership = try #require(DeviceOwnership.inspect(path: "/dev/null"))
    #expect(ownership.ownerID == 0)
    #expect(ownership.ownerName == "root")
    #expect(ownership.groupID == 0)
    #expect(ownership.groupName == "root")
    #expect(ownership.summary == "crw-rw-rw- root:root")
    #expect(DeviceOwnership.inspect(path: "/nonexistent/serialgps-node") == nil)
  }

  /// A user outside the device's group gets the group and both remedies.
  @Test func permissionMessageNamesGroupAndRemedies() {
    let ownership = DeviceOwnership(
      ownerID: 0, ownerName: "root", groupID: 20, groupName: "dialout", mode: 0o020660,
      callerIsInGroup: false)
    let error = SerialPortError(
      device: "/dev/ttyUSB0", operation: .open, reason: .permissionDenied(ownership))
    #expect(ownership.summary == "crw-rw---- root:dialout")
    #expect(
      error.description.hasPrefix(
        "Permission denied opening /dev/ttyUSB0 (crw-rw---- root:dialout)."))
    #expect(error.description.contains("sudo usermod -aG dialout $USER"))
    #expect(error.description.contains("udev-rules/60-serialgps.rules"))

    let member = DeviceOwnership(
      ownerID: 0, ownerName: "root", groupID: 20, groupName: "dialout", mode: 0o020660,
      callerIsInGroup: true)
    let memberError = SerialPortError(
      device: "/dev/ttyUSB0", operation: .open, reason: .permissionDenied(member))
    #expect(memberError.description.contains("already in group dialout"))
    #expect(!memberError.description.contains("usermod"))

    let closedGroup = DeviceOwnership(
      ownerID: 0, ownerName: "root", groupID: 5, groupName: "tty", mode: 0o020600,
      callerIsInGroup: false)
    let closedError = SerialPortError(
      device: "/dev/ttyS0", operation: .open, reason: .permissionDenied(closedGroup))
    #expect(!closedError.description.contains("usermod"))
    #expect(closedError.description.contains("udev-rules/60-serialgps.rules"))

    let unknown = SerialPortError(
      device: "/dev/ttyS0", operation: .open, reason: .permissionDenied(nil))
    #expect(unknown.description.contains("/dev/ttyS0"))
    #expect(unknown.description.contains("udev-rules/60-serialgps.rules"))
  }

  /// A real EACCES from open(2). Root bypasses file modes through CAP_DAC_OVERRIDE, so the test
  /// drops that capability from its own thread's effective set (see withoutPrivilegeOverrides),
  /// and gives the pty node to another owner and the dialout group, as udev does for USB
  /// serial devices. As an ordinary user, the node (which that user owns) gets mode 000.
  @Test func permissionDeniedFromOpen() throws {
    let pty = try PseudoTerminal()
    let path = pty.devicePath
    let expectedGroup: String?
    if geteuid() == 0, let dialout = getgrnam("dialout") {
      #expect(chown(path, 65534, dialout.pointee.gr_gid) == 0)
      #expect(chmod(path, 0o660) == 0)
      expectedGroup = "dialout"
    } else {
      #expect(chmod(path, 0) == 0)
      expectedGroup = nil
    }

    let outcome: Result<SerialPort, SerialPortError> = try withoutPrivilegeOverrides {
      Result { () throws(SerialPortError) in try SerialPort.open(path: path, baudRate: 9600) }
    }
    guard case .failure(let error) = outcome else {
      Issue.record("opened \(path) without permission")
      return
    }
    guard case .permissionDenied(let ownership) = error.reason else {
      Issue.record("expected permission denied, got \(error)")
      return
    }
    #expect(error.errno == .permissionDenied)
    #expect(error.description.contains("Permission denied opening \(path)"))
    #expect(error.description.contains("udev-rules/60-serialgps.rules"))
    if let expectedGroup {
      #expect(ownership?.groupName == expectedGroup)
      #expect(ownership?.callerIsInGroup == false)
      #expect(error.description.contains("sudo usermod -aG \(expectedGroup) $USER"))
    }
  }

  /// TIOCEXCL makes a second open fail with EBUSY, except for a process with CAP_SYS_ADMIN
  /// (root): the test drops it from its own thread to see what a user sees. Closing the first
  /// port clears the flag, although the pty itself stays open.
  @Test func secondOpenOfAnExclusivePortIsBusy() throws {
    let pty = try PseudoTerminal()
    let first = try SerialPort.open(path: pty.devicePath, baudRate: 9600)
    #expect(first.isExclusive)

    let second: Result<SerialPort, SerialPortError> = try withoutPrivilegeOverrides {
      Result { () throws(SerialPortError) in
        try SerialPort.open(path: pty.devicePath, baudRate: 9600)
      }
    }
    switch second {
    case .success:
      Issue.record("a second open of an exclusive port succeeded")
    case .failure(let error):
      #expect(error.reason == .busy)
      #expect(error.errno == .deviceBusy)
      #expect(error.description.contains("\(pty.devicePath) is in use by another program"))
      #expect(error.description.contains("fuser -v \(pty.devicePath)"))
    }

    first.close()
    let third: Result<SerialPort, SerialPortError> = try withoutPrivilegeOverrides {
      Result { () throws(SerialPortError) in
        try SerialPort.open(path: pty.devicePath, baudRate: 9600)
      }
    }
    #expect(throws: Never.self) { try third.get().close() }
  }

  /// Root gets past TIOCEXCL in the kernel; the port checks TIOCGEXCL (and the holder's lock)
  /// and refuses anyway, naming the holder, whether or not it asks for exclusivity itself, and
  /// leaves the holder's flag alone.
  @Test func anExclusivePortIsRefusedEvenForRoot() throws {
    let pty = try PseudoTerminal()
    let holder = try SerialPort.open(path: pty.devicePath, baudRate: 4800)
    defer { holder.close() }
    for exclusive in [true, false] {
      do {
        let intruder = try SerialPort.open(
          path: pty.devicePath, baudRate: 9600, exclusive: exclusive)
        intruder.close()
        Issue.record("opened a port another holds exclusively (exclusive: \(exclusive))")
      } catch {
        #expect(error.reason == .inUse(by: try #require(SerialPort.owner(of: pty.devicePath))))
        #expect(SerialPort.owner(of: pty.devicePath)?.processID == getpid())
      }
    }
    // The holder's settings and exclusivity are untouched.
    #expect(try pty.deviceSettings().baudRate == 4800)
    let again: Result<SerialPort, SerialPortError> = try withoutPrivilegeOverrides {
      Result { () throws(SerialPortError) in
        try SerialPort.open(path: pty.devicePath, baudRate: 9600)
      }
    }
    #expect(throws: SerialPortError.self) { try again.get() }
  }

  @Test func openingWithoutExclusivityLeavesOthersIn() throws {
    let pty = try PseudoTerminal()
    let first = try SerialPort.open(path: pty.devicePath, baudRate: 9600, exclusive: false)
    defer { first.close() }
    #expect(!first.isExclusive)
    let second = try withoutPrivilegeOverrides {
      try SerialPort.open(path: pty.devicePath, baudRate: 9600, exclusive: false)
    }
    second.close()
  }
}
