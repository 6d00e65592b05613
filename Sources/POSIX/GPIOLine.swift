import CPOSIX
import Glibc

/// One output line of a GPIO chip, through the kernel's GPIO character device (uAPI v2): the
/// chip is opened, the line requested as an output (the chip is closed again; the line's own
/// descriptor keeps the request), then set high or low. The line goes back to the kernel when
/// ``close()`` is called or the process ends.
///
/// Not copyable: one owner, one close.
package struct GPIOLine: ~Copyable, Sendable {
  private let line: FileDescriptor

  /// Requests line `offset` of `chipPath` (`/dev/gpiochip0`) as an output at `high`, shown as
  /// `consumer` in `gpioinfo`. Throws the errno of `open` (ENOENT: no such chip; EACCES:
  /// permission) or of the request (EINVAL: no such line; EBUSY: another owner has it).
  package init(chipPath: String, offset: UInt32, consumer: String, high: Bool) throws(Errno) {
    let chip = try FileDescriptor.open(chipPath, O_RDWR | O_CLOEXEC)
    defer { try? chip.close() }
    let raw = try retryingOnInterrupt {
      cposix_gpio_request_output(chip.rawValue, offset, consumer, high ? 1 : 0)
    }
    line = FileDescriptor(rawValue: raw)
  }

  /// Drives the line high or low.
  package func set(high: Bool) throws(Errno) {
    _ = try retryingOnInterrupt { cposix_gpio_set_value(line.rawValue, high ? 1 : 0) }
  }

  /// Releases the line.
  package consuming func close() {
    try? line.close()
  }
}
