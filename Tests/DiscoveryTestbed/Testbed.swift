import Glibc

/// umockdev's testbed library (`libumockdev.so.0`), loaded at run time with `dlopen` so that
/// building the package needs neither its headers nor GLib's; only running this helper
/// needs the library (Debian `libumockdev0`, pulled in by `umockdev`).
///
/// The process must run under `umockdev-wrapper` (which preloads `libumockdev-preload`):
/// creating the testbed sets `UMOCKDEV_DIR`, and from then on libudev, `/sys` and `/dev`
/// in this process see the testbed.
final class Testbed {
  private typealias New = @convention(c) () -> OpaquePointer?
  private typealias AddFromFile =
    @convention(c) (
      OpaquePointer, UnsafePointer<CChar>, UnsafeMutablePointer<UnsafeMutableRawPointer?>?
    ) -> Int32
  private typealias Uevent =
    @convention(c) (OpaquePointer, UnsafePointer<CChar>, UnsafePointer<CChar>)
    -> Void
  private typealias RemoveDevice = @convention(c) (OpaquePointer, UnsafePointer<CChar>) -> Void
  private typealias GetDevFD = @convention(c) (OpaquePointer, UnsafePointer<CChar>) -> Int32
  private typealias Unref = @convention(c) (OpaquePointer) -> Void

  private let testbed: OpaquePointer
  private let addFromFileFunction: AddFromFile
  private let addFromStringFunction: AddFromFile
  private let ueventFunction: Uevent
  private let removeDeviceFunction: RemoveDevice
  private let getDevFDFunction: GetDevFD
  private let unref: Unref

  struct Failure: Error, CustomStringConvertible {
    let description: String
  }

  init() throws {
    guard let library = dlopen("libumockdev.so.0", RTLD_NOW | RTLD_GLOBAL) else {
      throw Failure(
        description: "cannot load libumockdev.so.0 (\(String(cString: dlerror()))); "
          + "install the Debian package umockdev")
    }
    func symbol<T>(_ name: String, as type: T.Type) throws -> T {
      guard let address = dlsym(library, name) else {
        throw Failure(description: "libumockdev has no \(name)")
      }
      return unsafeBitCast(address, to: type)
    }
    let make = try symbol("umockdev_testbed_new", as: New.self)
    addFromFileFunction = try symbol("umockdev_testbed_add_from_file", as: AddFromFile.self)
    addFromStringFunction = try symbol("umockdev_testbed_add_from_string", as: AddFromFile.self)
    ueventFunction = try symbol("umockdev_testbed_uevent", as: Uevent.self)
    removeDeviceFunction = try symbol("umockdev_testbed_remove_device", as: RemoveDevice.self)
    getDevFDFunction = try symbol("umockdev_testbed_get_dev_fd", as: GetDevFD.self)
    unref = try symbol("g_object_unref", as: Unref.self)
    guard let created = make() else { throw Failure(description: "umockdev_testbed_new failed") }
    testbed = created
  }

  deinit { unref(testbed) }

  /// Adds the devices of a `.umockdev` file (device nodes of ttys become ptys). Each device
  /// is announced with an "add" uevent, in the order of the file.
  func add(file path: String) throws {
    var error: UnsafeMutableRawPointer?
    if addFromFileFunction(testbed, path, &error) == 0 {
      throw Failure(description: "cannot load \(path): \(message(error))")
    }
  }

  /// Adds the devices of a `.umockdev` description held in memory.
  func add(description: String) throws {
    var error: UnsafeMutableRawPointer?
    if addFromStringFunction(testbed, description, &error) == 0 {
      throw Failure(description: "cannot load a device description: \(message(error))")
    }
  }

  private func message(_ error: UnsafeMutableRawPointer?) -> String {
    // GError: { GQuark domain; gint code; gchar *message; }
    error.map { String(cString: $0.load(fromByteOffset: 8, as: UnsafePointer<CChar>.self)) }
      ?? "unknown error"
  }

  /// Sends a uevent for `sysPath` (`/sys/devices/…`) to every netlink listener in the
  /// process tree of the testbed.
  func uevent(_ sysPath: String, _ action: String) {
    ueventFunction(testbed, sysPath, action)
  }

  /// Removes a device (sysfs directory, class link, node) without announcing it. The pty
  /// of a tty node stays registered under its name, so a device plugged back in needs a
  /// node name of its own (as when the old node is still held open on a real system).
  func remove(_ sysPath: String) {
    removeDeviceFunction(testbed, sysPath)
  }

  /// The master side of the pty behind a tty node such as `/dev/ttyACM0`, or -1.
  func masterDescriptor(_ node: String) -> Int32 {
    getDevFDFunction(testbed, node)
  }
}
