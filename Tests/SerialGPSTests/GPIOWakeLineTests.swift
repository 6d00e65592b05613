import SerialGPS
import Testing

/// The GPIO wake line's errors (no GPIO chip exists in the sandbox or on CI: the kernel's
/// `gpio-sim` needs configfs; docs/simulator.md, "Pins"), which must name the line and what
/// to do.
@Suite struct GPIOWakeLineTests {
  func message(_ specification: String) -> String {
    do {
      _ = try GPIOWakeLine(specification: specification)
      return "requested"
    } catch {
      return "\(error)"
    }
  }

  @Test func aMalformedSpecificationSaysTheForm() {
    for bad in ["gpiochip0", "gpiochip0:", ":17", "gpiochip0:x"] {
      #expect(message(bad).contains("expected CHIP:LINE"), "\(bad)")
    }
  }

  @Test func aMissingChipIsNamed() {
    #expect(
      message("gpiochip987:17")
        == "wake line /dev/gpiochip987 line 17: no such GPIO chip (list them with gpiodetect)")
  }

  @Test func aDeviceThatIsNoGPIOChipFailsTheRequest() {
    // /dev/null opens, and the line request's ioctl is refused (ENOTTY).
    let text = message("/dev/null:3")
    #expect(text.hasPrefix("wake line /dev/null line 3: "), "\(text)")
    #expect(text.contains("ENOTTY"), "\(text)")
  }
}
