import Glibc
import SerialGPS

/// The simulator's FORCE_ON standing in for a wired wake line: drives the pin of a
/// `serialgps replay --control FIFO` by writing `pin force-on high|low` lines to its FIFO
/// (`serialgps watch --wake-pin control:FIFO`), so a driver in another process can be
/// measured with a declared wake line where no GPIO exists.
public struct SimulatorWakeLine: WakeLine {
  public let fifo: String

  public init(fifo: String) {
    self.fifo = fifo
  }

  public func drive(high: Bool) throws {
    let bytes = Array("pin force-on \(high ? "high" : "low")\n".utf8)
    // The replay holds the FIFO open for reading, so a non-blocking open finds its reader.
    let descriptor = open(fifo, O_WRONLY | O_NONBLOCK | O_CLOEXEC)
    guard descriptor >= 0 else {
      throw WakeLineError(
        line: description, reason: "cannot open the FIFO (is the replay running?)")
    }
    defer { close(descriptor) }
    let written = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
    guard written == bytes.count else {
      throw WakeLineError(
        line: description, reason: "the FIFO took \(written) of \(bytes.count) bytes")
    }
  }

  public var description: String { "the simulator's FORCE_ON through \(fifo)" }
}
